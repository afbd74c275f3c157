"""Shared fixtures: the real servers this machine runs, reached for real.

Under ``CI=true`` a test that needs a server fails when that server is unreachable; elsewhere
it is skipped with the reason printed.
"""

from __future__ import annotations

import os
import socket

import pytest

IN_CI = os.environ.get("CI", "").lower() == "true"

SERVICES = {
    "postgres": ("127.0.0.1", 5432),
    "rabbitmq": ("127.0.0.1", 5672),
    "redis": ("127.0.0.1", 6379),
    "mqtt": ("127.0.0.1", 1883),
}


def _reachable(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=2):
            return True
    except OSError:
        return False


def require_service(name: str) -> tuple[str, int]:
    """Return (host, port) of a local server, or skip (fail under CI) when it is unreachable."""
    host, port = SERVICES[name]
    if not _reachable(host, port):
        reason = f"{name} is not reachable at {host}:{port}"
        if IN_CI:
            pytest.fail(f"{reason} (CI=true requires it)")
        pytest.skip(reason)
    return host, port


@pytest.fixture(scope="session")
def postgres_url() -> str:
    """A SQLAlchemy URL for the local PostgreSQL database ``test``."""
    host, port = require_service("postgres")
    return os.environ.get("FLOWBROKER_TEST_PG_URL", f"postgresql+psycopg://postgres@{host}:{port}/test")


@pytest.fixture(scope="session")
def rabbitmq_url() -> str:
    host, port = require_service("rabbitmq")
    return f"amqp://guest:guest@{host}:{port}/"


@pytest.fixture(scope="session")
def mqtt_address() -> tuple[str, int]:
    return require_service("mqtt")
