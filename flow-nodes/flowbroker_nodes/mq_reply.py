"""MQReply: puts the message on the queue named by its MQMD ReplyToQ, correlated to the request."""

from __future__ import annotations

from flowbroker_nodes.base import Assembly, NodeError, field_value
from flowbroker_nodes.base import Node as BaseNode
from flowbroker_nodes.spec import NodeSpec, Property, Terminal

SPEC = NodeSpec(
    type="MQReply",
    role="output",
    label="MQReply",
    category="output",
    icon="queue-reply",
    description="Sends the message to the request's ReplyToQ; the reply's CorrelId is the request's MsgId "
    "(or its CorrelId when that is set and the option says so).",
    inputs=(Terminal("in", "in", "In"),),
    outputs=(Terminal("out", "out", "Out"), Terminal("failure", "failure", "Failure")),
    properties=(
        Property(
            "transactionMode",
            "enum",
            "Transaction mode",
            default="automatic",
            enum=("automatic", "yes", "no"),
            description="As for MQOutput.",
        ),
        Property(
            "persistenceMode",
            "enum",
            "Persistence",
            default="asMessage",
            enum=("asMessage", "persistent", "nonPersistent"),
        ),
        Property(
            "correlIdFrom",
            "enum",
            "Reply CorrelId",
            default="msgId",
            enum=("msgId", "correlId"),
            description="msgId: the reply carries the request's MsgId as its CorrelId (MQRO_COPY_MSG_ID_"
            "TO_CORREL_ID); correlId: it passes the request's CorrelId through.",
        ),
    ),
)

_SYNCPOINT = {"automatic": None, "yes": True, "no": False}


class Node(BaseNode):
    """Replies on the request's ReplyToQ with its MsgId (or CorrelId) as the CorrelId."""

    SPEC = SPEC

    def evaluate(self, assembly: Assembly, terminal: str) -> None:
        root = assembly.root
        queue = str(field_value(root, "MQMD", "ReplyToQ") or "").strip()
        if not queue:
            raise NodeError("cannot reply: the message has no MQMD.ReplyToQ", number=2667)
        source = "CorrelId" if self.properties.get("correlIdFrom") == "correlId" else "MsgId"
        correl = field_value(root, "MQMD", source)
        self.flow.put(
            queue,
            root,
            syncpoint=_SYNCPOINT[self.properties.get("transactionMode") or "automatic"],
            persistence=self.properties.get("persistenceMode") or "asMessage",
            correl_id=correl if isinstance(correl, bytes) else None,
        )
        self.propagate("out", assembly)
