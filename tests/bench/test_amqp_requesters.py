"""The RabbitMQ requesters of `bench flow|seed004 --transport amqp-*`: each waits for the reply to its own request.

What the requesters write is read back with pamqp; replies are fed to them in odd orders and
chunks (matched by correlation id, wrong, unexpected, never coming), then they run against the
real RabbitMQ with a responder that answers as a flow does (the correlation id kept), except that
it drops some requests and spoils others.
"""

from __future__ import annotations

import asyncio
import threading
import time
import uuid
from typing import Any

import pika
import pika.frame
import pika.spec
import pytest
from flowbroker.runtime.transports.amqp import from_amqp
from flowbroker_bench import amqp_requesters, amqpwire
from flowbroker_bench.amqp_requesters import Requesters, prepare
from pamqp import body as pamqp_body
from pamqp import commands
from pamqp import frame as pamqp_frame
from pamqp import header as pamqp_header


class _Writer:
    def __init__(self) -> None:
        self.data = bytearray()

    def write(self, data: bytes) -> None:
        self.data += data

    def take(self) -> bytes:
        data, self.data = bytes(self.data), bytearray()
        return data

    async def drain(self) -> None:
        return None

    def close(self) -> None:
        return None

    async def wait_closed(self) -> None:
        return None


def _echo_check(request: bytes, reply: bytes) -> None:
    if not reply.startswith(request):
        raise ValueError("the reply does not start with the request")


def _requesters(
    clients: int, reply_timeout: float = 30.0
) -> tuple[Requesters, asyncio.StreamReader, _Writer]:
    reader = asyncio.StreamReader()
    writer = _Writer()
    conn = amqpwire.Connection(reader, writer, amqpwire.Tuning(0, 4096, 0))  # type: ignore[arg-type]
    requests = [
        [prepare(f"request {i}.{n} ".encode() * 20, {"format": "MQSTR"}) for n in range(3)]
        for i in range(clients)
    ]
    requesters = Requesters(
        conn, "IN.Q", requests, persistent=False, check=_echo_check, reply_timeout=reply_timeout
    )
    return requesters, reader, writer


def _written(data: bytes) -> list[Any]:
    """The frames the requesters wrote, decoded by pika (as the runtime's transport reads them)."""
    frames = []
    while data:
        used, decoded = pika.frame.decode_frame(data)
        assert used, "a partial frame was written"
        frames.append(decoded)
        data = data[used:]
    return frames


def _sent(data: bytes) -> list[tuple[Any, bytes]]:
    """(properties, body) of every request in ``data``, each checked to be a mandatory publish to IN.Q."""
    out = []
    frames = _written(data)
    i = 0
    while i < len(frames):
        method = getattr(frames[i], "method", None)
        if isinstance(method, pika.spec.Basic.Ack):  # the requesters' acknowledgement of replies
            i += 1
            continue
        assert isinstance(method, pika.spec.Basic.Publish), method
        assert (method.exchange, method.routing_key, method.mandatory) == ("", "IN.Q", True)
        header = frames[i + 1]
        assert isinstance(header, pika.frame.Header)
        body = b""
        i += 2
        while len(body) < header.body_size:
            assert isinstance(frames[i], pika.frame.Body)
            body += frames[i].fragment
            i += 1
        out.append((header.properties, body))
    return out


def _reply(tag: int, correlation_id: str | None, body: bytes) -> bytes:
    props = commands.Basic.Properties(
        content_type="text/xml",
        headers={"x-mq-format": "MQSTR", "x-mq-put-time": "1.5"},
        delivery_mode=1,
        priority=4,
        correlation_id=correlation_id,
        message_id=uuid.uuid4().hex,
    )
    return b"".join(
        [
            pamqp_frame.marshal(commands.Basic.Deliver("ctag-1", tag, False, "", "OUT.Q"), 1),
            pamqp_frame.marshal(pamqp_header.ContentHeader(0, len(body), props), 1),
            *[
                pamqp_frame.marshal(pamqp_body.ContentBody(body[i : i + 1000]), 1)
                for i in range(0, len(body), 1000)
            ],
        ]
    )


async def _feed(reader: asyncio.StreamReader, data: bytes, chunk: int) -> None:
    for i in range(0, len(data), chunk):
        reader.feed_data(data[i : i + chunk])
        await asyncio.sleep(0)
    await asyncio.sleep(0.01)


def test_a_request_carries_its_descriptor_as_the_runtime_puts_it() -> None:
    template = amqp_requesters.HeaderTemplate(True, {"format": "MQHRF2", "encoding": 273, "priority": 7})
    ident = b"ab" * 24
    header = bytes(template.encode(ident, 5000))
    (head,) = _written(header)
    assert isinstance(head, pika.frame.Header) and head.body_size == 5000
    message = from_amqp(head.properties, b"")
    assert message.md.msg_id == message.md.correl_id == bytes.fromhex(ident.decode())
    assert (message.md.format, message.md.encoding, message.md.priority) == ("MQHRF2", 273, 7)
    assert message.md.persistence == 1 and abs(message.md.put_time - time.time()) < 5
    assert amqp_requesters.correlation_id(header, 7) == ident


def test_the_correlation_id_is_found_past_every_property_before_it() -> None:
    data = _reply(1, "c0ffee" * 8, b"x")
    frames = data[len(pamqp_frame.marshal(commands.Basic.Deliver("ctag-1", 1, False, "", "OUT.Q"), 1)) :]
    assert amqp_requesters.correlation_id(frames, 7) == b"c0ffee" * 8
    bare = pamqp_frame.marshal(
        pamqp_header.ContentHeader(0, 1, commands.Basic.Properties(delivery_mode=1)), 1
    )
    assert amqp_requesters.correlation_id(bare, 7) is None


def test_the_url_gives_the_connection_and_amqps_is_refused() -> None:
    assert amqp_requesters.connect_arguments("amqp://u%40x:p%2Fw@rabbit:5673/%2Fprod") == {
        "host": "rabbit",
        "port": 5673,
        "user": "u@x",
        "password": "p/w",
        "vhost": "/prod",
    }
    assert amqp_requesters.connect_arguments("amqp://127.0.0.1")["vhost"] == "/"
    with pytest.raises(ValueError, match="plain amqp:// only, not amqps://"):
        amqp_requesters.connect_arguments("amqps://h/")


async def test_replies_in_any_order_each_complete_their_own_requesters_round_trip() -> None:
    requesters, reader, writer = _requesters(5)
    requesters.measuring = True
    requesters.start()
    first = _sent(writer.take())
    assert len(first) == 5 and len({p.correlation_id for p, _ in first}) == 5
    assert all(p.correlation_id == p.message_id for p, _ in first)
    # replies in reverse order, one with a spoiled body, one nobody asked for, in odd chunks
    replies = [
        _reply(10 + k, p.correlation_id, body + b"<Processed/>") for k, (p, body) in enumerate(first[::-1])
    ]
    replies[1] = _reply(11, first[3][0].correlation_id, b"not the request")
    replies.append(_reply(20, "ff" * 24, first[0][1]))
    await _feed(reader, b"".join(replies), 333)
    tally = requesters.tally
    assert (tally.replies, tally.wrong, tally.unexpected, tally.lost) == (4, 1, 1, 0)
    assert tally.counted == 8 and "the reply does not start with the request" in tally.problems()
    # every requester answered (rightly or not) put its next request: its next prepared body
    again = _sent(writer.data)
    assert sorted(body for _, body in again) == sorted(f"request {i}.1 ".encode() * 20 for i in range(5))
    acks = [
        m
        for m in (getattr(f, "method", None) for f in _written(bytes(writer.data)))
        if isinstance(m, pika.spec.Basic.Ack)
    ]
    assert acks and acks[-1].delivery_tag == 20 and acks[-1].multiple
    assert requesters.waiting == 5
    await requesters.close()


async def test_confirms_time_the_puts_and_a_returned_request_stops_the_run() -> None:
    requesters, reader, writer = _requesters(3)
    requesters.measuring = True
    requesters.start()
    sent = _sent(writer.take())
    reader.feed_data(pamqp_frame.marshal(commands.Basic.Ack(2, True), 1))
    reader.feed_data(pamqp_frame.marshal(commands.Basic.Ack(3, False), 1))
    await asyncio.sleep(0.01)
    assert requesters.tally.puts == 3
    await _feed(reader, _reply(1, sent[0][0].correlation_id, sent[0][1]), 4096)
    assert requesters.tally.put_times and requesters.tally.put_times[0] <= requesters.tally.responses[0]
    returned = commands.Basic.Return(312, "NO_ROUTE", "", "IN.Q")
    props = commands.Basic.Properties(correlation_id=sent[1][0].correlation_id)
    reader.feed_data(
        pamqp_frame.marshal(returned, 1)
        + pamqp_frame.marshal(pamqp_header.ContentHeader(0, 1, props), 1)
        + pamqp_frame.marshal(pamqp_body.ContentBody(b"r"), 1)
    )
    await asyncio.sleep(0.01)
    assert requesters.error == "RabbitMQ returned a request as unroutable: 312 NO_ROUTE"
    assert (
        requesters.tally.replies == 1 and requesters.tally.unexpected == 0
    )  # the returned content is no reply
    await requesters.close()


async def test_a_reply_that_never_comes_is_counted_lost_and_the_requester_goes_on() -> None:
    requesters, reader, writer = _requesters(2, reply_timeout=0.2)
    requesters.start()
    first = _sent(writer.take())
    await _feed(reader, _reply(1, first[0][0].correlation_id, first[0][1]), 4096)
    await asyncio.sleep(0.6)
    tally = requesters.tally
    assert tally.lost >= 1 and tally.replies == 1
    assert "requests without a reply" in tally.problems()
    later = [body for _, body in _sent(writer.take())]
    assert b"request 1.1 " * 20 in later  # the second requester gave up on its first, put its next
    # the late reply to a request given up on no longer completes anything
    await _feed(reader, _reply(2, first[1][0].correlation_id, first[1][1]), 4096)
    assert requesters.tally.replies == 1 and requesters.tally.unexpected == 1
    await requesters.close()


# --- against the real RabbitMQ ------------------------------------------------------------------
def _responder(url: str, in_queue: str, out_queue: str, stop: threading.Event) -> None:
    """Answers as a flow does (the request's correlation id kept), but drops DROP and spoils SPOIL requests."""
    conn = pika.BlockingConnection(pika.URLParameters(url))
    channel = conn.channel()

    def on_request(ch: Any, method: Any, props: Any, body: bytes) -> None:
        if b"DROP" not in body:
            reply = b"spoiled" if b"SPOIL" in body else body + b"<Processed>yes</Processed>"
            answer = pika.BasicProperties(correlation_id=props.correlation_id, delivery_mode=1)
            ch.basic_publish("", out_queue, reply, answer)
        ch.basic_ack(method.delivery_tag)

    channel.basic_qos(prefetch_count=50)
    channel.basic_consume(in_queue, on_request)
    while not stop.is_set():
        conn.process_data_events(time_limit=0.05)
    conn.close()


@pytest.mark.rabbitmq
@pytest.mark.timeout(60)
async def test_on_rabbitmq_every_reply_is_matched_and_dropped_or_spoiled_ones_are_told(
    rabbitmq_url: str,
) -> None:
    stamp = uuid.uuid4().hex[:10]
    in_queue, out_queue = f"flowbroker.test.req.{stamp}", f"flowbroker.test.rep.{stamp}"
    admin = await amqpwire.Connection.open()
    await admin.queue_declare(in_queue, durable=False)
    await admin.queue_declare(out_queue, durable=False)
    stop = threading.Event()
    responder = threading.Thread(
        target=_responder, args=(rabbitmq_url, in_queue, out_queue, stop), daemon=True
    )
    responder.start()
    requests = [
        [prepare(f"<r>{i}.{n}</r>".encode() * 50, {"format": "MQSTR"}) for n in range(4)] for i in range(6)
    ]
    requests[4][2] = prepare(b"<r>DROP</r>", {"format": "MQSTR"})
    requests[5][1] = prepare(b"<r>SPOIL</r>", {"format": "MQSTR"})

    def check(request: bytes, reply: bytes) -> None:
        if reply != request + b"<Processed>yes</Processed>":
            raise ValueError(f"reply {reply[:20]!r} is not the request's")

    try:
        requesters = await Requesters.open(
            rabbitmq_url, in_queue, out_queue, requests, persistent=False, check=check, reply_timeout=0.5
        )
        requesters.measuring = True
        requesters.start()
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and (requesters.tally.lost < 1 or requesters.tally.replies < 200):
            await asyncio.sleep(0.05)
        await requesters.finish(5)
        tally = requesters.tally
        while time.monotonic() < deadline and tally.puts < tally.replies + tally.wrong + tally.lost:
            await asyncio.sleep(0.05)  # a confirm may follow its reply
        assert requesters.error is None and requesters.waiting == 0
        assert tally.replies >= 200 and tally.counted == 2 * tally.replies
        # exactly the dropped requests are lost and the spoiled ones wrong: every other reply went
        # to the requester that waited for it (a reply taken by another requester fails the check)
        sent_drop, sent_spoil = requesters._turn[4], requesters._turn[5]
        assert tally.lost == (sent_drop + 1) // 4 >= 1 and tally.wrong == (sent_spoil + 2) // 4 >= 1
        assert tally.unexpected == 0
        assert "reply b'spoiled' is not the request's" in tally.first_wrong
        # every request sent was confirmed; every reply was acknowledged, so none waits on the queue
        assert tally.puts == tally.replies + tally.wrong + tally.lost
        await requesters.close()
        assert await admin.queue_declare(out_queue, durable=False) == 0
    finally:
        stop.set()
        responder.join(10)
        await admin.queue_delete(in_queue)
        await admin.queue_delete(out_queue)
        await admin.close()
