"""Transport fixtures: the real queue manager in a process of its own, and RabbitMQ at 127.0.0.1:5672."""

from __future__ import annotations

import itertools
import os
import time
from collections.abc import Callable, Iterator

import pytest
from flowbroker.qm.harness import QueueManagerProcess

_names = itertools.count(1)


def unique(base: str) -> str:
    return f"{base}.{os.getpid()}.{next(_names)}.{int(time.time() * 1000) % 1000000}"


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


def wait_for(check: Callable[[], object], timeout: float = 20.0, what: str = "the condition") -> object:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = check()
        if found:
            return found
        time.sleep(0.05)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")
