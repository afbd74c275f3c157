"""Deployments: record, compile-check and send a flow to an execution group, and follow its status.

The configuration manager compiles the flow first (so ESQL and wiring problems come back with
node, property, line and column before anything is sent), records a :class:`Deployment`, and
sends a control task to the group's queue ``eg.<broker>.<group>``. The worker reports back by
updating the same row. A deployment no worker picked up within :func:`pickup_timeout` seconds is
failed with that reason, so nobody waits on an unreachable group.
"""

from __future__ import annotations

import datetime
import os
from pathlib import Path
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from flowbroker.repository.models import Broker, Deployment, ExecutionGroup, Flow, FlowVersion
from flowbroker.runtime.debugger import Breakpoints
from flowbroker.services import audit, brokers
from flowbroker.services import dependencies as dependency_service
from flowbroker.services import flows as flow_service
from flowbroker.services.errors import Conflict, Invalid, NotFound, problem


def pickup_timeout() -> float:
    """Seconds a deployment may stay pending before it is failed as unreachable."""
    try:
        return float(os.environ.get("FLOWBROKER_DEPLOY_TIMEOUT", "20"))
    except ValueError:
        return 20.0


#: Statuses: pending → compiling → running | failed; stopped; undeploying → undeployed; replaced.
#: A running flow whose input queue does not exist is ``waiting`` (for it) until it is defined.
ACTIVE = ("pending", "compiling", "running", "waiting", "stopped")
#: A flow the group has loaded and started: it may be stopped, traced, started again.
STARTED = ("running", "waiting")


def control_queue(broker: str, group: str) -> str:
    return f"eg.{broker}.{group}"


def apply_overrides(
    document: dict[str, Any], overrides: dict[str, Any]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The document with ``{"nodeId.property": value}`` overrides applied, and the EXTERNAL values.

    ``overrides["externals"]`` holds EXTERNAL-variable values: ``{"VAR": v}`` for every node or
    ``{"nodeId": {"VAR": v}}`` for one.
    """
    doc = {**document, "nodes": [dict(n) for n in document.get("nodes") or []]}
    by_id = {n.get("id"): n for n in doc["nodes"]}
    externals: dict[str, Any] = {}
    found: list[dict[str, str]] = []
    for key, value in (overrides or {}).items():
        if key == "externals":
            if not isinstance(value, dict):
                found.append(problem("/overrides/externals", "must be an object"))
            else:
                externals = dict(value)
            continue
        node_id, _, prop = key.partition(".")
        node = by_id.get(node_id)
        if node is None or not prop:
            found.append(problem(f"/overrides/{key}", "must be 'nodeId.property' naming a node of the flow"))
            continue
        node["properties"] = {**(node.get("properties") or {}), prop: value}
    if found:
        raise Invalid(f"invalid overrides: {found[0]['pointer']}: {found[0]['message']}", found)
    return doc, externals


def check(
    document: dict[str, Any],
    overrides: dict[str, Any] | None = None,
    dependencies: dict[str, Any] | None = None,
) -> list[dict[str, Any]]:
    """Every problem that would stop the flow from running (empty: it compiles).

    With ``dependencies`` (:func:`flowbroker.services.dependencies.resolve`), subflows named by
    reference compile from them and the message sets the nodes name must be among them; without,
    only inline subflows can be compiled and message sets are not checked.
    """
    return _compile(document, overrides, dependencies)[1]


def _compile(
    document: dict[str, Any],
    overrides: dict[str, Any] | None,
    dependencies: dict[str, Any] | None,
) -> tuple[Any, list[dict[str, Any]]]:
    """The compiled flow (None when it does not compile) and the problems of :func:`check`."""
    from flowbroker.runtime.compiler import FlowCompileError, compile_flow
    from flowbroker.runtime.dependencies import subflow_resolver

    doc, externals = apply_overrides(document, overrides or {})
    try:
        compiled = compile_flow(doc, externals=externals, resolve_subflow=subflow_resolver(dependencies))
    except FlowCompileError as exc:
        return None, [p.to_json() for p in exc.problems]
    if dependencies is None:
        return compiled, []
    return compiled, dependency_service.message_set_problems(compiled.nodes, dependencies)


def _code_nodes(compiled: Any) -> list[Any]:
    from flowbroker_nodes.python_compute import is_code_node

    return [] if compiled is None else [node for node in compiled.nodes.values() if is_code_node(node.SPEC)]


def refuse_code_nodes(compiled: Any, group: ExecutionGroup) -> None:
    """Refuse (409 ``code_nodes_disabled``) a flow with code nodes for a group not enabled for them."""
    if group.code_nodes:
        return
    found = _code_nodes(compiled)
    if not found:
        return
    where = f"{group.broker.name}/{group.name}"
    names = ", ".join(f"{node.SPEC.type} node {node.name!r}" for node in found)
    raise Conflict(
        f"execution group {where} does not run code nodes, and the flow has {names}; "
        "an administrator can allow code nodes in the group (codeNodes)",
        {
            "group": where,
            "nodes": [{"id": node.id, "name": node.name, "type": node.SPEC.type} for node in found],
        },
        code="code_nodes_disabled",
    )


def _resolve_version(
    session: Session, flow_id: int | None, flow_name: str | None, version: int | None
) -> FlowVersion:
    if flow_id is not None:
        flow = flow_service.get(session, flow_id)
    elif flow_name:
        flow = flow_service.get_by_name(session, flow_name)
    else:
        raise Invalid("a deployment names a flow: flow_id or flow_name", [problem("/flow_id", "required")])
    return flow_service.version(session, flow, version)


def create(
    session: Session,
    actor: str,
    *,
    flow_id: int | None = None,
    flow_name: str | None = None,
    version: int | None = None,
    document: dict[str, Any] | None = None,
    broker: str = "default",
    group: str = "default",
    additional_instances: int | None = None,
    overrides: dict[str, Any] | None = None,
    send: bool = True,
    data: Path | None = None,
    define_queues: bool = False,
) -> Deployment:
    """Record a deployment, compile-check it and send it to its group; returns the row (202 semantics).

    ``define_queues``: the group defines the flow's input and output queues its queue manager
    does not have before the flow starts (otherwise a missing input queue leaves it waiting).
    """
    from flowbroker.services import debugger as debugger_service

    target = brokers.group_by_name(session, broker, group)
    if document is not None:
        if isinstance(document, dict):
            apply_overrides(document, overrides or {})  # refuse bad overrides before saving anything
        fv = _save_document(session, actor, document)
    else:
        fv = _resolve_version(session, flow_id, flow_name, version)
    instances = additional_instances
    if instances is None:
        instances = int((fv.document.get("properties") or {}).get("additionalInstances", 0) or 0)
    if instances < 0 or instances > 256:
        raise Invalid(
            "additional instances must be 0..256", [problem("/additional_instances", "must be 0..256")]
        )
    needs = dependency_service.resolve(session, fv.document)
    compiled, problems = _compile(fv.document, overrides, needs)
    refuse_code_nodes(compiled, target)
    deployment = Deployment(
        flow_version_id=fv.id,
        broker_id=target.broker_id,
        group_id=target.id,
        additional_instances=instances,
        overrides=dict(overrides or {}),
        status="compiling",
        diagnostics=[],
        dependencies=needs,
        # a redeploy to a development group keeps the step debugger's breakpoints the new version still has
        breakpoints=debugger_service.previous_breakpoints(session, fv.flow_id, target.id, fv.document)
        if target.development
        else {},
    )
    session.add(deployment)
    session.flush()
    if problems:
        deployment.status = "failed"
        deployment.diagnostics = problems
    else:
        deployment.status = "pending"
    audit.record(
        session,
        actor,
        "deployment.create",
        f"deployment:{deployment.id}",
        {
            "flow": fv.flow.name,
            "version": fv.version,
            "group": f"{broker}/{group}",
            "status": deployment.status,
            **({"define_queues": True} if define_queues else {}),
        },
    )
    session.commit()
    if send and deployment.status == "pending":
        send_control(broker, group, "deploy", deployment.id, data, *([True] if define_queues else []))
    return deployment


def _save_document(session: Session, actor: str, document: dict[str, Any]) -> FlowVersion:
    """Store a flow document given inline (``flowbroker deploy FILE``) as a new version of its flow."""
    if isinstance(document, dict):
        # deploying a file makes it the flow's next version, whatever version it was written from
        document = {k: v for k, v in document.items() if k != "version"}
    name = document.get("name") if isinstance(document, dict) else None
    existing = (
        session.scalars(select(Flow).where(Flow.name == name)).first() if isinstance(name, str) else None
    )
    if existing is None:
        _, row = flow_service.create(session, actor, document)
    else:
        _, row = flow_service.save(session, actor, existing.id, document)
    return row


def get(session: Session, deployment_id: int) -> Deployment:
    deployment = session.get(Deployment, deployment_id)
    if deployment is None:
        raise NotFound(f"deployment {deployment_id} not found")
    _expire_if_unclaimed(session, deployment)
    return deployment


def find(session: Session, deployment_id: int) -> Deployment | None:
    """The deployment as the worker reads it (no expiry of unclaimed ones); None when it is gone."""
    return session.get(Deployment, deployment_id)


def status(session: Session, deployment_id: int) -> str:
    """The deployment's status; "undeployed" for one that no longer exists."""
    deployment = session.get(Deployment, deployment_id)
    return deployment.status if deployment is not None else "undeployed"


def breakpoints(session: Session, deployment_id: int) -> dict[str, Any]:
    """The step debugger's breakpoints kept on the deployment, as the worker reads them ({} when it
    has none or is gone)."""
    deployment = session.get(Deployment, deployment_id)
    return dict(deployment.breakpoints or {}) if deployment is not None else {}


def mark_armed(session: Session, deployment_id: int, armed: Breakpoints) -> None:
    """The worker set ``armed`` in the deployment's running flow: note it on the deployment, unless
    other breakpoints were asked for since."""
    deployment = session.get(Deployment, deployment_id, with_for_update=True)
    if deployment is None:
        return
    current = dict(deployment.breakpoints or {})
    if Breakpoints.from_json(current) == armed and not current.get("armed"):
        deployment.breakpoints = {**current, "armed": True}


def begin_compiling(deployment: Deployment) -> None:
    """The worker took up a new (pending) deployment. One resumed after a restart keeps its status
    while it reloads, so a flow already moving messages is never reported as still compiling."""
    if deployment.status == "pending":
        deployment.status = "compiling"


def _expire_if_unclaimed(session: Session, deployment: Deployment) -> None:
    if deployment.status not in ("pending", "undeploying"):
        return
    updated = deployment.updated_at
    if updated.tzinfo is None:
        updated = updated.replace(tzinfo=datetime.UTC)
    age = (datetime.datetime.now(datetime.UTC) - updated).total_seconds()
    timeout = pickup_timeout()
    if age > timeout:
        group = f"{deployment.broker.name}/{deployment.group.name}"
        deployment.diagnostics = [
            {
                "node": "",
                "property": "",
                "line": 0,
                "column": 0,
                "pointer": "",
                "message": f"execution group {group} did not respond within {timeout:.0f}s: "
                "is its worker running?",
            }
        ]
        deployment.status = "failed"
        session.commit()


def undeploy(
    session: Session, actor: str, deployment_id: int, *, send: bool = True, data: Path | None = None
) -> Deployment:
    deployment = get(session, deployment_id)
    if deployment.status in ("undeployed", "replaced", "failed"):
        deployment.status = "undeployed"
        session.commit()
        return deployment
    deployment.status = "undeploying"
    audit.record(session, actor, "deployment.delete", f"deployment:{deployment.id}", {})
    session.commit()
    if send:
        send_control(deployment.broker.name, deployment.group.name, "undeploy", deployment.id, data)
    return deployment


def code_node_flows(session: Session, group_id: int) -> list[str]:
    """The names of the flows deployed to the group (and not failed) that hold code nodes."""
    return [
        row.flow_version.flow.name
        for row in group_flows(session, group_id)
        if row.status in ACTIVE
        and _code_nodes(_compile(row.flow_version.document, row.overrides, row.dependencies)[0])
    ]


def group_flows(session: Session, group_id: int) -> list[Deployment]:
    """The group's current deployments (one per flow: the newest that is not undeployed or replaced)."""
    rows = session.scalars(
        select(Deployment)
        .where(Deployment.group_id == group_id, Deployment.status.in_((*ACTIVE, "failed", "undeploying")))
        .order_by(Deployment.id.desc())
    ).all()
    seen: set[str] = set()
    current = []
    for row in rows:
        _expire_if_unclaimed(session, row)
        name = row.flow_version.flow.name
        if name not in seen:
            seen.add(name)
            current.append(row)
    return current


def group_control(
    session: Session, actor: str, group_id: int, action: str, data: Path | None = None
) -> list[Deployment]:
    """Start or stop every flow of a group (``action`` is ``start`` or ``stop``)."""
    group = session.get(ExecutionGroup, group_id)
    if group is None:
        raise NotFound(f"execution group {group_id} not found")
    deployments = [d for d in group_flows(session, group_id) if d.status in (*STARTED, "stopped")]
    for deployment in deployments:
        send_control(group.broker.name, group.name, action, deployment.id, data)
    audit.record(session, actor, f"group.{action}", f"group:{group.broker.name}/{group.name}", {})
    session.commit()
    return deployments


# -- what the worker calls -------------------------------------------------------------------


def to_resume(session: Session, broker: str, group: str) -> list[Deployment]:
    """The deployments a (re)started worker of ``broker/group`` must run again."""
    target = brokers.group_by_name(session, broker, group)
    return [d for d in group_flows(session, target.id) if d.status in (*STARTED, "pending", "stopped")]


def asked_to_run(session: Session, deployments: dict[int, str]) -> dict[int, bool]:
    """Whether each deployment (id → reported status) should run, as the operator last asked.

    A start or stop is sent to the replicas connected at that moment; its audit entry is the
    record a replica that missed it reads: the newest ``deployment.start``/``deployment.stop``
    entry of the deployment decides, else its reported status.
    """
    from flowbroker.repository.models import AuditEntry

    wanted = {i: status != "stopped" for i, status in deployments.items()}
    if not wanted:
        return wanted
    targets = {f"deployment:{i}": i for i in wanted}
    rows = session.execute(
        select(AuditEntry.target, AuditEntry.action)
        .where(
            AuditEntry.target.in_(list(targets)),
            AuditEntry.action.in_(("deployment.start", "deployment.stop")),
        )
        .order_by(AuditEntry.id)
    ).all()
    for target, action in rows:  # oldest first: the newest command is the one that stays
        wanted[targets[target]] = action == "deployment.start"
    return wanted


def asked_to_trace(session: Session, deployment_ids: list[int]) -> dict[int, tuple[str, str]]:
    """The user trace (level, mode) each deployment should have, as the operator last switched it:
    the newest ``deployment.trace`` audit entry (what a replica that missed the switch reads).
    A deployment never switched is absent."""
    from flowbroker.repository.models import AuditEntry

    if not deployment_ids:
        return {}
    targets = {f"deployment:{i}": i for i in deployment_ids}
    rows = session.execute(
        select(AuditEntry.target, AuditEntry.detail)
        .where(AuditEntry.target.in_(list(targets)), AuditEntry.action == "deployment.trace")
        .order_by(AuditEntry.id)
    ).all()
    found: dict[int, tuple[str, str]] = {}
    for target, detail in rows:  # oldest first: the newest switch is the one that stays
        level, mode = (detail or {}).get("level"), (detail or {}).get("mode")
        if level in TRACE_LEVELS and mode in TRACE_MODES:
            found[targets[target]] = (level, mode)
    return found


def report(
    session: Session, deployment_id: int, status: str, diagnostics: list[dict[str, Any]] | None = None
) -> None:
    """The worker's word on a deployment; a running one replaces older ones of the same flow."""
    deployment = session.get(Deployment, deployment_id)
    if deployment is None:
        return
    deployment.status = status
    if diagnostics is not None:
        deployment.diagnostics = diagnostics
    if status in STARTED:
        older = session.scalars(
            select(Deployment)
            .join(FlowVersion, Deployment.flow_version_id == FlowVersion.id)
            .where(
                Deployment.group_id == deployment.group_id,
                Deployment.id < deployment.id,
                FlowVersion.flow_id == deployment.flow_version.flow_id,
                Deployment.status.in_((*STARTED, "stopped", "pending")),
            )
        ).all()
        for row in older:
            row.status = "replaced"
    session.commit()


def describe(deployment: Deployment) -> dict[str, Any]:
    return {
        "id": deployment.id,
        "flow": deployment.flow_version.flow.name,
        "flow_id": deployment.flow_version.flow_id,
        "version": deployment.flow_version.version,
        "broker": deployment.broker.name,
        "group": deployment.group.name,
        "group_id": deployment.group_id,
        "additional_instances": deployment.additional_instances,
        "overrides": deployment.overrides,
        "status": deployment.status,
        "detail": detail(deployment.status, deployment.diagnostics),
        "diagnostics": deployment.diagnostics,
        "created_at": deployment.created_at,
        "updated_at": deployment.updated_at,
    }


def detail(status: str, diagnostics: list[dict[str, Any]] | None) -> str:
    """One line saying why a deployment is waiting or failed ("" when it is neither)."""
    if status not in ("waiting", "failed") or not diagnostics:
        return ""
    return "; ".join(str(d.get("message", "")) for d in diagnostics)


def send_control(
    broker: str, group: str, action: str, deployment_id: int, data: Path | None = None, *extra: Any
) -> None:
    """Send a control task to the group's queue (no result is awaited)."""
    from flowbroker.worker.app import send_control_task

    send_control_task(f"flowbroker.eg.{action}", control_queue(broker, group), [deployment_id, *extra], data)


TRACE_LEVELS = ("none", "normal", "debug")
TRACE_MODES = ("safe", "fast")


def set_trace(
    session: Session, actor: str, deployment_id: int, level: str, mode: str, data: Path | None = None
) -> Deployment:
    """Switch the user trace of a running deployment's flow (seed 004 §2.14: safe or fast mode)."""
    found = []
    if level not in TRACE_LEVELS:
        found.append(problem("/level", f"must be one of {', '.join(TRACE_LEVELS)}"))
    if mode not in TRACE_MODES:
        found.append(problem("/mode", f"must be one of {', '.join(TRACE_MODES)}"))
    if found:
        raise Invalid(f"invalid trace setting: {found[0]['pointer']}: {found[0]['message']}", found)
    deployment = get(session, deployment_id)
    if deployment.status not in (*STARTED, "stopped"):
        raise Invalid(
            f"deployment {deployment_id} is {deployment.status}; trace applies to a running flow",
            [problem("", "not running")],
        )
    audit.record(
        session, actor, "deployment.trace", f"deployment:{deployment.id}", {"level": level, "mode": mode}
    )
    session.commit()
    send_control(deployment.broker.name, deployment.group.name, "trace", deployment.id, data, level, mode)
    return deployment


def unknown_broker(session: Session, name: str) -> bool:
    return session.scalars(select(Broker).where(Broker.name == name)).first() is None
