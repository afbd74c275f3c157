"""Trace: writes a pattern with ${…} ESQL field references to a file, the user trace or the log."""

from __future__ import annotations

import datetime
import re
import threading

from esql.tree import Element

from flowbroker_nodes.base import Assembly, DeployProblem
from flowbroker_nodes.base import Node as BaseNode
from flowbroker_nodes.spec import NodeSpec, Property, Terminal

SPEC = NodeSpec(
    type="Trace",
    label="Trace",
    category="diagnostics",
    icon="trace",
    description="Formats the pattern — ${Root}, ${Root.XMLNSC.Order.Id}, ${LocalEnvironment}, ${ExceptionList}, "
    "${CURRENT_TIMESTAMP} — and writes it; the message passes on unchanged.",
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
            description="Text with ${…} field references and ${CURRENT_TIMESTAMP}.",
        ),
    ),
)

_REFERENCE = re.compile(r"\$\{([^}]*)\}")
_STEP = re.compile(r"^\s*(\*|[A-Za-z_][\w-]*|\"[^\"]*\")\s*(?:\[\s*(<?)\s*(\d*)\s*\])?\s*$")
_CORRELATIONS = ("Root", "LocalEnvironment", "Environment", "ExceptionList")


class Node(BaseNode):
    """Formats the pattern against the message and writes the record; the message goes on unchanged."""

    SPEC = SPEC

    def prepare(self) -> None:
        pattern = self.properties.get("pattern") or ""
        self.parts: list[str | tuple[str, list[tuple[str, int]]]] = []
        last = 0
        for match in _REFERENCE.finditer(pattern):
            self.parts.append(pattern[last : match.start()])
            self.parts.append(_parse_reference(match.group(1), match.start()))
            last = match.end()
        self.parts.append(pattern[last:])
        if self.properties.get("destination") == "file" and not self.properties.get("filePath"):
            raise DeployProblem("required when the destination is file", property="filePath")
        self.lock = threading.Lock()

    def evaluate(self, assembly: Assembly, terminal: str) -> None:
        destination = self.properties.get("destination")
        if destination != "none":
            text = "".join(part if isinstance(part, str) else _render(part, assembly) for part in self.parts)
            if destination == "file":
                with self.lock, open(self.properties["filePath"], "a", encoding="utf-8") as out:
                    out.write(text + "\n")
            elif destination == "log":
                self.flow.log(text)
            else:
                self.flow.user_trace(text)
        self.propagate("out", assembly)


def _parse_reference(text: str, offset: int) -> tuple[str, list[tuple[str, int]]]:
    if text.strip() in {"CURRENT_TIMESTAMP", "CURRENT_GMTTIMESTAMP"}:
        return (text.strip(), [])
    steps = text.split(".")
    head = steps[0].strip()
    if head not in _CORRELATIONS:
        raise DeployProblem(
            f"${{{text}}} at offset {offset}: a reference starts with Root, LocalEnvironment, Environment, "
            "ExceptionList or is CURRENT_TIMESTAMP",
            property="pattern",
        )
    path: list[tuple[str, int]] = []
    for step in steps[1:]:
        match = _STEP.match(step)
        if match is None:
            raise DeployProblem(f"${{{text}}} at offset {offset}: bad path step {step!r}", property="pattern")
        name, last, index = match.group(1).strip('"'), match.group(2), match.group(3)
        position = int(index) if index else 1
        path.append((name, -position if last else position))
    return (head, path)


def _render(reference: tuple[str, list[tuple[str, int]]], assembly: Assembly) -> str:
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
