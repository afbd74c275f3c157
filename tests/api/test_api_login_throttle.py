"""Login throttling: failures per user and per client address lock logins out with 429, audited."""

from __future__ import annotations

import warnings
from typing import Any

import pytest

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from fastapi.testclient import TestClient

from flowbroker.settings import Settings

PASSWORD = "correct-horse-battery"  # the one tests/api/conftest.py gives every user


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def throttled(sqlite_api_with: Any) -> tuple[Any, Clock]:
    api = sqlite_api_with(
        login_max_failures=3,
        login_max_failures_per_address=5,
        login_failure_window_seconds=60,
        login_lockout_seconds=120,
    )
    clock = Clock()
    api.app.state.login_throttle.clock = clock
    return api, clock


def _login(client: TestClient, username: str, password: str) -> Any:
    return client.post("/api/auth/login", json={"username": username, "password": password})


def test_failures_of_one_user_lock_out_even_the_right_password(throttled: tuple[Any, Clock]) -> None:
    api, clock = throttled
    for _ in range(3):
        assert _login(api.client, "viewer", "wrong-password").status_code == 401
    locked = _login(api.client, "viewer", PASSWORD)
    assert locked.status_code == 429
    assert locked.json()["code"] == "login_locked"
    assert locked.headers["Retry-After"] == "120"
    clock.now += 100
    assert _login(api.client, "viewer", PASSWORD).headers["Retry-After"] == "20"
    # Another user from another address is not concerned.
    elsewhere = TestClient(api.app, client=("192.0.2.7", 40000))
    assert _login(elsewhere, "developer", PASSWORD).status_code == 200
    clock.now += 21
    assert _login(api.client, "viewer", PASSWORD).status_code == 200

    entries = api.as_("admin", "GET", "/api/audit", params={"action": "auth.locked_out"}).json()
    assert [(e["target"], e["detail"]["failures"], e["detail"]["seconds"]) for e in entries] == [
        ("user:viewer", 3, 120)
    ]


def test_failures_from_one_address_lock_it_out_whatever_the_username(throttled: tuple[Any, Clock]) -> None:
    api, clock = throttled
    attacker = TestClient(api.app, client=("198.51.100.9", 40000))
    for name in ("alice", "bob", "carol", "dave", "erin"):
        assert _login(attacker, name, "guess-guess").status_code == 401
    refused = _login(attacker, "operator", PASSWORD)
    assert refused.status_code == 429 and int(refused.headers["Retry-After"]) == 120
    assert _login(api.client, "operator", PASSWORD).status_code == 200  # the user is not locked
    entries = api.as_("admin", "GET", "/api/audit", params={"action": "auth.locked_out"}).json()
    assert [e["target"] for e in entries] == ["address:198.51.100.9"]
    clock.now += 121
    assert _login(attacker, "operator", PASSWORD).status_code == 200


def test_failures_older_than_the_window_or_before_a_success_do_not_count(
    sqlite_api_with: Any,
) -> None:
    api = sqlite_api_with(login_max_failures=3, login_failure_window_seconds=60, login_lockout_seconds=120)
    clock = Clock()
    api.app.state.login_throttle.clock = clock
    for _ in range(2):
        assert _login(api.client, "viewer", "wrong-password").status_code == 401
    clock.now += 61
    for _ in range(2):
        assert _login(api.client, "viewer", "wrong-password").status_code == 401
    assert _login(api.client, "viewer", PASSWORD).status_code == 200
    for _ in range(2):
        assert _login(api.client, "viewer", "wrong-password").status_code == 401
    assert _login(api.client, "viewer", PASSWORD).status_code == 200
    for _ in range(3):  # three within the window, with no success between them
        assert _login(api.client, "viewer", "wrong-password").status_code == 401
    assert _login(api.client, "viewer", PASSWORD).status_code == 429


def test_the_defaults_lock_out() -> None:
    settings = Settings()
    assert settings.login_max_failures <= 10
    assert settings.login_max_failures_per_address <= 50
    assert settings.login_lockout_seconds >= 60
