"""Unsupported: stands where an imported flow had a node of a type flowbroker does not have.

An ACE JavaCompute, .NETCompute, Mapping or SOAP node (any type without a counterpart) is
imported as this node, so the flow keeps its shape: the node's position, its connections on
terminals of the original's names, and the original type and XMI attributes for whoever
replaces it. The flow saves and opens in the designer with the gap drawn; deploying refuses it
until the node is replaced.
"""

from __future__ import annotations

from flowbroker_nodes.base import Assembly, DeployProblem, NodeError
from flowbroker_nodes.base import Node as BaseNode
from flowbroker_nodes.spec import NodeSpec, Property

SPEC = NodeSpec(
    type="Unsupported",
    label="Unsupported node",
    category="unsupported",
    icon="unsupported",
    description="A node of another product's type that flowbroker does not have, kept with its original "
    "type, attributes and connections so that the flow can be saved and completed; a flow holding one "
    "cannot be deployed until it is replaced.",
    properties=(
        Property(
            "originalType",
            "string",
            "Original type",
            default="",
            description="The node type in the product the flow came from, e.g. ComIbmJavaCompute.",
        ),
        Property(
            "originalAttributes",
            "json",
            "Original attributes",
            default={},
            description="The original node's properties as its source document gave them (name → value).",
        ),
        Property(
            "inputTerminals",
            "json",
            "Input terminals",
            default=[],
            description='The original\'s input terminals that are connected: rows {"name": terminal}.',
        ),
        Property(
            "outputTerminals",
            "json",
            "Output terminals",
            default=[],
            description='The original\'s output terminals that are connected: rows {"name": terminal}.',
        ),
    ),
    # a placeholder is saved as it is, never offered in the palette, and refused when deployed
    extra={
        "placeholder": True,
        "inputTerminalsFrom": {"property": "inputTerminals", "key": "name"},
        "outputTerminalsFrom": {"property": "outputTerminals", "key": "name"},
    },
)


def refusal(name: str, original_type: str) -> str:
    """Why a flow holding the node ``name`` of ``original_type`` cannot be deployed."""
    return (
        f"node '{name}' is an unsupported ACE node ({original_type or 'unknown type'}): "
        "replace it before deploying"
    )


class Node(BaseNode):
    """Never runs: preparing it for a deployment refuses the flow."""

    SPEC = SPEC

    def prepare(self) -> None:
        original = str(self.properties.get("originalType") or "")
        raise DeployProblem(refusal(self.name or self.id, original), property="originalType")

    def evaluate(self, assembly: Assembly, terminal: str) -> None:
        raise NodeError(refusal(self.name or self.id, str(self.properties.get("originalType") or "")))
