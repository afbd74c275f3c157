"""MQInput: gets messages from a queue of the queue manager and starts the flow on them."""

from __future__ import annotations

import dataclasses

from flowbroker_nodes.base import (
    Assembly,
    DeployProblem,
    QueueInput,
)
from flowbroker_nodes.base import Node as BaseNode
from flowbroker_nodes.spec import NodeSpec, Property, Terminal

SPEC = NodeSpec(
    type="MQInput",
    label="MQInput",
    category="input",
    role="input",
    extra={
        "readsQueue": {"property": "queueName"},
        "testInput": "queue",
        "namesMessageSet": {"property": "messageSet", "when": {"messageDomain": "MRM"}},
    },
    icon="queue-in",
    description="Gets each message from a queue, builds the message assembly from it and propagates it "
    "through the flow in a unit of work decided by the transaction mode.",
    outputs=(
        Terminal("out", "out", "Out"),
        Terminal("failure", "failure", "Failure"),
        Terminal("catch", "catch", "Catch"),
    ),
    properties=(
        Property(
            "queueName",
            "queue",
            "Queue name",
            required=True,
            editor="queue",
            description="The local queue this node gets messages from.",
        ),
        Property(
            "transactionMode",
            "enum",
            "Transaction mode",
            default="yes",
            enum=("yes", "no", "automatic"),
            description="yes: the flow runs in a unit of work; no: it does not; automatic: only when the "
            "incoming message is persistent.",
        ),
        Property(
            "messageDomain",
            "enum",
            "Message domain",
            default="BLOB",
            enum=("BLOB", "XMLNSC", "XMLNS", "XML", "JSON", "MRM"),
            description="The domain the body is parsed in when the message carries no MQRFH2 <mcd> folder.",
        ),
        Property(
            "messageSet",
            "string",
            "Message set",
            default="",
            description="Message set of the default template (MRM).",
        ),
        Property(
            "messageType",
            "string",
            "Message type",
            default="",
            description="Message type of the default template (MRM).",
        ),
        Property(
            "messageFormat",
            "string",
            "Message format",
            default="",
            description="Physical format of the default template (MRM: CWF, XML).",
        ),
        Property(
            "orderMode",
            "enum",
            "Order mode",
            default="default",
            enum=("default", "byQueueOrder"),
            description="byQueueOrder processes messages one at a time in queue order, whatever the "
            "flow's additional instances.",
        ),
        Property(
            "waitInterval",
            "integer",
            "Wait interval (ms)",
            default=1000,
            minimum=1,
            maximum=60000,
            description="How long one get waits for a message before the thread checks for a stop.",
        ),
        Property(
            "readAhead",
            "integer",
            "Read ahead",
            default=32,
            minimum=1,
            maximum=1000,
            description="At most this many waiting messages are got together and committed in one unit of "
            "work (ACE's commitCount); 1 gives every message its own unit of work. After a failure the "
            "messages of that batch are retried one at a time.",
        ),
        Property(
            "backoutThreshold",
            "integer",
            "Backout threshold",
            default=0,
            minimum=0,
            maximum=999999,
            description="Backout count at which a message goes to the failure terminal, else the backout "
            "queue, else the dead-letter queue; 0 takes the queue's own BOTHRESH, and when the queue has "
            "none the execution group's FLOWBROKER_BACKOUT_THRESHOLD (default 3). Never infinite.",
        ),
        Property(
            "backoutQueue",
            "queue",
            "Backout queue",
            default="",
            editor="queue",
            description="Where a message that reached the threshold goes; empty takes the queue's "
            "BOQNAME, then the dead-letter queue.",
        ),
    ),
)


class Node(BaseNode):
    """Names the queue its flow threads get from; they run the get-propagate-commit loop."""

    SPEC = SPEC

    def prepare(self) -> None:
        props = self.properties
        if not str(props.get("queueName") or "").strip():
            raise DeployProblem("required: the input queue", property="queueName")
        #: At most this many messages per unit of work (the flow's commitCount may set it).
        self.read_ahead = max(1, int(props.get("readAhead") or 1))
        if props.get("orderMode") == "byQueueOrder":
            self.read_ahead = 1
        self.input = QueueInput(
            queue=str(props["queueName"]).strip(),
            template={
                "domain": str(props.get("messageDomain") or "BLOB"),
                "set": str(props.get("messageSet") or ""),
                "type": str(props.get("messageType") or ""),
                "format": str(props.get("messageFormat") or ""),
            },
            transaction_mode=str(props.get("transactionMode") or "yes"),
            wait_ms=int(props.get("waitInterval") or 1000),
            backout_threshold=int(props.get("backoutThreshold") or 0),
            backout_queue=str(props.get("backoutQueue") or ""),
        )

    def queue_input(self) -> QueueInput:
        return dataclasses.replace(self.input, read_ahead=self.read_ahead)

    def evaluate(self, assembly: Assembly, terminal: str) -> None:
        # a message injected on this node (tests, the designer's "inject") starts the flow here
        self.propagate("out", assembly)
