"""FlowOrder: propagates the same message to first, then to second."""

from __future__ import annotations

from flowbroker_nodes.base import Assembly
from flowbroker_nodes.base import Node as BaseNode
from flowbroker_nodes.spec import NodeSpec, Terminal

SPEC = NodeSpec(
    type="FlowOrder",
    label="FlowOrder",
    category="construction",
    icon="flow-order",
    description="Propagates the message to first and, when that returns without an exception, to second.",
    inputs=(Terminal("in", "in", "In"),),
    outputs=(
        Terminal("first", "out", "First"),
        Terminal("second", "out", "Second"),
        Terminal("failure", "failure", "Failure"),
    ),
)


class Node(BaseNode):
    """Propagates to first, then (if that completed) to second."""

    SPEC = SPEC

    def evaluate(self, assembly: Assembly, terminal: str) -> None:
        self.propagate("first", assembly)
        self.propagate("second", assembly)
