"""Execution groups' own reports in the repository: which host and process runs each, alive when, with what statistics.

A worker may run on any host that reaches the repository; the configuration manager, on
another host, reads here what the worker would otherwise only have written to its local data
directory (statistics files, liveness file). A worker registers when it starts; a newer
registration of the same group replaces the older, whose later updates then change nothing.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import select, update
from sqlalchemy.orm import Session

from flowbroker.repository.models import Broker, ExecutionGroup, GroupReport, utcnow


def register(session: Session, group_id: int, host: str, pid: int, started: float) -> None:
    """Record that ``host``'s process ``pid``, started at ``started`` (epoch seconds), runs the group."""
    row = session.get(GroupReport, group_id)
    if row is None:
        row = GroupReport(group_id=group_id)
        session.add(row)
    row.host = host[:255]
    row.pid = pid
    row.started_at = datetime.fromtimestamp(started, UTC)
    row.alive_at = utcnow()
    row.statistics = None


def touch(
    session: Session, group_id: int, host: str, pid: int, statistics: dict[str, Any] | None = None
) -> bool:
    """The registered process is alive (and, with ``statistics``, has these); False when another replaced it."""
    values: dict[str, Any] = {"alive_at": utcnow()}
    if statistics is not None:
        values["statistics"] = statistics
    result = session.execute(
        update(GroupReport)
        .where(GroupReport.group_id == group_id, GroupReport.host == host, GroupReport.pid == pid)
        .values(**values)
    )
    return bool(getattr(result, "rowcount", 0))


def by_group(session: Session) -> dict[tuple[str, str], dict[str, Any]]:
    """Every report by (broker, group): host, pid, started and alive (epoch seconds), statistics."""
    rows = session.execute(
        select(Broker.name, ExecutionGroup.name, GroupReport)
        .join(ExecutionGroup, GroupReport.group_id == ExecutionGroup.id)
        .join(Broker, ExecutionGroup.broker_id == Broker.id)
    ).all()
    return {(broker, group): describe(report) for broker, group, report in rows}


def describe(report: GroupReport) -> dict[str, Any]:
    return {
        "host": report.host,
        "pid": report.pid,
        "started": report.started_at.timestamp(),
        "alive": report.alive_at.timestamp(),
        "statistics": dict(report.statistics) if report.statistics else None,
    }
