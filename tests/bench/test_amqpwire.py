"""The lean AMQP 0-9-1 driver: frames checked against pamqp, the hot-path scanners fed odd chunks, and RabbitMQ for real."""

from __future__ import annotations

import asyncio
import struct
import time
import uuid

import pytest
from flowbroker_bench import amqpwire
from pamqp import body as pamqp_body
from pamqp import commands, decode, encode
from pamqp import frame as pamqp_frame
from pamqp import header as pamqp_header


def _unmarshal_all(data: bytes) -> list[tuple[int, object]]:
    out = []
    while data:
        used, channel, value = pamqp_frame.unmarshal(data)
        out.append((channel, value))
        data = data[used:]
    return out


def test_publish_message_is_publish_header_and_body() -> None:
    data = amqpwire.publish_message(1, "", "orders", b"x" * 1024, persistent=True)
    (ch1, method), (ch2, head), (ch3, content) = _unmarshal_all(data)
    assert ch1 == ch2 == ch3 == 1
    assert isinstance(method, commands.Basic.Publish)
    assert (method.exchange, method.routing_key, method.mandatory) == ("", "orders", False)
    assert isinstance(head, pamqp_header.ContentHeader)
    assert head.body_size == 1024 and head.properties.delivery_mode == 2
    assert isinstance(content, pamqp_body.ContentBody) and content.value == b"x" * 1024
    transient = _unmarshal_all(amqpwire.publish_message(1, "", "q", b"y", persistent=False))
    assert transient[1][1].properties.delivery_mode == 1


def test_a_body_longer_than_the_frame_limit_goes_in_several_body_frames() -> None:
    body = bytes(range(256)) * 10  # 2,560 bytes, frames of at most 1,000 bytes
    frames = _unmarshal_all(amqpwire.publish_message(3, "ex", "rk", body, persistent=False, frame_max=1000))
    parts = [value.value for _, value in frames[2:]]
    assert [len(p) for p in parts] == [992, 992, 576]
    assert b"".join(parts) == body


def test_ack_is_basic_ack_with_multiple() -> None:
    [(channel, method)] = _unmarshal_all(amqpwire.ack(1, 123_456_789_012, multiple=True))
    assert channel == 1 and isinstance(method, commands.Basic.Ack)
    assert (method.delivery_tag, method.multiple) == (123_456_789_012, True)


def test_field_tables_agree_with_pamqp_both_ways() -> None:
    ours = amqpwire.table({"product": "bench", "n": 7, "on": True, "caps": {"basic.nack": True}})
    assert decode.field_table(ours)[1] == {
        "product": "bench",
        "n": 7,
        "on": True,
        "caps": {"basic.nack": True},
    }
    theirs = encode.field_table({"version": "3.10.8", "caps": {"a": True}, "list": [1, "two"], "x": 1.5})
    values, end = amqpwire.read_table(theirs, 0)
    assert end == len(theirs)
    assert values == {"version": "3.10.8", "caps": {"a": True}, "list": [1, "two"], "x": 1.5}


def test_split_frames_keeps_a_partial_frame_and_refuses_a_lost_frame_end() -> None:
    whole = amqpwire.method_frame(1, amqpwire.BASIC_QOS_OK)
    frames, used = amqpwire.split_frames(whole + whole[:5])
    assert used == len(whole) and frames[0].method == amqpwire.BASIC_QOS_OK and frames[0].channel == 1
    with pytest.raises(amqpwire.AmqpError, match=r"frame at byte 0 does not end with 0xCE"):
        amqpwire.split_frames(whole[:-1] + b"\x00")


class _Writer:
    def __init__(self) -> None:
        self.data = bytearray()

    def write(self, data: bytes) -> None:
        self.data += data


def _connection() -> tuple[amqpwire.Connection, asyncio.StreamReader, _Writer]:
    reader = asyncio.StreamReader()
    writer = _Writer()
    conn = amqpwire.Connection(reader, writer, amqpwire.Tuning(0, 4096, 0))  # type: ignore[arg-type]
    return conn, reader, writer


def _delivery(tag: int, body: bytes, frame_max: int = 4096) -> bytes:
    parts = [
        pamqp_frame.marshal(commands.Basic.Deliver("ctag-1", tag, False, "", "q"), 1),
        pamqp_frame.marshal(
            pamqp_header.ContentHeader(0, len(body), commands.Basic.Properties(delivery_mode=2)), 1
        ),
    ]
    step = frame_max - 8
    parts += [
        pamqp_frame.marshal(pamqp_body.ContentBody(body[i : i + step]), 1) for i in range(0, len(body), step)
    ]
    return b"".join(parts)


async def _feed(reader: asyncio.StreamReader, data: bytes, chunk: int) -> None:
    for i in range(0, len(data), chunk):
        reader.feed_data(data[i : i + chunk])
        await asyncio.sleep(0)
    reader.feed_eof()


async def test_consumer_counts_reassembles_and_acks_every_unit_across_chunk_boundaries() -> None:
    conn, reader, writer = _connection()
    bodies = [str(i).encode() * (1 + i % 7) * 150 for i in range(250)]  # some span several frames
    seen: list[bytes] = []
    consumer = amqpwire.Consumer(conn, no_ack=False, ack_every=100)
    consumer.on_body = seen.append
    consumer.start()
    await _feed(reader, b"".join(_delivery(i + 1, b) for i, b in enumerate(bodies)), 997)
    await consumer.stopped()
    assert consumer.delivered == 250 and seen == bodies
    consumer.ack_now()
    acks = [value for _, value in _unmarshal_all(bytes(writer.data))]
    assert [(a.delivery_tag, a.multiple) for a in acks] == [(100, True), (200, True), (250, True)]
    assert consumer.error == "RabbitMQ closed the connection"


async def test_consumer_without_acks_writes_nothing() -> None:
    conn, reader, writer = _connection()
    consumer = amqpwire.Consumer(conn, no_ack=True, ack_every=10).start()
    await _feed(reader, b"".join(_delivery(i + 1, b"z" * 1024) for i in range(35)), 4096)
    await consumer.stopped()
    consumer.ack_now()
    assert consumer.delivered == 35 and writer.data == b""


async def test_consumer_stops_with_the_reason_of_a_channel_close() -> None:
    conn, reader, _ = _connection()
    consumer = amqpwire.Consumer(conn, no_ack=True, ack_every=10).start()
    close = commands.Channel.Close(404, "NOT_FOUND - no queue 'x' in vhost '/'", 60, 20)
    reader.feed_data(_delivery(1, b"a") + pamqp_frame.marshal(close, 1))
    await consumer.stopped()
    assert consumer.delivered == 1
    assert consumer.error == "RabbitMQ closed the channel: 404 NOT_FOUND - no queue 'x' in vhost '/'"


async def test_publisher_counts_confirms_multiple_single_and_out_of_order() -> None:
    conn, reader, writer = _connection()
    publisher = amqpwire.Publisher(conn, "q", b"m", persistent=True, confirms=True, max_batch=4).start()
    publisher.write(10)
    assert publisher.published == 10 and len(_unmarshal_all(bytes(writer.data))) == 30
    marks: list[int] = []
    publisher.on_progress = lambda: marks.append(publisher.unconfirmed)
    for tag, multiple in ((5, True), (7, False), (6, False), (9, False), (10, True)):
        reader.feed_data(pamqp_frame.marshal(commands.Basic.Ack(tag, multiple), 1))
        await asyncio.sleep(0)
    reader.feed_eof()
    await publisher.stopped()
    assert marks[:5] == [5, 4, 3, 2, 0]
    assert publisher.confirmed == 10


async def test_publisher_stops_on_a_nack() -> None:
    conn, reader, _ = _connection()
    publisher = amqpwire.Publisher(conn, "q", b"m", persistent=True, confirms=True, max_batch=4).start()
    publisher.write(3)
    reader.feed_data(pamqp_frame.marshal(commands.Basic.Nack(2, False, False), 1))
    await publisher.stopped()
    assert publisher.error == "RabbitMQ refused (nack) message 2"
    with pytest.raises(amqpwire.AmqpError, match="nack"):
        publisher.write(1)


async def test_connect_refused_is_a_precise_error() -> None:
    with pytest.raises(amqpwire.AmqpError, match=r"cannot connect to AMQP broker 127\.0\.0\.1:9"):
        await amqpwire.Connection.open("127.0.0.1", 9, timeout=2)


# --- against the real RabbitMQ ------------------------------------------------------------------
async def _round_trip(persistent: bool, body: bytes, count: int) -> None:
    queue = f"flowbroker.test.{uuid.uuid4().hex}"
    admin = await amqpwire.Connection.open()
    assert admin.server_properties["product"] == "RabbitMQ"
    try:
        await admin.queue_declare(queue, durable=persistent)
        seen: list[bytes] = []
        consumer = await amqpwire.Consumer.open(
            queue, no_ack=not persistent, ack_every=64, prefetch=200, on_body=seen.append
        )
        publisher = await amqpwire.Publisher.open(
            queue, body, persistent=persistent, confirms=persistent, max_batch=50
        )
        publisher.write(count)
        await publisher.drain()
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and (
            # a delivery is counted at its method frame; its body frames may come in a later read
            consumer.delivered < count or len(seen) < count or (persistent and publisher.unconfirmed)
        ):
            await asyncio.sleep(0.01)
        consumer.ack_now()
        await consumer.conn.writer.drain()
        assert (consumer.error, publisher.error) == (None, None)
        assert consumer.delivered == count and len(seen) == count
        assert set(seen) == {body}
        if persistent:
            assert publisher.confirmed == count and publisher.unconfirmed == 0
        await consumer.close()
        await publisher.close()
        # every message was delivered once and, when acked, is gone from the queue
        assert await admin.queue_declare(queue, durable=persistent) == 0
    finally:
        await admin.queue_delete(queue)
        await admin.close()


@pytest.mark.rabbitmq
@pytest.mark.timeout(60)
async def test_transient_messages_all_arrive(rabbitmq_url: str) -> None:
    await _round_trip(False, b"t" * 1024, 500)


@pytest.mark.rabbitmq
@pytest.mark.timeout(60)
async def test_persistent_confirmed_messages_all_arrive_and_are_acked(rabbitmq_url: str) -> None:
    await _round_trip(True, b"p" * 1024, 500)


@pytest.mark.rabbitmq
@pytest.mark.timeout(60)
async def test_bodies_larger_than_a_frame_arrive_whole(rabbitmq_url: str) -> None:
    await _round_trip(True, struct.pack(">I", 7) * 75_000, 20)  # 300 KB, over RabbitMQ's 128 KB frames
