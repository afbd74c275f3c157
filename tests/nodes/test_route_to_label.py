"""RouteToLabel: jumps to the Label named first (or last) in the RouterList, consuming that entry."""

from __future__ import annotations

import pytest
from esql.tree import Element
from flowbroker.runtime.harness import FlowHarness, with_input
from flowbroker_nodes.base import Unwinding


def _router(*labels: str) -> Element:
    env = Element("LocalEnvironment")
    router = env.add("Destination").add("RouterList")
    for label in labels:
        router.add("DestinationData").add("labelName", label)
    return env


def _doc(mode: str = "routeToFirst") -> dict:
    return with_input(
        {
            "r": ("RouteToLabel", {"mode": mode}),
            "A": ("Label", {"labelName": "A"}),
            "B": ("Label", {"labelName": "B"}),
            "back": ("Passthrough", {}),
        },
        ["A.out -> back"],
        first="r",
    )


def test_routes_to_the_first_label_and_consumes_it() -> None:
    h = FlowHarness(_doc())
    env = _router("A", "B")
    h.inject("r", b"x", local_environment=env)
    assert len(h.seen("A", "out")) == 1
    assert h.seen("B", "out") == []
    assert [e.child("labelName").value for e in env.child("Destination").child("RouterList").children()] == [
        "B"
    ]


def test_route_to_last() -> None:
    h = FlowHarness(_doc("routeToLast"))
    h.inject("r", b"x", local_environment=_router("A", "B"))
    assert len(h.seen("B", "out")) == 1 and h.seen("A", "out") == []


def test_unknown_label_and_empty_list_unwind_with_the_reason() -> None:
    h = FlowHarness(_doc())
    with pytest.raises(Unwinding) as info:
        h.inject("r", b"x", local_environment=_router("NOPE"))
    assert "no Label node named 'NOPE'" in str(info.value)
    with pytest.raises(Unwinding) as info:
        h.inject("r", b"x")
    assert "RouterList holds no DestinationData" in str(info.value)
