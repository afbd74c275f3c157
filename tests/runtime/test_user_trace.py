"""User trace: safe mode writes every record through; fast mode buffers, yet a reader sees it soon."""

from __future__ import annotations

import time
from pathlib import Path

from flowbroker.runtime.usertrace import FLUSH_INTERVAL, UserTrace
from flowbroker.services import stats


def _wait_for(predicate, limit: float = 20 * FLUSH_INTERVAL) -> bool:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return predicate()


def _trace(data: Path, mode: str) -> UserTrace:
    trace = UserTrace(stats.trace_path(data, "default", "default", "Traced"))
    trace.configure("normal", mode)
    return trace


def test_fast_mode_records_reach_the_api_reader_without_more_traffic(tmp_path: Path) -> None:
    trace = _trace(tmp_path, "fast")
    trace.write("first record")
    # nothing else is written and nobody flushes: the trace flushes on its own
    assert _wait_for(lambda: "first record" in stats.read_trace(tmp_path, "default", "default", "Traced"))
    trace.write("second record")
    assert _wait_for(lambda: "second record" in stats.read_trace(tmp_path, "default", "default", "Traced"))
    trace.close()


def test_fast_mode_keeps_flushing_after_it_is_switched_again(tmp_path: Path) -> None:
    trace = _trace(tmp_path, "fast")
    trace.write("before")
    trace.configure("normal", "fast")  # closes the file; the next record opens it again
    trace.write("after the switch")
    assert _wait_for(lambda: "after the switch" in stats.read_trace(tmp_path, "default", "default", "Traced"))
    trace.close()


def test_safe_mode_records_are_on_disk_at_once(tmp_path: Path) -> None:
    trace = _trace(tmp_path, "safe")
    trace.write("written through")
    assert "written through" in stats.read_trace(tmp_path, "default", "default", "Traced")
    trace.close()


def test_closing_a_fast_trace_writes_what_it_buffered(tmp_path: Path) -> None:
    trace = _trace(tmp_path, "fast")
    for i in range(100):
        trace.write(f"record {i}")
    trace.close()
    text = stats.read_trace(tmp_path, "default", "default", "Traced")
    assert [line.rsplit(" ", 1)[-1] for line in text.splitlines()] == [str(i) for i in range(100)]
