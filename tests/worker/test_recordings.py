"""The flow exerciser against a real execution group: record over REST, read each connection, send test messages, make test cases."""

from __future__ import annotations

import itertools
import time
from typing import Any

import pytest
from flowbroker.runtime.harness import flow, get_all
from flowbroker.worker.harness import WorkerProcess

pytestmark = pytest.mark.timeout(180)
_ids = itertools.count(1)

DOUBLE = """CREATE COMPUTE MODULE Double
  CREATE FUNCTION Main() RETURNS BOOLEAN
  BEGIN
    SET OutputRoot = InputRoot;
    SET OutputRoot.XMLNSC.order.qty = CAST(InputRoot.XMLNSC.order.qty AS INTEGER) * 2;
    SET Environment.Seen = 'yes';
    RETURN TRUE;
  END;
END MODULE;
"""


@pytest.fixture(scope="module")
def worker(platform):
    with WorkerProcess(platform.data) as process:
        yield process


def _deployed(platform, name: str) -> tuple[dict[str, Any], str, str]:
    n = next(_ids)
    src, dst = f"REC.IN.{n}", f"REC.OUT.{n}"
    with platform.qm.client() as qm:
        qm.define_queue(src, replace=True)
        qm.define_queue(dst, replace=True)
    document = flow(
        {
            "in": ("MQInput", {"queueName": src, "messageDomain": "XMLNSC"}),
            "c": ("Compute", {"esql": DOUBLE}),
            "out": ("MQOutput", {"queueName": dst}),
        },
        ["in.out -> c", "c.out -> out"],
        name=f"{name}{n}",
    )
    created = platform.deploy(document)
    return platform.wait_status(created["id"], {"running"}), src, dst


def _finished(platform, deployment: int, recording: str, timeout: float = 30.0) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        found = platform.request("GET", f"/api/deployments/{deployment}/recordings/{recording}").json()
        if found["status"] in ("complete", "failed") or time.monotonic() > deadline:
            return found  # type: ignore[no-any-return]
        time.sleep(0.1)


def _viewer(platform) -> dict[str, str]:
    name = f"watcher{next(_ids)}"
    created = platform.request(
        "POST", "/api/users", json={"username": name, "password": "watching-only-1", "role": "viewer"}
    )
    assert created.status_code == 201, created.text
    token = platform.client.post(
        "/api/auth/login", json={"username": name, "password": "watching-only-1"}
    ).json()
    return {"Authorization": f"Bearer {token['accessToken']}"}


def test_test_message_is_recorded_at_each_connection_in_the_group(platform, worker) -> None:
    deployment, _, dst = _deployed(platform, "Exercised")
    listed = platform.request("GET", f"/api/flows/{deployment['flowId']}/deployments").json()
    assert [(d["id"], d["status"]) for d in listed] == [(deployment["id"], "running")]
    sent = platform.request(
        "POST",
        f"/api/deployments/{deployment['id']}/test-messages",
        json={"node": "in", "message": {"body": "<order><qty>3</qty></order>", "format": "XML"}},
    )
    assert sent.status_code == 201, sent.text
    answer = sent.json()
    assert answer["kind"] == "queue" and answer["queue"].startswith("REC.IN.")
    recording = answer["recording"]
    assert recording["status"] == "recording" and recording["maxMessages"] == 1
    with platform.qm.client() as qm:
        (out,) = get_all(qm, dst, 1)
    assert b"<qty>6</qty>" in out.body
    found = _finished(platform, deployment["id"], recording["id"])
    assert found["status"] == "complete", found
    assert found["reason"] == "1 message recorded"
    crossings = {c["connection"]: c for c in found["crossingsList"]}
    assert set(crossings) == {"in.out->c.in", "c.out->out.in"}
    assert {c["message"] for c in crossings.values()} == {1}
    before = platform.request(
        "GET",
        f"/api/deployments/{deployment['id']}/recordings/{recording['id']}/crossings/{crossings['in.out->c.in']['seq']}",
    ).json()
    after = platform.request(
        "GET",
        f"/api/deployments/{deployment['id']}/recordings/{recording['id']}/crossings/{crossings['c.out->out.in']['seq']}",
    ).json()
    assert before["view"]["body"]["text"] == "<order>\n  <qty>3</qty>\n</order>"
    assert after["view"]["body"]["text"] == "<order>\n  <qty>6</qty>\n</order>"
    environment = after["view"]["trees"][2]
    assert [(f["name"], f["value"]) for f in environment["children"]] == [("Seen", "yes")]
    audit = platform.request("GET", "/api/audit", params={"target": f"deployment:{deployment['id']}"}).json()
    actions = {entry["action"] for entry in audit}
    assert {"recording.start", "recording.read"} <= actions


def test_body_that_does_not_parse_is_refused_with_line_and_column_and_nothing_is_sent(
    platform, worker
) -> None:
    deployment, src, _ = _deployed(platform, "BadBody")
    refused = platform.request(
        "POST",
        f"/api/deployments/{deployment['id']}/test-messages",
        json={"node": "in", "message": {"body": "<order>\n  <qty>3</qyt>\n</order>"}},
    )
    assert refused.status_code == 422, refused.text
    (problem,) = refused.json()["detail"]
    assert (problem["pointer"], problem["line"], problem["column"]) == ("/message/body", 2, 15)
    assert problem["message"].startswith("XMLNSC: malformed XML at line 2, column 15 (byte offset 22)")
    wrong_node = platform.request(
        "POST",
        f"/api/deployments/{deployment['id']}/test-messages",
        json={"node": "out", "message": {"body": "<a/>"}},
    )
    assert wrong_node.status_code == 422
    assert "test messages go to MQInput and HTTPInput nodes" in wrong_node.json()["message"]
    with platform.qm.client() as qm:
        assert qm.get(src) is None
    assert platform.request("GET", f"/api/deployments/{deployment['id']}/recordings").json() == []


def test_viewers_see_recordings_only_operators_start_them_and_bounds_are_checked(platform, worker) -> None:
    deployment, src, dst = _deployed(platform, "Watched")
    viewer = _viewer(platform)
    path = f"/api/deployments/{deployment['id']}/recordings"
    denied = platform.client.post(path, json={"maxMessages": 2, "seconds": 30}, headers=viewer)
    assert denied.status_code == 403
    too_many = platform.request("POST", path, json={"maxMessages": 100_000, "seconds": 30})
    assert too_many.status_code == 422 and too_many.json()["detail"][0]["pointer"] == "/maxMessages"
    started = platform.request("POST", path, json={"maxMessages": 2, "seconds": 30})
    assert started.status_code == 202, started.text
    recording = started.json()
    deadline = time.monotonic() + 30
    while platform.request("GET", f"{path}/{recording['id']}").json()["status"] == "requested":
        assert time.monotonic() < deadline
        time.sleep(0.05)
    with platform.qm.client() as qm:
        for qty in (1, 2, 3):
            qm.put(src, f"<order><qty>{qty}</qty></order>".encode())
        get_all(qm, dst, 3)
    found = _finished(platform, deployment["id"], recording["id"])
    assert found["messages"] == 2 and found["reason"] == "2 messages recorded"
    listed = platform.client.get(path, headers=viewer)
    assert listed.status_code == 200 and [r["id"] for r in listed.json()] == [recording["id"]]
    first = platform.client.get(f"{path}/{recording['id']}/crossings/1", headers=viewer)
    assert first.status_code == 200 and first.json()["view"]["trees"][0]["name"] == "Root"
    assert platform.client.delete(f"{path}/{recording['id']}", headers=viewer).status_code == 403
    assert platform.request("DELETE", f"{path}/{recording['id']}").status_code == 204
    assert platform.request("GET", f"{path}/{recording['id']}").status_code == 404


def test_test_message_to_an_http_input_is_posted_to_its_group_listener_and_recorded(platform) -> None:
    brokers = platform.request("GET", "/api/brokers").json()
    default = next(b for b in brokers if b["name"] == "default")
    made = platform.request("POST", f"/api/brokers/{default['id']}/groups", json={"name": "rechttp"})
    assert made.status_code in (201, 409), made.text
    n = next(_ids)
    document = flow(
        {
            "in": ("HTTPInput", {"path": f"/exercise/{n}", "messageDomain": "JSON"}),
            "reply": ("HTTPReply", {}),
        },
        ["in.out -> reply"],
        name=f"HttpExercised{n}",
    )
    env = {"FLOWBROKER_HTTP_PORT": "0", "FLOWBROKER_STATS_INTERVAL": "1"}
    with WorkerProcess(platform.data, group="rechttp", env=env):
        created = platform.deploy(document, group="rechttp")
        platform.wait_status(created["id"], {"running"})
        request = {
            "node": "in",
            "message": {"body": '{"order": {"qty": 5}}'},
            "http": {"method": "POST", "contentType": "application/json", "headers": {"X-Test": "yes"}},
        }
        bad = platform.request(
            "POST",
            f"/api/deployments/{created['id']}/test-messages",
            json={**request, "message": {"body": '{"order": }'}},
        )
        assert bad.status_code == 422 and bad.json()["detail"][0]["line"] == 1, bad.text
        deadline = time.monotonic() + 30
        while True:  # the listener's address arrives with the group's next statistics
            sent = platform.request("POST", f"/api/deployments/{created['id']}/test-messages", json=request)
            if sent.status_code != 409 or time.monotonic() > deadline:
                break
            time.sleep(0.3)
        assert sent.status_code == 201, sent.text
        answer = sent.json()
        assert answer["kind"] == "http" and answer["httpStatus"] == 200
        assert '"qty":5' in answer["httpReply"].replace(" ", "")
        found = _finished(platform, created["id"], answer["recording"]["id"])
        (crossing,) = found["crossingsList"]
        assert crossing["connection"] == "in.out->reply.in"
        shown = platform.request(
            "GET", f"/api/deployments/{created['id']}/recordings/{answer['recording']['id']}/crossings/1"
        ).json()
        assert shown["view"]["body"]["format"] == "json"
        headers = next(f for f in shown["view"]["trees"][0]["children"] if f["name"] == "HTTPInputHeader")
        assert ("X-Test", "yes") in [(f["name"], f["value"]) for f in headers["children"]]
        platform.request("DELETE", f"/api/deployments/{created['id']}")
        platform.wait_status(created["id"], {"undeployed"})


def _recorded(platform, deployment: dict, body: str) -> str:
    sent = platform.request(
        "POST",
        f"/api/deployments/{deployment['id']}/test-messages",
        json={"node": "in", "message": {"body": body, "format": "XML"}},
    )
    assert sent.status_code == 201, sent.text
    recording = sent.json()["recording"]["id"]
    assert _finished(platform, deployment["id"], recording)["status"] == "complete"
    return str(recording)


def test_a_recorded_message_becomes_a_test_case_saved_with_the_flow_that_passes(platform, worker) -> None:
    deployment, _, dst = _deployed(platform, "CaseFromRecording")
    recording = _recorded(platform, deployment, "<order><qty>3</qty><id>7</id></order>")
    with platform.qm.client() as qm:
        get_all(qm, dst, 1)
    path = f"/api/deployments/{deployment['id']}/recordings/{recording}/test-cases"
    made = platform.request(
        "POST", path, json={"name": "doubles the quantity", "ignore": ["Root.XMLNSC.order.id"]}
    )
    assert made.status_code == 201, made.text
    answer = made.json()
    assert answer["flowId"] == deployment["flowId"] and answer["version"] == 2
    case = answer["case"]
    assert case["input"]["node"] == "in"
    assert case["input"]["body"] == "<order>\n  <qty>3</qty>\n  <id>7</id>\n</order>"
    ((expected,),) = [e["messages"] for e in case["expect"]]
    assert [e["node"] for e in case["expect"]] == ["out"]
    assert expected["body"] == "<order>\n  <qty>6</qty>\n  <id>7</id>\n</order>"
    assert expected["domain"] == "XMLNSC"
    assert case["ignore"][-1] == "Root.XMLNSC.order.id" and "MQMD.MsgId" in case["ignore"]
    stored = platform.request("GET", f"/api/flows/{deployment['flowId']}").json()
    assert [c["name"] for c in stored["document"]["tests"]] == ["doubles the quantity"]
    again = platform.request("POST", path, json={"name": "doubles the quantity"})
    assert again.status_code == 409
    run = platform.request("POST", f"/api/flows/{deployment['flowId']}/tests/run", json={})
    assert run.status_code == 200, run.text
    assert run.json()["passed"], run.json()


def test_a_missing_recording_message_or_output_is_refused_and_viewers_cannot_make_cases(
    platform, worker
) -> None:
    deployment, _, dst = _deployed(platform, "CaseRefused")
    recording = _recorded(platform, deployment, "<order><qty>1</qty></order>")
    with platform.qm.client() as qm:
        get_all(qm, dst, 1)
    base = f"/api/deployments/{deployment['id']}/recordings"
    no_message = platform.request("POST", f"{base}/{recording}/test-cases", json={"name": "x", "message": 2})
    assert no_message.status_code == 404 and "has no message 2" in no_message.json()["message"]
    unknown = platform.request("POST", f"{base}/{'0' * 32}/test-cases", json={"name": "x"})
    assert unknown.status_code == 404
    other_tree = platform.request(
        "POST", f"{base}/{recording}/test-cases", json={"name": "x", "ignore": ["Environment.Seen"]}
    )
    assert other_tree.status_code == 422 and other_tree.json()["detail"][0]["pointer"] == "/ignore/0"
    viewer = platform.client.post(
        f"{base}/{recording}/test-cases", json={"name": "x"}, headers=_viewer(platform)
    )
    assert viewer.status_code == 403
    # the path the message took: in -> c only, once the output node's connection is gone
    flow = platform.request("GET", f"/api/flows/{deployment['flowId']}").json()
    document = flow["document"]
    document["connections"] = [c for c in document["connections"] if c["to"]["node"] != "out"]
    redeployed = platform.deploy(document)
    running = platform.wait_status(redeployed["id"], {"running"})
    silent = _recorded(platform, running, "<order><qty>1</qty></order>")
    no_output = platform.request(
        "POST", f"/api/deployments/{running['id']}/recordings/{silent}/test-cases", json={"name": "x"}
    )
    assert no_output.status_code == 422, no_output.text
    assert "reached no node that writes to a queue" in no_output.json()["message"]
