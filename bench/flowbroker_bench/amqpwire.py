"""A lean AMQP 0-9-1 load driver: the handshake, a pre-encoded publisher and a byte-scanning consumer.

A general-purpose Python AMQP client builds objects for every frame and tops out far below what
RabbitMQ moves on one core, so `flowbroker bench qm-vs-rabbitmq` would measure the client. This
driver speaks only what the comparison needs. Set-up methods (declare, purge, qos, consume) are
request/response and may be slow; the hot paths are not: a publisher sends many copies of one
encoded Basic.Publish + content header + body triple in one write, and both the confirm reader and
the consumer walk the received bytes frame by frame without building a Python object per message.
"""

from __future__ import annotations

import asyncio
import socket
import struct
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

PROTOCOL_HEADER = b"AMQP\x00\x00\x09\x01"
FRAME_METHOD = 1
FRAME_HEADER = 2
FRAME_BODY = 3
FRAME_HEARTBEAT = 8
FRAME_END = 0xCE
FRAME_END_BYTE = b"\xce"

#: (class id, method id) of the methods this driver sends or expects.
CONNECTION_START = (10, 10)
CONNECTION_START_OK = (10, 11)
CONNECTION_TUNE = (10, 30)
CONNECTION_TUNE_OK = (10, 31)
CONNECTION_OPEN = (10, 40)
CONNECTION_OPEN_OK = (10, 41)
CONNECTION_CLOSE = (10, 50)
CONNECTION_CLOSE_OK = (10, 51)
CHANNEL_OPEN = (20, 10)
CHANNEL_OPEN_OK = (20, 11)
CHANNEL_CLOSE = (20, 40)
CHANNEL_CLOSE_OK = (20, 41)
QUEUE_DECLARE = (50, 10)
QUEUE_DECLARE_OK = (50, 11)
QUEUE_PURGE = (50, 30)
QUEUE_PURGE_OK = (50, 31)
QUEUE_DELETE = (50, 40)
QUEUE_DELETE_OK = (50, 41)
BASIC_QOS = (60, 10)
BASIC_QOS_OK = (60, 11)
BASIC_CONSUME = (60, 20)
BASIC_CONSUME_OK = (60, 21)
BASIC_PUBLISH = (60, 40)
BASIC_DELIVER = (60, 60)
BASIC_ACK = (60, 80)
BASIC_NACK = (60, 120)
CONFIRM_SELECT = (85, 10)
CONFIRM_SELECT_OK = (85, 11)

#: Basic property flag of delivery-mode (1 transient, 2 persistent), the only property sent.
DELIVERY_MODE_FLAG = 0x1000

_FRAME = struct.Struct(">BHI")
_METHOD_ID = struct.Struct(">HH")
_U8 = struct.Struct(">B")
_U16 = struct.Struct(">H")
_U32 = struct.Struct(">I")
_U64 = struct.Struct(">Q")
_TUNE = struct.Struct(">HIH")
_CLOSE = struct.Struct(">HB")  # reply code, then the reply text's length byte


def _key(class_id: int, method_id: int) -> int:
    return class_id << 16 | method_id


_DELIVER_KEY = _key(*BASIC_DELIVER)
_ACK_KEY = _key(*BASIC_ACK)
_NACK_KEY = _key(*BASIC_NACK)
_CHANNEL_CLOSE_KEY = _key(*CHANNEL_CLOSE)
_CONNECTION_CLOSE_KEY = _key(*CONNECTION_CLOSE)


class AmqpError(OSError):
    """The broker closed the channel or connection, or sent what this driver cannot accept."""


# --- encoding -----------------------------------------------------------------------------------
def shortstr(value: str | bytes) -> bytes:
    data = value.encode() if isinstance(value, str) else value
    if len(data) > 255:
        raise ValueError(f"AMQP short string of {len(data)} bytes exceeds 255")
    return _U8.pack(len(data)) + data


def longstr(value: str | bytes) -> bytes:
    data = value.encode() if isinstance(value, str) else value
    return _U32.pack(len(data)) + data


def table(values: dict[str, Any]) -> bytes:
    """A field table of strings, booleans, integers and nested tables (all the handshake needs)."""
    parts: list[bytes] = []
    for name, value in values.items():
        parts.append(shortstr(name))
        if isinstance(value, bool):
            parts.append(b"t" + _U8.pack(1 if value else 0))
        elif isinstance(value, int):
            parts.append(b"l" + struct.pack(">q", value))
        elif isinstance(value, str | bytes):
            parts.append(b"S" + longstr(value))
        elif isinstance(value, dict):
            parts.append(b"F" + table(value))
        else:
            raise TypeError(f"field table value {name!r} of type {type(value).__name__} is not supported")
    body = b"".join(parts)
    return _U32.pack(len(body)) + body


def bits(*flags: bool) -> bytes:
    """Consecutive bit arguments packed into one octet, first flag in the lowest bit."""
    octet = 0
    for index, flag in enumerate(flags):
        if flag:
            octet |= 1 << index
    return _U8.pack(octet)


def frame(frame_type: int, channel: int, payload: bytes) -> bytes:
    return _FRAME.pack(frame_type, channel, len(payload)) + payload + FRAME_END_BYTE


def method_frame(channel: int, method: tuple[int, int], arguments: bytes = b"") -> bytes:
    return frame(FRAME_METHOD, channel, _METHOD_ID.pack(*method) + arguments)


def publish_message(
    channel: int,
    exchange: str,
    routing_key: str,
    body: bytes,
    *,
    persistent: bool,
    frame_max: int = 131072,
) -> bytes:
    """Basic.Publish, its content header and body frame(s): the bytes of one message, sent as is."""
    method = method_frame(
        channel, BASIC_PUBLISH, b"\x00\x00" + shortstr(exchange) + shortstr(routing_key) + bits()
    )
    header = frame(
        FRAME_HEADER,
        channel,
        struct.pack(">HHQH", 60, 0, len(body), DELIVERY_MODE_FLAG) + _U8.pack(2 if persistent else 1),
    )
    chunk = frame_max - 8  # a body frame's payload plus its 7-byte header and end octet fit frame_max
    bodies = [frame(FRAME_BODY, channel, body[i : i + chunk]) for i in range(0, len(body), chunk)]
    return method + header + b"".join(bodies)


def ack(channel: int, delivery_tag: int, *, multiple: bool) -> bytes:
    return method_frame(channel, BASIC_ACK, _U64.pack(delivery_tag) + bits(multiple))


# --- decoding -----------------------------------------------------------------------------------
@dataclass
class Frame:
    """One whole frame as received; only used off the hot paths (set-up replies and tests)."""

    type: int
    channel: int
    payload: bytes

    @property
    def method(self) -> tuple[int, int] | None:
        if self.type != FRAME_METHOD:
            return None
        class_id, method_id = _METHOD_ID.unpack_from(self.payload, 0)
        return class_id, method_id

    @property
    def arguments(self) -> bytes:
        return self.payload[4:]


def split_frames(buf: bytes | bytearray) -> tuple[list[Frame], int]:
    """The whole frames at the start of ``buf`` and how many bytes they span."""
    frames: list[Frame] = []
    pos = 0
    n = len(buf)
    while n - pos >= 7:
        frame_type, channel, size = _FRAME.unpack_from(buf, pos)
        end = pos + 8 + size
        if end > n:
            break
        if buf[end - 1] != FRAME_END:
            raise AmqpError(f"frame at byte {pos} does not end with 0xCE (framing lost)")
        frames.append(Frame(frame_type, channel, bytes(buf[pos + 7 : end - 1])))
        pos = end
    return frames, pos


def read_shortstr(data: bytes, pos: int) -> tuple[str, int]:
    length = data[pos]
    return data[pos + 1 : pos + 1 + length].decode(), pos + 1 + length


def read_longstr(data: bytes, pos: int) -> tuple[bytes, int]:
    (length,) = _U32.unpack_from(data, pos)
    return data[pos + 4 : pos + 4 + length], pos + 4 + length


_SCALARS = {
    ord("t"): struct.Struct(">?"),
    ord("b"): struct.Struct(">b"),
    ord("B"): struct.Struct(">B"),
    ord("s"): struct.Struct(">h"),
    ord("u"): struct.Struct(">H"),
    ord("I"): struct.Struct(">i"),
    ord("i"): struct.Struct(">I"),
    ord("l"): struct.Struct(">q"),
    ord("T"): struct.Struct(">Q"),
    ord("f"): struct.Struct(">f"),
    ord("d"): struct.Struct(">d"),
}


def _field_value(data: bytes, pos: int) -> tuple[Any, int]:
    kind = data[pos]
    pos += 1
    scalar = _SCALARS.get(kind)
    if scalar is not None:
        return scalar.unpack_from(data, pos)[0], pos + scalar.size
    if kind == ord("S"):
        raw, pos = read_longstr(data, pos)
        return raw.decode(errors="replace"), pos
    if kind == ord("x"):
        return read_longstr(data, pos)
    if kind == ord("F"):
        return read_table(data, pos)
    if kind == ord("A"):
        (length,) = _U32.unpack_from(data, pos)
        pos += 4
        end = pos + length
        items = []
        while pos < end:
            item, pos = _field_value(data, pos)
            items.append(item)
        return items, end
    if kind == ord("D"):
        scale = data[pos]
        (unscaled,) = struct.unpack_from(">i", data, pos + 1)
        return unscaled / 10**scale, pos + 5
    if kind == ord("V"):
        return None, pos
    raise AmqpError(f"field table value of unknown type {chr(kind)!r} at byte {pos - 1}")


def read_table(data: bytes, pos: int) -> tuple[dict[str, Any], int]:
    """A field table (such as Connection.Start's server properties) and the position after it."""
    (length,) = _U32.unpack_from(data, pos)
    pos += 4
    end = pos + length
    values: dict[str, Any] = {}
    while pos < end:
        name, pos = read_shortstr(data, pos)
        values[name], pos = _field_value(data, pos)
    return values, end


def close_reason(arguments: bytes) -> str:
    """``<code> <text>`` of a Channel.Close or Connection.Close."""
    (code,) = _U16.unpack_from(arguments, 0)
    text, _ = read_shortstr(arguments, 2)
    return f"{code} {text}"


def _closed_error(buf: bytes | bytearray, pos: int, key: int) -> AmqpError:
    what = "channel" if key == _CHANNEL_CLOSE_KEY else "connection"
    code, length = _CLOSE.unpack_from(buf, pos + 11)
    text = bytes(buf[pos + 14 : pos + 14 + length]).decode(errors="replace")
    return AmqpError(f"RabbitMQ closed the {what}: {code} {text}")


# --- connection ---------------------------------------------------------------------------------
@dataclass
class Tuning:
    channel_max: int
    frame_max: int
    heartbeat: int


class Connection:
    """One AMQP connection with channel 1 open; set-up methods wait for their reply."""

    CHANNEL = 1

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, tuning: Tuning) -> None:
        self.reader = reader
        self.writer = writer
        self.tuning = tuning
        self.server_properties: dict[str, Any] = {}
        self._buf = bytearray()

    @classmethod
    async def open(
        cls,
        host: str = "127.0.0.1",
        port: int = 5672,
        *,
        user: str = "guest",
        password: str = "guest",
        vhost: str = "/",
        timeout: float = 10.0,
    ) -> Connection:
        """Connect, authenticate with PLAIN, agree on frame size with heartbeats off, open channel 1."""
        try:
            reader, writer = await asyncio.wait_for(asyncio.open_connection(host, port), timeout)
        except (OSError, TimeoutError) as exc:
            raise AmqpError(f"cannot connect to AMQP broker {host}:{port}: {exc}") from None
        sock = writer.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self = cls(reader, writer, Tuning(0, 131072, 0))
        try:
            await asyncio.wait_for(self._handshake(user, password, vhost), timeout)
        except BaseException:
            writer.close()
            raise
        return self

    async def _handshake(self, user: str, password: str, vhost: str) -> None:
        self.writer.write(PROTOCOL_HEADER)
        start = await self._expect(0, CONNECTION_START)
        args = start.arguments
        self.server_properties, pos = read_table(args, 2)  # after the version's major and minor
        mechanisms, pos = read_longstr(args, pos)
        if b"PLAIN" not in mechanisms.split():
            raise AmqpError(f"broker offers no PLAIN authentication (offers {mechanisms.decode()})")
        client = {
            "product": "flowbroker bench",
            "capabilities": {"publisher_confirms": True, "basic.nack": True},
        }
        response = b"\x00" + user.encode() + b"\x00" + password.encode()
        self.writer.write(
            method_frame(
                0,
                CONNECTION_START_OK,
                table(client) + shortstr("PLAIN") + longstr(response) + shortstr("en_US"),
            )
        )
        tune = await self._expect(0, CONNECTION_TUNE)
        channel_max, frame_max, _heartbeat = _TUNE.unpack_from(tune.arguments, 0)
        # No heartbeats: a driver busy writing would otherwise have to interleave them.
        self.tuning = Tuning(channel_max or 65535, frame_max or 131072, 0)
        self.writer.write(
            method_frame(0, CONNECTION_TUNE_OK, _TUNE.pack(self.tuning.channel_max, self.tuning.frame_max, 0))
        )
        self.writer.write(method_frame(0, CONNECTION_OPEN, shortstr(vhost) + shortstr("") + bits()))
        await self._expect(0, CONNECTION_OPEN_OK)
        self.writer.write(method_frame(self.CHANNEL, CHANNEL_OPEN, shortstr("")))
        await self._expect(self.CHANNEL, CHANNEL_OPEN_OK)

    async def _read_frame(self) -> Frame:
        while True:
            frames, _ = split_frames(self._buf)
            if frames:
                first = frames[0]
                del self._buf[: 8 + len(first.payload)]
                return first
            data = await self.reader.read(65536)
            if not data:
                raise AmqpError("RabbitMQ closed the connection")
            self._buf += data

    async def _expect(self, channel: int, method: tuple[int, int]) -> Frame:
        """The next method frame, which must be ``method``; a Close raises with the broker's reason."""
        while True:
            got = await self._read_frame()
            if got.type == FRAME_HEARTBEAT:
                continue
            found = got.method
            if found == method and got.channel == channel:
                return got
            if found == CONNECTION_CLOSE:
                self.writer.write(method_frame(0, CONNECTION_CLOSE_OK))
                raise AmqpError(f"RabbitMQ closed the connection: {close_reason(got.arguments)}")
            if found == CHANNEL_CLOSE:
                self.writer.write(method_frame(got.channel, CHANNEL_CLOSE_OK))
                raise AmqpError(f"RabbitMQ closed channel {got.channel}: {close_reason(got.arguments)}")
            raise AmqpError(f"expected method {method}, got frame type {got.type} method {found}")

    async def call(self, method: tuple[int, int], arguments: bytes, reply: tuple[int, int]) -> bytes:
        self.writer.write(method_frame(self.CHANNEL, method, arguments))
        return (await self._expect(self.CHANNEL, reply)).arguments

    async def confirm_select(self) -> None:
        await self.call(CONFIRM_SELECT, bits(False), CONFIRM_SELECT_OK)

    async def queue_declare(self, queue: str, *, durable: bool) -> int:
        """Declare ``queue`` (not exclusive, not auto-deleted); returns the messages it holds."""
        args = b"\x00\x00" + shortstr(queue) + bits(False, durable, False, False, False) + table({})
        reply = await self.call(QUEUE_DECLARE, args, QUEUE_DECLARE_OK)
        _, pos = read_shortstr(reply, 0)
        (count,) = _U32.unpack_from(reply, pos)
        return int(count)

    async def queue_purge(self, queue: str) -> int:
        reply = await self.call(QUEUE_PURGE, b"\x00\x00" + shortstr(queue) + bits(False), QUEUE_PURGE_OK)
        return int(_U32.unpack_from(reply, 0)[0])

    async def queue_delete(self, queue: str) -> int:
        reply = await self.call(
            QUEUE_DELETE, b"\x00\x00" + shortstr(queue) + bits(False, False, False), QUEUE_DELETE_OK
        )
        return int(_U32.unpack_from(reply, 0)[0])

    async def basic_qos(self, prefetch_count: int) -> None:
        await self.call(BASIC_QOS, _U32.pack(0) + _U16.pack(prefetch_count) + bits(False), BASIC_QOS_OK)

    async def basic_consume(self, queue: str, *, no_ack: bool, tag: str = "") -> str:
        args = b"\x00\x00" + shortstr(queue) + shortstr(tag) + bits(False, no_ack, False, False) + table({})
        reply = await self.call(BASIC_CONSUME, args, BASIC_CONSUME_OK)
        return read_shortstr(reply, 0)[0]

    def take_buffer(self) -> bytearray:
        """Bytes read past the last set-up reply (deliveries may follow ConsumeOk in the same read)."""
        buf, self._buf = self._buf, bytearray()
        return buf

    async def close(self) -> None:
        """Connection.Close, then wait briefly for CloseOk; the socket is closed either way."""
        try:
            self.writer.write(
                method_frame(0, CONNECTION_CLOSE, _U16.pack(200) + shortstr("bye") + b"\x00" * 4)
            )
            await asyncio.wait_for(self.writer.drain(), 2)
        except (OSError, TimeoutError):
            pass
        self.writer.close()
        try:
            await asyncio.wait_for(self.writer.wait_closed(), 2)
        except (OSError, TimeoutError):
            pass


# --- the hot paths ------------------------------------------------------------------------------
class Publisher:
    """Publishes copies of one message; with ``confirms`` counts Basic.Ack from the broker.

    ``write(n)`` sends ``n`` messages in one write. ``confirmed`` is how many of the published
    messages the broker has confirmed (each Ack with ``multiple`` confirms every tag up to its
    own); a Nack or a Close stops the publisher with the broker's reason in ``error``.
    """

    def __init__(
        self, conn: Connection, queue: str, body: bytes, *, persistent: bool, confirms: bool, max_batch: int
    ) -> None:
        self.conn = conn
        self.confirms = confirms
        self.message = publish_message(
            Connection.CHANNEL, "", queue, body, persistent=persistent, frame_max=conn.tuning.frame_max
        )
        self._block = memoryview(self.message * max_batch)
        self._size = len(self.message)
        self.max_batch = max_batch
        self.published = 0
        self.confirmed = 0
        self._singles: set[int] = set()  # tags acked one by one above ``confirmed``
        self._buf = bytearray()
        self.error: str | None = None
        self.on_progress: Callable[[], None] = _nothing
        self._task: asyncio.Task[None] | None = None

    @classmethod
    async def open(
        cls,
        queue: str,
        body: bytes,
        *,
        persistent: bool,
        confirms: bool,
        max_batch: int = 1000,
        **connect: Any,
    ) -> Publisher:
        conn = await Connection.open(**connect)
        if confirms:
            await conn.confirm_select()
        self = cls(conn, queue, body, persistent=persistent, confirms=confirms, max_batch=max_batch)
        return self.start()

    def start(self) -> Publisher:
        """Start reading what the broker sends on this connection (confirms, or a Close)."""
        self._buf = self.conn.take_buffer()
        self._task = asyncio.get_running_loop().create_task(self._read())
        return self

    async def stopped(self) -> None:
        """Wait until the reader ends (the connection closed or the broker refused something)."""
        if self._task is not None:
            await asyncio.gather(self._task, return_exceptions=True)

    @property
    def unconfirmed(self) -> int:
        return self.published - self.confirmed - len(self._singles) if self.confirms else 0

    def write(self, n: int) -> None:
        if self.error is not None:
            raise AmqpError(self.error)
        while n > 0:
            k = min(n, self.max_batch)
            self.conn.writer.write(self._block[: k * self._size])
            self.published += k
            n -= k

    async def drain(self) -> None:
        await self.conn.writer.drain()

    async def _read(self) -> None:
        buf = self._buf
        reader = self.conn.reader
        unpack_frame = _FRAME.unpack_from
        unpack_key = _U32.unpack_from
        unpack_tag = _U64.unpack_from
        try:
            while True:
                pos = 0
                n = len(buf)
                while n - pos >= 7:
                    frame_type, _channel, size = unpack_frame(buf, pos)
                    end = pos + 8 + size
                    if end > n:
                        break
                    if frame_type == FRAME_METHOD:
                        (key,) = unpack_key(buf, pos + 7)
                        if key == _ACK_KEY:
                            (tag,) = unpack_tag(buf, pos + 11)
                            self._confirm(tag, bool(buf[pos + 19] & 1))
                        elif key == _NACK_KEY:
                            (tag,) = unpack_tag(buf, pos + 11)
                            self.error = f"RabbitMQ refused (nack) message {tag}"
                        elif key in (_CHANNEL_CLOSE_KEY, _CONNECTION_CLOSE_KEY):
                            self.error = str(_closed_error(buf, pos, key))
                    pos = end
                if pos:
                    del buf[:pos]
                    self.on_progress()
                if self.error is not None:
                    break
                data = await reader.read(65536)
                if not data:
                    self.error = self.error or "RabbitMQ closed the connection"
                    break
                buf += data
        except OSError as exc:
            self.error = f"connection to RabbitMQ lost: {exc}"
        self.on_progress()

    def _confirm(self, tag: int, multiple: bool) -> None:
        if multiple:
            if tag > self.confirmed:
                self.confirmed = tag
                if self._singles:
                    self._singles = {t for t in self._singles if t > tag}
        elif tag == self.confirmed + 1:
            self.confirmed = tag
        else:
            self._singles.add(tag)
        while self._singles and self.confirmed + 1 in self._singles:
            self.confirmed += 1
            self._singles.discard(self.confirmed)

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
        await self.conn.close()


class Consumer:
    """Counts deliveries from one queue by scanning frames; acks with ``multiple`` every ``ack_every``.

    With ``no_ack`` the broker forgets a message when it sends it (transient runs). ``on_body``,
    when set, receives each reassembled body (tests use it to check what arrived; the
    measurement leaves it unset so no per-message object is built).
    """

    def __init__(self, conn: Connection, *, no_ack: bool, ack_every: int) -> None:
        self.conn = conn
        self.no_ack = no_ack
        self.ack_every = max(1, ack_every)
        self.delivered = 0
        self.acked = 0
        self.last_tag = 0
        self.error: str | None = None
        self.on_progress: Callable[[], None] = _nothing
        self.on_body: Callable[[bytes], None] | None = None
        self._buf = bytearray()
        self._task: asyncio.Task[None] | None = None

    @classmethod
    async def open(
        cls,
        queue: str,
        *,
        no_ack: bool,
        ack_every: int = 100,
        prefetch: int = 0,
        on_body: Callable[[bytes], None] | None = None,
        **connect: Any,
    ) -> Consumer:
        conn = await Connection.open(**connect)
        if prefetch and not no_ack:
            await conn.basic_qos(min(prefetch, 65535))
        self = cls(conn, no_ack=no_ack, ack_every=ack_every)
        self.on_body = on_body
        await conn.basic_consume(queue, no_ack=no_ack)
        return self.start()

    def start(self) -> Consumer:
        """Start reading deliveries (those read along with ConsumeOk first)."""
        self._buf = self.conn.take_buffer()
        self._task = asyncio.get_running_loop().create_task(self._read())
        return self

    async def stopped(self) -> None:
        """Wait until the reader ends (the connection closed or the broker refused something)."""
        if self._task is not None:
            await asyncio.gather(self._task, return_exceptions=True)

    def ack_now(self) -> None:
        """Acknowledge every delivery so far (the measurement's end)."""
        if not self.no_ack and self.last_tag > self.acked:
            self.conn.writer.write(ack(Connection.CHANNEL, self.last_tag, multiple=True))
            self.acked = self.last_tag

    async def _read(self) -> None:
        buf = self._buf
        reader = self.conn.reader
        writer = self.conn.writer
        unpack_frame = _FRAME.unpack_from
        unpack_key = _U32.unpack_from
        unpack_tag = _U64.unpack_from
        ack_every = self.ack_every
        no_ack = self.no_ack
        body_parts: list[bytes] = []
        remaining = 0
        try:
            while True:
                pos = 0
                n = len(buf)
                delivered = self.delivered
                on_body = self.on_body
                while n - pos >= 7:
                    frame_type, _channel, size = unpack_frame(buf, pos)
                    end = pos + 8 + size
                    if end > n:
                        break
                    if frame_type == FRAME_METHOD:
                        (key,) = unpack_key(buf, pos + 7)
                        if key == _DELIVER_KEY:
                            delivered += 1
                            if not no_ack:
                                # the tag follows the consumer tag (a short string)
                                self.last_tag = unpack_tag(buf, pos + 12 + buf[pos + 11])[0]
                                if delivered % ack_every == 0:
                                    writer.write(ack(Connection.CHANNEL, self.last_tag, multiple=True))
                                    self.acked = self.last_tag
                        elif key in (_CHANNEL_CLOSE_KEY, _CONNECTION_CLOSE_KEY):
                            self.error = str(_closed_error(buf, pos, key))
                    elif on_body is not None:
                        if frame_type == FRAME_HEADER:
                            body_parts = []
                            (remaining,) = unpack_tag(buf, pos + 11)
                            if remaining == 0:
                                on_body(b"")
                        elif frame_type == FRAME_BODY:
                            body_parts.append(bytes(buf[pos + 7 : end - 1]))
                            remaining -= size
                            if remaining <= 0:
                                on_body(b"".join(body_parts))
                    pos = end
                if pos:
                    del buf[:pos]
                    self.delivered = delivered
                    self.on_progress()
                if self.error is not None:
                    break
                data = await reader.read(262144)
                if not data:
                    self.error = self.error or "RabbitMQ closed the connection"
                    break
                buf += data
        except OSError as exc:
            self.error = f"connection to RabbitMQ lost: {exc}"
        self.on_progress()

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
        await self.conn.close()


def _nothing() -> None:
    return None
