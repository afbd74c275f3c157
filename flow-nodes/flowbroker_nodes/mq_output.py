"""MQOutput: puts the message on a queue, or on every queue of the LocalEnvironment destination list.

What was put (queue, MsgId, CorrelId) reaches the nodes on ``out`` in
``LocalEnvironment.WrittenDestination.MQ.DestinationData``, one entry per queue, as ACE writes it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from flowbroker_nodes.base import Assembly, DeployProblem, NodeError, field, field_value
from flowbroker_nodes.base import Node as BaseNode
from flowbroker_nodes.spec import NodeSpec, Property, Terminal

SPEC = NodeSpec(
    type="MQOutput",
    role="output",
    extra={"writesQueue": {"property": "queueName", "when": {"destinationMode": "queueName"}}},
    label="MQOutput",
    category="output",
    icon="queue-out",
    description="Writes the message assembly's Root as a queue message and puts it on the named queue, or on "
    "each queue of LocalEnvironment.Destination.MQ.DestinationData[] when the destination mode says so.",
    inputs=(Terminal("in", "in", "In"),),
    outputs=(Terminal("out", "out", "Out"), Terminal("failure", "failure", "Failure")),
    properties=(
        Property(
            "queueName",
            "queue",
            "Queue name",
            default="",
            editor="queue",
            description="The queue to put to (required when the destination mode is queueName).",
        ),
        Property(
            "destinationMode",
            "enum",
            "Destination mode",
            default="queueName",
            enum=("queueName", "destinationList", "replyToQueue"),
            description="queueName: the queue property; destinationList: every "
            "LocalEnvironment.Destination.MQ.DestinationData queueName; replyToQueue: the MQMD ReplyToQ.",
        ),
        Property(
            "transactionMode",
            "enum",
            "Transaction mode",
            default="automatic",
            enum=("automatic", "yes", "no"),
            description="automatic: put inside the flow's unit of work when there is one; yes: always "
            "under syncpoint; no: put at once, outside any unit of work.",
        ),
        Property(
            "persistenceMode",
            "enum",
            "Persistence",
            default="asMessage",
            enum=("asMessage", "persistent", "nonPersistent"),
            description="asMessage keeps the MQMD Persistence of the message.",
        ),
        Property(
            "newMsgId",
            "boolean",
            "New message id",
            default=True,
            description="Let the queue manager assign a new MsgId.",
        ),
        Property(
            "newCorrelId",
            "boolean",
            "New correlation id",
            default=False,
            description="Clear the CorrelId before the put.",
        ),
    ),
)

_SYNCPOINT = {"automatic": None, "yes": True, "no": False}


class Node(BaseNode):
    """Puts the message on its queue(s); then propagates it to out."""

    SPEC = SPEC

    def prepare(self) -> None:
        props = self.properties
        if props.get("destinationMode") == "queueName" and not props.get("queueName"):
            raise DeployProblem("required when the destination mode is queueName", property="queueName")
        self.syncpoint = _SYNCPOINT[props.get("transactionMode") or "automatic"]

    def queues(self, assembly: Assembly) -> list[str]:
        mode = self.properties.get("destinationMode")
        if mode == "destinationList":
            names = []
            for folder in ("MQ", "MQDestinationList"):
                holder = field(assembly.local_environment, "Destination", folder)
                if holder is not None:
                    for entry in holder.children_named("DestinationData"):
                        name = field_value(entry, "queueName")
                        if name:
                            names.append(str(name).strip())
            if not names:
                raise NodeError("the destination list LocalEnvironment.Destination.MQ is empty", number=2667)
            return names
        if mode == "replyToQueue":
            reply = str(field_value(assembly.root, "MQMD", "ReplyToQ") or "").strip()
            if not reply:
                raise NodeError("the message has no MQMD.ReplyToQ", number=2667)
            return [reply]
        return [str(self.properties["queueName"])]

    def straight_writer(self, flow: Any) -> Callable[[Any, bytes], bool] | None:
        """For a flow thread's straight run (``flowbroker.runtime.straight``): a function that puts
        a message got from the input queue with a new body as :meth:`evaluate` puts the Root that
        copied it and changed only its body, True once put, False when the runtime cannot put that
        message so (:meth:`evaluate` then takes it); None when this node puts otherwise (a
        destination list, the reply queue) or the runtime has no such put."""
        put_straight = getattr(flow, "put_straight", None)
        if put_straight is None or (self.properties.get("destinationMode") or "queueName") != "queueName":
            return None
        props = self.properties
        queue = str(props["queueName"])
        syncpoint = self.syncpoint
        persistence = props.get("persistenceMode") or "asMessage"
        new_msg_id = bool(props.get("newMsgId", True))
        new_correl_id = bool(props.get("newCorrelId", False))

        def write(message: Any, body: bytes) -> bool:
            return bool(put_straight(queue, message, body, syncpoint, persistence, new_msg_id, new_correl_id))

        return write

    def evaluate(self, assembly: Assembly, terminal: str) -> None:
        flow = self.flow
        props = self.properties
        written: list[tuple[str, bytes]] = []
        for queue in self.queues(assembly):
            msg_id = flow.put(
                queue,
                assembly.root,
                syncpoint=self.syncpoint,
                persistence=props.get("persistenceMode") or "asMessage",
                new_msg_id=bool(props.get("newMsgId", True)),
                new_correl_id=bool(props.get("newCorrelId", False)),
            )
            written.append((queue, msg_id))
        if not self.wires.get("out"):
            return
        # as ACE: what was put, for the nodes after this one (an AggregateRequest records the
        # MsgId its reply will be correlated to)
        local_environment = assembly.local_environment.copy()
        holder = field(local_environment, "WrittenDestination") or local_environment.add("WrittenDestination")
        old = holder.child("MQ")
        if old is not None:
            old.detach()
        mq = holder.add("MQ")
        correl = field_value(assembly.root, "MQMD", "CorrelId")
        for queue, msg_id in written:
            data = mq.add("DestinationData")
            data.add("queueName", queue)
            data.add("queueManagerName", "")
            data.add("replyIdentifier", msg_id.hex().upper())
            data.add("msgId", msg_id)
            if not props.get("newCorrelId", False) and isinstance(correl, bytes | bytearray):
                data.add("correlId", bytes(correl))
        self.propagate("out", assembly.replace(local_environment=local_environment))
