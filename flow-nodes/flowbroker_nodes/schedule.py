"""Timed records on one of the broker's system queues: aggregation timeouts, controlled timers.

A record is put, in the unit of work that asks for it, correlated to its owner (an aggregate name,
a timer's unique identifier) and the second it falls due; so the owner's timer thread finds what is
due by getting those CorrelIds, second by second, without reading the rest of the queue. A sweep
of the whole queue when the timer starts, and every minute after, moves the owner's records that
fell due while nobody looked (a stopped group, a commit slower than a tick) to the overdue bucket.
Each record is then handled in its own unit of work: a crash handles it again, never loses it.
"""

from __future__ import annotations

import hashlib
import math
import threading
import time
from collections.abc import Callable
from typing import Any

from esql.tree import Element

from flowbroker_nodes.base import Assembly, FlowServices, QueueMessage

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


Fire = Callable[[int], bool | None]


class Timers:
    """One node's schedules as the input source of its flow threads: each tick (the source's
    "next"), ``fire(second)`` of each due bucket until it answers None (the bucket is empty) or
    False (its record failed: the bucket is tried again next tick).

    A record is fired by its owner, in a unit of work of its own that also takes the record, so
    this source hands the flow thread no arrivals. One flow thread of a node keeps its time (the
    one holding ``lock``); the node's other flow threads wait for the stop.
    """

    transactional = True

    def __init__(
        self,
        flow: FlowServices,
        schedules: list[tuple[Schedule, Fire]],
        lock: threading.Lock,
        prepare: Callable[[FlowServices], None] | None = None,
    ) -> None:
        """``prepare``: what the time keeper does first (define the owner's other queues)."""
        self.flow = flow
        self.schedules = schedules
        self.lock: threading.Lock | None = lock if lock.acquire(blocking=False) else None
        if self.lock is None:
            return
        try:
            if prepare is not None:
                prepare(flow)
            for schedule, _fire in schedules:
                flow.ensure_queue(schedule.queue)
            self.retry: list[set[int]] = [set() for _ in schedules]
            self.cursor = [schedule.sweep(flow) for schedule, _fire in schedules]
            self.swept = time.monotonic()
        except BaseException:
            self.close()
            raise

    def next(self) -> list[Any]:
        flow = self.flow
        if self.lock is None:
            flow.stop.wait()  # another flow thread of this node keeps the time
            return []
        if flow.stop.wait(TICK_S):
            return []
        now = int(time.time())
        for n, (_schedule, fire) in enumerate(self.schedules):
            buckets = [0, *sorted(self.retry[n]), *range(self.cursor[n] + 1, now + 1)]
            self.retry[n].clear()
            self.cursor[n] = max(self.cursor[n], now)
            for second in buckets:
                while not flow.stop.is_set():
                    fired = fire(second)
                    if fired is None:
                        break
                    if not fired:
                        self.retry[n].add(second)
                        break
        if time.monotonic() - self.swept >= SWEEP_S:
            for n, (schedule, _fire) in enumerate(self.schedules):
                self.cursor[n] = max(self.cursor[n], schedule.sweep(flow))
            self.swept = time.monotonic()
        return []

    # the flow thread is handed no arrivals (see the class docstring)
    def assembly(self, arrival: Any) -> tuple[str, Assembly] | None:
        raise AssertionError("timed records are fired by their owner")

    def failure_assembly(self, arrival: Any, assembly: Assembly | None, errors: Element) -> Assembly:
        raise AssertionError("timed records are fired by their owner")

    def unhandled(self, arrival: Any, errors: Element, note: str) -> bool:
        raise AssertionError("timed records are fired by their owner")

    def done(self, arrivals: list[Any], complete: bool) -> None:
        pass

    def close(self) -> None:
        if self.lock is not None:
            self.lock.release()
            self.lock = None
