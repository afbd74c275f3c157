"""Fixtures of the repository suite: an empty database per test on SQLite and on PostgreSQL."""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterator

import pytest
from flowbroker.repository import db
from sqlalchemy import Engine, create_engine, text
from sqlalchemy.engine import make_url


@pytest.fixture(scope="session")
def postgres_admin(postgres_url: str) -> Iterator[Engine]:
    engine = create_engine(postgres_url, isolation_level="AUTOCOMMIT")
    yield engine
    engine.dispose()


@pytest.fixture(params=["sqlite", "postgres"])
def empty_engine(request: pytest.FixtureRequest, tmp_path: object) -> Iterator[Engine]:
    """A fresh, empty database (a new SQLite file, or a new PostgreSQL database dropped afterwards)."""
    if request.param == "sqlite":
        engine = db.make_engine(f"sqlite:///{tmp_path}/config.db")
        yield engine
        engine.dispose()
        return
    admin: Engine = request.getfixturevalue("postgres_admin")
    name = f"fb_repo_{os.getpid()}_{secrets.token_hex(4)}"
    with admin.connect() as connection:
        connection.execute(text(f'CREATE DATABASE "{name}"'))
    engine = db.make_engine(make_url(admin.url).set(database=name).render_as_string(hide_password=False))
    try:
        yield engine
    finally:
        engine.dispose()
        with admin.connect() as connection:
            connection.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
