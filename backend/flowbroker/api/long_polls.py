"""REST long-polls (a get that waits for a message) on threads of their own, a bounded number at once.

A waiting get blocks its thread for up to the wait. Run on the worker threads every synchronous
route shares, a few dozen of them would leave none for the rest of the API, health and login
included. Here each waits on a thread outside that pool; past the configured number of waits in
flight (FLOWBROKER_LONG_POLL_MAX) a new one is refused at once with 429 and Retry-After.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

import anyio
import anyio.to_thread

from flowbroker.api.errors import ApiError

T = TypeVar("T")

#: Seconds a refused caller is told to wait: long-polls in flight end within their own wait.
RETRY_AFTER = 1


class LongPolls:
    """The long-polls in flight; the event loop is the only thread that counts them."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.active = 0
        self._limiter: anyio.CapacityLimiter | None = None

    async def run(self, work: Callable[[], T]) -> T:
        """Run ``work`` (which may block up to its wait) unless ``limit`` waits are already in flight."""
        if self.active >= self.limit:
            raise ApiError(
                429,
                "too_many_long_polls",
                f"{self.limit} long-polls are already waiting (FLOWBROKER_LONG_POLL_MAX); "
                "retry, or get without wait",
                {"limit": self.limit},
                headers={"Retry-After": str(RETRY_AFTER)},
            )
        if self._limiter is None:  # made on the event loop it serves
            self._limiter = anyio.CapacityLimiter(self.limit)
        self.active += 1
        try:
            return await anyio.to_thread.run_sync(work, limiter=self._limiter)
        finally:
            self.active -= 1
