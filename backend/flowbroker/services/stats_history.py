"""The last minutes of each flow's throughput and latency, kept by the configuration manager.

Execution groups publish cumulative counters every few seconds; a page opened now wants the
rates of the last quarter of an hour, not only those from the moment it opened. This keeps, per
flow, a ring of samples derived from consecutive publications: messages per second and mean
elapsed time per message over the interval between them.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: How much history is kept.
WINDOW_SECONDS = 15 * 60.0


@dataclass(frozen=True)
class Sample:
    """One interval between two publications of a flow's counters."""

    t: float
    msgs_per_s: float
    latency_ms: float | None
    messages: int
    errors: int
    backouts: int


@dataclass
class _Last:
    t: float
    messages: int
    elapsed_us: int


class StatsHistory:
    """Per-flow rings of samples, fed with the group statistics records as they are read."""

    def __init__(self, window: float = WINDOW_SECONDS) -> None:
        self.window = window
        self._lock = threading.Lock()
        self._samples: dict[tuple[str, str, str], deque[Sample]] = {}
        self._last: dict[tuple[str, str, str], _Last] = {}

    def observe(self, records: Iterable[dict[str, Any]]) -> None:
        """Take one reading of every group's statistics; a publication seen before adds nothing."""
        with self._lock:
            for record in records:
                broker, group = str(record.get("broker") or ""), str(record.get("group") or "")
                t = float(record.get("time") or 0)
                for name, flow in (record.get("flows") or {}).items():
                    key = (broker, group, str(name))
                    self._observe_flow(key, t, flow)
            self._prune(time.time())

    def _observe_flow(self, key: tuple[str, str, str], t: float, flow: dict[str, Any]) -> None:
        messages = int(flow.get("messages_in") or 0)
        elapsed = int(flow.get("elapsed_us") or 0)
        last = self._last.get(key)
        if last is not None and t <= last.t:
            return
        self._last[key] = _Last(t, messages, elapsed)
        if last is None or messages < last.messages:
            return  # the first reading, or the group restarted and its counters began again
        count = messages - last.messages
        sample = Sample(
            t=t,
            msgs_per_s=count / (t - last.t),
            latency_ms=(elapsed - last.elapsed_us) / count / 1000.0 if count else None,
            messages=messages,
            errors=int(flow.get("errors") or 0),
            backouts=int(flow.get("backouts") or 0),
        )
        self._samples.setdefault(key, deque()).append(sample)

    def _prune(self, now: float) -> None:
        oldest = now - self.window
        for key in list(self._samples):
            ring = self._samples[key]
            while ring and ring[0].t < oldest:
                ring.popleft()
            if not ring and self._last.get(key, _Last(0, 0, 0)).t < oldest:
                del self._samples[key]
                self._last.pop(key, None)

    def series(self, seconds: float | None = None) -> list[dict[str, Any]]:
        """Every flow's samples of the last ``seconds`` (default: the whole window), oldest first."""
        now = time.time()
        since = now - min(seconds or self.window, self.window)
        with self._lock:
            self._prune(now)
            return [
                {
                    "broker": key[0],
                    "group": key[1],
                    "flow": key[2],
                    "points": [
                        {
                            "t": s.t,
                            "msgs_per_s": s.msgs_per_s,
                            "latency_ms": s.latency_ms,
                            "messages": s.messages,
                            "errors": s.errors,
                            "backouts": s.backouts,
                        }
                        for s in ring
                        if s.t >= since
                    ],
                }
                for key, ring in sorted(self._samples.items())
            ]


class Sampler:
    """Reads the groups' statistics every ``interval`` seconds into a :class:`StatsHistory`."""

    def __init__(
        self, history: StatsHistory, data: Path, interval: float = 2.0, session_factory: Any = None
    ) -> None:
        self.history = history
        self.data = data
        self.session_factory = session_factory
        self.interval = interval
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def sample(self) -> None:
        from flowbroker.services import stats

        self.history.observe(stats.read_all(self.data, self.session_factory))

    def start(self) -> None:
        def loop() -> None:
            while not self._stop.is_set():
                try:
                    self.sample()
                except Exception:  # a torn statistics file is read again next time
                    pass
                self._stop.wait(self.interval)

        self._thread = threading.Thread(target=loop, name="stats-history", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(5)
