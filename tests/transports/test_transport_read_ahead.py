"""A flow with transaction mode ``no`` on the embedded queue manager: non-persistent messages are
read ahead and put asynchronously, and a normal undeploy loses none of them."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from flowbroker.qm.client import Client
from flowbroker.qm.harness import QueueManagerProcess
from flowbroker.qm.protocol import MessageDescriptor
from flowbroker.runtime import transports
from flowbroker.runtime.engine import ExecutionGroupRuntime
from flowbroker.runtime.harness import flow
from transport_support import unique, wait_for

pytestmark = [pytest.mark.timeout(90)]


def passthrough(src: str, dst: str) -> dict:
    return flow(
        {
            "in": ("MQInput", {"queueName": src, "transactionMode": "no"}),
            "out": ("MQOutput", {"queueName": dst}),
        },
        ["in.out -> out"],
        name=f"ReadAhead{abs(hash(src)) % 100000}",
    )


@pytest.fixture
def client(qm_process: QueueManagerProcess) -> Iterator[Client]:
    with qm_process.client() as c:
        yield c


@pytest.fixture
def group(qm_process: QueueManagerProcess, tmp_path: Path) -> Iterator[ExecutionGroupRuntime]:
    connect = transports.connector(qm_process.url, data_dir=str(qm_process.data_dir))
    runtime = ExecutionGroupRuntime(connect, trace_dir=tmp_path / "trace")
    yield runtime
    runtime.shutdown(timeout=10)


def _depth(client: Client, queue: str) -> int:
    return int(client.inquire_queue(queue)["current_depth"])


def test_mode_no_passes_messages_through_in_order(client: Client, group: ExecutionGroupRuntime) -> None:
    src, dst = unique("RA.IN"), unique("RA.OUT")
    client.define_queue(src)
    client.define_queue(dst)
    np, p = MessageDescriptor(persistence=0), MessageDescriptor(persistence=1)
    for i in range(300):
        client.put(src, b"%d" % i, p if i % 50 == 7 else np)
    group.deploy(passthrough(src, dst))
    wait_for(lambda: _depth(client, dst) == 300, 30, "300 messages through the flow")
    got = client.get_many(dst, 300)
    assert [m.body for m in got] == [b"%d" % i for i in range(300)]
    assert [m.md.persistence for m in got] == [1 if i % 50 == 7 else 0 for i in range(300)]
    stats = next(iter(group.statistics().values()))
    assert stats["messages_in"] == 300 and stats["errors"] == 0


def test_undeploy_gives_back_the_messages_read_ahead(client: Client, group: ExecutionGroupRuntime) -> None:
    src, dst = unique("RA.IN"), unique("RA.OUT")
    client.define_queue(src)
    client.define_queue(dst)
    total = 2000
    for i in range(total):
        client.put(src, b"%d" % i, MessageDescriptor(persistence=0))
    deployed = group.deploy(passthrough(src, dst))
    wait_for(lambda: _depth(client, dst) > 0, 30, "the first output")
    assert group.undeploy(deployed.name)
    outputs = [m.body for m in client.get_many(dst, total)]
    left = [m.body for m in client.get_many(src, total)]
    # what the flow put and what is left on its input queue are the messages in order: none of
    # those read ahead and not processed was lost by the stop, none came out twice
    assert outputs + left == [b"%d" % i for i in range(total)]
    assert 0 < len(outputs)
