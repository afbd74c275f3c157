"""Unsupported: an imported node of a type flowbroker lacks saves with its terminals but never deploys."""

from __future__ import annotations

from typing import Any

import pytest
from flowbroker.runtime.compiler import FlowCompileError, compile_flow
from flowbroker.runtime.harness import with_input
from flowbroker.services import validation
from flowbroker_nodes import registry

JAVA = {
    "originalType": "ComIbmJavaCompute",
    "originalAttributes": {"javaClass": "com.example.Enrich"},
    "inputTerminals": [{"name": "in"}],
    "outputTerminals": [{"name": "out"}, {"name": "alternate"}],
}


def java_flow(properties: dict[str, Any] | None = None, wires: list[str] | None = None) -> dict[str, Any]:
    document = with_input(
        {
            "java": ("Unsupported", JAVA if properties is None else properties),
            "out": ("MQOutput", {"queueName": "TEST.OUT"}),
            "alt": ("MQOutput", {"queueName": "TEST.ALT"}),
        },
        ["java.out -> out", "java.alternate -> alt"] if wires is None else wires,
        "java",
    )
    document["nodes"][1]["name"] = "Enrich"
    return document


def test_a_flow_holding_one_saves_with_the_terminals_its_properties_name() -> None:
    assert validation.problems(java_flow()) == []


def test_a_connection_to_a_terminal_it_does_not_name_is_refused() -> None:
    found = validation.problems(java_flow(wires=["java.failure -> out", "out.out -> java.other"]))
    assert [p["message"] for p in found] == [
        "node 'java' (Unsupported) has no output terminal 'failure' (has: out, alternate)",
        "node 'java' (Unsupported) has no input terminal 'other' (has: in)",
    ]


def test_deploying_it_is_refused_naming_the_original_type() -> None:
    with pytest.raises(FlowCompileError) as refused:
        compile_flow(java_flow())
    assert [(p.node, p.message) for p in refused.value.problems] == [
        ("java", "node 'Enrich' is an unsupported ACE node (ComIbmJavaCompute): replace it before deploying")
    ]


def test_it_is_drawn_but_not_offered_in_the_palette() -> None:
    spec = registry.spec("Unsupported")
    assert spec is not None
    assert spec.category == "unsupported"
    assert spec.extra["placeholder"] is True
    assert spec.derived_inputs(JAVA) == ("in",)
    assert spec.derived_outputs(JAVA) == ("out", "alternate")
    assert (spec.inputs, spec.outputs) == ((), ())
