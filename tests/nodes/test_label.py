"""Label: entered by RouteToLabel; a duplicate or empty label name fails the deployment."""

from __future__ import annotations

import pytest
from flowbroker.runtime.compiler import FlowCompileError
from flowbroker.runtime.harness import FlowHarness, with_input


def test_duplicate_label_names_are_a_problem_on_the_second_node() -> None:
    doc = with_input(
        {"a": ("Label", {"labelName": "X"}), "b": ("Label", {"labelName": "X"}), "p": ("Passthrough", {})},
        [],
        first="p",
    )
    with pytest.raises(FlowCompileError) as info:
        FlowHarness(doc)
    assert [(p.node, p.property) for p in info.value.problems] == [("b", "labelName")]


def test_missing_label_name_is_reported_with_the_property() -> None:
    doc = with_input({"a": ("Label", {}), "p": ("Passthrough", {})}, [], first="p")
    with pytest.raises(FlowCompileError) as info:
        FlowHarness(doc)
    assert any(p.node == "a" and p.property == "labelName" for p in info.value.problems)
