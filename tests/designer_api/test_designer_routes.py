"""The designer's own routes: ESQL diagnostics and environment, and queues over REST on a real queue manager."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from fastapi.testclient import TestClient

from flowbroker.api.app import create_app
from flowbroker.repository import db
from flowbroker.services import users
from flowbroker.settings import Settings

PASSWORD = "designer-routes-pass"
# The module's fixture runs a queue manager process: bound every test so none can hang the run.
pytestmark = pytest.mark.timeout(120)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A data directory served by a real queue manager process (stopped afterwards)."""
    data = tmp_path_factory.mktemp("designer-routes")
    proc = subprocess.Popen(
        [sys.executable, "-m", "flowbroker.cli", "qm", "--data", str(data), "--port", str(_free_port())],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 30
        while not (data / "qm.json").is_file():
            if proc.poll() is not None:
                pytest.fail(f"the queue manager exited: {proc.stderr.read().decode() if proc.stderr else ''}")
            if time.monotonic() > deadline:
                pytest.fail("the queue manager wrote no qm.json within 30 s")
            time.sleep(0.1)
        time.sleep(0.3)
        yield data
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=5)


def _client(data: Path, role: str) -> TestClient:
    settings = Settings(data=data, frontend_dist=str(data / "no-dist"))
    app = create_app(settings)
    engine = db.engine_from_settings(settings)
    with db.session_scope(db.session_factory(engine)) as session:
        try:
            users.create(session, "test", f"{role}1", PASSWORD, role)
        except Exception:
            pass
    engine.dispose()
    client = TestClient(app)
    token = client.post("/api/auth/login", json={"username": f"{role}1", "password": PASSWORD}).json()
    client.headers["Authorization"] = f"Bearer {token['accessToken']}"
    return client


@pytest.fixture(scope="module")
def operator(data_dir: Path) -> TestClient:
    return _client(data_dir, "operator")


@pytest.fixture(scope="module")
def viewer(data_dir: Path) -> TestClient:
    return _client(data_dir, "viewer")


def test_esql_check_names_line_and_column(viewer: TestClient) -> None:
    bad = viewer.post("/api/esql/check", json={"source": "SET OutputRoot = InputRoot;\nSET x = ;\n"}).json()
    assert bad["valid"] is False
    assert bad["diagnostics"][0] == {
        "line": 2,
        "column": 9,
        "severity": "error",
        "message": "syntax error: unexpected ';'",
    }
    good = viewer.post("/api/esql/check", json={"source": "SET OutputRoot = InputRoot;"}).json()
    assert good == {"valid": True, "diagnostics": []}


def test_esql_check_reports_what_the_deploy_compile_reports(viewer: TestClient) -> None:
    source = "SET OutputRoot = InputRoot;\nSET OutputRoot.XMLNSC.A = NOSUCHFUNC(1);\n"
    found = viewer.post("/api/esql/check", json={"source": source}).json()
    assert found["valid"] is False
    assert found["diagnostics"] == [
        {"line": 2, "column": 27, "severity": "error", "message": "routine 'NOSUCHFUNC' is not defined"}
    ]


def test_esql_check_refuses_a_malformed_request(viewer: TestClient) -> None:
    response = viewer.post("/api/esql/check", json={"text": "SET a = 1;"})
    assert response.status_code == 422
    assert set(response.json()) == {"code", "message", "detail"}


def test_esql_environment_lists_keywords_and_correlation_names(viewer: TestClient) -> None:
    env = viewer.get("/api/esql/environment").json()
    assert {"SET", "DECLARE", "IF"} <= set(env["keywords"])
    assert "InputRoot" in env["correlationNames"] and "OutputRoot" in env["correlationNames"]
    details = {f["name"]: f for f in env["functionDetails"]}
    assert set(env["functions"]) == set(details)
    assert details["ABS"]["signature"].startswith("ABS(")


def test_put_browse_get_and_move_a_message(operator: TestClient) -> None:
    for name in ("DQ.IN", "DQ.BACK"):
        assert operator.post("/api/queues", json={"name": name}).status_code == 201
    again = operator.post("/api/queues", json={"name": "DQ.IN"})
    assert again.status_code == 409 and again.json()["code"] == "mq_2100"

    put = operator.post(
        "/api/queues/DQ.IN/messages",
        json={
            "body": "<Order/>",
            "format": "XML",
            "correlId": "c-1",
            "rfh2": {"domain": "XMLNSC", "usr": {"Region": "EU", "Priority": "high"}},
        },
    )
    assert put.status_code == 201, put.text
    depths = {q["name"]: q["depth"] for q in operator.get("/api/queues").json()}
    assert depths["DQ.IN"] == 1

    browsed = operator.get("/api/queues/DQ.IN/messages").json()
    assert len(browsed) == 1
    message: dict[str, Any] = browsed[0]
    assert message["body"] == "<Order/>"
    assert message["descriptor"]["format"] == "MQHRF2"
    assert message["rfh2"] == {"mcd": {"domain": "xmlnsc"}, "usr": {"Region": "EU", "Priority": "high"}}
    assert bytes.fromhex(message["descriptor"]["correlId"]).rstrip(b"\0") == b"c-1"
    assert message["descriptor"]["msgId"] == put.json()["msgId"]

    moved = operator.post(f"/api/queues/DQ.IN/messages/{put.json()['msgId']}/move", json={"to": "DQ.BACK"})
    assert moved.status_code == 200, moved.text
    depths = {q["name"]: q["depth"] for q in operator.get("/api/queues").json()}
    assert depths["DQ.IN"] == 0 and depths["DQ.BACK"] == 1

    got = operator.post("/api/queues/DQ.BACK/get").json()
    assert got["body"] == "<Order/>"
    assert operator.post("/api/queues/DQ.BACK/get").json() is None


def test_a_failed_move_loses_no_message(operator: TestClient) -> None:
    operator.post("/api/queues", json={"name": "DQ.KEEP"})
    msg_id = operator.post("/api/queues/DQ.KEEP/messages", json={"body": "keep me"}).json()["msgId"]
    refused = operator.post(f"/api/queues/DQ.KEEP/messages/{msg_id}/move", json={"to": "NO.SUCH.QUEUE"})
    assert refused.status_code == 404 and refused.json()["code"] == "mq_2085"
    assert [m["body"] for m in operator.get("/api/queues/DQ.KEEP/messages").json()] == ["keep me"]


def test_bad_queue_requests_are_named(operator: TestClient, viewer: TestClient) -> None:
    assert operator.post("/api/queues/bad name!/messages", json={"body": "x"}).status_code in (404, 422)
    unknown = operator.post("/api/queues/NOT.THERE/messages", json={"body": "x"})
    assert unknown.status_code == 404 and "NOT.THERE" in unknown.json()["message"]
    bad_priority = operator.post("/api/queues/DQ.IN/messages", json={"body": "x", "priority": 12})
    assert bad_priority.status_code == 422
    assert "priority" in json.dumps(bad_priority.json()["detail"])
    bad_usr = operator.post(
        "/api/queues/DQ.IN/messages", json={"body": "x", "rfh2": {"domain": "XMLNSC", "usr": {"1bad": "v"}}}
    )
    assert bad_usr.status_code == 422
    assert viewer.post("/api/queues/DQ.IN/messages", json={"body": "x"}).status_code == 403
    assert viewer.get("/api/queues").status_code == 200
