"""MQGet: a get in the middle of a flow, by CorrelId / MsgId, noMessage, failure, output location, unit of work."""

from __future__ import annotations

import pytest
from esql.tree import Element
from flowbroker.qm.protocol import MessageDescriptor
from flowbroker.runtime.compiler import FlowCompileError
from flowbroker.runtime.harness import FlowHarness, flow, get_all

pytestmark = pytest.mark.timeout(60)


def get_flow(**props: object) -> dict:
    return flow(
        {"in": ("MQInput", {"queueName": "UNUSED"}), "g": ("MQGet", props)},
        ["in.out -> g"],
    )


def test_gets_the_next_message_as_the_output_message(qm_process, qm, queues) -> None:
    side = queues("SIDE")
    qm.put(side, b"from the side queue")
    h = FlowHarness(get_flow(queueName=side, waitInterval=0), connect=qm_process.client)
    h.inject("g", b"request")
    h.close()
    (out,) = h.seen("g", "out")
    assert out.root.child("BLOB").child("BLOB").value == b"from the side queue"
    assert get_all(qm, side, 1, wait=0.5) == []


def test_no_message_propagates_the_input_unchanged(qm_process, queues) -> None:
    side = queues("EMPTY")
    h = FlowHarness(get_flow(queueName=side, waitInterval=50), connect=qm_process.client)
    sent = h.inject("g", b"request")
    h.close()
    assert h.seen("g", "out") == []
    (passed,) = h.seen("g", "noMessage")
    assert passed.root is sent.root


def test_get_by_correl_id_of_the_input_message(qm_process, qm, queues) -> None:
    side = queues("REPLIES")
    wanted = b"B" * 24
    qm.put(side, b"other reply", MessageDescriptor(correl_id=b"A" * 24))
    qm.put(side, b"our reply", MessageDescriptor(correl_id=wanted))
    h = FlowHarness(get_flow(queueName=side, waitInterval=0, getByCorrelId=True), connect=qm_process.client)
    h.inject("g", b"request", md={"correl_id": wanted})
    h.close()
    (out,) = h.seen("g", "out")
    assert out.root.child("MQMD").child("CorrelId").value == wanted
    assert [m.body for m in get_all(qm, side, 1)] == [b"other reply"]


def test_get_by_msg_id_from_the_local_environment(qm_process, qm, queues) -> None:
    side = queues("BYID")
    qm.put(side, b"first")
    second = qm.put(side, b"second")
    env = Element("LocalEnvironment")
    env.add("MQ").add("GET").add("MQMD").add("MsgId", second)
    h = FlowHarness(get_flow(queueName=side, waitInterval=0, getByMessageId=True), connect=qm_process.client)
    h.inject("g", b"request", local_environment=env)
    h.close()
    (out,) = h.seen("g", "out")
    assert out.root.child("MQMD").child("MsgId").value == second


def test_get_by_correl_id_without_an_id_is_a_failure(qm_process, queues) -> None:
    side = queues("NOID")
    h = FlowHarness(get_flow(queueName=side, waitInterval=0, getByCorrelId=True), connect=qm_process.client)
    failures = h.tap("g", "failure")
    h.inject("g", b"request")
    h.close()
    (failed,) = failures.seen
    assert "CorrelId" in failed.exception_list.first_child.child("Text").value


def test_unknown_queue_goes_to_failure(qm_process) -> None:
    h = FlowHarness(get_flow(queueName="NO.SUCH.QUEUE.FOR.MQGET", waitInterval=0), connect=qm_process.client)
    failures = h.tap("g", "failure")
    h.inject("g", b"request")
    h.close()
    (failed,) = failures.seen
    entry = failed.exception_list.first_child
    assert entry.child("Type").value == "MQGet" and entry.child("Name").value == "g"
    assert h.seen("g", "noMessage") == [] and h.seen("g", "out") == []


def test_output_data_location_places_the_parsed_body(qm_process, qm, queues) -> None:
    side = queues("XML")
    qm.put(side, b"<reply><status>ok</status></reply>")
    h = FlowHarness(
        get_flow(
            queueName=side,
            waitInterval=0,
            messageDomain="XMLNSC",
            outputDataLocation="OutputLocalEnvironment.Variables.Reply",
        ),
        connect=qm_process.client,
    )
    sent = h.inject("g", b"request")
    h.close()
    (out,) = h.seen("g", "out")
    reply = out.local_environment.child("Variables").child("Reply")
    assert reply.child("reply").child("status").value == "ok"
    assert out.root.last_child.to_data() == sent.root.last_child.to_data()
    # the input's LocalEnvironment is not changed for the nodes upstream
    assert sent.local_environment.child("Variables") is None


def test_bad_output_location_is_refused_at_deploy() -> None:
    with pytest.raises(FlowCompileError) as info:
        FlowHarness(get_flow(queueName="Q", outputDataLocation="InputRoot.x"))
    assert info.value.problems[0].property == "outputDataLocation"


def test_the_get_is_backed_out_with_the_flows_unit_of_work(qm, queues, group) -> None:
    src, side, bq = queues("IN"), queues("SIDE"), queues("BQ")
    qm.put(side, b"side message")
    doc = flow(
        {
            "in": ("MQInput", {"queueName": src, "backoutThreshold": 1, "backoutQueue": bq}),
            "g": ("MQGet", {"queueName": side, "waitInterval": 0}),
            "t": ("Throw", {"messageText": "fails after the get"}),
        },
        ["in.out -> g", "g.out -> t"],
        name="GetBackedOut",
    )
    group.deploy(doc)
    qm.put(src, b"request")
    assert [m.body for m in get_all(qm, bq, 1)] == [b"request"]
    assert [m.body for m in get_all(qm, side, 1)] == [b"side message"]


def test_transaction_mode_no_makes_the_get_final(qm, queues, group) -> None:
    src, side, bq = queues("IN"), queues("SIDE"), queues("BQ")
    qm.put(side, b"side message")
    doc = flow(
        {
            "in": ("MQInput", {"queueName": src, "backoutThreshold": 1, "backoutQueue": bq}),
            "g": ("MQGet", {"queueName": side, "waitInterval": 0, "transactionMode": "no"}),
            "t": ("Throw", {"messageText": "fails after the get"}),
        },
        ["in.out -> g", "g.out -> t"],
        name="GetFinal",
    )
    group.deploy(doc)
    qm.put(src, b"request")
    assert [m.body for m in get_all(qm, bq, 1)] == [b"request"]
    assert get_all(qm, side, 1, wait=0.5) == []
