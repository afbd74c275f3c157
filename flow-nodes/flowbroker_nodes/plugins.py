"""Node types of other distributions: modules named in the ``flowbroker.nodes`` entry-point group.

A distribution declares ``[project.entry-points."flowbroker.nodes"] mynode = "mypkg.mynode"``;
the module defines ``SPEC`` and its runtime class ``Node`` as the built-in node modules do. A
module that cannot be imported, whose spec is malformed, or whose type is also a built-in's or
another plug-in's, is refused with one logged error naming the distribution and entry point;
every other node type keeps working.
"""

from __future__ import annotations

import json
import logging
import re
from importlib.metadata import EntryPoint, entry_points
from types import ModuleType
from typing import get_args

from flowbroker_nodes.spec import NodeRole, NodeSpec, Property, PropertyType, Terminal, TerminalKind

GROUP = "flowbroker.nodes"
log = logging.getLogger(__name__)

_TYPE_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_.\-]{0,63}$")


def load(builtin: dict[str, ModuleType]) -> dict[str, ModuleType]:
    """The accepted plug-in modules by node type; ``builtin`` holds the types already taken."""
    candidates: dict[str, list[tuple[EntryPoint, ModuleType]]] = {}
    for point in entry_points(group=GROUP):
        try:
            module = point.load()
        except Exception as exc:  # a plug-in's import error must not stop the broker
            _refuse(point, f"cannot be imported: {type(exc).__name__}: {exc}")
            continue
        found = module_problems(module)
        if found:
            _refuse(point, "; ".join(found))
            continue
        type_name = module.SPEC.type
        if type_name in builtin:
            _refuse(point, f"node type {type_name!r} is a built-in node type")
            continue
        candidates.setdefault(type_name, []).append((point, module))
    accepted: dict[str, ModuleType] = {}
    for type_name, claims in candidates.items():
        if len(claims) == 1:
            accepted[type_name] = claims[0][1]
            continue
        for point, _ in claims:
            others = ", ".join(_where(other) for other, _ in claims if other is not point)
            _refuse(point, f"node type {type_name!r} is also declared by {others}")
    return accepted


def module_problems(module: object) -> list[str]:
    """What makes ``module`` unusable as a node type module; empty when it is one."""
    from flowbroker_nodes.base import Node

    if not isinstance(module, ModuleType):
        return [f"names {type(module).__name__} {module!r}, not a module"]
    spec = getattr(module, "SPEC", None)
    node = getattr(module, "Node", None)
    if not isinstance(spec, NodeSpec):
        return ["SPEC is missing or not a flowbroker_nodes.spec.NodeSpec"]
    found = spec_problems(spec)
    if not (isinstance(node, type) and issubclass(node, Node)):
        found.append("Node is missing or not a subclass of flowbroker_nodes.base.Node")
    elif node.SPEC is not spec:
        found.append("Node.SPEC is not the module's SPEC")
    elif (spec.role == "input") != hasattr(node, "run"):
        found.append('an input node (role="input") and only one defines run()')
    return found


def spec_problems(spec: NodeSpec) -> list[str]:
    """Each way ``spec`` breaks what the designer, the validator and the runtime rely on."""
    found: list[str] = []
    if not isinstance(spec.type, str) or not _TYPE_RE.match(spec.type):
        found.append(
            f"SPEC.type {spec.type!r}: must start with a letter or _ and hold only letters, digits, . _ -"
        )
    for name in ("label", "category", "icon", "description"):
        if not isinstance(getattr(spec, name), str):
            found.append(f"SPEC.{name} must be a string")
    if spec.role not in get_args(NodeRole):
        found.append(f"SPEC.role {spec.role!r}: must be one of {list(get_args(NodeRole))}")
    for side in ("inputs", "outputs"):
        names: set[str] = set()
        for terminal in getattr(spec, side):
            if not isinstance(terminal, Terminal) or not isinstance(terminal.name, str) or not terminal.name:
                found.append(f"SPEC.{side}: {terminal!r} is not a named Terminal")
                continue
            if terminal.kind not in get_args(TerminalKind):
                found.append(f"SPEC.{side} {terminal.name!r}: unknown kind {terminal.kind!r}")
            if terminal.name in names:
                found.append(f"SPEC.{side}: terminal {terminal.name!r} twice")
            names.add(terminal.name)
    props: set[str] = set()
    for prop in spec.properties:
        if not isinstance(prop, Property) or not isinstance(prop.name, str) or not prop.name:
            found.append(f"SPEC.properties: {prop!r} is not a named Property")
            continue
        where = f"SPEC.properties {prop.name!r}"
        if prop.type not in get_args(PropertyType):
            found.append(f"{where}: unknown type {prop.type!r}")
        if prop.name in props:
            found.append(f"{where}: declared twice")
        if prop.type == "enum" and (not prop.enum or prop.default not in (None, *prop.enum)):
            found.append(f"{where}: an enum needs its values, and its default must be one of them")
        props.add(prop.name)
    if not isinstance(spec.extra, dict):
        found.append("SPEC.extra must be a dict")
    if not found:
        try:
            json.dumps(spec.to_json())
        except (TypeError, ValueError) as exc:
            found.append(f"SPEC is not JSON-serialisable: {exc}")
    return found


def _where(point: EntryPoint) -> str:
    dist = point.dist
    owner = f"distribution {dist.name} {dist.version}" if dist is not None else "an unknown distribution"
    return f"{owner}, entry point {point.name} = {point.value}"


def _refuse(point: EntryPoint, reason: str) -> None:
    log.error("node plug-in refused (%s, group %s): %s", _where(point), GROUP, reason)
