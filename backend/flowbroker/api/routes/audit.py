"""Queries of the audit log."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from fastapi import APIRouter, Query

from flowbroker.api.deps import DbSession, Reader
from flowbroker.api.errors import AUTHENTICATED, responses
from flowbroker.api.schemas import MAX_ID, AuditOut
from flowbroker.services import audit

router = APIRouter(prefix="/api/audit", tags=["audit"], responses=responses(*AUTHENTICATED))


@router.get("", response_model=list[AuditOut])
def query_audit(
    _: Reader,
    session: DbSession,
    actor: Annotated[str | None, Query(max_length=64)] = None,
    action: Annotated[str | None, Query(max_length=64)] = None,
    target: Annotated[
        str | None, Query(max_length=300, description="prefix, e.g. flow: or flow:Orders")
    ] = None,
    since: datetime | None = None,
    until: datetime | None = None,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
    offset: Annotated[int, Query(ge=0, le=MAX_ID)] = 0,
) -> Any:
    """Changes, newest first, filtered by who, what and when."""
    return audit.query(
        session,
        actor=actor,
        action=action,
        target=target,
        since=since,
        until=until,
        limit=limit,
        offset=offset,
    )
