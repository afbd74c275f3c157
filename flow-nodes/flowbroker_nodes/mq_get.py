"""MQGet: gets one message from a queue in the middle of a flow, as ACE's MQGet node.

The get goes through the flow thread's queue-manager connection and, under syncpoint, belongs
to the unit of work of the message being processed: when the flow backs out, the message got
here returns to its queue. Get by CorrelId / MsgId takes the id from
``LocalEnvironment.MQ.GET.MQMD`` when the flow set one there, else from the input message's
MQMD (ACE's "input MQMD location"). What was got goes to ``out``: by default as the whole
output message (ACE's output data location ``OutputRoot``), or, with another location, as its
parsed body placed there in a copy of the input message. Nothing within the wait interval goes
to ``noMessage`` with the message unchanged; an error (an unknown queue, a body that does not
parse) goes to ``failure``.
"""

from __future__ import annotations

import re

from esql.tree import Element

from flowbroker_nodes.base import Assembly, DeployProblem, NodeError, field, field_value
from flowbroker_nodes.base import Node as BaseNode
from flowbroker_nodes.spec import NodeSpec, Property, Terminal

SPEC = NodeSpec(
    type="MQGet",
    label="MQGet",
    category="transformation",
    icon="queue-in",
    extra={
        "readsQueue": {"property": "queueName"},
        "namesMessageSet": {"property": "messageSet", "when": {"messageDomain": "MRM"}},
    },
    description="Gets a message from a queue while the flow runs (optionally the one whose CorrelId or "
    "MsgId matches the input message's), under the flow's unit of work, and propagates it to out; to "
    "noMessage when none arrives within the wait interval.",
    inputs=(Terminal("in", "in", "In"),),
    outputs=(
        Terminal("out", "out", "Out"),
        Terminal("noMessage", "out", "No message"),
        Terminal("failure", "failure", "Failure"),
    ),
    properties=(
        Property(
            "queueName",
            "queue",
            "Queue name",
            required=True,
            editor="queue",
            description="The queue to get from; LocalEnvironment.MQ.GET.QueueName overrides it.",
        ),
        Property(
            "waitInterval",
            "integer",
            "Wait interval (ms)",
            default=1000,
            minimum=0,
            maximum=600000,
            description="How long to wait for a message before going to noMessage.",
        ),
        Property(
            "getByCorrelId",
            "boolean",
            "Get by CorrelId",
            default=False,
            description="Only a message whose CorrelId is LocalEnvironment.MQ.GET.MQMD.CorrelId, else the "
            "input message's MQMD.CorrelId.",
        ),
        Property(
            "getByMessageId",
            "boolean",
            "Get by MsgId",
            default=False,
            description="Only a message whose MsgId is LocalEnvironment.MQ.GET.MQMD.MsgId, else the input "
            "message's MQMD.MsgId.",
        ),
        Property(
            "transactionMode",
            "enum",
            "Transaction mode",
            default="automatic",
            enum=("automatic", "yes", "no"),
            description="automatic: under syncpoint when the flow runs in a unit of work; yes: always; "
            "no: the get is final at once.",
        ),
        Property(
            "outputDataLocation",
            "string",
            "Output data location",
            default="OutputRoot",
            description="OutputRoot: the message got becomes the output message; a path such as "
            "OutputRoot.XMLNSC.order.reply or OutputLocalEnvironment.Variables.Reply: its parsed body is "
            "placed there, in a copy of the input message.",
        ),
        Property(
            "messageDomain",
            "enum",
            "Message domain",
            default="BLOB",
            enum=("BLOB", "XMLNSC", "XMLNS", "XML", "JSON", "MRM"),
            description="The domain the body is parsed in when the message carries no MQRFH2 <mcd> folder.",
        ),
        Property("messageSet", "string", "Message set", default="", description="Message set (MRM)."),
        Property("messageType", "string", "Message type", default="", description="Message type (MRM)."),
        Property("messageFormat", "string", "Message format", default="", description="Format (MRM)."),
    ),
)

_SYNCPOINT = {"automatic": None, "yes": True, "no": False}
_TREES = ("OutputRoot", "OutputLocalEnvironment", "Environment")
_STEP_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]*$")


class Node(BaseNode):
    """Gets one message per message arriving; see the module docstring."""

    SPEC = SPEC

    def prepare(self) -> None:
        props = self.properties
        self.queue = str(props.get("queueName") or "").strip()
        if not self.queue:
            raise DeployProblem("required: the queue to get from", property="queueName")
        self.wait_ms = int(props.get("waitInterval") or 0)
        self.syncpoint = _SYNCPOINT.get(str(props.get("transactionMode") or "automatic"))
        self.template = {
            "domain": str(props.get("messageDomain") or "BLOB"),
            "set": str(props.get("messageSet") or ""),
            "type": str(props.get("messageType") or ""),
            "format": str(props.get("messageFormat") or ""),
        }
        location = str(props.get("outputDataLocation") or "OutputRoot").strip().lstrip("$")
        parts = location.replace("/", ".").split(".")
        if parts[0] not in _TREES or not all(_STEP_RE.match(p) for p in parts[1:]):
            raise DeployProblem(
                f"output data location {location!r} must be OutputRoot, or a path of field names below "
                "OutputRoot, OutputLocalEnvironment or Environment",
                property="outputDataLocation",
            )
        self.location = parts

    def evaluate(self, assembly: Assembly, terminal: str) -> None:
        flow = self.flow
        get = field(assembly.local_environment, "MQ", "GET")
        queue = str(field_value(get, "QueueName") or "").strip() if get is not None else ""
        msg_id = self._id(assembly, get, "MsgId") if self.properties.get("getByMessageId") else None
        correl_id = self._id(assembly, get, "CorrelId") if self.properties.get("getByCorrelId") else None
        queue = queue or self.queue
        message = flow.get_message(
            queue, self.wait_ms, syncpoint=self.syncpoint, msg_id=msg_id, correl_id=correl_id
        )
        if message is None:
            self.propagate("noMessage", assembly)
            return
        got = flow.build_assembly(message, self.template).root
        if self.location == ["OutputRoot"]:
            self.propagate("out", assembly.replace(root=got))
            return
        body = got.last_child
        root = assembly.root.copy()
        local_environment = assembly.local_environment
        tree = self.location[0]
        if tree == "OutputRoot":
            target = root
        elif tree == "OutputLocalEnvironment":
            local_environment = local_environment.copy()
            target = local_environment
        else:
            target = assembly.environment
        for step in self.location[1:]:
            target = target.child(step) or target.add(step)
        target.clear_children()
        if body is not None and body.name not in ("Properties", "MQMD", "MQRFH2"):
            target.copy_children_from(body)
        self.propagate("out", assembly.replace(root=root, local_environment=local_environment))

    def _id(self, assembly: Assembly, get: Element | None, name: str) -> bytes:
        value = field_value(get, "MQMD", name) if get is not None else None
        if value is None:
            value = field_value(assembly.root, "MQMD", name)
        if isinstance(value, bytes | bytearray) and value.strip(b"\x00"):
            return bytes(value)
        if isinstance(value, str) and value.strip():
            try:
                return bytes.fromhex(value.strip())
            except ValueError:
                pass
        raise NodeError(
            f"cannot get by {name}: neither LocalEnvironment.MQ.GET.MQMD.{name} nor the input message's "
            f"MQMD.{name} holds an id",
            number=2230,
            inserts=(name,),
        )
