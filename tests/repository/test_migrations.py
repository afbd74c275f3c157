"""Migrations upgrade an existing repository in place, from the first revision to the head."""

from __future__ import annotations

import json

from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from flowbroker.repository import db
from flowbroker.repository.models import Base
from sqlalchemy import Engine, inspect, text


def test_first_to_head_keeps_existing_data(empty_engine: Engine) -> None:
    db.upgrade(empty_engine, "0001")
    assert db.current_revision(empty_engine) == "0001"
    assert "deployments" not in db.table_names(empty_engine)
    with empty_engine.begin() as connection:
        connection.execute(
            text(
                "INSERT INTO users (username, password_hash, role, active, created_at) VALUES ('ann', 'h', 'admin', :t, :now)"
            ),
            {"t": True, "now": "2026-01-01T00:00:00+00:00"},
        )
        connection.execute(
            text(
                "INSERT INTO api_tokens (user_id, token_hash, name, created_at) VALUES (1, :h, 'login', :now)"
            ),
            {"h": "a" * 64, "now": "2026-01-01T00:00:00+00:00"},
        )
        connection.execute(
            text(
                "INSERT INTO flows (name, description, current_version, created_at, updated_at) VALUES ('F', '', 1, :now, :now)"
            ),
            {"now": "2026-01-01T00:00:00+00:00"},
        )
        connection.execute(
            text(
                "INSERT INTO flow_versions (flow_id, version, document, comment, author, created_at) "
                "VALUES (1, 1, :doc, '', 'ann', :now)"
            ),
            {"doc": json.dumps({"name": "F", "nodes": []}), "now": "2026-01-01T00:00:00+00:00"},
        )

    db.upgrade(empty_engine)
    assert db.current_revision(empty_engine) == db.head_revision()
    with empty_engine.connect() as connection:
        assert connection.execute(text("SELECT username, role FROM users")).all() == [("ann", "admin")]
        assert connection.execute(text("SELECT last_used_at FROM api_tokens")).all() == [(None,)]
        assert connection.execute(text("SELECT count(*) FROM flow_versions")).scalar() == 1
        roles = connection.execute(text("SELECT name FROM roles ORDER BY rank")).scalars().all()
    assert roles == ["viewer", "developer", "operator", "admin"]
    assert {"deployments", "message_sets", "data_sources", "subscriptions", "topic_acls"} <= db.table_names(
        empty_engine
    )


def test_head_matches_the_models(empty_engine: Engine) -> None:
    db.upgrade(empty_engine)
    with empty_engine.connect() as connection:
        context = MigrationContext.configure(connection, opts={"compare_type": True})
        assert compare_metadata(context, Base.metadata) == []


def test_upgrade_is_idempotent_and_downgrade_reverses(empty_engine: Engine) -> None:
    db.upgrade(empty_engine)
    db.upgrade(empty_engine)
    db.downgrade(empty_engine, "0001")
    columns = {c["name"] for c in inspect(empty_engine).get_columns("api_tokens")}
    assert "last_used_at" not in columns
    db.downgrade(empty_engine, "base")
    assert db.table_names(empty_engine) <= {"alembic_version"}
    db.upgrade(empty_engine)
    assert db.current_revision(empty_engine) == db.head_revision()


def test_the_fast_head_check_agrees_with_alembic(empty_engine: Engine) -> None:
    assert db.newest_revision_on_disk() == db.head_revision()
    db.upgrade(empty_engine, "0001")
    db.upgrade_if_needed(empty_engine)
    assert db.current_revision(empty_engine) == db.head_revision()
