"""Aggregation: fan-out with AggregateControl/AggregateRequest, fan-in with AggregateReply, timeouts, unknown replies."""

from __future__ import annotations

import itertools
import time

import pytest
from flowbroker.qm.protocol import MessageDescriptor
from flowbroker.runtime.compiler import FlowCompileError, compile_flow
from flowbroker.runtime.harness import flow, get_all

pytestmark = pytest.mark.timeout(90)
_names = itertools.count(1)

READ_REPLIES = """CREATE COMPUTE MODULE ReadReplies
  CREATE FUNCTION Main() RETURNS BOOLEAN
  BEGIN
    SET OutputRoot.XMLNSC.combined.folders = CARDINALITY(InputRoot.ComIbmAggregateReplyBody.*[]);
    SET OutputRoot.XMLNSC.combined.first = FIELDNAME(InputRoot.ComIbmAggregateReplyBody.*[1]);
    SET OutputRoot.XMLNSC.combined.price = InputRoot.ComIbmAggregateReplyBody.price.XMLNSC.price;
    SET OutputRoot.XMLNSC.combined.stock = InputRoot.ComIbmAggregateReplyBody.stock.XMLNSC.stock;
    RETURN TRUE;
  END;
END MODULE;"""


def fan_out(name: str, src: str, price: str, stock: str, aggregate: str, timeout: int = 0) -> dict:
    return flow(
        {
            "in": ("MQInput", {"queueName": src, "transactionMode": "yes"}),
            "ctl": ("AggregateControl", {"aggregateName": aggregate, "timeout": timeout}),
            "p": ("MQOutput", {"queueName": price}),
            "pr": ("AggregateRequest", {"folderName": "price"}),
            "s": ("MQOutput", {"queueName": stock}),
            "sr": ("AggregateRequest", {"folderName": "stock"}),
        },
        ["in.out -> ctl", "ctl.out -> p", "p.out -> pr", "ctl.out -> s", "s.out -> sr"],
        name=name,
    )


def fan_in(name: str, replies: str, out: str, aggregate: str, timed_out: str = "", unknown: str = "") -> dict:
    nodes = {
        "in": ("MQInput", {"queueName": replies, "messageDomain": "XMLNSC", "transactionMode": "yes"}),
        "agg": ("AggregateReply", {"aggregateName": aggregate}),
        "read": ("Compute", {"esql": READ_REPLIES}),
        "out": ("MQOutput", {"queueName": out}),
    }
    wires = ["in.out -> agg", "agg.out -> read", "read.out -> out"]
    if timed_out:
        nodes["tread"] = ("Compute", {"esql": READ_REPLIES.replace("ReadReplies", "ReadTimedOut")})
        nodes["tout"] = ("MQOutput", {"queueName": timed_out})
        wires += ["agg.timeout -> tread", "tread.out -> tout"]
    if unknown:
        nodes["unk"] = ("MQOutput", {"queueName": unknown})
        wires.append("agg.unknown -> unk")
    return flow(nodes, wires, name=name)


def answer(qm, request_queue: str, reply_queue: str, body: bytes) -> None:
    (request,) = get_all(qm, request_queue, 1)
    qm.put(reply_queue, body, MessageDescriptor(correl_id=request.md.msg_id))


@pytest.fixture
def setting(qm, queues):
    n = next(_names)
    names = {k: queues(f"AGG{n}.{k}") for k in ("IN", "PRICE", "STOCK", "REPLY", "OUT", "TIMEOUT", "UNKNOWN")}
    names["aggregate"] = f"quote-{n}-{time.time_ns()}"
    return names


def test_replies_are_combined_under_their_folders_in_request_order(qm, group, setting) -> None:
    q = setting
    group.deploy(fan_out(f"FanOut{q['aggregate']}", q["IN"], q["PRICE"], q["STOCK"], q["aggregate"]))
    group.deploy(fan_in(f"FanIn{q['aggregate']}", q["REPLY"], q["OUT"], q["aggregate"]))
    qm.put(q["IN"], b"<order>1</order>", MessageDescriptor(persistence=1))
    # the stock reply arrives first: the combined message keeps the order the requests were sent in
    answer(qm, q["STOCK"], q["REPLY"], b"<stock>7</stock>")
    time.sleep(0.5)
    assert qm.get(q["OUT"]) is None  # one reply of two: nothing yet
    answer(qm, q["PRICE"], q["REPLY"], b"<price>12.50</price>")
    (out,) = get_all(qm, q["OUT"], 1)
    assert out.body == (
        b"<combined><folders>2</folders><first>price</first><price>12.50</price><stock>7</stock></combined>"
    )
    # nothing of the aggregation is left behind
    for system in ("CONTROL", "REQUEST", "REPLY", "TIMEOUT"):
        assert qm.inquire_queue(f"SYSTEM.BROKER.AGGR.{system}")["current_depth"] == 0 or system == "TIMEOUT"


def test_a_timeout_propagates_the_replies_received_and_a_late_reply_is_unknown(qm, group, setting) -> None:
    q = setting
    group.deploy(
        fan_out(f"FanOutT{q['aggregate']}", q["IN"], q["PRICE"], q["STOCK"], q["aggregate"], timeout=1)
    )
    group.deploy(
        fan_in(
            f"FanInT{q['aggregate']}",
            q["REPLY"],
            q["OUT"],
            q["aggregate"],
            timed_out=q["TIMEOUT"],
            unknown=q["UNKNOWN"],
        )
    )
    qm.put(q["IN"], b"<order>2</order>", MessageDescriptor(persistence=1))
    answer(qm, q["PRICE"], q["REPLY"], b"<price>3</price>")
    (late,) = get_all(qm, q["STOCK"], 1)
    (partial,) = get_all(qm, q["TIMEOUT"], 1, wait=15)
    assert partial.body == b"<combined><folders>1</folders><first>price</first><price>3</price></combined>"
    assert qm.get(q["OUT"]) is None
    qm.put(q["REPLY"], b"<stock>too late</stock>", MessageDescriptor(correl_id=late.md.msg_id))
    (unknown,) = get_all(qm, q["UNKNOWN"], 1)
    assert unknown.body == b"<stock>too late</stock>"


def test_a_reply_that_matches_no_request_goes_to_unknown(qm, group, setting) -> None:
    q = setting
    group.deploy(
        fan_in(f"FanInU{q['aggregate']}", q["REPLY"], q["OUT"], q["aggregate"], unknown=q["UNKNOWN"])
    )
    qm.put(q["REPLY"], b"<stray/>", MessageDescriptor(correl_id=b"N" * 24))
    qm.put(q["REPLY"], b"<nocorrel/>")
    got = get_all(qm, q["UNKNOWN"], 2)
    assert sorted(m.body for m in got) == [b"<nocorrel/>", b"<stray/>"]


def test_an_unknown_reply_with_unknown_unconnected_is_backed_out_not_dropped(
    qm, queues, group, setting
) -> None:
    q = setting
    boq = queues("AGG.BOQ")
    src = queues("AGG.REPLIES", backout_threshold=2, backout_requeue_q=boq)
    group.deploy(fan_in(f"FanInB{q['aggregate']}", src, q["OUT"], q["aggregate"]))
    qm.put(src, b"<stray/>", MessageDescriptor(correl_id=b"M" * 24, persistence=1))
    (moved,) = get_all(qm, boq, 1, wait=20)
    assert moved.body == b"<stray/>"
    assert "matches no request" in str(moved.properties.get("flowbroker.exception"))


def test_a_failing_fan_out_leaves_no_aggregation_and_sends_no_request(qm, group, setting) -> None:
    q = setting
    doc = fan_out(f"FanOutF{q['aggregate']}", q["IN"], q["PRICE"], q["STOCK"], q["aggregate"])
    doc["nodes"].append({"id": "x", "type": "Throw", "properties": {"messageText": "no stock today"}})
    doc["connections"].append(
        {"from": {"node": "sr", "terminal": "out"}, "to": {"node": "x", "terminal": "in"}}
    )
    group.deploy(doc)
    qm.put(q["IN"], b"<order>3</order>", MessageDescriptor(persistence=1))
    time.sleep(1.5)
    assert qm.get(q["PRICE"]) is None and qm.get(q["STOCK"]) is None
    assert qm.inquire_queue("SYSTEM.BROKER.AGGR.CONTROL")["current_depth"] == 0


def test_request_without_a_sent_message_is_a_clear_failure(qm, group, setting) -> None:
    q = setting
    doc = flow(
        {
            "in": ("MQInput", {"queueName": q["IN"]}),
            "ctl": ("AggregateControl", {"aggregateName": q["aggregate"]}),
            "r": ("AggregateRequest", {"folderName": "price"}),
            "f": ("MQOutput", {"queueName": q["UNKNOWN"]}),
        },
        ["in.out -> ctl", "ctl.out -> r", "r.failure -> f"],
        name=f"NoSend{q['aggregate']}",
    )
    group.deploy(doc)
    qm.put(q["IN"], b"x", MessageDescriptor(persistence=1))
    (failed,) = get_all(qm, q["UNKNOWN"], 1)
    assert failed.body == b"x"


@pytest.mark.parametrize(
    ("node", "props", "property"),
    [
        ("AggregateControl", {"aggregateName": ""}, "aggregateName"),
        ("AggregateControl", {"aggregateName": "a", "timeout": -1}, "timeout"),
        ("AggregateRequest", {"folderName": ""}, "folderName"),
        ("AggregateRequest", {"folderName": "two words"}, "folderName"),
        ("AggregateReply", {"aggregateName": " "}, "aggregateName"),
    ],
)
def test_bad_properties_are_refused_at_deploy_naming_the_property(
    node: str, props: dict, property: str
) -> None:
    doc = flow({"in": ("MQInput", {"queueName": "Q"}), "n": (node, props)}, ["in.out -> n"])
    with pytest.raises(FlowCompileError) as refused:
        compile_flow(doc)
    assert any(p.node == "n" and p.property == property for p in refused.value.problems), (
        refused.value.problems
    )


SET_TIMEOUT = """SET OutputLocalEnvironment = InputLocalEnvironment;
SET OutputRoot = InputRoot;
SET OutputLocalEnvironment.Aggregation.Timeout = InputRoot.XMLNSC.t;
"""


def test_the_local_environment_sets_an_aggregations_timeout_and_a_bad_one_fails(qm, group, setting) -> None:
    q = setting
    doc = fan_out(f"FanOutLE{q['aggregate']}", q["IN"], q["PRICE"], q["STOCK"], q["aggregate"], timeout=0)
    doc["nodes"] += [
        {
            "id": "set",
            "type": "Compute",
            "properties": {"esql": SET_TIMEOUT, "computeMode": "LocalEnvironmentAndMessage"},
        },
        {"id": "f", "type": "MQOutput", "properties": {"queueName": q["UNKNOWN"]}},
    ]
    doc["nodes"][0]["properties"]["messageDomain"] = "XMLNSC"
    for wire in doc["connections"]:
        if wire["from"]["node"] == "in":
            wire["to"]["node"] = "set"
    doc["connections"] += [
        {"from": {"node": "set", "terminal": "out"}, "to": {"node": "ctl", "terminal": "in"}},
        {"from": {"node": "ctl", "terminal": "failure"}, "to": {"node": "f", "terminal": "in"}},
    ]
    group.deploy(doc)
    group.deploy(
        fan_in(f"FanInLE{q['aggregate']}", q["REPLY"], q["OUT"], q["aggregate"], timed_out=q["TIMEOUT"])
    )
    qm.put(q["IN"], b"<t>1</t>", MessageDescriptor(persistence=1))
    (partial,) = get_all(qm, q["TIMEOUT"], 1, wait=15)
    assert partial.body == b"<combined><folders>0</folders></combined>"
    qm.put(q["IN"], b"<t>soon</t>", MessageDescriptor(persistence=1))
    (failed,) = get_all(qm, q["UNKNOWN"], 1)
    assert failed.body == b"<t>soon</t>"
    # the failing one sent no request: only the first message's two are there
    assert len(get_all(qm, q["PRICE"], 2, wait=1)) == 1


SLOW = """CREATE COMPUTE MODULE Slow
  CREATE FUNCTION Main() RETURNS BOOLEAN
  BEGIN
    DECLARE i INTEGER 0;
    WHILE i < 200000 DO
      SET i = i + 1;
    END WHILE;
    RETURN TRUE;
  END;
END MODULE;"""


@pytest.mark.parametrize("hold", [0, 20])
def test_replies_faster_than_the_fan_outs_commit_are_held_by_the_unknown_message_timeout(
    qm, group, setting, hold: int
) -> None:
    q = setting
    doc = fan_out(f"FanOutFast{hold}{q['aggregate']}", q["IN"], q["PRICE"], q["STOCK"], q["aggregate"])
    for node in doc["nodes"]:
        if node["type"] == "MQOutput":
            node["properties"]["transactionMode"] = "no"  # the requests leave before the state commits
    doc["nodes"].append({"id": "slow", "type": "Compute", "properties": {"esql": SLOW}})
    doc["connections"].append(
        {"from": {"node": "sr", "terminal": "out"}, "to": {"node": "slow", "terminal": "in"}}
    )
    group.deploy(doc)
    reply_flow = fan_in(
        f"FanInFast{hold}{q['aggregate']}", q["REPLY"], q["OUT"], q["aggregate"], unknown=q["UNKNOWN"]
    )
    reply_flow["nodes"][1]["properties"]["unknownMessageTimeout"] = hold
    group.deploy(reply_flow)
    qm.put(q["IN"], b"<order>4</order>", MessageDescriptor(persistence=1))
    answer(qm, q["PRICE"], q["REPLY"], b"<price>1</price>")
    answer(qm, q["STOCK"], q["REPLY"], b"<stock>2</stock>")
    if hold:
        (out,) = get_all(qm, q["OUT"], 1, wait=30)
        assert (
            out.body
            == b"<combined><folders>2</folders><first>price</first><price>1</price><stock>2</stock></combined>"
        )
        assert qm.get(q["UNKNOWN"]) is None
    else:
        assert len(get_all(qm, q["UNKNOWN"], 2, wait=20)) == 2
        assert qm.get(q["OUT"]) is None


def test_a_failing_timeout_path_sends_the_replies_to_failure_and_closes_the_aggregation(
    qm, group, setting
) -> None:
    q = setting
    group.deploy(
        fan_out(f"FanOutTF{q['aggregate']}", q["IN"], q["PRICE"], q["STOCK"], q["aggregate"], timeout=1)
    )
    doc = fan_in(f"FanInTF{q['aggregate']}", q["REPLY"], q["OUT"], q["aggregate"], unknown=q["UNKNOWN"])
    doc["nodes"] += [
        {"id": "x", "type": "Throw", "properties": {"messageText": "timeout path fails"}},
        {
            "id": "fread",
            "type": "Compute",
            "properties": {"esql": READ_REPLIES.replace("ReadReplies", "ReadFailed")},
        },
        {"id": "fout", "type": "MQOutput", "properties": {"queueName": q["TIMEOUT"]}},
    ]
    doc["connections"] += [
        {"from": {"node": "agg", "terminal": "timeout"}, "to": {"node": "x", "terminal": "in"}},
        {"from": {"node": "agg", "terminal": "failure"}, "to": {"node": "fread", "terminal": "in"}},
        {"from": {"node": "fread", "terminal": "out"}, "to": {"node": "fout", "terminal": "in"}},
    ]
    deployed = group.deploy(doc)
    qm.put(q["IN"], b"<order>5</order>", MessageDescriptor(persistence=1))
    answer(qm, q["PRICE"], q["REPLY"], b"<price>4</price>")
    (late,) = get_all(qm, q["STOCK"], 1)
    (partial,) = get_all(qm, q["TIMEOUT"], 1, wait=15)
    assert partial.body == b"<combined><folders>1</folders><first>price</first><price>4</price></combined>"
    # the aggregation was closed with the failure path: a later reply is unknown
    qm.put(q["REPLY"], b"<stock>late</stock>", MessageDescriptor(correl_id=late.md.msg_id))
    (unknown,) = get_all(qm, q["UNKNOWN"], 1)
    assert unknown.body == b"<stock>late</stock>"
    assert qm.get(q["OUT"]) is None
    assert deployed.compiled.nodes["x"].stats.messages_in == 1


def test_a_held_reply_still_unknown_when_its_time_is_up_goes_to_the_dead_letter_queue(
    qm, group, setting
) -> None:
    q = setting
    doc = fan_in(f"FanInH{q['aggregate']}", q["REPLY"], q["OUT"], q["aggregate"])
    doc["nodes"][1]["properties"]["unknownMessageTimeout"] = 1
    group.deploy(doc)
    body = f"<stray>{q['aggregate']}</stray>".encode()
    qm.put(q["REPLY"], body, MessageDescriptor(correl_id=b"H" * 24, persistence=1))
    deadline = time.monotonic() + 20
    dead = []
    while not dead and time.monotonic() < deadline:
        dead = [m for m in get_all(qm, "SYSTEM.DEAD.LETTER.QUEUE", 50, wait=0.5) if m.body == body]
    assert len(dead) == 1
    assert "matches no request" in str(dead[0].properties.get("flowbroker.reason"))
    assert qm.get(q["OUT"]) is None
