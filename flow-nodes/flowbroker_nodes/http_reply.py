"""HTTPReply: answers the HTTP request an HTTPInput node received, named by its request identifier.

The status code comes from ``LocalEnvironment.Destination.HTTP.ReplyStatusCode`` (200 when
unset), the headers from ``Root.HTTPReplyHeader`` (with a Content-Type from the body's domain
when the flow sets none), the body is the message body written out by its domain.
"""

from __future__ import annotations

from flowbroker_nodes.base import Assembly, NodeError
from flowbroker_nodes.base import Node as BaseNode
from flowbroker_nodes.http_message import destination_value, header_fields, with_default_headers
from flowbroker_nodes.spec import NodeSpec, Property, Terminal

SPEC = NodeSpec(
    type="HTTPReply",
    label="HTTPReply",
    category="output",
    icon="http-out",
    extra={"testOutput": "http"},
    description="Sends the message as the reply to the HTTP request that started the flow "
    "(LocalEnvironment.Destination.HTTP.RequestIdentifier).",
    inputs=(Terminal("in", "in", "In"),),
    outputs=(Terminal("out", "out", "Out"), Terminal("failure", "failure", "Failure")),
    properties=(
        Property(
            "ignoreTransportFailures",
            "boolean",
            "Ignore transport failures",
            default=True,
            description="When the client no longer waits (it timed out, went away or was already "
            "answered) the flow goes on; unset, that is a failure.",
        ),
        Property(
            "generateDefaultHttpHeaders",
            "boolean",
            "Generate default HTTP headers",
            default=True,
            description="Adds a Content-Type from the body's domain when Root.HTTPReplyHeader has none.",
        ),
    ),
)


class Node(BaseNode):
    """Hands status, headers and body to the execution group's HTTP listener."""

    SPEC = SPEC

    def evaluate(self, assembly: Assembly, terminal: str) -> None:
        local = assembly.local_environment
        request_id = destination_value(local, "RequestIdentifier")
        if isinstance(request_id, str):
            try:
                request_id = bytes.fromhex(request_id)
            except ValueError:
                request_id = None
        if not isinstance(request_id, bytes | bytearray) or not request_id:
            raise NodeError(
                f"{self.name}: no LocalEnvironment.Destination.HTTP.RequestIdentifier to reply to",
                number=3165,
            )
        status = _status(destination_value(local, "ReplyStatusCode"))
        root = assembly.root
        headers = header_fields(root, "HTTPReplyHeader")
        if self.properties.get("generateDefaultHttpHeaders", True):
            headers = with_default_headers(headers, root)
        _, _, body = self.flow.message_parts(root)
        delivered = self.flow.http_listener().reply(bytes(request_id), status, headers, body)
        if not delivered:
            text = f"{self.name}: the HTTP client is no longer waiting for this reply (timed out or answered)"
            if not self.properties.get("ignoreTransportFailures", True):
                raise NodeError(text, number=3166)
            self.flow.log(text)
        self.propagate("out", assembly)


def _status(value: object) -> int:
    if value is None or value == "":
        return 200
    try:
        status = int(str(value))
    except ValueError:
        raise NodeError(
            f"LocalEnvironment.Destination.HTTP.ReplyStatusCode must be a number, got {value!r}"
        ) from None
    if not 100 <= status <= 599:
        raise NodeError(f"LocalEnvironment.Destination.HTTP.ReplyStatusCode {status} is not 100-599")
    return status
