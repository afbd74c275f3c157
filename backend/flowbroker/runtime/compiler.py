"""The flow compiler: a flow document becomes a graph of prepared node instances, or every problem.

Subflows are expanded inline (their Input and Output nodes stand where the subflow node's
terminals were), every node is prepared (ESQL compiled, properties checked) and connections
become direct references, so running a message is nothing but method calls.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from flowbroker_nodes import registry
from flowbroker_nodes.base import DeployProblem, Node, release_nodes

#: Resolves a subflow reference ``{"name": …, "version": …}`` to its flow document.
SubflowResolver = Callable[[dict[str, Any]], dict[str, Any] | None]

MAX_SUBFLOW_DEPTH = 16


@dataclass
class Problem:
    """One reason a flow cannot run: where (node, property, line, column, JSON pointer) and why."""

    message: str
    node: str = ""
    property: str = ""
    line: int = 0
    column: int = 0
    pointer: str = ""

    def to_json(self) -> dict[str, Any]:
        return {
            "node": self.node,
            "property": self.property,
            "line": self.line,
            "column": self.column,
            "pointer": self.pointer,
            "message": self.message,
        }

    def __str__(self) -> str:
        where = self.node or self.pointer or "flow"
        if self.property:
            where += f".{self.property}"
        if self.line:
            where += f":{self.line}:{self.column}"
        return f"{where}: {self.message}"


class FlowCompileError(Exception):
    """The flow cannot be deployed; ``problems`` lists every reason found."""

    def __init__(self, problems: list[Problem]) -> None:
        super().__init__(f"{len(problems)} problem(s); first: {problems[0]}" if problems else "invalid flow")
        self.problems = problems


@dataclass
class CompiledFlow:
    """A flow ready to run: prepared node instances wired to each other."""

    name: str
    version: int
    document: dict[str, Any]
    nodes: dict[str, Node]
    labels: dict[str, Node]
    coordinated_transaction: bool = False
    additional_instances: int = 0
    externals: dict[str, dict[str, object]] = field(default_factory=dict)
    #: The CPU time (ms) and largest value (bytes) each node invocation's ESQL may use; 0: unlimited.
    esql_cpu_limit_ms: int = 0
    esql_memory_limit_bytes: int = 0
    #: The directories file nodes may read and write below (FLOWBROKER_FILE_ROOTS).
    file_roots: tuple[str, ...] = ()
    #: XSLTransform's bounds: time (ms), sandbox memory, stylesheet and result size (bytes).
    xslt_limits: tuple[int, int, int, int] = (5000, 512 * 1024 * 1024, 1024 * 1024, 64 * 1024 * 1024)

    def input_nodes(self) -> list[Node]:
        """The nodes that start flow invocations: each gets 1 + additionalInstances flow threads."""
        return [node for node in self.nodes.values() if node.SPEC.is_input]


def compile_flow(
    document: Any,
    *,
    resolve_subflow: SubflowResolver | None = None,
    externals: dict[str, Any] | None = None,
    additional_instances: int | None = None,
) -> CompiledFlow:
    """Validate, expand and prepare ``document``; raise :class:`FlowCompileError` with every problem."""
    from flowbroker.services import validation

    # the same check a save runs: the document's shape, then each node's configuration
    problems = [_from_pointer(p, document) for p in validation.problems(document)]
    if problems:
        raise FlowCompileError(problems)
    nodes_doc, connections = _expand(document, "", resolve_subflow, problems, 0)
    if problems:
        raise FlowCompileError(problems)
    nodes: dict[str, Node] = {}
    try:
        return _prepared(document, nodes_doc, connections, nodes, problems, externals, additional_instances)
    except BaseException:
        # nodes prepared before a later problem hold nothing the failed deployment may keep
        release_nodes(nodes.values(), str(document.get("name") or ""))
        raise


def _prepared(
    document: Any,
    nodes_doc: list[dict[str, Any]],
    connections: list[Connection],
    nodes: dict[str, Node],
    problems: list[Problem],
    externals: dict[str, Any] | None,
    additional_instances: int | None,
) -> CompiledFlow:
    """Instantiate, prepare and wire the expanded nodes into ``nodes``; raise
    :class:`FlowCompileError` with every problem."""
    for node_doc in nodes_doc:
        module = registry.modules()[node_doc["type"]]
        node: Node = module.Node(
            node_doc["id"], node_doc.get("name") or "", dict(node_doc.get("properties") or {})
        )
        try:
            node.prepare()
        except DeployProblem as first:
            for found in first.all():
                problems.append(
                    Problem(found.message, node_doc["id"], found.property, found.line, found.column)
                )
        nodes[node.id] = node
    for source, terminal, target, target_terminal in connections:
        nodes[source].connect(terminal, nodes[target], target_terminal)
    labels: dict[str, Node] = {}
    for node in nodes.values():
        name = node.SPEC.label_name(node.properties)
        if name is not None:
            if name in labels:
                prop = str(node.SPEC.extra["labelProperty"])
                problems.append(Problem(f"label name {name!r} is used twice", node.id, prop))
            labels[name] = node
    if not any(n.SPEC.is_input for n in nodes.values()):
        inputs = ", ".join(spec.type for spec in registry.specs() if spec.is_input)
        problems.append(Problem(f"a flow needs at least one input node to run ({inputs})"))
    if problems:
        raise FlowCompileError(problems)
    props = document.get("properties") or {}
    commit_count = props.get("commitCount")
    if isinstance(commit_count, int) and commit_count >= 1:
        # the flow's commitCount (ACE) bounds how many messages an input node commits together,
        # unless the node sets its own read ahead
        explicit = {n["id"] for n in nodes_doc if "readAhead" in (n.get("properties") or {})}
        for node in nodes.values():
            if node.SPEC.property("readAhead") is not None and node.id not in explicit:
                node.read_ahead = commit_count  # type: ignore[attr-defined]
    from flowbroker.settings import Settings

    defaults = Settings()
    cpu_limit = props.get("esqlCpuLimitMs", defaults.esql_cpu_limit_ms)
    memory_limit = props.get("esqlMemoryLimitBytes", defaults.esql_memory_limit_bytes)
    instances = (
        additional_instances if additional_instances is not None else props.get("additionalInstances", 0)
    )
    return CompiledFlow(
        name=document["name"],
        version=int(document.get("version") or 0),
        document=document,
        nodes=nodes,
        labels=labels,
        coordinated_transaction=bool(props.get("coordinatedTransaction", False)),
        additional_instances=max(0, int(instances or 0)),
        externals=_externals(externals or {}, nodes),
        esql_cpu_limit_ms=int(cpu_limit),
        esql_memory_limit_bytes=int(memory_limit),
        file_roots=defaults.resolved_file_roots(),
        xslt_limits=(
            defaults.xslt_time_limit_ms,
            defaults.xslt_memory_limit_bytes,
            defaults.xslt_max_stylesheet_bytes,
            defaults.xslt_max_output_bytes,
        ),
    )


def _externals(overrides: dict[str, Any], nodes: dict[str, Node]) -> dict[str, dict[str, object]]:
    """Per node: the node's own EXTERNAL values, then flow-wide overrides, then node-specific ones."""
    shared = {k: v for k, v in overrides.items() if not isinstance(v, dict)}
    result: dict[str, dict[str, object]] = {}
    for node_id, node in nodes.items():
        own = node.properties.get("externals")
        if not isinstance(own, dict) and not shared and node_id not in overrides:
            continue
        values: dict[str, object] = dict(own) if isinstance(own, dict) else {}
        values.update(shared)
        specific = overrides.get(node_id)
        if isinstance(specific, dict):
            values.update(specific)
        result[node_id] = values
    return result


def _from_pointer(found: dict[str, Any], document: Any) -> Problem:
    pointer = found.get("pointer", "")
    if "node" in found:  # a node's configuration problem names its place itself
        return Problem(
            found["message"],
            found["node"],
            found.get("property", ""),
            found.get("line", 0),
            found.get("column", 0),
            pointer,
        )
    parts = pointer.split("/")
    node = prop = ""
    if len(parts) >= 3 and parts[1] == "nodes" and parts[2].isdigit():
        try:
            node = str(document["nodes"][int(parts[2])].get("id", ""))
        except (KeyError, IndexError, TypeError, AttributeError):
            node = ""
        if len(parts) >= 5 and parts[3] == "properties":
            prop = parts[4]
    return Problem(found.get("message", "invalid"), node, prop, pointer=pointer)


Connection = tuple[str, str, str, str]


def _expand(
    document: dict[str, Any],
    prefix: str,
    resolve: SubflowResolver | None,
    problems: list[Problem],
    depth: int,
) -> tuple[list[dict[str, Any]], list[Connection]]:
    """Flatten ``document``: subflow nodes are replaced by their nodes, ids prefixed ``sub/inner``."""
    nodes: list[dict[str, Any]] = []
    connections: list[Connection] = []
    # per subflow node: input terminal name -> inner Input node id; output terminal -> inner Output id
    entries: dict[str, dict[str, str]] = {}
    exits: dict[str, dict[str, str]] = {}
    for node_doc in document.get("nodes") or []:
        node_id = prefix + node_doc["id"]
        if registry.subflow_part(node_doc) != "node":
            nodes.append({**node_doc, "id": node_id})
            continue
        sub = _subflow_document(node_doc, resolve, problems, prefix)
        if sub is None:
            continue
        if depth >= MAX_SUBFLOW_DEPTH:
            problems.append(
                Problem(f"subflows nest deeper than {MAX_SUBFLOW_DEPTH} (a cycle?)", node_id, "flow")
            )
            continue
        from flowbroker.services import validation

        sub_problems = validation.problems(sub)
        for found in sub_problems:
            problems.append(
                Problem(f"in subflow: {found['message']}", node_id, "flow", pointer=found["pointer"])
            )
        if sub_problems:
            continue
        inner_nodes, inner_connections = _expand(sub, node_id + "/", resolve, problems, depth + 1)
        nodes.extend(inner_nodes)
        connections.extend(inner_connections)
        entries[node_id] = {}
        exits[node_id] = {}
        for inner in inner_nodes:
            if inner["id"].count("/") != node_id.count("/") + 1:
                continue
            terminal = str((inner.get("properties") or {}).get("terminalName") or "")
            if registry.subflow_part(inner) == "input":
                entries[node_id][terminal or "in"] = inner["id"]
            elif registry.subflow_part(inner) == "output":
                exits[node_id][terminal or "out"] = inner["id"]
    for index, conn in enumerate(document.get("connections") or []):
        source = prefix + conn["from"]["node"]
        terminal = conn["from"]["terminal"]
        target = prefix + conn["to"]["node"]
        target_terminal = conn["to"].get("terminal", "in")
        if source in exits:
            exit_node = exits[source].get(terminal)
            if exit_node is None:
                problems.append(
                    Problem(
                        f"the subflow has no Output node with terminal name {terminal!r}",
                        source,
                        pointer=f"/connections/{index}/from/terminal",
                    )
                )
                continue
            source, terminal = exit_node, "out"
        if target in entries:
            entry_node = entries[target].get(target_terminal)
            if entry_node is None:
                problems.append(
                    Problem(
                        f"the subflow has no Input node with terminal name {target_terminal!r}",
                        target,
                        pointer=f"/connections/{index}/to/terminal",
                    )
                )
                continue
            target, target_terminal = entry_node, "in"
        connections.append((source, terminal, target, target_terminal))
    return nodes, connections


def _subflow_document(
    node_doc: dict[str, Any], resolve: SubflowResolver | None, problems: list[Problem], prefix: str
) -> dict[str, Any] | None:
    node_id = prefix + node_doc["id"]
    ref = (node_doc.get("properties") or {}).get("flow")
    if isinstance(ref, dict) and "nodes" in ref:
        return ref
    if isinstance(ref, dict) and ref.get("name"):
        found = resolve(ref) if resolve is not None else None
        if found is None:
            version = ref.get("version")
            which = f"subflow {ref.get('name')!r}" + (f" version {version}" if version else "")
            problems.append(Problem(f"{which} was not found", node_id, "flow"))
        return found
    problems.append(Problem("the flow property must be a flow document or {name, version}", node_id, "flow"))
    return None
