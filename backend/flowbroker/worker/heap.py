"""The group process's garbage collector, kept off the objects that live as long as the process.

A flow allocates message trees whose parent and sibling links form cycles, so Python's cyclic
collector runs often, and each of its full collections would also walk every long-lived object
of the process: compiled flows, parsers, the database and Celery libraries. :func:`settle`
collects the heap and freezes what is left (``gc.freeze``), so later collections skip it. It
unfreezes first: a message tree that was in flight at one settle, and frozen with the rest, is
reclaimed at the next. The group settles after each deployment change and every
``FLOWBROKER_HEAP_SETTLE_INTERVAL`` seconds (default 300).

A settle also sets the youngest generation's threshold to ``FLOWBROKER_GC_YOUNG_THRESHOLD``
(default 10,000 allocations, Python's own is 700): every message tree is garbage only the cyclic
collector frees, and collecting young objects in larger batches promotes fewer trees still in
flight into the older generations, which are walked again (very complex compute: 4 % fewer
instructions a message, with at most that many more young objects waiting for a collection).
"""

from __future__ import annotations

import gc
import logging
import os
import threading
import time

log = logging.getLogger("flowbroker.worker")

_lock = threading.Lock()


def interval() -> float:
    """Seconds between periodic settles; 0 turns them off."""
    try:
        return max(0.0, float(os.environ.get("FLOWBROKER_HEAP_SETTLE_INTERVAL", "300")))
    except ValueError:
        return 300.0


#: Python's own threshold for the youngest generation, and the group's default.
PYTHON_YOUNG_THRESHOLD = 700
YOUNG_THRESHOLD = 10_000


def young_threshold() -> int:
    """Allocations between collections of the youngest generation (at least 1)."""
    raw = os.environ.get("FLOWBROKER_GC_YOUNG_THRESHOLD", "")
    try:
        return max(1, int(raw)) if raw.strip() else YOUNG_THRESHOLD
    except ValueError:
        log.warning("FLOWBROKER_GC_YOUNG_THRESHOLD=%r is not an integer: using %d", raw, YOUNG_THRESHOLD)
        return YOUNG_THRESHOLD


def settle() -> float:
    """Collect, then freeze the survivors out of later collections; returns the seconds it took."""
    with _lock:
        _, older, oldest = gc.get_threshold()
        gc.set_threshold(young_threshold(), older, oldest)
        started = time.perf_counter()
        gc.unfreeze()
        gc.collect()
        gc.freeze()
        took = time.perf_counter() - started
    log.debug("heap settled in %.0f ms, %d objects frozen", took * 1000, gc.get_freeze_count())
    return took
