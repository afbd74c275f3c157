"""Output: inside a subflow, leaving through it continues at the subflow node's terminal of that name."""

from __future__ import annotations

import pytest
from flowbroker.runtime.harness import FlowHarness, flow, with_input
from flowbroker_nodes.base import Unwinding

ROUTER = flow(
    {
        "i": ("Input", {}),
        "f": ("FlowOrder", {}),
        "good": ("Output", {"terminalName": "good"}),
        "bad": ("Output", {"terminalName": "bad"}),
        "t": ("Throw", {"messageText": "inside the subflow"}),
    },
    ["i.out -> f", "f.first -> good", "f.second -> bad"],
    name="Router",
)


def test_each_output_node_continues_at_its_terminal() -> None:
    doc = with_input(
        {"s": ("Subflow", {"flow": ROUTER}), "g": ("Passthrough", {}), "b": ("Passthrough", {})},
        ["s.good -> g", "s.bad -> b"],
        first="s",
    )
    h = FlowHarness(doc)
    h.inject("in", b"x")
    assert len(h.seen("g", "out")) == 1 and len(h.seen("b", "out")) == 1


def test_an_exception_inside_a_subflow_unwinds_out_of_it() -> None:
    inner = flow(
        {"i": ("Input", {}), "t": ("Throw", {"messageText": "inside"}), "o": ("Output", {})},
        ["i.out -> t"],
        name="Thrower",
    )
    h = FlowHarness(with_input({"s": ("Subflow", {"flow": inner})}, [], first="s"))
    with pytest.raises(Unwinding) as info:
        h.inject("in", b"x")
    assert info.value.exception_list.first_child.child("Name").value == "s/t"
