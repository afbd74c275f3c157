"""Local queues: priority order with FIFO inside a priority, msgId/correlId indexes, spill files.

A queue keeps at most ``memory_buffer`` bytes of messages in memory; beyond that, new messages
of a priority go to that priority's spill file and are read back in order when the in-memory
part drains (seed 003: deep queues must not thrash). Everything that walks a spill file (browse,
checkpoint snapshots, the age of the oldest message) streams it in bounded chunks, and once a
queue is read by msgId or correlId its indexes cover the spilled messages too (id → file offset),
so no request ever holds a whole spill file in memory or scans one per get.
"""

from __future__ import annotations

import bisect
import heapq
import itertools
import os
import struct
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any, BinaryIO

from flowbroker.qm.protocol import (
    BACKOUT_OFFSET,
    EXPIRY_OFFSET,
    MD_STRUCT,
    PERSISTENCE_OFFSET,
    PRIORITY_OFFSET,
    PUT_TIME_OFFSET,
    RC_BAD_ARGUMENT,
    ZERO_ID,
    QMError,
)

_SPILL_REC = struct.Struct("<QQdI")  # seq, place, expire_at, message length
UNSPILL_CHUNK = 1024 * 1024
#: A walk over a spill file starts with a small read and doubles it up to UNSPILL_CHUNK: a browse
#: of one message reads little, a long walk few times.
FIRST_READ = 4096
#: (priority, place, spill file generation, offset of the next spill record): where a browse
#: cursor stands. The offset lets the next step resume in the spill file without searching it.
BrowsePosition = tuple[int, int, int, int]


@dataclass
class QueueAttributes:
    """The attributes of a local queue, named after MQ's (MAXDEPTH, MAXMSGL, DEFPSIST, …)."""

    max_depth: int = 100_000
    max_msg_length: int = 4 * 1024 * 1024
    default_persistence: int = 0
    default_priority: int = 0
    put_inhibited: bool = False
    get_inhibited: bool = False
    backout_threshold: int = 0
    backout_requeue_q: str = ""
    stream_queue: str = ""  # a queue name, or "topic:<topic string>"
    stream_qos: str = "BESTEF"  # BESTEF or MUSTDUP
    memory_buffer: int = 16 * 1024 * 1024
    description: str = ""

    @classmethod
    def names(cls) -> set[str]:
        return {f.name for f in fields(cls)}

    def update(self, attrs: dict[str, Any]) -> None:
        known = {f.name: f.type for f in fields(self)}
        for key, value in attrs.items():
            if key not in known:
                raise QMError(RC_BAD_ARGUMENT, f"unknown queue attribute {key!r}")
            current = getattr(self, key)
            if isinstance(current, bool):
                if not isinstance(value, bool):
                    raise QMError(RC_BAD_ARGUMENT, f"attribute {key} must be true or false")
            elif isinstance(current, int):
                if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                    raise QMError(RC_BAD_ARGUMENT, f"attribute {key} must be a non-negative integer")
            elif not isinstance(value, str):
                raise QMError(RC_BAD_ARGUMENT, f"attribute {key} must be a string")
            setattr(self, key, value)
        if self.default_persistence not in (0, 1):
            raise QMError(RC_BAD_ARGUMENT, "attribute default_persistence must be 0 or 1")
        if self.default_priority > 9:
            raise QMError(RC_BAD_ARGUMENT, "attribute default_priority must be 0..9")
        if self.stream_qos not in ("BESTEF", "MUSTDUP"):
            raise QMError(RC_BAD_ARGUMENT, "attribute stream_qos must be BESTEF or MUSTDUP")
        if self.max_depth < 1 or self.max_msg_length < 1:
            raise QMError(RC_BAD_ARGUMENT, "max_depth and max_msg_length must be at least 1")

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


class QMsg:
    """A message held by the queue manager: its encoded bytes plus the fields it routes on."""

    __slots__ = ("seq", "place", "raw", "priority", "persistent", "expire_at", "gone")

    def __init__(self, seq: int, raw: bytes, expire_at: float = 0.0) -> None:
        self.seq = seq  # identity in the log
        self.place = 0  # position in its queue, given when it becomes visible there
        self.raw = raw
        self.priority = raw[PRIORITY_OFFSET]
        self.persistent = raw[PERSISTENCE_OFFSET] == 1
        self.expire_at = expire_at
        self.gone = False

    @staticmethod
    def expiry_of(raw: bytes) -> float:
        (expiry,) = struct.unpack_from("<q", raw, EXPIRY_OFFSET)
        if expiry < 0:
            return 0.0
        (put_time,) = struct.unpack_from("<d", raw, PUT_TIME_OFFSET)
        return put_time + expiry / 10.0

    @property
    def msg_id(self) -> bytes:
        return self.raw[:24]

    @property
    def correl_id(self) -> bytes:
        return self.raw[24:48]

    @property
    def put_time(self) -> float:
        return float(struct.unpack_from("<d", self.raw, PUT_TIME_OFFSET)[0])


#: (file offset, seq, place, expire_at, raw message) of one spill record.
SpillRecord = tuple[int, int, int, float, bytes]


def _spill_records(read: Callable[[int, int], bytes], start: int, end: int) -> Iterator[SpillRecord]:
    """The records of a spill file between two offsets, read in chunks of at most UNSPILL_CHUNK
    (or one record, when a single message is larger)."""
    pos = start
    chunk = FIRST_READ
    while pos < end:
        data = read(pos, min(chunk, end - pos))
        at = 0
        while len(data) - at >= _SPILL_REC.size:
            seq, place, expire_at, size = _SPILL_REC.unpack_from(data, at)
            total = _SPILL_REC.size + size
            if len(data) - at < total:
                break
            yield pos + at, seq, place, expire_at, data[at + _SPILL_REC.size : at + total]
            at += total
        if at == 0:
            if len(data) < _SPILL_REC.size:
                raise OSError(f"spill file ends inside a record header at offset {pos}")
            (size,) = struct.unpack_from("<I", data, _SPILL_REC.size - 4)
            whole = read(pos, _SPILL_REC.size + size)
            if len(whole) < _SPILL_REC.size + size:
                raise OSError(f"spill file ends inside the record at offset {pos}")
            seq, place, expire_at, _ = _SPILL_REC.unpack_from(whole, 0)
            yield pos, seq, place, expire_at, whole[_SPILL_REC.size :]
            at = len(whole)
        pos += at
        chunk = min(chunk * 2, UNSPILL_CHUNK)


class _Level:
    """One priority: an in-memory deque sorted by place, then a spill file of later messages.

    Every place in the deque is lower than every place in the spill file, and the spill file
    is in place order: a level reads as the deque followed by the unread part of the file.
    """

    __slots__ = (
        "mem",
        "spill_path",
        "spill_write",
        "spill_read",
        "spill_count",
        "spill_gone",
        "fh",
        "generation",
        "bytes_read",
    )

    def __init__(self, spill_path: Path) -> None:
        self.mem: deque[QMsg] = deque()
        self.spill_path = spill_path
        self.spill_write = 0
        self.spill_read = 0
        self.spill_count = 0
        #: seq → file offset of unread spill records taken by id (in a unit of work, or gone):
        #: skipped when read back, and given back their place when a backout restores them.
        self.spill_gone: dict[int, int] = {}
        self.fh: BinaryIO | None = None
        #: Counts spill files made for this level, so a browse position in a removed file is
        #: never taken for a position in its successor.
        self.generation = 0
        self.bytes_read = 0

    def read(self, start: int, size: int) -> bytes:
        assert self.fh is not None
        self.fh.flush()  # writes are buffered; reads go through the descriptor
        data = os.pread(self.fh.fileno(), size, start)
        self.bytes_read += len(data)
        return data

    def records(self, start: int) -> Iterator[SpillRecord]:
        if self.fh is None:
            return iter(())
        return _spill_records(self.read, start, self.spill_write)

    def record_at(self, offset: int) -> SpillRecord:
        """The one spill record at ``offset`` (a get by id reads just the message it takes)."""
        head = self.read(offset, _SPILL_REC.size)
        if len(head) < _SPILL_REC.size:
            raise OSError(f"spill file ends inside a record header at offset {offset}")
        seq, place, expire_at, size = _SPILL_REC.unpack(head)
        raw = self.read(offset + _SPILL_REC.size, size)
        if len(raw) < size:
            raise OSError(f"spill file ends inside the record at offset {offset}")
        return offset, seq, place, expire_at, raw

    def patch(self, offset: int, data: bytes) -> None:
        assert self.fh is not None
        self.fh.flush()
        os.pwrite(self.fh.fileno(), data, offset)

    def reset(self) -> None:
        self.spill_write = self.spill_read = 0
        self.spill_count = 0
        self.spill_gone.clear()
        if self.fh is not None:
            self.fh.close()
            self.fh = None
        try:
            os.unlink(self.spill_path)
        except FileNotFoundError:
            pass


_IdIndex = dict[bytes, dict[int, Any]]


class LocalQueue:
    """One local queue: its attributes, its messages and the applications waiting on it."""

    def __init__(self, name: str, attrs: QueueAttributes, spill_dir: Path) -> None:
        self.name = name
        self.attrs = attrs
        self.spill_dir = spill_dir
        self.levels = [_Level(spill_dir / f"{name.encode().hex()}.p{p}") for p in range(10)]
        #: id → seq → message, for the in-memory part.
        self.by_msg_id: _IdIndex = {}
        self.by_correl_id: _IdIndex = {}
        #: id → seq → (priority, file offset), for the spilled part.
        self.spilled_by_msg_id: _IdIndex = {}
        self.spilled_by_correl_id: _IdIndex = {}
        #: Built on the first get by msgId or correlId, then maintained on every change.
        self.indexed = False
        #: Set once a message with an expiry arrives: the periodic sweep looks only at these.
        self.has_expiry = False
        self.available = 0
        self.locked = 0  # got under a unit of work not yet committed
        self.uncommitted_puts = 0
        self.mem_bytes = 0
        self.next_place = 0
        self.waiters: deque[Any] = deque()
        self.puts = 0
        self.gets = 0

    # --- depth ------------------------------------------------------------------------------
    @property
    def depth(self) -> int:
        """Current depth as MQ counts it: available, plus got or put in open units of work."""
        return self.available + self.locked + self.uncommitted_puts

    def full(self, extra: int = 1) -> bool:
        return self.depth + extra > self.attrs.max_depth

    # --- adding -----------------------------------------------------------------------------
    def enqueue(self, m: QMsg) -> None:
        # The place is given now, not at put time: a unit of work's puts join at commit, and
        # persistent puts once logged, so places stay sorted in every deque.
        self.next_place += 1
        m.place = self.next_place
        if m.expire_at:
            self.has_expiry = True
        level = self.levels[m.priority]
        size = len(m.raw)
        if level.spill_count or self.mem_bytes + size > self.attrs.memory_buffer:
            self._spill(level, m)
        else:
            level.mem.append(m)
            self.mem_bytes += size
            self._index(m)
        self.available += 1
        self.puts += 1

    def _index(self, m: QMsg) -> None:
        if self.indexed:
            _add(self.by_msg_id, self.by_correl_id, m.raw, m.seq, m)

    def _unindex(self, m: QMsg) -> None:
        if self.indexed:
            _drop(self.by_msg_id, self.by_correl_id, m.raw, m.seq)

    def _spill(self, level: _Level, m: QMsg) -> None:
        if level.fh is None:
            self.spill_dir.mkdir(parents=True, exist_ok=True)
            level.fh = open(level.spill_path, "w+b")
            level.spill_write = level.spill_read = 0
            level.generation += 1
        if self.indexed:
            _add(
                self.spilled_by_msg_id,
                self.spilled_by_correl_id,
                m.raw,
                m.seq,
                (m.priority, level.spill_write),
            )
        level.fh.write(_SPILL_REC.pack(m.seq, m.place, m.expire_at, len(m.raw)))
        level.fh.write(m.raw)
        level.spill_write += _SPILL_REC.size + len(m.raw)
        level.spill_count += 1

    def _unspill(self, level: _Level) -> None:
        """Read the next chunk of a spill file back into memory, in order."""
        # Small chunks: a read that stays in the CPU's cache costs less per message than one
        # that fills the whole buffer, and getters drain a chunk long before the next is needed.
        budget = min(max(self.attrs.memory_buffer - self.mem_bytes, 256 * 1024), UNSPILL_CHUNK)
        data = level.read(level.spill_read, min(budget, level.spill_write - level.spill_read))
        pos = 0
        loaded = 0
        while level.spill_count and len(data) - pos >= _SPILL_REC.size:
            seq, place, expire_at, size = _SPILL_REC.unpack_from(data, pos)
            if len(data) - pos - _SPILL_REC.size < size:
                if loaded == 0:
                    # One message larger than the chunk: read exactly it.
                    data = data[:pos] + level.read(level.spill_read + pos, _SPILL_REC.size + size)
                    continue
                break
            raw = data[pos + _SPILL_REC.size : pos + _SPILL_REC.size + size]
            pos += _SPILL_REC.size + size
            level.spill_count -= 1
            if level.spill_gone.pop(seq, None) is not None:
                continue
            if self.indexed:
                _drop(self.spilled_by_msg_id, self.spilled_by_correl_id, raw, seq)
            m = QMsg(seq, raw, expire_at)
            m.place = place
            level.mem.append(m)
            self.mem_bytes += size
            self._index(m)
            loaded += 1
        level.spill_read += pos
        if not level.spill_count:
            level.reset()

    # --- taking -----------------------------------------------------------------------------
    def take(self, now: float, expired: list[QMsg]) -> QMsg | None:
        """Remove and return the first message in priority/FIFO order; collect expired ones."""
        if not self.available:
            return None
        for p in range(9, -1, -1):
            level = self.levels[p]
            while True:
                mem = level.mem
                if not mem:
                    if level.spill_count:
                        self._unspill(level)
                        continue
                    break
                m = mem.popleft()
                if m.gone:
                    continue
                self.mem_bytes -= len(m.raw)
                self._unindex(m)
                self.available -= 1
                if m.expire_at and m.expire_at <= now:
                    expired.append(m)
                    if not self.available:
                        return None
                    continue
                return m
        return None

    def take_matching(
        self, msg_id: bytes | None, correl_id: bytes | None, now: float, expired: list[QMsg]
    ) -> QMsg | None:
        """Remove and return the first message matching the ids (constant time in memory)."""
        if not self.indexed:
            self._build_index()
        if msg_id is not None:
            bucket = self.by_msg_id.get(msg_id)
        else:
            bucket = self.by_correl_id.get(correl_id or ZERO_ID)
        candidates: list[QMsg] = []
        if bucket:
            candidates = [
                m for m in bucket.values() if correl_id is None or msg_id is None or m.correl_id == correl_id
            ]
        best: QMsg | None = None
        for m in candidates:
            if m.expire_at and m.expire_at <= now:
                self._remove_in_place(m)
                expired.append(m)
                continue
            if (
                best is None
                or m.priority > best.priority
                or (m.priority == best.priority and m.place < best.place)
            ):
                best = m
        # Within a priority the in-memory part precedes the spill file, so only spilled
        # messages of a higher priority than the best in-memory match can come first.
        spilled = self._take_spilled(
            msg_id, correl_id, best.priority if best is not None else -1, now, expired
        )
        if spilled is not None:
            return spilled
        if best is not None:
            self._remove_in_place(best)
        return best

    def _take_spilled(
        self, msg_id: bytes | None, correl_id: bytes | None, above: int, now: float, expired: list[QMsg]
    ) -> QMsg | None:
        """The first spilled match above priority ``above``, found through the spilled-id index."""
        if msg_id is not None:
            bucket = self.spilled_by_msg_id.get(msg_id)
        else:
            bucket = self.spilled_by_correl_id.get(correl_id or ZERO_ID)
        if not bucket:
            return None
        order = sorted(
            ((-p, offset, seq) for seq, (p, offset) in bucket.items() if p > above),
        )
        for neg_p, offset, seq in order:
            level = self.levels[-neg_p]
            _, _s, place, expire_at, raw = level.record_at(offset)
            if msg_id is not None and correl_id is not None and raw[24:48] != correl_id:
                continue
            level.spill_gone[seq] = offset
            _drop(self.spilled_by_msg_id, self.spilled_by_correl_id, raw, seq)
            self.available -= 1
            m = QMsg(seq, raw, expire_at)
            m.place = place
            if expire_at and expire_at <= now:
                expired.append(m)
                continue
            return m
        return None

    def expire(self, now: float) -> list[QMsg]:
        """Remove the expired messages held in memory (spilled ones go when read back)."""
        out: list[QMsg] = []
        if not self.has_expiry:
            return out
        for level in self.levels:
            for m in level.mem:
                if not m.gone and m.expire_at and m.expire_at <= now:
                    self._remove_in_place(m)
                    out.append(m)
        return out

    def _build_index(self) -> None:
        """Index the messages, once: queues never read by id pay nothing for it."""
        self.indexed = True
        for p, level in enumerate(self.levels):
            for m in level.mem:
                if not m.gone:
                    self._index(m)
            if level.spill_count:
                for offset, seq, _place, _exp, raw in level.records(level.spill_read):
                    if seq not in level.spill_gone:
                        _add(self.spilled_by_msg_id, self.spilled_by_correl_id, raw, seq, (p, offset))

    def _remove_in_place(self, m: QMsg) -> None:
        m.gone = True  # lazily dropped from its deque when it reaches the head
        self.mem_bytes -= len(m.raw)
        self._unindex(m)
        self.available -= 1

    def restore(self, m: QMsg) -> None:
        """Put a backed-out message back in its place within its priority."""
        level = self.levels[m.priority]
        offset = level.spill_gone.pop(m.seq, None)
        if offset is not None:
            # Taken by id from the unread part of the spill file: the record is still there,
            # between its neighbours, so it takes up its place again with its new backout count.
            level.patch(offset + _SPILL_REC.size + BACKOUT_OFFSET, m.raw[BACKOUT_OFFSET : BACKOUT_OFFSET + 4])
            if self.indexed:
                _add(self.spilled_by_msg_id, self.spilled_by_correl_id, m.raw, m.seq, (m.priority, offset))
            self.available += 1
            return
        m.gone = False
        mem = level.mem
        if not mem or mem[-1].place < m.place:
            mem.append(m)
        else:
            i = bisect.bisect_left(_PlaceView(mem), m.place)
            if i < len(mem) and mem[i] is m:
                pass  # still physically there (taken by id): unmarking was enough
            else:
                mem.insert(i, m)
        self.mem_bytes += len(m.raw)
        self._index(m)
        self.available += 1

    # --- browsing ---------------------------------------------------------------------------
    def browse(
        self, position: BrowsePosition | None, limit: int, now: float
    ) -> tuple[list[QMsg], BrowsePosition | None]:
        """Up to ``limit`` messages after ``position`` in queue order, without removing them."""
        out: list[QMsg] = []
        if limit < 1:
            return out, position
        for m, after in self._walk(position, now):
            out.append(m)
            position = after
            if len(out) >= limit:
                break
        return out, position

    def _walk(self, position: BrowsePosition | None, now: float) -> Iterator[tuple[QMsg, BrowsePosition]]:
        start_p, after_place, generation, next_offset = position if position is not None else (9, -1, 0, -1)
        for p in range(start_p, -1, -1):
            level = self.levels[p]
            after = after_place if p == start_p else -1
            mem = level.mem
            i = bisect.bisect_right(_PlaceView(mem), after) if after >= 0 else 0
            for m in itertools.islice(mem, i, None):
                if not m.gone and not (m.expire_at and m.expire_at <= now):
                    yield m, (p, m.place, 0, -1)
            if not level.spill_count:
                continue
            start = level.spill_read
            if p == start_p and generation == level.generation and next_offset > start:
                start = next_offset
            for offset, seq, place, expire_at, raw in level.records(start):
                if place <= after or seq in level.spill_gone or (expire_at and expire_at <= now):
                    continue
                m = QMsg(seq, raw, expire_at)
                m.place = place
                yield m, (p, place, level.generation, offset + _SPILL_REC.size + len(raw))

    # --- whole-queue operations -------------------------------------------------------------
    def snapshot(self) -> QueueSnapshot:
        """The available messages as of now, readable later from another thread."""
        snap = QueueSnapshot(self.name)
        for p in range(9, -1, -1):
            level = self.levels[p]
            mem = [(m.place, m.seq, m.raw) for m in level.mem if not m.gone]
            spill: tuple[int, int, int, frozenset[int]] | None = None
            if level.spill_count and level.fh is not None:
                level.fh.flush()
                fd = os.dup(level.fh.fileno())
                spill = (fd, level.spill_read, level.spill_write, frozenset(level.spill_gone))
            if mem or spill:
                snap.levels.append((p, mem, spill))
        return snap

    def clear(self) -> int:
        """Remove every available message (purge); returns how many there were."""
        removed = self.available
        for level in self.levels:
            level.mem.clear()
            if level.spill_count or level.fh is not None:
                level.reset()
        for index in (self.by_msg_id, self.by_correl_id, self.spilled_by_msg_id, self.spilled_by_correl_id):
            index.clear()
        self.available = 0
        self.mem_bytes = 0
        return removed

    def oldest_age(self, now: float) -> float | None:
        """Age of the oldest message at the head of any priority, spilled or in memory."""
        oldest: float | None = None
        for level in self.levels:
            head: float | None = None
            for m in level.mem:
                if not m.gone:
                    head = m.put_time
                    break
            offset = level.spill_read
            while head is None and offset < level.spill_write:
                _o, seq, _pl, _e, raw = level.record_at(offset)
                offset += _SPILL_REC.size + len(raw)
                if seq not in level.spill_gone:
                    head = float(struct.unpack_from("<d", raw, PUT_TIME_OFFSET)[0])
            if head is not None:
                oldest = head if oldest is None else min(oldest, head)
        return None if oldest is None else max(0.0, now - oldest)

    def inquire(self, open_handles: int = 0) -> dict[str, Any]:
        now = time.time()
        info: dict[str, Any] = {"name": self.name, "type": "local"}
        info.update(self.attrs.as_dict())
        info.update(
            current_depth=self.depth,
            available=self.available,
            uncommitted=self.locked + self.uncommitted_puts,
            open_handles=open_handles,
            oldest_message_age=self.oldest_age(now),
            memory_bytes=self.mem_bytes,
            spilled_messages=sum(level.spill_count - len(level.spill_gone) for level in self.levels),
            spill_bytes_read=sum(level.bytes_read for level in self.levels),
            enqueued=self.puts,
            dequeued=self.gets,
        )
        return info

    def drop_spill_files(self) -> None:
        for level in self.levels:
            level.reset()


class QueueSnapshot:
    """A queue's available messages at one moment, for a checkpoint written on another thread.

    The in-memory part is held by reference (bounded by the queue's memory buffer); the spilled
    part is a byte range of each spill file, read through a duplicated descriptor so that the
    loop may go on appending to, draining or removing the file meanwhile.
    """

    def __init__(self, name: str) -> None:
        self.name = name
        #: (priority, [(place, seq, raw)], (fd, start, end, gone seqs) | None), highest priority first.
        self.levels: list[
            tuple[int, list[tuple[int, int, bytes]], tuple[int, int, int, frozenset[int]] | None]
        ] = []

    def messages(self) -> Iterator[tuple[int, int, int, bytes]]:
        """(priority, place, seq, raw) in queue order: priority descending, then place."""
        for p, mem, spill in self.levels:
            for place, seq, raw in mem:
                yield p, place, seq, raw
            if spill is not None:
                fd, start, end, gone = spill

                def read(offset: int, size: int, fd: int = fd) -> bytes:
                    return os.pread(fd, size, offset)

                for _o, seq, place, _e, raw in _spill_records(read, start, end):
                    if seq not in gone:
                        yield p, place, seq, raw

    def merged_with(self, held: list[tuple[int, int, int, bytes]]) -> Iterator[tuple[int, int, int, bytes]]:
        """The messages plus ``held`` ones (got in open units of work), all in queue order."""
        if not held:
            return self.messages()
        return heapq.merge(self.messages(), sorted(held, key=_queue_order), key=_queue_order)

    def close(self) -> None:
        for _p, _mem, spill in self.levels:
            if spill is not None:
                os.close(spill[0])
        self.levels = []


def _queue_order(item: tuple[int, int, int, bytes]) -> tuple[int, int]:
    return -item[0], item[1]


def _add(by_msg_id: _IdIndex, by_correl_id: _IdIndex, raw: bytes, seq: int, entry: Any) -> None:
    key = raw[:24]
    bucket = by_msg_id.get(key)
    if bucket is None:
        by_msg_id[key] = {seq: entry}
    else:
        bucket[seq] = entry
    key = raw[24:48]
    if key != ZERO_ID:
        bucket = by_correl_id.get(key)
        if bucket is None:
            by_correl_id[key] = {seq: entry}
        else:
            bucket[seq] = entry


def _drop(by_msg_id: _IdIndex, by_correl_id: _IdIndex, raw: bytes, seq: int) -> None:
    key = raw[:24]
    bucket = by_msg_id.get(key)
    if bucket is not None:
        bucket.pop(seq, None)
        if not bucket:
            del by_msg_id[key]
    key = raw[24:48]
    if key != ZERO_ID:
        bucket = by_correl_id.get(key)
        if bucket is not None:
            bucket.pop(seq, None)
            if not bucket:
                del by_correl_id[key]


class _PlaceView:
    """Presents a deque of messages as the sequence of their places, for bisect."""

    __slots__ = ("_d",)

    def __init__(self, d: deque[QMsg]) -> None:
        self._d = d

    def __len__(self) -> int:
        return len(self._d)

    def __getitem__(self, i: int) -> int:
        return self._d[i].place


assert MD_STRUCT.size > PUT_TIME_OFFSET


def unstage(staged: list[tuple[LocalQueue, QMsg]]) -> None:
    """Drop staged messages: they stop counting toward their queues' depth."""
    for q, _m in staged:
        q.uncommitted_puts -= 1
