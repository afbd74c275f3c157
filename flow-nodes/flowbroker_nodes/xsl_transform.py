"""XSLTransform: transforms the message body with an XSLT 1.0 stylesheet (ACE's node of the same name).

The stylesheet is, first found: the file named by ``LocalEnvironment.ComIbmXslXmltStylesheetname``,
the node's inline ``stylesheet``, or the file ``stylesheetName``. Files are read from below the
execution group's file roots (FLOWBROKER_FILE_ROOTS; a relative name is taken from the first
root) and are compiled once per change of the file; an inline stylesheet is compiled when the
flow is deployed, so an error in it refuses the deployment with its line and column.
Parameters: the node's ``parameters`` (name → string value), overridden by
``LocalEnvironment.XSLT.Parameters.<name>``.

The body is serialized (any domain that writes XML) and transformed in a sandbox process (see
:mod:`flowbroker_nodes.xslt_sandbox`): no DTDs or entities, no file or network access from the
stylesheet, bounded time, memory, stylesheet and result size (FLOWBROKER_XSLT_*). The result
replaces the body in the output domain: the node's ``outputDomain``, else XMLNSC for
``xsl:output method="xml"`` (the default) and BLOB for ``text`` or ``html``; the headers are kept
and ``Properties.CodedCharSetId`` follows the stylesheet's output encoding. Any failure (a body
that is not XML, a stylesheet error, a limit) goes to ``failure`` with its text and position.
"""

from __future__ import annotations

import hashlib
import os
import threading
from pathlib import Path

from esql.tree import Element

from flowbroker_nodes import xslt_sandbox
from flowbroker_nodes.base import Assembly, DeployProblem, NodeError, field
from flowbroker_nodes.base import Node as BaseNode
from flowbroker_nodes.spec import NodeSpec, Property, Terminal

SPEC = NodeSpec(
    type="XSLTransform",
    label="XSLTransform",
    category="transformation",
    icon="xslt",
    description="Transforms the message body with an XSLT 1.0 stylesheet (inline, or a file below the file "
    "roots, or named in LocalEnvironment.ComIbmXslXmltStylesheetname) in a sandbox without file or network "
    "access; the result becomes the body in the output domain.",
    inputs=(Terminal("in", "in", "In"),),
    outputs=(Terminal("out", "out", "Out"), Terminal("failure", "failure", "Failure")),
    properties=(
        Property(
            "stylesheet",
            "text",
            "Stylesheet",
            default="",
            editor="multiline",
            description="An inline XSLT 1.0 stylesheet, compiled when the flow is deployed.",
        ),
        Property(
            "stylesheetName",
            "string",
            "Stylesheet name",
            default="",
            description="A stylesheet file below the file roots (relative names from the first root), used "
            "when there is no inline stylesheet.",
        ),
        Property(
            "outputDomain",
            "enum",
            "Output domain",
            default="",
            enum=("", "XMLNSC", "XMLNS", "XML", "JSON", "BLOB"),
            description="The domain of the result; empty: XMLNSC for xsl:output method xml, BLOB for text "
            "and html.",
        ),
        Property(
            "parameters",
            "json",
            "Parameters",
            default={},
            description='Stylesheet parameters as {"name": "string value"}; '
            "LocalEnvironment.XSLT.Parameters.<name> overrides them.",
        ),
    ),
)

_NAME_FIELD = "ComIbmXslXmltStylesheetname"
_METHOD_DOMAIN = {"xml": "XMLNSC", "text": "BLOB", "html": "BLOB"}


class _Compiled:
    __slots__ = ("ccsid", "data", "key", "method")

    def __init__(self, data: bytes) -> None:
        _xslt, self.method, self.ccsid = xslt_sandbox.compile_stylesheet(data)
        self.data = data
        self.key = hashlib.sha256(data).hexdigest()


class Node(BaseNode):
    """Transforms one message per arrival; see the module docstring."""

    SPEC = SPEC

    def prepare(self) -> None:
        props = self.properties
        text = str(props.get("stylesheet") or "")
        self.inline: _Compiled | None = None
        if text.strip():
            try:
                self.inline = _Compiled(text.encode("utf-8"))
            except xslt_sandbox.XsltError as exc:
                raise DeployProblem(
                    exc.text, property="stylesheet", line=exc.line, column=exc.column
                ) from None
        self.name_property = str(props.get("stylesheetName") or "").strip()
        if self.name_property:
            if "\x00" in self.name_property:
                raise DeployProblem("the stylesheet name contains a NUL character", property="stylesheetName")
        domain = str(props.get("outputDomain") or "")
        if domain not in SPEC.properties[2].enum:
            raise DeployProblem(f"unknown output domain {domain!r}", property="outputDomain")
        self.domain = domain
        params = props.get("parameters") or {}
        if not isinstance(params, dict) or not all(
            isinstance(k, str) and k.isidentifier() and isinstance(v, str | int | float)
            for k, v in params.items()
        ):
            raise DeployProblem(
                'parameters must be an object of {"name": "value"} with names that are XSLT names',
                property="parameters",
            )
        self.params = {k: str(v) for k, v in params.items()}
        self._files: dict[str, tuple[int, int, _Compiled]] = {}
        self._lock = threading.Lock()
        #: Whether this node transformed since it was prepared or last released.
        self._used_sandbox = False

    def release(self) -> None:
        """End the idle sandbox processes once this node used them: they are shared by every
        XSLTransform node of the process, so another flow's next transformation starts a new one."""
        if getattr(self, "_used_sandbox", False):
            self._used_sandbox = False
            xslt_sandbox.end_idle()

    def evaluate(self, assembly: Assembly, terminal: str) -> None:
        flow = self.flow
        time_ms, memory, max_stylesheet, max_output = flow.xslt_limits()
        local = assembly.local_environment
        named = field(local, _NAME_FIELD)
        chosen = str(named.value or "").strip() if named is not None else ""
        if chosen:
            compiled = self._file(chosen, max_stylesheet)
        elif self.inline is not None:
            compiled = self.inline
            if len(compiled.data) > max_stylesheet:
                raise NodeError(
                    f"the stylesheet is {len(compiled.data)} bytes, more than the limit of {max_stylesheet} "
                    "(FLOWBROKER_XSLT_MAX_STYLESHEET_BYTES)",
                    number=4005,
                )
        elif self.name_property:
            compiled = self._file(self.name_property, max_stylesheet)
        else:
            raise NodeError(
                f"{self.name}: no stylesheet: neither LocalEnvironment.{_NAME_FIELD}, the stylesheet property "
                "nor the stylesheet name gives one",
                number=4005,
            )
        params = dict(self.params)
        given = field(local, "XSLT", "Parameters")
        if given is not None:
            for kid in given.children():
                if kid.name.isidentifier():
                    params[kid.name] = "" if kid.value is None else str(kid.value)
        _md, _properties, body = flow.message_parts(assembly.root)
        self._used_sandbox = True
        try:
            out = xslt_sandbox.transform(
                compiled.key,
                compiled.data,
                body,
                params,
                time_limit_ms=time_ms,
                memory_limit=memory,
                max_output=max_output,
            )
        except xslt_sandbox.XsltError as exc:
            where = f" (stylesheet line {exc.line}, column {exc.column})" if exc.line else ""
            raise NodeError(f"{exc.text}{where}", number=4005, inserts=(exc.text,)) from None
        root = assembly.root.copy()
        old = root.last_child
        if old is not None and old.name not in ("Properties", "MQMD", "MQRFH2") and "Header" not in old.name:
            old.detach()
        properties = root.child("Properties") or root.prepend(Element("Properties"))
        ccsid = properties.child("CodedCharSetId") or properties.add("CodedCharSetId")
        ccsid.value = compiled.ccsid
        blob = root.add("BLOB", type=0x01000000)
        blob.add("BLOB", out)
        flow.reset_body(root, {"domain": self.domain or _METHOD_DOMAIN.get(compiled.method, "BLOB")})
        self.propagate("out", assembly.replace(root=root))

    def _file(self, name: str, max_bytes: int) -> _Compiled:
        """The compiled stylesheet of file ``name`` below the file roots (compiled again when it changes)."""
        roots = self.flow.file_roots()
        if "\x00" in name or not roots:
            raise NodeError(f"stylesheet {name!r} cannot be read: no file roots are configured", number=4005)
        path = Path(name)
        if not path.is_absolute():
            path = Path(roots[0]) / path
        resolved = Path(os.path.realpath(path))
        if not any(resolved.is_relative_to(root) for root in roots):
            raise NodeError(
                f"stylesheet {name!r} is outside the file roots ({', '.join(roots)})",
                number=4005,
                inserts=(name,),
            )
        try:
            stat = resolved.stat()
        except OSError:
            raise NodeError(f"stylesheet {name!r} does not exist", number=4005, inserts=(name,)) from None
        if not resolved.is_file():
            raise NodeError(f"stylesheet {name!r} is not a regular file", number=4005, inserts=(name,))
        if stat.st_size > max_bytes:
            raise NodeError(
                f"stylesheet {name!r} is {stat.st_size} bytes, more than the limit of {max_bytes} "
                "(FLOWBROKER_XSLT_MAX_STYLESHEET_BYTES)",
                number=4005,
            )
        key = str(resolved)
        with self._lock:
            cached = self._files.get(key)
        if cached is not None and cached[0] == stat.st_mtime_ns and cached[1] == stat.st_size:
            return cached[2]
        with open(resolved, "rb") as handle:
            data = handle.read(max_bytes + 1)
        try:
            compiled = _Compiled(data)
        except xslt_sandbox.XsltError as exc:
            where = f" at line {exc.line}, column {exc.column}" if exc.line else ""
            raise NodeError(f"stylesheet {name!r}{where}: {exc.text}", number=4005, inserts=(name,)) from None
        with self._lock:
            self._files[key] = (stat.st_mtime_ns, stat.st_size, compiled)
        return compiled
