"""The import report: per flow what was mapped, dropped and resolved; per queue what was defined."""

from __future__ import annotations

from collections import Counter
from dataclasses import asdict, dataclass, field
from typing import Any

#: Outcomes of a message model that became a flowbroker message set.
IMPORTED = ("converted", "created", "updated", "unchanged")


@dataclass
class FlowReport:
    name: str
    source: str  # project/path of the .msgflow or .subflow
    kind: str  # flow or subflow
    outcome: str = "converted"  # converted | partial (Unsupported nodes to replace) | refused; then created/updated/… when stored
    nodes_total: int = 0
    nodes_mapped: int = 0
    unsupported_nodes: list[dict[str, Any]] = field(default_factory=list)
    dropped_properties: list[dict[str, Any]] = field(default_factory=list)
    dropped_connections: list[dict[str, Any]] = field(default_factory=list)
    esql_resolved: list[dict[str, Any]] = field(default_factory=list)
    esql_missing: list[dict[str, Any]] = field(default_factory=list)
    problems: list[dict[str, Any]] = field(default_factory=list)  # what would stop it deploying
    version: int | None = None


@dataclass
class ImportReport:
    projects: list[str] = field(default_factory=list)
    flows: list[FlowReport] = field(default_factory=list)
    queues: list[dict[str, Any]] = field(default_factory=list)
    topics: list[dict[str, Any]] = field(default_factory=list)
    subscriptions: list[dict[str, Any]] = field(default_factory=list)
    models: list[dict[str, Any]] = field(
        default_factory=list
    )  # message sets and schemas, and why not imported
    unsupported_commands: list[dict[str, str]] = field(default_factory=list)
    errors: list[dict[str, Any]] = field(default_factory=list)  # hard errors: files that could not be read
    notes: list[str] = field(default_factory=list)

    def summary(self) -> dict[str, Any]:
        total = sum(f.nodes_total for f in self.flows)
        mapped = sum(f.nodes_mapped for f in self.flows)
        unsupported = Counter(n["type"] for f in self.flows for n in f.unsupported_nodes)
        return {
            "flows": len(self.flows),
            "flowsComplete": sum(1 for f in self.flows if not f.unsupported_nodes),
            "nodes": total,
            "nodesMapped": mapped,
            "nodesMappedPercent": round(100.0 * mapped / total, 1) if total else 100.0,
            "unsupportedNodeTypes": dict(unsupported.most_common()),
            "esqlModulesResolved": sum(len(f.esql_resolved) for f in self.flows),
            "esqlModulesMissing": sum(len(f.esql_missing) for f in self.flows),
            "queues": sum(1 for q in self.queues if not q.get("problem")),
            "queuesUnsupported": sum(1 for q in self.queues if q.get("problem")),
            "subscriptions": sum(1 for s in self.subscriptions if not s.get("problem")),
            "subscriptionsUnsupported": sum(1 for s in self.subscriptions if s.get("problem")),
            "models": len(self.models),
            "modelsImported": sum(1 for m in self.models if m.get("outcome") in IMPORTED),
            "errors": len(self.errors),
        }

    def to_json(self) -> dict[str, Any]:
        return {
            "summary": self.summary(),
            "projects": self.projects,
            "flows": [_camel(asdict(f)) for f in self.flows],
            "queues": self.queues,
            "topics": self.topics,
            "subscriptions": self.subscriptions,
            "models": self.models,
            "unsupportedCommands": self.unsupported_commands,
            "errors": self.errors,
            "notes": self.notes,
        }

    def text(self) -> str:
        return render(self.to_json())


def render(report: dict[str, Any]) -> str:
    """The report (as :meth:`ImportReport.to_json` gives it) for a terminal: per flow, queues, totals."""
    lines: list[str] = []
    for flow in report["flows"]:
        version = f" v{flow['version']}" if flow.get("version") else ""
        lines.append(
            f"{flow['kind']} {flow['name']}{version} ({flow['source']}): {flow['outcome']}, "
            f"{flow['nodesMapped']}/{flow['nodesTotal']} nodes mapped"
        )
        for node in flow["unsupportedNodes"]:
            lines.append(f"  unsupported node {node['node']!r} ({node['type']}): {node['reason']}")
        for prop in flow["droppedProperties"]:
            lines.append(f"  dropped {prop['node']}.{prop['property']}={prop['value']!r}: {prop['reason']}")
        for conn in flow["droppedConnections"]:
            lines.append(f"  dropped connection {conn['from']} -> {conn['to']}: {conn['reason']}")
        for esql in flow["esqlResolved"]:
            uses = f" (+ {', '.join(esql['uses'])})" if esql["uses"] else ""
            lines.append(f"  esql {esql['node']}: {esql['module']} from {esql['source']}{uses}")
        for esql in flow["esqlMissing"]:
            lines.append(f"  esql {esql['node']}: missing: {esql['reason']}")
        for found in flow["problems"]:
            where = found.get("node") or found.get("pointer") or "flow"
            lines.append(f"  problem {where}: {found['message']}")
    for queue in report["queues"]:
        state = queue.get("problem") or queue.get("outcome") or "converted"
        lines.append(f"queue {queue['name']} ({queue['kind']}, {queue['source']}): {state}")
        for dropped in queue.get("dropped", []):
            lines.append(f"  dropped {dropped['attribute']}({dropped['value']}): {dropped['reason']}")
        for note in queue.get("notes", []):
            lines.append(f"  {note}")
    for topic in report.get("topics", []):
        state = topic.get("problem") or topic.get("outcome") or ""
        lines.append(f"topic {topic['name']} ({topic['topicString']!r}, {topic['source']}): {state}")
        for dropped in topic.get("dropped", []):
            lines.append(f"  dropped {dropped['attribute']}({dropped['value']}): {dropped['reason']}")
    for sub in report.get("subscriptions", []):
        state = sub.get("problem") or sub.get("outcome") or "converted"
        lines.append(
            f"subscription {sub['name']} ({sub['topic']!r} -> {sub['queue']}, {sub['source']}): {state}"
        )
        for dropped in sub.get("dropped", []):
            lines.append(f"  dropped {dropped['attribute']}({dropped['value']}): {dropped['reason']}")
    for model in report.get("models", []):
        named = f" {model['name']}" if model.get("name") else ""
        formats = f", formats {', '.join(model['formats'])}" if model.get("formats") else ""
        lines.append(
            f"{model['kind']}{named} ({model['file']}{formats}): {model['outcome']}: {model['reason']}"
        )
        for warning in model.get("warnings", []):
            lines.append(f"  warning: {warning}")
    for command in report["unsupportedCommands"]:
        lines.append(f"mqsc {command['source']}: not imported: {command['command']}")
    for error in report["errors"]:
        lines.append(f"error: {error['message']}")
    for note in report["notes"]:
        lines.append(f"note: {note}")
    s = report["summary"]
    lines.append(
        f"{s['flows']} flows ({s['flowsComplete']} complete), {s['nodesMapped']}/{s['nodes']} nodes mapped "
        f"({s['nodesMappedPercent']}%), ESQL modules {s['esqlModulesResolved']} resolved / "
        f"{s['esqlModulesMissing']} missing, {s['queues']} queues, {s.get('subscriptions', 0)} subscriptions, "
        f"{s.get('modelsImported', 0)}/{s.get('models', 0)} message models imported, {s['errors']} errors"
    )
    if s["unsupportedNodeTypes"]:
        lines.append(
            "unsupported node types: " + ", ".join(f"{k} {v}" for k, v in s["unsupportedNodeTypes"].items())
        )
    return "\n".join(lines)


def _camel(data: dict[str, Any]) -> dict[str, Any]:
    out = {}
    for key, value in data.items():
        head, *rest = key.split("_")
        out[head + "".join(part.title() for part in rest)] = value
    return out
