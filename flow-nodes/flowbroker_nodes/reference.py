"""The node reference (docs/nodes.md): every node type's terminals and properties, from its spec."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from flowbroker_nodes.spec import NodeSpec, Property, Terminal

COMMAND = "flowbroker docs nodes --output docs/nodes.md"
ROLES = {"input": "input (starts flow threads)", "output": "output (sends messages out of the broker)"}


def render(specs: Iterable[NodeSpec]) -> str:
    """The Markdown reference of ``specs``, in their order."""
    specs = list(specs)
    lines = [
        "# Node reference",
        "",
        f"Generated from the node specs by `{COMMAND}`; do not edit it by hand.",
        "",
        "| type | label | category | role |",
        "|---|---|---|---|",
    ]
    for spec in specs:
        role = spec.role or "—"
        lines.append(
            f"| [{spec.type}](#{spec.type.lower()}) | {_cell(spec.label)} | {spec.category} | {role} |"
        )
    for spec in specs:
        lines.extend(_node(spec))
    return "\n".join(lines) + "\n"


def _node(spec: NodeSpec) -> list[str]:
    lines = [
        "",
        f"## {spec.type}",
        "",
        f"**{spec.label}**, category `{spec.category}`, role: {ROLES.get(spec.role, 'processing')}.",
        "",
        _cell(spec.description),
        "",
    ]
    lines.extend(_terminals("Input terminals", spec.inputs, spec.extra.get("inputTerminalsFrom")))
    lines.extend(_terminals("Output terminals", spec.outputs, spec.extra.get("outputTerminalsFrom")))
    if spec.dynamic_terminals:
        lines += ["Its terminals are those of the flow it runs (dynamic terminals).", ""]
    if not spec.properties:
        lines += ["No properties.", ""]
        return lines[:-1]
    lines += [
        "| property | type | default | required | values | description |",
        "|---|---|---|---|---|---|",
    ]
    lines.extend(_property(prop) for prop in spec.properties)
    return lines


def _terminals(title: str, terminals: tuple[Terminal, ...], derived: Any) -> list[str]:
    named = ", ".join(f"`{t.name}` ({t.kind})" for t in terminals) or "none"
    lines = [f"{title}: {named}."]
    if isinstance(derived, dict):
        lines.append(
            f"Further terminals are named by the `{derived.get('key')}` column of the "
            f"`{derived.get('property')}` property."
        )
    return [" ".join(lines), ""]


def _property(prop: Property) -> str:
    values = ", ".join(_code(v) for v in prop.enum)
    if prop.minimum is not None or prop.maximum is not None:
        low = "" if prop.minimum is None else str(prop.minimum)
        high = "" if prop.maximum is None else str(prop.maximum)
        values = f"{low}…{high}"
    default = "" if prop.default is None else _code(json.dumps(prop.default, ensure_ascii=False))
    label = f"{prop.label}: " if prop.label and prop.label != prop.name else ""
    return (
        f"| `{prop.name}` | {prop.type} | {default} | {'yes' if prop.required else ''} | {values} "
        f"| {_cell(label + prop.description)} |"
    )


def _code(text: str) -> str:
    text = " ".join(str(text).split()).replace("|", "\\|")
    fence = "``" if "`" in text else "`"
    pad = " " if fence == "``" else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def _cell(text: str) -> str:
    """One line of table text: pipes escaped, and ``<`` so that ``<mcd>`` is not read as HTML."""
    return " ".join(str(text).split()).replace("|", "\\|").replace("<", "&lt;")
