"""What the scale-out deployment needs of the commands: `flowbroker init` prepares a shared
repository before the services start, and the queue manager takes its application password
from FLOWBROKER_QM_PASSWORD so execution groups on other hosts can be given it."""

from __future__ import annotations

import json
import os
import secrets
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from flowbroker.qm.client import Client
from flowbroker.qm.protocol import QMError
from flowbroker.repository import db
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


PRODUCTION = {
    "FLOWBROKER_ENVIRONMENT": "production",
    "FLOWBROKER_SECRET_KEY": secrets.token_urlsafe(24),
}


def run(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "flowbroker.cli", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, **env},
    )


@pytest.fixture
def fresh_database(postgres_url: str) -> Iterator[str]:
    """The URL of a new PostgreSQL database, dropped afterwards."""
    admin = create_engine(postgres_url, isolation_level="AUTOCOMMIT")
    name = f"fb_init_{os.getpid()}_{secrets.token_hex(4)}"
    with admin.connect() as connection:
        connection.execute(text(f'CREATE DATABASE "{name}"'))
    try:
        yield make_url(postgres_url).set(database=name).render_as_string(hide_password=False)
    finally:
        with admin.connect() as connection:
            connection.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


def test_init_prepares_the_repository_once(tmp_path: Path, fresh_database: str) -> None:
    from flowbroker.services import brokers, users

    env = {
        **PRODUCTION,
        "FLOWBROKER_DATABASE_URL": fresh_database,
        "FLOWBROKER_ADMIN_PASSWORD": "a-long-operator-chosen-password",
    }
    first = run("init", "--data", str(tmp_path / "data"), env=env)
    assert first.returncode == 0, first.stderr
    assert "FLOWBROKER_ADMIN_PASSWORD" in first.stdout
    again = run("init", "--data", str(tmp_path / "data"), env=env)
    assert again.returncode == 0, again.stderr
    assert again.stdout.strip() == "config repository ready"

    engine = db.make_engine(fresh_database)
    try:
        with db.session_scope(db.session_factory(engine)) as session:
            admin = users.by_name(session, "admin")
            assert admin is not None and admin.role == "admin"
            assert users.verify_password(admin.password_hash, "a-long-operator-chosen-password")
            group = brokers.group_by_name(session, "default", "default")
            assert group.name == "default"
    finally:
        engine.dispose()


def test_init_reports_an_unreachable_repository_in_one_line(tmp_path: Path) -> None:
    port = free_port()  # nothing listens there
    result = run(
        "init",
        "--data",
        str(tmp_path / "data"),
        env={"FLOWBROKER_DATABASE_URL": f"postgresql+psycopg://nobody@127.0.0.1:{port}/none"},
    )
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "cannot open the config repository: OperationalError" in lines[0]


def test_queue_manager_takes_its_application_password_from_the_settings(tmp_path: Path) -> None:
    data = tmp_path / "qm"
    port = free_port()
    password = "remote-" + secrets.token_urlsafe(12)
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "flowbroker.cli",
            "qm",
            "--data",
            str(data),
            "--port",
            str(port),
            "--no-fsync",
        ],
        env={**os.environ, "FLOWBROKER_QM_PASSWORD": password},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 30
        client = None
        while client is None:
            try:
                # a client elsewhere knows only the URL, never the data directory
                client = Client.connect(f"fbqm://app:{password}@127.0.0.1:{port}", timeout=2.0)
            except (OSError, QMError):
                assert process.poll() is None, "the queue manager ended"
                assert time.monotonic() < deadline, "the queue manager did not answer within 30 s"
                time.sleep(0.2)
        try:
            client.define_queue("SCALE.OUT.IN")
            client.put("SCALE.OUT.IN", b"from another host")
            got = client.get("SCALE.OUT.IN", wait=5)
            assert got is not None and got.body == b"from another host"
        finally:
            client.close()
        assert json.loads((data / "qm.json").read_text())["password"] == password
        with pytest.raises(QMError):
            Client.connect(f"fbqm://app:wrong-{password}@127.0.0.1:{port}", timeout=2.0).close()
    finally:
        process.terminate()
        process.wait(timeout=30)
