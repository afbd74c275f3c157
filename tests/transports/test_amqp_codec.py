"""The RabbitMQ transport's own decoding of deliveries against pika's, for the same bytes."""

from __future__ import annotations

import math
import random
import struct
from collections import deque
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import pytest
from flowbroker.runtime.transports.amqp_codec import (
    MOST_DEPTH,
    DeliveryReader,
    FrameError,
    decode_deliver,
    decode_get_ok,
    decode_properties,
    decode_table,
)
from pika import frame
from pika.spec import Basic, BasicProperties

pytestmark = [pytest.mark.timeout(60)]

TAG = "flowbroker.test.1"


def every_property(**headers: Any) -> BasicProperties:
    return BasicProperties(
        content_type="application/json",
        content_encoding="utf-8",
        headers=headers,
        delivery_mode=2,
        priority=9,
        correlation_id="c" * 48,
        reply_to="RÉPONSE.Q",
        expiration="3600000",
        message_id="a" * 48,
        timestamp=1764076800,
        type="t",
        user_id="guest",
        app_id="flowbroker",
        cluster_id="x",
    )


PROPERTIES = [
    BasicProperties(),
    BasicProperties(headers={}),
    BasicProperties(delivery_mode=1, priority=0, expiration="", message_id=""),
    BasicProperties(correlation_id="é" * 100, headers={"x-mq-put-time": "1764076800.25"}),
    every_property(
        **{
            "x-mq-put-time": "1764076800.123456",
            "x-mq-format": "MQSTR   ",
            "text": "naïve ✓",
            "number": 42,
            "big": 2**40,
            "negative": -7,
            "flag": True,
            "off": False,
            "raw": b"\x00\xff\x01",
            "empty": "",
            "none": None,
            "decimal": Decimal("12.345"),
            "stamp": datetime(2026, 11, 28, 12, 0, tzinfo=UTC),
            "nested": {"a": {"b": [1, "two", {"c": b"\x00"}, [], {}]}, "ü": [True, None]},
            "list": [1, 2**40, "x", b"y", [1, [2, [3]]]],
            "ключ": "значение",
        }
    ),
]


def pika_properties(encoded: bytes) -> BasicProperties:
    return BasicProperties().decode(encoded)


@pytest.mark.parametrize("props", PROPERTIES, ids=range(len(PROPERTIES)))
def test_properties_decode_as_pika_decodes_them(props: BasicProperties) -> None:
    encoded = b"".join(props.encode())
    ours = decode_properties(encoded, 0, len(encoded))
    assert type(ours) is BasicProperties
    assert ours.__dict__ == pika_properties(encoded).__dict__
    # and the values are the ones sent (pika's encoding of them, decoded again)
    assert ours.__dict__ == props.__dict__


def field(kind: bytes, payload: bytes) -> bytes:
    return kind + payload


def table(*entries: tuple[bytes, bytes]) -> bytes:
    body = b"".join(bytes((len(key),)) + key + value for key, value in entries)
    return struct.pack(">I", len(body)) + body


EVERY_KIND = [
    (b"t", field(b"t", b"\x01")),
    (b"b", field(b"b", b"\xff")),
    (b"B", field(b"B", b"\xff")),
    (b"U", field(b"U", struct.pack(">h", -2))),
    (b"s", field(b"s", struct.pack(">h", -3))),
    (b"u", field(b"u", struct.pack(">H", 65535))),
    (b"I", field(b"I", struct.pack(">i", -5))),
    (b"i", field(b"i", struct.pack(">I", 2**32 - 1))),
    (b"L", field(b"L", struct.pack(">q", -(2**40)))),
    (b"l", field(b"l", struct.pack(">q", 2**62))),
    (b"D", field(b"D", struct.pack(">Bi", 3, -12345))),
    (b"S", field(b"S", struct.pack(">I", 3) + b"\xff\xfe\x00")),  # not UTF-8: bytes, as pika
    (b"x", field(b"x", struct.pack(">I", 0))),
    (b"T", field(b"T", struct.pack(">Q", 1764076800))),
    (b"V", b"V"),
    (b"A", field(b"A", struct.pack(">I", 8) + b"I" + struct.pack(">i", 1) + b"V" + b"t\x00")),
    (b"F", field(b"F", table((b"k", b"V")))),
    ("ü".encode(), b"t\x00"),
    (b"\xff", b"t\x01"),  # a field name that is not UTF-8: bytes, as pika
]


def test_every_field_type_decodes_as_pika_decodes_it() -> None:
    from pika import data

    encoded = table(*EVERY_KIND)
    ours, end = decode_table(encoded, 0, len(encoded))
    theirs, their_end = data.decode_table(encoded, 0)
    assert end == their_end == len(encoded)
    assert ours == theirs
    assert ours["S"] == b"\xff\xfe\x00" and ours[b"\xff"] is True and ours["ü"] is False


def test_floats_are_floats_where_pika_truncates_them() -> None:
    from pika import data

    encoded = table(
        (b"f", field(b"f", struct.pack(">f", 1.5))), (b"d", field(b"d", struct.pack(">d", -2.75)))
    )
    ours, _ = decode_table(encoded, 0, len(encoded))
    assert ours == {"f": 1.5, "d": -2.75}
    assert data.decode_table(encoded, 0)[0] == {"f": 1, "d": -2}  # pika 1.4's int()


def test_an_error_deep_in_a_table_says_where() -> None:
    inner = table((b"b", b"A" + struct.pack(">I", 3) + b"t\x01Z"))
    encoded = table((b"a", b"F" + inner))
    with pytest.raises(FrameError) as caught:
        decode_table(encoded, 0, len(encoded), "headers")
    assert str(caught.value) == "headers: field 'a': field 'b'[1]: unknown field type b'Z' at 20"


def test_a_timestamp_no_datetime_holds_is_kept_as_its_seconds() -> None:
    encoded = table((b"T", field(b"T", struct.pack(">Q", 2**63))))
    assert decode_table(encoded, 0, len(encoded))[0] == {"T": 2**63}


def deliver_args(method: Basic.Deliver | Basic.GetOk) -> bytes:
    return b"".join(method.encode())


@pytest.mark.parametrize(
    "method",
    [
        Basic.Deliver(consumer_tag=TAG, delivery_tag=1, redelivered=False, exchange="", routing_key="Q"),
        Basic.Deliver(
            consumer_tag="ü", delivery_tag=2**64 - 1, redelivered=True, exchange="é" * 127, routing_key=""
        ),
    ],
)
def test_deliver_arguments_decode_as_pika_decodes_them(method: Basic.Deliver) -> None:
    encoded = deliver_args(method)
    ours = decode_deliver(encoded, 0, len(encoded))
    assert type(ours) is Basic.Deliver
    assert ours.__dict__ == Basic.Deliver().decode(encoded).__dict__ == method.__dict__


def test_get_ok_arguments_decode_as_pika_decodes_them() -> None:
    method = Basic.GetOk(delivery_tag=7, redelivered=True, exchange="x", routing_key="k.ü", message_count=3)
    encoded = deliver_args(method)
    ours = decode_get_ok(encoded, 0, len(encoded))
    assert type(ours) is Basic.GetOk and ours.__dict__ == Basic.GetOk().decode(encoded).__dict__
    with pytest.raises(FrameError, match="basic.get-ok: 4 bytes needed"):
        decode_get_ok(encoded, 0, len(encoded) - 1)


# -- the reader over a connection's bytes -------------------------------------------------------


class FakeConnection:
    """What the reader needs of pika's connection: the frames it hands on, and its counters."""

    def __init__(self) -> None:
        self.frames: list[Any] = []
        self.bytes_received = 0
        self.frames_received = 0
        self._on_data_available = None

        class Params:
            frame_max = 131072

        self.params = Params()

    def _process_frame(self, value: Any) -> None:
        self.frames.append(value)
        self.frames_received += 1


def delivery_bytes(
    channel: int, tag: int, props: BasicProperties, body: bytes, most: int = 131064, consumer: str = TAG
) -> bytes:
    method = Basic.Deliver(
        consumer_tag=consumer, delivery_tag=tag, redelivered=tag % 2 == 0, exchange="", routing_key="Q"
    )
    frames = [frame.Method(channel, method).marshal(), frame.Header(channel, len(body), props).marshal()]
    for i in range(math.ceil(len(body) / most)):
        frames.append(frame.Body(channel, body[i * most : (i + 1) * most]).marshal())
    return b"".join(frames)


def reader(channel: int = 1) -> tuple[DeliveryReader, FakeConnection, deque, list[int]]:
    conn = FakeConnection()
    woken: list[int] = []
    arrived: deque = deque()
    r = DeliveryReader(conn, channel, lambda: woken.append(1))
    r.consumers[TAG] = arrived
    assert conn._on_data_available == r.data_received
    return r, conn, arrived, woken


BODIES = [b"", b"x", bytes(range(256)) * 4, "é✓".encode() * 5000, b"z" * 4088 * 3]


def stream() -> tuple[bytes, list[tuple[int, BasicProperties, bytes]]]:
    sent = []
    parts = []
    for i, body in enumerate(BODIES * 2):
        props = PROPERTIES[i % len(PROPERTIES)]
        sent.append((i + 1, props, body))
        parts.append(delivery_bytes(1, i + 1, props, body, most=4088))
    return b"".join(parts), sent


@pytest.mark.parametrize("split", ["whole", "bytes", "random"])
def test_deliveries_arrive_whole_however_the_bytes_are_cut(split: str) -> None:
    data, sent = stream()
    r, conn, arrived, woken = reader()
    if split == "whole":
        chunks = [data]
    elif split == "bytes":
        chunks = [data[i : i + 1] for i in range(min(len(data), 3000))]
        chunks.append(data[3000:])
    else:
        rng = random.Random(13)
        chunks, at = [], 0
        while at < len(data):
            step = rng.randint(1, 9000)
            chunks.append(data[at : at + step])
            at += step
    for chunk in chunks:
        r.data_received(chunk)
    assert len(arrived) == len(sent)
    for (method, props, body), (tag, sent_props, sent_body) in zip(arrived, sent, strict=True):
        assert (
            method.delivery_tag == tag and method.consumer_tag == TAG and method.redelivered == (tag % 2 == 0)
        )
        assert props.__dict__ == pika_properties(b"".join(sent_props.encode())).__dict__
        assert body == sent_body and type(body) is bytes
    assert conn.frames == []  # nothing left to pika
    assert conn.bytes_received == len(data)
    assert woken


def test_other_frames_go_to_pika_in_their_order() -> None:
    r, conn, arrived, _ = reader()
    heartbeat = frame.Heartbeat().marshal()
    ack = frame.Method(1, Basic.Ack(delivery_tag=5)).marshal()
    other_channel = delivery_bytes(2, 9, BasicProperties(), b"elsewhere")
    other_consumer = delivery_bytes(1, 10, BasicProperties(), b"not ours", consumer="someone.else")
    returned = b"".join(
        (
            frame.Method(
                1, Basic.Return(reply_code=312, reply_text="NO_ROUTE", exchange="", routing_key="Q")
            ).marshal(),
            frame.Header(1, 3, BasicProperties()).marshal(),
            frame.Body(1, b"ret").marshal(),
        )
    )
    data = b"".join(
        (
            heartbeat,
            delivery_bytes(1, 1, BasicProperties(), b"one"),
            ack,
            other_channel,
            returned,
            delivery_bytes(1, 2, BasicProperties(), b"two"),
            other_consumer,
        )
    )
    r.data_received(data)
    assert [body for _m, _p, body in arrived] == [b"one", b"two"]
    kinds = [
        type(f).__name__ + ":" + (f.method.NAME if isinstance(f, frame.Method) else "") for f in conn.frames
    ]
    assert kinds == [
        "Heartbeat:",
        "Method:Basic.Ack",
        "Method:Basic.Deliver",
        "Header:",
        "Body:",
        "Method:Basic.Return",
        "Header:",
        "Body:",
        "Method:Basic.Deliver",
        "Header:",
        "Body:",
    ]
    assert conn.frames[4].fragment == b"elsewhere" and conn.frames[10].fragment == b"not ours"
    assert conn.bytes_received == len(data)


def test_another_channels_frames_may_come_between_a_deliverys_frames() -> None:
    r, conn, arrived, _ = reader()
    ours = delivery_bytes(1, 1, every_property(k="v"), b"a" * 10_000, most=4088)
    method_end = 7 + struct.unpack_from(">I", ours, 3)[0] + 1
    heartbeat = frame.Heartbeat().marshal()
    r.data_received(ours[:method_end] + heartbeat + ours[method_end:])
    assert [body for _m, _p, body in arrived] == [b"a" * 10_000]
    assert len(conn.frames) == 1


def malformed_cases() -> list[tuple[str, bytes, str]]:
    good = delivery_bytes(1, 1, every_property(k="v"), b"body")
    method_len = 7 + struct.unpack_from(">I", good, 3)[0] + 1
    header_len = 7 + struct.unpack_from(">I", good, method_len + 3)[0] + 1
    method, header, body = (
        good[:method_len],
        good[method_len : method_len + header_len],
        good[method_len + header_len :],
    )

    def header_with(payload: bytes) -> bytes:
        return struct.pack(">BHI", 2, 1, len(payload)) + payload + b"\xce"

    props = b"".join(every_property(k="v").encode())
    head = struct.pack(">HHQ", 60, 0, 4)
    deep = b"F" + struct.pack(">I", 0)
    for _ in range(MOST_DEPTH + 2):
        inner = b"\x01k" + deep
        deep = b"F" + struct.pack(">I", len(inner)) + inner
    deep_table = struct.pack(">H", 1 << 13) + struct.pack(">I", len(deep) + 2) + b"\x01k" + deep
    return [
        ("bad frame end", method[:-1] + b"\x00", "does not end with 0xCE"),
        (
            "body where the header is due",
            method + body,
            "where the content header of a basic.deliver was due",
        ),
        (
            "method where a body is due",
            method + header + method,
            "where a body frame of a basic.deliver was due",
        ),
        (
            "body over its size",
            method + header + frame.Body(1, b"body!").marshal(),
            "where the content header declared 4",
        ),
        ("properties cut short", method + header_with(head + props[:-3]), "content header: app_id"),
        (
            "properties with trailing bytes",
            method + header_with(head + props + b"\x00"),
            "1 bytes after the properties",
        ),
        (
            "a table over its frame",
            method + header_with(head + struct.pack(">H", 1 << 13) + struct.pack(">I", 999) + b"\x01kV"),
            "headers: a table of 999 bytes runs past the end",
        ),
        (
            "an unknown field type",
            method + header_with(head + struct.pack(">H", 1 << 13) + struct.pack(">I", 3) + b"\x01kZ"),
            "headers: field 'k': unknown field type b'Z'",
        ),
        (
            "tables nested too deep",
            method + header_with(head + deep_table),
            f"tables nested deeper than {MOST_DEPTH}",
        ),
        ("a short header", method + header_with(b"\x00\x3c"), "a content header of 2 bytes"),
        ("a header of another class", method + header_with(struct.pack(">HHQH", 10, 0, 0, 0)), "of class 10"),
        (
            "a deliver cut short",
            struct.pack(">BHI", 1, 1, 6) + struct.pack(">HH", 60, 60) + b"\x05a" + b"\xce",
            "consumer_tag",
        ),
        (
            "a frame over frame_max",
            struct.pack(">BHI", 3, 1, 200_000) + b"x",
            "over the negotiated frame_max of 131072",
        ),
    ]


@pytest.mark.parametrize("case", malformed_cases(), ids=lambda case: case[0])
def test_malformed_bytes_are_a_precise_error_and_stay_one(case: tuple[str, bytes, str]) -> None:
    _name, data, said = case
    r, _conn, arrived, _ = reader()
    r.data_received(delivery_bytes(1, 7, BasicProperties(), b"before"))
    with pytest.raises(FrameError) as caught:
        r.data_received(data)
    assert str(caught.value).startswith("malformed AMQP data from RabbitMQ: ")
    assert said in str(caught.value)
    assert [body for _m, _p, body in arrived] == [b"before"]  # what came whole before is kept
    with pytest.raises(FrameError):  # the stream cannot be trusted past it: the connection goes
        r.data_received(delivery_bytes(1, 8, BasicProperties(), b"after"))
    assert len(arrived) == 1


def test_an_incomplete_frame_waits_for_its_bytes_without_reading_it_again() -> None:
    r, conn, arrived, _ = reader()
    data = delivery_bytes(1, 1, BasicProperties(), b"q" * 100_000)
    r.data_received(data[:50_000])
    assert (
        not arrived and r._need > 50_000
    )  # the body frame's size is known: no decoding until it is all here
    r.data_received(data[50_000:])
    assert [body for _m, _p, body in arrived] == [b"q" * 100_000]


def test_frames_after_one_pikas_handling_failed_on_are_kept() -> None:
    r, conn, arrived, _ = reader()

    def failing(value: object) -> None:
        conn._process_frame = FakeConnection._process_frame.__get__(conn)  # once
        raise RuntimeError("pika's handling failed")

    conn._process_frame = failing  # type: ignore[method-assign]
    data = frame.Heartbeat().marshal() + delivery_bytes(1, 1, BasicProperties(), b"after")
    with pytest.raises(RuntimeError):
        r.data_received(data)
    r.data_received(b"")
    assert [body for _m, _p, body in arrived] == [b"after"]
    assert conn.bytes_received == len(data)
