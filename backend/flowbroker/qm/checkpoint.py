"""The queue manager's durable state captured for a checkpoint: taken on the loop, written on another thread.

Taking it costs the loop no copying of message bytes: the in-memory part of each queue is held by
reference and the spilled part as byte ranges of the spill files (see ``QueueSnapshot``). The
records come out in queue order within each queue — messages got in open units of work merged
back at their places, logged-but-not-yet-durable puts after them — so recovery restores the order
in which messages became visible.
"""

from __future__ import annotations

from collections.abc import Iterator

from flowbroker.qm import log as qlog
from flowbroker.qm.protocol import PERSISTENCE_OFFSET
from flowbroker.qm.queues import QueueSnapshot

#: A checkpoint's TxRecords hold at most this many messages or bytes each.
RECORD_MESSAGES = 1000
RECORD_BYTES = 1024 * 1024

#: (priority, place, seq, raw) of a message got in an open unit of work.
Held = tuple[int, int, int, bytes]


class CheckpointSnapshot:
    """Everything a checkpoint file holds, as of the moment it was taken."""

    def __init__(
        self,
        head: list[bytes],
        queues: list[tuple[QueueSnapshot, list[Held]]],
        inflight: list[tuple[str, int, bytes]],
        pending_dels: set[tuple[str, int]],
    ) -> None:
        self.head = head  # queue definitions, users and ACLs, subscriptions, retained publications
        self.queues = queues
        self.inflight = inflight
        self.pending_dels = pending_dels

    def records(self) -> Iterator[bytes]:
        yield from self.head
        batch = _Batch()
        for snap, held in self.queues:
            for _p, _place, seq, raw in snap.merged_with(held):
                if raw[PERSISTENCE_OFFSET] == 1 and (snap.name, seq) not in self.pending_dels:
                    yield from batch.add(snap.name, seq, raw)
        for qname, seq, raw in self.inflight:
            if (qname, seq) not in self.pending_dels:
                yield from batch.add(qname, seq, raw)
        yield from batch.flush()

    def close(self) -> None:
        for snap, _ in self.queues:
            snap.close()


class _Batch:
    """Collects puts into TxRecords small enough that no record holds a whole deep queue."""

    def __init__(self) -> None:
        self.puts: list[tuple[str, int, bytes]] = []
        self.size = 0

    def add(self, qname: str, seq: int, raw: bytes) -> Iterator[bytes]:
        self.puts.append((qname, seq, raw))
        self.size += len(raw)
        if len(self.puts) >= RECORD_MESSAGES or self.size >= RECORD_BYTES:
            yield from self.flush()

    def flush(self) -> Iterator[bytes]:
        if self.puts:
            yield qlog.TxRecord(puts=self.puts).encode()
            self.puts = []
            self.size = 0
