"""Test-case documents: reading and checking them, and making a case from messages seen.

A test file (``NAME.tests.json``, or a flow document's ``tests`` list) holds cases::

    {"cases": [{
        "name": "the bytes pass unchanged",
        "input": {"node": "in", "body": "hello", "mqmd": {"Format": "MQSTR"}},
        "expect": [{"queue": "PASSTHROUGH.OUT", "messages": [{"body": "hello"}]}],
        "ignore": ["MQMD.MsgId"]
    }], "setup": {...}}

A message gives its body as text (``body``, a JSON value for the JSON domain), ``bodyBase64`` or
``bodyHex``; ``mqmd`` fields by their tree names; ``rfh2`` folders put before the body in an
MQRFH2 header; ``properties`` the queue message's own properties. An expectation names a queue,
or an MQOutput node (its queue), and the messages that must arrive there, in order (none: nothing
may arrive). An output node inside a subflow is named as the subflow's canvas names it,
``subflowNode/innerNode``. A FileOutput node's expectation gives the ``files`` it must write
(``name``, a glob pattern when the name varies, and the content as a message body) into its
relative directory below the engine's file root; they are compared as parsed trees in their
``domain`` (byte for byte as BLOB), and a file written there that no entry names fails the case.
``ignore`` lists tree paths left out of the comparison (``*`` matches any name, a
path without ``[n]`` any index, a path its whole subtree). ``setup`` prepares the engine: data
sources with their SQL, subscriptions, message sets imported from copybooks beside the test file.

The input node is an MQInput (the message is put on its queue), a FileInput with a relative
directory (the input names a ``file``, written with the body into that directory below the
engine's file root) or an HTTPInput (the body is sent with ``method`` to ``path``, by default the
node's, with ``headers``; the case's ``reply`` gives the ``status``, ``headers`` and body the
answer must have).

Every problem is reported as :class:`CaseError` naming the source and the field's JSON pointer.
"""

from __future__ import annotations

import base64
import binascii
import fnmatch
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from flowbroker.formats import mqmd

#: MQMD fields a test message may set, by tree name, with the descriptor attribute each fills.
MQMD_FIELDS = {name: attr for name, attr, _ in mqmd._FIELDS if name != "BackoutCount"}
_ID_FIELDS = {"MsgId", "CorrelId"}
_INT_FIELDS = {"Expiry", "Encoding", "CodedCharSetId", "Priority", "Persistence"}
_SEGMENT = re.compile(r"^(\(text\)|\(properties\)|[^.\[\]()]+)(\[(\d+|\*)\])?$")
#: Bounds that keep one test file from taking the runner's memory or time.
MAX_CASES = 500
MAX_MESSAGES = 100


def starts_by(node: dict[str, Any]) -> str:
    """How a case starts the flow at a flow document's node: its spec's ``testInput`` ("queue",
    "file", "http"), or "" for a node no case starts."""
    from flowbroker_nodes import registry

    spec = registry.spec(str(node.get("type")))
    return spec.test_input if spec is not None else ""


def input_types() -> list[str]:
    """The node types a case can start at, in registry order."""
    from flowbroker_nodes import registry

    return [spec.type for spec in registry.specs() if spec.test_input]


#: Subflows nested deeper than this are not looked into (the compiler refuses them anyway).
MAX_SUBFLOW_DEPTH = 16


def canvas_nodes(
    document: dict[str, Any], resolve: Any = None, _prefix: str = "", _depth: int = 0
) -> dict[str, dict[str, Any]]:
    """Every node of a flow by the name its canvas gives it: the flow's own by id, the nodes of a
    subflow (inline, or a ``{name, version}`` that ``resolve`` finds) as ``subflowNode/innerNode``,
    as the compiler, the recordings and the debugger name them."""
    from flowbroker_nodes import registry

    found: dict[str, dict[str, Any]] = {}
    for node in document.get("nodes") or []:
        if not isinstance(node, dict):
            continue
        node_id = _prefix + str(node.get("id"))
        found[node_id] = node
        if registry.subflow_part(node) != "node" or _depth >= MAX_SUBFLOW_DEPTH:
            continue
        ref = (node.get("properties") or {}).get("flow")
        inner = None
        if isinstance(ref, dict) and isinstance(ref.get("nodes"), list):
            inner = ref
        elif isinstance(ref, dict) and ref.get("name") and resolve is not None:
            inner = resolve(ref)
        if isinstance(inner, dict):
            found.update(canvas_nodes(inner, resolve, f"{node_id}/", _depth + 1))
    return found


def writes_files(node: dict[str, Any]) -> bool:
    """Whether a flow document's node writes files (its spec's ``testOutput`` is "file"): its
    expectation names files, not messages."""
    from flowbroker_nodes import registry

    spec = registry.spec(str(node.get("type")))
    return spec is not None and spec.test_output == "file"


def queue_output(node: dict[str, Any]) -> str:
    """The queue a flow document's node puts its messages to by name (its spec's ``writesQueue``)."""
    from flowbroker_nodes import registry

    spec = registry.spec(str(node.get("type")))
    written = spec.queues_written(node.get("properties") or {}) if spec is not None else ()
    return written[0] if written else ""


class CaseError(ValueError):
    """A malformed test file: ``source`` (file or flow), ``pointer`` (JSON pointer) and what is wrong."""

    def __init__(self, source: str, pointer: str, message: str) -> None:
        super().__init__(f"{source}: {pointer or '/'}: {message}")
        self.source = source
        self.pointer = pointer
        self.message = message

    def problem(self) -> dict[str, Any]:
        return {"pointer": self.pointer, "message": self.message}


@dataclass(frozen=True)
class TestMessage:
    """A message as a test gives it: body bytes, MQMD fields, RFH2 folders, queue properties."""

    __test__ = False  # not a pytest class

    body: bytes = b""
    mqmd: dict[str, Any] = field(default_factory=dict)
    rfh2: dict[str, dict[str, str]] | None = None
    properties: dict[str, Any] = field(default_factory=dict)
    domain: str = ""

    def descriptor_fields(self) -> dict[str, Any]:
        """The MQMD fields as :class:`MessageDescriptor` keyword arguments."""
        fields = {MQMD_FIELDS[name]: value for name, value in self.mqmd.items()}
        if self.rfh2 is not None:
            fields["format"] = mqmd.FORMAT_RFH2
        return fields

    def wire_body(self) -> bytes:
        """The body as it is put: behind its MQRFH2 header when it has one."""
        if self.rfh2 is None:
            return self.body
        from esql.tree import Element

        from flowbroker.formats import rfh2 as rfh2_format

        header = Element("MQRFH2")
        header.add("Format", str(self.mqmd.get("Format") or mqmd.FORMAT_STRING))
        for name, folder_fields in self.rfh2.items():
            folder = header.add(name, type=0x01000000)
            for key, value in folder_fields.items():
                folder.add(key, value)
        return rfh2_format.serialize(header, encoding=546, ccsid=1208) + self.body


@dataclass(frozen=True)
class ExpectedFile:
    """A file an output node must write: its name (a glob pattern when it has ``*`` or ``?``) and content."""

    name: str
    content: TestMessage


@dataclass(frozen=True)
class Expectation:
    """The messages that must arrive on one queue (``node``: the MQOutput node that names it), or
    the files a FileOutput node (``node``) must write into ``directory`` (below the file root)."""

    queue: str
    node: str
    messages: tuple[TestMessage, ...]
    files: tuple[ExpectedFile, ...] = ()
    directory: str = ""

    @property
    def writes_files(self) -> bool:
        return bool(self.directory)


@dataclass(frozen=True)
class TestCase:
    __test__ = False  # not a pytest class

    name: str
    input_node: str
    input: TestMessage
    expect: tuple[Expectation, ...]
    ignore: tuple[str, ...] = ()
    description: str = ""
    #: For a FileInput node: the name of the file the input body is written to.
    input_file: str = ""
    #: For an HTTPInput node: the request sent and the reply that must answer it.
    request: HTTPCall | None = None
    reply: HTTPReplyExpected | None = None


@dataclass(frozen=True)
class HTTPCall:
    method: str
    path: str
    headers: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class HTTPReplyExpected:
    status: int
    headers: tuple[tuple[str, str], ...]
    message: TestMessage | None


@dataclass(frozen=True)
class DataSourceSetup:
    """A data source the flow uses: a fresh SQLite database prepared with ``statements``."""

    name: str
    statements: tuple[str, ...]


@dataclass(frozen=True)
class MessageSetSetup:
    """A message set the flow parses with, imported from a COBOL copybook (a path beside the test file)."""

    name: str
    copybook: Path
    type: str = ""


@dataclass(frozen=True)
class Subscription:
    topic: str
    queue: str


@dataclass(frozen=True)
class TestSuite:
    """The cases of one flow and what the engine needs before they run."""

    __test__ = False  # not a pytest class

    source: str
    cases: tuple[TestCase, ...]
    data_sources: tuple[DataSourceSetup, ...] = ()
    subscriptions: tuple[Subscription, ...] = ()
    message_sets: tuple[MessageSetSetup, ...] = ()


def load_file(path: Path, document: dict[str, Any], resolve: Any = None) -> TestSuite:
    """Read and check the test file ``path`` of the flow ``document``."""
    source = str(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise CaseError(source, "", exc.strerror or str(exc)) from None
    except UnicodeDecodeError as exc:
        raise CaseError(source, "", f"not UTF-8 text (byte offset {exc.start})") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise CaseError(
            source, "", f"invalid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}"
        ) from None
    return parse(data, document, source, base=path.parent, resolve=resolve)


def parse(
    data: Any, document: dict[str, Any], source: str, *, base: Path | None = None, resolve: Any = None
) -> TestSuite:
    """A test file's content (an object with ``cases``, or a bare list of cases) for ``document``.

    ``base``: the test file's directory, which the copybooks of ``setup.messageSets`` are read from;
    ``resolve``: finds a subflow named ``{name, version}`` (inline subflows need none).
    """
    if isinstance(data, list):
        data = {"cases": data}
    reader = _Reader(source, document, base, resolve)
    obj = reader.object(data, "")
    reader.only(obj, "", {"flow", "cases", "setup"})
    flow_name = obj.get("flow")
    if flow_name is not None and flow_name != document.get("name"):
        raise CaseError(
            source, "/flow", f"names flow {flow_name!r}, but the flow is {document.get('name')!r}"
        )
    cases = reader.list(obj.get("cases"), "/cases", MAX_CASES)
    parsed = [reader.case(item, f"/cases/{n}") for n, item in enumerate(cases)]
    names = [case.name for case in parsed]
    for n, name in enumerate(names):
        if name in names[:n]:
            raise CaseError(source, f"/cases/{n}/name", f"another case is already named {name!r}")
    data_sources, subscriptions, message_sets = reader.setup(obj.get("setup"), "/setup")
    return TestSuite(source, tuple(parsed), data_sources, subscriptions, message_sets)


def check(data: Any, document: dict[str, Any], resolve: Any = None) -> list[dict[str, Any]]:
    """The problems of a flow document's ``tests`` (pointers below ``/tests``), for the validator."""
    if not isinstance(data, list):
        return [{"pointer": "/tests", "message": "must be a list of test cases"}]
    try:
        parse(data, document, "tests", resolve=resolve)
    except CaseError as exc:
        return [{"pointer": "/tests" + exc.pointer.removeprefix("/cases"), "message": exc.message}]
    return []


class _Reader:
    def __init__(
        self, source: str, document: dict[str, Any], base: Path | None = None, resolve: Any = None
    ) -> None:
        self.source = source
        self.base = base
        self.nodes = {
            str(node.get("id")): node for node in document.get("nodes") or [] if isinstance(node, dict)
        }
        #: output nodes may lie inside subflows: named ``subflowNode/innerNode``
        self.outputs = canvas_nodes(document, resolve)

    def fail(self, pointer: str, message: str) -> CaseError:
        return CaseError(self.source, pointer, message)

    def object(self, value: Any, pointer: str) -> dict[str, Any]:
        if not isinstance(value, dict):
            raise self.fail(pointer, "must be an object")
        return value

    def list(self, value: Any, pointer: str, most: int) -> list[Any]:
        if not isinstance(value, list):
            raise self.fail(pointer, "required: a list")
        if len(value) > most:
            raise self.fail(pointer, f"at most {most} entries")
        return value

    def text(self, value: Any, pointer: str, *, required: bool = True) -> str:
        if value is None and not required:
            return ""
        if not isinstance(value, str) or (required and not value.strip()):
            raise self.fail(pointer, "required: a non-empty string" if required else "must be a string")
        return value

    def only(self, obj: dict[str, Any], pointer: str, allowed: set[str]) -> None:
        for key in obj:
            if key not in allowed:
                raise self.fail(
                    f"{pointer}/{key}", f"unknown field; expected one of {', '.join(sorted(allowed))}"
                )

    def case(self, value: Any, pointer: str) -> TestCase:
        obj = self.object(value, pointer)
        self.only(obj, pointer, {"name", "description", "input", "expect", "ignore", "reply"})
        name = self.text(obj.get("name"), f"{pointer}/name")
        inputs = self.object(obj.get("input"), f"{pointer}/input")
        node_id = self.input_node(inputs.get("node"), f"{pointer}/input/node")
        domain = str(self.nodes[node_id].get("properties", {}).get("messageDomain") or "")
        file_name = ""
        if starts_by(self.nodes[node_id]) == "file":
            file_name = self.input_file(inputs.get("file"), f"{pointer}/input/file", node_id)
        elif "file" in inputs:
            raise self.fail(f"{pointer}/input/file", f"node {node_id!r} is not a FileInput; it reads no file")
        request = reply = None
        if starts_by(self.nodes[node_id]) == "http":
            request = self.http_call(inputs, f"{pointer}/input", node_id)
            reply = self.http_reply(obj.get("reply"), f"{pointer}/reply", domain)
            inputs = {key: value for key, value in inputs.items() if key not in ("method", "path", "headers")}
        elif "reply" in obj:
            raise self.fail(f"{pointer}/reply", f"node {node_id!r} is not an HTTPInput; nothing is answered")
        message = self.message(inputs, f"{pointer}/input", {"node", "file"}, domain)
        expect = [
            self.expectation(item, f"{pointer}/expect/{n}", domain)
            for n, item in enumerate(self.list(obj.get("expect", []), f"{pointer}/expect", 50))
        ]
        if not expect and reply is None:
            raise self.fail(f"{pointer}/expect", "name at least one queue or output node")
        file_nodes = [e.node if e.writes_files else None for e in expect]
        for n, node_name in enumerate(file_nodes):
            if node_name is not None and node_name in file_nodes[:n]:
                raise self.fail(
                    f"{pointer}/expect/{n}/node",
                    f"node {node_name!r} is named twice; give all its files once",
                )
        ignore = [
            self.path(item, f"{pointer}/ignore/{n}")
            for n, item in enumerate(self.list(obj.get("ignore", []), f"{pointer}/ignore", 200))
        ]
        description = self.text(obj.get("description"), f"{pointer}/description", required=False)
        return TestCase(
            name, node_id, message, tuple(expect), tuple(ignore), description, file_name, request, reply
        )

    def http_call(self, inputs: dict[str, Any], pointer: str, node_id: str) -> HTTPCall:
        properties = self.nodes[node_id].get("properties") or {}
        for key in ("mqmd", "rfh2", "properties"):
            if key in inputs:
                raise self.fail(f"{pointer}/{key}", "an HTTP request has no MQ fields; give headers")
        node_method = str(properties.get("method") or "ANY").upper()
        method = self.text(inputs.get("method"), f"{pointer}/method", required=False).upper()
        method = method or ("POST" if node_method == "ANY" else node_method)
        if not re.fullmatch(r"[A-Z]{1,16}", method):
            raise self.fail(f"{pointer}/method", f"{method!r} is not an HTTP method")
        node_path = str(properties.get("path") or "")
        path = self.text(inputs.get("path"), f"{pointer}/path", required=False)
        if not path:
            if "{" in node_path or "*" in node_path:
                raise self.fail(f"{pointer}/path", f"required: the node serves {node_path!r}, give a path")
            path = node_path
        if not path.startswith("/") or any(c.isspace() for c in path) or len(path) > 2000:
            raise self.fail(f"{pointer}/path", f"{path!r} is not a request path starting with '/'")
        return HTTPCall(method, path, self.headers(inputs.get("headers", {}), f"{pointer}/headers"))

    def http_reply(self, value: Any, pointer: str, domain: str) -> HTTPReplyExpected:
        if value is None:
            raise self.fail(pointer, "required for an HTTPInput case: the status (and body) of the answer")
        obj = self.object(value, pointer)
        self.only(obj, pointer, {"status", "headers", "body", "bodyBase64", "bodyHex", "domain"})
        status = obj.get("status")
        if not isinstance(status, int) or isinstance(status, bool) or not 100 <= status <= 599:
            raise self.fail(f"{pointer}/status", "required: an HTTP status code 100-599")
        message = None
        body_fields: dict[str, Any] = {
            key: obj[key] for key in ("body", "bodyBase64", "bodyHex", "domain") if key in obj
        }
        if any(key != "domain" for key in body_fields):
            message = self.message(body_fields, pointer, set(), domain)
        return HTTPReplyExpected(status, self.headers(obj.get("headers", {}), f"{pointer}/headers"), message)

    def headers(self, value: Any, pointer: str) -> tuple[tuple[str, str], ...]:
        obj = self.object(value, pointer)
        found = []
        for name, item in obj.items():
            if not re.fullmatch(r"[A-Za-z0-9!#$%&'*+.^_`|~-]{1,100}", name):
                raise self.fail(f"{pointer}/{name}", "not an HTTP header name")
            if not isinstance(item, str) or any(c in item for c in "\r\n"):
                raise self.fail(f"{pointer}/{name}", "must be a one-line string")
            found.append((name, item))
        return tuple(found)

    def input_node(self, value: Any, pointer: str) -> str:
        inputs = [nid for nid, node in self.nodes.items() if starts_by(node)]
        if value is None:
            if len(inputs) != 1:
                raise self.fail(
                    pointer, f"required: the flow has {len(inputs)} input nodes ({', '.join(input_types())})"
                )
            return inputs[0]
        node_id = self.text(value, pointer)
        if node_id not in self.nodes:
            raise self.fail(pointer, f"the flow has no node {node_id!r}")
        kind = starts_by(self.nodes[node_id])
        if not kind:
            *others, last = input_types()
            raise self.fail(
                pointer,
                f"node {node_id!r} is a {self.nodes[node_id].get('type')}, not an {', '.join(others)} or {last}",
            )
        properties = self.nodes[node_id].get("properties") or {}
        if kind == "queue" and not properties.get("queueName"):
            raise self.fail(pointer, f"node {node_id!r} has no queue name to put the input message on")
        directory = str(properties.get("directory") or "").strip()
        if kind == "file" and (not directory or _unsafe_relative(directory)):
            raise self.fail(
                pointer,
                f"node {node_id!r} reads directory {directory!r}; a test writes its file only into a "
                "relative directory below the test engine's file root",
            )
        return node_id

    def input_file(self, value: Any, pointer: str, node_id: str) -> str:
        name = self.text(value, pointer)
        if "/" in name or "\\" in name or name.startswith(".") or len(name) > 255:
            raise self.fail(pointer, f"{name!r} is not a plain file name (no directory, not hidden)")
        pattern = str((self.nodes[node_id].get("properties") or {}).get("filePattern") or "*").strip()
        if not fnmatch.fnmatchcase(name, pattern):
            raise self.fail(pointer, f"{name!r} does not match the node's file pattern {pattern!r}")
        return name

    def expectation(self, value: Any, pointer: str, domain: str) -> Expectation:
        obj = self.object(value, pointer)
        self.only(obj, pointer, {"queue", "node", "messages", "files"})
        node_id = ""
        if "node" in obj:
            node_id = self.text(obj["node"], f"{pointer}/node")
            node = self.outputs.get(node_id)
            if node is None:
                where = f"the flow has no node {node_id!r}"
                parent = self.outputs.get(node_id.rsplit("/", 1)[0]) if "/" in node_id else None
                ref = ((parent or {}).get("properties") or {}).get("flow")
                if isinstance(ref, dict) and "nodes" not in ref and ref.get("name"):
                    where += (
                        f" (its subflow is the saved flow {ref['name']!r}; "
                        "a flow test looks only into subflows inline in the flow)"
                    )
                raise self.fail(f"{pointer}/node", where)
            if writes_files(node):
                return self.file_expectation(obj, pointer, node_id, node)
            queue = queue_output(node)
            if not queue:
                raise self.fail(
                    f"{pointer}/node",
                    f"node {node_id!r} is not an MQOutput node with a queue name, nor a FileOutput",
                )
            if "queue" in obj and obj["queue"] != queue:
                raise self.fail(f"{pointer}/queue", f"node {node_id!r} puts to {queue}, not {obj['queue']}")
        elif "queue" in obj:
            queue = self.text(obj["queue"], f"{pointer}/queue")
        else:
            raise self.fail(pointer, "required: queue or node")
        if "files" in obj:
            raise self.fail(f"{pointer}/files", "only a FileOutput node's expectation names files")
        messages = [
            self.message(
                self.object(item, f"{pointer}/messages/{n}"), f"{pointer}/messages/{n}", set(), domain
            )
            for n, item in enumerate(self.list(obj.get("messages"), f"{pointer}/messages", MAX_MESSAGES))
        ]
        return Expectation(queue, node_id, tuple(messages))

    def file_expectation(
        self, obj: dict[str, Any], pointer: str, node_id: str, node: dict[str, Any]
    ) -> Expectation:
        for key in ("queue", "messages"):
            if key in obj:
                raise self.fail(
                    f"{pointer}/{key}", f"node {node_id!r} is a FileOutput: give the files it writes"
                )
        directory = str((node.get("properties") or {}).get("directory") or "").strip()
        if not directory or _unsafe_relative(directory):
            raise self.fail(
                f"{pointer}/node",
                f"node {node_id!r} writes to directory {directory!r}; a test reads files only from a "
                "relative directory below the test engine's file root",
            )
        files = []
        for n, item in enumerate(self.list(obj.get("files"), f"{pointer}/files", MAX_MESSAGES)):
            where = f"{pointer}/files/{n}"
            entry = self.object(item, where)
            self.only(entry, where, {"name", "body", "bodyBase64", "bodyHex", "domain"})
            name = self.text(entry.get("name"), f"{where}/name")
            if "/" in name or "\\" in name or name.startswith(".") or len(name) > 255:
                raise self.fail(
                    f"{where}/name",
                    f"{name!r} is not a plain file name or pattern (no directory, not hidden)",
                )
            files.append(ExpectedFile(name, self.message(entry, where, {"name"}, "")))
        return Expectation("", node_id, (), tuple(files), directory)

    def message(self, obj: dict[str, Any], pointer: str, extra: set[str], domain: str) -> TestMessage:
        self.only(
            obj, pointer, {"body", "bodyBase64", "bodyHex", "mqmd", "rfh2", "properties", "domain", *extra}
        )
        given = [key for key in ("body", "bodyBase64", "bodyHex") if key in obj]
        if len(given) > 1:
            raise self.fail(
                f"{pointer}/{given[1]}", f"give one of body, bodyBase64, bodyHex (also {given[0]})"
            )
        body = b""
        if given:
            body = self.body(given[0], obj[given[0]], f"{pointer}/{given[0]}")
        fields = self.mqmd(obj.get("mqmd", {}), f"{pointer}/mqmd")
        rfh2 = None
        if "rfh2" in obj:
            rfh2 = {}
            for name, folder in self.object(obj["rfh2"], f"{pointer}/rfh2").items():
                folder_obj = self.object(folder, f"{pointer}/rfh2/{name}")
                for key, item in folder_obj.items():
                    if not isinstance(item, str | int | float | bool):
                        raise self.fail(f"{pointer}/rfh2/{name}/{key}", "must be a string, number or boolean")
                rfh2[name] = {key: _folder_text(item) for key, item in folder_obj.items()}
        properties = self.object(obj.get("properties", {}), f"{pointer}/properties")
        message_domain = self.text(obj.get("domain"), f"{pointer}/domain", required=False) or domain
        if message_domain:
            import esql.domains

            from flowbroker.formats import load_all

            load_all()
            if message_domain.upper() not in esql.domains.known():
                raise self.fail(f"{pointer}/domain", f"unknown message domain {message_domain!r}")
        return TestMessage(body, fields, rfh2, dict(properties), message_domain.upper())

    def body(self, key: str, value: Any, pointer: str) -> bytes:
        if key == "body":
            if isinstance(value, str):
                return value.encode("utf-8")
            if isinstance(value, dict | list):
                return json.dumps(value, ensure_ascii=False).encode("utf-8")
            raise self.fail(pointer, "must be text, or a JSON object or list")
        text = self.text(value, pointer, required=False)
        try:
            if key == "bodyHex":
                return bytes.fromhex(text)
            return base64.b64decode(text, validate=True)
        except (ValueError, binascii.Error) as exc:
            raise self.fail(pointer, f"not valid {'hex' if key == 'bodyHex' else 'base64'}: {exc}") from None

    def mqmd(self, value: Any, pointer: str) -> dict[str, Any]:
        obj = self.object(value, pointer)
        fields: dict[str, Any] = {}
        for name, item in obj.items():
            where = f"{pointer}/{name}"
            if name not in MQMD_FIELDS:
                raise self.fail(
                    where, f"not an MQMD field a test sets; expected one of {', '.join(MQMD_FIELDS)}"
                )
            if name in _INT_FIELDS:
                if not isinstance(item, int) or isinstance(item, bool):
                    raise self.fail(where, "must be an integer")
            elif not isinstance(item, str):
                raise self.fail(where, "must be a string")
            if name in _ID_FIELDS:
                raw = item.encode("utf-8")
                if len(raw) > 24:
                    raise self.fail(where, f"is {len(raw)} bytes; at most 24")
                item = raw.ljust(24, b"\x00")
            elif name == "Format" and len(item) > 8:
                raise self.fail(where, "at most 8 characters")
            fields[name] = item
        return fields

    def path(self, value: Any, pointer: str) -> str:
        text = self.text(value, pointer)
        segments = text.split(".")
        if segments[0] == "Root":
            segments = segments[1:]
        for segment in segments:
            if not _SEGMENT.match(segment):
                raise self.fail(
                    pointer,
                    f"{text!r} is not a tree path (names joined by '.', each optionally with [n] or [*])",
                )
        if not segments:
            raise self.fail(pointer, "a path below Root is needed, e.g. MQMD.MsgId")
        return ".".join(segments)

    def setup(
        self, value: Any, pointer: str
    ) -> tuple[tuple[DataSourceSetup, ...], tuple[Subscription, ...], tuple[MessageSetSetup, ...]]:
        if value is None:
            return (), (), ()
        obj = self.object(value, pointer)
        self.only(obj, pointer, {"dataSources", "subscriptions", "messageSets"})
        sources = []
        for name, source in self.object(obj.get("dataSources", {}), f"{pointer}/dataSources").items():
            where = f"{pointer}/dataSources/{name}"
            source_obj = self.object(source, where)
            self.only(source_obj, where, {"statements"})
            statements = [
                self.text(item, f"{where}/statements/{n}")
                for n, item in enumerate(
                    self.list(source_obj.get("statements", []), f"{where}/statements", 100)
                )
            ]
            sources.append(DataSourceSetup(name, tuple(statements)))
        subscriptions = []
        for n, item in enumerate(self.list(obj.get("subscriptions", []), f"{pointer}/subscriptions", 50)):
            where = f"{pointer}/subscriptions/{n}"
            sub = self.object(item, where)
            self.only(sub, where, {"topic", "queue"})
            subscriptions.append(
                Subscription(
                    self.text(sub.get("topic"), f"{where}/topic"),
                    self.text(sub.get("queue"), f"{where}/queue"),
                )
            )
        message_sets = []
        for name, item in self.object(obj.get("messageSets", {}), f"{pointer}/messageSets").items():
            where = f"{pointer}/messageSets/{name}"
            entry = self.object(item, where)
            self.only(entry, where, {"copybook", "type"})
            relative = self.text(entry.get("copybook"), f"{where}/copybook")
            if self.base is None:
                raise self.fail(f"{where}/copybook", "a copybook is read only by a test file beside the flow")
            copybook = (self.base / relative).resolve()
            if not copybook.is_file():
                raise self.fail(f"{where}/copybook", f"no file {relative!r} beside the test file")
            kind = self.text(entry.get("type"), f"{where}/type", required=False)
            message_sets.append(MessageSetSetup(name, copybook, kind))
        return tuple(sources), tuple(subscriptions), tuple(message_sets)


def _folder_text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _unsafe_relative(directory: str) -> bool:
    """An absolute directory, or one that climbs out with ``..``: not below the engine's file root."""
    return directory.startswith(("/", "\\")) or ":" in directory or ".." in re.split(r"[/\\]", directory)


def tests_file(flow_file: Path) -> Path:
    """Where the tests of the flow document ``flow_file`` are kept: ``NAME.tests.json`` beside it."""
    return flow_file.with_name(f"{flow_file.stem}.tests.json")


# -- a case from messages seen (a recording, or messages taken off queues) ----------------------


def message_json(message: Any, *, domain: str = "", skip: tuple[str, ...] = ()) -> dict[str, Any]:
    """A queue message (descriptor, properties, body) as a test file gives one.

    MQMD fields named in ``skip``, and empty ones, are left out (so not compared).
    """
    md = message.md
    fields: dict[str, Any] = {}
    for name, attr in MQMD_FIELDS.items():
        value = getattr(md, attr)
        if name in skip or value == "":
            continue
        if name in _ID_FIELDS:
            if value.rstrip(b"\x00") == b"":
                continue
            try:
                value = value.rstrip(b"\x00").decode("utf-8")
            except UnicodeDecodeError:
                continue  # an id that is not text: left out, and its comparison ignored
        elif name == "Format":
            value = str(value).strip()
            if not value:
                continue
        fields[name] = value
    out: dict[str, Any] = {"mqmd": fields}
    body = bytes(message.body)
    folders = _rfh2_folders(md, body)
    if folders is not None:
        out["rfh2"], inner, body = folders
        fields["Format"] = inner
    try:
        out["body"] = body.decode("utf-8")
    except UnicodeDecodeError:
        out["bodyBase64"] = base64.b64encode(body).decode("ascii")
    if message.properties:
        out["properties"] = dict(message.properties)
    if domain:
        out["domain"] = domain
    return out


def _rfh2_folders(md: Any, body: bytes) -> tuple[dict[str, dict[str, str]], str, bytes] | None:
    """(folders, inner format, body after the header) of a message with a flat MQRFH2; else None."""
    if str(md.format).strip() != mqmd.FORMAT_RFH2.strip():
        return None
    from flowbroker.formats import rfh2 as rfh2_format

    try:
        header, rest = rfh2_format.parse(body, encoding=md.encoding, ccsid=md.coded_char_set_id)
    except Exception:  # a header this cannot read: the message is kept as bytes
        return None
    folders: dict[str, dict[str, str]] = {}
    inner = ""
    for kid in header.children():
        if kid.name == "Format":
            inner = str(kid.value or "").strip()
        elif kid.has_children():
            if any(field.has_children() for field in kid.children()):
                return None
            folders[kid.name] = {field.name: _folder_text(field.value) for field in kid.children()}
    return folders, inner, rest


#: Fields that differ on every run: a case made from messages seen ignores them.
VOLATILE_PATHS = ("MQMD.MsgId", "MQMD.PutDate", "MQMD.PutTime", "MQMD.Expiry", "MQMD.BackoutCount")


def case_from_messages(
    name: str,
    input_message: Any,
    outputs: dict[str, list[Any]],
    *,
    input_node: str | None = None,
    ignore: list[str] | None = None,
    domain: str = "",
) -> dict[str, Any]:
    """A test case (as stored) from an input message and the messages that came out, per queue.

    A recording of a flow's path or messages taken off its output queues feed this the same way;
    ``ignore`` adds tree paths to the run-dependent ones left out always.
    """
    from flowbroker.qm.protocol import MessageDescriptor

    defaults = MessageDescriptor()
    unset = tuple(
        name
        for name, attr in MQMD_FIELDS.items()
        if getattr(input_message.md, attr) == getattr(defaults, attr)
    )
    given = message_json(input_message, domain=domain, skip=("MsgId", *unset))
    if not given["mqmd"]:
        del given["mqmd"]
    volatile = tuple(path.partition(".")[2] for path in VOLATILE_PATHS)
    if input_node:
        given["node"] = input_node
    return {
        "name": name,
        "input": given,
        "expect": [
            {"queue": queue, "messages": [message_json(m, domain=domain, skip=volatile) for m in messages]}
            for queue, messages in outputs.items()
        ],
        "ignore": [*VOLATILE_PATHS, *(ignore or [])],
    }


def case_from_views(
    name: str,
    input_message: dict[str, Any],
    outputs: dict[str, list[dict[str, Any]]],
    *,
    input_node: str | None = None,
    ignore: list[str] | None = None,
) -> dict[str, Any]:
    """A test case from messages already in a test file's form (as a recording's view gives them).

    The run-dependent fields (:data:`VOLATILE_PATHS`) are ignored besides ``ignore``; the case is
    checked when it is stored with its flow.
    """
    given = dict(input_message)
    if input_node:
        given["node"] = input_node
    return {
        "name": name,
        "input": given,
        "expect": [{"queue": queue, "messages": list(messages)} for queue, messages in outputs.items()],
        "ignore": [*VOLATILE_PATHS, *(p for p in ignore or [] if p not in VOLATILE_PATHS)],
    }
