"""Backout policy of a flow's input: the threshold that is never infinite, the retry delay, repeated errors.

A message whose unit of work is backed out returns to its queue with its backout count raised and
is retried. Past the backout threshold it goes to the backout queue, else the dead-letter queue,
carrying why, the node where the exception began and the exception list. The threshold is the
input node's ``backoutThreshold``, else the queue's own (BOTHRESH), else
``FLOWBROKER_BACKOUT_THRESHOLD`` (default 3, at least 1): a poison message never loops.

Each retry of the same message waits a little longer than the one before:
``FLOWBROKER_BACKOUT_DELAY_MS`` × 2^(backouts − 1), at most ``FLOWBROKER_BACKOUT_DELAY_MAX_MS``.
The same error repeated by the retries is logged once, then as a count.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections import OrderedDict

DEFAULT_THRESHOLD = 3
#: How many failed messages' last exceptions a flow remembers for its backout queue's readers.
_REMEMBERED = 1024


def env_int(name: str, default: int, minimum: int) -> int:
    try:
        return max(minimum, int(os.environ.get(name, str(default))))
    except ValueError:
        return default


def default_threshold() -> int:
    """The backout threshold of an input whose node and queue name none (never 0: 0 would loop)."""
    return env_int("FLOWBROKER_BACKOUT_THRESHOLD", DEFAULT_THRESHOLD, 1)


def threshold(node_value: int, queue_value: int) -> int:
    return node_value or queue_value or default_threshold()


def retry_delay(backouts: int) -> float:
    """Seconds to wait before the retry of a message backed out ``backouts`` times in a row."""
    base = env_int("FLOWBROKER_BACKOUT_DELAY_MS", 100, 0)
    cap = env_int("FLOWBROKER_BACKOUT_DELAY_MAX_MS", 5000, 0)
    if backouts <= 0 or base == 0:
        return 0.0
    return min(base * (1 << min(backouts - 1, 20)), cap) / 1000.0


class RepeatedErrors:
    """Logs an error once, then counts its identical repeats instead of logging each.

    The count is logged when a different error comes, or with the same error again after
    ``every`` seconds, so a message that keeps failing still shows in the log, at a bounded rate.
    """

    def __init__(self, logger: logging.Logger, every: float = 60.0) -> None:
        self._log = logger
        self._every = every
        self._lock = threading.Lock()
        self._last = ""
        self._repeats = 0
        self._logged_at = 0.0

    def report(self, prefix: str, text: str) -> bool:
        """Log ``prefix: text`` unless it repeats the previous error; True when it was logged."""
        now = time.monotonic()
        with self._lock:
            if text == self._last and now - self._logged_at < self._every:
                self._repeats += 1
                return False
            if self._repeats:
                self._log.warning("%s: the previous error was repeated %d more times", prefix, self._repeats)
            self._last, self._repeats, self._logged_at = text, 0, now
        self._log.warning("%s: %s", prefix, text)
        return True


class FailureMemo:
    """The last failure of each recently failed message (by message id): node and exception list.

    Shared by a flow's threads: the retry that gives a message up may run on another thread than
    the one whose failure sent it back.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._failures: OrderedDict[bytes, dict[str, str]] = OrderedDict()

    def remember(self, msg_id: bytes, notes: dict[str, str]) -> None:
        with self._lock:
            self._failures[msg_id] = notes
            self._failures.move_to_end(msg_id)
            while len(self._failures) > _REMEMBERED:
                self._failures.popitem(last=False)

    def recall(self, msg_id: bytes) -> dict[str, str]:
        with self._lock:
            return self._failures.pop(msg_id, None) or {}
