"""The audit log: every change to the configuration, with who made it and when."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from flowbroker.repository.models import AuditEntry


def record(
    session: Session, actor: str, action: str, target: str, detail: dict[str, Any] | None = None
) -> AuditEntry:
    """Add an entry to the caller's unit of work; it commits or rolls back with the change it describes."""
    entry = AuditEntry(actor=actor, action=action, target=target, detail=detail or {})
    session.add(entry)
    return entry


def query(
    session: Session,
    *,
    actor: str | None = None,
    action: str | None = None,
    target: str | None = None,
    since: datetime | None = None,
    until: datetime | None = None,
    limit: int = 100,
    offset: int = 0,
) -> list[AuditEntry]:
    """Entries newest first; ``target`` matches a prefix so ``flow:`` finds every flow change."""
    stmt = select(AuditEntry)
    if actor:
        stmt = stmt.where(AuditEntry.actor == actor)
    if action:
        stmt = stmt.where(AuditEntry.action == action)
    if target:
        escaped = target.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        stmt = stmt.where(AuditEntry.target.like(escaped + "%", escape="\\"))
    if since is not None:
        stmt = stmt.where(AuditEntry.at >= since)
    if until is not None:
        stmt = stmt.where(AuditEntry.at < until)
    stmt = stmt.order_by(AuditEntry.id.desc()).limit(limit).offset(offset)
    return list(session.scalars(stmt))
