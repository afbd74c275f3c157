"""A deployment's status tells the truth: a flow whose input queue does not exist is waiting for it."""

from __future__ import annotations

import itertools
import time
from typing import Any

import pytest
from flowbroker.qm.protocol import QMError
from flowbroker.runtime.harness import flow, get_all
from flowbroker.worker.harness import WorkerProcess

pytestmark = pytest.mark.timeout(180)
_ids = itertools.count(1)


@pytest.fixture(scope="module")
def worker(platform):
    # statistics (and so the waiting check) every second keeps the test short
    with WorkerProcess(platform.data, env={"FLOWBROKER_STATS_INTERVAL": "1"}) as process:
        yield process


def _names(*bases: str) -> list[str]:
    return [f"{base}.{next(_ids)}.{int(time.time() * 1000) % 100000}" for base in bases]


def _passthrough(name: str, src: str, dst: str) -> dict[str, Any]:
    return flow(
        {"in": ("MQInput", {"queueName": src}), "out": ("MQOutput", {"queueName": dst})},
        ["in.out -> out"],
        name=name,
    )


def _exists(platform, queue: str) -> bool:
    with platform.qm.client() as qm:
        try:
            qm.inquire_queue(queue)
        except QMError:
            return False
    return True


def test_a_flow_without_its_input_queue_is_waiting_and_runs_once_the_queue_is_defined(
    platform, worker
) -> None:
    src, dst = _names("WAIT.IN", "WAIT.OUT")
    with platform.qm.client() as qm:
        qm.define_queue(dst)
    created = platform.deploy(_passthrough("WaitsForItsQueue", src, dst))
    waiting = platform.wait_status(created["id"], {"waiting", "failed"}, timeout=60)
    assert waiting["status"] == "waiting", waiting
    assert waiting["detail"] == f"waiting: queue {src} does not exist"
    assert [(d["node"], d["property"], d["message"]) for d in waiting["diagnostics"]] == [
        ("in", "queueName", f"waiting: queue {src} does not exist")
    ]
    listed = platform.request("GET", f"/api/groups/{created['groupId']}/flows")
    assert listed.status_code == 200, listed.text
    assert {d["id"]: d["status"] for d in listed.json()}[created["id"]] == "waiting"

    # the monitoring page's statistics say so too
    flows: dict[str, Any] = {}
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        stats = platform.request("GET", "/api/stats/groups/default/default")
        flows = stats.json().get("flows", {}) if stats.status_code == 200 else {}
        if flows.get("WaitsForItsQueue", {}).get("state") == "waiting":
            break
        time.sleep(0.5)
    assert flows["WaitsForItsQueue"]["state"] == "waiting", flows
    assert flows["WaitsForItsQueue"]["detail"] == f"waiting: queue {src} does not exist"

    # stopped, it is stopped; started again, it waits again
    stopped = platform.request("POST", f"/api/deployments/{created['id']}/stop")
    assert stopped.status_code == 202, stopped.text
    assert platform.wait_status(created["id"], {"stopped"}, timeout=60)["detail"] == ""
    started = platform.request("POST", f"/api/deployments/{created['id']}/start")
    assert started.status_code == 202, started.text
    platform.wait_status(created["id"], {"running", "waiting"}, timeout=60)
    again = platform.wait_status(created["id"], {"waiting"}, timeout=60)
    assert again["detail"] == f"waiting: queue {src} does not exist"

    defined = platform.request("POST", "/api/queues", json={"name": src})
    assert defined.status_code == 201, defined.text
    running = platform.wait_status(created["id"], {"running"}, timeout=60)
    assert running["diagnostics"] == [] and running["detail"] == ""
    with platform.qm.client() as qm:
        qm.put(src, b"after the queue was defined")
        assert [m.body for m in get_all(qm, dst, 1)] == [b"after the queue was defined"]


def test_define_queues_on_deploy_defines_the_missing_input_and_output_queues(platform, worker) -> None:
    src, dst = _names("DEFINE.IN", "DEFINE.OUT")
    assert not _exists(platform, src) and not _exists(platform, dst)
    created = platform.deploy(_passthrough("DefinesItsQueues", src, dst), defineQueues=True)
    running = platform.wait_status(created["id"], {"running", "waiting", "failed"}, timeout=60)
    assert running["status"] == "running", running
    assert _exists(platform, src) and _exists(platform, dst)
    with platform.qm.client() as qm:
        qm.put(src, b"into a queue defined on deploy")
        assert [m.body for m in get_all(qm, dst, 1)] == [b"into a queue defined on deploy"]
    # it stays running: nothing waits
    time.sleep(2.5)
    assert platform.request("GET", f"/api/deployments/{created['id']}").json()["status"] == "running"


def test_define_queues_must_be_a_boolean(platform) -> None:
    src, dst = _names("BAD.IN", "BAD.OUT")
    response = platform.request(
        "POST",
        "/api/deployments",
        json={"document": _passthrough("BadOption", src, dst), "defineQueues": "yes"},
    )
    assert response.status_code == 422, response.text
    first = response.json()["detail"][0]
    assert first["pointer"] == "/defineQueues" and "valid boolean" in first["message"]


BROKER_ESQL = """CREATE COMPUTE MODULE Attributes
  CREATE FUNCTION Main() RETURNS BOOLEAN
  BEGIN
    SET OutputRoot.XMLNSC.A.BrokerName = BrokerName;
    SET OutputRoot.XMLNSC.A.BrokerVersion = BrokerVersion;
    SET OutputRoot.XMLNSC.A.ExecutionGroupLabel = ExecutionGroupLabel;
    SET OutputRoot.XMLNSC.A.ExecutionGroupName = ExecutionGroupName;
    SET OutputRoot.XMLNSC.A.MessageFlowLabel = MessageFlowLabel;
    SET OutputRoot.XMLNSC.A.NodeLabel = NodeLabel;
    SET OutputRoot.XMLNSC.A.QueueManagerName = QueueManagerName;
    SET OutputRoot.XMLNSC.A.WorkPath = WorkPath;
    SET OutputRoot.XMLNSC.A.ProcessId = ProcessId;
    SET OutputRoot.XMLNSC.A.Family = Family;
    RETURN TRUE;
  END;
END MODULE;"""


def test_esql_broker_attributes_name_the_running_flow(platform, worker) -> None:
    from xml.etree import ElementTree

    from flowbroker import __version__

    src, dst = _names("ATTR.IN", "ATTR.OUT")
    document = flow(
        {
            "in": ("MQInput", {"queueName": src}),
            "calc": ("Compute", {"esql": BROKER_ESQL}),
            "out": ("MQOutput", {"queueName": dst}),
        },
        ["in.out -> calc", "calc.out -> out"],
        name="ReadsBrokerAttributes",
    )
    for node in document["nodes"]:
        if node["id"] == "calc":
            node["name"] = "Attributes Compute"
    created = platform.deploy(document, defineQueues=True)
    assert platform.wait_status(created["id"], {"running", "failed"})["status"] == "running"
    with platform.qm.client() as qm:
        qm.put(src, b"<In/>")
        [message] = get_all(qm, dst, 1)
    got = {e.tag: e.text for e in ElementTree.fromstring(message.body)}
    assert got == {
        "BrokerName": "default",
        "BrokerVersion": __version__,
        "ExecutionGroupLabel": "default",
        "ExecutionGroupName": "default",
        "MessageFlowLabel": "ReadsBrokerAttributes",
        "NodeLabel": "Attributes Compute",
        "QueueManagerName": "local",
        "WorkPath": str(platform.data),
        "ProcessId": str(worker.pid),
        "Family": "PYTHON",
    }
