"""Execution groups as running things: process state, stop and start, and one flow's start and stop.

Stopping an execution group is stopping an integration server in ACE: its process ends, so
every flow in it stops with it, after the messages in progress. Each flow keeps its own started
or stopped state, and the group resumes each flow in that state when it is started again.
Deploying to, or starting a flow in, a stopped group is refused: nothing would run it.

What an operator asked for (``desired_state``) is kept in the repository; the supervisor of
`flowbroker up` makes the processes of its local broker's groups follow it (see
:func:`supervised_groups`), and a worker running elsewhere is told to stop or start its flows
(the ``flowbroker.eg.follow_group`` control task). The supervisor reports what the processes
do in its state file, from which
:func:`process_state` tells the truth about each group: running, starting, stopping, stopped or
failed, with its pid. A group no supervisor here runs (a worker on another host) is judged by
its liveness file, or by the report it keeps fresh in the repository (:mod:`flowbroker.services.reports`),
which also names the host it runs on.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from flowbroker.repository.models import Broker, Deployment, ExecutionGroup
from flowbroker.services import audit, brokers, deploy, reports
from flowbroker.services.errors import Conflict

#: Supervised execution groups are named ``execution-group:<broker>/<group>`` in /api/health.
COMPONENT_PREFIX = "execution-group:"
#: A liveness file touched within this many seconds means the worker is up and consuming.
LIVENESS_FRESH = 10.0


def component_name(broker: str, group: str) -> str:
    return f"{COMPONENT_PREFIX}{broker}/{group}"


def liveness_path(data: Path, broker: str, group: str) -> Path:
    from flowbroker.worker.bootsteps import liveness_path as path

    return path(data, broker, group)


def supervisor_table(state_file: str) -> dict[str, dict[str, Any]] | None:
    """The components of the running `flowbroker up` by name; None when no supervisor runs here."""
    if not state_file:
        return None
    try:
        data = json.loads(Path(state_file).read_text())
        pid = int(data.get("supervisor") or 0)
    except (OSError, ValueError, TypeError, AttributeError):
        return None
    if pid <= 0 or not _alive(pid):
        return None
    return {
        str(c.get("name")): c for c in data.get("components", []) if isinstance(c, dict) and c.get("name")
    }


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _liveness(data: Path, broker: str, group: str) -> int | None:
    """The pid in a fresh liveness file, else None."""
    path = liveness_path(data, broker, group)
    try:
        if time.time() - path.stat().st_mtime > LIVENESS_FRESH:
            return None
        return int(path.read_text().strip() or 0) or None
    except (OSError, ValueError):
        return None


def process_state(
    data: Path,
    table: dict[str, dict[str, Any]] | None,
    local_broker: str,
    broker: str,
    group: str,
    desired: str,
    report: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """What the group's process is doing: state, pid, detail, restarts, since, and the host it runs on.

    ``report`` is the group's report in the repository (:func:`flowbroker.services.reports.describe`).
    """
    found = _process_state(data, table, local_broker, broker, group, desired, report)
    found["host"] = report["host"] if report else None
    return found


def _process_state(
    data: Path,
    table: dict[str, dict[str, Any]] | None,
    local_broker: str,
    broker: str,
    group: str,
    desired: str,
    report: dict[str, Any] | None,
) -> dict[str, Any]:
    component = (table or {}).get(component_name(broker, group))
    live = _liveness(data, broker, group)
    if component is not None:
        state = str(component.get("state") or "unknown")
        pid = component.get("pid")
        if state == "running":
            state = "running" if live is not None and live == pid else "starting"
        elif state in ("restarting", "failed"):
            state = "failed"
        return {
            "state": state,
            "pid": pid,
            "detail": str(component.get("detail") or ""),
            "restarts": int(component.get("restarts") or 0),
            "since": component.get("since"),
        }
    if table is not None and broker == local_broker:
        # supervised here, but the supervisor has not taken the change in yet
        state = "stopped" if desired == "stopped" else "starting"
        return {"state": state, "pid": None, "detail": "", "restarts": 0, "since": None}
    if live is not None:
        return {"state": "running", "pid": live, "detail": "", "restarts": 0, "since": None}
    if report is not None:
        silent = time.time() - float(report["alive"])
        if silent <= LIVENESS_FRESH:
            return {
                "state": "running",
                "pid": report["pid"],
                "detail": "",
                "restarts": 0,
                "since": report["started"],
            }
        detail = (
            f"the worker on {report['host']} last reported {silent:.0f}s ago" if desired == "running" else ""
        )
        return {
            "state": "stopped" if desired == "stopped" else "unknown",
            "pid": None,
            "detail": detail,
            "restarts": 0,
            "since": None,
        }
    detail = "no worker has reported for this group" if desired == "running" else ""
    return {
        "state": "stopped" if desired == "stopped" else "unknown",
        "pid": None,
        "detail": detail,
        "restarts": 0,
        "since": None,
    }


def describe_group(
    group: ExecutionGroup, data: Path, table: dict[str, dict[str, Any]] | None, local_broker: str
) -> dict[str, Any]:
    return {
        "id": group.id,
        "broker_id": group.broker_id,
        "name": group.name,
        "description": group.description,
        "created_at": group.created_at,
        "desired_state": group.desired_state,
        "development": bool(group.development),
        "code_nodes": bool(group.code_nodes),
        "http_port": group.http_port,
        **process_state(
            data,
            table,
            local_broker,
            group.broker.name,
            group.name,
            group.desired_state,
            reports.describe(group.report) if group.report is not None else None,
        ),
    }


def describe_broker(
    broker: Broker, data: Path, table: dict[str, dict[str, Any]] | None, local_broker: str
) -> dict[str, Any]:
    return {
        "id": broker.id,
        "name": broker.name,
        "description": broker.description,
        "qm_url": broker.qm_url,
        "created_at": broker.created_at,
        "updated_at": broker.updated_at,
        "local": broker.name == local_broker,
        "groups": [describe_group(g, data, table, local_broker) for g in broker.groups],
    }


# -- stop and start --------------------------------------------------------------------------


def set_desired(
    session: Session, actor: str, group_id: int, desired: str, data: Path | None = None, *, send: bool = True
) -> ExecutionGroup:
    """Start (``running``) or stop (``stopped``) a group's work: every flow in it.

    The supervisor of `flowbroker up` starts or ends the process of a local group; the worker
    itself is also told (``flowbroker.eg.follow_group``), so a group whose worker runs
    elsewhere stops and starts its flows too.
    """
    group = session.get(ExecutionGroup, group_id)
    if group is None:
        from flowbroker.services.errors import NotFound

        raise NotFound(f"execution group {group_id} not found")
    if group.desired_state != desired:
        group.desired_state = desired
        action = "group.start" if desired == "running" else "group.stop"
        audit.record(session, actor, action, f"group:{group.broker.name}/{group.name}", {"id": group.id})
    session.commit()
    if send:
        from flowbroker.worker.app import send_control_task

        send_control_task(
            "flowbroker.eg.follow_group", deploy.control_queue(group.broker.name, group.name), data=data
        )
    return group


def require_running(group: ExecutionGroup) -> None:
    if group.desired_state != "running":
        raise Conflict(
            f"execution group {group.broker.name}/{group.name} is stopped; start it first",
            {"group": group.name},
            code="group_stopped",
        )


def deploy_to(session: Session, actor: str, *, broker: str, group: str, **request: Any) -> Deployment:
    """Deploy to a group that is not stopped (see :func:`flowbroker.services.deploy.create`)."""
    require_running(brokers.group_by_name(session, broker, group))
    return deploy.create(session, actor, broker=broker, group=group, **request)


def undeploy(session: Session, actor: str, deployment_id: int, data: Path | None = None) -> Deployment:
    """Undeploy; in a stopped group at once, since its process is not there to be told."""
    row = deploy.get(session, deployment_id)
    if row.group.desired_state == "running":
        return deploy.undeploy(session, actor, deployment_id, data=data)
    row = deploy.undeploy(session, actor, deployment_id, send=False)
    if row.status == "undeploying":
        deploy.report(session, deployment_id, "undeployed")
    return row


def control_flow(
    session: Session, actor: str, deployment_id: int, action: str, data: Path | None = None
) -> Deployment:
    """Start (``start``) or stop (``stop``) one deployed flow; its group reports the new status."""
    if action not in ("start", "stop"):
        raise ValueError(action)
    row = deploy.get(session, deployment_id)
    require_running(row.group)
    if row.status not in (*deploy.STARTED, "stopped"):
        raise Conflict(
            f"deployment {deployment_id} is {row.status}; only a running or stopped flow can be "
            f"{'started' if action == 'start' else 'stopped'}",
            {"status": row.status},
            code="not_deployed",
        )
    audit.record(
        session,
        actor,
        f"deployment.{action}",
        f"deployment:{row.id}",
        {"flow": row.flow_version.flow.name, "group": f"{row.broker.name}/{row.group.name}"},
    )
    session.commit()
    deploy.send_control(row.broker.name, row.group.name, action, row.id, data)
    return row


# -- what the supervisor of `flowbroker up` reads ---------------------------------------------


def supervised_groups(session: Session, broker: str) -> dict[str, str]:
    """The execution groups of ``broker`` by name, each with its desired state."""
    rows = session.execute(
        select(ExecutionGroup.name, ExecutionGroup.desired_state)
        .join(Broker, ExecutionGroup.broker_id == Broker.id)
        .where(Broker.name == broker)
    ).all()
    return {name: desired for name, desired in rows}
