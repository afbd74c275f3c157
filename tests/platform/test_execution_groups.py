"""Execution groups under a real `flowbroker up`: one process per group, created, stopped, deleted over REST."""

from __future__ import annotations

import time
from typing import Any

import httpx
import psutil
import pytest

PASSWORD = "groups-admin-pass"


def wait_until(predicate: Any, timeout: float = 60.0, what: str = "condition") -> Any:
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        try:
            last = predicate()
        except (httpx.HTTPError, KeyError, StopIteration):
            last = None
        if last:
            return last
        time.sleep(0.2)
    raise AssertionError(f"{what} not met in {timeout:.0f}s (last: {last!r})")


def _alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


class Rest:
    def __init__(self, url: str) -> None:
        response = httpx.post(url + "/api/auth/login", json={"username": "admin", "password": PASSWORD})
        assert response.status_code == 200, response.text
        self.client = httpx.Client(
            base_url=url, headers={"Authorization": f"Bearer {response.json()['accessToken']}"}, timeout=30
        )

    def call(self, method: str, path: str, expect: int | None = None, **kwargs: Any) -> Any:
        response = self.client.request(method, path, **kwargs)
        if expect is not None:
            assert response.status_code == expect, f"{method} {path}: {response.status_code} {response.text}"
        return response

    def component(self, name: str) -> dict[str, Any] | None:
        health = self.client.get("/api/health").json()
        return next((c for c in health["components"] if c["name"] == name), None)

    def group(self, broker_id: int, group_id: int) -> dict[str, Any]:
        return dict(self.call("GET", f"/api/brokers/{broker_id}/groups/{group_id}", 200).json())

    def deployment(self, deployment_id: int) -> dict[str, Any]:
        return dict(self.call("GET", f"/api/deployments/{deployment_id}", 200).json())

    def depth(self, queue: str) -> int:
        rows = self.call("GET", "/api/queues", 200).json()
        return int(next(q["depth"] for q in rows if q["name"] == queue))

    def get(self, queue: str, wait: float = 10) -> Any:
        """The next message, waiting up to ``wait`` seconds (each request waits at most 30)."""
        deadline = time.monotonic() + wait
        while True:
            left = max(0.0, min(30.0, deadline - time.monotonic()))
            got = self.call("POST", f"/api/queues/{queue}/get", 200, params={"wait": left}).json()
            if got is not None or time.monotonic() >= deadline:
                return got


def _flow(name: str, src: str, dst: str) -> dict[str, Any]:
    return {
        "name": name,
        "nodes": [
            {"id": "in", "type": "MQInput", "properties": {"queueName": src, "messageDomain": "XMLNSC"}},
            {
                "id": "c",
                "type": "Compute",
                "properties": {
                    "esql": "SET OutputRoot = InputRoot;\nSET OutputRoot.XMLNSC.Order.Status = 'SEEN';\n"
                },
            },
            {"id": "out", "type": "MQOutput", "properties": {"queueName": dst}},
        ],
        "connections": [
            {"from": {"node": "in", "terminal": "out"}, "to": {"node": "c", "terminal": "in"}},
            {"from": {"node": "c", "terminal": "out"}, "to": {"node": "out", "terminal": "in"}},
        ],
    }


@pytest.mark.timeout(300)
def test_a_group_created_over_rest_runs_stops_and_goes(start_up: Any) -> None:
    up = start_up(env={"FLOWBROKER_ADMIN_PASSWORD": PASSWORD, "FLOWBROKER_STATS_INTERVAL": "1"})
    up.wait_for_line("flowbroker is up at")
    rest = Rest(up.url)
    default = next(b for b in rest.call("GET", "/api/brokers", 200).json() if b["name"] == "default")
    assert default["local"] is True

    # A group created through the API gets a process of its own within seconds.
    created = rest.call("POST", f"/api/brokers/{default['id']}/groups", 201, json={"name": "orders"}).json()
    assert created["desiredState"] == "running"
    gid = created["id"]
    component = wait_until(
        lambda: (c := rest.component("execution-group:default/orders")) and c["state"] == "running" and c,
        what="the group's process in /api/health",
    )
    group = wait_until(
        lambda: (g := rest.group(default["id"], gid))["state"] == "running" and g, what="the group running"
    )
    assert group["pid"] == component["pid"] and _alive(group["pid"])
    default_group = next(g for g in rest.call("GET", "/api/brokers", 200).json()[0]["groups"])
    assert default_group["pid"] != group["pid"]

    for queue in ("GRP.IN", "GRP.OUT"):
        rest.call("POST", "/api/queues", 201, json={"name": queue})
    deployed = rest.call(
        "POST",
        "/api/deployments",
        202,
        json={"document": _flow("GroupFlow", "GRP.IN", "GRP.OUT"), "group": "orders"},
    ).json()
    wait_until(lambda: rest.deployment(deployed["id"])["status"] == "running", what="the deployment running")

    rest.call("POST", "/api/queues/GRP.IN/messages", 201, json={"body": "<Order><Id>1</Id></Order>"})
    got = rest.get("GRP.OUT")
    assert got is not None and "<Status>SEEN</Status>" in got["body"]

    # One flow stopped: the group keeps running, the flow's messages wait on its queue.
    stopped = rest.call("POST", f"/api/deployments/{deployed['id']}/stop", 202).json()
    assert stopped["id"] == deployed["id"]
    wait_until(lambda: rest.deployment(deployed["id"])["status"] == "stopped", what="the flow stopped")
    rest.call("POST", "/api/queues/GRP.IN/messages", 201, json={"body": "<Order><Id>2</Id></Order>"})
    assert rest.get("GRP.OUT", wait=1.5) is None and rest.depth("GRP.IN") == 1
    rest.call("POST", f"/api/deployments/{deployed['id']}/start", 202)
    wait_until(lambda: rest.deployment(deployed["id"])["status"] == "running", what="the flow running again")
    assert "<Id>2</Id>" in rest.get("GRP.OUT")["body"]

    # A crashed group is restarted and resumes its flow.
    first_pid = group["pid"]
    psutil.Process(first_pid).kill()
    restarted = wait_until(
        lambda: (
            (c := rest.component("execution-group:default/orders"))
            and c["state"] == "running"
            and c["pid"] != first_pid
            and c
        ),
        what="the group restarted",
    )
    assert restarted["restarts"] >= 1
    rest.call("POST", "/api/queues/GRP.IN/messages", 201, json={"body": "<Order><Id>3</Id></Order>"})
    assert "<Id>3</Id>" in rest.get("GRP.OUT", wait=30)["body"]

    # Stopping the group ends its process and so every flow in it; the system is not degraded.
    wait_until(lambda: rest.group(default["id"], gid)["state"] == "running", what="running before the stop")
    pid = rest.group(default["id"], gid)["pid"]
    assert rest.call("POST", f"/api/groups/{gid}/stop", 202).json()["desiredState"] == "stopped"
    wait_until(lambda: not _alive(pid), what="the group's process ended")
    stopped_group = wait_until(
        lambda: (g := rest.group(default["id"], gid))["state"] == "stopped" and g, what="the group stopped"
    )
    assert stopped_group["pid"] is None
    assert rest.component("execution-group:default/orders")["desired"] == "stopped"  # type: ignore[index]
    assert rest.call("GET", "/api/health").json()["status"] == "ok"
    rest.call("POST", "/api/queues/GRP.IN/messages", 201, json={"body": "<Order><Id>4</Id></Order>"})
    time.sleep(1.5)
    assert rest.depth("GRP.IN") == 1
    refused = rest.call(
        "POST",
        "/api/deployments",
        409,
        json={"document": _flow("Other", "GRP.IN", "GRP.OUT"), "group": "orders"},
    )
    assert refused.json()["code"] == "group_stopped"
    assert rest.call("POST", f"/api/deployments/{deployed['id']}/stop", 409).json()["code"] == "group_stopped"
    audit = rest.call("GET", "/api/audit", 200, params={"target": "group:default/orders"}).json()
    assert [e["action"] for e in audit][:1] == ["group.stop"]

    # Started again, it resumes the flow, which takes the message that waited.
    rest.call("POST", f"/api/groups/{gid}/start", 202)
    assert "<Id>4</Id>" in rest.get("GRP.OUT", wait=60)["body"]
    assert wait_until(lambda: rest.group(default["id"], gid)["state"] == "running", what="running again")

    # Undeployed and deleted, the group's process is stopped and leaves the table.
    rest.call("DELETE", f"/api/deployments/{deployed['id']}", 202)
    wait_until(lambda: rest.deployment(deployed["id"])["status"] == "undeployed", what="undeployed")
    pid = rest.group(default["id"], gid)["pid"]
    rest.call("DELETE", f"/api/brokers/{default['id']}/groups/{gid}", 204)
    wait_until(lambda: rest.component("execution-group:default/orders") is None, what="the component removed")
    wait_until(lambda: not _alive(pid), what="the deleted group's process ended")
    statistics = rest.call("GET", "/api/stats/groups", 200).json()
    assert "orders" not in [g["group"] for g in statistics]
    assert up.stop() == 0
