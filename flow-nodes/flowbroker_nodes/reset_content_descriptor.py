"""ResetContentDescriptor: re-describes the body with a new domain, set, type and format."""

from __future__ import annotations

from flowbroker_nodes.base import Assembly
from flowbroker_nodes.base import Node as BaseNode
from flowbroker_nodes.spec import NodeSpec, Property, Terminal

SPEC = NodeSpec(
    type="ResetContentDescriptor",
    label="ResetContentDescriptor",
    category="transformation",
    icon="reset",
    extra={"namesMessageSet": {"property": "messageSet", "when": {"resetMessageSet": True}}},
    description="Writes the body out as bytes and attaches it again under the new domain (and message set, "
    "type, format), so later nodes parse it afresh.",
    inputs=(Terminal("in", "in", "In"),),
    outputs=(Terminal("out", "out", "Out"), Terminal("failure", "failure", "Failure")),
    properties=(
        Property(
            "messageDomain",
            "enum",
            "Message domain",
            default="BLOB",
            enum=("BLOB", "XMLNSC", "XMLNS", "XML", "JSON", "MRM"),
        ),
        Property("resetMessageDomain", "boolean", "Reset domain", default=True),
        Property("messageSet", "string", "Message set", default=""),
        Property("resetMessageSet", "boolean", "Reset set", default=False),
        Property("messageType", "string", "Message type", default=""),
        Property("resetMessageType", "boolean", "Reset type", default=False),
        Property("messageFormat", "string", "Message format", default=""),
        Property("resetMessageFormat", "boolean", "Reset format", default=False),
    ),
)


class Node(BaseNode):
    """Writes the body as bytes and attaches them again under the new descriptor."""

    SPEC = SPEC

    def prepare(self) -> None:
        props = self.properties
        self.template = {
            key: str(props.get(f"message{key.title()}") or "")
            for key in ("domain", "set", "type", "format")
            if props.get(f"resetMessage{key.title()}")
        }

    def evaluate(self, assembly: Assembly, terminal: str) -> None:
        # the input Root may be shared with other paths, so the reset body goes into a copy of
        # the headers with the body bytes shared (an unparsed body is not parsed by copy()).
        root = assembly.root.copy()
        self.flow.reset_body(root, self.template)
        self.propagate("out", assembly.replace(root=root))
