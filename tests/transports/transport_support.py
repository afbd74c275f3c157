"""Helpers the transport tests import by name (a conftest module's name is not unique in the suite)."""

from __future__ import annotations

import itertools
import os
import time
from collections.abc import Callable

_names = itertools.count(1)


def unique(base: str) -> str:
    return f"{base}.{os.getpid()}.{next(_names)}.{int(time.time() * 1000) % 1000000}"


def wait_for(check: Callable[[], object], timeout: float = 20.0, what: str = "the condition") -> object:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = check()
        if found:
            return found
        time.sleep(0.05)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")
