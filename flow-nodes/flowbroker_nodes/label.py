"""Label: a named entry point that RouteToLabel and PROPAGATE TO LABEL jump to."""

from __future__ import annotations

from flowbroker_nodes.base import Assembly, DeployProblem
from flowbroker_nodes.base import Node as BaseNode
from flowbroker_nodes.spec import NodeSpec, Property, Terminal

SPEC = NodeSpec(
    type="Label",
    label="Label",
    category="routing",
    icon="label",
    extra={"labelProperty": "labelName"},
    description="The target of RouteToLabel and of ESQL PROPAGATE TO LABEL; has no input terminal.",
    outputs=(Terminal("out", "out", "Out"),),
    properties=(
        Property(
            "labelName",
            "string",
            "Label name",
            required=True,
            description="The name routed to; unique within the flow.",
        ),
    ),
)


class Node(BaseNode):
    """Entered by RouteToLabel or PROPAGATE TO LABEL; passes the message to out."""

    SPEC = SPEC

    def prepare(self) -> None:
        if not str(self.properties.get("labelName") or "").strip():
            raise DeployProblem("required: a label name", property="labelName")

    def evaluate(self, assembly: Assembly, terminal: str) -> None:
        self.propagate("out", assembly)
