"""`flowbroker import ace DIR… --report`: import each DIR as a workspace of its own and print the figures.

Nothing is stored. Per DIR and in total: flow files, flows imported (every node mapped or reported
as an Unsupported node), flows made only of mapped nodes (their subflows too) and how many of them
validate and compile, nodes mapped, queues and message models, and the node types most often left
unmapped.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

from flowbroker.importers.ace.report import IMPORTED

FLOW_SUFFIXES = (".msgflow", ".subflow")


def _lacking(documents: list[dict[str, Any]]) -> set[str]:
    """The flows holding an Unsupported node themselves or in a subflow they use, at any depth."""
    from flowbroker_nodes import registry

    def placeholder(node: dict[str, Any]) -> bool:
        spec = registry.spec(str(node.get("type")))
        return spec is not None and spec.is_placeholder

    uses = {
        d["name"]: {
            n["properties"]["flow"]["name"]
            for n in d["nodes"]
            if registry.subflow_part(n) == "node" and isinstance(n.get("properties", {}).get("flow"), dict)
        }
        for d in documents
    }
    lacking = {d["name"] for d in documents if any(placeholder(n) for n in d["nodes"])}
    changed = True
    while changed:
        changed = False
        for name, used in uses.items():
            if name not in lacking and used & lacking:
                lacking.add(name)
                changed = True
    return lacking


def figures(report: dict[str, Any], documents: list[dict[str, Any]]) -> dict[str, Any]:
    """The corpus figures of one import (its report as ``ImportReport.to_json`` gives it, and its flows).

    A flow is complete when it and every subflow it uses, at any depth, are made of mapped nodes.
    """
    flows = report["flows"]
    unreadable = sum(1 for e in report["errors"] if str(e.get("file", "")).endswith(FLOW_SUFFIXES))
    lacking = _lacking(documents) | {f["name"] for f in flows if f["unsupportedNodes"]}
    complete = [f for f in flows if f["name"] not in lacking and f["outcome"] != "refused"]
    models = report.get("models", [])
    return {
        "flowFiles": len(flows) + unreadable,
        "flowsImported": sum(1 for f in flows if f["outcome"] != "refused"),
        "flowsComplete": len(complete),
        "flowsCompleteValid": sum(1 for f in complete if not f["problems"]),
        "nodes": sum(f["nodesTotal"] for f in flows),
        "nodesMapped": sum(f["nodesMapped"] for f in flows),
        "connectionsDropped": sum(len(f["droppedConnections"]) for f in flows),
        "queues": sum(1 for q in report["queues"] if not q.get("problem")),
        "queuesNotDefined": sum(1 for q in report["queues"] if q.get("problem")),
        "subscriptions": sum(1 for q in report["subscriptions"] if not q.get("problem")),
        "subscriptionsNotDefined": sum(1 for q in report["subscriptions"] if q.get("problem")),
        "models": len(models),
        "modelsImported": sum(1 for m in models if m.get("outcome") in IMPORTED),
        "unsupportedNodeTypes": Counter(report["summary"]["unsupportedNodeTypes"]),
        "errors": len(report["errors"]),
    }


def _percent(part: int, whole: int) -> str:
    return f"{100.0 * part / whole:.1f}%" if whole else "-"


def _line(name: str, f: dict[str, Any]) -> str:
    return (
        f"{name}: {f['flowFiles']} flow files, {f['flowsImported']} imported "
        f"({_percent(f['flowsImported'], f['flowFiles'])}), {f['flowsComplete']} of mapped nodes only "
        f"({f['flowsCompleteValid']} validate), nodes {f['nodesMapped']}/{f['nodes']} mapped "
        f"({_percent(f['nodesMapped'], f['nodes'])}), {f['connectionsDropped']} connections dropped, "
        f"queues {f['queues']} definable / {f['queuesNotDefined']} not, subscriptions {f['subscriptions']} / "
        f"{f['subscriptionsNotDefined']} not, models {f['modelsImported']}/{f['models']} imported, "
        f"{f['errors']} unreadable files"
    )


def report(dirs: list[str], as_json: bool) -> int:
    from flowbroker.importers.ace import Workspace, import_workspace

    rows: dict[str, dict[str, Any]] = {}
    for directory in dirs:
        converted = import_workspace(Workspace.from_dirs([directory]))
        rows[Path(directory).name or directory] = figures(converted.report.to_json(), converted.documents)
    total: dict[str, Any] = {}
    for row in rows.values():
        for key, value in row.items():
            total[key] = (
                total.get(key, 0) + value
                if not isinstance(value, Counter)
                else total.get(key, Counter()) + value
            )
    total.setdefault("unsupportedNodeTypes", Counter())
    if as_json:
        out = {
            name: {**row, "unsupportedNodeTypes": dict(row["unsupportedNodeTypes"])}
            for name, row in rows.items()
        }
        print(
            json.dumps(
                {
                    "workspaces": out,
                    "total": {
                        **total,
                        "unsupportedNodeTypes": dict(total["unsupportedNodeTypes"].most_common()),
                    },
                },
                indent=2,
            )
        )
        return 0
    for name, row in rows.items():
        print(_line(name, row))
    print(_line(f"total ({len(rows)} workspaces)", total))
    common = total["unsupportedNodeTypes"].most_common(12)
    if common:
        print("most frequent unmapped node types: " + ", ".join(f"{k} {v}" for k, v in common))
    return 0
