"""AggregateRequest: records a request of the aggregation being sent (ACE's node of the same name).

Placed after an MQOutput node on the path from an AggregateControl node: each entry of
``LocalEnvironment.WrittenDestination.MQ.DestinationData`` the MQOutput wrote is one request,
recorded by its MsgId (the CorrelId its reply must carry) with this node's folder name, which
names the reply's folder in the combined message. The record is put under syncpoint, with the
request itself; the message then goes on to ``out`` unchanged.
"""

from __future__ import annotations

from flowbroker_nodes import aggregation
from flowbroker_nodes.base import Assembly, DeployProblem, NodeError, field, field_value
from flowbroker_nodes.base import Node as BaseNode
from flowbroker_nodes.spec import NodeSpec, Property, Terminal

SPEC = NodeSpec(
    type="AggregateRequest",
    label="AggregateRequest",
    category="routing",
    icon="fan-out",
    description="Records the request an MQOutput node just sent as part of the aggregation started by the "
    "AggregateControl node before it; its reply is placed in the combined message under the folder name.",
    inputs=(Terminal("in", "in", "In"),),
    outputs=(Terminal("out", "out", "Out"), Terminal("failure", "failure", "Failure")),
    properties=(
        Property(
            "folderName",
            "string",
            "Folder name",
            required=True,
            description="The folder of ComIbmAggregateReplyBody that holds this request's reply.",
        ),
    ),
)

_FOLDER_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.")


class Node(BaseNode):
    """Records the requests just sent; see the module docstring."""

    SPEC = SPEC

    def prepare(self) -> None:
        folder = str(self.properties.get("folderName") or "").strip()
        if not folder:
            raise DeployProblem("required: the folder name of this request's reply", property="folderName")
        if len(folder) > 128 or not set(folder) <= _FOLDER_CHARS or folder[0].isdigit():
            raise DeployProblem(
                f"the folder name {folder!r} must be a field name: letters, digits, '_', '-', '.', "
                "not starting with a digit, at most 128 characters",
                property="folderName",
            )
        self.folder = folder

    def evaluate(self, assembly: Assembly, terminal: str) -> None:
        flow = self.flow
        sending = aggregation.open_fanouts()
        ident = str(
            field_value(assembly.local_environment, "ComIbmAggregateControlNode", "AggregateId") or ""
        )
        fanout = sending.get(ident.lower()) or (list(sending.values())[-1] if sending else None)
        if fanout is None:
            raise NodeError(
                f"{self.name}: no aggregation is being sent: an AggregateRequest node must be on a path "
                "from an AggregateControl node",
                number=2230,
            )
        mq = field(assembly.local_environment, "WrittenDestination", "MQ")
        sent = [
            value
            for entry in (mq.children_named("DestinationData") if mq is not None else ())
            if isinstance(value := field_value(entry, "msgId"), bytes | bytearray)
        ]
        if not sent:
            raise NodeError(
                f"{self.name}: no request was sent before this node: "
                "LocalEnvironment.WrittenDestination.MQ.DestinationData.msgId is missing (connect it to an "
                "MQOutput node's out terminal)",
                number=2230,
            )
        for msg_id in sent:
            if len(fanout.requests) >= aggregation.MAX_REQUESTS:
                raise NodeError(
                    f"an aggregation may send at most {aggregation.MAX_REQUESTS} requests", number=2230
                )
            index = len(fanout.requests)
            key = bytes(msg_id).ljust(24, b"\x00")
            flow.put_record(
                aggregation.REQUEST_QUEUE,
                aggregation.request_record(fanout, self.folder, index),
                correl_id=key,
                syncpoint=True,
            )
            fanout.requests.append(key.hex())
        self.propagate("out", assembly)
