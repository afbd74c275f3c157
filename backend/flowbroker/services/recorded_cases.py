"""A flow test case made from one recorded flow invocation.

The recording holds, per connection a message crossed, the message view
(:mod:`flowbroker.runtime.message_view`). The case's input is the message as it left the flow's
input node (the node a case starts at, by its spec's ``testInput``); what is expected is each
message that reached a node writing to a queue (its spec's ``writesQueue``), per queue, in the
order they crossed, and per FileOutput node the files it wrote (name and content). An output node
inside a subflow is named as the recording and the subflow's canvas name it, ``sub/inner``.
The views are turned back into a test file's message form: the serialized
body, the MQMD fields that were set, the MQRFH2 folders. The case is then stored with the flow
(:func:`flowbroker.services.flow_tests.add_case`), so it becomes the flow's next version.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from sqlalchemy.orm import Session

from flowbroker.flowtests import cases
from flowbroker.formats import mqmd
from flowbroker.runtime.dependencies import subflow_resolver
from flowbroker.services import audit, deploy, flow_tests, flows, recordings, validation
from flowbroker.services.errors import Invalid, NotFound, problem
from flowbroker.settings import Settings

#: Trees a test compares; marked fields in the other trees cannot be ignored (they are never compared).
_OTHER_TREES = ("LocalEnvironment", "Environment", "ExceptionList")
#: MQMD fields that differ on every run: never part of a recorded message.
_VOLATILE = frozenset(path.partition(".")[2] for path in cases.VOLATILE_PATHS)
_DEFAULTS = {name: default for name, _, default in mqmd._FIELDS}


def create(
    session: Session,
    actor: str,
    deployment_id: int,
    recording_id: str,
    settings: Settings,
    *,
    name: str,
    message: int = 1,
    ignore: list[str] | None = None,
    lookup: validation.SpecLookup | None = None,
) -> tuple[flows.FlowState, dict[str, Any]]:
    """Add to the deployed flow a case made from recorded message ``message``; the flow's state and the case."""
    bad = [n for n, path in enumerate(ignore or []) if path.split(".")[0] in _OTHER_TREES]
    if bad:
        raise Invalid(
            f"{(ignore or [])[bad[0]]!r} is not compared by a test: only fields below Root can be ignored",
            [problem(f"/ignore/{bad[0]}", "only fields below Root are compared")],
        )
    deployment = deploy.get(session, deployment_id)
    where = recordings.directory(settings.data, deployment)
    recordings.expire(where, settings.recording_ttl_seconds)
    state = recordings.describe(where, recording_id)
    entries = [e for e in recordings._index(where, recording_id) if e.get("message") == message]
    if not entries:
        raise NotFound(f"recording {recording_id} has no message {message} (it holds {state['messages']})")
    document = deployment.flow_version.document
    with open(where / f"{recording_id}.jsonl", "rb") as handle:
        case = case_from_recording(
            name,
            document,
            entries,
            lambda entry: _read(handle, entry),
            ignore=ignore,
            message=message,
            resolve=subflow_resolver(deployment.dependencies),
        )
    audit.record(
        session,
        actor,
        "recording.read",
        f"deployment:{deployment.id}",
        {"recording": recording_id, "message": message, "testCase": name},
    )
    flow_id = deployment.flow_version.flow_id
    return flow_tests.add_case(session, actor, flow_id, case, lookup=lookup), case


def case_from_recording(
    name: str,
    document: dict[str, Any],
    entries: list[dict[str, Any]],
    read: Callable[[dict[str, Any]], dict[str, Any]],
    *,
    ignore: list[str] | None = None,
    message: int = 1,
    resolve: Callable[[dict[str, Any]], dict[str, Any] | None] | None = None,
) -> dict[str, Any]:
    """A case from the crossings of one recorded flow invocation (``entries``, the recording's index
    lines in order; ``read`` gives an entry's message view).

    The input is the message as it left the input node: for an MQInput its body, MQMD fields,
    MQRFH2 folders and queue message properties; for a FileInput the file (name and content); for
    an HTTPInput the request (method, path, headers, body) and the answer an HTTPReply node gave.
    What is expected is, per node that writes to a queue, the messages that reached it in order
    (with the properties they were put with), and per FileOutput node the files it wrote. Nodes
    inside a subflow (inline, or found by ``resolve``) are named ``sub/inner``, as recorded.
    """
    nodes = cases.canvas_nodes(document, resolve)
    start = next((e for e in entries if cases.starts_by(nodes.get(_end(e, "from"), {}))), None)
    if start is None:
        raise Invalid(
            f"recorded message {message} did not leave an input node a test can start at",
            [problem("/message", "no input node in the recorded path")],
        )
    input_id = _end(start, "from")
    kind = cases.starts_by(nodes[input_id])
    start_view = read(start)
    properties = dict(start_view.get("properties") or {})
    given = _case_message(start_view, "input")
    if kind == "queue":
        if properties:
            given["properties"] = properties
    else:
        given = {key: value for key, value in given.items() if key not in ("mqmd", "rfh2")}
    if kind == "file":
        given["file"] = _file_name(start_view, input_id)
    elif kind == "http":
        given.update(_request(start_view))
    expect: dict[str, dict[str, Any]] = {}
    written: dict[str, _Files] = {}
    reply: dict[str, Any] | None = None
    for entry in entries:
        target_id = _end(entry, "to")
        target = nodes.get(target_id, {})
        if cases.writes_files(target):
            if target_id not in expect:
                expect[target_id] = {"node": target_id, "files": []}
                written[target_id] = _Files(target)
            written[target_id].crossed(read(entry), entry)
        elif cases.queue_output(target):
            view = read(entry)
            out = _case_message(view, entry["connection"])
            put = {**properties, **_usr_fields(view)}
            if put:
                out["properties"] = put
            expect.setdefault(target_id, {"node": target_id, "messages": []})["messages"].append(out)
        elif kind == "http" and _answers_http(target) and reply is None:
            reply = _reply(read(entry), entry["connection"])
    for target_id, files in written.items():
        expect[target_id]["files"] = files.expected()
    if kind == "http" and reply is None:
        raise Invalid(
            f"recorded message {message} reached no HTTPReply node: the answer to expect is unknown",
            [problem("/message", "no HTTPReply in the recorded path")],
        )
    if not expect and reply is None:
        raise Invalid(
            f"recorded message {message} reached no node that writes to a queue or a file: there is nothing to expect",
            [problem("/message", "no output in the recorded path")],
        )
    case = cases.case_from_views(name, given, {}, input_node=input_id, ignore=list(ignore or []))
    case["expect"] = list(expect.values())
    if reply is not None:
        case["reply"] = reply
    return case


class _Files:
    """The files a FileOutput node wrote, from the messages recorded reaching it, in order.

    A message on ``in`` is a whole file (a later one of the same name replaces it) or, with
    record definition unmodifiedData, a record appended to its file, which a message on
    ``finish`` puts in place. The name is the node's (its ``*`` the input's wildcard match) unless
    LocalEnvironment.Destination.File.Name gives one; a message that names none wrote no file.
    """

    def __init__(self, node: dict[str, Any]) -> None:
        properties = node.get("properties") or {}
        self.file_name = str(properties.get("fileName") or "").strip()
        self.append = properties.get("recordDefinition") == "unmodifiedData"
        self.done: dict[str, dict[str, Any]] = {}
        self.open: dict[str, tuple[bytes, str]] = {}

    def crossed(self, view: dict[str, Any], entry: dict[str, Any]) -> None:
        local = _tree(view, "LocalEnvironment")
        elsewhere = str((_child(local, "Destination", "File", "Directory") or {}).get("value") or "")
        if elsewhere:
            raise Invalid(
                f"the message recorded at {entry['connection']} names its own directory {elsewhere!r} "
                "(LocalEnvironment.Destination.File.Directory); a test reads only the node's directory",
                [problem("/message", f"{entry['connection']}: a file written outside the node's directory")],
            )
        name = str((_child(local, "Destination", "File", "Name") or {}).get("value") or "") or self.file_name
        if "*" in name:
            match = str((_child(local, "Wildcard", "WildcardMatch") or {}).get("value") or "")
            name = name.replace("*", match, 1)
        if not name:
            return
        terminal = str((entry.get("to") or {}).get("terminal") or "in")
        if terminal == "finish":
            if name in self.open:
                data, domain = self.open.pop(name)
                self.done.pop(name, None)
                self.done[name] = _file_content(name, data, domain)
            return
        content = {
            key: value for key, value in _case_message(view, entry["connection"]).items() if key != "mqmd"
        }
        content.pop("rfh2", None)
        if not self.append:
            self.done.pop(name, None)
            self.done[name] = {"name": name, **_as_file(content)}
            return
        data = _content_bytes(content, entry["connection"])
        before, _ = self.open.get(name, (b"", ""))
        self.open[name] = (before + data, "BLOB")

    def expected(self) -> list[dict[str, Any]]:
        return list(self.done.values())


def _as_file(content: dict[str, Any]) -> dict[str, Any]:
    """A recorded body as a file's content: XML and JSON as text in their domain, the rest byte for byte."""
    if "body" in content:
        return {"body": content["body"], **({"domain": content["domain"]} if content.get("domain") else {})}
    return {"bodyHex": content.get("bodyHex", ""), "domain": "BLOB"}


def _content_bytes(content: dict[str, Any], where: str) -> bytes:
    """A record appended to a file, as the bytes the node wrote: only a body recorded byte for byte."""
    if "bodyHex" in content:
        return bytes.fromhex(str(content["bodyHex"]))
    raise Invalid(
        f"the record recorded at {where} is appended to a file as {content.get('domain')} text the "
        "recording shows reformatted; a test cannot know the bytes written",
        [problem("/message", f"{where}: an appended {content.get('domain')} record")],
    )


def _file_content(name: str, data: bytes, domain: str) -> dict[str, Any]:
    return {"name": name, "bodyHex": data.hex(), "domain": domain}


#: Request headers a replayed request gets anew (the connection's own) or that only say how it came.
_TRANSPORT_HEADERS = frozenset(
    {"host", "content-length", "connection", "transfer-encoding", "x-original-http-command", "keep-alive"}
)


def _tree(view: dict[str, Any], name: str) -> dict[str, Any]:
    return next((t for t in view.get("trees") or [] if t.get("name") == name), {"children": []})


def _child(field: dict[str, Any] | None, *names: str) -> dict[str, Any] | None:
    for name in names:
        if field is None:
            return None
        field = next((kid for kid in field.get("children") or [] if kid.get("name") == name), None)
    return field


def _file_name(view: dict[str, Any], node_id: str) -> str:
    found = _child(_tree(view, "LocalEnvironment"), "File", "Name")
    name = str((found or {}).get("value") or "")
    if not name:
        raise Invalid(
            f"the message recorded leaving {node_id} has no LocalEnvironment.File.Name: the file is unknown",
            [problem("/message", "no file name in the recorded input")],
        )
    return name


def _answers_http(node: dict[str, Any]) -> bool:
    """Whether a flow document's node answers the HTTP request (its spec's ``testOutput``)."""
    from flowbroker_nodes import registry

    spec = registry.spec(str(node.get("type")))
    return spec is not None and spec.test_output == "http"


def _request(view: dict[str, Any]) -> dict[str, Any]:
    """The recorded request's method, path (with its query) and the headers a client sent."""
    line = _child(_tree(view, "LocalEnvironment"), "HTTP", "Input", "RequestLine")
    method = str((_child(line, "Method") or {}).get("value") or "POST")
    path = str((_child(line, "RequestURI") or {}).get("value") or "")
    headers = {
        str(kid["name"]): str(kid.get("value") or "")
        for kid in (_child(_tree(view, "Root"), "HTTPInputHeader") or {}).get("children") or []
        if str(kid.get("name", "")).lower() not in _TRANSPORT_HEADERS and not kid.get("children")
    }
    out: dict[str, Any] = {"method": method}
    if path:
        out["path"] = path
    if headers:
        out["headers"] = headers
    return out


def _reply(view: dict[str, Any], where: str) -> dict[str, Any]:
    """The answer an HTTPReply node gave: status, the headers the flow set, the body."""
    status_field = _child(_tree(view, "LocalEnvironment"), "Destination", "HTTP", "ReplyStatusCode")
    try:
        status = int(str((status_field or {}).get("value") or 200))
    except ValueError:
        status = 200
    headers = {
        str(kid["name"]): str(kid.get("value") or "")
        for kid in (_child(_tree(view, "Root"), "HTTPReplyHeader") or {}).get("children") or []
        if str(kid.get("name", "")).lower() not in _TRANSPORT_HEADERS and not kid.get("children")
    }
    body = {key: value for key, value in _case_message(view, where).items() if key not in ("mqmd", "rfh2")}
    reply: dict[str, Any] = {"status": status, **body}
    if headers:
        reply["headers"] = headers
    return reply


def _usr_fields(view: dict[str, Any]) -> dict[str, Any]:
    """The simple fields of the message's MQRFH2 usr folder: an output node puts them as properties."""
    usr = _child(_tree(view, "Root"), "MQRFH2", "usr")
    return {
        str(kid["name"]): kid.get("value")
        for kid in (usr or {}).get("children") or []
        if not kid.get("children") and kid.get("value") is not None
    }


def _end(entry: dict[str, Any], side: str) -> str:
    end = entry.get(side) or {}
    return str(end.get("node") or "")


def _read(handle: Any, entry: dict[str, Any]) -> dict[str, Any]:
    handle.seek(int(entry["offset"]))
    view: dict[str, Any] = json.loads(handle.read(int(entry["length"])))["view"]
    return view


def _case_message(view: dict[str, Any], where: str) -> dict[str, Any]:
    """A recorded view as a test file's message: body, set MQMD fields, MQRFH2 folders, domain."""
    body = view.get("body") or {}
    if view.get("truncated") or body.get("notices"):
        raise Invalid(
            f"the message recorded at {where} was cut by the recording's limits; a test needs it whole",
            [problem("/message", f"{where}: {'; '.join(view.get('notices') or ['truncated'])}")],
        )
    root: dict[str, Any] = next(
        (t for t in view.get("trees") or [] if t.get("name") == "Root"), {"children": []}
    )
    folders = {kid["name"]: kid for kid in root.get("children") or []}
    out: dict[str, Any] = {}
    fields = _mqmd_fields(folders.get("MQMD"))
    rfh2 = folders.get("MQRFH2")
    if rfh2 is not None:
        out["rfh2"] = {
            folder["name"]: {f["name"]: f.get("value") or "" for f in folder["children"]}
            for folder in rfh2.get("children") or []
            if folder.get("children")
        }
        inner = next((f.get("value") for f in rfh2.get("children") or [] if f["name"] == "Format"), "")
        fields["Format"] = str(inner or "").strip() or fields.get("Format", "")
        if not fields["Format"]:
            del fields["Format"]
    if fields:
        out["mqmd"] = fields
    fmt = body.get("format")
    if fmt in ("xml", "json"):
        out["body"] = body.get("text", "")
    elif fmt == "hex":
        out["bodyHex"] = "".join(
            line[10:].split("  ")[0].replace(" ", "") for line in str(body.get("text", "")).splitlines()
        )
    if body.get("domain"):
        out["domain"] = body["domain"]
    return out


def _mqmd_fields(folder: dict[str, Any] | None) -> dict[str, Any]:
    """The MQMD fields a test sets that the recorded message had other than their defaults."""
    fields: dict[str, Any] = {}
    for kid in (folder or {}).get("children") or []:
        name, text = kid.get("name"), kid.get("value")
        if name not in cases.MQMD_FIELDS or name in _VOLATILE or text is None:
            continue
        value: Any = text
        if name in ("Encoding", "CodedCharSetId", "Priority", "Persistence"):
            try:
                value = int(text)
            except ValueError:
                continue
        elif name == "CorrelId":
            try:
                value = bytes.fromhex(text).rstrip(b"\x00").decode("utf-8")
            except (ValueError, UnicodeDecodeError):
                continue  # an id that is not text is left out (so not compared)
            if not value:
                continue
        elif name == "Format":
            value = text.strip()
            if not value or value == mqmd.FORMAT_RFH2.strip():
                continue
        elif not text.strip():
            continue
        default = _DEFAULTS.get(name)
        if value == default or (isinstance(default, str) and value == default.strip()):
            continue
        fields[name] = value
    return fields
