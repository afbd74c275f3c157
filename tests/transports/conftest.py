"""Transport fixtures: the real queue manager in a process of its own, and RabbitMQ at 127.0.0.1:5672."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from flowbroker.qm.harness import QueueManagerProcess
from transport_support import unique


@pytest.fixture(scope="session")
def qm_process(tmp_path_factory: pytest.TempPathFactory) -> Iterator[QueueManagerProcess]:
    with QueueManagerProcess(tmp_path_factory.mktemp("qm"), fsync=False) as qm:
        yield qm


@pytest.fixture
def rabbit(rabbitmq_url: str) -> Iterator[RabbitQueues]:
    queues = RabbitQueues(rabbitmq_url)
    try:
        yield queues
    finally:
        queues.delete_all()


class RabbitQueues:
    """Unique RabbitMQ queues for one test, deleted after it; and a pika channel to look at them."""

    def __init__(self, url: str) -> None:
        import pika

        self.url = url
        self.connection = pika.BlockingConnection(pika.URLParameters(url))
        self.channel = self.connection.channel()
        self.made: list[str] = []

    def queue(self, base: str, kind: str = "quorum", **arguments: object) -> str:
        name = unique(base)
        self.channel.queue_declare(name, durable=True, arguments={"x-queue-type": kind, **arguments})
        self.made.append(name)
        return name

    def depth(self, queue: str) -> int:
        return int(self.channel.queue_declare(queue, passive=True).method.message_count)

    def delete_all(self) -> None:
        for name in self.made:
            try:
                self.channel.queue_delete(name)
            except Exception:
                self.channel = self.connection.channel()
        self.connection.close()
