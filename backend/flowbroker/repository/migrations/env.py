"""Alembic environment: runs the config repository's migrations on the engine handed in by db.upgrade."""

from __future__ import annotations

from alembic import context
from sqlalchemy import Engine

from flowbroker.repository.db import make_engine
from flowbroker.repository.models import Base

config = context.config
target_metadata = Base.metadata


def run_migrations_online() -> None:
    engine: Engine | None = config.attributes.get("engine")
    if engine is None:
        engine = make_engine(config.get_main_option("sqlalchemy.url") or "")
    with engine.begin() as connection:
        context.configure(
            connection=connection,
            target_metadata=target_metadata,
            # SQLite cannot ALTER most things; batch mode copies the table instead.
            render_as_batch=connection.dialect.name == "sqlite",
            compare_type=True,
        )
        context.run_migrations()


if context.is_offline_mode():
    raise SystemExit("offline migrations are not supported: run them against a database")
run_migrations_online()
