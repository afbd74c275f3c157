"""A Toolkit workspace (project folders, from directories or a zip) turned into flow documents and queues.

Flow names follow the broker schema: ``mqsi/Route.subflow`` of any project becomes the flow
``mqsi.Route``; a subflow instance in another flow names it with ``{"name": "mqsi.Route"}``.
A node type flowbroker lacks becomes an ``Unsupported`` node holding the original type and XMI
attributes, in its place and with its connections, on terminals of the original's names; the
flow is still created ("partial") and saves, but cannot be deployed until the node is replaced.
The report lists every such node so nothing disappears silently.

Import is all-or-nothing per flow: a flow is stored only when it and every subflow it uses
(however deep) converted and validated. A flow whose file cannot be read, that takes part in a
cycle of subflow references, or that uses such a flow is refused, with the report naming why and
where; the other flows of the workspace are stored.
"""

from __future__ import annotations

import io
import re
import zipfile
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from flowbroker.importers.ace import models, mqsc, nodes, xmi
from flowbroker.importers.ace.esql import EsqlIndex
from flowbroker.importers.ace.report import FlowReport, ImportReport

FLOW_SUFFIXES = (".msgflow", ".subflow")
MQSC_SUFFIXES = (".mqsc", ".mq")
READ_SUFFIXES = (*FLOW_SUFFIXES, ".esql", *MQSC_SUFFIXES)
#: Folders of build output and tooling state, never sources.
SKIP_DIRS = {".git", ".metadata", ".svn", "bin", "build", "target", "node_modules"}
#: Defaults of the bounds on a workspace read: files, and bytes of sources once uncompressed
#: (FLOWBROKER_ACE_IMPORT_MAX_FILES / _MAX_BYTES for uploads).
MAX_FILES = 20_000
MAX_BYTES = 128 * 1024 * 1024
MESSAGE_MODEL_SUFFIXES = (".mxsd", ".xsd", ".dfdl", ".mset")
#: The node type a node of a type flowbroker lacks is imported as.
UNSUPPORTED = "Unsupported"
#: The Toolkit draws nodes as small icons, the designer as boxes about 160 px wide: positions are
#: spread by this factor so that nodes that stood apart in ACE do not overlap here.
SCALE = 1.6


class WorkspaceError(Exception):
    """The workspace itself cannot be read (not a directory, not a zip, too large)."""


class WorkspaceTooLarge(WorkspaceError):
    """The workspace holds more files, or expands to more bytes, than are read."""


@dataclass
class Project:
    name: str
    files: dict[str, bytes] = field(default_factory=dict)  # path inside the project -> content
    models: dict[str, bytes] = field(default_factory=dict)  # message model files: path -> content


@dataclass
class Workspace:
    projects: list[Project]

    @classmethod
    def from_dirs(cls, dirs: list[str | Path]) -> Workspace:
        files = {key: path.read_bytes() for key, path in walk(dirs)}
        return cls(_projects(files, per_folder=True))

    @classmethod
    def from_zip(cls, data: bytes, *, max_files: int = MAX_FILES, max_bytes: int = MAX_BYTES) -> Workspace:
        """The workspace zipped in ``data``; :class:`WorkspaceTooLarge` past ``max_files`` / ``max_bytes``.

        Sizes are counted as the members are decompressed, not as the archive declares them, so a
        zip bomb is refused after at most ``max_bytes`` have been expanded.
        """
        try:
            archive = zipfile.ZipFile(io.BytesIO(data))
        except (zipfile.BadZipFile, ValueError) as exc:
            raise WorkspaceError(f"not a zip archive: {exc}") from None
        infos = [i for i in archive.infolist() if not i.is_dir()]
        if len(infos) > max_files:
            raise WorkspaceTooLarge(
                f"the archive holds {len(infos)} files; at most {max_files} are read "
                "(FLOWBROKER_ACE_IMPORT_MAX_FILES)"
            )
        files: dict[str, bytes] = {}
        total = 0
        with archive:
            for info in infos:
                path = PurePosixPath(info.filename)
                if path.is_absolute() or ".." in path.parts:
                    raise WorkspaceError(f"{info.filename}: a path outside the archive")
                if any(part in SKIP_DIRS for part in path.parts[:-1]):
                    continue
                if not (path.name == ".project" or _wanted(path.name)):
                    continue
                try:
                    content = _read_member(archive, info, max_bytes - total)
                except (zipfile.BadZipFile, OSError, RuntimeError, NotImplementedError, EOFError) as exc:
                    raise WorkspaceError(f"{info.filename}: {exc}") from None
                if content is None:
                    raise WorkspaceTooLarge(
                        f"{info.filename}: the archive expands to more than {max_bytes} bytes of sources; "
                        "at most that many are read (FLOWBROKER_ACE_IMPORT_MAX_BYTES)"
                    )
                total += len(content)
                files[path.as_posix()] = content
        return cls(_projects(files, per_folder=False))


def _read_member(archive: zipfile.ZipFile, info: zipfile.ZipInfo, budget: int) -> bytes | None:
    """The member's content, or ``None`` when it expands to more than ``budget`` bytes."""
    if info.file_size > budget:
        return None
    chunks: list[bytes] = []
    size = 0
    with archive.open(info) as member:
        while chunk := member.read(min(1024 * 1024, budget - size + 1)):
            size += len(chunk)
            if size > budget:
                return None
            chunks.append(chunk)
    return b"".join(chunks)


def walk(dirs: list[str | Path]) -> list[tuple[str, Path]]:
    """The source files under ``dirs``, each keyed ``<folder name>/<path inside it>``."""
    found: list[tuple[str, Path]] = []
    total = 0
    for raw in dirs:
        root = Path(raw)
        if not root.is_dir():
            raise WorkspaceError(f"{raw}: not a directory")
        base = root.resolve().name or "workspace"
        for path in sorted(root.rglob("*")):
            rel = path.relative_to(root)
            if any(
                part in SKIP_DIRS or (part.startswith(".") and part != ".project") for part in rel.parts[:-1]
            ):
                continue
            if not path.is_file() or not (path.name == ".project" or _wanted(path.name)):
                continue
            total += path.stat().st_size
            if len(found) >= MAX_FILES or total > MAX_BYTES:
                raise WorkspaceError(f"{raw}: more than {MAX_FILES} files or {MAX_BYTES} bytes of sources")
            found.append((f"{base}/{rel.as_posix()}", path))
    return found


def zip_dirs(dirs: list[str | Path]) -> bytes:
    """The source files under ``dirs`` as a zip, as ``POST /api/imports/ace`` takes a workspace."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for key, path in walk(dirs):
            archive.writestr(key, path.read_bytes())
    return buffer.getvalue()


def _wanted(name: str) -> bool:
    return name.endswith(READ_SUFFIXES) or _model(name)


def _model(name: str) -> bool:
    return name.endswith(MESSAGE_MODEL_SUFFIXES)


def _projects(files: dict[str, bytes], *, per_folder: bool) -> list[Project]:
    """Group paths by project: the folder of a path's nearest ``.project``.

    A path under no ``.project`` belongs to its top folder when ``per_folder`` (each directory
    given on the command line is a project), else to the root (a zip of one project's folders).
    """
    roots = sorted(
        {str(PurePosixPath(p).parent) for p in files if PurePosixPath(p).name == ".project"},
        key=len,
        reverse=True,
    )
    roots = ["" if r == "." else r for r in roots]
    projects: dict[str, Project] = {}
    for path, content in files.items():
        pure = PurePosixPath(path)
        if pure.name == ".project":
            continue
        root = next((r for r in roots if r == "" or path.startswith(r + "/")), None)
        if root is None:
            root = pure.parts[0] if per_folder and len(pure.parts) > 1 else ""
        name = PurePosixPath(root).name or "workspace"
        project = projects.setdefault(root, Project(name))
        rel = path[len(root) + 1 :] if root else path
        if _model(pure.name):
            project.models[rel] = content
        else:
            project.files[rel] = content
    return [projects[k] for k in sorted(projects)]


_BAD_NAME_CHARS = re.compile(r"[^A-Za-z0-9_.\-]")


def flow_name(rel: str) -> str:
    """``com/acme/Orders.msgflow`` → ``com.acme.Orders`` (a valid flowbroker flow name)."""
    stem = rel.rsplit(".", 1)[0].replace("/", ".")
    name = _BAD_NAME_CHARS.sub("_", stem)
    if not re.match(r"[A-Za-z_]", name):
        name = "_" + name
    return name[:128]


_NODE_ID = re.compile(r"[^A-Za-z0-9_.\-]")


@dataclass
class Converted:
    documents: list[dict[str, Any]]
    queues: list[mqsc.QueueDefinition]
    report: ImportReport
    subscriptions: list[mqsc.SubscriptionDefinition] = field(default_factory=list)
    #: message sets converted from MRM sets with a CWF format: {"name", "document", "source"}
    message_sets: list[dict[str, Any]] = field(default_factory=list)


class _Converter:
    def __init__(self, workspace: Workspace) -> None:
        self.workspace = workspace
        self.report = ImportReport(projects=[p.name for p in workspace.projects])
        self.esql = EsqlIndex()
        #: (project, relpath) of every flow file, and its flow name
        self.names: dict[tuple[str, str], str] = {}
        self.by_rel: dict[str, list[tuple[str, str]]] = {}
        self._parsed: dict[tuple[str, str], xmi.XmiFlow | xmi.XmiError] = {}
        self._files = {(p.name, rel): content for p in workspace.projects for rel, content in p.files.items()}
        #: flow name → the subflows its nodes use: (subflow flow name, source file, line, column)
        self.uses: dict[str, list[tuple[str, str, int, int]]] = {}
        #: alias queue name → (its target queue, where the alias is defined), from the MQSC scripts
        self.aliases: dict[str, tuple[str, str]] = {}

    def run(self) -> Converted:
        taken: set[str] = set()
        flow_files: list[tuple[Project, str]] = []
        queues: list[mqsc.QueueDefinition] = []
        topics: list[mqsc.TopicDefinition] = []
        subscriptions: list[mqsc.SubscriptionDefinition] = []
        message_sets: list[dict[str, Any]] = []
        for project in self.workspace.projects:
            found = models.read(project.name, project.models)
            self.report.models.extend(found.entries)
            message_sets.extend(found.sets)
            for rel, content in sorted(project.files.items()):
                if rel.endswith(".esql"):
                    self.esql.add(project.name, rel, content.decode("utf-8", "replace").lstrip("\ufeff"))
                elif rel.endswith(MQSC_SUFFIXES):
                    script = mqsc.parse(content.decode("utf-8", "replace"), f"{project.name}/{rel}")
                    queues.extend(script.queues)
                    topics.extend(script.topics)
                    subscriptions.extend(script.subscriptions)
                    self.report.unsupported_commands.extend(script.unsupported)
                elif rel.endswith(FLOW_SUFFIXES):
                    flow_files.append((project, rel))
        seen: dict[str, mqsc.QueueDefinition] = {}
        for queue in queues:
            seen[queue.name] = queue  # a later DEFINE … REPLACE wins
        final = list(seen.values())
        self.aliases = {
            q.name: (q.leads["target"], q.source)
            for q in final
            if q.kind == "QALIAS" and q.leads.get("target") and q.leads.get("target_type", "QUEUE") == "QUEUE"
        }
        for project, rel in flow_files:
            name = flow_name(rel)
            if name in taken:
                name = flow_name(f"{project.name}/{rel}")
            taken.add(name)
            self.names[(project.name, rel)] = name
            self.by_rel.setdefault(rel, []).append((project.name, rel))
        documents = []
        for project, rel in flow_files:
            document = self._flow(project, rel)
            if document is not None:
                documents.append(document)
        refused = {
            name: "takes part in a cycle of subflow references (see errors)" for name in self._cycles()
        }
        for name in set(self.names.values()) - {d["name"] for d in documents}:
            refused[name] = "its file cannot be read (see errors)"
        documents = refuse_dependents(documents, self.report, refused)
        self.report.topics = [
            {
                "name": t.name,
                "topicString": t.topic_string,
                "source": t.source,
                "dropped": t.dropped,
                "problem": t.problem,
                "outcome": "" if t.problem else "needs no definition: the topic string is used as it is",
            }
            for t in {t.name: t for t in topics}.values()
        ]
        subs = list({s.name: s for s in subscriptions}.values())
        self.report.subscriptions = [
            {
                "name": s.name,
                "topic": s.topic,
                "queue": s.queue,
                "source": s.source,
                "dropped": s.dropped,
                "problem": s.problem,
            }
            for s in subs
        ]
        self.report.queues = [
            {
                "name": q.name,
                "kind": q.kind,
                "source": q.source,
                "attributes": q.attributes,
                "dropped": q.dropped,
                "problem": q.problem,
            }
            for q in final
        ]
        return Converted(
            documents,
            final,
            self.report,
            [s for s in subs if not s.problem],
            _unique_sets(message_sets, self.report),
        )

    def _parse(self, key: tuple[str, str]) -> xmi.XmiFlow:
        """The flow file ``key`` (project, path) parsed once; :class:`xmi.XmiError` when it cannot be."""
        if key not in self._parsed:
            try:
                self._parsed[key] = xmi.parse(self._files[key], f"{key[0]}/{key[1]}")
            except xmi.XmiError as exc:
                self._parsed[key] = exc
        found = self._parsed[key]
        if isinstance(found, xmi.XmiError):
            raise found
        return found

    def _subflow(self, project: Project, uri: str) -> tuple[str, str] | None:
        """The (project, path) of the subflow a node type URI names: in the same project first."""
        if (project.name, uri) in self.names:
            return (project.name, uri)
        candidates = self.by_rel.get(uri) or []
        return candidates[0] if candidates else None

    def _subflow_terminals(self, key: tuple[str, str]) -> dict[str, list[str]] | None:
        """The input and output terminal names of a subflow, as the designer draws them on its node."""
        try:
            parsed = self._parse(key)
        except xmi.XmiError:
            return None
        ends = [n for n in parsed.nodes if n.namespace == "eflow"]
        return {
            "inputs": [nodes.terminal(n.id) for n in ends if n.kind == "FCMSource"],
            "outputs": [nodes.terminal(n.id) for n in ends if n.kind == "FCMSink"],
        }

    def _cycles(self) -> set[str]:
        """The flows that use themselves through subflows, each cycle an error positioned at its first use."""
        refused: set[str] = set()
        state: dict[str, int] = {}  # 1: on the current path, 2: done
        path: list[tuple[str, tuple[str, str, int, int] | None]] = []

        def visit(name: str, via: tuple[str, str, int, int] | None) -> None:
            state[name] = 1
            path.append((name, via))
            for use in self.uses.get(name, []):
                target = use[0]
                if state.get(target) == 1:
                    start = next(i for i, (n, _) in enumerate(path) if n == target)
                    ring = [n for n, _ in path[start:]]
                    refused.update(ring)
                    first = path[start + 1][1] if start + 1 < len(path) else None
                    _, source, line, column = first or use
                    chain = " uses ".join([*ring, target])
                    self.report.errors.append(
                        {
                            "file": source,
                            "line": line,
                            "column": column,
                            "message": f"{source}:{line}:{column}: subflow cycle: {chain}; "
                            "a flow cannot contain itself",
                        }
                    )
                elif target not in state:
                    visit(target, use)
            path.pop()
            state[name] = 2

        for name in sorted(self.uses):
            if name not in state:
                visit(name, None)
        return refused

    def _flow(self, project: Project, rel: str) -> dict[str, Any] | None:
        source = f"{project.name}/{rel}"
        try:
            parsed = self._parse((project.name, rel))
        except xmi.XmiError as exc:
            self.report.errors.append(
                {"file": source, "line": exc.line, "column": exc.column, "message": str(exc)}
            )
            return None
        name = self.names[(project.name, rel)]
        kind = "subflow" if rel.endswith(".subflow") else "flow"
        flow = FlowReport(name=name, source=source, kind=kind, nodes_total=len(parsed.nodes))
        self.report.flows.append(flow)
        ids: dict[str, str] = {}
        used: set[str] = set()
        out_nodes: list[dict[str, Any]] = []
        instances = 0
        self._promote(parsed, flow)
        for node in parsed.nodes:
            made = self._node(project, node, flow)
            if made is None:
                continue
            node_id = _NODE_ID.sub("_", node.id)[:64] or "node"
            while node_id in used:
                node_id = f"{node_id[:60]}_{len(used)}"
            used.add(node_id)
            ids[node.id] = node_id
            made["id"] = node_id
            if node.location is not None:
                made["position"] = {
                    "x": round(node.location[0] * SCALE),
                    "y": round(node.location[1] * SCALE),
                }
            instances = max(instances, made.pop("_instances", 0))
            out_nodes.append(made)
        flow.nodes_mapped = sum(1 for n in out_nodes if n["type"] != UNSUPPORTED)
        connections = []
        renamed = {
            n.id: m.terminals for n in parsed.nodes if (m := nodes.MAPPINGS.get(n.namespace)) is not None
        }
        seen: set[tuple[str, str, str, str]] = set()
        for conn in parsed.connections:
            ends = (f"{conn.source}.{conn.source_terminal}", f"{conn.target}.{conn.target_terminal}")
            if conn.source not in ids or conn.target not in ids:
                missing = conn.source if conn.source not in ids else conn.target
                flow.dropped_connections.append(
                    {"from": ends[0], "to": ends[1], "reason": f"node {missing} was not imported"}
                )
                continue
            key = (
                ids[conn.source],
                renamed.get(conn.source, {}).get(conn.source_terminal)
                or nodes.terminal(conn.source_terminal),
                ids[conn.target],
                renamed.get(conn.target, {}).get(conn.target_terminal)
                or nodes.terminal(conn.target_terminal),
            )
            if key in seen:
                continue
            seen.add(key)
            connections.append(
                {"from": {"node": key[0], "terminal": key[1]}, "to": {"node": key[2], "terminal": key[3]}}
            )
        _placeholder_terminals(out_nodes, connections)
        self._check_terminals(out_nodes, connections, flow)
        self._user_defined(parsed, out_nodes, flow)
        if flow.unsupported_nodes:
            flow.outcome = "partial"
        description = f"Imported from ACE {source}."
        if flow.unsupported_nodes:
            description += (
                " Unsupported nodes to replace before deploying: "
                + ", ".join(f"{n['node']} ({n['type']})" for n in flow.unsupported_nodes)
                + "."
            )
        properties: dict[str, Any] = {}
        if instances:
            properties["additionalInstances"] = instances
        return {
            "name": name,
            "description": description,
            "properties": properties,
            "nodes": out_nodes,
            "connections": connections,
        }

    def _promote(self, parsed: xmi.XmiFlow, flow: FlowReport) -> None:
        """Give each node property promoted to the flow the flow property's default value."""
        by_id = {n.id: n for n in parsed.nodes}
        for link in parsed.links:
            value = parsed.features.get(link.feature)
            for node_id in link.nodes:
                node = by_id.get(node_id)
                label = (node.name or node.id) if node is not None else node_id
                if node is None or not link.target.endswith(".msgnode"):
                    reason = "promoted from a subflow's own promoted property, which is not supported"
                elif value is None:
                    reason = (
                        "promoted to the flow without a default value; set the node property after import"
                    )
                else:
                    node.attributes[link.attribute] = value
                    continue
                flow.dropped_properties.append(
                    {"node": label, "property": link.attribute, "value": value or "", "reason": reason}
                )

    def _user_defined(self, parsed: xmi.XmiFlow, out_nodes: list[dict[str, Any]], flow: FlowReport) -> None:
        """User-defined properties become the EXTERNAL values of the ESQL nodes that declare them."""
        linked = {link.feature for link in parsed.links}
        for name, value in parsed.features.items():
            if name in linked:
                continue
            if name not in parsed.user_defined:
                reason = "a flow property linked to no node"
            elif value is None:
                reason = (
                    "a user-defined property without a default; give it with --set NAME=VALUE when deploying"
                )
            else:
                declares = re.compile(rf"\bDECLARE\s+{re.escape(name)}\s+EXTERNAL\b", re.IGNORECASE)
                users = [n for n in out_nodes if declares.search(str(n["properties"].get("esql", "")))]
                for node in users:
                    node["properties"].setdefault("externals", {})[name] = value
                if users:
                    continue
                reason = "a user-defined property no ESQL node of the flow declares EXTERNAL"
            flow.dropped_properties.append(
                {"node": "(flow)", "property": name, "value": value or "", "reason": reason}
            )

    def _check_terminals(
        self, out_nodes: list[dict[str, Any]], connections: list[dict[str, Any]], flow: FlowReport
    ) -> None:
        """Drop (and report) connections to terminals the flowbroker node type does not have."""
        from flowbroker_nodes import registry

        by_id = {n["id"]: n for n in out_nodes}
        kept = []
        for conn in connections:
            reason = ""
            for end, direction in (("from", "outputs"), ("to", "inputs")):
                node = by_id[conn[end]["node"]]
                spec = registry.spec(node["type"])
                if spec is None or spec.dynamic_terminals:
                    continue
                names = [t.name for t in getattr(spec, direction)]
                derived = spec.derived_outputs if direction == "outputs" else spec.derived_inputs
                names += [n for n in derived(node["properties"]) if n not in names]
                if conn[end]["terminal"] not in names:
                    reason = f"{node['type']} has no terminal {conn[end]['terminal']!r} (has: {', '.join(names) or 'none'})"
            if reason:
                flow.dropped_connections.append(
                    {
                        "from": f"{conn['from']['node']}.{conn['from']['terminal']}",
                        "to": f"{conn['to']['node']}.{conn['to']['terminal']}",
                        "reason": reason,
                    }
                )
            else:
                kept.append(conn)
        connections[:] = kept

    def _node(self, project: Project, node: xmi.XmiNode, flow: FlowReport) -> dict[str, Any] | None:
        label = node.name or node.id
        if node.namespace == "eflow":
            prefix = "InTerminal." if node.kind == "FCMSource" else "OutTerminal."
            our = "Input" if node.kind == "FCMSource" else "Output"
            if node.kind not in ("FCMSource", "FCMSink"):
                return self._unsupported(flow, node, f"eflow:{node.kind}", "not a node kind a flow can hold")
            return {
                "type": our,
                "name": label,
                "properties": {"terminalName": nodes.terminal(node.id.removeprefix(prefix))},
            }
        if node.namespace.endswith(FLOW_SUFFIXES):
            found = self._subflow(project, node.namespace)
            if found is None:
                return self._unsupported(
                    flow, node, node.namespace, f"subflow {node.namespace} is not in the workspace"
                )
            target = self.names[found]
            at = _column(self._files[(project.name, flow.source.split("/", 1)[1])], node.id)
            self.uses.setdefault(flow.name, []).append((target, flow.source, node.line, at))
            for attribute, value in node.attributes.items():
                flow.dropped_properties.append(
                    {
                        "node": label,
                        "property": attribute,
                        "value": value,
                        "reason": "promoted subflow properties are not supported",
                    }
                )
            instance: dict[str, Any] = {
                "type": "Subflow",
                "name": label,
                "properties": {"flow": {"name": target}},
            }
            terminals = self._subflow_terminals(found)
            if terminals is not None:
                instance["ui"] = {"terminals": terminals}
            return instance
        mapping = nodes.MAPPINGS.get(node.namespace)
        if mapping is None:
            return self._unsupported(
                flow, node, nodes.short_type(node.namespace), "no flowbroker node type yet"
            )
        for attribute, refused in mapping.unsupported_when.items():
            if node.attributes.get(attribute) in refused:
                why = refused[node.attributes[attribute]]
                return self._unsupported(flow, node, nodes.short_type(node.namespace), why)
        props: dict[str, Any] = dict(mapping.defaults)
        instances = 0
        for attribute, value in node.attributes.items():
            if attribute == mapping.esql:
                self._esql(node, label, value, props, flow)
                continue
            if attribute == "additionalInstances" and mapping.type in ("MQInput", "HTTPInput"):
                try:
                    instances = int(value)
                except ValueError:
                    pass
                else:
                    flow.dropped_properties.append(
                        {
                            "node": label,
                            "property": attribute,
                            "value": value,
                            "reason": "moved to the flow's additionalInstances (flowbroker has no node-level pool)",
                        }
                    )
                    continue
            mapped = mapping.properties.get(attribute)
            if mapped is None:
                if mapping.harmless.get(attribute) == value:
                    continue
                reason = mapping.reasons.get(attribute) or nodes.DROP_REASONS.get(
                    attribute, f"{mapping.type} has no such property"
                )
                flow.dropped_properties.append(
                    {"node": label, "property": attribute, "value": value, "reason": reason}
                )
                continue
            ours, convert = mapped
            try:
                props[ours] = convert(value)
            except nodes.Unconvertible as exc:
                flow.dropped_properties.append(
                    {"node": label, "property": attribute, "value": value, "reason": str(exc)}
                )
                continue
            raw = value.strip()
            if (
                attribute == "URLSpecifier"
                and mapping.type == "HTTPInput"
                and raw.endswith("*")
                and not raw.endswith("/*")
            ):
                flow.dropped_properties.append(
                    {
                        "node": label,
                        "property": attribute,
                        "value": value,
                        "reason": f"served as {props[ours]}: ACE's * after a segment also matches paths that "
                        "continue the segment's text, which this does not",
                    }
                )
        for element, (ours, convert_row) in mapping.tables.items():
            rows = []
            for index, row in enumerate(node.rows.get(element, []), 1):
                try:
                    rows.append(convert_row(row))
                except nodes.Unconvertible as exc:
                    flow.dropped_properties.append(
                        {
                            "node": label,
                            "property": f"{element}[{index}]",
                            "value": " ".join(f"{k}={v!r}" for k, v in row.items()),
                            "reason": str(exc),
                        }
                    )
            props[ours] = rows
        alias = props.get("queueName")
        if alias in self.aliases and mapping.type in ("MQInput", "MQOutput", "MQGet"):
            target, where = self.aliases[alias]
            props["queueName"] = target
            flow.dropped_properties.append(
                {
                    "node": label,
                    "property": "queueName",
                    "value": alias,
                    "reason": f"names the alias queue defined at {where}; there are no alias queues, so the "
                    f"node names its target {target}",
                }
            )
        if mapping.esql and mapping.esql not in node.attributes:
            flow.esql_missing.append(
                {"node": label, "module": "", "reason": f"the node names no module ({mapping.esql})"}
            )
        made: dict[str, Any] = {"type": mapping.type, "name": label, "properties": props}
        if instances:
            made["_instances"] = instances
        return made

    def _esql(self, node: xmi.XmiNode, label: str, uri: str, props: dict[str, Any], flow: FlowReport) -> None:
        resolution = self.esql.resolve(uri)
        if resolution.esql is None:
            flow.esql_missing.append({"node": label, "module": uri, "reason": resolution.problem})
            return
        props["esql"] = resolution.esql
        props["module"] = resolution.module
        flow.esql_resolved.append(
            {
                "node": label,
                "module": f"{resolution.schema + '.' if resolution.schema else ''}{resolution.module}",
                "source": resolution.source,
                "uses": resolution.uses,
            }
        )

    def _unsupported(
        self, flow: FlowReport, node: xmi.XmiNode, type_name: str, reason: str
    ) -> dict[str, Any]:
        """Report ``node`` and give the Unsupported node that keeps its place, attributes and connections."""
        flow.unsupported_nodes.append(
            {
                "node": node.name or node.id,
                "id": node.id,
                "type": type_name,
                "reason": reason,
                "line": node.line,
            }
        )
        original = node.namespace.removesuffix(".msgnode") if node.namespace != "eflow" else type_name
        return {
            "type": UNSUPPORTED,
            "name": node.name or node.id,
            "properties": {
                "originalType": original,
                "originalAttributes": dict(node.attributes),
                "inputTerminals": [],
                "outputTerminals": [],
            },
        }


def _unique_sets(found: list[dict[str, Any]], report: ImportReport) -> list[dict[str, Any]]:
    """The converted sets, one per name: a second set of a name already taken is reported, not kept."""
    kept: dict[str, dict[str, Any]] = {}
    for one in found:
        first = kept.get(one["name"])
        if first is None:
            kept[one["name"]] = one
            continue
        if first["document"] == one["document"]:
            continue
        for entry in report.models:
            if entry["file"] == one["source"]:
                entry["outcome"] = "not imported"
                entry["reason"] = f"another message set named {one['name']} ({first['source']}) is imported"
    return list(kept.values())


def _column(data: bytes, node_id: str) -> int:
    """The column of the ``<nodes`` element whose xmi:id is ``node_id`` (1 when not found)."""
    at = data.find(f'xmi:id="{node_id}"'.encode())
    if at < 0:
        return 1
    start = data.rfind(b"<nodes", 0, at)
    line_start = data.rfind(b"\n", 0, at) + 1
    return (start if start >= line_start else line_start) - line_start + 1


def _placeholder_terminals(out_nodes: list[dict[str, Any]], connections: list[dict[str, Any]]) -> None:
    """Give each Unsupported node the terminals its connections name, in the order they appear."""
    by_id = {n["id"]: n for n in out_nodes if n["type"] == UNSUPPORTED}
    for conn in connections:
        for end, key in (("from", "outputTerminals"), ("to", "inputTerminals")):
            node = by_id.get(conn[end]["node"])
            if node is not None:
                rows = node["properties"][key]
                if conn[end]["terminal"] not in [r["name"] for r in rows]:
                    rows.append({"name": conn[end]["terminal"]})


def refuse_dependents(
    documents: list[dict[str, Any]], report: ImportReport, refused: dict[str, str]
) -> list[dict[str, Any]]:
    """``documents`` without those named in ``refused`` and those using them as subflows, at any depth.

    ``refused`` gives each refused flow's reason ("" when its report already holds its problems).
    Each flow so left out is marked refused in ``report`` with the reason, so that no flow is
    stored that names a subflow which is not.
    """
    reports = {f.name: f for f in report.flows}
    out = set(refused)
    why = dict(refused)
    changed = True
    while changed:
        changed = False
        for document in documents:
            if document["name"] in out:
                continue
            for node in document.get("nodes", []):
                used = (node.get("properties") or {}).get("flow")
                name = used.get("name") if node.get("type") == "Subflow" and isinstance(used, dict) else None
                if name in out:
                    out.add(document["name"])
                    why[document["name"]] = (
                        f"node {node.get('name') or node.get('id')!r} uses subflow {name}, which is not imported"
                    )
                    changed = True
                    break
    for name in out:
        entry = reports.get(name)
        if entry is None:
            continue
        entry.outcome = "refused"
        message = why.get(name, "")
        if message and not any(p.get("message") == message for p in entry.problems):
            entry.problems.append({"pointer": "", "message": message})
    return [d for d in documents if d["name"] not in out]


def import_workspace(workspace: Workspace, *, check: bool = True) -> Converted:
    """Convert every flow, subflow and MQSC script of ``workspace``; with ``check``, compile each flow.

    A flow that would not deploy (an ESQL error, a missing required property) is still converted:
    its problems are in the report.
    """
    converted = _Converter(workspace).run()
    if check:
        _check(converted)
    return converted


def _check(converted: Converted) -> None:
    from flowbroker.services import deploy

    dependencies = {
        "subflows": [
            {"name": d["name"], "version": 1, "latest": True, "document": d} for d in converted.documents
        ],
        # the sets the workspace's models became; a set it holds but could not convert says why
        "messageSets": [
            {"name": m["name"], "version": 1, "document": m["document"]} for m in converted.message_sets
        ],
        "unusableMessageSets": {
            str(m["name"]): f"the workspace's message set ({m['file']}) is not imported: {m['reason']}"
            for m in converted.report.models
            if m.get("kind") == "MRM message set" and m.get("name") and m.get("outcome") == "not imported"
        },
    }
    reports = {f.name: f for f in converted.report.flows}
    for document in converted.documents:
        report = reports[document["name"]]
        from flowbroker.services import validation

        found = validation.problems(document)
        if not found and report.kind == "flow":
            found = deploy.check(document, dependencies=dependencies)
        report.problems = [dict(p) for p in found]
