"""Subflow: a flow used as a node; its Input and Output nodes become the node's terminals."""

from __future__ import annotations

from flowbroker_nodes.base import Assembly, NodeError
from flowbroker_nodes.base import Node as BaseNode
from flowbroker_nodes.spec import NodeSpec, Property, Terminal

SPEC = NodeSpec(
    type="Subflow",
    label="Subflow",
    category="subflow",
    icon="subflow",
    description="Runs another flow inline: a message arriving on an input terminal enters through the Input "
    "node of that name, and leaves through the Output node of the matching terminal name.",
    inputs=(Terminal("in", "in", "In"),),
    outputs=(Terminal("out", "out", "Out"),),
    dynamic_terminals=True,
    # the designer finds the subflow node, and the Input and Output nodes, by these roles
    extra={"subflow": "node"},
    properties=(
        Property(
            "flow",
            "json",
            "Flow",
            required=True,
            description='The subflow: a flow document, or {"name": …, "version": …} naming a saved flow.',
        ),
    ),
)


class Node(BaseNode):
    """Never runs: the flow compiler replaces a subflow node by the nodes of its flow."""

    SPEC = SPEC

    def evaluate(self, assembly: Assembly, terminal: str) -> None:
        raise NodeError(f"subflow node {self.name} was not expanded by the flow compiler")
