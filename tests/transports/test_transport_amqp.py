"""RabbitMQ as a transport: the descriptor survives a round trip, crashes lose nothing, bad URLs say why."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time
from dataclasses import replace
from typing import Any

import pytest
from flowbroker.qm.protocol import MessageDescriptor
from flowbroker.runtime import transports
from flowbroker.runtime.transports import amqp
from flowbroker.runtime.transports.amqp import AmqpTransport, routing_key, topic_string
from transport_support import wait_for

pytestmark = [pytest.mark.timeout(90)]


def every_field() -> MessageDescriptor:
    return MessageDescriptor(
        msg_id=bytes(range(24)),
        correl_id=bytes(range(100, 124)),
        persistence=1,
        priority=7,
        expiry=36000,
        reply_to_q="REPLY.TO.Q",
        reply_to_q_mgr="QM.FAR",
        format="MQHRF2",
        encoding=273,
        coded_char_set_id=500,
        put_time=1764076800.123456,
        backout_count=0,
        group_id=b"\xffG" * 12,
    )


def test_a_message_with_every_descriptor_field_survives_a_round_trip(rabbit) -> None:
    queue = rabbit.queue("RT", "classic", **{"x-max-priority": 9})
    body = bytes(range(256)) * 4
    properties = {"text": "é", "number": 42, "ratio": 0.1, "flag": True, "raw": b"\x00\x01"}
    transport = AmqpTransport.open(rabbit.url)
    try:
        sent = every_field()
        transport.put(queue, body, sent, properties=properties)
        got = transport.get(queue, wait=5)
        assert got is not None
        assert got.body == body
        assert got.md == sent  # field for field
        assert got.properties == properties
        # the same message again through a unit of work: held, then published by the commit
        transport.put(queue, body, sent, syncpoint=True, properties=properties)
        assert rabbit.depth(queue) == 0
        transport.commit()
        again = transport.get(queue, wait=5, syncpoint=True)
        assert again is not None and again.md == sent and again.body == body
        transport.commit()
    finally:
        transport.close()
    wait_for(lambda: rabbit.depth(queue) == 0, 10, f"{queue} to be empty")


def test_mq_topic_syntax_maps_to_routing_keys() -> None:
    assert routing_key("Sales/Orders/+/Europe") == "Sales.Orders.*.Europe"
    assert routing_key("Sales/#") == "Sales.#"
    assert topic_string("Sales.Orders.new") == "Sales/Orders/new"


def test_a_publication_reaches_a_subscribed_queue_and_says_when_none_matched(rabbit) -> None:
    queue = rabbit.queue("SUB")
    root = f"T{int(time.time() * 1000)}"
    transport = AmqpTransport.open(rabbit.url)
    try:
        transport.subscribe(f"{root}/orders/+", queue)
        assert transport.publish(f"{root}/orders/new", b"one") == 1
        assert transport.publish(f"{root}/invoices/new", b"two") == 0
        got = transport.get(queue, wait=5)
        assert got is not None and got.body == b"one"
        assert got.properties["MQTopicString"] == f"{root}/orders/new"
    finally:
        transport.close()


CHILD = """
import os, signal, sys
from flowbroker.runtime.transports.amqp import AmqpTransport
url, src, dst, step = sys.argv[1:]
t = AmqpTransport.open(url)
got = t.get(src, wait=10, syncpoint=True)
assert got is not None
t.put(dst, got.body + b"-out", got.md, syncpoint=True)
t.put(dst, got.body + b"-out2", got.md, syncpoint=True)
if step == "outputs-confirmed":
    t.publish_held()  # the commit's first step: outputs confirmed by the broker, input not acknowledged
print("ready", flush=True)
os.kill(os.getpid(), signal.SIGKILL)
"""


@pytest.mark.parametrize("step", ["before-commit", "outputs-confirmed"])
@pytest.mark.parametrize("kind", ["quorum", "classic"])
def test_a_crash_before_the_acknowledgement_redelivers_and_loses_nothing(
    rabbit, step: str, kind: str
) -> None:
    src, dst = rabbit.queue("CRASH.IN", kind), rabbit.queue("CRASH.OUT", kind)
    transport = AmqpTransport.open(rabbit.url)
    try:
        transport.put(src, b"order-1", MessageDescriptor(persistence=1))
        child = subprocess.run(
            [sys.executable, "-c", textwrap.dedent(CHILD), rabbit.url, src, dst, step],
            capture_output=True,
            timeout=60,
        )
        assert child.returncode == -9, child.stderr.decode()
        assert child.stdout == b"ready\n"
        # the input comes back, counted as a backout
        again = transport.get(src, wait=10, syncpoint=True)
        assert again is not None and again.body == b"order-1"
        assert again.md.backout_count == 1
        # at least once: outputs confirmed before the crash are there, and are sent again
        expected = [b"order-1-out", b"order-1-out2"] if step == "outputs-confirmed" else []
        out = transport.get_many(dst, 10, wait=1)
        for _ in range(20):  # a get returns what has arrived: the second output may follow it
            if len(out) >= len(expected):
                break
            out += transport.get_many(dst, 10, wait=0.5)
        assert [m.body for m in out] == expected
        transport.put(dst, again.body + b"-out", again.md, syncpoint=True)
        transport.put(dst, again.body + b"-out2", again.md, syncpoint=True)
        transport.commit()
    finally:
        transport.close()
    # a quorum queue applies acknowledgements through its log: its depth may lag them briefly
    wait_for(lambda: rabbit.depth(src) == 0, 10, f"{src} to be empty")
    wait_for(lambda: rabbit.depth(dst) == 2, 10, f"two messages on {dst}")


def test_a_backout_raises_the_count_on_quorum_and_classic_queues(rabbit) -> None:
    transport = AmqpTransport.open(rabbit.url)
    try:
        for kind in ("quorum", "classic"):
            queue = rabbit.queue("BACKOUT", kind)
            transport.put(queue, b"m", MessageDescriptor(persistence=1, correl_id=b"K" * 24))
            counts = []
            for _ in range(3):
                got = transport.get(queue, wait=5, syncpoint=True)
                assert got is not None and got.md.correl_id == b"K" * 24
                counts.append(got.md.backout_count)
                transport.backout()
            assert counts == [0, 1, 2], kind
            assert transport.get(queue, wait=5, syncpoint=False) is not None
    finally:
        transport.close()


def test_an_unknown_scheme_is_refused_with_the_schemes_there_are() -> None:
    with pytest.raises(transports.TransportURLError) as caught:
        transports.connector("mqtt://broker:1883")
    assert "unknown scheme 'mqtt'" in str(caught.value) and "amqp://" in str(caught.value)
    with pytest.raises(transports.TransportURLError):
        transports.kind_of("amqp:///novhost")
    assert transports.kind_of("") == "qm" and transports.kind_of("fbqm://h:1414") == "qm"
    assert transports.kind_of("amqps://u:p@h/v") == "amqp"


def test_an_unreachable_rabbitmq_and_a_forbidden_vhost_are_clear_errors(rabbitmq_url: str) -> None:
    with pytest.raises(transports.TransportError) as caught:
        AmqpTransport.open("amqp://guest:guest@127.0.0.1:1/")
    assert caught.value.reason.startswith("cannot reach RabbitMQ at 127.0.0.1:1")
    with pytest.raises(transports.TransportError) as caught:
        AmqpTransport.open(rabbitmq_url.rstrip("/") + "/no-such-vhost")
    assert caught.value.reason == "RabbitMQ at 127.0.0.1:5672: no access to virtual host 'no-such-vhost'"
    with pytest.raises(transports.TransportError) as caught:
        AmqpTransport.open("amqp://guest:wrong@127.0.0.1:5672/")
    assert "refused the user name or password" in caught.value.reason


def test_the_default_virtual_host_may_be_written_as_celery_writes_it(rabbitmq_url: str) -> None:
    for vhost in ("//", "/%2F"):
        url = rabbitmq_url.split("//", 1)[0] + "//" + rabbitmq_url.split("//", 1)[1].split("/", 1)[0] + vhost
        AmqpTransport.open(url).close()


def test_a_missing_queue_is_reason_2085(rabbit) -> None:
    transport = AmqpTransport.open(rabbit.url)
    try:
        with pytest.raises(transports.TransportError) as caught:
            transport.get("NO.SUCH.QUEUE.HERE", wait=0.1)
        assert caught.value.reason_code == 2085
        with pytest.raises(transports.TransportError) as caught:
            transport.put("NO.SUCH.QUEUE.HERE", b"x")
        assert caught.value.reason_code == 2085
    finally:
        transport.close()


def test_the_count_this_process_recorded_wins_over_the_brokers(rabbit) -> None:
    from flowbroker.runtime.transports import amqp

    queue = rabbit.queue("REQUEUED")
    transport = AmqpTransport.open(rabbit.url)
    try:
        transport.put(queue, b"m", MessageDescriptor(persistence=1, msg_id=b"R" * 24))
        first = transport.get(queue, wait=5, syncpoint=True)
        assert first is not None and first.md.backout_count == 0
        transport.backout()
        message_id = (b"R" * 24).hex()
        assert amqp._REQUEUED.count(queue, message_id) == 1
        # as if five earlier backouts had not been counted in x-delivery-count (RabbitMQ 4 counts
        # no requeues)
        amqp._REQUEUED.raised(queue, message_id, 5)
        again = transport.get(queue, wait=5, syncpoint=True)
        assert again is not None and again.md.backout_count == 5
        assert amqp._REQUEUED.count(queue, message_id) == 0  # taken with the delivery
        transport.commit()
    finally:
        transport.close()


@pytest.mark.parametrize("kind", ["quorum", "classic"])
def test_a_backed_out_batch_is_counted_and_its_read_ahead_keeps_its_count(rabbit, kind: str) -> None:
    queue = rabbit.queue("READAHEAD", kind)
    transport = AmqpTransport.open(rabbit.url)
    try:
        for i in range(12):
            transport.put(queue, b"m%d" % i, MessageDescriptor(persistence=1), syncpoint=True, pipeline=True)
        transport.commit()
        # a batch of 3 reads ahead a second batch; the read-ahead is no part of the unit of work
        batch = transport.get_many(queue, 3, wait=5, syncpoint=True)
        assert [m.body for m in batch] == [b"m0", b"m1", b"m2"]
        wait_for(lambda: len(transport._arrived[queue]) == 3, 20, "the read-ahead")
        transport.backout()
        seen = {}
        for _ in range(12):
            got = transport.get(queue, wait=5, syncpoint=True)
            assert got is not None
            seen[got.body] = got.md.backout_count
            transport.commit()
        # counted once, the others (the read-ahead handed back with them) not at all; a classic
        # queue puts them back in their places (RabbitMQ 3.x quorum queues at the back)
        if kind == "classic":
            assert list(seen)[:3] == [b"m0", b"m1", b"m2"]
        assert seen == {b"m%d" % i: 1 if i < 3 else 0 for i in range(12)}
        assert transport.get(queue, wait=0.2) is None
    finally:
        transport.close()
    wait_for(lambda: rabbit.depth(queue) == 0, 10, f"{queue} to be empty")


def test_a_batch_acknowledgement_leaves_a_delivery_kept_back_by_a_selective_get(rabbit) -> None:
    queue = rabbit.queue("SELECTIVE")
    transport = AmqpTransport.open(rabbit.url)
    try:
        transport.put(queue, b"other", MessageDescriptor(correl_id=b"X" * 24))
        transport.put(queue, b"mine", MessageDescriptor(correl_id=b"Y" * 24))
        mine = transport.get(queue, wait=5, syncpoint=True, correl_id=b"Y" * 24)
        assert mine is not None and mine.body == b"mine"
        transport.commit()  # "other" came first and was kept back: it must not be acknowledged too
        other = transport.get(queue, wait=5, syncpoint=True)
        assert other is not None and other.body == b"other"
        transport.backout()
    finally:
        transport.close()
    wait_for(lambda: rabbit.depth(queue) == 1, 10, f"the kept message on {queue}")


def test_a_commit_whose_batch_of_puts_finds_its_queue_deleted_backs_out(rabbit) -> None:
    src, dst = rabbit.queue("BATCH.IN"), rabbit.queue("BATCH.OUT")
    transport = AmqpTransport.open(rabbit.url)
    try:
        transport.put(src, b"input", MessageDescriptor(persistence=1))
        transport.put(dst, b"checked")  # the transport now knows the queue exists
        rabbit.channel.queue_delete(dst)
        got = transport.get(src, wait=5, syncpoint=True)
        assert got is not None
        transport.put(dst, b"out-1", syncpoint=True, pipeline=True)
        transport.put(dst, b"out-2", syncpoint=True, pipeline=True)
        with pytest.raises(transports.TransportError) as caught:
            transport.commit()
        assert caught.value.reason_code == 2003 and "could not route" in caught.value.reason
        again = transport.get(src, wait=5, syncpoint=True)  # the input was not acknowledged away
        assert again is not None and again.body == b"input" and again.md.backout_count == 1
        transport.commit()
    finally:
        transport.close()


def test_a_publish_is_marshalled_as_pika_marshals_it() -> None:
    """The transport's own marshalling of basic.publish gives pika's bytes: every property, a
    non-ASCII routing key, an empty body, a body split over several frames."""
    import math

    from flowbroker.runtime.transports.amqp import EncodedProperties, _publish_frames
    from pika import frame
    from pika.spec import Basic, BasicProperties

    def pikas(channel: int, method: Basic.Publish, props: BasicProperties, body: bytes, most: int) -> bytes:
        frames = [frame.Method(channel, method).marshal(), frame.Header(channel, len(body), props).marshal()]
        for i in range(math.ceil(len(body) / most)):
            frames.append(frame.Body(channel, body[i * most : (i + 1) * most]).marshal())
        return b"".join(frames)

    every = BasicProperties(
        content_type="application/json",
        content_encoding="utf-8",
        headers={"x-mq-put-time": "1.5", "n": 42, "raw": b"\x00"},
        delivery_mode=2,
        priority=7,
        correlation_id="c" * 48,
        reply_to="REPLY",
        expiration="3600000",
        message_id="a" * 48,
        timestamp=1764076800,
        type="t",
        user_id="guest",
        app_id="flowbroker",
    )
    cases = [
        (
            1,
            Basic.Publish(exchange="", routing_key="Q", mandatory=True),
            every,
            bytes(range(256)) * 4,
            131064,
        ),
        (7, Basic.Publish(exchange="flowbroker.topics", routing_key="a.b.é"), BasicProperties(), b"", 131064),
        (2, Basic.Publish(exchange="x", routing_key="k" * 255, immediate=True), every, b"y" * 10_000, 4088),
        (3, Basic.Publish(exchange="", routing_key="Q"), BasicProperties(), b"z" * 4088, 4088),
    ]
    # twice: the second time the method frames are the ones kept from the first
    for case in cases + cases:
        assert _publish_frames(*case) == pikas(*case)
    # properties encoded already go out as they are, as pika's marshalling sends them too
    encoded = EncodedProperties(b"".join(every.encode()))
    for channel, method, _props, body, most in cases:
        assert _publish_frames(channel, method, encoded, body, most) == pikas(
            channel, method, every, body, most
        )
        assert pikas(channel, method, encoded, body, most) == pikas(channel, method, every, body, most)
    # a name AMQP cannot carry is left to pika, which refuses it
    assert _publish_frames(1, Basic.Publish(exchange="", routing_key="k" * 256), every, b"", 4088) is None


def test_bodies_over_several_frames_survive_a_put_and_a_batch(rabbit) -> None:
    queue = rabbit.queue("FRAMES", "classic")
    transport = AmqpTransport.open(rabbit.url)
    impl = transport._conn._impl
    most = impl._body_max_length
    # the transport's marshalling is the one in use (pika's internals are the ones it expects)
    assert impl._send_message.__qualname__.startswith("_marshal_publishes")
    bodies = [bytes(range(256)) * (most // 256 * 2 + 3), b"", b"small"]
    try:
        transport.put(queue, bodies[0], every_field())
        for body in bodies:  # several held puts: the commit's batch
            transport.put(queue, body, every_field(), syncpoint=True)
        transport.commit()
        got = transport.get_many(queue, 4, wait=5)
        while len(got) < 4:
            more = transport.get_many(queue, 4 - len(got), wait=5)
            assert more, f"only {len(got)} of 4 messages came back"
            got += more
        assert [m.body for m in got] == [bodies[0], *bodies]
        assert all(m.md == every_field() for m in got)
    finally:
        transport.close()


def _foreign_messages() -> list[tuple[object, bytes]]:
    """Messages as other AMQP applications send them: every property kind, nested headers."""
    from decimal import Decimal

    from pika.spec import BasicProperties

    nested = {"a": {"b": [1, "zwei", {"c": b"\x00\xff"}]}, "ü": [True, None, 2**40], "d": Decimal("1.25")}
    return [
        (BasicProperties(), b""),
        (
            BasicProperties(content_type="text/plain", headers={"k": "v", "nested": nested}, priority=3),
            "é✓".encode() * 50_000,
        ),
        (
            BasicProperties(
                correlation_id="an-application-id",
                message_id="m-1",
                reply_to="R",
                expiration="60000",
                timestamp=1764076800,
                delivery_mode=2,
                type="t",
                app_id="app",
                headers={"x-mq-format": "MQSTR"},
            ),
            b"plain",
        ),
    ]


def test_the_transports_own_decoding_gives_what_pikas_gives(rabbit, monkeypatch: pytest.MonkeyPatch) -> None:
    """The same deliveries read with the transport's decoder and with pika's: the same messages,
    field for field, and the same AMQP properties underneath."""
    import pika
    from flowbroker.runtime.transports import amqp

    queues = {
        mode: rabbit.queue(f"DECODE.{mode}", "classic", **{"x-max-priority": 9}) for mode in ("own", "pika")
    }
    sender = AmqpTransport.open(rabbit.url)
    publisher = pika.BlockingConnection(pika.URLParameters(rabbit.url)).channel()
    properties = {"text": "é", "number": 42, "ratio": 0.1, "flag": True, "raw": b"\x00\x01"}
    try:
        for queue in queues.values():
            sender.put(queue, bytes(range(256)) * 600, every_field(), properties=properties)
            sender.put(
                queue,
                b"",
                MessageDescriptor(priority=0, expiry=50, msg_id=b"M" * 24, put_time=1.5),
                properties={},
            )
            for props, body in _foreign_messages():
                publisher.basic_publish("", queue, body, props)
    finally:
        sender.close()
        publisher.connection.close()
    seen = {}
    for mode, queue in queues.items():
        monkeypatch.setattr(amqp, "OWN_DECODING", mode == "own")
        transport = AmqpTransport.open(rabbit.url)
        try:
            assert (transport._reader is not None) == (mode == "own")
            got = []
            while len(got) < 5:
                more = transport.get_many(queue, 5, wait=5, syncpoint=True)
                assert more, f"{mode}: only {len(got)} of 5 messages"
                got += more
            raw = [(props.__dict__, body) for _m, props, body, *_ in transport._got]
            transport.commit()
        finally:
            transport.close()
        seen[mode] = ([(m.md, m.properties, m.body) for m in got], raw)
    assert seen["own"] == seen["pika"]
    messages = seen["own"][0]
    assert messages[0][0] == every_field() and messages[0][1] == properties  # priority 7 first
    assert sorted(len(body) for _md, _p, body in messages) == [0, 0, 5, 153_600, 250_000]


def test_malformed_bytes_from_rabbitmq_break_the_connection_and_lose_nothing(rabbit) -> None:
    queue = rabbit.queue("MALFORMED", "classic")
    transport = AmqpTransport.open(rabbit.url)
    try:
        transport.put(queue, b"kept", MessageDescriptor(persistence=1))
        reader = transport._reader
        assert reader is not None
        impl = transport._conn._impl

        def corrupted(data: bytes) -> None:
            impl._on_data_available = reader.data_received
            reader.data_received(data[:-1] + b"\x00")  # the frame's end octet is wrong

        impl._on_data_available = corrupted
        with pytest.raises(transports.TransportError) as caught:
            while not transport.get_many(queue, 1, wait=5, syncpoint=True):
                pass
        assert caught.value.reason_code == 2009
        assert (
            "malformed AMQP data from RabbitMQ" in caught.value.reason
            and "does not end with 0xCE" in caught.value.reason
        )
    finally:
        transport.close()
    again = AmqpTransport.open(rabbit.url)
    try:
        got = again.get(queue, wait=10, syncpoint=True)
        assert got is not None and got.body == b"kept"
        again.commit()
    finally:
        again.close()


RELAY_CHANGES: list[dict[str, Any]] = [
    {},
    {"correl_id": b"\x00" * 24},
    {"correl_id": b"R" * 24, "persistence": 0},
    {"persistence": 1, "format": "MQSTR   "},
    {"format": "", "properties": {"text": "changed", "added": 7}},
    {"properties": {}},
]


@pytest.mark.parametrize("changes", RELAY_CHANGES)
def test_a_message_put_again_carries_the_fields_a_put_of_its_descriptor_would(
    rabbit, monkeypatch: pytest.MonkeyPatch, changes: dict[str, Any]
) -> None:
    """put_relayed packs its content header from the message got, naming what changes: the same
    bytes as a put of the message's descriptor with those fields, field for field (nothing kept
    from the header it arrived with that the put changes)."""
    queue = rabbit.queue("RELAY", "classic")
    properties = {"text": "é", "number": 42, "ratio": 0.1, "flag": True, "raw": b"\x00\x01"}
    transport = AmqpTransport.open(rabbit.url)
    try:
        transport.put(queue, b"body", every_field(), properties=properties)
        got = transport.get(queue, wait=5, syncpoint=True)
        assert got is not None
        monkeypatch.setattr(amqp.time, "time", lambda: 1764080000.5)
        given = dict(changes)
        relayed_properties = given.pop("properties", None)
        transport.put_relayed(queue, got, b"N" * 24, properties=relayed_properties, syncpoint=True, **given)
        want = replace(got.md, msg_id=b"N" * 24, put_time=0.0, backout_count=0, **given)
        transport.put(
            queue,
            got.body,
            want,
            syncpoint=True,
            properties=got.properties if relayed_properties is None else relayed_properties,
        )
        relayed, written = transport._held
        assert relayed[:3] == written[:3]
        assert relayed[3].encode() == written[3].encode()
        monkeypatch.undo()
        transport.commit()
        both: list[Any] = []
        wait_for(lambda: both.extend(transport.get_many(queue, 2, wait=0.2)) or len(both) == 2, 10, "both")
        first, second = both
        assert first.md == second.md and first.properties == second.properties
        assert first.md.msg_id == b"N" * 24
        for field, value in given.items():
            assert getattr(first.md, field) == value, field
        if relayed_properties is not None:
            assert first.properties == relayed_properties
    finally:
        transport.close()
