"""Subflow: a flow used as a node; its Input and Output nodes become the node's terminals."""

from __future__ import annotations

import pytest
from flowbroker.runtime.compiler import FlowCompileError
from flowbroker.runtime.harness import FlowHarness, flow, with_input

INNER = flow(
    {
        "i": ("Input", {"terminalName": "in"}),
        "p": ("Passthrough", {}),
        "ok": ("Output", {"terminalName": "done"}),
        "fo": ("FlowOrder", {}),
    },
    ["i.out -> p", "p.out -> ok"],
    name="Inner",
)


def test_message_enters_at_input_and_leaves_at_the_output_terminal() -> None:
    doc = with_input(
        {"s": ("Subflow", {"flow": INNER}), "after": ("Passthrough", {})}, ["s.done -> after"], first="s"
    )
    h = FlowHarness(doc)
    h.inject("in", b"x")
    assert len(h.seen("after", "out")) == 1
    assert "s/p" in h.compiled.nodes  # inner nodes are prefixed by the subflow node id


def test_nested_subflows() -> None:
    middle = flow(
        {"i": ("Input", {}), "s": ("Subflow", {"flow": INNER}), "o": ("Output", {})},
        ["i.out -> s", "s.done -> o"],
        name="Middle",
    )
    h = FlowHarness(
        with_input(
            {"m": ("Subflow", {"flow": middle}), "after": ("Passthrough", {})}, ["m.out -> after"], first="m"
        )
    )
    h.inject("in", b"x")
    assert len(h.seen("after", "out")) == 1
    assert "m/s/p" in h.compiled.nodes


def test_unknown_output_terminal_is_reported() -> None:
    doc = with_input(
        {"s": ("Subflow", {"flow": INNER}), "after": ("Passthrough", {})}, ["s.nope -> after"], first="s"
    )
    with pytest.raises(FlowCompileError) as info:
        FlowHarness(doc)
    assert any("no Output node with terminal name 'nope'" in p.message for p in info.value.problems)


def test_invalid_inner_flow_is_reported_on_the_subflow_node() -> None:
    bad = flow({"i": ("Input", {}), "x": ("NoSuchNode", {})}, [], name="Bad")
    with pytest.raises(FlowCompileError) as info:
        FlowHarness(with_input({"s": ("Subflow", {"flow": bad})}, [], first="s"))
    assert info.value.problems[0].node == "s" and info.value.problems[0].property == "flow"
