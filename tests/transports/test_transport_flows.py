"""The same flow document runs unchanged on the embedded queue manager and on RabbitMQ."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from flowbroker.qm.protocol import MessageDescriptor
from flowbroker.runtime import transports
from flowbroker.runtime.engine import ExecutionGroupRuntime
from flowbroker.runtime.harness import flow
from transport_support import unique, wait_for

pytestmark = [pytest.mark.timeout(90)]

APPEND = """CREATE COMPUTE MODULE Append
  CREATE FUNCTION Main() RETURNS BOOLEAN
  BEGIN
    SET OutputRoot = InputRoot;
    SET OutputRoot.BLOB.BLOB = InputRoot.BLOB.BLOB || X'2121';
    RETURN TRUE;
  END;
END MODULE;
"""


def document(src: str, dst: str, **input_props: Any) -> dict[str, Any]:
    return flow(
        {
            "in": ("MQInput", {"queueName": src, **input_props}),
            "c": ("Compute", {"esql": APPEND}),
            "out": ("MQOutput", {"queueName": dst}),
        },
        ["in.out -> c", "c.out -> out"],
        name=f"Append{abs(hash(src)) % 100000}",
    )


class Side:
    """One transport under test: its URL, fresh queues on it, and a transport to look with."""

    def __init__(self, url: str, data_dir: str | None, make_queue: Any, define: Any, delete: Any) -> None:
        self.url = url
        self.data_dir = data_dir
        self.make_queue = make_queue
        #: define and delete a queue by its name
        self.define = define
        self.delete = delete
        self.connect = transports.connector(url, data_dir=data_dir)
        self.probe = self.connect()

    def get_all(self, queue: str, count: int, timeout: float = 20.0) -> list[Any]:
        got: list[Any] = []

        def enough() -> bool:
            got.extend(self.probe.get_many(queue, count - len(got), wait=0.2))
            return len(got) >= count

        wait_for(enough, timeout, f"{count} messages on {queue}")
        return got


@pytest.fixture(params=["qm", "amqp", "amqp-classic"])
def side(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Side]:
    if request.param == "qm":
        qm = request.getfixturevalue("qm_process")

        def define(name: str) -> None:
            with qm.client() as client:
                client.define_queue(name)

        def delete(name: str) -> None:
            with qm.client() as client:
                client.delete_queue(name, purge=True)

        def make_queue(base: str, **attrs: Any) -> str:
            name = unique(base)
            define(name)
            return name

        chosen = Side(qm.url, str(qm.data_dir), make_queue, define, delete)
    else:
        rabbit = request.getfixturevalue("rabbit")

        kind = "classic" if request.param == "amqp-classic" else "quorum"

        def make_queue(base: str, **attrs: Any) -> str:
            return rabbit.queue(base, kind)

        def define(name: str) -> None:
            rabbit.channel.queue_declare(name, durable=True, arguments={"x-queue-type": kind})

        def delete(name: str) -> None:
            rabbit.channel.queue_delete(name)

        chosen = Side(rabbit.url, None, make_queue, define, delete)
    yield chosen
    chosen.probe.close()


@pytest.fixture
def group(side: Side, tmp_path: Path) -> Iterator[ExecutionGroupRuntime]:
    runtime = ExecutionGroupRuntime(side.connect, trace_dir=tmp_path / "trace")
    yield runtime
    runtime.shutdown(timeout=10)


def test_the_same_flow_document_runs_on_either_transport(side: Side, group: ExecutionGroupRuntime) -> None:
    src, dst = side.make_queue("IN"), side.make_queue("OUT")
    group.deploy(document(src, dst))
    md = MessageDescriptor(
        persistence=1, correl_id=b"C" * 24, reply_to_q="REPLY.Q", format="", priority=4, expiry=-1
    )
    for i in range(10):
        side.probe.put(src, f"message {i}".encode(), md, properties={"order": i})
    got = side.get_all(dst, 10)
    assert sorted(m.body for m in got) == sorted(f"message {i}!!".encode() for i in range(10))
    first = got[0]
    assert first.md.correl_id == b"C" * 24 and first.md.reply_to_q == "REPLY.Q"
    assert first.md.persistence == 1 and first.md.priority == 4
    assert first.md.msg_id != b"\x00" * 24  # newMsgId: a new id was assigned
    assert {m.properties["order"] for m in got} == set(range(10))
    assert side.probe.get_many(src, 1) == []  # every input was acknowledged / committed
    stats = next(iter(group.statistics().values()))
    assert stats["messages_in"] == 10 and stats["errors"] == 0 and stats["backouts"] == 0


STAMP = """CREATE COMPUTE MODULE Stamp
  CREATE FUNCTION Main() RETURNS BOOLEAN
  BEGIN
    SET OutputRoot = InputRoot;
    SET OutputRoot.JSON.Data.status = 'processed';
    RETURN TRUE;
  END;
END MODULE;
"""


def test_a_json_stamp_flow_runs_straight_where_the_transport_puts_encoded_messages(
    side: Side, group: ExecutionGroupRuntime
) -> None:
    """MQInput → Compute (copy, set a field) → MQOutput: on the queue manager each message is
    edited and put as its own bytes with the new body (a straight run); on RabbitMQ it goes
    through the nodes. Either way the same messages come out, in order, with their headers."""
    src, dst = side.make_queue("IN"), side.make_queue("OUT")
    doc = flow(
        {
            "in": ("MQInput", {"queueName": src, "messageDomain": "JSON"}),
            "c": ("Compute", {"esql": STAMP}),
            "out": ("MQOutput", {"queueName": dst}),
        },
        ["in.out -> c", "c.out -> out"],
        name=f"Stamp{abs(hash(src)) % 100000}",
    )
    group.deploy(doc)
    md = MessageDescriptor(persistence=1, correl_id=b"C" * 24, format="MQSTR   ", priority=4, expiry=-1)
    for i in range(20):
        side.probe.put(src, b'{"id": %d, "status": "new"}' % i, md, properties={"order": i})
    got = side.get_all(dst, 20)
    assert [m.body for m in got] == [b'{"id":%d,"status":"processed"}' % i for i in range(20)]
    assert [m.properties["order"] for m in got] == list(range(20))
    assert all(
        m.md.correl_id == b"C" * 24 and m.md.persistence == 1 and m.md.format == "MQSTR   " for m in got
    )
    (thread,) = group._get(doc["name"]).threads
    assert thread.straight is not None
    assert thread.straight.runs == (20 if side.data_dir is not None else 0)  # the queue manager's
    stats = next(iter(group.statistics().values()))
    assert stats["messages_in"] == 20 and stats["errors"] == 0


def test_a_poison_message_goes_to_the_backout_queue_with_the_reason(
    side: Side, group: ExecutionGroupRuntime
) -> None:
    src, dst, boq = side.make_queue("IN"), side.make_queue("OUT"), side.make_queue("BO")
    doc = flow(
        {
            "in": ("MQInput", {"queueName": src, "backoutThreshold": 2, "backoutQueue": boq}),
            "c": ("Compute", {"esql": APPEND}),
            "out": ("MQOutput", {"queueName": dst}),
            "boom": ("Throw", {"messageText": "rejected", "messageNumber": 3105}),
        },
        ["in.out -> c", "c.out -> out", "out.out -> boom"],
        name=f"Poison{abs(hash(src)) % 100000}",
    )
    group.deploy(doc)
    side.probe.put(src, b"poison", MessageDescriptor(persistence=1))
    (moved,) = side.get_all(boq, 1)
    assert moved.body == b"poison"
    assert moved.properties["flowbroker.reason"] == "backout count 2 reached the backout threshold 2"
    assert "rejected" in moved.properties["flowbroker.exception"]
    assert moved.properties["flowbroker.node"] == "boom"
    assert moved.properties["flowbroker.queue"] == src
    assert side.probe.get_many(dst, 1) == [] and side.probe.get_many(src, 1) == []
    stats = next(iter(group.statistics().values()))
    assert stats["backouts"] == 2 and stats["failures"] == 1


def test_replies_are_got_by_correlation_id(side: Side, group: ExecutionGroupRuntime) -> None:
    src, replies = side.make_queue("REQ"), side.make_queue("REPLY")
    doc = flow(
        {"in": ("MQInput", {"queueName": src}), "c": ("Compute", {"esql": APPEND}), "r": ("MQReply", {})},
        ["in.out -> c", "c.out -> r"],
        name=f"Reply{abs(hash(src)) % 100000}",
    )
    group.deploy(doc)
    ids = [bytes([65 + i]) * 24 for i in range(3)]
    for i, msg_id in enumerate(ids):
        side.probe.put(src, f"request {i}".encode(), MessageDescriptor(msg_id=msg_id, reply_to_q=replies))
    # each requester waits for its own reply, whatever order they arrive in
    for i in reversed(range(3)):
        reply = side.probe.get(replies, wait=20, correl_id=ids[i])
        assert reply is not None, i
        assert reply.body == f"request {i}!!".encode() and reply.md.correl_id == ids[i]
    assert side.probe.get(replies, wait=0.2) is None


def test_a_deleted_input_queue_leaves_the_flow_waiting_for_it(
    side: Side, group: ExecutionGroupRuntime
) -> None:
    src, dst = side.make_queue("GONE"), side.make_queue("OUT")
    deployed = group.deploy(document(src, dst))
    side.probe.put(src, b"first")
    assert [m.body for m in side.get_all(dst, 1)] == [b"first!!"]
    side.delete(src)
    wait_for(lambda: deployed.statistics()["state"] == "waiting", 20, "the flow to be waiting")
    assert deployed.statistics()["detail"] == f"waiting: queue {src} does not exist"
    side.define(src)
    wait_for(lambda: deployed.statistics()["state"] == "running", 20, "the flow to run again")
    side.probe.put(src, b"second")
    assert [m.body for m in side.get_all(dst, 1)] == [b"second!!"]


def test_outputs_to_a_deleted_queue_are_never_acknowledged_away(
    side: Side, group: ExecutionGroupRuntime
) -> None:
    src, dst, boq = side.make_queue("IN"), side.make_queue("OUT"), side.make_queue("BO")
    deployed = group.deploy(document(src, dst, backoutThreshold=2, backoutQueue=boq))
    side.probe.put(src, b"first")
    assert [m.body for m in side.get_all(dst, 1)] == [b"first!!"]
    side.delete(dst)  # the flow checked it when it first put there
    deployed.stop()
    # several waiting messages: read ahead together, their outputs sent together at the commit
    for i in range(3):
        side.probe.put(src, f"m{i}".encode(), MessageDescriptor(persistence=1), syncpoint=True)
    side.probe.commit()
    deployed.start()
    moved = side.get_all(boq, 3, timeout=60)
    assert sorted(m.body for m in moved) == [b"m0", b"m1", b"m2"]


COMBINE = """CREATE COMPUTE MODULE Combine
  CREATE FUNCTION Main() RETURNS BOOLEAN
  BEGIN
    SET OutputRoot.XMLNSC.r.a = InputRoot.ComIbmAggregateReplyBody.a.XMLNSC.v;
    SET OutputRoot.XMLNSC.r.b = InputRoot.ComIbmAggregateReplyBody.b.XMLNSC.v;
    RETURN TRUE;
  END;
END MODULE;
"""


def test_an_aggregation_fans_out_and_in_on_either_transport(side: Side, group: ExecutionGroupRuntime) -> None:
    src, req_a, req_b, replies, dst = (side.make_queue(b) for b in ("AIN", "REQA", "REQB", "REPLIES", "AOUT"))
    name = unique("agg")
    group.deploy(
        flow(
            {
                "in": ("MQInput", {"queueName": src, "transactionMode": "yes"}),
                "ctl": ("AggregateControl", {"aggregateName": name, "timeout": 60}),
                "pa": ("MQOutput", {"queueName": req_a}),
                "ra": ("AggregateRequest", {"folderName": "a"}),
                "pb": ("MQOutput", {"queueName": req_b}),
                "rb": ("AggregateRequest", {"folderName": "b"}),
                "rin": (
                    "MQInput",
                    {"queueName": replies, "messageDomain": "XMLNSC", "transactionMode": "yes"},
                ),
                "agg": ("AggregateReply", {"aggregateName": name}),
                "c": ("Compute", {"esql": COMBINE}),
                "out": ("MQOutput", {"queueName": dst}),
            },
            [
                "in.out -> ctl",
                "ctl.out -> pa",
                "pa.out -> ra",
                "ctl.out -> pb",
                "pb.out -> rb",
                "rin.out -> agg",
                "agg.out -> c",
                "c.out -> out",
            ],
            name=f"Aggregate{abs(hash(src)) % 100000}",
        )
    )
    for i in range(3):
        side.probe.put(src, f"order {i}".encode(), MessageDescriptor(persistence=1))
    for queue, tag in ((req_b, "b"), (req_a, "a")):
        for request in side.get_all(queue, 3):
            order = request.body.decode().split()[1]
            reply = f"<v>{tag}{order}</v>".encode()
            side.probe.put(replies, reply, MessageDescriptor(persistence=1, correl_id=request.md.msg_id))
        side.probe.commit()
    got = side.get_all(dst, 3)
    assert sorted(m.body for m in got) == [f"<r><a>a{i}</a><b>b{i}</b></r>".encode() for i in range(3)]


READ_MQMD = """CREATE COMPUTE MODULE ReadMqmd
  CREATE FUNCTION Main() RETURNS BOOLEAN
  BEGIN
    SET OutputRoot = InputRoot;
    -- reading the descriptor and header makes the output Root written out, never relayed
    SET OutputRoot.MQMD.Priority = InputRoot.MQMD.Priority;
    SET OutputRoot.MQRFH2.usr.Region = InputRoot.MQRFH2.usr.Region;
    RETURN TRUE;
  END;
END MODULE;
"""


def _rfh2_message(region: str) -> bytes:
    from esql.tree import Element
    from flowbroker.formats import rfh2

    header = Element("MQRFH2")
    header.add("Format", "MQSTR   ")
    usr = header.add("usr", type=0x01000000)
    usr.add("Route", "yes")
    usr.add("Region", region)
    return rfh2.serialize(header, encoding=546, ccsid=1208) + b"payload after the header"


@pytest.mark.parametrize("fmt", ["", "MQSTR   ", "MQHRF2  "])
def test_an_untouched_message_goes_out_as_a_written_out_one_would(
    side: Side, group: ExecutionGroupRuntime, fmt: str
) -> None:
    """A passthrough puts the message it got (the relay); a flow that reads the descriptor writes
    its Root out: both outputs carry the same descriptor, properties and body."""
    src_a, dst_a = side.make_queue("RELAY.IN"), side.make_queue("RELAY.OUT")
    src_b, dst_b = side.make_queue("WRITE.IN"), side.make_queue("WRITE.OUT")
    tag = abs(hash(src_a)) % 100000
    group.deploy(
        flow(
            {"in": ("MQInput", {"queueName": src_a}), "out": ("MQOutput", {"queueName": dst_a})},
            ["in.out -> out"],
            name=f"Relay{tag}",
        )
    )
    group.deploy(
        flow(
            {
                "in": ("MQInput", {"queueName": src_b}),
                "c": ("Compute", {"esql": READ_MQMD}),
                "out": ("MQOutput", {"queueName": dst_b}),
            },
            ["in.out -> c", "c.out -> out"],
            name=f"Written{tag}",
        )
    )
    body = _rfh2_message("north") if fmt == "MQHRF2  " else b'{"a": 1, "b": "two"}'
    md = MessageDescriptor(
        persistence=0,
        correl_id=b"C" * 24,
        reply_to_q="REPLY.Q",
        reply_to_q_mgr="QM2",
        format=fmt,
        priority=7,
        expiry=6000,
        # the header is written in the descriptor's encoding and CCSID: only a plain body has others
        encoding=273 if fmt != "MQHRF2  " else 546,
        coded_char_set_id=819 if fmt != "MQHRF2  " else 1208,
    )
    for src in (src_a, src_b):
        side.probe.put(src, body, md, properties={"order": 3, "colour": "red"})
    relayed = side.get_all(dst_a, 1)[0]
    written = side.get_all(dst_b, 1)[0]
    assert relayed.body == written.body == body
    assert relayed.properties == written.properties
    assert relayed.properties["colour"] == "red" and relayed.properties["order"] == 3
    if fmt == "MQHRF2  ":
        assert relayed.properties["Region"] == "north" and relayed.properties["Route"] == "yes"
    for field in (
        "correl_id",
        "reply_to_q",
        "reply_to_q_mgr",
        "format",
        "priority",
        "persistence",
        "encoding",
        "coded_char_set_id",
        "backout_count",
        "group_id",
    ):
        assert getattr(relayed.md, field) == getattr(written.md, field), field
    # expiry counts down while the message waits; both were put with the one the input had left
    assert 0 < relayed.md.expiry <= 6000 and 0 < written.md.expiry <= 6000
    assert relayed.md.msg_id != md.msg_id and relayed.md.msg_id != written.md.msg_id


@pytest.mark.parametrize(
    "options",
    [
        {"persistenceMode": "persistent"},
        {"persistenceMode": "nonPersistent"},
        {"newCorrelId": True},
        {"newMsgId": False},
    ],
)
def test_an_untouched_message_put_with_the_output_nodes_options_has_what_they_change(
    side: Side, group: ExecutionGroupRuntime, options: dict[str, Any]
) -> None:
    """What the output node changes of a relayed message (persistence, a new CorrelId, the MsgId
    kept) is what it changes of a written-out one, not what the message arrived with."""
    src_a, dst_a = side.make_queue("RELAYO.IN"), side.make_queue("RELAYO.OUT")
    src_b, dst_b = side.make_queue("WRITEO.IN"), side.make_queue("WRITEO.OUT")
    tag = abs(hash(src_a)) % 100000
    group.deploy(
        flow(
            {"in": ("MQInput", {"queueName": src_a}), "out": ("MQOutput", {"queueName": dst_a, **options})},
            ["in.out -> out"],
            name=f"RelayO{tag}",
        )
    )
    group.deploy(
        flow(
            {
                "in": ("MQInput", {"queueName": src_b}),
                "c": ("Compute", {"esql": READ_MQMD}),
                "out": ("MQOutput", {"queueName": dst_b, **options}),
            },
            ["in.out -> c", "c.out -> out"],
            name=f"WrittenO{tag}",
        )
    )
    persistence = 0 if options.get("persistenceMode") == "persistent" else 1
    md = MessageDescriptor(
        msg_id=b"I" * 24, persistence=persistence, correl_id=b"C" * 24, reply_to_q="REPLY.Q", priority=3
    )
    for src in (src_a, src_b):
        side.probe.put(src, b"plain text", md, properties={"order": 3})
    relayed = side.get_all(dst_a, 1)[0]
    written = side.get_all(dst_b, 1)[0]
    assert relayed.body == written.body == b"plain text"
    assert relayed.properties == written.properties
    for field in ("correl_id", "reply_to_q", "format", "priority", "persistence", "expiry"):
        assert getattr(relayed.md, field) == getattr(written.md, field), field
    if "persistenceMode" in options:
        assert relayed.md.persistence == 1 - persistence
    if options.get("newCorrelId"):
        assert relayed.md.correl_id == b"\x00" * 24
    if options.get("newMsgId") is False:
        assert relayed.md.msg_id == written.md.msg_id == b"I" * 24
    else:
        assert relayed.md.msg_id != md.msg_id


@pytest.mark.parametrize(
    ("change", "check"),
    [
        ("SET OutputRoot.MQMD.CorrelId = X'{}';".format("44" * 24), lambda m: m.md.correl_id == b"D" * 24),
        ("SET OutputRoot.MQMD.Priority = 2;", lambda m: m.md.priority == 2),
        ("SET OutputRoot.MQMD.Expiry = 900;", lambda m: 0 < m.md.expiry <= 900),
        ("SET OutputRoot.MQMD.ReplyToQ = 'OTHER.Q';", lambda m: m.md.reply_to_q.strip() == "OTHER.Q"),
        ("SET OutputRoot.MQMD.Persistence = 1;", lambda m: m.md.persistence == 1),
        ("SET OutputRoot.MQRFH2.usr.Region = 'south';", lambda m: m.properties["Region"] == "south"),
    ],
)
def test_a_field_a_flow_changes_goes_out_changed(
    side: Side, group: ExecutionGroupRuntime, change: str, check: Any
) -> None:
    """A flow that changes one field of the message it got puts the change, never the field as
    the message arrived with it (the message is written out, not put again as it came)."""
    src, dst = side.make_queue("CHANGE.IN"), side.make_queue("CHANGE.OUT")
    esql = (
        "CREATE COMPUTE MODULE ChangeOne\n  CREATE FUNCTION Main() RETURNS BOOLEAN\n  BEGIN\n"
        f"    SET OutputRoot = InputRoot;\n    {change}\n    RETURN TRUE;\n  END;\nEND MODULE;\n"
    )
    group.deploy(
        flow(
            {
                "in": ("MQInput", {"queueName": src}),
                "c": ("Compute", {"esql": esql}),
                "out": ("MQOutput", {"queueName": dst}),
            },
            ["in.out -> c", "c.out -> out"],
            name=f"Change{abs(hash(src)) % 100000}",
        )
    )
    md = MessageDescriptor(
        persistence=0,
        correl_id=b"C" * 24,
        reply_to_q="REPLY.Q",
        format="MQHRF2  ",
        priority=7,
        expiry=6000,
    )
    side.probe.put(src, _rfh2_message("north"), md, properties={"order": 3})
    out = side.get_all(dst, 1)[0]
    assert check(out), (change, out.md, out.properties)
    assert out.properties["order"] == 3


@pytest.mark.parametrize("through", ["untouched", "compute"])
def test_an_mqtt_publication_goes_out_to_a_queue_on_either_transport(
    side: Side, group: ExecutionGroupRuntime, mqtt_address: tuple[str, int], through: str
) -> None:
    """A message that came from no queue (an MQTT publication) put on a queue, untouched or changed
    by a Compute node. Untouched, RabbitMQ cannot put it again as it got it (it never got it): it
    goes out as its parts, as on the queue manager."""
    from flowbroker_nodes.mqtt_wire import MqttConnection, encode_string

    host, port = mqtt_address
    dst = side.make_queue("MQTT.OUT")
    topic = f"fb/{unique('to-queue')}"
    nodes: dict[str, tuple[str, dict[str, Any]]] = {
        "in": ("MQTTSubscribe", {"host": host, "port": port, "topicName": topic, "messageDomain": "BLOB"}),
        "out": ("MQOutput", {"queueName": dst}),
    }
    wires = ["in.out -> out"]
    if through == "compute":
        nodes["c"] = ("Compute", {"esql": APPEND})
        wires = ["in.out -> c", "c.out -> out"]
    group.deploy(flow(nodes, wires, name=f"MqttToQueue{abs(hash(dst)) % 100000}"))
    sender = MqttConnection(host, port, unique("fb-pub")).connect(5)
    try:
        got: list[Any] = []

        def arrived() -> bool:
            # the subscription is made as the flow starts: publish until the first comes through
            if not got:
                sender.publish(encode_string(topic), b"first", 0, False)
            got.extend(side.probe.get_many(dst, 1, wait=0.3))
            return bool(got)

        wait_for(arrived, 20, "the first publication on the queue")
        for i in range(3):
            sender.publish(encode_string(topic), f"publication {i}".encode(), 1, False)
        got = side.get_all(dst, 3)
    finally:
        sender.close()
    suffix = b"!!" if through == "compute" else b""
    assert [m.body for m in got] == [f"publication {i}".encode() + suffix for i in range(3)]
    assert all(m.md.msg_id != b"\x00" * 24 for m in got)
    stats = next(iter(group.statistics().values()))
    assert stats["errors"] == 0 and stats["backouts"] == 0
