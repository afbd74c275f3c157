"""The step debugger over REST against a real worker process and queue manager."""

from __future__ import annotations

import itertools
import time
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from flowbroker.api.app import create_app
from flowbroker.commands.platform import prepare_repository
from flowbroker.qm.harness import QueueManagerProcess
from flowbroker.qm.protocol import MessageDescriptor
from flowbroker.runtime.harness import flow, get_all
from flowbroker.settings import Settings
from flowbroker.worker.harness import WorkerProcess
from worker.conftest import PASSWORD, Platform

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from fastapi.testclient import TestClient

pytestmark = pytest.mark.timeout(180)
_ids = itertools.count(1)

UPPER = """CREATE COMPUTE MODULE Upper
  CREATE FUNCTION Main() RETURNS BOOLEAN
  BEGIN
    DECLARE who CHARACTER InputRoot.XMLNSC.r.name;
    SET OutputRoot = InputRoot;
    SET OutputRoot.XMLNSC.r.name = UPPER(who);
    RETURN TRUE;
  END;
END MODULE;"""


@pytest.fixture(scope="module")
def platform(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Platform]:
    data: Path = tmp_path_factory.mktemp("debug")
    settings = Settings(data=data, admin_password=PASSWORD)
    prepare_repository(settings)
    app = create_app(settings)
    with QueueManagerProcess(data, fsync=False) as qm, TestClient(app) as client:
        token = client.post("/api/auth/login", json={"username": "admin", "password": PASSWORD}).json()[
            "accessToken"
        ]
        with WorkerProcess(data):
            yield Platform(data, client, qm, token)
    app.state.engine.dispose()


def _queues(platform: Platform, *bases: str) -> list[str]:
    names = []
    with platform.qm.client() as qm:
        for base in bases:
            name = f"DBGREST.{base}.{next(_ids)}"
            qm.define_queue(name, replace=True)
            names.append(name)
    return names


def _group(platform: Platform) -> tuple[int, dict[str, Any]]:
    (broker,) = [b for b in platform.request("GET", "/api/brokers").json() if b["name"] == "default"]
    (group,) = [g for g in broker["groups"] if g["name"] == "default"]
    return broker["id"], group


def _pauses(
    platform: Platform, deployment: int, count: int = 1, timeout: float = 30.0
) -> list[dict[str, Any]]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = platform.request("GET", f"/api/deployments/{deployment}/pauses").json()
        if len(found) >= count:
            return found  # type: ignore[no-any-return]
        time.sleep(0.1)
    raise AssertionError(f"no pause of deployment {deployment} within {timeout}s")


def _gone(platform: Platform, deployment: int, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while platform.request("GET", f"/api/deployments/{deployment}/pauses").json():
        assert time.monotonic() < deadline, "the paused thread did not go on"
        time.sleep(0.1)


def _field(message: dict[str, Any], *names: str) -> dict[str, Any]:
    node = next(t for t in message["trees"] if t["name"] == "Root")
    for name in names:
        node = next(c for c in node["children"] if c["name"] == name)
    return node


def test_debugging_over_rest_on_a_development_group_only(platform: Platform) -> None:
    src, dst = _queues(platform, "IN", "OUT")
    doc = flow(
        {
            "in": ("MQInput", {"queueName": src, "messageDomain": "XMLNSC"}),
            "upper": ("Compute", {"esql": UPPER}),
            "out": ("MQOutput", {"queueName": dst}),
        },
        ["in.out -> upper", "upper.out -> out"],
        name="RestDebug",
    )
    created = platform.deploy(doc)
    assert platform.wait_status(created["id"], {"running", "failed"})["status"] == "running"
    deployment = created["id"]
    broker_id, group = _group(platform)
    assert group["development"] is False
    wanted = {"connections": ["in.out->upper.in"], "esql": []}
    # a production group never pauses
    refused = platform.request("PUT", f"/api/deployments/{deployment}/breakpoints", json=wanted)
    assert refused.status_code == 409, refused.text
    assert refused.json()["code"] == "production_group"
    assert "production group" in refused.json()["message"]
    marked = platform.request(
        "PATCH", f"/api/brokers/{broker_id}/groups/{group['id']}", json={"development": True}
    )
    assert marked.status_code == 200 and marked.json()["development"] is True
    # breakpoints the flow does not have are refused, each with where it is
    bad = platform.request(
        "PUT",
        f"/api/deployments/{deployment}/breakpoints",
        json={"connections": ["in.out->out.in"], "esql": [{"node": "upper", "line": 99}]},
    )
    assert bad.status_code == 422, bad.text
    pointers = [p["pointer"] for p in bad.json()["detail"]]
    assert pointers == ["/connections/0", "/esql/0/line"]
    ok = platform.request("PUT", f"/api/deployments/{deployment}/breakpoints", json=wanted)
    assert ok.status_code == 200, ok.text
    assert ok.json() == {**wanted, "development": True, "armed": False}
    assert platform.request("GET", f"/api/deployments/{deployment}/breakpoints").json()["connections"] == [
        "in.out->upper.in"
    ]
    # the worker picks the breakpoints up and says so; a message then pauses on the connection
    deadline = time.monotonic() + 30
    while not platform.request("GET", f"/api/deployments/{deployment}/breakpoints").json()["armed"]:
        assert time.monotonic() < deadline, "the worker did not arm the breakpoints"
        time.sleep(0.1)
    with platform.qm.client() as qm:
        qm.put(src, b"<r><name>ada</name></r>", MessageDescriptor(persistence=1))
        (pause,) = _pauses(platform, deployment)
        assert pause["connection"] == "in.out->upper.in" and pause["kind"] == "connection"
        name = _field(pause["message"], "XMLNSC", "r", "name")
        assert name["value"] == "ada"
        assert qm.get(dst, wait=0.5) is None
        url = f"/api/deployments/{deployment}/pauses/{pause['id']}"
        wrong = platform.request(
            "POST", url, json={"edits": [{"tree": "Root", "ref": name["ref"], "value": "x", "type": "DATE"}]}
        )
        assert wrong.status_code == 422 and wrong.json()["detail"][0]["pointer"] == "/edits/0/value"
        nowhere = platform.request(
            "POST", url, json={"edits": [{"tree": "Root", "ref": [99], "value": "x", "type": "CHARACTER"}]}
        )
        assert nowhere.status_code == 422 and nowhere.json()["detail"][0]["pointer"] == "/edits/0/ref"
        edit = {"tree": "Root", "ref": name["ref"], "value": "grace", "type": "CHARACTER"}
        sent = platform.request("POST", url, json={"action": "resume", "edits": [edit]})
        assert sent.status_code == 202, sent.text
        (out,) = get_all(qm, dst, 1, wait=30)
        assert out.body == b"<r><name>GRACE</name></r>"
        _gone(platform, deployment)
        # abort backs the unit of work out: the message is back, held at the breakpoint again
        qm.put(src, b"<r><name>bob</name></r>", MessageDescriptor(persistence=1))
        (first,) = _pauses(platform, deployment)
        aborted = platform.request(
            "POST", f"/api/deployments/{deployment}/pauses/{first['id']}", json={"action": "abort"}
        )
        assert aborted.status_code == 202
        deadline = time.monotonic() + 30
        again: list[dict[str, Any]] = []
        while time.monotonic() < deadline:
            again = [p for p in _pauses(platform, deployment) if p["id"] != first["id"]]
            if again:
                break
            time.sleep(0.1)
        assert again and _field(again[0]["message"], "MQMD", "BackoutCount")["value"] == "1"
        assert qm.get(dst, wait=0.2) is None
        audit = platform.request("GET", "/api/audit").json()
        actions = [e["action"] for e in (audit["items"] if isinstance(audit, dict) else audit)]
        assert "debug.abort" in actions and "debug.resume" in actions
        # back to production: the held message goes on and breakpoints are refused
        prod = platform.request(
            "PATCH", f"/api/brokers/{broker_id}/groups/{group['id']}", json={"development": False}
        )
        assert prod.json()["development"] is False
        (out,) = get_all(qm, dst, 1, wait=30)
        assert out.body == b"<r><name>BOB</name></r>"
        _gone(platform, deployment)
        assert (
            platform.request("PUT", f"/api/deployments/{deployment}/breakpoints", json=wanted).status_code
            == 409
        )
        # and a production group's flow runs through without pausing
        qm.put(src, b"<r><name>eve</name></r>")
        assert get_all(qm, dst, 1, wait=30)[0].body == b"<r><name>EVE</name></r>"
    gone = platform.request(
        "POST", f"/api/deployments/{deployment}/pauses/{first['id']}", json={"action": "resume"}
    )
    assert gone.status_code == 409
    # on a development group again, a redeploy of a changed version keeps the breakpoints it still has
    platform.request("PATCH", f"/api/brokers/{broker_id}/groups/{group['id']}", json={"development": True})
    doc["connections"].append(
        {"from": {"node": "upper", "terminal": "failure"}, "to": {"node": "out", "terminal": "in"}}
    )
    redeployed = platform.deploy(doc)
    assert platform.wait_status(redeployed["id"], {"running", "failed"})["status"] == "running"
    kept = platform.request("GET", f"/api/deployments/{redeployed['id']}/breakpoints").json()
    assert kept["connections"] == ["in.out->upper.in"]
    platform.request("PATCH", f"/api/brokers/{broker_id}/groups/{group['id']}", json={"development": False})


def test_a_redeploy_carries_only_the_breakpoints_its_version_still_has() -> None:
    from flowbroker.services.debugger import carried

    doc = flow(
        {
            "in": ("MQInput", {"queueName": "Q"}),
            "upper": ("Compute", {"esql": UPPER}),
            "out": ("MQOutput", {"queueName": "R"}),
        },
        ["in.out -> upper"],
    )
    previous = {
        "connections": ["in.out->upper.in", "upper.out->out.in"],
        "esql": [{"node": "upper", "line": 6}, {"node": "upper", "line": 40}, {"node": "gone", "line": 1}],
    }
    assert carried(previous, doc) == {
        "connections": ["in.out->upper.in"],
        "esql": [{"node": "upper", "line": 6}],
    }
