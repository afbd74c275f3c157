"""TryCatch: an exception below try sends the original message, with its ExceptionList, to catch."""

from __future__ import annotations

import pytest
from flowbroker.runtime.harness import FlowHarness, with_input
from flowbroker_nodes.base import Unwinding


def test_exception_below_try_reaches_catch_with_exception_list() -> None:
    doc = with_input(
        {
            "tc": ("TryCatch", {}),
            "p": ("Passthrough", {}),
            "boom": ("Throw", {"messageText": "bad order", "messageNumber": 3100}),
            "c": ("Passthrough", {}),
        },
        ["tc.try -> p", "p.out -> boom", "tc.catch -> c"],
        first="tc",
    )
    h = FlowHarness(doc)
    caught = h.seen("c", "out")
    h.inject("in", b"<a/>")
    assert len(caught) == 1
    entry = caught[0].exception_list.first_child
    assert entry is not None and entry.name == "UserException"
    assert entry.child("Text").value == "bad order"
    assert entry.child("Number").value == 3100
    assert entry.child("Name").value == "boom"
    assert caught[0].root.child("BLOB").child("BLOB").value == b"<a/>"


def test_unconnected_catch_rethrows() -> None:
    doc = with_input({"tc": ("TryCatch", {}), "boom": ("Throw", {})}, ["tc.try -> boom"], first="tc")
    h = FlowHarness(doc)
    with pytest.raises(Unwinding) as info:
        h.inject("in", b"x")
    assert "Throw" in str(info.value.exception_list.first_child.child("Type").value)


def test_no_exception_means_nothing_reaches_catch() -> None:
    doc = with_input(
        {"tc": ("TryCatch", {}), "p": ("Passthrough", {}), "c": ("Passthrough", {})},
        ["tc.try -> p", "tc.catch -> c"],
        first="tc",
    )
    h = FlowHarness(doc)
    h.inject("in", b"x")
    assert len(h.seen("p", "out")) == 1
    assert h.seen("c", "out") == []


def test_exception_in_catch_path_unwinds_further() -> None:
    doc = with_input(
        {
            "outer": ("TryCatch", {}),
            "tc": ("TryCatch", {}),
            "t1": ("Throw", {"messageText": "first"}),
            "t2": ("Throw", {"messageText": "second"}),
            "c": ("Passthrough", {}),
        },
        ["outer.try -> tc", "tc.try -> t1", "tc.catch -> t2", "outer.catch -> c"],
        first="outer",
    )
    h = FlowHarness(doc)
    h.inject("in", b"x")
    caught = h.seen("c", "out")
    assert [e.child("Text").value for e in caught[0].exception_list.children()] == ["second"]
