"""Sending a test message to a deployed flow's input node from the designer, and recording its path.

The message is first parsed in the domain the input node (or the message's MQRFH2) names, so a
body that would only fail inside the flow is refused here with the parser's line and column.
It is then put on the MQInput node's queue, or posted to the HTTPInput node's path on its
group's HTTP listener, after the group has started a one-message recording when one is asked
for, so the designer can open what crossed each connection on the message's way.
"""

from __future__ import annotations

import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from esql.domains import DomainError
from sqlalchemy.orm import Session

from flowbroker.formats import assembly as formats_assembly
from flowbroker.services import deploy, queues, recordings, stats
from flowbroker.services.errors import Conflict, Invalid, problem
from flowbroker.settings import Settings

#: How a test message is sent, by the input node's ``testInput`` (its spec says which it is).
SENDABLE = ("queue", "http")
#: Domains whose body is checked here; MRM and DFDL need the flow's message sets and are checked by the flow.
_CHECKED_DOMAINS = frozenset({"XMLNSC", "XMLNS", "XML", "JSON", "BLOB"})
#: How long to wait for the group to start the recording before the message is sent.
RECORDING_START_WAIT = 15.0
#: How much of an HTTP reply is handed back to the designer.
HTTP_REPLY_LIMIT = 64 * 1024


@dataclass
class HttpRequest:
    method: str = "POST"
    headers: dict[str, str] = field(default_factory=dict)
    content_type: str = ""


@dataclass
class Sent:
    node: str
    kind: str
    queue: str = ""
    msg_id: str = ""
    http_status: int = 0
    http_reply: str = ""
    recording: dict[str, Any] | None = None


def send(
    session: Session,
    actor: str,
    deployment_id: int,
    node_id: str,
    message: queues.TestMessage,
    settings: Settings,
    *,
    http: HttpRequest | None = None,
    record: bool = True,
) -> Sent:
    """Check, optionally start a recording, and send; the recording's state comes back with it."""
    deployment = deploy.get(session, deployment_id)
    document = deployment.flow_version.document or {}
    node = next((n for n in document.get("nodes") or [] if n.get("id") == node_id), None)
    if node is None:
        raise Invalid(
            f"the flow has no node {node_id!r}", [problem("/node", f"no node {node_id!r} in the flow")]
        )
    from flowbroker_nodes import registry

    spec = registry.spec(str(node.get("type")))
    kind = spec.test_input if spec is not None else ""
    if kind not in SENDABLE:
        targets = " and ".join(sendable_types())
        raise Invalid(
            f"node {node_id!r} is a {node.get('type')} node: test messages go to {targets} nodes",
            [problem("/node", f"not an {' or '.join(sendable_types())} node")],
        )
    if deployment.status not in deploy.STARTED:
        raise Invalid(
            f"deployment {deployment_id} is {deployment.status}; a test message needs a running flow",
            [problem("", "not running")],
        )
    properties = node.get("properties") or {}
    domain = str(
        message.rfh2.domain if message.rfh2 is not None else properties.get("messageDomain") or "BLOB"
    )
    check_body(message.body, domain)
    sent = Sent(node=node_id, kind=kind)
    if record:
        started = recordings.start(session, actor, deployment_id, settings, max_messages=1, seconds=60.0)
        sent.recording = _wait_recording(settings.data, deployment, started["id"])
    if kind == "queue":
        sent.queue = str(properties.get("queueName") or "")
        sent.msg_id = queues.put(session, actor, settings.data, sent.queue, message)
    else:
        sent.http_status, sent.http_reply = _post(
            settings, deployment, str(properties.get("path") or "/"), message.body, http or HttpRequest()
        )
    return sent


def sendable_types() -> list[str]:
    """The node types a test message can be sent to, in registry order."""
    from flowbroker_nodes import registry

    return [spec.type for spec in registry.specs() if spec.test_input in SENDABLE]


def check_body(body: str, domain: str) -> None:
    """Parse ``body`` as the flow will; a failure is :class:`Invalid` with the parser's line and column."""
    domain = domain.upper()
    if domain not in _CHECKED_DOMAINS:
        return
    from flowbroker.qm.protocol import MessageDescriptor

    data = body.encode("utf-8")
    root = formats_assembly.build_root(MessageDescriptor(), data, formats_assembly.Template(domain))
    element = formats_assembly.body_element(root)
    try:
        for _ in element.walk() if element is not None else ():
            pass
    except DomainError as exc:
        line, column = line_column(data, exc.offset)
        found = {"pointer": "/message/body", "message": str(exc), "line": line, "column": column}
        raise Invalid(f"the body does not parse as {domain}: {exc}", [found]) from None


def line_column(data: bytes, offset: int | None) -> tuple[int, int]:
    """1-based line and column (in characters) of a byte offset; (0, 0) when there is none."""
    if offset is None or offset < 0:
        return 0, 0
    before = data[: min(offset, len(data))]
    line = before.count(b"\n") + 1
    column = len(before[before.rfind(b"\n") + 1 :].decode("utf-8", "replace")) + 1
    return line, column


def _wait_recording(data: Path, deployment: Any, recording_id: str) -> dict[str, Any]:
    """The recording once the group has started it (a message sent before would pass unrecorded)."""
    where = recordings.directory(data, deployment)
    deadline = time.monotonic() + RECORDING_START_WAIT
    while True:
        state = recordings.describe(where, recording_id)
        if state["status"] != "requested":
            break
        if time.monotonic() > deadline:
            raise Conflict(
                f"the execution group {deployment.group.name} did not start the recording within "
                f"{RECORDING_START_WAIT:g}s; nothing was sent"
            )
        time.sleep(0.05)
    if state["status"] == "failed":
        raise Conflict(f"the recording could not start: {state.get('reason')}; nothing was sent")
    return state


def _post(settings: Settings, deployment: Any, path: str, body: str, request: HttpRequest) -> tuple[int, str]:
    record = stats.read_group(settings.data, deployment.broker.name, deployment.group.name) or {}
    address = record.get("http") or {}
    if not address.get("port"):
        raise Conflict(
            f"execution group {deployment.group.name} has not reported its HTTP listener yet; "
            "try again in a few seconds"
        )
    host = str(address.get("host") or "127.0.0.1")
    if host in ("0.0.0.0", "::", ""):
        host = "127.0.0.1"
    # a path with {parameters} or a trailing * is sent as written up to them
    served = path.split("{", 1)[0].rstrip("*") or "/"
    url = f"http://{host}:{int(address['port'])}{served if served.startswith('/') else '/' + served}"
    headers = dict(request.headers)
    if request.content_type:
        headers["Content-Type"] = request.content_type
    method = request.method.upper() if request.method.upper() != "ANY" else "POST"
    data = body.encode("utf-8") if method not in ("GET", "HEAD", "DELETE") else None
    sent = urllib.request.Request(url, data=data, headers=headers, method=method)
    try:
        with urllib.request.urlopen(sent, timeout=30) as answer:
            return int(answer.status), answer.read(HTTP_REPLY_LIMIT).decode("utf-8", "replace")
    except urllib.error.HTTPError as exc:
        return int(exc.code), exc.read(HTTP_REPLY_LIMIT).decode("utf-8", "replace")
    except OSError as exc:
        raise Conflict(f"the HTTP listener at {url} did not answer: {exc}") from None
