"""Message flows in the repository: create, save a new version, load, list versions, delete."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import delete as sql_delete
from sqlalchemy import func, insert, select, update
from sqlalchemy.orm import Session

from flowbroker.repository.models import AuditEntry, Deployment, Flow, FlowVersion, utcnow
from flowbroker.services import audit, validation
from flowbroker.services.errors import Conflict, NotFound


def list_flows(session: Session, *, limit: int = 100, offset: int = 0) -> list[Flow]:
    return list(session.scalars(select(Flow).order_by(Flow.name).limit(limit).offset(offset)))


def get(session: Session, flow_id: int) -> Flow:
    flow = session.get(Flow, flow_id)
    if flow is None:
        raise NotFound(f"no flow with id {flow_id}")
    return flow


def get_by_name(session: Session, name: str) -> Flow:
    flow = session.scalars(select(Flow).where(Flow.name == name)).first()
    if flow is None:
        raise NotFound(f"no flow named {name!r}")
    return flow


def current(session: Session, flow_id: int) -> tuple[Flow, FlowVersion]:
    """A flow with its current version, in one query."""
    found = session.execute(
        select(Flow, FlowVersion)
        .join(FlowVersion, (FlowVersion.flow_id == Flow.id) & (FlowVersion.version == Flow.current_version))
        .where(Flow.id == flow_id)
    ).first()
    if found is None:
        raise NotFound(f"no flow with id {flow_id}")
    flow, row = found
    return flow, row


def version(session: Session, flow: Flow, number: int | None = None) -> FlowVersion:
    """The flow's version ``number``, or its current one."""
    wanted = flow.current_version if number is None else number
    row = session.scalars(
        select(FlowVersion).where(FlowVersion.flow_id == flow.id, FlowVersion.version == wanted)
    ).first()
    if row is None:
        raise NotFound(f"flow {flow.name!r} has no version {wanted}")
    return row


def versions(session: Session, flow: Flow) -> list[FlowVersion]:
    return list(
        session.scalars(
            select(FlowVersion).where(FlowVersion.flow_id == flow.id).order_by(FlowVersion.version.desc())
        )
    )


def _stamp(document: dict[str, Any], number: int) -> dict[str, Any]:
    # A shallow copy is enough: the stored document is serialised at flush and never mutated here.
    return {"properties": {}, "connections": [], **document, "version": number}


def _name_taken(session: Session, name: str, except_id: int | None = None) -> bool:
    stmt = select(Flow.id).where(Flow.name == name)
    if except_id is not None:
        stmt = stmt.where(Flow.id != except_id)
    return session.scalars(stmt).first() is not None


#: The longest flow name (see :data:`flowbroker.services.validation.NAME_RE`).
MAX_NAME = 128


def free_name(session: Session, name: str) -> str:
    """``name`` if no flow has it, else the first of ``name_2``, ``name_3``… that none has.

    A name already ending in ``_N`` counts on from N, so ``Orders_2`` suggests ``Orders_3``.
    """
    if not _name_taken(session, name):
        return name
    stem, _, tail = name.rpartition("_")
    if not (stem and tail.isdigit()):
        stem, tail = name, "1"
    prefix = stem[: MAX_NAME - 8]
    taken = set(session.scalars(select(Flow.name).where(Flow.name.startswith(prefix + "_", autoescape=True))))
    number = int(tail) + 1
    while f"{prefix}_{number}" in taken:
        number += 1
    return f"{prefix}_{number}"


def name_status(session: Session, name: str) -> dict[str, Any]:
    """Whether a flow has ``name`` (its id and current version if so) and a free name to use instead."""
    flow = session.scalars(select(Flow).where(Flow.name == name)).first()
    return {
        "name": name,
        "taken": flow is not None,
        "flow_id": flow.id if flow is not None else None,
        "current_version": flow.current_version if flow is not None else None,
        "free": free_name(session, name),
    }


def create(
    session: Session,
    actor: str,
    document: Any,
    *,
    comment: str = "",
    lookup: validation.SpecLookup | None = None,
) -> tuple[Flow, FlowVersion]:
    """Validate and store a new flow as version 1."""
    validation.validate(document, lookup)
    name = document["name"]
    if _name_taken(session, name):
        raise Conflict(f"a flow named {name!r} already exists", {"pointer": "/name"}, code="duplicate_name")
    flow = Flow(name=name, description=document.get("description", ""), current_version=1)
    session.add(flow)
    session.flush()
    row = FlowVersion(flow_id=flow.id, version=1, document=_stamp(document, 1), comment=comment, author=actor)
    session.add(row)
    audit.record(session, actor, "flow.create", f"flow:{name}", {"id": flow.id, "version": 1})
    session.commit()
    return flow, row


@dataclass(frozen=True)
class FlowState:
    """A flow with the document of its current version, as the API returns it."""

    id: int
    name: str
    description: str
    current_version: int
    created_at: datetime
    updated_at: datetime
    document: dict[str, Any]


_STATE_COLUMNS = (
    Flow.id,
    Flow.name,
    Flow.description,
    Flow.current_version,
    Flow.created_at,
    Flow.updated_at,
    FlowVersion.document,
)


def load(session: Session, flow_id: int) -> FlowState:
    """The flow and its current document in one query, without building ORM objects (the hot read)."""
    found = session.execute(
        select(*_STATE_COLUMNS)
        .join(FlowVersion, (FlowVersion.flow_id == Flow.id) & (FlowVersion.version == Flow.current_version))
        .where(Flow.id == flow_id)
    ).first()
    if found is None:
        raise NotFound(f"no flow with id {flow_id}")
    return FlowState(*found)


def save(
    session: Session,
    actor: str,
    flow_id: int,
    document: Any,
    *,
    comment: str = "",
    lookup: validation.SpecLookup | None = None,
) -> tuple[Flow, FlowVersion]:
    """Store ``document`` as the flow's next version and return the ORM rows (see :func:`save_state`)."""
    state = save_state(session, actor, flow_id, document, comment=comment, lookup=lookup)
    flow = get(session, flow_id)
    return flow, version(session, flow, state.current_version)


def save_state(
    session: Session,
    actor: str,
    flow_id: int,
    document: Any,
    *,
    comment: str = "",
    lookup: validation.SpecLookup | None = None,
) -> FlowState:
    """Store ``document`` as the flow's next version.

    A document that carries ``version`` must name the current one: a save based on an older
    version would silently discard someone else's changes, so it is refused with 409. Two saves
    racing from the same version are told apart by the conditional update: one gets 409.
    """
    current = session.execute(
        select(Flow.id, Flow.name, Flow.description, Flow.current_version, Flow.created_at).where(
            Flow.id == flow_id
        )
    ).first()
    if current is None:
        raise NotFound(f"no flow with id {flow_id}")
    validation.validate(document, lookup)
    based_on = document.get("version")
    if based_on not in (None, 0) and based_on != current.current_version:
        raise Conflict(
            f"flow {current.name!r} is at version {current.current_version}; "
            f"this document is based on version {based_on}",
            {"pointer": "/version", "current": current.current_version},
            code="version_conflict",
        )
    name = document["name"]
    if name != current.name:
        if _name_taken(session, name, flow_id):
            raise Conflict(
                f"a flow named {name!r} already exists", {"pointer": "/name"}, code="duplicate_name"
            )
        _audit_row(session, actor, "flow.rename", f"flow:{current.name}", {"to": name})
    number = current.current_version + 1
    now = utcnow()
    stored = _stamp(document, number)
    description = document.get("description", current.description)
    # Core statements: the save path is the configuration manager's busiest write.
    session.execute(
        insert(FlowVersion).values(
            flow_id=flow_id, version=number, document=stored, comment=comment, author=actor, created_at=now
        )
    )
    updated = session.execute(
        update(Flow)
        .where(Flow.id == flow_id, Flow.current_version == current.current_version)
        .values(current_version=number, name=name, description=description, updated_at=now)
        .execution_options(synchronize_session=False)
    )
    if getattr(updated, "rowcount", 1) != 1:
        session.rollback()
        raise Conflict(
            f"flow {name!r} was saved by someone else meanwhile; reload it", code="version_conflict"
        )
    _audit_row(session, actor, "flow.save", f"flow:{name}", {"id": flow_id, "version": number})
    session.commit()
    return FlowState(flow_id, name, description, number, current.created_at, now, stored)


def _audit_row(session: Session, actor: str, action: str, target: str, detail: dict[str, Any]) -> None:
    session.execute(
        insert(AuditEntry).values(actor=actor, action=action, target=target, detail=detail, at=utcnow())
    )


def delete(session: Session, actor: str, flow_id: int) -> None:
    """Delete a flow and its history; refused while any of its versions is deployed."""
    flow = get(session, flow_id)
    deployed = session.scalar(
        select(func.count(Deployment.id))
        .join(FlowVersion, Deployment.flow_version_id == FlowVersion.id)
        .where(FlowVersion.flow_id == flow.id, Deployment.status != "stopped")
    )
    if deployed:
        raise Conflict(
            f"flow {flow.name!r} is deployed ({deployed} deployments); undeploy it first", code="in_use"
        )
    session.execute(
        sql_delete(Deployment).where(
            Deployment.flow_version_id.in_(select(FlowVersion.id).where(FlowVersion.flow_id == flow.id))
        )
    )
    session.delete(flow)
    audit.record(session, actor, "flow.delete", f"flow:{flow.name}", {"id": flow_id})
    session.commit()
