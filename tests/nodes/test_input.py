"""Input: inside a subflow, the node whose terminal name a connection to the subflow node names."""

from __future__ import annotations

from flowbroker.runtime.harness import FlowHarness, flow, with_input

TWO_ENTRIES = flow(
    {
        "a": ("Input", {"terminalName": "orders"}),
        "b": ("Input", {"terminalName": "returns"}),
        "pa": ("Passthrough", {}),
        "pb": ("Passthrough", {}),
        "o": ("Output", {"terminalName": "out"}),
    },
    ["a.out -> pa", "b.out -> pb", "pa.out -> o", "pb.out -> o"],
    name="TwoEntries",
)


def test_each_input_terminal_enters_at_its_own_input_node() -> None:
    h = FlowHarness(
        with_input(
            {"s": ("Subflow", {"flow": TWO_ENTRIES}), "after": ("Passthrough", {})},
            ["s.out -> after"],
            first="s.returns",
        )
    )
    h.inject("in", b"x")
    assert len(h.seen("s/pb", "out")) == 1
    assert h.seen("s/pa", "out") == []
    assert len(h.seen("after", "out")) == 1
