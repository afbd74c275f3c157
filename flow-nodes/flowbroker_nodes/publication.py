"""Publication: publishes the message through the queue manager's publish/subscribe engine."""

from __future__ import annotations

from flowbroker_nodes.base import Assembly, NodeError
from flowbroker_nodes.base import Node as BaseNode
from flowbroker_nodes.spec import NodeSpec, Property, Terminal

SPEC = NodeSpec(
    type="Publication",
    role="output",
    label="Publication",
    category="output",
    icon="publish",
    description="Publishes the message on a topic: the MQRFH2 <psc><Topic> of the message, or the topic "
    "property; subscribers' content filters apply.",
    inputs=(Terminal("in", "in", "In"),),
    outputs=(
        Terminal("noMatch", "out", "No match"),
        Terminal("out", "out", "Out"),
        Terminal("failure", "failure", "Failure"),
    ),
    properties=(
        Property(
            "topic",
            "topic",
            "Topic",
            default="",
            editor="topic",
            description="Topic used when the message names none in its MQRFH2 <psc> folder.",
        ),
        Property(
            "transactionMode",
            "enum",
            "Transaction mode",
            default="automatic",
            enum=("automatic", "yes", "no"),
        ),
    ),
)

_SYNCPOINT = {"automatic": None, "yes": True, "no": False}


class Node(BaseNode):
    """Publishes on the message's <psc> topic or the configured one."""

    SPEC = SPEC

    def evaluate(self, assembly: Assembly, terminal: str) -> None:
        # read off the header's layout while it is unread: the message then goes out as its bytes
        topic = self.flow.header_field(assembly.root, "psc", "Topic") or self.properties.get("topic") or ""
        if not str(topic).strip():
            raise NodeError(
                "no topic: the message has no MQRFH2 <psc><Topic> and the node names none", number=2299
            )
        # when neither out nor noMatch leads anywhere, nothing depends on the number of
        # deliveries, and inside a batch the publication can travel with the commit
        routed = self.is_connected("out") or self.is_connected("noMatch")
        delivered = self.flow.publish(
            str(topic).strip(),
            assembly.root,
            syncpoint=_SYNCPOINT[self.properties.get("transactionMode") or "automatic"],
            need_deliveries=routed,
        )
        if routed:
            self.propagate("out" if delivered else "noMatch", assembly)
