"""Throw: a user exception with number and text; an unconnected failure terminal unwinds."""

from __future__ import annotations

import pytest
from flowbroker.runtime.harness import FlowHarness, with_input
from flowbroker_nodes.base import Unwinding


def test_throw_unwinds_to_the_input_node_with_a_user_exception() -> None:
    h = FlowHarness(
        with_input({"t": ("Throw", {"messageText": "no stock", "messageNumber": 4001})}, [], first="t")
    )
    with pytest.raises(Unwinding) as info:
        h.inject("in", b"x")
    entry = info.value.exception_list.first_child
    assert (entry.name, entry.child("Number").value, entry.child("Text").value) == (
        "UserException",
        4001,
        "no stock",
    )
    assert "no stock" in str(info.value)


def test_default_text_names_the_node() -> None:
    h = FlowHarness(with_input({"t": ("Throw", {})}, [], first="t"))
    with pytest.raises(Unwinding) as info:
        h.inject("in", b"x")
    assert "thrown by t" in info.value.exception_list.first_child.child("Text").value
