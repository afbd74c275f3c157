"""The group's heap settling: survivors are frozen out of collections, and a cycle that was alive
at one settle is reclaimed at the next."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator

import pytest
from flowbroker.worker import heap


class _Node:
    def __init__(self) -> None:
        self.other: _Node | None = None


@pytest.fixture(autouse=True)
def _thawed() -> Iterator[None]:
    yield
    gc.unfreeze()  # leave the test process's collector as it found it


def test_settle_freezes_what_survives() -> None:
    keep = [_Node() for _ in range(100)]
    heap.settle()
    assert gc.get_freeze_count() >= len(keep)
    assert gc.get_count()[0] < 100  # the young generation starts empty again


def test_a_cycle_alive_at_one_settle_is_reclaimed_at_the_next() -> None:
    a, b = _Node(), _Node()
    a.other, b.other = b, a  # a message tree's links make cycles like this
    gone = weakref.ref(a)
    heap.settle()  # in flight: frozen with everything else
    del a, b
    gc.collect()
    assert gone() is not None  # a frozen cycle is out of the collector's reach
    heap.settle()
    assert gone() is None


def test_the_interval_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FLOWBROKER_HEAP_SETTLE_INTERVAL", "60")
    assert heap.interval() == 60.0
    monkeypatch.setenv("FLOWBROKER_HEAP_SETTLE_INTERVAL", "0")
    assert heap.interval() == 0.0
    monkeypatch.setenv("FLOWBROKER_HEAP_SETTLE_INTERVAL", "-5")
    assert heap.interval() == 0.0
    monkeypatch.setenv("FLOWBROKER_HEAP_SETTLE_INTERVAL", "soon")
    assert heap.interval() == 300.0


def test_a_settle_sets_the_young_generations_threshold(monkeypatch: pytest.MonkeyPatch) -> None:
    before = gc.get_threshold()
    try:
        monkeypatch.delenv("FLOWBROKER_GC_YOUNG_THRESHOLD", raising=False)
        heap.settle()
        assert gc.get_threshold() == (heap.YOUNG_THRESHOLD, before[1], before[2])
        monkeypatch.setenv("FLOWBROKER_GC_YOUNG_THRESHOLD", "700")
        heap.settle()
        assert gc.get_threshold()[0] == heap.PYTHON_YOUNG_THRESHOLD
        for wrong, expected in (
            ("0", 1),
            ("-3", 1),
            ("often", heap.YOUNG_THRESHOLD),
            (" ", heap.YOUNG_THRESHOLD),
        ):
            monkeypatch.setenv("FLOWBROKER_GC_YOUNG_THRESHOLD", wrong)
            assert heap.young_threshold() == expected, wrong
    finally:
        gc.set_threshold(*before)
