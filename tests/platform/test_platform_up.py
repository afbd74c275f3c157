"""`flowbroker up`: first start, health of every component, restarts, clean shutdown, kept data."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import psutil
import pytest

FLOW = {
    "name": "KeptFlow",
    "nodes": [{"id": "in1", "type": "MQInput", "properties": {"queueName": "KEPT.IN"}}],
}


def wait_until(predicate: Any, timeout: float = 60.0, interval: float = 0.1) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            value = predicate()
        except (httpx.HTTPError, AssertionError, psutil.Error):
            value = None
        if value:
            return value
        time.sleep(interval)
    raise AssertionError("condition not met in time")


def _login(url: str, password: str) -> dict[str, str]:
    response = httpx.post(
        url + "/api/auth/login", json={"username": "admin", "password": password}, timeout=10
    )
    assert response.status_code == 200, response.text
    return {"Authorization": f"Bearer {response.json()['accessToken']}"}


def _gone(pids: list[int]) -> bool:
    return not any(
        psutil.pid_exists(pid) and psutil.Process(pid).status() != psutil.STATUS_ZOMBIE for pid in pids
    )


@pytest.mark.timeout(180)
def test_first_start_restart_and_shutdown(start_up: Any) -> None:
    up = start_up()
    up.wait_for_line("flowbroker is up at")
    password = up.wait_for_line("first start: user 'admin' created with password").rsplit(" ", 1)[1]
    health = up.health()
    names = [c["name"] for c in health["components"]]
    assert names[0] == "configuration-manager"
    assert all(c["state"] == "running" for c in health["components"]), health
    assert health["status"] == "ok"
    headers = _login(up.url, password)

    # A component that dies is restarted and the restart is reported.
    api_pid = health["components"][0]["pid"]
    psutil.Process(api_pid).kill()
    restarted = wait_until(
        lambda: (
            (h := up.health())["components"][0]["pid"] != api_pid
            and h["components"][0]["restarts"] >= 1
            and h
        )
    )
    assert restarted["components"][0]["state"] == "running"
    assert httpx.get(up.url + "/api/auth/me", headers=headers, timeout=10).json()["username"] == "admin"

    # SIGTERM stops everything: no process of the tree is left.
    children = [p.pid for p in up.descendants()]
    assert len(children) >= len(names)
    assert up.stop(signal.SIGTERM) == 0
    wait_until(lambda: _gone(children), timeout=30)
    assert any("flowbroker: stopped" in line for line in up.lines)


@pytest.mark.timeout(180)
def test_restart_keeps_everything_saved(start_up: Any, tmp_path: Path) -> None:
    env = {"FLOWBROKER_ADMIN_PASSWORD": "first-admin-pass"}
    up = start_up(env=env)
    up.wait_for_line("flowbroker is up at")
    assert up.wait_for_line("first start:").endswith("FLOWBROKER_ADMIN_PASSWORD")
    headers = _login(up.url, "first-admin-pass")
    created = httpx.post(up.url + "/api/flows", json=FLOW, headers=headers, timeout=10)
    assert created.status_code == 201, created.text
    assert up.stop() == 0

    again = start_up(env={"FLOWBROKER_ADMIN_PASSWORD": "ignored-now-x"})
    again.wait_for_line("flowbroker is up at")
    assert not any("first start" in line for line in again.lines)
    headers = _login(again.url, "first-admin-pass")
    flows = httpx.get(again.url + "/api/flows", headers=headers, timeout=10).json()
    assert [f["name"] for f in flows] == ["KeptFlow"]
    brokers = httpx.get(again.url + "/api/brokers", headers=headers, timeout=10).json()
    assert [(b["name"], [g["name"] for g in b["groups"]]) for b in brokers] == [("default", ["default"])]

    # A second `up` on the same data directory is refused while this one runs.
    second = subprocess.run(
        [sys.executable, "-m", "flowbroker.cli", "up", "--data", str(again.data), "--port", "0"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert second.returncode == 1
    assert (
        second.stderr.strip()
        == f"flowbroker: error: another flowbroker up is already running on {again.data}"
    )
    assert again.stop() == 0


@pytest.mark.timeout(180)
def test_a_killed_supervisor_leaves_no_orphans(start_up: Any) -> None:
    up = start_up(env={"FLOWBROKER_ADMIN_PASSWORD": "first-admin-pass"})
    up.wait_for_line("flowbroker is up at")
    children = [p.pid for p in up.descendants()]
    assert children
    up.stop(signal.SIGKILL)
    wait_until(lambda: _gone(children), timeout=30)


def test_bad_settings_are_one_line_errors(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "flowbroker.cli", "up", "--data", str(tmp_path), "--port", "99999"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 1
    assert result.stderr.startswith("flowbroker: error: bad setting api_port:")
    assert "Traceback" not in result.stderr
