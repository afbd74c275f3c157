"""Throw: raises a user exception with a message number and text."""

from __future__ import annotations

from flowbroker_nodes.base import Assembly, NodeError
from flowbroker_nodes.base import Node as BaseNode
from flowbroker_nodes.spec import NodeSpec, Property, Terminal

SPEC = NodeSpec(
    type="Throw",
    label="Throw",
    category="construction",
    icon="throw",
    description="Throws a user exception; it unwinds to the nearest TryCatch, or to the input node.",
    inputs=(Terminal("in", "in", "In"),),
    properties=(
        Property("messageNumber", "integer", "Message number", default=3001, minimum=0),
        Property(
            "messageText",
            "string",
            "Message text",
            default="",
            description="Text of the exception; recorded in the ExceptionList inserts.",
        ),
    ),
)


class Node(BaseNode):
    """Raises a UserException with the configured number and text."""

    SPEC = SPEC

    def evaluate(self, assembly: Assembly, terminal: str) -> None:
        text = self.properties.get("messageText") or f"user exception thrown by {self.name}"
        raise NodeError(
            text,
            number=int(self.properties.get("messageNumber") or 3001),
            inserts=(text,),
            kind="UserException",
        )
