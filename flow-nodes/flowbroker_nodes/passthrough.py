"""Passthrough: passes the message on unchanged (a label in the flow drawing)."""

from __future__ import annotations

from flowbroker_nodes.base import Assembly
from flowbroker_nodes.base import Node as BaseNode
from flowbroker_nodes.spec import NodeSpec, Property, Terminal

SPEC = NodeSpec(
    type="Passthrough",
    label="Passthrough",
    category="construction",
    icon="passthrough",
    description="Propagates the message unchanged to out.",
    inputs=(Terminal("in", "in", "In"),),
    outputs=(Terminal("out", "out", "Out"),),
    properties=(
        Property(
            "label",
            "string",
            "Label",
            default="",
            description="A note shown on the node; no effect on the message.",
        ),
    ),
)


class Node(BaseNode):
    """Passes the message to out."""

    SPEC = SPEC

    def evaluate(self, assembly: Assembly, terminal: str) -> None:
        self.propagate("out", assembly)
