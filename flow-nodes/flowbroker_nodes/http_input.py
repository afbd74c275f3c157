"""HTTPInput: serves a path on the execution group's HTTP listener and starts the flow on each request.

The request becomes the message assembly as in ACE: ``Root.HTTPInputHeader`` holds the request
headers, the body is parsed in the node's domain on first read, ``LocalEnvironment.HTTP.Input``
holds the request line, the query string and the path (segments and ``{name}`` parameters), and
``LocalEnvironment.Destination.HTTP.RequestIdentifier`` the identifier an HTTPReply node answers.
An HTTP flow has a queue unit of work only when it puts messages: with transaction mode yes its
puts under syncpoint commit when the flow ends, and are backed out when it fails. A failure no
catch or failure path handles answers the client at once: 400 when the body could not be
parsed, else 500, the reason in one line and never a traceback.
"""

from __future__ import annotations

from typing import Any

from esql.tree import Element

from flowbroker_nodes.base import (
    Assembly,
    DeployProblem,
    FlowServices,
    innermost_entry,
)
from flowbroker_nodes.base import Node as BaseNode
from flowbroker_nodes.http_message import DOMAINS, build_root
from flowbroker_nodes.spec import NodeSpec, Property, Terminal

METHODS = ("ANY", "POST", "GET", "PUT", "DELETE", "PATCH", "HEAD", "OPTIONS")

SPEC = NodeSpec(
    type="HTTPInput",
    label="HTTPInput",
    category="input",
    role="input",
    icon="http-in",
    extra={
        "namesMessageSet": {"property": "messageSet", "when": {"messageDomain": "MRM"}},
        "testInput": "http",
    },
    description="Receives HTTP requests on a path of the execution group's HTTP listener "
    "(its httpPort, else FLOWBROKER_HTTP_PORT) and propagates each as a message; an HTTPReply node answers it.",
    outputs=(
        Terminal("out", "out", "Out"),
        Terminal("failure", "failure", "Failure"),
        Terminal("catch", "catch", "Catch"),
        Terminal("timeout", "out", "Timeout"),
    ),
    properties=(
        Property(
            "path",
            "string",
            "Path suffix for URL",
            required=True,
            description="The path served, e.g. /orders, /orders/{id} (the segment is in "
            "LocalEnvironment.HTTP.Input.Path.Parameters.id) or /orders/* (any path below).",
        ),
        Property(
            "method",
            "enum",
            "HTTP method",
            default="ANY",
            enum=METHODS,
            description="The method served; ANY serves every method (the request line is in "
            "LocalEnvironment.HTTP.Input.RequestLine).",
        ),
        Property(
            "messageDomain",
            "enum",
            "Message domain",
            default="BLOB",
            enum=DOMAINS,
            description="The domain the request body is parsed in.",
        ),
        Property("messageSet", "string", "Message set", default="", description="Message set (MRM)."),
        Property("messageType", "string", "Message type", default="", description="Message type (MRM)."),
        Property(
            "messageFormat", "string", "Message format", default="", description="Physical format (MRM)."
        ),
        Property(
            "transactionMode",
            "enum",
            "Transaction mode",
            default="yes",
            enum=("yes", "no"),
            description="yes: messages the flow puts under syncpoint commit when it ends and are backed "
            "out when it fails; no: every put is final at once.",
        ),
        Property(
            "maxClientWaitTime",
            "integer",
            "Maximum client wait time (s)",
            default=180,
            minimum=1,
            maximum=3600,
            description="How long the client waits for the reply; then the timeout terminal gets the "
            "request (when connected, with 5 s to reply), else the client gets 504.",
        ),
        Property(
            "maxPendingRequests",
            "integer",
            "Maximum pending requests",
            default=100,
            minimum=1,
            maximum=100000,
            description="Requests waiting for a free flow thread; one more is answered 503.",
        ),
    ),
)

_TEXT = "text/plain; charset=utf-8"


class Node(BaseNode):
    """Takes the requests of its route from the listener and runs the flow on each."""

    SPEC = SPEC
    #: Its flow threads connect to the queue manager only when the flow puts a message.
    needs_queue_manager = False

    def prepare(self) -> None:
        props = self.properties
        path = str(props.get("path") or "").strip()
        problem = _path_problem(path)
        if problem:
            raise DeployProblem(problem, property="path")
        method = str(props.get("method") or "ANY").upper()
        if method not in METHODS:
            raise DeployProblem(
                f"method must be one of {', '.join(METHODS)}, got {method!r}", property="method"
            )
        self.path = "/" + "/".join(p for p in path.split("/") if p)
        self.method = method
        #: What the listener routes to this node: checked against the group's other flows at deploy.
        self.http_route = (method, self.path)
        self.template = {
            "domain": str(props.get("messageDomain") or "BLOB").upper(),
            "set": str(props.get("messageSet") or ""),
            "type": str(props.get("messageType") or ""),
            "format": str(props.get("messageFormat") or ""),
        }
        self.transactional = (props.get("transactionMode") or "yes") == "yes"
        self.max_wait_s = float(_bounded(props, "maxClientWaitTime", 1, 3600))
        self.max_pending = _bounded(props, "maxPendingRequests", 1, 100000)

    def evaluate(self, assembly: Assembly, terminal: str) -> None:
        # a message injected on this node (tests, the designer's "inject") starts the flow here
        self.propagate("out", assembly)

    # -- one flow thread ---------------------------------------------------------------------------

    def open_route(self, listener: Any) -> Any:
        """Serve this node's route on ``listener`` (once per holder: the flow and each flow thread
        release it when they stop, the last one closes it)."""
        return listener.register(
            self,
            self.method,
            self.path,
            max_pending=self.max_pending,
            max_wait_s=self.max_wait_s,
            timeout_path=self.is_connected("timeout"),
        )

    def open_input(self, flow: FlowServices) -> _Requests:
        return _Requests(self, flow)

    def assembly_of(self, request: Any) -> Assembly:
        """The message assembly of ``request`` (see the module docstring)."""
        root = build_root(
            "HTTPInputHeader",
            request.headers,
            request.body,
            self.template,
            first_headers=[
                ("X-Original-HTTP-Command", f"{request.method} {request.target} HTTP/{request.http_version}")
            ],
            transactional=self.transactional,
            reply_identifier=request.id,
        )
        local = Element("LocalEnvironment")
        http = local.add("HTTP").add("Input")
        line = http.add("RequestLine")
        line.add("Method", request.method)
        line.add("RequestURI", request.target)
        line.add("HTTPVersion", f"HTTP/{request.http_version}")
        query = http.add("QueryString")
        for name, value in request.query:
            query.add(name, value)
        path = http.add("Path")
        for segment in request.path.split("/"):
            if segment:
                path.add("Segment", segment)
        parameters = path.add("Parameters")
        for name, value in request.path_parameters.items():
            parameters.add(name, value)
        local.add("Destination").add("HTTP").add("RequestIdentifier", request.id)
        return Assembly(root, local)


class _Requests:
    """One flow thread's hold on the node's route: the next request and its assembly; a failure no
    failure terminal takes is answered 400 (a parser error) or 500."""

    def __init__(self, node: Node, flow: FlowServices) -> None:
        self.node = node
        self.transactional = node.transactional
        self.listener = flow.http_listener()
        self.endpoint = node.open_route(self.listener)

    def next(self) -> list[Any]:
        request = self.endpoint.take(0.5)
        return [] if request is None else [request]

    def assembly(self, request: Any) -> tuple[str, Assembly]:
        return ("timeout" if request.timed_out else "out"), self.node.assembly_of(request)

    def failure_assembly(self, request: Any, assembly: Assembly | None, errors: Element) -> Assembly:
        return (assembly or _bare_assembly(request)).replace(exception_list=errors)

    def unhandled(self, request: Any, errors: Element, note: str) -> bool:
        node = self.node
        innermost = innermost_entry(errors)
        parse_error = innermost is not None and innermost.name == "ParserException"
        status = 400 if parse_error else 500
        text = innermost.child("Text") if innermost is not None else None
        detail = str(text.value) if parse_error and text is not None else "the flow failed to process it"
        answered = self.listener.reply(
            request.id,
            status,
            [("Content-Type", _TEXT)],
            f"{'400 Bad Request' if parse_error else '500 Internal Server Error'}: {detail}\n".encode(),
        )
        if answered:
            node.flow.log(f"{node.name}: answered {status} to {request.method} {request.target}: {note}")
        else:
            node.flow.log(f"{node.name}: {request.method} {request.target} failed after its reply: {note}")
        return True

    def done(self, requests: list[Any], complete: bool) -> None:
        pass

    def close(self) -> None:
        self.listener.release(self.endpoint)


def _bare_assembly(request: Any) -> Assembly:
    """For a request whose assembly could not be built: an empty Root, and its identifier to reply to."""
    local = Element("LocalEnvironment")
    local.add("Destination").add("HTTP").add("RequestIdentifier", request.id)
    return Assembly(Element("Root"), local)


def _path_problem(path: str) -> str:
    if not path.startswith("/"):
        return f"the path must begin with '/', got {path!r}"
    segments = [p for p in path.split("/") if p]
    for index, segment in enumerate(segments):
        if segment == "*":
            if index != len(segments) - 1:
                return f"'*' must be the last segment of the path {path!r}"
            continue
        if segment.startswith("{") or segment.endswith("}"):
            name = segment[1:-1]
            if not (segment.startswith("{") and segment.endswith("}")) or not name.isidentifier():
                return f"a path parameter must look like {{name}}, got {segment!r}"
            continue
        bad = next((c for c in segment if c in "{}*?#% \t" or ord(c) < 32), None)
        if bad is not None:
            return f"character {bad!r} is not allowed in the path segment {segment!r}"
    return ""


def _bounded(props: dict[str, Any], name: str, low: int, high: int) -> int:
    value = props.get(name)
    try:
        number = int(value) if value is not None else SPEC.property(name).default  # type: ignore[union-attr]
    except (TypeError, ValueError):
        raise DeployProblem(f"{name} must be an integer, got {value!r}", property=name) from None
    if not low <= number <= high:
        raise DeployProblem(f"{name} must be between {low} and {high}, got {number}", property=name)
    return int(number)
