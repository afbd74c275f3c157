"""A lean load driver for the queue manager's own protocol: one message per frame, pipelined.

The counterpart of :mod:`flowbroker_bench.amqpwire` on our side of `flowbroker bench
qm-vs-rabbitmq`: put and get frames are encoded once into a block and sent many at a time; only
each put's message id (so every message keeps a unique MQ msgId) is patched before a write, and
replies are counted by walking frame headers, never decoding a reply's JSON unless it is an error.

Persistent traffic runs in units of work: puts under syncpoint without a reply, a commit after
every ``unit`` of them; gets under syncpoint, a commit after every ``unit`` received.
"""

from __future__ import annotations

import asyncio
import os
import socket
import struct
import time
from collections.abc import Callable
from typing import Any

import orjson
from flowbroker.qm.protocol import (
    MD_SIZE,
    OP_COMMIT,
    OP_GET,
    OP_HELLO,
    OP_PUT,
    OP_REPLY_ERR,
    OP_REPLY_OK,
    MessageDescriptor,
    encode_frame,
    encode_message,
)

#: Request ids by kind: replies are classified by their request id alone.
RID_PUT = 1
RID_COMMIT = 2
RID_GET = 3
RID_HELLO = 4

_LEN = struct.Struct("<I")
_HEAD = struct.Struct("<IBI")  # length, op, request id
_ID_SEQ = struct.Struct(">IQ")  # the last 12 bytes of a msgId: seconds, then a counter


class QmWireError(OSError):
    """The queue manager refused a request or closed the connection (message says why)."""


def _error_text(frame: bytes | bytearray, pos: int, end: int) -> str:
    """``<reason code> <reason>`` of an error reply frame at ``pos``."""
    (jlen,) = _LEN.unpack_from(frame, pos + 9)
    try:
        args = orjson.loads(bytes(frame[pos + 13 : pos + 13 + jlen]))
        return f"{args.get('rc')} {args.get('reason')}"
    except (orjson.JSONDecodeError, AttributeError):
        return "malformed error reply"


class Wire:
    """A TCP connection to the queue manager after HELLO; ``read`` delivers raw chunks."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer

    @classmethod
    async def open(cls, host: str, port: int, user: str, password: str, timeout: float = 10.0) -> Wire:
        try:
            reader, writer = await asyncio.wait_for(asyncio.open_connection(host, port), timeout)
        except (OSError, TimeoutError) as exc:
            raise QmWireError(f"cannot reach the queue manager at {host}:{port}: {exc}") from None
        sock = writer.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        writer.write(encode_frame(OP_HELLO, RID_HELLO, {"user": user, "password": password}))
        buf = bytearray()
        while len(buf) < 4 or len(buf) < 4 + _LEN.unpack_from(buf, 0)[0]:
            data = await asyncio.wait_for(reader.read(65536), timeout)
            if not data:
                writer.close()
                raise QmWireError("the queue manager closed the connection during HELLO")
            buf += data
        (length,) = _LEN.unpack_from(buf, 0)
        if buf[4] != OP_REPLY_OK:
            writer.close()
            raise QmWireError(f"HELLO refused: {_error_text(buf, 0, 4 + length)}")
        if len(buf) > 4 + length:
            writer.close()
            raise QmWireError("the queue manager sent more than the HELLO reply")
        return cls(reader, writer)

    async def close(self) -> None:
        self.writer.close()
        try:
            await asyncio.wait_for(self.writer.wait_closed(), 2)
        except (OSError, TimeoutError):
            pass


class Putter:
    """Puts copies of one message, one per frame; ``write(n)`` sends ``n`` of them in one write.

    Non-persistent puts are each answered (their reply is counted, not waited for); persistent
    puts run under syncpoint without replies and every ``unit`` of them are committed, a commit's
    reply confirming its whole unit, as a broker's confirm with ``multiple`` does.
    """

    def __init__(
        self, wire: Wire, queue: str, body: bytes, *, persistent: bool, unit: int, max_batch: int
    ) -> None:
        self.wire = wire
        self.persistent = persistent
        self.unit = max(1, unit)
        max_batch = max(self.unit, max_batch // self.unit * self.unit)
        self.max_batch = max_batch
        md = MessageDescriptor(persistence=1 if persistent else 0)
        args: dict[str, Any] = {"q": queue, "sync": True, "noreply": True} if persistent else {"q": queue}
        prefix = b"FBQ" + os.urandom(9)  # this connection's msgId prefix; the rest is patched
        put = encode_frame(OP_PUT, RID_PUT, args, encode_message(md, None, body, prefix + bytes(12)))
        commit = encode_frame(OP_COMMIT, RID_COMMIT) if persistent else b""
        (jlen,) = _LEN.unpack_from(put, 9)
        id_at = 13 + jlen + 12  # the counter part of the message's msgId within the put frame
        parts: list[bytes] = []
        self._id_offsets: list[int] = []
        offset = 0
        for i in range(max_batch):
            self._id_offsets.append(offset + id_at)
            parts.append(put)
            offset += len(put)
            if persistent and (i + 1) % self.unit == 0:
                parts.append(commit)
                offset += len(commit)
        self._block = bytearray(b"".join(parts))
        self._view = memoryview(self._block)
        # where the block may be cut: after the k-th put (and its commit, if one follows it)
        self._ends = [
            self._id_offsets[k]
            - id_at
            + len(put)
            + (len(commit) if persistent and (k + 1) % self.unit == 0 else 0)
            for k in range(max_batch)
        ]
        self._seq = 0
        self.published = 0
        self.confirmed = 0
        self.replies = 0
        self.error: str | None = None
        self.on_progress: Callable[[], None] = _nothing
        self._task: asyncio.Task[None] | None = None

    @classmethod
    async def open(
        cls,
        host: str,
        port: int,
        user: str,
        password: str,
        queue: str,
        body: bytes,
        *,
        persistent: bool,
        unit: int = 100,
        max_batch: int = 1000,
    ) -> Putter:
        wire = await Wire.open(host, port, user, password)
        self = cls(wire, queue, body, persistent=persistent, unit=unit, max_batch=max_batch)
        self._task = asyncio.get_running_loop().create_task(self._read())
        return self

    @property
    def unconfirmed(self) -> int:
        return self.published - self.confirmed if self.persistent else 0

    def write(self, n: int) -> None:
        """Send ``n`` puts (persistent: a whole number of units) in as few writes as the block allows."""
        if self.error is not None:
            raise QmWireError(self.error)
        if self.persistent and n % self.unit:
            raise ValueError(f"persistent puts go in whole units of {self.unit}, not {n}")
        pack = _ID_SEQ.pack_into
        block = self._block
        now = int(time.time())
        while n > 0:
            k = min(n, self.max_batch)
            seq = self._seq
            for offset in self._id_offsets[:k]:
                seq += 1
                pack(block, offset, now, seq)
            self._seq = seq
            self.wire.writer.write(bytes(self._view[: self._ends[k - 1]]))
            self.published += k
            n -= k

    async def drain(self) -> None:
        await self.wire.writer.drain()

    async def _read(self) -> None:
        buf = bytearray()
        reader = self.wire.reader
        unpack = _HEAD.unpack_from
        unit = self.unit
        try:
            while True:
                data = await reader.read(262144)
                if not data:
                    self.error = self.error or "the queue manager closed the connection"
                    break
                buf += data
                pos = 0
                n = len(buf)
                while n - pos >= 9:
                    length, op, rid = unpack(buf, pos)
                    end = pos + 4 + length
                    if end > n:
                        break
                    if op == OP_REPLY_OK:
                        if rid == RID_COMMIT:
                            self.confirmed += unit
                        else:
                            self.replies += 1
                    elif op == OP_REPLY_ERR:
                        self.error = f"put refused: {_error_text(buf, pos, end)}"
                    pos = end
                del buf[:pos]
                self.on_progress()
                if self.error is not None:
                    break
        except OSError as exc:
            self.error = f"connection to the queue manager lost: {exc}"
        self.on_progress()

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
        await self.wire.close()


class Getter:
    """Keeps up to ``prefetch`` one-message get-waits outstanding and counts the messages they return.

    Under syncpoint (persistent runs) a commit follows every ``unit`` messages received, and the
    messages received but not yet committed count against ``prefetch`` as a broker's unacked
    deliveries count against its prefetch. ``on_message``, when set, receives each encoded
    message (tests use it; the measurement leaves it unset).
    """

    def __init__(
        self, wire: Wire, queue: str, *, syncpoint: bool, unit: int, prefetch: int, wait: float
    ) -> None:
        self.wire = wire
        self.syncpoint = syncpoint
        self.unit = max(1, unit)
        self.prefetch = max(1, prefetch)
        get = encode_frame(OP_GET, RID_GET, {"q": queue, "wait": wait, "sync": syncpoint, "max": 1})
        self._get_size = len(get)
        self._gets = memoryview(get * self.prefetch)
        self._commit = encode_frame(OP_COMMIT, RID_COMMIT)
        # top up once this many gets can be sent, so requests leave in blocks, not one by one
        self._refill_at = max(1, min(self.unit, self.prefetch // 2))
        self.outstanding = 0
        self.uncommitted = 0
        self.delivered = 0
        self.commits_sent = 0
        self.commits = 0  # answered
        self.error: str | None = None
        self.on_progress: Callable[[], None] = _nothing
        self.on_message: Callable[[bytes], None] | None = None
        self._task: asyncio.Task[None] | None = None

    @classmethod
    async def open(
        cls,
        host: str,
        port: int,
        user: str,
        password: str,
        queue: str,
        *,
        syncpoint: bool,
        unit: int = 100,
        prefetch: int = 1000,
        wait: float = 1.0,
        on_message: Callable[[bytes], None] | None = None,
    ) -> Getter:
        wire = await Wire.open(host, port, user, password)
        self = cls(wire, queue, syncpoint=syncpoint, unit=unit, prefetch=prefetch, wait=wait)
        self.on_message = on_message
        self._top_up(b"")
        self._task = asyncio.get_running_loop().create_task(self._read())
        return self

    def _top_up(self, before: bytes) -> None:
        room = self.prefetch - self.outstanding - self.uncommitted
        if room >= self._refill_at:
            self.wire.writer.write(before + bytes(self._gets[: room * self._get_size]))
            self.outstanding += room
        elif before:
            self.wire.writer.write(before)

    def commit_now(self) -> None:
        """Commit what was received so far (the measurement's end)."""
        if self.syncpoint and self.uncommitted:
            self.wire.writer.write(self._commit)
            self.commits_sent += 1
            self.uncommitted = 0

    async def _read(self) -> None:
        buf = bytearray()
        reader = self.wire.reader
        unpack = _HEAD.unpack_from
        unpack_len = _LEN.unpack_from
        syncpoint = self.syncpoint
        unit = self.unit
        try:
            while True:
                data = await reader.read(262144)
                if not data:
                    self.error = self.error or "the queue manager closed the connection"
                    break
                buf += data
                pos = 0
                n = len(buf)
                got = answered = 0
                commit = False
                on_message = self.on_message
                while n - pos >= 9:
                    length, op, rid = unpack(buf, pos)
                    end = pos + 4 + length
                    if end > n:
                        break
                    if op == OP_REPLY_OK:
                        if rid == RID_GET:
                            answered += 1
                            # a get's reply holds {"n": k} then the message, or nothing after a wait
                            tail = pos + 13 + unpack_len(buf, pos + 9)[0]
                            if end - tail >= MD_SIZE:
                                got += 1
                                if on_message is not None:
                                    on_message(bytes(buf[tail:end]))
                                if syncpoint and (self.uncommitted + got) % unit == 0:
                                    commit = True
                        elif rid == RID_COMMIT:
                            self.commits += 1
                    elif op == OP_REPLY_ERR:
                        self.error = f"{'commit' if rid == RID_COMMIT else 'get'} refused: {_error_text(buf, pos, end)}"
                    pos = end
                del buf[:pos]
                self.outstanding -= answered
                self.delivered += got
                if syncpoint:
                    self.uncommitted += got
                if commit:
                    # everything received so far goes in this unit of work: the queue manager
                    # handles a connection's requests in order
                    self.uncommitted = 0
                    self.commits_sent += 1
                    self._top_up(self._commit)
                else:
                    self._top_up(b"")
                self.on_progress()
                if self.error is not None:
                    break
        except OSError as exc:
            self.error = f"connection to the queue manager lost: {exc}"
        self.on_progress()

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
        await self.wire.close()


def _nothing() -> None:
    return None


__all__ = ["Getter", "Putter", "QmWireError", "Wire"]
