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
from datetime import UTC, datetime, timedelta
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


def _audit(client: TestClient, target: str) -> list[dict[str, Any]]:
    entries = client.get("/api/audit", params={"target": target, "limit": 50}).json()
    return list(reversed(entries))  # oldest first


def test_every_queue_change_is_audited_with_who_and_when(operator: TestClient) -> None:
    before = datetime.now(UTC) - timedelta(seconds=1)
    defined = operator.post(
        "/api/queues", json={"name": "AUD.Q", "backoutThreshold": 2, "description": "audited"}
    )
    assert defined.status_code == 201, defined.text
    assert defined.json()["backoutThreshold"] == 2
    altered = operator.patch("/api/queues/AUD.Q", json={"maxDepth": 50, "backoutRequeueQ": "AUD.BO"})
    assert altered.status_code == 200, altered.text
    assert altered.json()["attributes"]["max_depth"] == 50 and altered.json()["backoutQueue"] == "AUD.BO"
    put = operator.post("/api/queues/AUD.Q/messages", json={"body": "one"}).json()
    operator.post("/api/queues/AUD.Q/messages", json={"body": "two"})
    operator.post("/api/queues", json={"name": "AUD.OTHER"})
    moved = operator.post(f"/api/queues/AUD.Q/messages/{put['msgId']}/move", json={"to": "AUD.OTHER"}).json()
    got = operator.post("/api/queues/AUD.Q/get").json()
    assert got["body"] == "two"
    operator.post("/api/queues/AUD.Q/messages", json={"body": "three"})
    purged = operator.post("/api/queues/AUD.Q/purge")
    assert purged.json() == {"queue": "AUD.Q", "purged": 1}
    assert operator.delete("/api/queues/AUD.Q").status_code == 204

    entries = _audit(operator, "queue:AUD.Q")
    assert [e["action"] for e in entries] == [
        "queue.define",
        "queue.alter",
        "queue.put",
        "queue.put",
        "queue.move",
        "queue.get",
        "queue.put",
        "queue.purge",
        "queue.delete",
    ]
    assert {e["actor"] for e in entries} == {"operator1"}
    assert all(datetime.fromisoformat(e["at"]) >= before for e in entries)
    assert entries[0]["detail"]["attributes"]["backout_threshold"] == 2
    assert entries[1]["detail"]["attributes"] == {"max_depth": 50, "backout_requeue_q": "AUD.BO"}
    assert entries[2]["detail"]["msgId"] == put["msgId"]
    assert entries[4]["detail"] == {
        "msgId": put["msgId"],
        "to": "AUD.OTHER",
        "newMsgId": moved["msgId"],
        "toOrigin": False,
    }
    assert entries[7]["detail"] == {"purged": 1}


def test_refused_queue_changes_are_not_audited(operator: TestClient, viewer: TestClient) -> None:
    assert operator.post("/api/queues", json={"name": "AUD.TWICE"}).status_code == 201
    assert operator.post("/api/queues", json={"name": "AUD.TWICE"}).status_code == 409
    operator.post("/api/queues/AUD.TWICE/messages", json={"body": "x"})
    not_empty = operator.delete("/api/queues/AUD.TWICE")
    assert not_empty.status_code == 409 and not_empty.json()["code"] == "mq_2055"
    assert operator.patch("/api/queues/AUD.TWICE", json={}).status_code == 422
    assert operator.patch("/api/queues/AUD.TWICE", json={"maxDepth": 0}).status_code == 422
    assert viewer.post("/api/queues/AUD.TWICE/purge").status_code == 403
    assert operator.delete("/api/queues/NO.SUCH.Q").status_code == 404
    actions = [e["action"] for e in _audit(operator, "queue:AUD.TWICE")]
    assert actions == ["queue.define", "queue.put"]
    assert operator.delete("/api/queues/AUD.TWICE", params={"purge": True}).status_code == 204
    assert _audit(operator, "queue:AUD.TWICE")[-1]["detail"] == {"purged": 1}


def test_every_rfh2_folder_of_a_test_message(operator: TestClient) -> None:
    operator.post("/api/queues", json={"name": "RFH.ALL"})
    put = operator.post(
        "/api/queues/RFH.ALL/messages",
        json={
            "body": '{"order": 1}',
            "format": "JSON",
            "rfh2": {
                "domain": "JSON",
                "set": "Orders",
                "type": "Order",
                "format": "v2",
                "usr": {"Region": "EU"},
                "psc": {"topics": ["orders/eu", "orders/all"]},
                "jms": {
                    "dst": "queue:///RFH.ALL",
                    "pri": "7",
                    "dlv": "2",
                    "cid": "corr-1",
                    "tms": "1700000000000",
                },
            },
        },
    )
    assert put.status_code == 201, put.text
    [message] = operator.get("/api/queues/RFH.ALL/messages").json()
    assert message["body"] == '{"order": 1}'
    assert message["rfh2"] == {
        "mcd": {"domain": "json", "set": "Orders", "type": "Order", "format": "v2"},
        "psc": {"Command": "Publish", "Topic": ["orders/eu", "orders/all"]},
        "jms": {"Dst": "queue:///RFH.ALL", "Tms": "1700000000000", "Pri": "7", "Dlv": "2", "Cid": "corr-1"},
        "usr": {"Region": "EU"},
    }
    bad = operator.post(
        "/api/queues/RFH.ALL/messages",
        json={"body": "x", "rfh2": {"domain": "XMLNSC", "jms": {"pri": "high"}}},
    )
    assert bad.status_code == 422 and bad.json()["detail"][0]["pointer"] == "/rfh2/jms/pri"


def test_a_dead_lettered_message_moves_back_to_the_queue_it_came_from(
    operator: TestClient, data_dir: Path
) -> None:
    """The runtime records where a message came from; the Queues page sends it back there."""
    from flowbroker.runtime.connection import QueueConnection
    from flowbroker.runtime.engine import ExecutionGroupRuntime
    from flowbroker.runtime.harness import flow

    for name in ("ORIG.IN", "ORIG.OUT"):
        operator.post("/api/queues", json={"name": name})
    operator.post("/api/queues/SYSTEM.DEAD.LETTER.QUEUE/purge")
    runtime = ExecutionGroupRuntime(lambda: QueueConnection.open(None, data_dir=str(data_dir)))
    document = flow(
        {
            "in": ("MQInput", {"queueName": "ORIG.IN", "messageDomain": "XMLNSC", "transactionMode": "no"}),
            "read": ("Trace", {"destination": "log", "pattern": "${Root.XMLNSC.a}"}),
            "out": ("MQOutput", {"queueName": "ORIG.OUT"}),
        },
        ["in.out -> read", "read.out -> out"],
        name="Origin",
    )
    try:
        runtime.deploy(document)
        operator.post("/api/queues/ORIG.IN/messages", json={"body": "<a>not closed"})
        deadline = time.monotonic() + 20
        dead: list[dict[str, Any]] = []
        while not dead and time.monotonic() < deadline:
            dead = operator.get("/api/queues/SYSTEM.DEAD.LETTER.QUEUE/messages").json()
            time.sleep(0.1)
        runtime.undeploy("Origin")
    finally:
        runtime.shutdown(timeout=10)
    assert len(dead) == 1 and dead[0]["origin"] == "ORIG.IN" and dead[0]["reason"]
    failed = operator.get("/api/queues/failed").json()
    assert failed["deadLetterQueue"] == "SYSTEM.DEAD.LETTER.QUEUE" and failed["deadLetterDepth"] == 1

    msg_id = dead[0]["descriptor"]["msgId"]
    moved = operator.post(f"/api/queues/SYSTEM.DEAD.LETTER.QUEUE/messages/{msg_id}/move-to-origin")
    assert moved.status_code == 200, moved.text
    assert moved.json()["queue"] == "ORIG.IN"
    [back] = operator.get("/api/queues/ORIG.IN/messages").json()
    assert back["body"] == "<a>not closed" and back["origin"] is None and back["reason"] is None
    assert back["descriptor"]["backoutCount"] == 0
    assert operator.get("/api/queues/SYSTEM.DEAD.LETTER.QUEUE/messages").json() == []
    assert _audit(operator, "queue:SYSTEM.DEAD.LETTER.QUEUE")[-1]["detail"]["toOrigin"] is True


def test_a_message_that_records_no_origin_is_not_moved(operator: TestClient) -> None:
    operator.post("/api/queues", json={"name": "NO.ORIGIN"})
    msg_id = operator.post("/api/queues/NO.ORIGIN/messages", json={"body": "stay"}).json()["msgId"]
    refused = operator.post(f"/api/queues/NO.ORIGIN/messages/{msg_id}/move-to-origin")
    assert refused.status_code == 409 and refused.json()["code"] == "no_origin"
    assert [m["body"] for m in operator.get("/api/queues/NO.ORIGIN/messages").json()] == ["stay"]


def test_a_blank_padded_mqhrf2_format_is_read_as_one(operator: TestClient, data_dir: Path) -> None:
    """Flows write the MQMD format blank-padded to 8 characters, as MQ does: its folders still show."""
    from flowbroker.qm.client import Client
    from flowbroker.qm.protocol import MessageDescriptor
    from flowbroker.services import queues

    operator.post("/api/queues", json={"name": "PADDED"})
    header = queues._rfh2_bytes(queues.Rfh2(domain="XMLNSC", usr={"Region": "EU"}), "MQSTR")
    with Client.connect(data_dir=str(data_dir)) as qm:
        qm.put("PADDED", header + b"<a/>", MessageDescriptor(format="MQHRF2  "))
    [message] = operator.get("/api/queues/PADDED/messages").json()
    assert message["body"] == "<a/>"
    assert message["rfh2"] == {"mcd": {"domain": "xmlnsc"}, "usr": {"Region": "EU"}}


def test_a_queue_name_holding_a_slash_is_reachable_over_rest(operator: TestClient) -> None:
    # MQ allows "/" in a name; over REST it travels percent-encoded as one path segment.
    name, path = "APP/ORDERS.IN", "/api/queues/APP%2FORDERS.IN"
    assert operator.post("/api/queues", json={"name": name}).status_code == 201
    assert operator.patch(path, json={"maxDepth": 10}).json()["attributes"]["max_depth"] == 10
    put = operator.post(path + "/messages", json={"body": "one"})
    assert put.status_code == 201, put.text
    assert put.json()["queue"] == name
    assert [m["body"] for m in operator.get(path + "/messages").json()] == ["one"]
    moved = operator.post(f"{path}/messages/{put.json()['msgId']}/move", json={"to": "APP/ORDERS.BACK"})
    assert moved.status_code == 404  # the target does not exist: the message stays
    assert operator.post(path + "/get", params={"wait": 0}).json()["body"] == "one"
    assert operator.post(path + "/purge").json() == {"queue": name, "purged": 0}
    assert operator.delete(path).status_code == 204
    assert name not in {q["name"] for q in operator.get("/api/queues").json()}


@pytest.mark.parametrize("name", ["A..B", "..", ".", "../SYSTEM.DEAD.LETTER.QUEUE", "QUEUE.É", "x" * 49, ""])
def test_a_queue_name_outside_the_rule_is_refused_by_the_api(operator: TestClient, name: str) -> None:
    refused = operator.post("/api/queues", json={"name": name})
    assert refused.status_code == 422, refused.text
    assert refused.json()["detail"][0]["pointer"] == "/name"


@pytest.mark.parametrize(
    ("path", "payload"), [("/api/queues", {"name": "A..B"}), ("/api/queues/Q%20ONE/get", None)]
)
def test_a_queue_name_refusal_states_the_rule_not_a_regular_expression(
    operator: TestClient, path: str, payload: dict[str, str] | None
) -> None:
    refused = operator.post(path, json=payload) if payload else operator.post(path)
    assert refused.status_code == 422, refused.text
    message = refused.json()["message"]
    assert "an MQ queue name: 1-48 characters of A-Z a-z 0-9" in message, message
    assert "^" not in message and "should match pattern" not in message


@pytest.mark.parametrize("name", ["A..B", "..", ".", "QUEUE.É", "QUEUE ONE", "x" * 49])
def test_the_queue_manager_refuses_the_names_the_api_refuses(data_dir: Path, name: str) -> None:
    from flowbroker.qm.client import Client
    from flowbroker.qm.protocol import RC_BAD_ARGUMENT, QMError

    with Client.connect(data_dir=str(data_dir)) as qm:
        with pytest.raises(QMError) as refused:
            qm.define_queue(name)
    assert refused.value.reason_code == RC_BAD_ARGUMENT


def test_the_queue_name_rule_is_in_the_openapi_schema(viewer: TestClient) -> None:
    from flowbroker.qm.names import MAX_QUEUE_NAME, QUEUE_NAME_PATTERN

    schema = viewer.get("/api/openapi.json").json()
    name = schema["components"]["schemas"]["DefineIn"]["properties"]["name"]
    assert (name["pattern"], name["maxLength"], name["minLength"]) == (QUEUE_NAME_PATTERN, MAX_QUEUE_NAME, 1)
    parameter = next(
        p
        for p in schema["paths"]["/api/queues/{queue}/messages"]["get"]["parameters"]
        if p["name"] == "queue"
    )
    assert parameter["schema"]["pattern"] == QUEUE_NAME_PATTERN
    assert parameter["schema"]["maxLength"] == MAX_QUEUE_NAME


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("maxDepth", True),
        ("maxDepth", False),
        ("backoutThreshold", True),
        ("defaultPersistence", True),
        ("maxDepth", "10"),
        ("defaultPriority", 1.0),
    ],
)
def test_an_integer_attribute_refuses_booleans_strings_and_floats(
    operator: TestClient, field: str, value: Any
) -> None:
    refused = operator.post("/api/queues", json={"name": "STRICT.INT", field: value})
    assert refused.status_code == 422, refused.text
    assert refused.json()["detail"][0]["pointer"] == f"/{field}"


def test_a_message_priority_refuses_a_boolean(operator: TestClient) -> None:
    assert operator.post("/api/queues", json={"name": "STRICT.PRIORITY"}).status_code == 201
    refused = operator.post("/api/queues/STRICT.PRIORITY/messages", json={"body": "x", "priority": True})
    assert refused.status_code == 422, refused.text
    assert refused.json()["detail"][0]["pointer"] == "/priority"
