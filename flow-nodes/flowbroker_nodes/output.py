"""Output: the exit terminal of a subflow; becomes one output terminal of the subflow node."""

from __future__ import annotations

from flowbroker_nodes.base import Assembly
from flowbroker_nodes.base import Node as BaseNode
from flowbroker_nodes.spec import NodeSpec, Property, Terminal

SPEC = NodeSpec(
    type="Output",
    label="Output",
    category="subflow",
    icon="subflow-out",
    extra={"subflow": "output", "terminalProperty": "terminalName"},
    description="In a flow used as a subflow, each Output node becomes an output terminal (named by its "
    "terminal name) of the Subflow node that uses it.",
    inputs=(Terminal("in", "in", "In"),),
    properties=(
        Property(
            "terminalName",
            "string",
            "Terminal name",
            default="out",
            description="The name of the output terminal on the Subflow node.",
        ),
    ),
)


class Node(BaseNode):
    """Inside an expanded subflow: the flow compiler wires out to the subflow node's terminal."""

    SPEC = SPEC

    def evaluate(self, assembly: Assembly, terminal: str) -> None:
        self.propagate("out", assembly)
