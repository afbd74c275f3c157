"""MQOutput: to the named queue, to every queue of the destination list, or to ReplyToQ; persistence."""

from __future__ import annotations

import pytest
from esql.tree import Element
from flowbroker.qm.protocol import MessageDescriptor
from flowbroker.runtime.harness import FlowHarness, flow, get_all
from flowbroker_nodes.base import Unwinding

pytestmark = pytest.mark.timeout(60)


def test_destination_list_puts_to_every_queue(qm_process, qm, queues) -> None:
    a, b = queues("A"), queues("B")
    doc = flow(
        {
            "in": ("MQInput", {"queueName": "UNUSED"}),
            "o": ("MQOutput", {"destinationMode": "destinationList"}),
        },
        ["in.out -> o"],
    )
    h = FlowHarness(doc, connect=qm_process.client)
    env = Element("LocalEnvironment")
    mq = env.add("Destination").add("MQ")
    for name in (a, b):
        mq.add("DestinationData").add("queueName", name)
    h.inject("o", b"fan out", local_environment=env)
    h.close()
    assert [m.body for m in get_all(qm, a, 1)] == [b"fan out"]
    assert [m.body for m in get_all(qm, b, 1)] == [b"fan out"]


def test_empty_destination_list_is_an_error(qm_process) -> None:
    doc = flow(
        {
            "in": ("MQInput", {"queueName": "UNUSED"}),
            "o": ("MQOutput", {"destinationMode": "destinationList"}),
        },
        ["in.out -> o"],
    )
    h = FlowHarness(doc, connect=qm_process.client)
    with pytest.raises(Unwinding) as info:
        h.inject("o", b"x")
    h.close()
    assert "destination list" in str(info.value)


def test_persistence_override_and_new_msg_id(qm, queues, group) -> None:
    src, dst = queues("IN"), queues("OUT")
    doc = flow(
        {
            "in": ("MQInput", {"queueName": src}),
            "o": ("MQOutput", {"queueName": dst, "persistenceMode": "persistent"}),
        },
        ["in.out -> o"],
        name="PersistOut",
    )
    group.deploy(doc)
    sent_id = qm.put(src, b"p", MessageDescriptor(persistence=0))
    (got,) = get_all(qm, dst, 1)
    assert got.md.persistence == 1
    assert got.md.msg_id != sent_id


def test_unknown_queue_goes_to_failure_with_the_reason(qm_process) -> None:
    doc = flow(
        {"in": ("MQInput", {"queueName": "UNUSED"}), "o": ("MQOutput", {"queueName": "NO.SUCH.QUEUE"})},
        ["in.out -> o"],
    )
    h = FlowHarness(doc, connect=qm_process.client)
    with pytest.raises(Unwinding) as info:
        h.inject("o", b"x")
    h.close()
    entry = info.value.exception_list.first_child
    assert (
        entry.child("Name").value == "o"
        and "NO.SUCH.QUEUE" in entry.child("Text").value
        or "unknown" in entry.child("Text").value
    )


def test_queue_name_is_required_for_queue_name_mode() -> None:
    from flowbroker.runtime.compiler import FlowCompileError

    doc = flow({"in": ("MQInput", {"queueName": "UNUSED"}), "o": ("MQOutput", {})}, ["in.out -> o"])
    with pytest.raises(FlowCompileError) as info:
        FlowHarness(doc)
    assert [(p.node, p.property) for p in info.value.problems] == [("o", "queueName")]


def test_refused_put_in_a_batch_is_retried_alone_and_reaches_the_failure_terminal(qm, queues, group) -> None:
    """Inside a batch puts are pipelined; a refusal backs the batch out and its messages run one at a time."""
    src, full, errors = queues("IN"), queues("FULL", max_depth=3), queues("ERR")
    doc = flow(
        {
            "in": ("MQInput", {"queueName": src, "transactionMode": "yes", "readAhead": 50}),
            "o": ("MQOutput", {"queueName": full}),
            "e": ("MQOutput", {"queueName": errors}),
        },
        ["in.out -> o", "o.failure -> e"],
        name="FullQueue",
    )
    for i in range(6):
        qm.put(src, f"m{i}".encode(), MessageDescriptor(persistence=1))
    group.deploy(doc)
    delivered = get_all(qm, errors, 3)
    assert sorted(m.body for m in delivered) == [b"m3", b"m4", b"m5"]
    stored = [qm.get(full) for _ in range(3)]
    assert sorted(m.body for m in stored if m is not None) == [b"m0", b"m1", b"m2"]
    assert qm.get(src) is None
    assert group.statistics()["FullQueue"]["backouts"] >= 1
