"""Trace: writes a pattern with ${…} ESQL expressions to a file, the user trace or the log.

A ``${…}`` that is a field path (``${Root.XMLNSC.Order}``) renders the field or, for a folder, the
tree below it; any other ESQL expression (``${CAST(ASBITSTREAM(Root) AS CHARACTER CCSID 1208)}``,
``${COALESCE(Environment.Id, 'none')}``) is compiled on deploy, as ACE's Trace node takes it, and
evaluated with the correlation names of a Filter node (Root, Body, LocalEnvironment, Environment,
ExceptionList, DestinationList), its value written as CAST to CHARACTER would.
"""

from __future__ import annotations

import datetime
import re
import threading
from typing import Any

from esql.tree import Element

from flowbroker_nodes.base import Assembly, DeployProblem, NodeError, esql_log
from flowbroker_nodes.base import Node as BaseNode
from flowbroker_nodes.spec import NodeSpec, Property, Terminal

SPEC = NodeSpec(
    type="Trace",
    label="Trace",
    category="diagnostics",
    icon="trace",
    description="Formats the pattern — ${Root}, ${Root.XMLNSC.Order.Id}, ${LocalEnvironment}, ${ExceptionList}, "
    "${CURRENT_TIMESTAMP} or any ESQL expression — and writes it; the message passes on unchanged.",
    inputs=(Terminal("in", "in", "In"),),
    outputs=(Terminal("out", "out", "Out"),),
    properties=(
        Property(
            "destination",
            "enum",
            "Destination",
            default="userTrace",
            enum=("none", "userTrace", "file", "log"),
            description="Where the record goes.",
        ),
        Property(
            "filePath",
            "string",
            "File path",
            default="",
            description="The file appended to when the destination is file.",
        ),
        Property(
            "pattern",
            "text",
            "Pattern",
            default="${Root}",
            editor="multiline",
            description="Text with ${…} field references, ${CURRENT_TIMESTAMP} and other ESQL expressions "
            "(evaluated as in a Filter node).",
        ),
    ),
)

_REFERENCE = re.compile(r"\$\{([^}]*)\}")
_STEP = re.compile(r"^\s*(\*|[A-Za-z_][\w-]*|\"[^\"]*\")\s*(?:\[\s*(<?)\s*(\d*)\s*\])?\s*$")
_CORRELATIONS = ("Root", "LocalEnvironment", "Environment", "ExceptionList")
_PREFIX = (
    "CREATE FILTER MODULE TracePattern\nCREATE FUNCTION Main() RETURNS CHARACTER\nBEGIN\nRETURN CAST((\n"
)
_SUFFIX = "\n) AS CHARACTER);\nEND;\nEND MODULE;\n"
#: A ${…} that is an ESQL expression: its text and the compiled routine.
_EXPRESSION = "expression"


class Node(BaseNode):
    """Formats the pattern against the message and writes the record; the message goes on unchanged."""

    SPEC = SPEC

    def prepare(self) -> None:
        pattern = self.properties.get("pattern") or ""
        self.parts: list[str | tuple[str, Any]] = []
        last = 0
        for match in _REFERENCE.finditer(pattern):
            self.parts.append(pattern[last : match.start()])
            self.parts.append(_parse_reference(match.group(1), match.start(), self.id))
            last = match.end()
        self.parts.append(pattern[last:])
        if self.properties.get("destination") == "file" and not self.properties.get("filePath"):
            raise DeployProblem("required when the destination is file", property="filePath")
        self.lock = threading.Lock()

    def evaluate(self, assembly: Assembly, terminal: str) -> None:
        destination = self.properties.get("destination")
        if destination != "none":
            text = "".join(
                part if isinstance(part, str) else self._render(part, assembly) for part in self.parts
            )
            if destination == "file":
                with self.lock, open(self.properties["filePath"], "a", encoding="utf-8") as out:
                    out.write(text + "\n")
            elif destination == "log":
                self.flow.log(text)
            else:
                self.flow.user_trace(text)
        self.propagate("out", assembly)

    def _render(self, reference: tuple[str, Any], assembly: Assembly) -> str:
        if reference[0] != _EXPRESSION:
            return _render(reference, assembly)
        from esql.functions import invocation
        from esql.runtime import ExecutionContext

        text, routine = reference[1]
        cpu_limit_ms, memory_limit_bytes = self.flow.esql_limits()
        ctx = ExecutionContext(
            input_root=assembly.root,
            input_local_environment=assembly.local_environment,
            input_exception_list=assembly.exception_list,
            environment=assembly.environment,
            stop=self.flow.stop,
            interrupt=self.flow.interrupt,
            log=esql_log(self),
            node_name=self.name,
            cpu_limit_ms=cpu_limit_ms,
            memory_limit_bytes=memory_limit_bytes,
            broker=self.flow.broker_attributes(),
        )
        try:
            with invocation(stop=self.flow.stop):
                value = routine.run(ctx)
        except Exception as exc:
            raise NodeError(f"Trace pattern ${{{text}}} failed: {exc}") from exc
        return "" if value is None else str(value)


def _parse_reference(text: str, offset: int, node_id: str = "trace") -> tuple[str, Any]:
    if text.strip() in {"CURRENT_TIMESTAMP", "CURRENT_GMTTIMESTAMP"}:
        return (text.strip(), [])
    steps = text.split(".")
    head = steps[0].strip()
    path: list[tuple[str, int]] = []
    for step in steps[1:] if head in _CORRELATIONS else ():
        match = _STEP.match(step)
        if match is None:
            break
        name, last, index = match.group(1).strip('"'), match.group(2), match.group(3)
        position = int(index) if index else 1
        path.append((name, -position if last else position))
    else:
        if head in _CORRELATIONS:
            return (head, path)
    return (_EXPRESSION, (text, _compile(text, offset, node_id)))


def _compile(text: str, offset: int, node_id: str) -> Any:
    """The ESQL expression ``text`` of the pattern compiled; a DeployProblem names it and its offset."""
    from esql.compiler import EsqlCompileError, compile_program

    try:
        program = compile_program(_PREFIX + text + _SUFFIX, filename=f"{node_id}.trace.esql")
        return program.main_module(kind="FILTER")
    except EsqlCompileError as exc:
        first = next(
            (d for d in getattr(exc, "diagnostics", []) or [] if getattr(d, "severity", "error") == "error"),
            None,
        )
        reason = first.message if first is not None else str(exc)
        raise DeployProblem(
            f"${{{text}}} at offset {offset}: not a field reference, and as an ESQL expression: {reason}",
            property="pattern",
        ) from None


def _render(reference: tuple[str, Any], assembly: Assembly) -> str:
    head, path = reference
    if head == "CURRENT_TIMESTAMP":
        return datetime.datetime.now().isoformat(sep=" ")
    if head == "CURRENT_GMTTIMESTAMP":
        return datetime.datetime.now(datetime.UTC).replace(tzinfo=None).isoformat(sep=" ")
    node: Element | None = {
        "Root": assembly.root,
        "LocalEnvironment": assembly.local_environment,
        "Environment": assembly.environment,
        "ExceptionList": assembly.exception_list,
    }[head]
    for name, index in path:
        if node is None:
            break
        if name == "*":
            kids = list(node.children())
            node = kids[index - 1 if index > 0 else index] if kids and abs(index) <= len(kids) else None
        else:
            node = node.child(name, index)
    if node is None:
        return ""
    if node.has_children():
        return _dump(node)
    return "" if node.value is None else str(node.value)


def _dump(node: Element, depth: int = 0) -> str:
    """An indented rendering that parses what it shows (Element.dump leaves unparsed parts out)."""
    label = f"{node.namespace}:{node.name}" if node.namespace else node.name
    line = "  " * depth + label + ("" if node.value is None else f" = {node.value!r}")
    return "\n".join([line, *(_dump(kid, depth + 1) for kid in node.children())])
