"""The topology as a graph: brokers, their execution groups, the flows deployed to each group, and
the queues each deployed flow reads and writes (as each node type's spec says where it names them).

The queues come from the deployed flow version's document with the deployment's overrides applied,
and from the documents of the subflows the deployment carries.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy.orm import Session

from flowbroker.services import brokers, deploy, groups
from flowbroker.settings import Settings

#: How many subflow documents are followed for one flow (a guard against runaway nesting).
MAX_SUBFLOWS = 256


def _subflow_documents(dependencies: dict[str, Any]) -> dict[tuple[str, int | None], dict[str, Any]]:
    """The deployment's subflow documents by (name, version) and, for the latest, (name, None)."""
    found: dict[tuple[str, int | None], dict[str, Any]] = {}
    for entry in (dependencies or {}).get("subflows") or []:
        if not isinstance(entry, dict) or not isinstance(entry.get("document"), dict):
            continue
        found[(entry.get("name"), entry.get("version"))] = entry["document"]  # type: ignore[index]
        if entry.get("latest"):
            found[(entry.get("name"), None)] = entry["document"]  # type: ignore[index]
    return found


def flow_queues(
    document: dict[str, Any],
    dependencies: dict[str, Any] | None = None,
    overrides: dict[str, Any] | None = None,
) -> tuple[list[str], list[str]]:
    """The queues a deployed flow reads and writes, each sorted, subflows included."""
    from flowbroker_nodes import registry

    reads: set[str] = set()
    writes: set[str] = set()
    subflows = _subflow_documents(dependencies or {})
    top: dict[str, Any] = {
        **document,
        "nodes": [dict(n) for n in document.get("nodes") or [] if isinstance(n, dict)],
    }
    by_id = {n.get("id"): n for n in top["nodes"]}
    for key, value in (overrides or {}).items():
        node_id, _, prop = key.partition(".")
        if node_id in by_id and prop:
            by_id[node_id]["properties"] = {**(by_id[node_id].get("properties") or {}), prop: value}
    pending: list[Any] = [top]
    seen = 0
    while pending and seen <= MAX_SUBFLOWS:
        current = pending.pop()
        seen += 1
        nodes = current.get("nodes") if isinstance(current, dict) else None
        for node in nodes if isinstance(nodes, list) else []:
            if not isinstance(node, dict):
                continue
            raw = node.get("properties")
            props: dict[str, Any] = raw if isinstance(raw, dict) else {}
            spec = registry.spec(str(node.get("type")))
            if spec is None:
                continue
            reads.update(spec.queues_read(props))
            writes.update(spec.queues_written(props))
            if spec.subflow_part == "node" and isinstance(props.get("flow"), dict):
                ref = props["flow"]
                if isinstance(ref.get("nodes"), list):
                    pending.append(ref)
                    continue
                version = ref.get("version")
                pinned = version if isinstance(version, int) and version > 0 else None
                named = subflows.get((ref.get("name"), pinned))
                if named is not None:
                    pending.append(named)
    return sorted(reads), sorted(writes)


def graph(session: Session, settings: Settings) -> dict[str, Any]:
    """Brokers with their groups, the flows deployed to each group, and the queues between them."""
    table = groups.supervisor_table(settings.supervisor_state)
    out_brokers: list[dict[str, Any]] = []
    out_groups: list[dict[str, Any]] = []
    out_flows: list[dict[str, Any]] = []
    queues: dict[str, dict[str, list[int]]] = {}
    for broker in brokers.list_brokers(session):
        described = groups.describe_broker(broker, settings.data, table, settings.local_broker)
        out_brokers.append({"id": broker.id, "name": broker.name, "local": described["local"]})
        for group in described["groups"]:
            out_groups.append(
                {
                    "id": group["id"],
                    "broker_id": broker.id,
                    "name": group["name"],
                    "state": group["state"],
                    "host": group["host"],
                }
            )
            for row in deploy.group_flows(session, group["id"]):
                reads, writes = flow_queues(row.flow_version.document, row.dependencies, row.overrides)
                out_flows.append(
                    {
                        "deployment_id": row.id,
                        "flow_id": row.flow_version.flow_id,
                        "flow": row.flow_version.flow.name,
                        "version": row.flow_version.version,
                        "group_id": group["id"],
                        "status": row.status,
                        "reads": reads,
                        "writes": writes,
                    }
                )
                for name in reads:
                    queues.setdefault(name, {"read_by": [], "written_by": []})["read_by"].append(row.id)
                for name in writes:
                    queues.setdefault(name, {"read_by": [], "written_by": []})["written_by"].append(row.id)
    return {
        "brokers": out_brokers,
        "groups": out_groups,
        "flows": out_flows,
        "queues": [{"name": name, **uses} for name, uses in sorted(queues.items())],
    }
