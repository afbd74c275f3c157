"""The step debugger as the configuration manager sees it: breakpoints, paused threads, commands.

Only a development group (``ExecutionGroup.development``) pauses; everything here refuses a
production group with a 409. Breakpoints are kept on the deployment and sent to its group with
the ``flowbroker.eg.debug`` control task; the group's worker reports each paused flow thread in
the ``debug_pauses`` table (:class:`flowbroker.worker.debug.RepositoryPauses`) and takes the
commands (edit, resume, step, abort) with the ``flowbroker.eg.debug_command`` task.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from flowbroker.repository.models import DebugPause, Deployment, ExecutionGroup
from flowbroker.runtime import message_view
from flowbroker.runtime.debugger import ACTIONS, connection_id
from flowbroker.services import audit, deploy
from flowbroker.services.errors import Conflict, Invalid, NotFound, problem

#: At most this many breakpoints per deployment.
MAX_BREAKPOINTS = 200


def esql_source(node: dict[str, Any] | None) -> str | None:
    """The ESQL a flow document's node runs, where an ESQL breakpoint can stop (its spec's
    ``esqlProperty`` names the property); None for a node that runs no ESQL."""
    from flowbroker_nodes import registry

    spec = registry.spec(str(node.get("type"))) if node is not None else None
    if node is None or spec is None or not spec.esql_property:
        return None
    return str((node.get("properties") or {}).get(spec.esql_property) or "")


def require_development(group: ExecutionGroup) -> None:
    if not group.development:
        raise Conflict(
            f"execution group {group.name!r} is a production group: its flows never pause; "
            "mark it as a development group to debug them",
            {"pointer": "/development"},
            code="production_group",
        )


def _running(deployment: Deployment) -> None:
    if deployment.status not in (*deploy.STARTED, "stopped"):
        raise Conflict(
            f"deployment {deployment.id} is {deployment.status}; breakpoints apply to a deployed flow",
            code="not_deployed",
        )


def flow_connections(document: dict[str, Any]) -> list[str]:
    """The connections of a flow document, named as breakpoints name them."""
    found = []
    for conn in document.get("connections") or []:
        src, dst = conn.get("from") or {}, conn.get("to") or {}
        found.append(
            connection_id(
                str(src.get("node")), str(src.get("terminal")), str(dst.get("node")), str(dst.get("terminal"))
            )
        )
    return found


def check_breakpoints(document: dict[str, Any], body: dict[str, Any]) -> dict[str, Any]:
    """The breakpoints ``body`` asks for, checked against the flow document; Invalid names each bad one."""
    problems = []
    known = set(flow_connections(document))
    connections = [str(c) for c in body.get("connections") or []]
    for index, conn in enumerate(connections):
        if conn not in known:
            problems.append(problem(f"/connections/{index}", f"the flow has no connection {conn}"))
    nodes = {str(n.get("id")): n for n in document.get("nodes") or []}
    esql = []
    for index, entry in enumerate(body.get("esql") or []):
        node_id, line = str(entry.get("node") or ""), entry.get("line")
        source = esql_source(nodes.get(node_id))
        if source is None:
            problems.append(problem(f"/esql/{index}/node", f"the flow has no ESQL node {node_id!r}"))
            continue
        count = len(source.splitlines())
        if not isinstance(line, int) or isinstance(line, bool) or not 1 <= line <= count:
            problems.append(
                problem(f"/esql/{index}/line", f"node {node_id}'s ESQL has lines 1 to {count}, not {line!r}")
            )
            continue
        esql.append({"node": node_id, "line": line})
    if len(connections) + len(esql) > MAX_BREAKPOINTS:
        problems.append(problem("", f"at most {MAX_BREAKPOINTS} breakpoints per deployment"))
    if problems:
        raise Invalid(f"invalid breakpoints: {problems[0]['pointer']}: {problems[0]['message']}", problems)
    lines = sorted({(e["node"], e["line"]) for e in esql})
    return {
        "connections": sorted(set(connections)),
        "esql": [{"node": n, "line": ln} for n, ln in lines],
    }


def carried(previous: dict[str, Any], document: dict[str, Any]) -> dict[str, Any]:
    """The breakpoints of a flow's previous deployment that its new version still has (a redeploy
    from the designer keeps them; those on a connection or ESQL line that is gone are dropped)."""
    known = set(flow_connections(document))
    nodes = {str(n.get("id")): n for n in document.get("nodes") or []}
    esql = []
    for entry in previous.get("esql") or []:
        source = esql_source(nodes.get(str(entry.get("node"))))
        if source is None:
            continue
        count = len(source.splitlines())
        if 1 <= int(entry.get("line") or 0) <= count:
            esql.append({"node": str(entry["node"]), "line": int(entry["line"])})
    return {"connections": [c for c in previous.get("connections") or [] if c in known], "esql": esql}


def previous_breakpoints(
    session: Session, flow_id: int, group_id: int, document: dict[str, Any]
) -> dict[str, Any]:
    """What :func:`carried` keeps of the newest deployment of the flow to the group that had breakpoints."""
    from flowbroker.repository.models import FlowVersion

    rows = session.scalars(
        select(Deployment)
        .join(FlowVersion, Deployment.flow_version_id == FlowVersion.id)
        .where(FlowVersion.flow_id == flow_id, Deployment.group_id == group_id)
        .order_by(Deployment.id.desc())
        .limit(5)
    )
    for row in rows:
        if row.breakpoints and (row.breakpoints.get("connections") or row.breakpoints.get("esql")):
            kept = carried(dict(row.breakpoints), document)
            return kept if kept["connections"] or kept["esql"] else {}
    return {}


def breakpoints(session: Session, deployment_id: int) -> dict[str, Any]:
    deployment = deploy.get(session, deployment_id)
    return {
        "connections": list((deployment.breakpoints or {}).get("connections") or []),
        "esql": list((deployment.breakpoints or {}).get("esql") or []),
        "development": bool(deployment.group.development),
        # the group's worker has set them in the running flow
        "armed": bool((deployment.breakpoints or {}).get("armed")) and bool(deployment.group.development),
    }


def set_breakpoints(
    session: Session, actor: str, deployment_id: int, body: dict[str, Any], data: Path | None = None
) -> dict[str, Any]:
    """Replace a deployment's breakpoints and send them to its group (409 on a production group)."""
    deployment = deploy.get(session, deployment_id)
    require_development(deployment.group)
    _running(deployment)
    wanted = check_breakpoints(dict(deployment.flow_version.document), body)
    deployment.breakpoints = wanted
    audit.record(session, actor, "deployment.breakpoints", f"deployment:{deployment.id}", wanted)
    session.commit()
    deploy.send_control(deployment.broker.name, deployment.group.name, "debug", deployment.id, data)
    return breakpoints(session, deployment_id)


def describe_pause(row: DebugPause) -> dict[str, Any]:
    return {
        "id": row.id,
        "deploymentId": row.deployment_id,
        "flow": row.flow,
        "thread": row.thread,
        "kind": row.kind,
        "connection": row.connection,
        "node": row.node,
        "line": row.line,
        "variables": list(row.variables or []),
        "revision": row.revision,
        "pausedAt": row.paused_at,
        "resumesAt": row.resumes_at,
        "message": dict(row.message or {}),
    }


def record_pause(session: Session, deployment_id: int, pause: Any, paused_at: Any, resumes_at: Any) -> None:
    """Write (or rewrite, after an edit) one paused flow thread as its group reports it."""
    view = pause.view()
    row = session.get(DebugPause, pause.id)
    if row is None:
        row = DebugPause(id=pause.id, deployment_id=deployment_id)
        session.add(row)
    row.flow = pause.flow
    row.thread = pause.thread
    row.kind = pause.kind
    row.connection = pause.connection
    row.node = pause.node
    row.line = pause.line
    row.message = view["message"]
    row.variables = view["variables"]
    row.revision = pause.revision
    row.paused_at = paused_at
    row.resumes_at = resumes_at


def drop_pause(session: Session, pause_id: str) -> None:
    """Forget a pause whose thread has resumed."""
    row = session.get(DebugPause, pause_id)
    if row is not None:
        session.delete(row)


def forget_pauses(session: Session, deployment_ids: list[int]) -> None:
    """Forget the pauses of these deployments (a group process that ended took its threads with it)."""
    from sqlalchemy import delete

    if deployment_ids:
        session.execute(delete(DebugPause).where(DebugPause.deployment_id.in_(deployment_ids)))


def pauses(session: Session, deployment_id: int) -> list[dict[str, Any]]:
    deploy.get(session, deployment_id)
    rows = session.scalars(
        select(DebugPause).where(DebugPause.deployment_id == deployment_id).order_by(DebugPause.paused_at)
    )
    return [describe_pause(row) for row in rows]


def _pause(session: Session, deployment_id: int, pause_id: str) -> DebugPause:
    row = session.get(DebugPause, pause_id)
    if row is None or row.deployment_id != deployment_id:
        raise NotFound(f"deployment {deployment_id} has no paused message {pause_id} (it may have resumed)")
    return row


def check_edits(message: dict[str, Any], edits: list[dict[str, Any]]) -> None:
    """Refuse edits that name no field of the paused message's view or give a value of the wrong type."""
    trees = {t.get("name"): t for t in message.get("trees") or []}
    problems = []
    for index, edit in enumerate(edits):
        tree = trees.get(edit.get("tree"))
        if tree is None:
            problems.append(problem(f"/edits/{index}/tree", f"the message has no tree {edit.get('tree')!r}"))
            continue
        node: dict[str, Any] | None = tree
        for position in edit.get("ref") or []:
            kids = (node or {}).get("children") or []
            node = kids[position] if isinstance(position, int) and 0 <= position < len(kids) else None
        if node is None or node is tree:
            problems.append(
                problem(f"/edits/{index}/ref", f"{edit.get('tree')} has no field at {edit.get('ref')}")
            )
            continue
        try:
            value = edit.get("value")
            message_view.parse_value(None if value is None else str(value), str(edit.get("type") or ""))
        except ValueError as exc:
            problems.append(problem(f"/edits/{index}/value", str(exc)))
    if problems:
        raise Invalid(f"invalid edit: {problems[0]['pointer']}: {problems[0]['message']}", problems)


def command(
    session: Session,
    actor: str,
    deployment_id: int,
    pause_id: str,
    action: str,
    edits: list[dict[str, Any]],
    data: Path | None = None,
) -> dict[str, Any]:
    """Send a paused thread its edits and/or its command (resume, step, abort)."""
    deployment = deploy.get(session, deployment_id)
    require_development(deployment.group)
    if action and action not in ACTIONS:
        raise Invalid(f"action must be one of {', '.join(ACTIONS)}", [problem("/action", f"not {action!r}")])
    if not action and not edits:
        raise Invalid("give an action, edits or both", [problem("", "nothing to do")])
    row = _pause(session, deployment_id, pause_id)
    check_edits(dict(row.message or {}), edits)
    audit.record(
        session,
        actor,
        f"debug.{action or 'edit'}",
        f"deployment:{deployment.id}",
        {"pause": pause_id, "edits": [{k: e.get(k) for k in ("tree", "ref", "type")} for e in edits]},
    )
    session.commit()
    deploy.send_control(
        deployment.broker.name,
        deployment.group.name,
        "debug_command",
        deployment.id,
        data,
        pause_id,
        action,
        edits,
    )
    return describe_pause(row)


def sync_group(group: ExecutionGroup, data: Path | None = None) -> None:
    """Tell a group's worker its development flag changed: it re-reads it and its breakpoints."""
    deploy.send_control(group.broker.name, group.name, "debug", 0, data)
