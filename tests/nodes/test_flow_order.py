"""FlowOrder: first completes before second; an exception on first stops second."""

from __future__ import annotations

import pytest
from flowbroker.runtime.harness import FlowHarness, with_input
from flowbroker_nodes.base import Unwinding


def test_first_then_second_in_order() -> None:
    h = FlowHarness(
        with_input(
            {"fo": ("FlowOrder", {}), "a": ("Passthrough", {}), "b": ("Passthrough", {})},
            ["fo.first -> a", "fo.second -> b"],
            first="fo",
        )
    )
    order: list[str] = []
    h.tap("a", "out").evaluate = lambda asm, t: order.append("first")  # type: ignore[method-assign]
    h.tap("b", "out").evaluate = lambda asm, t: order.append("second")  # type: ignore[method-assign]
    h.inject("in", b"x")
    assert order == ["first", "second"]


def test_exception_on_first_skips_second() -> None:
    h = FlowHarness(
        with_input(
            {"fo": ("FlowOrder", {}), "t": ("Throw", {}), "b": ("Passthrough", {})},
            ["fo.first -> t", "fo.second -> b"],
            first="fo",
        )
    )
    with pytest.raises(Unwinding):
        h.inject("in", b"x")
    assert h.seen("b", "out") == []
