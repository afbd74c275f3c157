"""Passthrough: the same assembly, not a copy, reaches every connected node; unconnected discards."""

from __future__ import annotations

from flowbroker.runtime.harness import FlowHarness, with_input


def test_passes_the_same_assembly_to_every_wire() -> None:
    h = FlowHarness(
        with_input(
            {"p": ("Passthrough", {}), "a": ("Passthrough", {}), "b": ("Passthrough", {})},
            ["p.out -> a", "p.out -> b"],
            first="p",
        )
    )
    a, b = h.seen("a", "out"), h.seen("b", "out")
    sent = h.inject("in", b"payload")
    assert a[0] is sent and b[0] is sent
    assert h.compiled.nodes["p"].stats.messages_in == 1


def test_unconnected_out_discards_without_error() -> None:
    h = FlowHarness(with_input({"p": ("Passthrough", {})}, [], first="p"))
    h.inject("in", b"x")
    assert h.compiled.nodes["p"].stats.errors == 0
