"""Input: the entry terminal of a subflow; becomes one input terminal of the subflow node."""

from __future__ import annotations

from flowbroker_nodes.base import Assembly
from flowbroker_nodes.base import Node as BaseNode
from flowbroker_nodes.spec import NodeSpec, Property, Terminal

SPEC = NodeSpec(
    type="Input",
    label="Input",
    category="subflow",
    icon="subflow-in",
    extra={"subflow": "input", "terminalProperty": "terminalName"},
    description="In a flow used as a subflow, each Input node becomes an input terminal (named by its "
    "terminal name) of the Subflow node that uses it.",
    outputs=(Terminal("out", "out", "Out"),),
    properties=(
        Property(
            "terminalName",
            "string",
            "Terminal name",
            default="in",
            description="The name of the input terminal on the Subflow node.",
        ),
    ),
)


class Node(BaseNode):
    """Inside an expanded subflow: what arrives on the subflow terminal goes on to out."""

    SPEC = SPEC

    def evaluate(self, assembly: Assembly, terminal: str) -> None:
        self.propagate("out", assembly)
