"""Fixtures of the API suite: one configuration manager per repository backend (SQLite, PostgreSQL)."""

from __future__ import annotations

import os
import secrets
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from fastapi.testclient import TestClient

from flowbroker.api.app import create_app
from flowbroker.repository import db
from flowbroker.services import users
from flowbroker.settings import Settings

PASSWORD = "correct-horse-battery"


def fresh_postgres_database(base_url: str) -> tuple[str, Callable[[], None]]:
    """Create an empty database beside ``base_url``'s; returns its URL and a function dropping it."""
    url = make_url(base_url)
    name = f"fb_test_{os.getpid()}_{secrets.token_hex(4)}"
    admin = create_engine(url, isolation_level="AUTOCOMMIT")
    with admin.connect() as connection:
        connection.execute(text(f'CREATE DATABASE "{name}"'))

    def drop() -> None:
        with admin.connect() as connection:
            connection.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()

    return url.set(database=name).render_as_string(hide_password=False), drop


@pytest.fixture(scope="session", params=["sqlite", "postgres"])
def database_url(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path_factory.mktemp('sqlite') / 'config.db'}"
        return
    base = request.getfixturevalue("postgres_url")
    url, drop = fresh_postgres_database(base)
    try:
        yield url
    finally:
        drop()


class Api:
    """A client of one app with a token per role."""

    def __init__(self, app: object, client: TestClient) -> None:
        self.app = app
        self.client = client
        self.tokens: dict[str, str] = {}

    def headers(self, role: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.tokens[role]}"}

    def as_(self, role: str, method: str, path: str, **kwargs: object) -> object:
        headers = {**self.headers(role), **kwargs.pop("headers", {})}  # type: ignore[dict-item]
        return self.client.request(method, path, headers=headers, **kwargs)  # type: ignore[arg-type]


def build_api(database_url: str, data: Path, **settings: object) -> Api:
    app = create_app(Settings(data=data, database_url=database_url, **settings))  # type: ignore[arg-type]
    client = TestClient(app)
    api = Api(app, client)
    with db.session_scope(app.state.session_factory) as session:
        users.ensure_admin(session, PASSWORD)
        for role in ("viewer", "developer", "operator"):
            if users.by_name(session, role) is None:
                users.create(session, "admin", role, PASSWORD, role)
    for role in ("admin", "viewer", "developer", "operator"):
        response = client.post("/api/auth/login", json={"username": role, "password": PASSWORD})
        assert response.status_code == 200, response.text
        api.tokens[role] = response.json()["accessToken"]
    return api


@pytest.fixture(scope="session")
def api(database_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Api]:
    built = build_api(database_url, tmp_path_factory.mktemp("data"))
    yield built
    built.client.close()
    built.app.state.engine.dispose()  # type: ignore[attr-defined]


@pytest.fixture
def unique() -> str:
    return "T" + secrets.token_hex(4)


@pytest.fixture(scope="module")
def sqlite_api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Api]:
    """A private SQLite-backed app for tests that may wreck its contents (fuzzing)."""
    data = tmp_path_factory.mktemp("fuzz")
    built = build_api(f"sqlite:///{data / 'config.db'}", data)
    yield built
    built.client.close()
    built.app.state.engine.dispose()  # type: ignore[attr-defined]


@pytest.fixture
def sqlite_api_with(tmp_path: Path) -> Iterator[Callable[..., Api]]:
    """Build a private SQLite-backed app with the settings given (e.g. small limits to reach)."""
    built: list[Api] = []

    def build(**settings: object) -> Api:
        api = build_api(f"sqlite:///{tmp_path / 'config.db'}", tmp_path, **settings)
        built.append(api)
        return api

    yield build
    for api in built:
        api.client.close()
        api.app.state.engine.dispose()  # type: ignore[attr-defined]
