"""HTTPRequest: calls a URL with the message and propagates the response in its place (httpx).

The URL is the node's, or ``LocalEnvironment.Destination.HTTP.RequestURL``; the method the
node's, or ``LocalEnvironment.Destination.HTTP.RequestLine.Method``. The request headers are
``Root.HTTPRequestHeader``'s; the response becomes Root: Properties, ``HTTPResponseHeader`` (its
headers, with ACE's ``X-Original-HTTP-Status-Line`` and ``X-Original-HTTP-Status-Code``) and the
body parsed in the response domain. A status outside 2xx goes to the error terminal with the
response kept; a connection that cannot be made or a timeout is a failure. One connection pool
per node serves all its flow threads; TLS certificates are verified unless the node says not.
"""

from __future__ import annotations

import threading
from typing import Any
from urllib.parse import urlsplit

from flowbroker_nodes.base import Assembly, DeployProblem, NodeError
from flowbroker_nodes.base import Node as BaseNode
from flowbroker_nodes.http_message import (
    DOMAINS,
    build_root,
    destination_value,
    header_fields,
    with_default_headers,
)
from flowbroker_nodes.spec import NodeSpec, Property, Terminal

METHODS = ("POST", "GET", "PUT", "DELETE", "PATCH", "HEAD")
_NO_BODY = ("GET", "HEAD", "DELETE")

SPEC = NodeSpec(
    type="HTTPRequest",
    label="HTTPRequest",
    category="transformation",
    icon="http-request",
    extra={"namesMessageSet": {"property": "messageSet", "when": {"messageDomain": "MRM"}}},
    description="Sends the message to a URL and propagates the HTTP response in its place; "
    "a status outside 2xx goes to the error terminal.",
    inputs=(Terminal("in", "in", "In"),),
    outputs=(
        Terminal("out", "out", "Out"),
        Terminal("error", "failure", "Error"),
        Terminal("failure", "failure", "Failure"),
    ),
    properties=(
        Property(
            "webServiceURL",
            "string",
            "Web service URL",
            default="",
            description="http:// or https:// URL called; LocalEnvironment.Destination.HTTP.RequestURL "
            "overrides it for one message.",
        ),
        Property(
            "httpMethod",
            "enum",
            "HTTP method",
            default="POST",
            enum=METHODS,
            description="GET, HEAD and DELETE send no body.",
        ),
        Property(
            "messageDomain",
            "enum",
            "Response message domain",
            default="BLOB",
            enum=DOMAINS,
            description="The domain the response body is parsed in.",
        ),
        Property("messageSet", "string", "Message set", default="", description="Message set (MRM)."),
        Property("messageType", "string", "Message type", default="", description="Message type (MRM)."),
        Property(
            "messageFormat", "string", "Message format", default="", description="Physical format (MRM)."
        ),
        Property(
            "requestTimeout",
            "integer",
            "Request timeout (s)",
            default=120,
            minimum=1,
            maximum=3600,
            description="How long to wait for the connection and for each read of the response.",
        ),
        Property(
            "maxResponseBytes",
            "integer",
            "Maximum response size (bytes)",
            default=16 * 1024 * 1024,
            minimum=1024,
            maximum=1024 * 1024 * 1024,
            description="A larger response body is a failure, read no further.",
        ),
        Property(
            "maxConnections",
            "integer",
            "Maximum connections",
            default=20,
            minimum=1,
            maximum=1000,
            description="Connections the node keeps open to its servers, shared by its flow threads.",
        ),
        Property(
            "followRedirects",
            "boolean",
            "Follow HTTP redirection",
            default=False,
            description="Follow 3xx answers (at most 20); otherwise a 3xx goes to the error terminal.",
        ),
        Property(
            "verifyTls",
            "boolean",
            "Verify TLS certificates",
            default=True,
            description="Check the server's certificate and host name for https URLs.",
        ),
        Property(
            "generateDefaultHttpHeaders",
            "boolean",
            "Generate default HTTP headers",
            default=True,
            description="Adds a Content-Type from the body's domain when Root.HTTPRequestHeader has none.",
        ),
    ),
)


class Node(BaseNode):
    """Calls the URL through one pooled httpx client shared by the flow's threads."""

    SPEC = SPEC

    def prepare(self) -> None:
        props = self.properties
        url = str(props.get("webServiceURL") or "").strip()
        if url:
            problem = _url_problem(url)
            if problem:
                raise DeployProblem(problem, property="webServiceURL")
        self.url = url
        method = str(props.get("httpMethod") or "POST").upper()
        if method not in METHODS:
            raise DeployProblem(f"httpMethod must be one of {', '.join(METHODS)}", property="httpMethod")
        self.method = method
        self.template = {
            "domain": str(props.get("messageDomain") or "BLOB").upper(),
            "set": str(props.get("messageSet") or ""),
            "type": str(props.get("messageType") or ""),
            "format": str(props.get("messageFormat") or ""),
        }
        self.timeout = float(_bounded(props, "requestTimeout", 1, 3600))
        self.max_response = _bounded(props, "maxResponseBytes", 1024, 1024 * 1024 * 1024)
        self.max_connections = _bounded(props, "maxConnections", 1, 1000)
        self.follow = bool(props.get("followRedirects", False))
        self.verify = bool(props.get("verifyTls", True))
        self._client: Any = None
        self._lock = threading.Lock()

    def _http(self) -> Any:
        if self._client is None:
            with self._lock:
                if self._client is None:
                    import httpx

                    self._client = httpx.Client(
                        timeout=httpx.Timeout(self.timeout),
                        limits=httpx.Limits(
                            max_connections=self.max_connections,
                            max_keepalive_connections=self.max_connections,
                        ),
                        follow_redirects=self.follow,
                        verify=self.verify,
                        trust_env=False,
                    )
        return self._client

    def release(self) -> None:
        """Close the connection pool (a later request opens a new one)."""
        lock = getattr(self, "_lock", None)
        if lock is None:  # prepare failed before the pool could exist
            return
        with lock:
            client, self._client = self._client, None
        if client is not None:
            client.close()

    def evaluate(self, assembly: Assembly, terminal: str) -> None:
        import httpx

        local = assembly.local_environment
        url = str(destination_value(local, "RequestURL") or self.url).strip()
        if not url:
            raise NodeError(
                f"{self.name}: no URL: set webServiceURL or LocalEnvironment.Destination.HTTP.RequestURL"
            )
        problem = _url_problem(url)
        if problem:
            raise NodeError(f"{self.name}: {problem}", number=2111)
        method = str(destination_value(local, "RequestLine", "Method") or self.method).upper()
        if method not in METHODS:
            raise NodeError(f"{self.name}: HTTP method {method!r} is not one of {', '.join(METHODS)}")
        root = assembly.root
        headers = header_fields(root, "HTTPRequestHeader")
        body = b""
        if method not in _NO_BODY:
            _, _, body = self.flow.message_parts(root)
            if self.properties.get("generateDefaultHttpHeaders", True):
                headers = with_default_headers(headers, root)
        try:
            with self._http().stream(method, url, headers=headers, content=body) as response:
                data = bytearray()
                for chunk in response.iter_bytes():
                    data += chunk
                    if len(data) > self.max_response:
                        raise NodeError(
                            f"{self.name}: the response of {method} {url} is larger than "
                            f"{self.max_response} bytes",
                            number=2111,
                            inserts=(url,),
                        )
        except httpx.TimeoutException as exc:
            raise NodeError(
                f"{self.name}: {method} {url}: no answer within {self.timeout:g} s ({type(exc).__name__})",
                number=2111,
                inserts=(url,),
            ) from None
        except httpx.HTTPError as exc:
            raise NodeError(
                f"{self.name}: {method} {url}: {_reason(exc)}", number=2111, inserts=(url,)
            ) from None
        reason = response.reason_phrase or ""
        status_line = f"{response.http_version} {response.status_code} {reason}".strip()
        reply = build_root(
            "HTTPResponseHeader",
            [(k.decode("latin-1"), v.decode("latin-1")) for k, v in response.headers.raw],
            bytes(data),
            self.template,
            first_headers=[
                ("X-Original-HTTP-Status-Line", status_line),
                ("X-Original-HTTP-Status-Code", response.status_code),
            ],
            transactional=self.flow.in_transaction(),
        )
        answer = assembly.replace(root=reply)
        if 200 <= response.status_code < 300:
            self.propagate("out", answer)
            return
        if not self.propagate("error", answer):
            raise NodeError(
                f"{self.name}: {method} {url} answered {status_line}", number=2111, inserts=(url,)
            )


def _url_problem(url: str) -> str:
    try:
        parts = urlsplit(url)
    except ValueError as exc:
        return f"invalid URL {url!r}: {exc}"
    if parts.scheme not in ("http", "https"):
        return f"the URL must begin with http:// or https://, got {url!r}"
    if not parts.hostname:
        return f"the URL {url!r} names no host"
    try:
        parts.port  # noqa: B018 - raises on a bad port
    except ValueError:
        return f"the URL {url!r} has an invalid port"
    return ""


def _reason(exc: BaseException) -> str:
    """The innermost OS reason of a transport error (e.g. 'Connection refused')."""
    cause: BaseException | None = exc
    while cause is not None:
        if isinstance(cause, OSError) and cause.strerror:
            return cause.strerror
        cause = cause.__cause__ or cause.__context__
    return str(exc) or type(exc).__name__


def _bounded(props: dict[str, Any], name: str, low: int, high: int) -> int:
    value = props.get(name)
    try:
        number = int(value) if value is not None else SPEC.property(name).default  # type: ignore[union-attr]
    except (TypeError, ValueError):
        raise DeployProblem(f"{name} must be an integer, got {value!r}", property=name) from None
    if not low <= number <= high:
        raise DeployProblem(f"{name} must be between {low} and {high}, got {number}", property=name)
    return int(number)
