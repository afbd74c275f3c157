"""An HTTP flow under a real `flowbroker up`: deployed over REST, served by the execution group's listener."""

from __future__ import annotations

import json
import socket
import time
from typing import Any

import httpx
import pytest

PASSWORD = "http-flows-admin-pass"


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _until(predicate: Any, what: str, timeout: float = 60.0) -> Any:
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        try:
            last = predicate()
        except (httpx.HTTPError, ValueError):  # not up yet, or a file read while it is written
            last = None
        if last:
            return last
        time.sleep(0.2)
    raise AssertionError(f"{what} not met in {timeout:.0f}s (last: {last!r})")


def _answered(response: httpx.Response) -> httpx.Response | None:
    """The response once the flow serves the path (before that the listener may answer 404/503)."""
    return response if response.status_code == 200 else None


ECHO = """CREATE COMPUTE MODULE Echo
  CREATE FUNCTION Main() RETURNS BOOLEAN
  BEGIN
    SET OutputRoot = InputRoot;
    SET OutputRoot.JSON.Data.seen = TRUE;
    RETURN TRUE;
  END;
END MODULE;
"""


@pytest.mark.timeout(240)
def test_an_http_flow_deployed_to_the_default_group_answers_on_the_group_port(start_up: Any) -> None:
    port = _free_port()
    up = start_up(
        env={
            "FLOWBROKER_ADMIN_PASSWORD": PASSWORD,
            "FLOWBROKER_STATS_INTERVAL": "1",
            "FLOWBROKER_HTTP_PORT": str(port),
        }
    )
    up.wait_for_line("flowbroker is up at")
    assert "on 127.0.0.1" in up.wait_for_line("HTTP flows:")
    assert f"default/default: port {port} (FLOWBROKER_HTTP_PORT)" in up.wait_for_line("default/default:")
    token = httpx.post(
        up.url + "/api/auth/login", json={"username": "admin", "password": PASSWORD}, timeout=30
    )
    assert token.status_code == 200, token.text
    api = httpx.Client(
        base_url=up.url, headers={"Authorization": f"Bearer {token.json()['accessToken']}"}, timeout=30
    )
    document = {
        "name": "HttpEcho",
        "nodes": [
            {"id": "in", "type": "HTTPInput", "properties": {"path": "/echo", "messageDomain": "JSON"}},
            {"id": "c", "type": "Compute", "properties": {"esql": ECHO}},
            {"id": "reply", "type": "HTTPReply", "properties": {}},
        ],
        "connections": [
            {"from": {"node": "in", "terminal": "out"}, "to": {"node": "c", "terminal": "in"}},
            {"from": {"node": "c", "terminal": "out"}, "to": {"node": "reply", "terminal": "in"}},
        ],
    }
    created = api.post("/api/deployments", json={"document": document, "group": "default"})
    assert created.status_code == 202, created.text
    deployment = created.json()["id"]
    _until(
        lambda: api.get(f"/api/deployments/{deployment}").json()["status"] == "running", "the flow running"
    )
    response = _until(
        lambda: httpx.post(f"http://127.0.0.1:{port}/echo", json={"n": 1}, timeout=10),
        "the listener answering",
    )
    assert response.status_code == 200
    assert response.json() == {"n": 1, "seen": True}
    # the group reports where it serves HTTP with its statistics
    stats_file = up.data / "stats" / "default" / "default.json"
    reported = _until(
        lambda: stats_file.exists() and json.loads(stats_file.read_text()).get("http"),
        "the group's HTTP address",
    )
    assert reported == {"host": "127.0.0.1", "port": port}
    assert up.stop() == 0


NAMED = """CREATE COMPUTE MODULE Named
  CREATE FUNCTION Main() RETURNS BOOLEAN
  BEGIN
    SET OutputRoot = InputRoot;
    SET OutputRoot.JSON.Data.group = ExecutionGroupLabel;
    RETURN TRUE;
  END;
END MODULE;
"""


def _named_flow(name: str) -> dict[str, Any]:
    return {
        "name": name,
        "nodes": [
            {"id": "in", "type": "HTTPInput", "properties": {"path": "/who", "messageDomain": "JSON"}},
            {"id": "c", "type": "Compute", "properties": {"esql": NAMED}},
            {"id": "reply", "type": "HTTPReply", "properties": {}},
        ],
        "connections": [
            {"from": {"node": "in", "terminal": "out"}, "to": {"node": "c", "terminal": "in"}},
            {"from": {"node": "c", "terminal": "out"}, "to": {"node": "reply", "terminal": "in"}},
        ],
    }


@pytest.mark.timeout(300)
def test_two_groups_serve_the_same_path_each_on_its_own_http_port(start_up: Any) -> None:
    shared, default_port, web_port = _free_port(), _free_port(), _free_port()
    env = {
        "FLOWBROKER_ADMIN_PASSWORD": PASSWORD,
        "FLOWBROKER_STATS_INTERVAL": "1",
        "FLOWBROKER_HTTP_PORT": str(shared),
    }
    up = start_up(env=env)
    up.wait_for_line("flowbroker is up at")
    token = httpx.post(
        up.url + "/api/auth/login", json={"username": "admin", "password": PASSWORD}, timeout=30
    )
    api = httpx.Client(
        base_url=up.url, headers={"Authorization": f"Bearer {token.json()['accessToken']}"}, timeout=30
    )
    broker = next(b for b in api.get("/api/brokers").json() if b["name"] == "default")
    default = next(g for g in broker["groups"] if g["name"] == "default")
    # the default group's worker runs already: its port counts from its first HTTP flow on
    patched = api.patch(
        f"/api/brokers/{broker['id']}/groups/{default['id']}", json={"httpPort": default_port}
    )
    assert patched.status_code == 200, patched.text
    web = api.post(f"/api/brokers/{broker['id']}/groups", json={"name": "web", "httpPort": web_port})
    assert web.status_code == 201, web.text
    deployments = []
    for group in ("default", "web"):
        created = api.post("/api/deployments", json={"document": _named_flow(f"Who_{group}"), "group": group})
        assert created.status_code == 202, created.text
        deployments.append(created.json()["id"])
    for deployment in deployments:
        _until(
            lambda deployment=deployment: (
                api.get(f"/api/deployments/{deployment}").json()["status"] == "running"
            ),
            f"deployment {deployment} running",
        )
    for group, port in (("default", default_port), ("web", web_port)):
        response = _until(
            lambda port=port: _answered(
                httpx.post(f"http://127.0.0.1:{port}/who", json={"n": 1}, timeout=10)
            ),
            f"group {group} answering on {port}",
        )
        assert response.status_code == 200
        assert response.json() == {"n": 1, "group": group}
        stats_file = up.data / "stats" / "default" / f"{group}.json"
        reported = _until(
            lambda stats_file=stats_file: (
                stats_file.exists() and json.loads(stats_file.read_text()).get("http")
            ),
            f"group {group}'s HTTP address",
        )
        assert reported == {"host": "127.0.0.1", "port": port}
    assert up.stop() == 0

    # a restart prints each group's port, and the groups serve their flows on them again
    again = start_up(data=up.data, env=env)
    again.wait_for_line("flowbroker is up at")
    assert f"port {default_port} (httpPort)" in again.wait_for_line("default/default:")
    assert f"port {web_port} (httpPort)" in again.wait_for_line("default/web:")
    response = _until(
        lambda: _answered(httpx.post(f"http://127.0.0.1:{web_port}/who", json={"n": 2}, timeout=10)),
        "group web answering after the restart",
    )
    assert response.json() == {"n": 2, "group": "web"}
    assert again.stop() == 0
