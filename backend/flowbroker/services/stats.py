"""Statistics of execution groups: read what each group publishes, and render it for REST, SSE and Prometheus.

A group publishes into the repository (read with ``session_factory``), which a configuration
manager on any host shares, and into its data directory, which one beside it shares; the newer
of the two counts.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

#: Makes the repository's sessions (``sessionmaker``); None reads the data directory alone.
SessionFactory = Any

#: A group whose last statistics are older than this is reported as not reporting.
STALE_AFTER = 30.0


def read_all(data: Path, session_factory: SessionFactory = None) -> list[dict[str, Any]]:
    """The last statistics of every group that has published any, with ``age_s`` and ``reporting``."""
    latest: dict[tuple[str, str], dict[str, Any]] = {}

    def take(record: Any) -> None:
        if not isinstance(record, dict):
            return
        key = (str(record.get("broker")), str(record.get("group")))
        if key not in latest or _time(record) > _time(latest[key]):
            latest[key] = record

    root = data / "stats"
    if root.is_dir():
        for path in sorted(root.glob("*/*.json")):
            try:
                take(json.loads(path.read_text()))
            except (OSError, ValueError):
                continue
    if session_factory is not None:
        for record in _reported(session_factory):
            take(record)
    now = time.time()
    found: list[dict[str, Any]] = []
    for key in sorted(latest):
        record = latest[key]
        age = now - _time(record)
        record["age_s"] = round(age, 1)
        record["reporting"] = age <= STALE_AFTER
        found.append(record)
    return found


def _time(record: dict[str, Any]) -> float:
    try:
        return float(record.get("time", 0) or 0)
    except (TypeError, ValueError):
        return 0.0


def _reported(session_factory: SessionFactory) -> list[dict[str, Any]]:
    """The statistics groups wrote into the repository, each under its broker and group name."""
    from flowbroker.repository import db
    from flowbroker.services import reports

    with db.session_scope(session_factory) as session:
        found = []
        for (broker, group), report in reports.by_group(session).items():
            record = report["statistics"]
            if record:
                found.append({**record, "broker": broker, "group": group, "host": report["host"]})
        return found


def read_group(
    data: Path, broker: str, group: str, session_factory: SessionFactory = None
) -> dict[str, Any] | None:
    for record in read_all(data, session_factory):
        if record.get("broker") == broker and record.get("group") == group:
            return record
    return None


def flows(data: Path, session_factory: SessionFactory = None) -> list[dict[str, Any]]:
    """One row per deployed flow (without per-node detail)."""
    rows = []
    for record in read_all(data, session_factory):
        for name, flow in (record.get("flows") or {}).items():
            row = {k: v for k, v in flow.items() if k != "nodes"}
            row.update(broker=record.get("broker"), group=record.get("group"), flow=name)
            rows.append(row)
    return rows


def _label(value: Any) -> str:
    return str(value).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def prometheus(data: Path, session_factory: SessionFactory = None) -> str:
    """The statistics in the Prometheus text exposition format (version 0.0.4)."""
    lines: list[str] = []

    def metric(name: str, kind: str, help_text: str, samples: list[tuple[dict[str, Any], Any]]) -> None:
        lines.append(f"# HELP {name} {help_text}")
        lines.append(f"# TYPE {name} {kind}")
        for labels, value in samples:
            text = ",".join(f'{k}="{_label(v)}"' for k, v in labels.items())
            lines.append(f"{name}{{{text}}} {float(value or 0):g}")

    records = read_all(data, session_factory)
    groups = [({"broker": r.get("broker"), "group": r.get("group")}, r) for r in records]
    metric(
        "flowbroker_group_rss_bytes",
        "gauge",
        "Resident memory of the execution group process.",
        [(lb, r.get("rss_bytes")) for lb, r in groups],
    )
    metric(
        "flowbroker_group_cpu_seconds_total",
        "counter",
        "CPU time of the execution group process.",
        [(lb, r.get("cpu_seconds")) for lb, r in groups],
    )
    metric(
        "flowbroker_group_threads",
        "gauge",
        "Threads of the execution group process.",
        [(lb, r.get("threads")) for lb, r in groups],
    )
    metric(
        "flowbroker_group_up",
        "gauge",
        "1 when the group published statistics recently.",
        [(lb, 1 if r.get("reporting") else 0) for lb, r in groups],
    )
    flow_rows: list[tuple[dict[str, Any], dict[str, Any]]] = []
    node_rows: list[tuple[dict[str, Any], dict[str, Any]]] = []
    for labels, record in groups:
        for name, flow in (record.get("flows") or {}).items():
            flow_labels = {**labels, "flow": name}
            flow_rows.append((flow_labels, flow))
            for node_id, node in (flow.get("nodes") or {}).items():
                node_rows.append(({**flow_labels, "node": node_id}, node))
    metric(
        "flowbroker_flow_messages_total",
        "counter",
        "Messages the flow's input nodes processed (a backed-out retry counts as a backout).",
        [(lb, f.get("messages_in")) for lb, f in flow_rows],
    )
    metric(
        "flowbroker_flow_errors_total",
        "counter",
        "Exceptions raised in the flow's nodes.",
        [(lb, f.get("errors")) for lb, f in flow_rows],
    )
    metric(
        "flowbroker_flow_backouts_total",
        "counter",
        "Units of work the flow backed out.",
        [(lb, f.get("backouts")) for lb, f in flow_rows],
    )
    metric(
        "flowbroker_flow_failures_total",
        "counter",
        "Messages the flow gave up: moved past their backout threshold or dead-lettered.",
        [(lb, f.get("failures")) for lb, f in flow_rows],
    )
    metric(
        "flowbroker_flow_threads",
        "gauge",
        "Running threads of the flow.",
        [(lb, f.get("threads")) for lb, f in flow_rows],
    )
    metric(
        "flowbroker_node_messages_in_total",
        "counter",
        "Messages that reached the node.",
        [(lb, n.get("messages_in")) for lb, n in node_rows],
    )
    metric(
        "flowbroker_node_messages_out_total",
        "counter",
        "Messages the node propagated.",
        [(lb, n.get("messages_out")) for lb, n in node_rows],
    )
    metric(
        "flowbroker_node_errors_total",
        "counter",
        "Exceptions the node raised.",
        [(lb, n.get("errors")) for lb, n in node_rows],
    )
    metric(
        "flowbroker_node_backouts_total",
        "counter",
        "Units of work backed out because of an exception that began unwinding at the node.",
        [(lb, n.get("backouts")) for lb, n in node_rows],
    )
    metric(
        "flowbroker_node_cpu_microseconds_total",
        "counter",
        "CPU time in the node and below it.",
        [(lb, n.get("cpu_us")) for lb, n in node_rows],
    )
    metric(
        "flowbroker_node_elapsed_microseconds_total",
        "counter",
        "Elapsed time in the node and below it.",
        [(lb, n.get("elapsed_us")) for lb, n in node_rows],
    )
    return "\n".join(lines) + "\n"


def trace_path(data: Path, broker: str, group: str, flow: str) -> Path:
    return data / "trace" / broker / group / f"{flow}.trace"


def read_trace(data: Path, broker: str, group: str, flow: str, limit: int = 1 << 20) -> str:
    """The last ``limit`` bytes of a flow's user trace."""
    path = trace_path(data, broker, group, flow)
    if path.parent.resolve().parent.parent != (data / "trace").resolve():
        raise ValueError("bad trace path")
    try:
        with open(path, "rb") as handle:
            size = handle.seek(0, 2)
            handle.seek(max(0, size - limit))
            return handle.read().decode("utf-8", "replace")
    except FileNotFoundError:
        return ""
