"""Login throttling: too many failed logins for one user, or from one client address, lock it out.

Failures are counted over a sliding window, per username and per client address. Once either
count reaches its limit, every login for that user (or from that address) is refused for the
lock-out period, the right password included, so that guessing costs the lock-out time per few
guesses. A successful login forgets the user's failures, never the address's: one valid account
must not reset the count of an address guessing others. The counts live in the configuration
manager's process (one per `flowbroker up`).
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

#: Keys tracked before expired ones are swept, so a flood of invented usernames stays bounded.
SWEEP_ABOVE = 10_000


@dataclass(frozen=True)
class LockOut:
    """A lock-out that has just begun: what is locked, after how many failures, for how long."""

    kind: str  # "user" or "address"
    key: str
    failures: int
    seconds: float


class LoginThrottle:
    def __init__(
        self,
        max_per_user: int,
        max_per_address: int,
        window: float,
        lockout: float,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.limits = {"user": max_per_user, "address": max_per_address}
        self.window = window
        self.lockout = lockout
        self.clock = clock
        self._failures: dict[tuple[str, str], deque[float]] = {}
        self._locked_until: dict[tuple[str, str], float] = {}
        self._lock = threading.Lock()

    def retry_after(self, username: str, address: str) -> float:
        """Seconds until a login for ``username`` from ``address`` may be tried; 0 when it may now."""
        now = self.clock()
        with self._lock:
            ends = [self._locked_until[k] for k in self._keys(username, address) if k in self._locked_until]
        return max([0.0, *(end - now for end in ends)])

    def failed(self, username: str, address: str) -> list[LockOut]:
        """Count one failed login; the lock-outs it begins."""
        now = self.clock()
        begun: list[LockOut] = []
        with self._lock:
            if len(self._failures) > SWEEP_ABOVE:
                self._sweep(now)
            for key in self._keys(username, address):
                times = self._failures.setdefault(key, deque())
                times.append(now)
                while times and times[0] <= now - self.window:
                    times.popleft()
                if len(times) >= self.limits[key[0]] and self._locked_until.get(key, 0.0) <= now:
                    self._locked_until[key] = now + self.lockout
                    begun.append(LockOut(key[0], key[1], len(times), self.lockout))
                    times.clear()
        return begun

    def succeeded(self, username: str) -> None:
        with self._lock:
            self._failures.pop(("user", username), None)

    @staticmethod
    def _keys(username: str, address: str) -> tuple[tuple[str, str], tuple[str, str]]:
        return ("user", username), ("address", address)

    def _sweep(self, now: float) -> None:
        for key in [k for k, until in self._locked_until.items() if until <= now]:
            del self._locked_until[key]
        for key in [k for k, times in self._failures.items() if not times or times[-1] <= now - self.window]:
            del self._failures[key]
