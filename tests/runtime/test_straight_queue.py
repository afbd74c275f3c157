"""MQInput → Compute (copy, edit the JSON body) → MQOutput run straight puts what the nodes put.

Each message is run through a flow thread twice, once straight and once node by node, with the
same output options and unit of work; the recorded puts (queue, the encoded message, syncpoint,
pipelining) must be the same. Messages the straight run cannot put as the nodes would (an MQRFH2,
another CCSID, a body the editor declines, one past its backout threshold) go through the nodes.
"""

from __future__ import annotations

from typing import Any

import pytest
from flowbroker.qm.protocol import Message, decode_message
from flowbroker.runtime.engine import FlowThread
from flowbroker.runtime.harness import FlowHarness, flow
from flowbroker.runtime.straight import StraightRun
from recording_transport import DESCRIPTOR_FIELDS, Encoded, PartsOnly, got_message

STAMP = """CREATE COMPUTE MODULE Stamp
CREATE FUNCTION Main() RETURNS BOOLEAN
BEGIN
  SET OutputRoot = InputRoot;
  SET OutputRoot.JSON.Data.status = 'processed';
  SET OutputRoot.JSON.Data.seen = InputRoot.JSON.Data.id;
  RETURN TRUE;
END;
END MODULE;"""


def _rfh2_message() -> Message:
    from esql.tree import Element
    from flowbroker.formats import rfh2

    header = Element("MQRFH2")
    header.add("Format", "MQSTR   ")
    header.add("usr", type=0x01000000).add("Route", "yes")
    raw = rfh2.serialize(header, encoding=546, ccsid=1208) + b'{"id": 1}'
    return got_message(raw, format="MQHRF2  ")


#: (message, whether it goes straight)
MESSAGES: dict[str, tuple[Any, bool]] = {
    "json": (lambda: got_message(b'{"id": 1, "status": "new"}', format="MQSTR   "), True),
    "no format, properties": (lambda: got_message(b'{"id": 2}', {"colour": "red", "n": 3}, format=""), True),
    "descriptor fields": (
        lambda: got_message(
            b'{"id": 3, "pad": "\\u00e9t\\u00e9"}',
            {"k": "v"},
            **DESCRIPTOR_FIELDS,
        ),
        True,
    ),
    "delivery properties": (
        lambda: got_message(b'{"id": 4}', {"MQTopicString": "a/b", "flowbroker.reason": "x", "p": 1}),
        True,
    ),
    "another ccsid": (lambda: got_message(b'{"id": 5}', format="MQSTR   ", coded_char_set_id=819), False),
    "mqrfh2": (_rfh2_message, False),
    "malformed": (lambda: got_message(b'{"id": ', format="MQSTR   "), False),
    "an object set": (lambda: got_message(b'{"id": 7, "status": {"a": 1}}', format="MQSTR   "), False),
    "past its backout threshold": (
        lambda: got_message(b'{"id": 8}', format="MQSTR   ", backout_count=5),
        True,
    ),
}

OUTPUTS: dict[str, dict[str, Any]] = {
    "defaults, own MsgId": {"newMsgId": False},
    "persistent, in the unit of work": {
        "newMsgId": False,
        "persistenceMode": "persistent",
        "transactionMode": "yes",
    },
    "non-persistent, outside it": {
        "newMsgId": False,
        "persistenceMode": "nonPersistent",
        "transactionMode": "no",
    },
    "new correl id": {"newMsgId": False, "newCorrelId": True},
}


def _untapped(harness: FlowHarness) -> None:
    """The harness taps every out terminal; a deployed flow has no such wires."""
    for node in harness.compiled.nodes.values():
        for terminal in list(node.wires):
            node.wires[terminal] = [w for w in node.wires[terminal] if not w[0].id.startswith("tap:")]


def _thread(transport: Encoded, output: dict[str, Any], straight: bool) -> tuple[FlowThread, Any]:
    harness = FlowHarness(
        flow(
            {
                "in": ("MQInput", {"queueName": "IN", "messageDomain": "JSON"}),
                "c": ("Compute", {"esql": STAMP}),
                "out": ("MQOutput", {"queueName": "OUT", **output}),
            },
            ["in.out -> c", "c.out -> out"],
        )
    )
    _untapped(harness)
    node = harness.compiled.nodes["in"]
    thread = FlowThread(harness.deployed, node, 0)
    thread.client = transport  # type: ignore[assignment]
    if straight:
        thread.straight = StraightRun.of(node, "JSON")
        assert thread.straight is not None
        thread._straight_now = thread.straight
    return thread, node.queue_input()


def _run(
    message: Message, output: dict[str, Any], straight: bool, transactional: bool, pipeline: bool
) -> Any:
    transport = Encoded()
    thread, spec = _thread(transport, output, straight)
    from flowbroker_nodes.base import bind_thread

    bind_thread(thread)
    try:
        thread._run_queued(spec, message, transactional, 3, "", pipeline)
        if thread.straight is not None:
            thread.straight.flush()  # as the flow thread does at the end of a batch
    finally:
        bind_thread(None)
    runs = thread.straight.runs if thread.straight is not None else 0
    return transport.puts, runs, thread


@pytest.mark.parametrize(("transactional", "pipeline"), [(True, True), (True, False), (False, False)])
@pytest.mark.parametrize("output", list(OUTPUTS))
@pytest.mark.parametrize("name", list(MESSAGES))
def test_straight_puts_what_the_nodes_put(
    name: str, output: str, transactional: bool, pipeline: bool
) -> None:
    make, goes_straight = MESSAGES[name]
    straight, runs, _ = _run(make(), OUTPUTS[output], True, transactional, pipeline)
    nodes, _, _ = _run(make(), OUTPUTS[output], False, transactional, pipeline)
    assert straight == nodes
    expected = goes_straight and not (name == "past its backout threshold" and transactional)
    assert runs == (1 if expected else 0)
    if expected:
        body = decode_message(straight[0][2]).body
        assert b'"status":"processed"' in body


def test_a_new_msg_id_is_fresh_and_the_rest_is_the_nodes() -> None:
    message = MESSAGES["descriptor fields"][0]
    straight, runs, _ = _run(message(), {}, True, True, True)
    nodes, _, _ = _run(message(), {}, False, True, True)
    assert runs == 1
    (_, queue, encoded, sync, pipe), (_, queue2, encoded2, sync2, pipe2) = straight[0], nodes[0]
    assert (queue, sync, pipe) == (queue2, sync2, pipe2) == ("OUT", True, True)
    assert encoded[:24] not in (b"M" * 24, encoded2[:24])
    assert encoded[24:] == encoded2[24:]


def test_statistics_are_those_of_the_nodes() -> None:
    make, _ = MESSAGES["json"]
    _, runs, thread = _run(make(), {}, True, True, True)
    _, _, general = _run(make(), {}, False, True, True)
    assert runs == 1
    for node_id in ("in", "c", "out"):
        got = thread.deployed.compiled.nodes[node_id].stats
        want = general.deployed.compiled.nodes[node_id].stats
        assert (got.messages_in, got.messages_out, got.errors) == (
            want.messages_in,
            want.messages_out,
            want.errors,
        )
        assert got.elapsed_ns > 0


def test_a_transport_that_puts_only_parts_runs_the_nodes() -> None:
    transport = PartsOnly()
    thread, spec = _thread(transport, {"newMsgId": False}, True)
    from flowbroker_nodes.base import bind_thread

    bind_thread(thread)
    try:
        thread._run_queued(spec, MESSAGES["json"][0](), True, 3, "", True)
    finally:
        bind_thread(None)
    assert thread.straight is not None and thread.straight.runs == 0
    assert [p[0] for p in transport.puts] == ["parts"]


@pytest.mark.parametrize(
    ("change", "why"),
    [
        ({"out": {"destinationMode": "destinationList"}}, "a destination list"),
        ({"c": {"computeMode": "All"}}, "another compute mode"),
        ({"wire": "out.out -> c2"}, "the output wired on"),
        ({"wire": "out.failure -> c2"}, "the output's failure wired"),
        ({"wire": "in.catch -> c2"}, "the input catches"),
        ({"wire": "c.out -> c2"}, "two targets"),
    ],
)
def test_other_flows_are_not_straight(change: dict[str, Any], why: str) -> None:
    nodes: dict[str, tuple[str, dict[str, Any]]] = {
        "in": ("MQInput", {"queueName": "IN", "messageDomain": "JSON"}),
        "c": ("Compute", {"esql": STAMP, **change.get("c", {})}),
        "out": ("MQOutput", {"queueName": "OUT", **change.get("out", {})}),
        "c2": ("Compute", {"esql": STAMP}),
    }
    wires = ["in.out -> c", "c.out -> out", *([change["wire"]] if "wire" in change else [])]
    harness = FlowHarness(flow(nodes, wires))
    _untapped(harness)
    compiled = harness.compiled.nodes
    assert StraightRun.of(compiled["in"], "JSON") is None or why == "a destination list"
    run = StraightRun.of(compiled["in"], "JSON")
    if run is not None:  # a destination list: the output offers no writer
        assert run.writer_of(harness.thread) is None
