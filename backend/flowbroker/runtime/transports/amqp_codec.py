"""The RabbitMQ transport's own decoding of the deliveries it consumes.

pika turns every frame it reads into a frame object, hands it through its connection's callback
registry, the channel's content assembler and its blocking connection's event queue before a
consumer's callback sees the message: a third of a passthrough flow thread's time when profiled.
:class:`DeliveryReader` takes over the bytes pika reads from the socket and decodes the deliveries
of one channel's consumers itself (``basic.deliver`` method frame, content header, body frames),
straight into the consumer's queue of arrivals; every other frame (replies to methods, heartbeats,
``basic.return``, cancellations, other channels) is decoded and dispatched by pika as before.

The values are pika's: a :class:`pika.spec.Basic.Deliver` and a :class:`pika.spec.BasicProperties`
with the same fields, strings decoded as UTF-8 where they are valid UTF-8 (else left as bytes),
header tables with every AMQP field type. One difference, on purpose: a ``f`` (float) or ``d``
(double) field is a float here, where pika 1.4 truncates it to an integer.

Bytes that are not AMQP as RabbitMQ writes it — a frame that does not end with its end octet, a
content header or body frame where none is due, properties or a table running past their frame,
a field type AMQP does not have, a body longer than its header declared — raise
:class:`FrameError` naming what was wrong and where. pika then aborts the connection (as it does for
a frame it cannot decode): RabbitMQ returns every unacknowledged delivery to its queue, so nothing
is lost, and the flow thread reconnects with back-off.
"""

from __future__ import annotations

import struct
from collections import deque
from collections.abc import Callable
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

from pika import frame as pika_frame
from pika.spec import Basic, BasicProperties

__all__ = [
    "DeliveryReader",
    "FrameError",
    "decode_deliver",
    "decode_get_ok",
    "decode_properties",
    "decode_table",
]


class FrameError(ValueError):
    """Bytes from RabbitMQ that are not the AMQP expected there; the message says what and where."""


_FRAME_HEAD = struct.Struct(">BHI")  # type, channel, payload size
_CONTENT_HEAD = struct.Struct(">HHQ")  # class, weight, body size
_U8 = struct.Struct(">B")
_I8 = struct.Struct(">b")
_I16 = struct.Struct(">h")
_U16 = struct.Struct(">H")
_I32 = struct.Struct(">i")
_U32 = struct.Struct(">I")
_I64 = struct.Struct(">q")
_U64 = struct.Struct(">Q")
_F32 = struct.Struct(">f")
_F64 = struct.Struct(">d")
_DECIMAL = struct.Struct(">Bi")
_DELIVER_ID = struct.pack(">HH", 60, 60)
_GET_OK_ID = struct.pack(">HH", 60, 71)
_FRAME_END = 0xCE
_METHOD, _HEADER, _BODY = 1, 2, 3
_BASIC = 60
#: Tables nested deeper than this are refused (a hostile header cannot exhaust the stack).
MOST_DEPTH = 64

# the basic class's property flags, in the order their values follow the flags
_CONTENT_TYPE = 1 << 15
_CONTENT_ENCODING = 1 << 14
_HEADERS = 1 << 13
_DELIVERY_MODE = 1 << 12
_PRIORITY = 1 << 11
_CORRELATION_ID = 1 << 10
_REPLY_TO = 1 << 9
_EXPIRATION = 1 << 8
_MESSAGE_ID = 1 << 7
_TIMESTAMP = 1 << 6
_TYPE = 1 << 5
_USER_ID = 1 << 4
_APP_ID = 1 << 3
_CLUSTER_ID = 1 << 2


def _text(raw: bytes) -> str | bytes:
    """A short or long string as pika gives it: text where it is UTF-8, else the bytes."""
    try:
        return raw.decode()
    except UnicodeDecodeError:
        return raw


def _short_string(data: bytes, offset: int, end: int, what: str) -> tuple[str | bytes, int]:
    if offset >= end:
        raise FrameError(f"{what}: the short string's length is past the end ({offset} of {end} bytes)")
    stop = offset + 1 + data[offset]
    if stop > end:
        raise FrameError(f"{what}: a short string of {data[offset]} bytes runs past the end ({end} bytes)")
    return _text(data[offset + 1 : stop]), stop


def _need(offset: int, size: int, end: int, what: str) -> None:
    if offset + size > end:
        raise FrameError(f"{what}: {size} bytes needed at {offset}, only {max(end - offset, 0)} left")


def decode_table(data: bytes, offset: int, end: int, what: str = "table", depth: int = 0) -> tuple[dict, int]:
    """An AMQP field table at ``offset`` (its 4-byte size first), within ``data[:end]``; returns the
    table and the offset after it."""
    _need(offset, 4, end, what)
    size = _U32.unpack_from(data, offset)[0]
    offset += 4
    limit = offset + size
    if limit > end:
        raise FrameError(f"{what}: a table of {size} bytes runs past the end ({end - offset} bytes left)")
    table: dict[Any, Any] = {}
    while offset < limit:
        key, offset = _short_string(data, offset, limit, what)
        try:
            table[key], offset = _value(data, offset, limit, depth)
        except FrameError as exc:  # said where: the field's name first
            raise FrameError(f"{what}: field {key!r}{exc}") from None
    return table, offset


def _value(data: bytes, offset: int, end: int, depth: int) -> tuple[Any, int]:
    """A field value at ``offset``; an error says what was wrong after a colon (the caller says where)."""
    what = ""
    if offset >= end:
        raise FrameError(f"{what}: no field type before the end ({end} bytes)")
    kind = data[offset]
    offset += 1
    if kind == 0x53:  # S: long string
        _need(offset, 4, end, what)
        size = _U32.unpack_from(data, offset)[0]
        offset += 4
        _need(offset, size, end, what)
        return _text(data[offset : offset + size]), offset + size
    if kind == 0x49:  # I: signed 32
        _need(offset, 4, end, what)
        return _I32.unpack_from(data, offset)[0], offset + 4
    if kind == 0x74:  # t: boolean
        _need(offset, 1, end, what)
        return data[offset] != 0, offset + 1
    if kind == 0x6C or kind == 0x4C:  # l, L: signed 64 (both signed, as RabbitMQ writes them)
        _need(offset, 8, end, what)
        return _I64.unpack_from(data, offset)[0], offset + 8
    if kind == 0x78:  # x: byte array
        _need(offset, 4, end, what)
        size = _U32.unpack_from(data, offset)[0]
        offset += 4
        _need(offset, size, end, what)
        return data[offset : offset + size], offset + size
    if kind == 0x46:  # F: nested table
        if depth >= MOST_DEPTH:
            raise FrameError(f"{what}: tables nested deeper than {MOST_DEPTH}")
        return decode_table(data, offset, end, "", depth + 1)
    if kind == 0x41:  # A: array
        if depth >= MOST_DEPTH:
            raise FrameError(f"{what}: arrays nested deeper than {MOST_DEPTH}")
        _need(offset, 4, end, what)
        size = _U32.unpack_from(data, offset)[0]
        offset += 4
        limit = offset + size
        if limit > end:
            raise FrameError(
                f"{what}: an array of {size} bytes runs past the end ({end - offset} bytes left)"
            )
        items: list[Any] = []
        while offset < limit:
            try:
                item, offset = _value(data, offset, limit, depth + 1)
            except FrameError as exc:
                raise FrameError(f"[{len(items)}]{exc}") from None
            items.append(item)
        return items, offset
    if kind == 0x56:  # V: void
        return None, offset
    fixed = _FIXED.get(kind)
    if fixed is not None:
        form, convert = fixed
        _need(offset, form.size, end, what)
        value = form.unpack_from(data, offset)[0]
        return (convert(value) if convert else value), offset + form.size
    if kind == 0x44:  # D: decimal
        _need(offset, 5, end, what)
        places, raw = _DECIMAL.unpack_from(data, offset)
        return Decimal(raw) * (Decimal(10) ** -places), offset + 5
    if kind == 0x54:  # T: timestamp, seconds
        _need(offset, 8, end, what)
        seconds = _U64.unpack_from(data, offset)[0]
        try:
            stamp: Any = datetime.fromtimestamp(seconds, UTC)
        except (OverflowError, OSError, ValueError):
            stamp = seconds  # beyond what a datetime holds: the seconds as sent
        return stamp, offset + 8
    raise FrameError(f"{what}: unknown field type {bytes((kind,))!r} at {offset - 1}")


_FIXED: dict[int, tuple[struct.Struct, Any]] = {
    0x62: (_I8, None),  # b
    0x42: (_U8, None),  # B
    0x55: (_I16, None),  # U
    0x73: (_I16, None),  # s
    0x75: (_U16, None),  # u
    0x69: (_U32, None),  # i
    0x66: (_F32, None),  # f
    0x64: (_F64, None),  # d
}


def decode_properties(data: bytes, offset: int, end: int) -> BasicProperties:
    """The basic class's properties at ``offset`` (their flags first), filling ``data[offset:end]``."""
    flags = 0
    shift = 0
    while True:
        _need(offset, 2, end, "content header: property flags")
        word = _U16.unpack_from(data, offset)[0]
        offset += 2
        flags |= word << shift
        if not word & 1:
            break
        shift += 16
    values: dict[str, Any] = dict.fromkeys(_NAMES)
    if flags & _CONTENT_TYPE:
        values["content_type"], offset = _short_string(data, offset, end, "content header: content_type")
    if flags & _CONTENT_ENCODING:
        values["content_encoding"], offset = _short_string(
            data, offset, end, "content header: content_encoding"
        )
    if flags & _HEADERS:
        values["headers"], offset = decode_table(data, offset, end, "content header: headers")
    if flags & _DELIVERY_MODE:
        _need(offset, 1, end, "content header: delivery_mode")
        values["delivery_mode"] = data[offset]
        offset += 1
    if flags & _PRIORITY:
        _need(offset, 1, end, "content header: priority")
        values["priority"] = data[offset]
        offset += 1
    if flags & _CORRELATION_ID:
        values["correlation_id"], offset = _short_string(data, offset, end, "content header: correlation_id")
    if flags & _REPLY_TO:
        values["reply_to"], offset = _short_string(data, offset, end, "content header: reply_to")
    if flags & _EXPIRATION:
        values["expiration"], offset = _short_string(data, offset, end, "content header: expiration")
    if flags & _MESSAGE_ID:
        values["message_id"], offset = _short_string(data, offset, end, "content header: message_id")
    if flags & _TIMESTAMP:
        _need(offset, 8, end, "content header: timestamp")
        values["timestamp"] = _U64.unpack_from(data, offset)[0]
        offset += 8
    if flags & _TYPE:
        values["type"], offset = _short_string(data, offset, end, "content header: type")
    if flags & _USER_ID:
        values["user_id"], offset = _short_string(data, offset, end, "content header: user_id")
    if flags & _APP_ID:
        values["app_id"], offset = _short_string(data, offset, end, "content header: app_id")
    if flags & _CLUSTER_ID:
        values["cluster_id"], offset = _short_string(data, offset, end, "content header: cluster_id")
    if offset != end:
        raise FrameError(f"content header: {end - offset} bytes after the properties")
    props = BasicProperties.__new__(BasicProperties)
    props.__dict__ = values
    return props


_NAMES = tuple(BasicProperties().__dict__)


def decode_deliver(data: bytes, offset: int, end: int) -> Basic.Deliver:
    """``basic.deliver``'s arguments at ``offset`` (after its class and method ids)."""
    what = "basic.deliver"
    tag, offset = _short_string(data, offset, end, "basic.deliver: consumer_tag")
    _need(offset, 9, end, what)
    delivery_tag = _U64.unpack_from(data, offset)[0]
    redelivered = data[offset + 8] & 1 != 0
    exchange, offset = _short_string(data, offset + 9, end, "basic.deliver: exchange")
    key, offset = _short_string(data, offset, end, "basic.deliver: routing_key")
    if offset != end:
        raise FrameError(f"{what}: {end - offset} bytes after its arguments")
    method = Basic.Deliver.__new__(Basic.Deliver)
    method.__dict__ = {
        "consumer_tag": tag,
        "delivery_tag": delivery_tag,
        "redelivered": redelivered,
        "exchange": exchange,
        "routing_key": key,
    }
    return method


def decode_get_ok(data: bytes, offset: int, end: int) -> Basic.GetOk:
    """``basic.get-ok``'s arguments at ``offset`` (after its class and method ids)."""
    what = "basic.get-ok"
    _need(offset, 9, end, what)
    delivery_tag = _U64.unpack_from(data, offset)[0]
    redelivered = data[offset + 8] & 1 != 0
    exchange, offset = _short_string(data, offset + 9, end, "basic.get-ok: exchange")
    key, offset = _short_string(data, offset, end, "basic.get-ok: routing_key")
    _need(offset, 4, end, what)
    count = _U32.unpack_from(data, offset)[0]
    if offset + 4 != end:
        raise FrameError(f"{what}: {end - offset - 4} bytes after its arguments")
    method = Basic.GetOk.__new__(Basic.GetOk)
    method.__dict__ = {
        "delivery_tag": delivery_tag,
        "redelivered": redelivered,
        "exchange": exchange,
        "routing_key": key,
        "message_count": count,
    }
    return method


Delivery = tuple[Basic.Deliver, BasicProperties, bytes]


class DeliveryReader:
    """Reads the bytes a pika connection receives, decoding the deliveries of one channel's
    registered consumers itself (each appended to its consumer's deque as ``(method, properties,
    body)`` the moment its last frame is read) and handing every other frame to pika.

    Installed over the connection's ``_on_data_available`` (pika's own frame loop, which it
    replaces: pika's copied the rest of its buffer after every frame). A consumer is registered
    under its tag before ``basic.consume`` is sent, so its first delivery is already read here.
    """

    def __init__(self, impl: Any, channel: int, wake: Callable[[], None] | None = None) -> None:
        self._impl = impl
        #: Called after bytes that completed a delivery (ends the connection's wait for events).
        self._wake = wake
        self._delivered = False
        #: The channel whose deliveries are read here.
        self.channel = channel
        #: Consumer tag → the deque its deliveries go to.
        self.consumers: dict[str, deque[Delivery]] = {}
        self._rest = b""
        self._need = 0
        # a delivery whose content is being read: its method, target, properties, body so far
        self._method: Basic.Deliver | None = None
        self._target: deque[Delivery] | None = None
        self._props: BasicProperties | None = None
        self._size = 0
        self._parts: list[bytes] = []
        self._read = 0
        self.failure: FrameError | None = None
        #: The largest frame the connection negotiated (0: not known, not checked).
        self.frame_max = int(getattr(getattr(impl, "params", None), "frame_max", 0) or 0)
        impl._on_data_available = self.data_received

    def data_received(self, data: bytes) -> None:
        if self.failure is not None:
            raise self.failure
        buf = self._rest + data if self._rest else data
        total = len(buf)
        if total < self._need:
            self._rest = buf
            return
        impl = self._impl
        channel = self.channel
        pos = 0
        need = 0
        ours = 0
        try:
            while True:
                if total - pos < 8:
                    need = 8
                    break
                kind, number, size = _FRAME_HEAD.unpack_from(buf, pos)
                if self.frame_max and size + 8 > self.frame_max:
                    raise FrameError(
                        f"a frame of type {kind} on channel {number} of {size + 8} bytes, over the "
                        f"negotiated frame_max of {self.frame_max}"
                    )
                end = pos + 7 + size
                if end >= total:
                    need = end + 1 - pos
                    break
                if buf[end] != _FRAME_END:
                    raise FrameError(
                        f"frame of type {kind} on channel {number} ({size} bytes) does not end with 0xCE"
                    )
                if number == channel:
                    if self._method is not None:
                        self._content(kind, buf, pos + 7, end)
                        pos = end + 1
                        ours += 1
                        continue
                    if kind == _METHOD and buf[pos + 7 : pos + 11] == _DELIVER_ID:
                        method = decode_deliver(buf, pos + 11, end)
                        target = self.consumers.get(method.consumer_tag)  # type: ignore[arg-type]
                        if target is not None:
                            self._method, self._target = method, target
                            pos = end + 1
                            ours += 1
                            continue
                # anything else is pika's
                consumed, value = pika_frame.decode_frame(buf[pos : end + 1])
                pos = end + 1
                if value is not None:
                    impl._process_frame(value)
        except FrameError as exc:
            self.failure = FrameError(f"malformed AMQP data from RabbitMQ: {exc}")
            raise self.failure from None
        finally:
            # what was read is counted, what was not is kept (also when pika's handling of a
            # frame raised: the frames after it are not lost with it)
            impl.bytes_received += pos
            impl.frames_received += ours
            self._rest = buf[pos:] if pos < total else b""
            self._need = need
            if self._delivered:
                self._delivered = False
                if self._wake is not None:
                    self._wake()

    def _content(self, kind: int, buf: bytes, start: int, end: int) -> None:
        """A content header or body frame of the delivery being read."""
        method = self._method
        if self._props is None:
            if kind != _HEADER:
                raise FrameError(
                    f"a frame of type {kind} where the content header of a basic.deliver was due"
                )
            if end - start < 14:
                raise FrameError(f"a content header of {end - start} bytes (at least 14 expected)")
            class_id, _weight, size = _CONTENT_HEAD.unpack_from(buf, start)
            if class_id != _BASIC:
                raise FrameError(f"a content header of class {class_id} for a basic.deliver")
            self._props = decode_properties(buf, start + 12, end)
            self._size = size
            if size == 0:
                self._deliver(b"")
            return
        if kind != _BODY:
            raise FrameError(
                f"a frame of type {kind} where a body frame of a basic.deliver was due "
                f"({self._read} of {self._size} bytes read, delivery tag {method.delivery_tag})"  # type: ignore[union-attr]
            )
        chunk = buf[start:end]
        self._read += len(chunk)
        if self._read > self._size:
            raise FrameError(
                f"a body of {self._read} bytes or more where the content header declared {self._size}"
            )
        if self._read == self._size:
            self._deliver(b"".join((*self._parts, chunk)) if self._parts else chunk)
        else:
            self._parts.append(chunk)

    def _deliver(self, body: bytes) -> None:
        self._target.append((self._method, self._props, body))  # type: ignore[union-attr, arg-type]
        self._delivered = True
        self._method = self._target = self._props = None
        self._parts = []
        self._read = self._size = 0
