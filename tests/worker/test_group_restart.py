"""Under a real `flowbroker up`, a killed default execution group is restarted and resumes its flows."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import psutil
import pytest

pytestmark = [pytest.mark.timeout(300), pytest.mark.slow]
GROUP = "execution-group:default/default"
PASSWORD = "restart-admin-pass"


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _eventually(predicate: Any, timeout: float = 90.0) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            value = predicate()
        except (httpx.HTTPError, KeyError, StopIteration):
            value = None
        if value:
            return value
        time.sleep(0.2)
    raise AssertionError("condition not met in time")


@pytest.fixture
def up(tmp_path: Path) -> Iterator[str]:
    port = _free_port()
    env = {
        **os.environ,
        "FLOWBROKER_ADMIN_PASSWORD": PASSWORD,
        "FLOWBROKER_CONFIG_DIR": str(tmp_path / "config"),
        "FLOWBROKER_STATS_INTERVAL": "1",
    }
    command = [sys.executable, "-m", "flowbroker.cli", "up", "--data", str(tmp_path / "data")]
    command += ["--port", str(port), "--qm-port", str(_free_port())]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    url = f"http://127.0.0.1:{port}"
    try:
        _eventually(lambda: httpx.get(url + "/api/health", timeout=2).json()["status"] == "ok")
        yield url
    finally:
        leftovers = [p.pid for p in psutil.Process(process.pid).children(recursive=True)]
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            process.kill()
        for pid in leftovers:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


def _group(url: str) -> dict[str, Any]:
    health = httpx.get(url + "/api/health", timeout=5).json()
    return next(c for c in health["components"] if c["name"] == GROUP)


def test_a_killed_execution_group_is_restarted_and_resumes_its_flows(up: str) -> None:
    # health says ok only once `flowbroker up` has created the admin: the first login succeeds
    login = httpx.post(up + "/api/auth/login", json={"username": "admin", "password": PASSWORD}, timeout=10)
    assert login.status_code == 200, login.text
    token = login.json()["accessToken"]
    headers = {"Authorization": f"Bearer {token}"}

    def call(method: str, path: str, **kwargs: Any) -> Any:
        response = httpx.request(method, up + path, headers=headers, timeout=30, **kwargs)
        assert response.status_code < 300, response.text
        return response.json() if response.content else None

    for queue in ("RESUME.IN", "RESUME.OUT"):
        call("POST", "/api/queues", json={"name": queue})
    document = {
        "name": "Resumed",
        "nodes": [
            {"id": "in", "type": "MQInput", "properties": {"queueName": "RESUME.IN"}},
            {"id": "out", "type": "MQOutput", "properties": {"queueName": "RESUME.OUT"}},
        ],
        "connections": [{"from": {"node": "in", "terminal": "out"}, "to": {"node": "out", "terminal": "in"}}],
    }
    deployment = call("POST", "/api/deployments", json={"document": document})
    _eventually(lambda: call("GET", f"/api/deployments/{deployment['id']}")["status"] == "running")

    def through(text: str) -> str:
        call("POST", "/api/queues/RESUME.IN/messages", json={"body": text})
        got = _eventually(lambda: call("POST", "/api/queues/RESUME.OUT/get", params={"wait": 2}))
        return str(got["body"])

    assert through("before the crash") == "before the crash"
    first = _group(up)
    assert first["state"] == "running" and first["pid"]
    psutil.Process(first["pid"]).kill()

    again = _eventually(lambda: (g := _group(up))["pid"] != first["pid"] and g["state"] == "running" and g)
    assert again["restarts"] >= first["restarts"] + 1
    # the restarted group resumed the flow from the repository: messages flow again
    assert through("after the restart") == "after the restart"
    assert call("GET", f"/api/deployments/{deployment['id']}")["status"] == "running"
