"""The queue manager's wire format: frames, the message descriptor, reason codes and their errors.

A frame is ``<u32 length><u8 op><u32 request id><payload>``; ``length`` counts everything after
itself. Most payloads are ``<u32 n><n bytes of JSON arguments><binary tail>``; the tail carries
messages in the encoding of :func:`encode_message`, the same bytes the persistence log stores,
so the server relays a message without ever decoding its body.
"""

from __future__ import annotations

import contextlib
import os
import socket
import struct
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import orjson
from esql.native import compiled

# --- reason codes (modelled on MQ's MQRC values) -------------------------------------------------
RC_NONE = 0
RC_NOT_AUTHORIZED = 2035
RC_UNKNOWN_OBJECT_NAME = 2085
RC_OBJECT_ALREADY_EXISTS = 2100
RC_Q_FULL = 2053
RC_MSG_TOO_BIG_FOR_Q = 2030
RC_PUT_INHIBITED = 2051
RC_GET_INHIBITED = 2016
RC_NO_MSG_AVAILABLE = 2033
RC_BACKED_OUT = 2003
RC_CONNECTION_BROKEN = 2009
RC_DATA_LENGTH_ERROR = 2010
RC_MAX_CONNS_LIMIT_REACHED = 2025
RC_OBJECT_IN_USE = 2042
RC_Q_NOT_EMPTY = 2055
RC_SYNCPOINT_NOT_AVAILABLE = 2072
RC_UNKNOWN_ALIAS_BASE_Q = 2082
RC_FUNCTION_NOT_SUPPORTED = 2298
RC_SELECTOR_SYNTAX_ERROR = 2459
RC_SELECTOR_NOT_SUPPORTED = 2518
RC_TOPIC_STRING_ERROR = 2425
RC_SUBSCRIPTION_NOT_FOUND = 2428
RC_DUPLICATE_SUBSCRIPTION = 2432
RC_FRAME_ERROR = 2196  # a malformed frame or message encoding (2010 stays for oversized frames)
RC_BAD_ARGUMENT = 2046
RC_PERSISTENCE_FAILED = 2102
RC_STREAM_DUPLICATE_FAILED = 2600
RC_UNEXPECTED_ERROR = 2195

REASONS = {
    RC_NOT_AUTHORIZED: "not authorized",
    RC_UNKNOWN_OBJECT_NAME: "unknown object name",
    RC_OBJECT_ALREADY_EXISTS: "object already exists",
    RC_Q_FULL: "queue full",
    RC_MSG_TOO_BIG_FOR_Q: "message too long for queue",
    RC_PUT_INHIBITED: "put inhibited",
    RC_GET_INHIBITED: "get inhibited",
    RC_NO_MSG_AVAILABLE: "no message available",
    RC_CONNECTION_BROKEN: "connection broken",
    RC_DATA_LENGTH_ERROR: "oversized frame",
    RC_MAX_CONNS_LIMIT_REACHED: "connection limit reached",
    RC_Q_NOT_EMPTY: "queue not empty",
    RC_FRAME_ERROR: "malformed frame",
    RC_BAD_ARGUMENT: "bad argument",
    RC_PERSISTENCE_FAILED: "persistence failed",
    RC_STREAM_DUPLICATE_FAILED: "streaming copy failed",
}


class QMError(Exception):
    """A refused request: an MQ-style reason code and a one-line reason."""

    def __init__(self, reason_code: int, reason: str = "") -> None:
        self.reason_code = reason_code
        self.reason = reason or REASONS.get(reason_code, "error")
        super().__init__(f"{self.reason_code}: {self.reason}")


# --- ops ----------------------------------------------------------------------------------------
OP_HELLO = 1
OP_PUT = 2
OP_GET = 3
OP_COMMIT = 4
OP_BACKOUT = 5
OP_PUBLISH = 6
OP_SUBSCRIBE = 7
OP_UNSUBSCRIBE = 8
OP_DEFINE = 9
OP_ALTER = 10
OP_DELETE = 11
OP_INQUIRE = 12
OP_LIST = 13
OP_PURGE = 14
OP_BROWSE_CLOSE = 15
OP_ADMIN = 16
OP_PING = 17
OP_REPLY_OK = 0x80
OP_REPLY_ERR = 0x81

FRAME_HEADER = struct.Struct("<IBI")
HEADER_SIZE = FRAME_HEADER.size
#: Frames larger than this are refused before a byte of their payload is buffered.
DEFAULT_MAX_FRAME = 64 * 1024 * 1024
#: Until HELLO has been answered a connection may send no larger frame: a HELLO is a few hundred
#: bytes, and an unauthenticated peer must not make the queue manager buffer megabytes.
DEFAULT_MAX_HELLO_FRAME = 4096
_U32 = struct.Struct("<I")


class FrameError(Exception):
    """The byte stream is not a sequence of valid frames; the connection must be closed.

    ``oversized`` tells a frame refused for its declared size (reason 2010) from one that is
    malformed (2196).
    """

    def __init__(self, reason: str, offset: int, *, oversized: bool = False) -> None:
        super().__init__(f"{reason} at byte offset {offset}")
        self.reason = reason
        self.offset = offset
        self.oversized = oversized


def no_delay(transport: Any) -> None:
    """Send small frames at once on a TCP transport (Nagle off); Unix sockets need nothing."""
    sock = transport.get_extra_info("socket")
    if sock is not None and sock.family in (socket.AF_INET, socket.AF_INET6):
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


def encode_frame(op: int, rid: int, args: Any = None, tail: bytes | bytearray | memoryview = b"") -> bytes:
    j = orjson.dumps(args) if args is not None else b""
    payload_len = 4 + len(j) + len(tail)
    return b"".join((FRAME_HEADER.pack(5 + payload_len, op, rid), _U32.pack(len(j)), j, tail))


def encoded_arguments(args: Any) -> bytes:
    """A frame's arguments as :func:`encode_frame` writes them (length, then JSON), for
    :func:`frame_with` to reuse in every frame that carries the same ones."""
    j = orjson.dumps(args)
    return _U32.pack(len(j)) + j


def frame_with(op: int, rid: int, arguments: bytes, tail: bytes | bytearray | memoryview = b"") -> bytes:
    """:func:`encode_frame` with its arguments already encoded (:func:`encoded_arguments`)."""
    return b"".join((FRAME_HEADER.pack(5 + len(arguments) + len(tail), op, rid), arguments, tail))


class FrameDecoder:
    """Cuts a byte stream into frames: feed bytes, collect ``(op, rid, args, tail)`` tuples.

    Incremental so a frame split over many reads (or a client that stops mid-frame) costs
    nothing but the buffered bytes; never trusts a length before checking it against the limit.
    """

    def __init__(self, max_frame: int = DEFAULT_MAX_FRAME, limit_context: str = "") -> None:
        self.max_frame = max_frame
        #: Said after the limit in the refusal, e.g. " before authentication".
        self.limit_context = limit_context
        self._buf = bytearray()
        self._consumed = 0  # stream offset of _buf[0], for precise error positions

    @property
    def pending(self) -> int:
        return len(self._buf)

    def feed(self, data: bytes | memoryview) -> list[tuple[int, int, Any, bytes]]:
        buf = self._buf
        buf += data
        # the C cutter takes every complete frame when all is well; on any fault it declines and
        # the Python loop below, which raises the FrameError, goes over the same bytes
        cut = _split_native(buf, self.max_frame) if _split_native is not None else None
        frames, pos = cut if cut is not None else self._split(buf)
        if pos:
            del buf[:pos]
            self._consumed += pos
        return frames

    def _split(self, buf: bytearray) -> tuple[list[tuple[int, int, Any, bytes]], int]:
        """The complete frames at the head of ``buf`` and the offset past them, or a FrameError."""
        frames: list[tuple[int, int, Any, bytes]] = []
        pos = 0
        n = len(buf)
        while n - pos >= 4:
            (length,) = _U32.unpack_from(buf, pos)
            if length > self.max_frame:
                raise FrameError(
                    f"frame of {length} bytes exceeds the {self.max_frame}-byte limit{self.limit_context}",
                    self._consumed + pos,
                    oversized=True,
                )
            if length < 5:
                raise FrameError(
                    f"frame length {length} is shorter than a frame header", self._consumed + pos
                )
            if n - pos - 4 < length:
                break
            _, op, rid = FRAME_HEADER.unpack_from(buf, pos)
            start = pos + HEADER_SIZE
            end = pos + 4 + length
            if start == end:
                frames.append((op, rid, None, b""))
            else:
                # arguments and tail cut straight from the buffer: one copy of the tail, not two
                if end - start < 4:
                    raise FrameError("payload shorter than its argument length", self._consumed + start)
                (jlen,) = _U32.unpack_from(buf, start)
                if jlen > end - start - 4:
                    raise FrameError(
                        f"argument length {jlen} exceeds payload of {end - start - 4}", self._consumed + start
                    )
                args: Any = None
                if jlen:
                    try:
                        args = orjson.loads(buf[start + 4 : start + 4 + jlen])
                    except orjson.JSONDecodeError as exc:
                        raise FrameError(
                            f"arguments are not JSON ({exc})", self._consumed + start + 4
                        ) from None
                frames.append((op, rid, args, bytes(buf[start + 4 + jlen : end])))
            pos = end
        return frames, pos


_Split = Callable[[bytearray, int], "tuple[list[tuple[int, int, Any, bytes]], int] | None"]


def _split_native_loaded() -> _Split | None:
    """The frame cutter in C (``_frames_native.c``), when that module was built and
    ``FLOWBROKER_PURE_PYTHON`` is not set; it parses arguments with the same ``orjson.loads``."""
    _frames_native = compiled("flowbroker.qm._frames_native")
    if _frames_native is None:
        return None
    _frames_native.configure(orjson.loads)
    split: _Split = _frames_native.split
    return split


_split_native = _split_native_loaded()


# --- the message descriptor ---------------------------------------------------------------------
PERSISTENCE_NOT_PERSISTENT = 0
PERSISTENCE_PERSISTENT = 1
PERSISTENCE_AS_Q_DEF = 2
EXPIRY_UNLIMITED = -1
FORMAT_NONE = ""
FORMAT_STRING = "MQSTR"
FORMAT_RFH2 = "MQHRF2"

#: msg_id, correl_id, group_id, persistence, priority, expiry (tenths of a second, -1 unlimited),
#: put_time, backout_count, encoding, coded_char_set_id, then the lengths of reply_to_q,
#: reply_to_q_mgr, format, properties (JSON) and body.
MD_STRUCT = struct.Struct("<24s24s24sBbqdIiiHHHII")
MD_SIZE = MD_STRUCT.size
BACKOUT_OFFSET = struct.calcsize("<24s24s24sBbqd")
PERSISTENCE_OFFSET = 72
PRIORITY_OFFSET = 73
EXPIRY_OFFSET = 74
PUT_TIME_OFFSET = 82
_BACKOUT = struct.Struct("<I")
_PUT_TIME = struct.Struct("<d")
_PRIORITY = struct.Struct("<b")
_EXPIRY = struct.Struct("<q")
ZERO_ID = b"\x00" * 24


@dataclass
class MessageDescriptor:
    """The MQMD fields a message carries (DESIGN.md 'The message')."""

    msg_id: bytes = ZERO_ID
    correl_id: bytes = ZERO_ID
    persistence: int = PERSISTENCE_AS_Q_DEF
    priority: int = -1  # -1: the queue's default priority
    expiry: int = EXPIRY_UNLIMITED
    reply_to_q: str = ""
    reply_to_q_mgr: str = ""
    format: str = FORMAT_NONE
    encoding: int = 546
    coded_char_set_id: int = 1208
    put_time: float = 0.0
    backout_count: int = 0
    group_id: bytes = ZERO_ID


@dataclass
class Message:
    """A message as an application sees it: descriptor, properties and body.

    ``raw`` is the encoded form it arrived in (empty for a message made here): a flow that
    forwards the message untouched puts these bytes again (:func:`relay_encoding`) instead of
    building a descriptor and encoding it anew.
    """

    md: MessageDescriptor
    properties: dict[str, Any] = field(default_factory=dict)
    body: bytes = b""
    raw: bytes = field(default=b"", repr=False, compare=False)


def pad_id(value: bytes | str | None) -> bytes:
    """An id of exactly 24 bytes: text is UTF-8 encoded, short ids are padded with NULs."""
    if value is None:
        return ZERO_ID
    if type(value) is bytes and len(value) == 24:
        return value  # the usual case: an id as it was got or made
    raw = value.encode() if isinstance(value, str) else bytes(value)
    if len(raw) > 24:
        raise QMError(RC_BAD_ARGUMENT, f"id is {len(raw)} bytes, at most 24 allowed")
    return raw.ljust(24, b"\x00")


def optional_id(value: Any) -> bytes | None:
    """An id sent as a hex string, padded to 24 bytes; None when absent."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise QMError(RC_BAD_ARGUMENT, "ids travel as hex strings")
    try:
        return pad_id(bytes.fromhex(value))
    except ValueError:
        raise QMError(RC_BAD_ARGUMENT, f"id {value[:60]!r} is not hexadecimal") from None


def encode_message(
    md: MessageDescriptor, properties: dict[str, Any] | None, body: bytes, msg_id: bytes | None = None
) -> bytes:
    """The wire and log form of a message; ``msg_id`` overrides the descriptor's without copying it."""
    rq = md.reply_to_q.encode()
    rqm = md.reply_to_q_mgr.encode()
    fmt = md.format.encode()
    props = orjson.dumps(properties) if properties else b""
    if not 0 <= len(rq) < 65536 or len(rqm) > 65535 or len(fmt) > 65535:
        raise QMError(RC_BAD_ARGUMENT, "descriptor string field longer than 65535 bytes")
    if not -1 <= md.priority <= 9:
        raise QMError(RC_BAD_ARGUMENT, f"priority {md.priority} outside 0..9")
    if md.persistence not in (0, 1, 2):
        raise QMError(RC_BAD_ARGUMENT, f"persistence {md.persistence} is not 0, 1 or 2")
    return b"".join(
        (
            MD_STRUCT.pack(
                msg_id if msg_id is not None else pad_id(md.msg_id),
                pad_id(md.correl_id),
                pad_id(md.group_id),
                md.persistence,
                md.priority,
                md.expiry,
                md.put_time,
                md.backout_count,
                md.encoding,
                md.coded_char_set_id,
                len(rq),
                len(rqm),
                len(fmt),
                len(props),
                len(body),
            ),
            rq,
            rqm,
            fmt,
            props,
            body,
        )
    )


def message_length(buf: bytes | memoryview, offset: int = 0) -> int:
    """Total encoded length of the message starting at ``offset``; validates the header."""
    if len(buf) - offset < MD_SIZE:
        raise QMError(RC_FRAME_ERROR, f"message header truncated at byte offset {offset}")
    f = MD_STRUCT.unpack_from(buf, offset)
    total = MD_SIZE + f[10] + f[11] + f[12] + f[13] + f[14]
    if len(buf) - offset < total:
        raise QMError(RC_FRAME_ERROR, f"message at byte offset {offset} is truncated")
    return total


def decode_message(raw: bytes) -> Message:
    f = MD_STRUCT.unpack_from(raw, 0)
    pos = MD_SIZE
    rq = raw[pos : pos + f[10]].decode()
    pos += f[10]
    rqm = raw[pos : pos + f[11]].decode()
    pos += f[11]
    fmt = raw[pos : pos + f[12]].decode()
    pos += f[12]
    props = orjson.loads(raw[pos : pos + f[13]]) if f[13] else {}
    pos += f[13]
    body = raw[pos : pos + f[14]]
    md = MessageDescriptor(
        msg_id=f[0],
        correl_id=f[1],
        group_id=f[2],
        persistence=f[3],
        priority=f[4],
        expiry=f[5],
        put_time=f[6],
        backout_count=f[7],
        encoding=f[8],
        coded_char_set_id=f[9],
        reply_to_q=rq,
        reply_to_q_mgr=rqm,
        format=fmt,
    )
    return Message(md, props, body, raw)


def relay_encoding(
    raw: bytes,
    md: MessageDescriptor,
    msg_id: bytes,
    *,
    correl_id: bytes | None = None,
    persistence: int | None = None,
    format: str | None = None,
    properties: dict[str, Any] | None = None,
    body: bytes | None = None,
) -> bytes:
    """The encoded message ``raw`` to put again, as a put of ``md`` would encode it.

    Its fixed descriptor fields are packed anew from ``md`` (which a flow may have changed since
    the get) with ``msg_id``, ``correl_id`` and ``persistence`` when given, backout count 0 and no
    put time (the queue manager stamps the put); its reply queue is the bytes that arrived, and so
    are its format, properties and body unless ``format``, ``properties`` or ``body`` say others.
    """
    f = MD_STRUCT.unpack_from(raw, 0)
    if persistence is None:
        persistence = md.persistence
    if not -1 <= md.priority <= 9:
        raise QMError(RC_BAD_ARGUMENT, f"priority {md.priority} outside 0..9")
    if persistence not in (0, 1, 2):
        raise QMError(RC_BAD_ARGUMENT, f"persistence {persistence} is not 0, 1 or 2")
    fmt_len, props_len, body_len = f[12], f[13], f[14]
    rest: bytes | memoryview = memoryview(raw)[MD_SIZE:]
    if format is not None or properties is not None or body is not None:
        fmt_at = f[10] + f[11]
        props_at = fmt_at + fmt_len
        body_at = props_at + props_len
        fmt = format.encode() if format is not None else rest[fmt_at:props_at]
        if len(fmt) > 65535:
            raise QMError(RC_BAD_ARGUMENT, "descriptor string field longer than 65535 bytes")
        props = (
            (orjson.dumps(properties) if properties else b"")
            if properties is not None
            else rest[props_at:body_at]
        )
        tail = rest[body_at:] if body is None else body
        parts: tuple[bytes | memoryview, ...] = (rest[:fmt_at], fmt, props, tail)
        fmt_len, props_len, body_len = len(fmt), len(props), len(tail)
    else:
        parts = (rest,)
    head = MD_STRUCT.pack(
        msg_id,
        pad_id(md.correl_id if correl_id is None else correl_id),
        pad_id(md.group_id),
        persistence,
        md.priority,
        md.expiry,
        0.0,
        0,
        md.encoding,
        md.coded_char_set_id,
        f[10],
        f[11],
        fmt_len,
        props_len,
        body_len,
    )
    return b"".join((head, *parts))


def split_messages(tail: bytes) -> list[bytes]:
    """The concatenated encoded messages of a frame tail, each as its own bytes."""
    n = len(tail)
    if n and message_length(tail, 0) == n:
        return [tail]  # one message, the usual case: no copy
    out: list[bytes] = []
    pos = 0
    while pos < n:
        size = message_length(tail, pos)
        out.append(tail[pos : pos + size])
        pos += size
    return out


def patch_backout(raw: bytes, count: int) -> bytes:
    return raw[:BACKOUT_OFFSET] + _BACKOUT.pack(count) + raw[BACKOUT_OFFSET + 4 :]


class IdFactory:
    """Unique 24-byte message ids: a per-process random prefix, the time and a counter."""

    def __init__(self) -> None:
        self._prefix = b"AMQ" + os.urandom(9)
        self._seq = 0
        self._pack = struct.Struct(">IQ").pack

    def next(self) -> bytes:
        self._seq += 1
        return self._prefix + self._pack(int(time.time()), self._seq)
