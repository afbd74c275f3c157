"""Local queues: priority order with FIFO inside a priority, msgId/correlId indexes, spill segments.

A queue keeps at most ``memory_buffer`` bytes of messages in memory; beyond that, new messages
of a priority go to that priority's spill file and are read back in order when the in-memory
part drains (seed 003: deep queues must not thrash). The indexes cover the in-memory part in
constant time; a get by id that misses them scans the spill files.
"""

from __future__ import annotations

import bisect
import os
import struct
import time
from collections import deque
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any, BinaryIO

from flowbroker.qm.protocol import (
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
_HEAD = struct.Struct("<24s24s")
UNSPILL_CHUNK = 1024 * 1024


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

    __slots__ = (
        "seq",
        "place",
        "raw",
        "priority",
        "persistent",
        "expire_at",
        "gone",
        "in_mem",
    )

    def __init__(self, seq: int, raw: bytes, expire_at: float = 0.0) -> None:
        self.seq = seq  # identity in the log
        self.place = 0  # position in its queue, given when it becomes visible there
        self.raw = raw
        self.priority = raw[PRIORITY_OFFSET]
        self.persistent = raw[PERSISTENCE_OFFSET] == 1
        self.expire_at = expire_at
        self.gone = False
        self.in_mem = True

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


class _Level:
    """One priority: an in-memory deque sorted by place, then a spill file of later messages."""

    __slots__ = ("mem", "spill_path", "spill_write", "spill_read", "spill_count", "spill_gone", "fh")

    def __init__(self, spill_path: Path) -> None:
        self.mem: deque[QMsg] = deque()
        self.spill_path = spill_path
        self.spill_write = 0
        self.spill_read = 0
        self.spill_count = 0
        self.spill_gone: set[int] = set()
        self.fh: BinaryIO | None = None

    def read(self, start: int, size: int) -> bytes:
        assert self.fh is not None
        self.fh.flush()  # writes are buffered; reads go through the descriptor
        return os.pread(self.fh.fileno(), size, start)

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


class LocalQueue:
    """One local queue: its attributes, its messages and the applications waiting on it."""

    def __init__(self, name: str, attrs: QueueAttributes, spill_dir: Path) -> None:
        self.name = name
        self.attrs = attrs
        self.spill_dir = spill_dir
        self.levels = [_Level(spill_dir / f"{name.encode().hex()}.p{p}") for p in range(10)]
        self.by_msg_id: dict[bytes, dict[int, QMsg]] = {}
        self.by_correl_id: dict[bytes, dict[int, QMsg]] = {}
        #: Built on the first get by msgId or correlId, then maintained on every change.
        self.indexed = False
        #: Set once a message with an expiry arrives: the periodic sweep looks only at these.
        self.has_expiry = False
        self.available = 0
        self.locked = 0  # got under a unit of work not yet committed
        self.uncommitted_puts = 0
        self.mem_bytes = 0
        self.next_place = 0
        self.handles: set[int] = set()
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
        if not self.indexed:
            return
        bucket = self.by_msg_id.get(m.msg_id)
        if bucket is None:
            self.by_msg_id[m.msg_id] = {m.seq: m}
        else:
            bucket[m.seq] = m
        if m.correl_id != ZERO_ID:
            bucket = self.by_correl_id.get(m.correl_id)
            if bucket is None:
                self.by_correl_id[m.correl_id] = {m.seq: m}
            else:
                bucket[m.seq] = m

    def _unindex(self, m: QMsg) -> None:
        if not self.indexed:
            return
        bucket = self.by_msg_id.get(m.msg_id)
        if bucket is not None:
            bucket.pop(m.seq, None)
            if not bucket:
                del self.by_msg_id[m.msg_id]
        if m.correl_id != ZERO_ID:
            bucket = self.by_correl_id.get(m.correl_id)
            if bucket is not None:
                bucket.pop(m.seq, None)
                if not bucket:
                    del self.by_correl_id[m.correl_id]

    def _spill(self, level: _Level, m: QMsg) -> None:
        if level.fh is None:
            self.spill_dir.mkdir(parents=True, exist_ok=True)
            level.fh = open(level.spill_path, "w+b")
            level.spill_write = level.spill_read = 0
        level.fh.write(_SPILL_REC.pack(m.seq, m.place, m.expire_at, len(m.raw)))
        level.fh.write(m.raw)
        level.spill_write += _SPILL_REC.size + len(m.raw)
        level.spill_count += 1
        m.in_mem = False

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
            if seq in level.spill_gone:
                level.spill_gone.discard(seq)
                continue
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
                m.in_mem = False
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
        above = best.priority if best is not None else -1
        if any(level.spill_count for level in self.levels[above + 1 :]):
            spilled = self._scan_spill(msg_id, correl_id, now, above)
            if spilled is not None:
                return spilled
        if best is not None:
            self._remove_in_place(best)
        return best

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
        """Index the in-memory messages, once: queues never read by id pay nothing for it."""
        self.indexed = True
        for level in self.levels:
            for m in level.mem:
                if not m.gone:
                    self._index(m)

    def _remove_in_place(self, m: QMsg) -> None:
        m.gone = True  # lazily dropped from its deque when it reaches the head
        self.mem_bytes -= len(m.raw)
        self._unindex(m)
        self.available -= 1

    def _scan_spill(
        self, msg_id: bytes | None, correl_id: bytes | None, now: float, above: int
    ) -> QMsg | None:
        for p in range(9, above, -1):
            level = self.levels[p]
            if not level.spill_count:
                continue
            data = level.read(level.spill_read, level.spill_write - level.spill_read)
            pos = 0
            while len(data) - pos >= _SPILL_REC.size:
                seq, place, expire_at, size = _SPILL_REC.unpack_from(data, pos)
                raw = data[pos + _SPILL_REC.size : pos + _SPILL_REC.size + size]
                pos += _SPILL_REC.size + size
                if seq in level.spill_gone or (expire_at and expire_at <= now):
                    continue
                mid, cid = _HEAD.unpack_from(raw, 0)
                if (msg_id is None or mid == msg_id) and (correl_id is None or cid == correl_id):
                    level.spill_gone.add(seq)
                    self.available -= 1
                    m = QMsg(seq, raw, expire_at)
                    m.place = place
                    m.in_mem = False
                    return m
        return None

    def restore(self, m: QMsg) -> None:
        """Put a backed-out message back in its place within its priority."""
        level = self.levels[m.priority]
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
        m.in_mem = True
        self.mem_bytes += len(m.raw)
        self._index(m)
        self.available += 1

    # --- browsing ---------------------------------------------------------------------------
    def browse_after(self, position: tuple[int, int] | None, now: float) -> QMsg | None:
        """The next message after ``(priority, place)`` in queue order, without removing it."""
        start_p, after_place = position if position is not None else (9, -1)
        for p in range(start_p, -1, -1):
            level = self.levels[p]
            mem = level.mem
            i = bisect.bisect_right(_PlaceView(mem), after_place) if p == start_p else 0
            while i < len(mem):
                m = mem[i]
                if not m.gone and not (m.expire_at and m.expire_at <= now):
                    return m
                i += 1
            if level.spill_count:
                found = self._browse_spill(level, after_place if p == start_p else -1, now)
                if found is not None:
                    return found
        return None

    def _browse_spill(self, level: _Level, after_place: int, now: float) -> QMsg | None:
        data = level.read(level.spill_read, level.spill_write - level.spill_read)
        pos = 0
        while len(data) - pos >= _SPILL_REC.size:
            seq, place, expire_at, size = _SPILL_REC.unpack_from(data, pos)
            raw = data[pos + _SPILL_REC.size : pos + _SPILL_REC.size + size]
            pos += _SPILL_REC.size + size
            if place > after_place and seq not in level.spill_gone and not (expire_at and expire_at <= now):
                m = QMsg(seq, raw, expire_at)
                m.place = place
                m.in_mem = False
                return m
        return None

    def iter_all(self) -> list[QMsg]:
        """Every available message, spilled ones included (for checkpoints and purge)."""
        out: list[QMsg] = []
        for level in self.levels:
            out.extend(m for m in level.mem if not m.gone)
            if level.spill_count:
                data = level.read(level.spill_read, level.spill_write - level.spill_read)
                pos = 0
                while len(data) - pos >= _SPILL_REC.size:
                    seq, place, expire_at, size = _SPILL_REC.unpack_from(data, pos)
                    raw = data[pos + _SPILL_REC.size : pos + _SPILL_REC.size + size]
                    pos += _SPILL_REC.size + size
                    if seq not in level.spill_gone:
                        m = QMsg(seq, raw, expire_at)
                        m.place = place
                        m.in_mem = False
                        out.append(m)
        return out

    def clear(self) -> list[QMsg]:
        """Remove every available message (purge); returns them."""
        removed = self.iter_all()
        for level in self.levels:
            level.mem.clear()
            if level.spill_count:
                level.reset()
        self.by_msg_id.clear()
        self.by_correl_id.clear()
        self.available = 0
        self.mem_bytes = 0
        return removed

    def oldest_age(self, now: float) -> float | None:
        oldest: float | None = None
        for level in self.levels:
            for m in level.mem:
                if not m.gone:
                    t = m.put_time
                    oldest = t if oldest is None else min(oldest, t)
                    break
        if oldest is None and self.available:
            for m in self.iter_all()[:1]:
                oldest = m.put_time
        return None if oldest is None else max(0.0, now - oldest)

    def inquire(self) -> dict[str, Any]:
        now = time.time()
        info: dict[str, Any] = {"name": self.name, "type": "local"}
        info.update(self.attrs.as_dict())
        info.update(
            current_depth=self.depth,
            available=self.available,
            uncommitted=self.locked + self.uncommitted_puts,
            open_handles=len(self.handles),
            oldest_message_age=self.oldest_age(now),
            memory_bytes=self.mem_bytes,
            spilled_messages=sum(level.spill_count - len(level.spill_gone) for level in self.levels),
            enqueued=self.puts,
            dequeued=self.gets,
        )
        return info

    def drop_spill_files(self) -> None:
        for level in self.levels:
            level.reset()


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
