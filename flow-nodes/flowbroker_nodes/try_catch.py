"""TryCatch: propagates to try, and on an exception below it propagates the original message to catch."""

from __future__ import annotations

from flowbroker_nodes.base import Assembly, Unwinding
from flowbroker_nodes.base import Node as BaseNode
from flowbroker_nodes.spec import NodeSpec, Terminal

SPEC = NodeSpec(
    type="TryCatch",
    label="TryCatch",
    category="construction",
    icon="try-catch",
    description="Sends the message to try; an exception thrown downstream of try is caught here and the "
    "original message goes to catch with the ExceptionList describing it.",
    inputs=(Terminal("in", "in", "In"),),
    outputs=(Terminal("try", "out", "Try"), Terminal("catch", "catch", "Catch")),
)


class Node(BaseNode):
    """Catches what unwinds from the try path and sends the original message to catch."""

    SPEC = SPEC

    def evaluate(self, assembly: Assembly, terminal: str) -> None:
        try:
            self.propagate("try", assembly)
        except Unwinding as unwound:
            caught = assembly.replace(exception_list=unwound.exception_list)
            if not self.propagate("catch", caught):
                raise
