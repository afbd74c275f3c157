"""Seed 004's requesters on RabbitMQ, many on one AMQP connection: put a request, wait for its reply.

Each requester behaves as the seed's (§2.0): it puts a request on the flow's input queue, waits
for the reply to *that* request on the output queue, then puts its next one; a round trip counts
two messages. They share one connection and channel on the lean codec of
:mod:`flowbroker_bench.amqpwire` instead of a client object each: the requests that become due
while one chunk of received bytes is read leave in one write, replies arrive through one consumer
(prefetch, acknowledged with ``multiple`` once per chunk), and a request's put is confirmed by the
broker (publisher confirms, ``mandatory``: an unroutable request is an error, not a lost reply).

A request's descriptor travels in AMQP properties exactly as the runtime's transport puts it
(:func:`flowbroker.runtime.transports.amqp.to_amqp`): its correlation id is the request's own
message id, which the flows keep, so a reply is matched to its requester by correlation id. A
reply whose correlation id no requester waits for is counted as unexpected, a reply the case's
check refuses as wrong, and a request without a reply after ``reply_timeout`` seconds as lost
(its requester then puts its next request); only a right reply completes a round trip.

The request bodies are built before the window, a few per requester, and sent in turn: building
one (the case's body builder) costs more than sending it.
"""

from __future__ import annotations

import asyncio
import os
import struct
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote, urlsplit

from flowbroker_bench import amqpwire
from flowbroker_bench.amqpwire import (
    FRAME_BODY,
    FRAME_HEADER,
    FRAME_METHOD,
    AmqpError,
    Connection,
    bits,
    frame,
    method_frame,
    shortstr,
)

CHANNEL = Connection.CHANNEL
#: Placeholder ids in a request header template, patched per request (their hex is unique in it).
_MSG_MARK = b"\xa5\x5a" * 12
_CORREL_MARK = b"\x5a\xa5" * 12

_FRAME = struct.Struct(">BHI")
_U16 = struct.Struct(">H")
_U32 = struct.Struct(">I")
_U64 = struct.Struct(">Q")
_KEY = struct.Struct(">I")


def _key(class_id: int, method_id: int) -> int:
    return class_id << 16 | method_id


_DELIVER = _key(60, 60)
_RETURN = _key(60, 50)
_ACK = _key(60, 80)
_NACK = _key(60, 120)
_CHANNEL_CLOSE = _key(20, 40)
_CONNECTION_CLOSE = _key(10, 50)

#: Property flags of a content header, in the order the properties follow it (AMQP 0-9-1 §4.2.6.1).
_CONTENT_TYPE, _CONTENT_ENCODING, _HEADERS, _DELIVERY_MODE, _PRIORITY, _CORRELATION_ID = (
    0x8000,
    0x4000,
    0x2000,
    0x1000,
    0x0800,
    0x0400,
)

#: ``check(request body, reply body)`` raises ValueError when the reply is not the request's.
ReplyCheck = Callable[[bytes, bytes], None]


def connect_arguments(url: str) -> dict[str, Any]:
    """``amqp://user:password@host:port/vhost`` as :meth:`amqpwire.Connection.open`'s arguments."""
    parts = urlsplit(url)
    if parts.scheme != "amqp":
        raise ValueError(f"the requesters speak plain amqp:// only, not {parts.scheme}://")
    vhost = unquote(parts.path[1:]) if len(parts.path) > 1 else "/"
    return {
        "host": parts.hostname or "127.0.0.1",
        "port": parts.port or 5672,
        "user": unquote(parts.username or "guest"),
        "password": unquote(parts.password or "guest"),
        "vhost": vhost,
    }


def correlation_id(payload: bytes | bytearray | memoryview, pos: int) -> bytes | None:
    """The correlation id property of the content header whose payload starts at ``pos``."""
    (flags,) = _U16.unpack_from(payload, pos + 12)
    if not flags & _CORRELATION_ID:
        return None
    at = pos + 14
    if flags & _CONTENT_TYPE:
        at += 1 + payload[at]
    if flags & _CONTENT_ENCODING:
        at += 1 + payload[at]
    if flags & _HEADERS:
        at += 4 + _U32.unpack_from(payload, at)[0]
    if flags & _DELIVERY_MODE:
        at += 1
    if flags & _PRIORITY:
        at += 1
    return bytes(payload[at + 1 : at + 1 + payload[at]])


class HeaderTemplate:
    """A request's content header frame for one set of descriptor fields, its ids patched per request.

    The put time (a header of the runtime's encoding, of varying length) is the template's:
    templates are made again every second, so a request's put time is at most a second early.
    """

    def __init__(self, persistent: bool, fields: dict[str, Any]) -> None:
        import pika.frame
        from flowbroker.qm.protocol import MessageDescriptor
        from flowbroker.runtime.transports.amqp import to_amqp

        md = MessageDescriptor(
            persistence=1 if persistent else 0,
            **{**fields, "msg_id": _MSG_MARK, "correl_id": _CORREL_MARK, "put_time": time.time()},
        )
        self.frame = bytes(pika.frame.Header(CHANNEL, 0, to_amqp(md, None)).marshal())
        self.msg_at = self._only(_MSG_MARK.hex().encode())
        self.correl_at = self._only(_CORREL_MARK.hex().encode())

    def _only(self, mark: bytes) -> int:
        at = self.frame.find(mark)
        if at < 0 or self.frame.find(mark, at + 1) >= 0:
            raise AmqpError("a request header template does not hold its id placeholder exactly once")
        return at

    def encode(self, ident: bytes, body_size: int) -> bytearray:
        """The header frame of a request whose message and correlation id are ``ident`` (48 hex digits)."""
        header = bytearray(self.frame)
        header[self.msg_at : self.msg_at + 48] = ident
        header[self.correl_at : self.correl_at + 48] = ident
        _U64.pack_into(header, 11, body_size)  # after type, channel, size, class id and weight
        return header


@dataclass
class Prepared:
    """A request ready to send: its body, its body frames and its descriptor fields."""

    body: bytes
    frames: bytes
    fields: dict[str, Any]
    key: tuple[tuple[str, Any], ...]


def prepare(body: bytes, fields: dict[str, Any], frame_max: int = 131072) -> Prepared:
    chunk = frame_max - 8
    frames = b"".join(frame(FRAME_BODY, CHANNEL, body[i : i + chunk]) for i in range(0, len(body), chunk))
    return Prepared(body, frames, fields, tuple(sorted(fields.items())))


@dataclass
class Tally:
    """What the requesters counted; ``counted``, ``moved`` and the times only while ``measuring``."""

    counted: int = 0  # messages: 2 per right round trip
    moved: int = 0  # bytes of the requests and replies counted
    puts: int = 0  # requests the broker confirmed
    replies: int = 0  # right replies, in or out of the window
    wrong: int = 0
    lost: int = 0
    unexpected: int = 0
    first_wrong: str = ""
    responses: list[float] = field(default_factory=list)
    put_times: list[float] = field(default_factory=list)
    get_times: list[float] = field(default_factory=list)

    def problems(self) -> str:
        """A row note for replies that were wrong, lost or unexpected; empty when there were none."""
        said = []
        if self.wrong:
            said.append(f"{self.wrong:,} wrong replies ({self.first_wrong})")
        if self.lost:
            said.append(f"{self.lost:,} requests without a reply")
        if self.unexpected:
            said.append(f"{self.unexpected:,} replies no requester waited for")
        return "; ".join(said)


class Requesters:
    """``clients`` requesters in put-then-wait-for-the-reply loops on one connection (see the module)."""

    def __init__(
        self,
        conn: Connection,
        in_queue: str,
        requests: Sequence[Sequence[Prepared]],
        *,
        persistent: bool,
        check: ReplyCheck | None,
        reply_timeout: float,
    ) -> None:
        self.conn = conn
        self.requests = requests
        self.persistent = persistent
        self.check = check
        self.reply_timeout = reply_timeout
        self.tally = Tally()
        self.measuring = False
        self.stopping = False
        self.error: str | None = None
        self._publish = method_frame(
            CHANNEL, amqpwire.BASIC_PUBLISH, b"\x00\x00" + shortstr("") + shortstr(in_queue) + bits(True)
        )
        self._templates: dict[tuple[tuple[str, Any], ...], HeaderTemplate] = {}
        self._template_second = 0
        self._prefix = os.urandom(12).hex().encode()  # this run's message ids: prefix, then a counter
        self._seq = 0
        n = len(requests)
        self._turn = [0] * n  # which of its prepared requests a requester sends next
        self._current: list[Prepared | None] = [None] * n
        self._started = [0.0] * n
        self._put_done: list[float | None] = [None] * n
        self._publish_seq = [0] * n  # the confirm sequence number of a requester's request
        self._waiting: dict[bytes, int] = {}  # correlation id (hex) → requester
        self._confirm_for: dict[int, int] = {}  # publish sequence number → requester
        self._published = 0
        self._confirmed = 0  # every publish up to this one is confirmed
        self._out: list[bytes | bytearray] = []
        self._reader: asyncio.Task[None] | None = None
        self._watch: asyncio.Task[None] | None = None

    @classmethod
    async def open(
        cls,
        url: str,
        in_queue: str,
        out_queue: str,
        requests: Sequence[Sequence[Prepared]],
        *,
        persistent: bool,
        check: ReplyCheck | None,
        reply_timeout: float,
    ) -> Requesters:
        conn = await Connection.open(**connect_arguments(url))
        try:
            await conn.confirm_select()
            # every requester has at most one reply on its way; the margin keeps strays from
            # holding up the replies awaited
            await conn.basic_qos(min(65535, 2 * len(requests) + 16))
            await conn.basic_consume(out_queue, no_ack=False)
        except BaseException:
            await conn.close()
            raise
        return cls(conn, in_queue, requests, persistent=persistent, check=check, reply_timeout=reply_timeout)

    # -- running -----------------------------------------------------------------------------------

    def start(self) -> Requesters:
        """Every requester puts its first request (one write), then replies are read as they come."""
        for index in range(len(self.requests)):
            self._request(index)
        self._flush(0)
        loop = asyncio.get_running_loop()
        self._reader = loop.create_task(self._read(self.conn.take_buffer()))
        self._watch = loop.create_task(self._watch_lost())
        return self

    @property
    def waiting(self) -> int:
        """Requests sent whose reply has not come (nor been given up)."""
        return len(self._waiting)

    async def finish(self, wait: float) -> None:
        """Stop putting requests; wait up to ``wait`` seconds for the replies of those sent."""
        self.stopping = True
        deadline = time.monotonic() + wait
        while self._waiting and self.error is None and time.monotonic() < deadline:
            await asyncio.sleep(0.02)

    async def close(self) -> None:
        for task in (self._reader, self._watch):
            if task is not None:
                task.cancel()
        await self.conn.close()

    # -- requests ----------------------------------------------------------------------------------

    def _template(self, prepared: Prepared, now: float) -> HeaderTemplate:
        second = int(now)
        if second != self._template_second:
            self._templates.clear()
            self._template_second = second
        template = self._templates.get(prepared.key)
        if template is None:
            template = self._templates[prepared.key] = HeaderTemplate(self.persistent, prepared.fields)
        return template

    def _request(self, index: int) -> None:
        """Queue requester ``index``'s next request for the next write."""
        mine = self.requests[index]
        prepared = mine[self._turn[index] % len(mine)]
        self._turn[index] += 1
        self._seq += 1
        ident = self._prefix + b"%024x" % self._seq
        now = time.perf_counter()
        header = self._template(prepared, time.time()).encode(ident, len(prepared.body))
        self._out += (self._publish, header, prepared.frames)
        self._published += 1
        self._confirm_for[self._published] = index
        self._publish_seq[index] = self._published
        self._waiting[ident] = index
        self._current[index] = prepared
        self._started[index] = now
        self._put_done[index] = None

    def _flush(self, last_tag: int) -> None:
        if last_tag:
            self._out.append(amqpwire.ack(CHANNEL, last_tag, multiple=True))
        if self._out:
            self.conn.writer.write(b"".join(self._out))
            self._out = []

    # -- replies and confirms ------------------------------------------------------------------------

    def _reply(self, correl: bytes | None, body: bytes) -> None:
        index = self._waiting.pop(correl, None) if correl is not None else None
        tally = self.tally
        if index is None:
            tally.unexpected += 1
            return
        prepared = self._current[index]
        assert prepared is not None
        if self.check is not None:
            try:
                self.check(prepared.body, body)
            except ValueError as exc:
                tally.wrong += 1
                tally.first_wrong = tally.first_wrong or str(exc)
                self._next(index)
                return
        tally.replies += 1
        if self.measuring:
            done = time.perf_counter()
            started = self._started[index]
            put_done = self._put_done[index] or done
            tally.counted += 2
            tally.moved += len(prepared.body) + len(body)
            tally.responses.append(done - started)
            tally.put_times.append(put_done - started)
            tally.get_times.append(done - put_done)
        self._next(index)

    def _next(self, index: int) -> None:
        if not self.stopping:
            self._request(index)

    def _confirm(self, tag: int, multiple: bool) -> None:
        now = time.perf_counter()
        first = self._confirmed + 1 if multiple else tag
        for seq in range(first, tag + 1):
            index = self._confirm_for.pop(seq, None)
            if index is None:
                continue
            self.tally.puts += 1
            if self._publish_seq[index] == seq and self._put_done[index] is None:
                self._put_done[index] = now
        while self._confirmed + 1 not in self._confirm_for and self._confirmed < self._published:
            self._confirmed += 1

    async def _read(self, buf: bytearray) -> None:
        reader = self.conn.reader
        unpack_frame = _FRAME.unpack_from
        unpack_key = _KEY.unpack_from
        unpack_u64 = _U64.unpack_from
        returned = False  # the content that follows is a Basic.Return's, not a reply's
        correl: bytes | None = None
        parts: list[bytes] = []
        remaining = 0
        try:
            while True:
                pos = 0
                n = len(buf)
                last_tag = 0
                while n - pos >= 7:
                    frame_type, _channel, size = unpack_frame(buf, pos)
                    end = pos + 8 + size
                    if end > n:
                        break
                    if frame_type == FRAME_METHOD:
                        (key,) = unpack_key(buf, pos + 7)
                        if key == _DELIVER:
                            returned = False
                            # the delivery tag follows the consumer tag (a short string)
                            last_tag = unpack_u64(buf, pos + 12 + buf[pos + 11])[0]
                        elif key == _ACK:
                            self._confirm(unpack_u64(buf, pos + 11)[0], bool(buf[pos + 19] & 1))
                        elif key == _RETURN:
                            returned = True
                            code, length = _U16.unpack_from(buf, pos + 11)[0], buf[pos + 13]
                            text = bytes(buf[pos + 14 : pos + 14 + length]).decode(errors="replace")
                            self.error = f"RabbitMQ returned a request as unroutable: {code} {text}"
                        elif key == _NACK:
                            self.error = f"RabbitMQ refused (nack) request {unpack_u64(buf, pos + 11)[0]}"
                        elif key in (_CHANNEL_CLOSE, _CONNECTION_CLOSE):
                            self.error = str(amqpwire._closed_error(buf, pos, key))
                    elif frame_type == FRAME_HEADER and not returned:
                        correl = correlation_id(buf, pos + 7)
                        (remaining,) = unpack_u64(buf, pos + 11)
                        parts = []
                        if remaining == 0:
                            self._reply(correl, b"")
                    elif frame_type == FRAME_BODY and not returned:
                        parts.append(bytes(buf[pos + 7 : end - 1]))
                        remaining -= size
                        if remaining <= 0:
                            self._reply(correl, parts[0] if len(parts) == 1 else b"".join(parts))
                    pos = end
                if pos:
                    del buf[:pos]
                self._flush(last_tag)
                if self.error is not None:
                    break
                data = await reader.read(262144)
                if not data:
                    self.error = self.error or "RabbitMQ closed the connection"
                    break
                buf += data
        except OSError as exc:
            self.error = f"connection to RabbitMQ lost: {exc}"

    async def _watch_lost(self) -> None:
        """Give up on a request whose reply is overdue: counted lost, its requester goes on."""
        every = min(1.0, self.reply_timeout / 4)
        while True:
            await asyncio.sleep(every)
            limit = time.perf_counter() - self.reply_timeout
            overdue = [(c, i) for c, i in self._waiting.items() if self._started[i] < limit]
            for correl, index in overdue:
                del self._waiting[correl]
                self.tally.lost += 1
                self._next(index)
            if overdue:
                self._flush(0)


class Drainers:
    """Counts the copies on the other subscribers' queues (§2.11's background consumer), one connection."""

    def __init__(self, consumer: amqpwire.Consumer) -> None:
        self.consumer = consumer

    @classmethod
    async def open(cls, url: str, queues: Sequence[str]) -> Drainers:
        conn = await Connection.open(**connect_arguments(url))
        try:
            await conn.basic_qos(2000)
            for queue in queues:
                await conn.basic_consume(queue, no_ack=False)
        except BaseException:
            await conn.close()
            raise
        return cls(amqpwire.Consumer(conn, no_ack=False, ack_every=200).start())

    @property
    def drained(self) -> int:
        return self.consumer.delivered

    async def close(self) -> None:
        self.consumer.ack_now()
        await self.consumer.close()


__all__ = ["Drainers", "HeaderTemplate", "Prepared", "Requesters", "Tally", "connect_arguments", "prepare"]
