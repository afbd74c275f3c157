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
import time
from collections.abc import Callable
from typing import Any

from flowbroker_nodes.base import FlowServices, QueueMessage

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

    def run(self, flow: FlowServices, fire: Callable[[int], bool | None]) -> None:
        """Until the flow stops: call ``fire(second)`` for each due bucket until it answers None
        (the bucket is empty) or False (its record failed: the bucket is tried again next tick)."""
        run_all(flow, [(self, fire)])

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


def run_all(flow: FlowServices, schedules: list[tuple[Schedule, Callable[[int], bool | None]]]) -> None:
    """:meth:`Schedule.run` for several schedules on one thread, tick by tick."""
    for schedule, _fire in schedules:
        flow.ensure_queue(schedule.queue)
    retry: list[set[int]] = [set() for _ in schedules]
    cursor = [schedule.sweep(flow) for schedule, _fire in schedules]
    swept = time.monotonic()
    while not flow.stop.wait(TICK_S):
        now = int(time.time())
        for n, (_schedule, fire) in enumerate(schedules):
            buckets = [0, *sorted(retry[n]), *range(cursor[n] + 1, now + 1)]
            retry[n].clear()
            cursor[n] = max(cursor[n], now)
            for second in buckets:
                while not flow.stop.is_set():
                    fired = fire(second)
                    if fired is None:
                        break
                    if not fired:
                        retry[n].add(second)
                        break
        if time.monotonic() - swept >= SWEEP_S:
            for n, (schedule, _fire) in enumerate(schedules):
                cursor[n] = max(cursor[n], schedule.sweep(flow))
            swept = time.monotonic()
