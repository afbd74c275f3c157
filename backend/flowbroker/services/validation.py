"""Validation of flow documents against the node specs: every problem named by a JSON pointer."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from flowbroker_nodes.spec import NodeSpec, Property

from flowbroker.qm.names import queue_name_problem
from flowbroker.services.errors import Invalid, problem

SpecLookup = Callable[[str], NodeSpec | None]

NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_.\-]{0,127}$")
NODE_ID_RE = re.compile(r"^[A-Za-z0-9_.\-]{1,64}$")

TOP_FIELDS = {"name", "version", "description", "properties", "nodes", "connections", "ui", "tests"}
FLOW_PROPERTIES = {
    "coordinatedTransaction": bool,
    "additionalInstances": int,
    "commitCount": int,
    "esqlCpuLimitMs": int,
    "esqlMemoryLimitBytes": int,
}
NODE_FIELDS = {"id", "type", "name", "description", "properties", "position", "ui"}
TEXT_TYPES = {"string", "esql", "sql", "queue", "topic", "text"}


def registry_lookup(type_name: str) -> NodeSpec | None:
    from flowbroker_nodes import registry

    return registry.spec(type_name)


def _pointer_token(key: object) -> str:
    return str(key).replace("~", "~0").replace("/", "~1")


def problems(document: Any, lookup: SpecLookup | None = None) -> list[dict[str, Any]]:
    """Every problem of ``document``; an empty list means the flow may be saved and deployed.

    Saving and deploying run this same check: the document's shape against the node specs, then
    each well-formed node's own configuration (the node's ``prepare``: ESQL compiled, properties
    that depend on each other), so a flow that would be refused on deploy is refused on save.
    Problems of a node's configuration carry its ``node``, ``property``, ``line`` and ``column``
    beside the JSON pointer.
    """
    lookup = lookup or registry_lookup
    found: list[dict[str, str]] = []
    if not isinstance(document, dict):
        return [problem("", "a flow document must be a JSON object")]
    for key in document:
        if key not in TOP_FIELDS:
            found.append(problem(f"/{_pointer_token(key)}", f"unknown field {key!r}"))
    name = document.get("name")
    if not isinstance(name, str) or not name:
        found.append(problem("/name", "required: a non-empty string"))
    elif not NAME_RE.match(name):
        found.append(
            problem(
                "/name", "must start with a letter or _ and hold only letters, digits, . _ - (at most 128)"
            )
        )
    if "version" in document and (not _is_int(document["version"]) or document["version"] < 0):
        found.append(problem("/version", "must be a non-negative integer"))
    if "description" in document and not isinstance(document["description"], str):
        found.append(problem("/description", "must be a string"))
    if "ui" in document and not isinstance(document["ui"], dict):
        found.append(problem("/ui", "must be an object"))
    check_text(document, "", found)
    _check_flow_properties(document.get("properties", {}), found)
    specs = _check_nodes(document.get("nodes"), lookup, found)
    _check_connections(
        document.get("connections", []),
        specs,
        found,
        _derived(document, specs, NodeSpec.derived_outputs),
        _derived(document, specs, NodeSpec.derived_inputs),
    )
    found.extend(configuration_problems(document, lookup, {p["pointer"] for p in found}))
    if "tests" in document and isinstance(document.get("nodes"), list):
        from flowbroker.flowtests import cases

        # the flow's test cases are kept with it, so a version never holds a case that cannot run
        found.extend(problem(p["pointer"], p["message"]) for p in cases.check(document["tests"], document))
    return found


def configuration_problems(document: Any, lookup: SpecLookup, known: set[str]) -> list[dict[str, Any]]:
    """What each well-formed node's ``prepare`` refuses, named by pointer, node, property, line, column.

    ``known`` holds the pointers already reported, whose nodes' configuration is not judged again.
    Subflow nodes are checked when the flow is compiled, with the subflows it names; a placeholder
    (``extra["placeholder"]``: a node of another product's type, kept by an import) is saved as
    it is and refused only when the flow is compiled for a deployment.
    """
    from flowbroker_nodes import registry
    from flowbroker_nodes.base import DeployProblem, release_nodes

    found: list[dict[str, Any]] = []
    nodes = document.get("nodes")
    for index, node in enumerate(nodes if isinstance(nodes, list) else []):
        base = f"/nodes/{index}"
        if not isinstance(node, dict) or any(p == base or p.startswith(base + "/") for p in known):
            continue
        type_name = str(node.get("type"))
        module = registry.modules().get(type_name)
        spec = lookup(type_name)
        if module is None or spec is None or spec.subflow_part == "node" or spec.extra.get("placeholder"):
            continue
        node_id = str(node.get("id", ""))
        judged = module.Node(node_id, str(node.get("name") or ""), dict(node.get("properties") or {}))
        try:
            judged.prepare()
        except DeployProblem as first:
            for each in first.all():
                pointer = f"{base}/properties/{_pointer_token(each.property)}" if each.property else base
                found.append(
                    {
                        "pointer": pointer,
                        "message": each.message,
                        "node": node_id,
                        "property": each.property,
                        "line": each.line,
                        "column": each.column,
                    }
                )
        except Exception as exc:  # a node that cannot judge its configuration names why
            found.append({"pointer": base, "message": f"{type(exc).__name__}: {exc}", "node": node_id})
        finally:
            release_nodes([judged], str(document.get("name") or ""))
    return found


def check_text(value: Any, pointer: str, found: list[dict[str, str]]) -> None:
    """NUL characters cannot be stored (PostgreSQL refuses them) nor mean anything in a flow."""
    if isinstance(value, str):
        if "\x00" in value:
            found.append(problem(pointer, "must not contain the NUL character"))
    elif isinstance(value, dict):
        for key, item in value.items():
            token = f"{pointer}/{_pointer_token(key)}"
            if "\x00" in str(key):
                found.append(problem(token, "a field name must not contain the NUL character"))
            check_text(item, token, found)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            check_text(item, f"{pointer}/{index}", found)


def validate(document: Any, lookup: SpecLookup | None = None) -> dict[str, Any]:
    """Return the document when it is valid; raise :class:`Invalid` listing every problem otherwise."""
    found = problems(document, lookup)
    if found:
        first = found[0]
        where = first["pointer"] or "/"
        raise Invalid(f"invalid flow: {where}: {first['message']}", found, code="invalid_flow")
    return document


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _check_flow_properties(props: Any, found: list[dict[str, str]]) -> None:
    if not isinstance(props, dict):
        found.append(problem("/properties", "must be an object"))
        return
    for key, value in props.items():
        pointer = f"/properties/{_pointer_token(key)}"
        expected = FLOW_PROPERTIES.get(key)
        if expected is None:
            found.append(problem(pointer, f"unknown flow property {key!r}"))
        elif expected is bool and not isinstance(value, bool):
            found.append(problem(pointer, "must be a boolean"))
        elif expected is int and (not _is_int(value) or value < 0):
            found.append(problem(pointer, "must be a non-negative integer"))


def _check_nodes(nodes: Any, lookup: SpecLookup, found: list[dict[str, str]]) -> dict[str, NodeSpec | None]:
    specs: dict[str, NodeSpec | None] = {}
    if nodes is None:
        found.append(problem("/nodes", "required: a list of nodes"))
        return specs
    if not isinstance(nodes, list):
        found.append(problem("/nodes", "must be a list"))
        return specs
    for index, node in enumerate(nodes):
        base = f"/nodes/{index}"
        if not isinstance(node, dict):
            found.append(problem(base, "a node must be a JSON object"))
            continue
        for key in node:
            if key not in NODE_FIELDS:
                found.append(problem(f"{base}/{_pointer_token(key)}", f"unknown field {key!r}"))
        node_id = node.get("id")
        if not isinstance(node_id, str) or not NODE_ID_RE.match(node_id):
            found.append(problem(f"{base}/id", "required: 1-64 letters, digits, . _ -"))
            node_id = None
        elif node_id in specs:
            found.append(problem(f"{base}/id", f"duplicate node id {node_id!r}"))
        type_name = node.get("type")
        spec: NodeSpec | None = None
        if not isinstance(type_name, str) or not type_name:
            found.append(problem(f"{base}/type", "required: a node type name"))
        else:
            spec = lookup(type_name)
            if spec is None:
                found.append(problem(f"{base}/type", f"unknown node type {type_name!r}"))
        if node_id is not None and node_id not in specs:
            specs[node_id] = spec
        if "name" in node and not isinstance(node["name"], str):
            found.append(problem(f"{base}/name", "must be a string"))
        if "description" in node and not isinstance(node["description"], str):
            found.append(problem(f"{base}/description", "must be a string"))
        if "ui" in node and not isinstance(node["ui"], dict):
            found.append(problem(f"{base}/ui", "must be an object"))
        _check_position(node.get("position"), base, found)
        props = node.get("properties", {})
        if not isinstance(props, dict):
            found.append(problem(f"{base}/properties", "must be an object"))
        elif spec is not None:
            _check_node_properties(spec, props, f"{base}/properties", found)
    return specs


def _check_position(position: Any, base: str, found: list[dict[str, str]]) -> None:
    if position is None:
        return
    if not isinstance(position, dict):
        found.append(problem(f"{base}/position", "must be an object {x, y}"))
        return
    for key, value in position.items():
        if key not in {"x", "y"}:
            found.append(problem(f"{base}/position/{_pointer_token(key)}", f"unknown field {key!r}"))
        elif isinstance(value, bool) or not isinstance(value, int | float):
            found.append(problem(f"{base}/position/{key}", "must be a number"))


def _check_node_properties(
    spec: NodeSpec, props: dict[str, Any], base: str, found: list[dict[str, str]]
) -> None:
    for key, value in props.items():
        prop = spec.property(key)
        pointer = f"{base}/{_pointer_token(key)}"
        if prop is None:
            found.append(problem(pointer, f"unknown property {key!r} of node type {spec.type}"))
            continue
        message = _property_problem(prop, value)
        if message:
            found.append(problem(pointer, message))
    for prop in spec.properties:
        if prop.required and prop.default in (None, "") and props.get(prop.name) in (None, ""):
            found.append(problem(f"{base}/{_pointer_token(prop.name)}", f"required property of {spec.type}"))


def _property_problem(prop: Property, value: Any) -> str | None:
    if value is None:
        return None
    kind = prop.type
    if kind in TEXT_TYPES:
        if not isinstance(value, str):
            return "must be a string"
        if kind == "queue" and value and (bad := queue_name_problem(value)) is not None:
            return bad
        if kind == "topic" and value and ("\x00" in value or len(value) > 10240):
            return "a topic is a string of at most 10240 characters without NUL"
    elif kind == "integer":
        if not _is_int(value):
            return "must be an integer"
        if prop.minimum is not None and value < prop.minimum:
            return f"must be at least {prop.minimum}"
        if prop.maximum is not None and value > prop.maximum:
            return f"must be at most {prop.maximum}"
    elif kind == "boolean":
        if not isinstance(value, bool):
            return "must be a boolean"
    elif kind == "enum":
        if value not in prop.enum:
            return f"must be one of {', '.join(prop.enum)}"
    return None


def _derived(
    document: dict[str, Any],
    specs: dict[str, NodeSpec | None],
    terminals: Callable[[NodeSpec, dict[str, Any]], tuple[str, ...]],
) -> dict[str, tuple[str, ...]]:
    """Node id → the terminals its properties name (``NodeSpec.derived_outputs`` or ``derived_inputs``)."""
    derived: dict[str, tuple[str, ...]] = {}
    nodes = document.get("nodes")
    for node in nodes if isinstance(nodes, list) else []:
        if not isinstance(node, dict) or not isinstance(node.get("properties"), dict):
            continue
        spec = specs.get(str(node.get("id")))
        if spec is not None:
            names = terminals(spec, node["properties"])
            if names:
                derived[str(node["id"])] = names
    return derived


def _check_connections(
    connections: Any,
    specs: dict[str, NodeSpec | None],
    found: list[dict[str, str]],
    derived: dict[str, tuple[str, ...]] | None = None,
    derived_inputs: dict[str, tuple[str, ...]] | None = None,
) -> None:
    if not isinstance(connections, list):
        found.append(problem("/connections", "must be a list"))
        return
    seen: set[tuple[str, str, str, str]] = set()
    for index, connection in enumerate(connections):
        base = f"/connections/{index}"
        if not isinstance(connection, dict):
            found.append(problem(base, "a connection must be a JSON object {from, to}"))
            continue
        for key in connection:
            if key not in {"from", "to", "id"}:
                found.append(problem(f"{base}/{_pointer_token(key)}", f"unknown field {key!r}"))
        ends: list[tuple[str, str]] = []
        for end, direction in (("from", "outputs"), ("to", "inputs")):
            ref = connection.get(end)
            pointer = f"{base}/{end}"
            if not isinstance(ref, dict):
                found.append(problem(pointer, "required: an object {node, terminal}"))
                continue
            for key in ref:
                if key not in {"node", "terminal"}:
                    found.append(problem(f"{pointer}/{_pointer_token(key)}", f"unknown field {key!r}"))
            node_id, terminal = ref.get("node"), ref.get("terminal")
            if not isinstance(node_id, str) or node_id not in specs:
                found.append(problem(f"{pointer}/node", f"unknown node {node_id!r}"))
                continue
            if not isinstance(terminal, str) or not terminal:
                found.append(problem(f"{pointer}/terminal", "required: a terminal name"))
                continue
            spec = specs[node_id]
            if spec is not None and not spec.dynamic_terminals:
                terminals = spec.outputs if direction == "outputs" else spec.inputs
                names = [t.name for t in terminals]
                extra = (derived if direction == "outputs" else derived_inputs) or {}
                names += [n for n in extra.get(node_id, ()) if n not in names]
                if terminal not in names:
                    kind = "output" if direction == "outputs" else "input"
                    choices = ", ".join(names) or "none"
                    found.append(
                        problem(
                            f"{pointer}/terminal",
                            f"node {node_id!r} ({spec.type}) has no {kind} terminal {terminal!r} (has: {choices})",
                        )
                    )
                    continue
            ends.append((node_id, terminal))
        if len(ends) == 2:
            key4 = (*ends[0], *ends[1])
            if key4 in seen:
                found.append(problem(base, "duplicate connection"))
            seen.add(key4)
