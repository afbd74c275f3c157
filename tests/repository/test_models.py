"""The models' constraints hold on both backends: uniqueness, cascades, aware timestamps, JSON documents."""

from __future__ import annotations

import pytest
from flowbroker.repository import db
from flowbroker.repository.models import (
    Broker,
    Deployment,
    ExecutionGroup,
    Flow,
    FlowVersion,
    User,
)
from flowbroker.services import audit, brokers, users
from sqlalchemy import Engine, func, select
from sqlalchemy.exc import IntegrityError


@pytest.fixture
def factory(empty_engine: Engine) -> object:
    db.upgrade(empty_engine)
    return db.session_factory(empty_engine)


def test_flow_versions_cascade_and_keep_json(factory: object) -> None:
    with db.session_scope(factory) as session:  # type: ignore[arg-type]
        flow = Flow(name="Orders", current_version=2)
        document = {
            "name": "Orders",
            "nodes": [{"id": "a", "type": "MQInput", "properties": {"queueName": "Q"}}],
        }
        flow.versions = [
            FlowVersion(version=1, document=document),
            FlowVersion(version=2, document={"name": "Orders"}),
        ]
        session.add(flow)
    with db.session_scope(factory) as session:  # type: ignore[arg-type]
        loaded = session.scalars(select(Flow)).one()
        assert loaded.versions[0].document == document
        assert loaded.created_at.tzinfo is not None
        session.delete(loaded)
    with db.session_scope(factory) as session:  # type: ignore[arg-type]
        assert session.scalar(select(func.count(FlowVersion.id))) == 0


def test_unique_names_are_enforced_by_the_database(factory: object) -> None:
    with db.session_scope(factory) as session:  # type: ignore[arg-type]
        session.add(Broker(name="b"))
    with pytest.raises(IntegrityError), db.session_scope(factory) as session:  # type: ignore[arg-type]
        session.add(Broker(name="b"))
    with db.session_scope(factory) as session:  # type: ignore[arg-type]
        broker = session.scalars(select(Broker)).one()
        session.add(ExecutionGroup(broker_id=broker.id, name="g"))
    with pytest.raises(IntegrityError), db.session_scope(factory) as session:  # type: ignore[arg-type]
        session.add(ExecutionGroup(broker_id=broker.id, name="g"))


def test_deployments_reference_versions_groups_and_brokers(factory: object) -> None:
    with db.session_scope(factory) as session:  # type: ignore[arg-type]
        group = brokers.ensure_default(session)
        flow = Flow(name="F", current_version=1, versions=[FlowVersion(version=1, document={"name": "F"})])
        session.add(flow)
        session.flush()
        session.add(
            Deployment(
                flow_version_id=flow.versions[0].id,
                broker_id=group.broker_id,
                group_id=group.id,
                additional_instances=2,
                overrides={"in1.queueName": "OTHER.Q"},
                diagnostics=[{"line": 3, "column": 7, "message": "unknown column"}],
            )
        )
    with db.session_scope(factory) as session:  # type: ignore[arg-type]
        deployment = session.scalars(select(Deployment)).one()
        assert deployment.status == "pending"
        assert deployment.group.name == "default" and deployment.broker.name == "default"
        assert deployment.flow_version.flow.name == "F"
        assert deployment.overrides == {"in1.queueName": "OTHER.Q"}
        # Deleting the broker takes its groups and deployments with it.
        session.delete(deployment.broker)
    with db.session_scope(factory) as session:  # type: ignore[arg-type]
        assert session.scalar(select(func.count(Deployment.id))) == 0
        assert session.scalar(select(func.count(ExecutionGroup.id))) == 0


def test_first_admin_is_created_once_with_a_hashed_password(factory: object) -> None:
    with db.session_scope(factory) as session:  # type: ignore[arg-type]
        created, shown = users.ensure_admin(session, None)
        assert created and shown
        admin = session.scalars(select(User)).one()
        assert admin.role == "admin" and shown not in admin.password_hash
        assert admin.password_hash.startswith("$argon2")
        assert users.verify_password(admin.password_hash, shown)
    with db.session_scope(factory) as session:  # type: ignore[arg-type]
        assert users.ensure_admin(session, None) == (False, None)
        user, token = users.login(session, "admin", shown)
        assert token not in {row.token_hash for row in user.tokens}
        assert users.authenticate(session, token)[0].username == "admin"
        entries = audit.query(session, target="user:admin")
        assert [e.action for e in entries] == ["auth.login", "user.create"]
