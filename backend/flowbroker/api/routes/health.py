"""GET /api/health: the configuration manager, its database and every supervised component."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

from fastapi import APIRouter, Response
from sqlalchemy import select, text

from flowbroker.api.deps import DbSession, SettingsDep
from flowbroker.api.schemas import HealthOut
from flowbroker.repository.models import User

router = APIRouter(prefix="/api", tags=["health"])
STARTED = time.time()


def supervised_components(state_file: str) -> list[dict[str, Any]]:
    """The component table `flowbroker up` keeps in its state file; empty when run unsupervised."""
    if not state_file:
        return []
    try:
        data = json.loads(Path(state_file).read_text())
    except (OSError, ValueError):
        return [{"name": "supervisor", "state": "unknown", "detail": "state file unreadable"}]
    components = data.get("components", [])
    return [c for c in components if isinstance(c, dict)]


@router.get("/health", response_model=HealthOut)
def health(session: DbSession, settings: SettingsDep, response: Response) -> Any:
    """Whether the system is up; needs no token.

    503 with status ``starting`` until the repository holds its first user (`flowbroker up`
    creates the admin once the API answers): "ok" means a login can succeed.
    """
    starting = False
    try:
        session.execute(text("SELECT 1"))
        database = "up"
        starting = session.scalars(select(User.id).limit(1)).first() is None
    except Exception as exc:
        database = f"down: {type(exc).__name__}"
    components = supervised_components(settings.supervisor_state)
    own: dict[str, Any] = {
        "name": "configuration-manager",
        "state": "running",
        "pid": os.getpid(),
        "since": STARTED,
    }
    for component in components:
        if component.get("name") == own["name"]:
            # The supervisor knows the restarts; this process knows it is answering.
            own = {**component, **own}
    merged = [own] + [c for c in components if c.get("name") != own["name"]]
    # A component kept stopped on purpose (a stopped execution group) does not degrade the system.
    ok = database == "up" and all(
        c.get("state") == "running" for c in merged if c.get("desired", "running") == "running"
    )
    if starting:
        response.status_code = 503
    return {
        "status": "starting" if starting else "ok" if ok else "degraded",
        "version": "0.1.0",
        "database": database,
        "components": merged,
    }
