"""The topology: brokers and their execution groups."""

from __future__ import annotations

import re
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from flowbroker.repository.models import Broker, Deployment, ExecutionGroup
from flowbroker.services import audit
from flowbroker.services.errors import Conflict, Forbidden, Invalid, NotFound, problem

NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_.\-]{0,63}$")
DEFAULT = "default"


def check_name(name: str, pointer: str = "/name") -> None:
    if not NAME_RE.match(name):
        raise Invalid(
            f"invalid name {name!r}: a letter or _ then letters, digits, . _ - (at most 64)",
            [problem(pointer, "a letter or _ then letters, digits, . _ - (at most 64)")],
        )


def list_brokers(session: Session) -> list[Broker]:
    return list(session.scalars(select(Broker).order_by(Broker.name)))


def get(session: Session, broker_id: int) -> Broker:
    broker = session.get(Broker, broker_id)
    if broker is None:
        raise NotFound(f"no broker with id {broker_id}")
    return broker


def by_name(session: Session, name: str) -> Broker:
    broker = session.scalars(select(Broker).where(Broker.name == name)).first()
    if broker is None:
        raise NotFound(f"no broker named {name!r}")
    return broker


def create(session: Session, actor: str, name: str, description: str = "", qm_url: str = "") -> Broker:
    check_name(name)
    if session.scalars(select(Broker.id).where(Broker.name == name)).first() is not None:
        raise Conflict(f"a broker named {name!r} already exists", {"pointer": "/name"}, code="duplicate_name")
    broker = Broker(name=name, description=description, qm_url=qm_url)
    session.add(broker)
    session.flush()
    audit.record(session, actor, "broker.create", f"broker:{name}", {"id": broker.id})
    session.commit()
    return broker


def update(session: Session, actor: str, broker_id: int, changes: dict[str, Any]) -> Broker:
    broker = get(session, broker_id)
    if changes.get("name") is not None and changes["name"] != broker.name:
        check_name(changes["name"])
        taken = session.scalars(select(Broker.id).where(Broker.name == changes["name"])).first()
        if taken is not None:
            raise Conflict(
                f"a broker named {changes['name']!r} already exists",
                {"pointer": "/name"},
                code="duplicate_name",
            )
    for key in ("name", "description", "qm_url"):
        if key in changes and changes[key] is not None:
            setattr(broker, key, changes[key])
    audit.record(
        session, actor, "broker.update", f"broker:{broker.name}", {"id": broker.id, "fields": sorted(changes)}
    )
    session.commit()
    return broker


#: Deployment statuses of a flow that is (or is becoming) deployed; a stopped flow is still deployed.
DEPLOYED = ("pending", "compiling", "running", "waiting", "stopped", "undeploying")


def _deployed_count(session: Session, *where: Any) -> int:
    return int(
        session.scalar(select(func.count(Deployment.id)).where(Deployment.status.in_(DEPLOYED), *where)) or 0
    )


def transport_url(session: Session, broker_id: int, fallback: str = "") -> str:
    """The URL of the broker's transport (``qm_url``: the queue manager or RabbitMQ), else ``fallback``."""
    broker = session.get(Broker, broker_id)
    return (broker.qm_url if broker is not None else "") or fallback


def delete(session: Session, actor: str, broker_id: int) -> None:
    broker = get(session, broker_id)
    if _deployed_count(session, Deployment.broker_id == broker.id):
        raise Conflict(f"broker {broker.name!r} has deployed flows; undeploy them first", code="in_use")
    session.delete(broker)
    audit.record(session, actor, "broker.delete", f"broker:{broker.name}", {"id": broker_id})
    session.commit()


def get_group(session: Session, broker_id: int, group_id: int) -> ExecutionGroup:
    group = session.get(ExecutionGroup, group_id)
    if group is None or group.broker_id != broker_id:
        raise NotFound(f"broker {broker_id} has no execution group with id {group_id}")
    return group


def group_by_name(session: Session, broker_name: str, group_name: str) -> ExecutionGroup:
    broker = by_name(session, broker_name)
    group = session.scalars(
        select(ExecutionGroup).where(ExecutionGroup.broker_id == broker.id, ExecutionGroup.name == group_name)
    ).first()
    if group is None:
        raise NotFound(f"broker {broker_name!r} has no execution group named {group_name!r}")
    return group


def is_development(session: Session, group_id: int | None) -> bool:
    """Whether the group is a development group (the only kind whose flows pause at breakpoints)."""
    group = session.get(ExecutionGroup, group_id) if group_id is not None else None
    return bool(group.development) if group is not None else False


def create_group(
    session: Session,
    actor: str,
    broker_id: int,
    name: str,
    description: str = "",
    development: bool = False,
    *,
    code_nodes: bool = False,
    http_port: int | None = None,
    actor_role: str = "",
) -> ExecutionGroup:
    """Define a group; ``code_nodes`` (flows with PythonCompute nodes may run) needs ``actor_role`` admin;
    ``http_port`` is its HTTP listener's port, which no other group of the broker may have."""
    broker = get(session, broker_id)
    if code_nodes:
        require_code_admin(actor, actor_role)
    check_name(name)
    exists = session.scalars(
        select(ExecutionGroup.id).where(ExecutionGroup.broker_id == broker.id, ExecutionGroup.name == name)
    ).first()
    if exists is not None:
        raise Conflict(
            f"broker {broker.name!r} already has an execution group named {name!r}",
            {"pointer": "/name"},
            code="duplicate_name",
        )
    _check_http_port(session, broker, http_port, None)
    group = ExecutionGroup(
        broker_id=broker.id,
        name=name,
        description=description,
        development=development,
        code_nodes=code_nodes,
        http_port=http_port,
    )
    session.add(group)
    session.flush()
    audit.record(
        session,
        actor,
        "group.create",
        f"group:{broker.name}/{name}",
        {"id": group.id, "development": development, "code_nodes": code_nodes, "http_port": http_port},
    )
    session.commit()
    return group


def _check_http_port(session: Session, broker: Broker, port: int | None, group_id: int | None) -> None:
    """Two groups of a broker run on one host under `flowbroker up`: each needs its own HTTP port."""
    if port is None:
        return
    if not 1 <= port <= 65535:
        raise Invalid(
            f"httpPort must be a port from 1 to 65535, not {port}",
            [problem("/httpPort", "a port from 1 to 65535, or null")],
        )
    other = session.scalars(
        select(ExecutionGroup).where(
            ExecutionGroup.broker_id == broker.id,
            ExecutionGroup.http_port == port,
            ExecutionGroup.id != (group_id if group_id is not None else -1),
        )
    ).first()
    if other is not None:
        raise Conflict(
            f"port {port} is already the HTTP port of execution group {broker.name}/{other.name}",
            {"pointer": "/httpPort", "group": other.name},
            code="duplicate_port",
        )


def require_code_admin(actor: str, actor_role: str) -> None:
    """Only an administrator decides where trusted code (PythonCompute) may run."""
    from flowbroker.services.users import role_at_least

    if not role_at_least(actor_role, "admin"):
        raise Forbidden(
            f"allowing or refusing code nodes in an execution group needs the admin role; {actor} is {actor_role}",
            code="forbidden",
        )


def _refuse_while_code_runs(session: Session, group: ExecutionGroup) -> None:
    """Code nodes are withdrawn from a group only once no deployed flow of it needs them."""
    from flowbroker.services import deploy

    flows = deploy.code_node_flows(session, group.id)
    if flows:
        raise Conflict(
            f"execution group {group.broker.name}/{group.name} runs flows with code nodes "
            f"({', '.join(flows)}); undeploy them before refusing code nodes",
            {"pointer": "/codeNodes", "flows": flows},
            code="in_use",
        )


def update_group(
    session: Session,
    actor: str,
    broker_id: int,
    group_id: int,
    changes: dict[str, Any],
    *,
    actor_role: str = "",
) -> ExecutionGroup:
    """Change a group; changing ``code_nodes`` needs ``actor_role`` admin and is audited as its own action."""
    group = get_group(session, broker_id, group_id)
    code_nodes = changes.get("code_nodes")
    code_change = code_nodes is not None and bool(code_nodes) != bool(group.code_nodes)
    if code_change:
        require_code_admin(actor, actor_role)
        if not code_nodes:
            _refuse_while_code_runs(session, group)
    if "name" in changes and changes["name"] is not None and changes["name"] != group.name:
        check_name(changes["name"])
        taken = session.scalars(
            select(ExecutionGroup.id).where(
                ExecutionGroup.broker_id == broker_id, ExecutionGroup.name == changes["name"]
            )
        ).first()
        if taken is not None:
            raise Conflict(
                f"an execution group named {changes['name']!r} already exists",
                {"pointer": "/name"},
                code="duplicate_name",
            )
    port_change = "http_port" in changes and changes["http_port"] != group.http_port
    if port_change:
        _check_http_port(session, group.broker, changes["http_port"], group.id)
    for key in ("name", "description", "development", "code_nodes"):
        if key in changes and changes[key] is not None:
            setattr(group, key, changes[key])
    if port_change:
        group.http_port = changes["http_port"]  # None: back to the worker's FLOWBROKER_HTTP_PORT
    audit.record(
        session,
        actor,
        "group.update",
        f"group:{group.broker.name}/{group.name}",
        {
            "id": group.id,
            **({"development": changes["development"]} if "development" in changes else {}),
            **({"http_port": group.http_port} if port_change else {}),
        },
    )
    if code_change:
        audit.record(
            session,
            actor,
            "group.code_nodes",
            f"group:{group.broker.name}/{group.name}",
            {"id": group.id, "code_nodes": bool(code_nodes)},
        )
    session.commit()
    return group


def delete_group(session: Session, actor: str, broker_id: int, group_id: int) -> None:
    group = get_group(session, broker_id, group_id)
    if _deployed_count(session, Deployment.group_id == group.id):
        raise Conflict(
            f"execution group {group.name!r} has deployed flows; undeploy them first", code="in_use"
        )
    target = f"group:{group.broker.name}/{group.name}"
    session.delete(group)
    audit.record(session, actor, "group.delete", target, {"id": group_id})
    session.commit()


def ensure_default(session: Session, actor: str = "system") -> ExecutionGroup:
    """The broker ``default`` with the execution group ``default`` that `flowbroker up` runs."""
    broker = session.scalars(select(Broker).where(Broker.name == DEFAULT)).first()
    if broker is None:
        broker = Broker(name=DEFAULT, description="the embedded broker started by flowbroker up")
        session.add(broker)
        session.flush()
        audit.record(session, actor, "broker.create", f"broker:{DEFAULT}", {"id": broker.id})
    group = session.scalars(
        select(ExecutionGroup).where(ExecutionGroup.broker_id == broker.id, ExecutionGroup.name == DEFAULT)
    ).first()
    if group is None:
        group = ExecutionGroup(broker_id=broker.id, name=DEFAULT, description="the default execution group")
        session.add(group)
        session.flush()
        audit.record(session, actor, "group.create", f"group:{DEFAULT}/{DEFAULT}", {"id": group.id})
    session.commit()
    return group
