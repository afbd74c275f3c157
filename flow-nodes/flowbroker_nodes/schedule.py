"""Timed records on one of the broker's system queues: aggregation timeouts, controlled timers.

A record is put, in the unit of work that asks for it, correlated to its owner (an aggregate name,
a timer's unique identifier) and the second it falls due; so the owner's timer thread finds what is
due by getting those CorrelIds, second by second, without reading the rest of the queue. A sweep
of the whole queue when the timer starts, and every minute after, moves the owner's records that
fell due while nobody looked (a stopped group, a commit slower than a tick) to the overdue bucket.
Each record is then taken and handled by the flow thread in a unit of work of its own (see
:class:`Timers`): a crash handles it again, never loses it.
"""

from __future__ import annotations

import dataclasses
import hashlib
import math
import threading
import time
from collections.abc import Callable
from typing import Any

from esql.tree import Element

from flowbroker_nodes.base import Assembly, FlowServices, Node, QueueMessage

#: How often a timer looks for due records (s), and how often it sweeps the whole queue.
TICK_S = 1.0
SWEEP_S = 60.0


class Schedule:
    """The timed records of one owner on ``queue``."""

    def __init__(self, queue: str, owner: str) -> None:
        self.queue = queue
        self.prefix = b"FBTS" + hashlib.sha256(owner.encode()).digest()[:12]

    def key(self, second: int) -> bytes:
        """The CorrelId of this owner's records falling due in ``second`` (0: overdue)."""
        return self.prefix + max(0, second).to_bytes(8, "big")

    def put(
        self,
        flow: FlowServices,
        due: float,
        body: bytes,
        *,
        properties: dict[str, Any] | None = None,
        md: Any = None,
    ) -> None:
        """Put a record falling due at ``due`` (epoch seconds) under syncpoint."""
        flow.put_record(
            self.queue, body, correl_id=self.key(math.ceil(due)), properties=properties, syncpoint=True, md=md
        )

    def take(self, flow: FlowServices, second: int, msg_id: bytes | None = None) -> QueueMessage | None:
        """Get (under syncpoint) one record of ``second``'s bucket (with ``msg_id``: that one), or None."""
        return flow.get_message(self.queue, 0, syncpoint=True, correl_id=self.key(second), msg_id=msg_id)

    def sweep(self, flow: FlowServices) -> int:
        """Move this owner's records that are due to the overdue bucket; the second swept up to."""
        flow.begin(True)
        now = int(time.time())
        held = []
        try:
            while True:
                message = flow.get_message(self.queue, 0, syncpoint=True)
                if message is None:
                    break
                held.append(message)
            for message in held:
                correl = bytes(message.md.correl_id)
                if correl[:16] == self.prefix and int.from_bytes(correl[16:24], "big") <= now:
                    correl = self.key(0)
                message.md.correl_id = correl
                flow.put_record(
                    self.queue,
                    message.body,
                    correl_id=correl,
                    properties=dict(getattr(message, "properties", None) or {}),
                    syncpoint=True,
                    md=message.md,
                )
            flow.commit()
        except Exception:
            flow.backout()
            raise
        return now


@dataclasses.dataclass(frozen=True)
class Timed:
    """What a node tells the flow thread about one of its schedules: the assembly of each due
    record, and what happens to one whose flow failed. The flow thread takes the record, runs it in
    a unit of work of its own, and backs it out; the hooks below run inside its units of work."""

    schedule: Schedule
    #: The terminal a taken record is propagated on and its assembly; None: nothing to propagate
    #: (its work is over: cancelled, completed), so the record goes with the commit.
    assemble: Callable[[QueueMessage], tuple[str, Assembly] | None]
    #: The failure terminal's message for a record taken again after its flow failed with the
    #: ExceptionList given (in a new unit of work that also takes the record); None: its work is
    #: over meanwhile.
    failure: Callable[[QueueMessage, Element], Assembly | None]
    #: What a failed record is, in the log line that says it is retried.
    what: str = "a timed record"
    #: Whether a failed record no failure terminal took is given up (to the dead-letter queue)
    #: rather than tried again next tick; None: always tried again.
    expired: Callable[[QueueMessage], bool] | None = None


@dataclasses.dataclass
class Due:
    """One arrival of a :class:`Timers` source: a record of a due bucket of a schedule, taken under
    syncpoint (the unit of work the flow thread then commits or backs out)."""

    index: int
    second: int
    record: QueueMessage


class Timers:
    """One node's schedules as the input source of its flow threads: each tick, the next record of
    each due bucket of each schedule in turn, until the bucket is empty; a record whose flow failed
    and that nothing took leaves its bucket to be tried again next tick.

    One flow thread of a node keeps its time (the one holding ``lock``); the node's other flow
    threads wait for the stop.
    """

    transactional = True

    def __init__(
        self,
        node: Node,
        flow: FlowServices,
        schedules: list[Timed],
        lock: threading.Lock,
        prepare: Callable[[FlowServices], None] | None = None,
    ) -> None:
        """``node``: the schedules' owner; ``prepare``: what the time keeper does first (define the
        owner's other queues)."""
        self.node = node
        self.flow = flow
        self.schedules = schedules
        self.pending: list[tuple[int, int]] = []
        self.lock: threading.Lock | None = lock if lock.acquire(blocking=False) else None
        if self.lock is None:
            return
        try:
            if prepare is not None:
                prepare(flow)
            for timed in schedules:
                flow.ensure_queue(timed.schedule.queue)
            self.retry: list[set[int]] = [set() for _ in schedules]
            self.cursor = [timed.schedule.sweep(flow) for timed in schedules]
            self.swept = time.monotonic()
        except BaseException:
            self.close()
            raise

    def next(self) -> list[Due]:
        """The next record of the first due bucket that has one (taken as a queue input's get is:
        a transport failure here is the connection's, not the record's); [] when none came."""
        flow = self.flow
        if self.lock is None:
            flow.stop.wait()  # another flow thread of this node keeps the time
            return []
        if not self.pending:
            if time.monotonic() - self.swept >= SWEEP_S:
                for n, timed in enumerate(self.schedules):
                    self.cursor[n] = max(self.cursor[n], timed.schedule.sweep(flow))
                self.swept = time.monotonic()
            if flow.stop.wait(TICK_S):
                return []
            now = int(time.time())
            for n in range(len(self.schedules)):
                buckets = [0, *sorted(self.retry[n]), *range(self.cursor[n] + 1, now + 1)]
                self.retry[n].clear()
                self.cursor[n] = max(self.cursor[n], now)
                self.pending += [(n, second) for second in buckets]
        while self.pending and not flow.stop.is_set():
            n, second = self.pending[0]
            record = self.schedules[n].schedule.take(flow, second)
            if record is not None:
                return [Due(n, second, record)]
            self.pending.pop(0)  # the bucket is empty
        return []

    def assembly(self, due: Due) -> tuple[str, Assembly] | None:
        return self.schedules[due.index].assemble(due.record)

    def failure_assembly(self, due: Due, assembly: Assembly | None, errors: Element) -> Assembly | None:
        timed = self.schedules[due.index]
        record = timed.schedule.take(self.flow, due.second, bytes(due.record.md.msg_id))
        if record is None:
            return None  # taken by another meanwhile
        return timed.failure(record, errors)

    def unhandled(self, due: Due, errors: Element, note: str) -> bool:
        timed = self.schedules[due.index]
        flow = self.flow
        name = self.node.name
        if timed.expired is not None and timed.expired(due.record):
            # its time is up and nothing takes it: to the dead-letter queue, not lost
            again = timed.schedule.take(flow, due.second, bytes(due.record.md.msg_id))
            if again is not None:
                flow.dead_letter(again, note[:500], syncpoint=True, notes={"node": name})
            return True
        flow.log(f"{name}: {timed.what} backed out, retrying: {note}")
        return False

    def done(self, arrivals: list[Due], complete: bool) -> None:
        if not complete:
            # the tick goes on with the next bucket; this one is tried again next tick
            (due,) = arrivals
            self.pending.pop(0)
            self.retry[due.index].add(due.second)

    def close(self) -> None:
        if self.lock is not None:
            self.lock.release()
            self.lock = None
