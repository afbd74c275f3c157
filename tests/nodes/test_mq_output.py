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


def _rfh2(usr: dict[str, str]) -> bytes:
    from flowbroker.formats import rfh2

    header = Element("MQRFH2")
    header.add("Format", "MQSTR   ")
    folder = header.add("usr", type=0x01000000)
    for key, value in usr.items():
        folder.add(key, value)
    return rfh2.serialize(header, encoding=546, ccsid=1208)


def test_an_untouched_message_goes_out_as_it_came_in(qm, queues, group) -> None:
    """MQInput -> MQOutput puts the message's own bytes again: every field but the MsgId kept."""
    src, dst = queues("IN"), queues("OUT")
    doc = flow(
        {"in": ("MQInput", {"queueName": src}), "o": ("MQOutput", {"queueName": dst})},
        ["in.out -> o"],
        name="Relay",
    )
    md = MessageDescriptor(
        correl_id=b"C" * 24,
        persistence=1,
        priority=6,
        reply_to_q="REPLY.Q",
        format="",
        encoding=273,
        coded_char_set_id=819,
    )
    sent_id = qm.put(src, b"\x00\xffopaque", md, properties={"colour": "red", "n": 3})
    group.deploy(doc)
    (got,) = get_all(qm, dst, 1)
    assert got.body == b"\x00\xffopaque"
    assert got.properties == {"colour": "red", "n": 3}
    assert (got.md.correl_id, got.md.persistence, got.md.priority) == (b"C" * 24, 1, 6)
    assert (got.md.reply_to_q, got.md.encoding, got.md.coded_char_set_id) == ("REPLY.Q", 273, 819)
    assert got.md.msg_id != sent_id and got.md.backout_count == 0


ROUTE_FILTER = """CREATE FILTER MODULE Route
CREATE FUNCTION Main() RETURNS BOOLEAN
BEGIN
  RETURN Root.MQRFH2.usr.Route = 'yes';
END;
END MODULE;"""


def test_a_filtered_mqrfh2_message_keeps_its_header_and_properties(qm, queues, group) -> None:
    src, dst = queues("IN"), queues("OUT")
    doc = flow(
        {
            "in": ("MQInput", {"queueName": src}),
            "f": ("Filter", {"esql": ROUTE_FILTER}),
            "o": ("MQOutput", {"queueName": dst, "newCorrelId": True}),
        },
        ["in.out -> f", "f.true -> o"],
        name="RelayFiltered",
    )
    body = _rfh2({"Route": "yes", "Region": "north"}) + b"payload"
    qm.put(src, body, MessageDescriptor(format="MQHRF2", correl_id=b"K" * 24), properties={"p": "1"})
    qm.put(src, _rfh2({"Route": "no"}) + b"dropped", MessageDescriptor(format="MQHRF2"))
    group.deploy(doc)
    (got,) = get_all(qm, dst, 1)
    assert got.body == body and got.md.format == "MQHRF2  "
    assert got.properties == {"p": "1", "Route": "yes", "Region": "north"}
    assert got.md.correl_id == b"\x00" * 24
    assert get_all(qm, dst, 1, wait=0.5) == []


def test_a_changed_descriptor_or_body_is_written_out(qm, queues, group) -> None:
    src, dst = queues("IN"), queues("OUT")
    esql = """CREATE COMPUTE MODULE Change
CREATE FUNCTION Main() RETURNS BOOLEAN
BEGIN
  SET OutputRoot = InputRoot;
  SET OutputRoot.MQMD.Priority = 8;
  SET OutputRoot.BLOB.BLOB = X'6368616e676564';
  RETURN TRUE;
END;
END MODULE;"""
    doc = flow(
        {
            "in": ("MQInput", {"queueName": src}),
            "c": ("Compute", {"esql": esql, "module": "Change"}),
            "o": ("MQOutput", {"queueName": dst}),
        },
        ["in.out -> c", "c.out -> o"],
        name="RelayChanged",
    )
    qm.put(src, b"original", MessageDescriptor(priority=2), properties={"k": "v"})
    group.deploy(doc)
    (got,) = get_all(qm, dst, 1)
    assert (got.body, got.md.priority, got.properties) == (b"changed", 8, {"k": "v"})


def test_a_message_backed_out_before_goes_out_with_backout_count_zero(qm, queues, group) -> None:
    src, dst = queues("IN"), queues("OUT")
    doc = flow(
        {"in": ("MQInput", {"queueName": src, "backoutThreshold": 5}), "o": ("MQOutput", {"queueName": dst})},
        ["in.out -> o"],
        name="RelayRetried",
    )
    qm.put(src, b"again", MessageDescriptor(persistence=1))
    got_back = qm.get(src, syncpoint=True)
    assert got_back is not None
    qm.backout()  # the message returns with backout count 1
    group.deploy(doc)
    (got,) = get_all(qm, dst, 1)
    assert got.body == b"again" and got.md.backout_count == 0
