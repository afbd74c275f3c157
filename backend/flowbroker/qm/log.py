"""The recovery log: checksummed append-only records, group commit, checkpoints and recovery.

Every record is ``<u32 payload length><u32 crc32><u8 type><payload>`` where the CRC covers the
type and payload. A unit of work is one record, so it is on disk entirely or not at all. Writers
hand records to one flusher thread; it writes everything queued since its last pass with one
``write`` and one ``fsync``, then wakes every waiter of that batch (seed 004 §4.2 "tailcoating").
A checkpoint is a snapshot file of the live state plus the generation of the log that follows it;
recovery loads the newest complete snapshot, replays later logs and cuts a torn or corrupt tail.

A write or fsync that fails is never retried: after a failed fsync the kernel may have dropped
the dirty pages, so nothing later in the file could be trusted. The writer fails that batch and
every later append (their ``on_failed`` callbacks get a one-line reason) and stays failed until
the process restarts; recovery then cuts whatever torn tail the failure left.
"""

from __future__ import annotations

import logging
import os
import struct
import threading
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import orjson

REC_HEADER = struct.Struct("<IIB")
REC_TX = 1  # a unit of work: persistent puts and removals, applied together
REC_QUEUE = 2  # a queue definition (upsert) as JSON
REC_QUEUE_DELETE = 3
REC_SUB = 4  # a durable subscription as JSON
REC_UNSUB = 5
REC_RETAIN = 6  # topic + message (empty message = cleared)
REC_META = 7  # users and topic ACLs as JSON
REC_BACKOUT = 8  # backout counts, written without forcing
REC_PURGE = 9  # a queue emptied, except the listed seqs (logged, not yet durable puts)

logger = logging.getLogger("flowbroker.qm")
Failed = Callable[[str], None]

_U16 = struct.Struct("<H")
_U32 = struct.Struct("<I")
_U64 = struct.Struct("<Q")
_PUT = struct.Struct("<HQI")  # queue name length, seq, message length
_DEL = struct.Struct("<HQ")
MAX_RECORD = 1 << 31


def encode_record(rtype: int, payload: bytes) -> bytes:
    crc = zlib.crc32(payload, zlib.crc32(bytes((rtype,))))
    return REC_HEADER.pack(len(payload), crc, rtype) + payload


@dataclass
class TxRecord:
    """Committed puts ``(queue, seq, raw message)`` and removals ``(queue, seq)``."""

    puts: list[tuple[str, int, bytes]] = field(default_factory=list)
    dels: list[tuple[str, int]] = field(default_factory=list)

    def encode(self) -> bytes:
        parts = [_U32.pack(len(self.puts))]
        for q, seq, raw in self.puts:
            qb = q.encode()
            parts += (_PUT.pack(len(qb), seq, len(raw)), qb, raw)
        parts.append(_U32.pack(len(self.dels)))
        for q, seq in self.dels:
            qb = q.encode()
            parts += (_DEL.pack(len(qb), seq), qb)
        return encode_record(REC_TX, b"".join(parts))

    @classmethod
    def decode(cls, payload: bytes) -> TxRecord:
        tx = cls()
        (n,) = _U32.unpack_from(payload, 0)
        pos = 4
        for _ in range(n):
            qlen, seq, mlen = _PUT.unpack_from(payload, pos)
            pos += _PUT.size
            q = payload[pos : pos + qlen].decode()
            pos += qlen
            tx.puts.append((q, seq, payload[pos : pos + mlen]))
            pos += mlen
        (n,) = _U32.unpack_from(payload, pos)
        pos += 4
        for _ in range(n):
            qlen, seq = _DEL.unpack_from(payload, pos)
            pos += _DEL.size
            tx.dels.append((payload[pos : pos + qlen].decode(), seq))
            pos += qlen
        return tx


def json_record(rtype: int, obj: Any) -> bytes:
    return encode_record(rtype, orjson.dumps(obj))


def read_records(path: Path) -> tuple[list[tuple[int, bytes]], int, int]:
    """The valid records of one file, the byte offset where they end, and the file's size.

    Reading stops at the first record that is short or whose CRC does not match: everything
    after a torn write is discarded, never interpreted.
    """
    data = path.read_bytes()
    records: list[tuple[int, bytes]] = []
    pos = 0
    n = len(data)
    while n - pos >= REC_HEADER.size:
        length, crc, rtype = REC_HEADER.unpack_from(data, pos)
        start = pos + REC_HEADER.size
        end = start + length
        if end > n:
            break
        payload = data[start:end]
        if zlib.crc32(payload, zlib.crc32(bytes((rtype,)))) != crc:
            break
        records.append((rtype, payload))
        pos = end
    return records, pos, n


class LogWriter:
    """Appends records to the current log file; one flusher thread does every write and fsync.

    ``append(record, on_durable, on_failed)`` queues a record; ``on_durable`` runs (through
    ``dispatch``) once the record has been fsynced together with everything else queued in the
    same pass, or ``on_failed(reason)`` if the log could not be written.
    """

    def __init__(
        self,
        directory: Path,
        generation: int,
        *,
        fsync: bool = True,
        dispatch: Callable[[list[Callable[[], None]]], None] | None = None,
    ) -> None:
        self.directory = directory
        #: Runs a batch's callbacks; the server hands them to its event loop in one wake-up.
        self.dispatch = dispatch or _run_all
        self.generation = generation
        self.fsync = fsync
        self._cond = threading.Condition()
        self._pending: list[bytes | None] = []  # None marks a rotation
        self._callbacks: list[tuple[Callable[[], None] | None, Failed | None]] = []
        self._rotate_to: list[tuple[int, Callable[[], None], Failed | None]] = []
        self._closed = False
        #: Why the log stopped accepting records, or None while it works.
        self.failed: str | None = None
        self.bytes_written = 0
        self.flushes = 0
        self.fsyncs = 0
        self.records = 0
        self._file = open(self._path(generation), "ab")
        self.bytes_written = self._file.tell()
        self._thread = threading.Thread(target=self._run, name="qm-log-flusher", daemon=True)
        self._thread.start()

    def _path(self, generation: int) -> Path:
        return self.directory / f"{generation:08d}.log"

    def append(
        self,
        record: bytes,
        on_durable: Callable[[], None] | None = None,
        on_failed: Failed | None = None,
    ) -> None:
        with self._cond:
            self._pending.append(record)
            if on_durable is not None or on_failed is not None:
                self._callbacks.append((on_durable, on_failed))
            self._cond.notify()

    def rotate(
        self, generation: int, on_rotated: Callable[[], None], on_failed: Failed | None = None
    ) -> None:
        """Start log ``generation`` after everything queued so far is durable in the old one.

        Records queued after this call go to the new log even when the flusher takes them in
        the same pass: a checkpoint taken at this moment covers exactly the records before it.
        """
        with self._cond:
            self._rotate_to.append((generation, on_rotated, on_failed))
            self._pending.append(None)
            self._cond.notify()

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._pending and not self._closed:
                    self._cond.wait()
                if not self._pending and self._closed:
                    break
                batch, self._pending = self._pending, []
                callbacks, self._callbacks = self._callbacks, []
                rotations, self._rotate_to = self._rotate_to, []
            if self.failed is None:
                try:
                    rotated = self._write_batch(batch, rotations)
                except OSError as exc:
                    self.failed = f"the recovery log cannot be written ({exc.strerror or exc})"
                    logger.error(
                        "%s: persistent work is refused until the queue manager restarts", self.failed
                    )
                else:
                    durable = [cb for cb, _ in callbacks if cb is not None]
                    if durable:
                        self.dispatch(durable)
                    for on_rotated in rotated:
                        on_rotated()
                    continue
            reason = self.failed
            failures: list[Callable[[], None]] = [
                partial(fail, reason) for _, fail in callbacks if fail is not None
            ]
            failures += [partial(fail, reason) for _, _, fail in rotations if fail is not None]
            if failures:
                self.dispatch(failures)
        try:
            self._file.close()
        except OSError:
            pass  # the buffered tail of a failed log: recovery cuts it anyway

    def _write_batch(
        self, batch: list[bytes | None], rotations: list[tuple[int, Callable[[], None], Failed | None]]
    ) -> list[Callable[[], None]]:
        rotated: list[Callable[[], None]] = []
        segment: list[bytes] = []
        pending_rotations = list(rotations)
        for item in batch:
            if item is None:
                self._write(segment)
                segment = []
                generation, on_rotated, _ = pending_rotations.pop(0)
                self._file.close()
                self.generation = generation
                self._file = open(self._path(generation), "ab")
                self.bytes_written = 0
                _fsync_dir(self.directory)
                rotated.append(on_rotated)
            else:
                segment.append(item)
        self._write(segment)
        return rotated

    def _write(self, records: list[bytes]) -> None:
        data = b"".join(records)
        if not data:
            return
        self._file.write(data)
        self._file.flush()
        if self.fsync:
            os.fsync(self._file.fileno())
            self.fsyncs += 1
        self.bytes_written += len(data)
        self.flushes += 1
        self.records += len(records)

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify()
        self._thread.join()


def _run_all(callbacks: list[Callable[[], None]]) -> None:
    for cb in callbacks:
        cb()


def _fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_checkpoint(directory: Path, generation: int, records: Iterator[bytes]) -> Path:
    """Write the snapshot that lets recovery start at log ``generation``; atomic by rename."""
    final = directory / f"{generation:08d}.ckpt"
    tmp = directory / f"{generation:08d}.ckpt.tmp"
    with open(tmp, "wb") as fh:
        fh.write(encode_record(REC_META, orjson.dumps({"checkpoint": generation})))
        for rec in records:
            fh.write(rec)
        fh.write(encode_record(REC_META, orjson.dumps({"checkpoint_end": generation})))
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, final)
    _fsync_dir(directory)
    return final


@dataclass
class RecoveredFile:
    path: Path
    records: list[tuple[int, bytes]]
    valid_end: int
    size: int


def recover(directory: Path) -> tuple[int, list[RecoveredFile]]:
    """Find the newest complete checkpoint and the logs after it; cut each log's torn tail.

    Returns the log generation to append to and the files to replay, checkpoint first.
    """
    directory.mkdir(parents=True, exist_ok=True)
    for tmp in directory.glob("*.ckpt.tmp"):
        tmp.unlink()
    start_generation = 1
    files: list[RecoveredFile] = []
    for ckpt in sorted(directory.glob("*.ckpt"), reverse=True):
        records, end, size = read_records(ckpt)
        if records and records[-1][0] == REC_META and b"checkpoint_end" in records[-1][1]:
            start_generation = int(ckpt.stem)
            files.append(RecoveredFile(ckpt, records[1:-1], end, size))
            break
    logs = sorted(p for p in directory.glob("*.log") if int(p.stem) >= start_generation)
    for log in logs:
        records, end, size = read_records(log)
        if end < size:
            # A torn or corrupt tail: cut it so the next append starts on a record boundary.
            with open(log, "r+b") as fh:
                fh.truncate(end)
                fh.flush()
                os.fsync(fh.fileno())
        files.append(RecoveredFile(log, records, end, size))
    generation = int(logs[-1].stem) if logs else start_generation
    return generation, files


def remove_before(directory: Path, generation: int) -> None:
    """Delete logs and checkpoints that the checkpoint of ``generation`` makes redundant."""
    for p in directory.glob("*.log"):
        if int(p.stem) < generation:
            p.unlink()
    for p in directory.glob("*.ckpt"):
        if int(p.stem) < generation:
            p.unlink()
