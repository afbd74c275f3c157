"""An imported ACE workspace runs: its queues are defined, its flow deploys and moves a message."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from flowbroker.importers.ace.workspace import zip_dirs
from flowbroker.runtime.harness import get_all
from flowbroker.worker.harness import WorkerProcess

pytestmark = pytest.mark.timeout(240)
WORKSPACE = Path(__file__).parents[1] / "importers" / "ace" / "workspace"


def test_the_imported_router_with_its_subflow_and_library_esql_moves_a_message(platform) -> None:
    response = platform.client.post(
        "/api/imports/ace",
        content=zip_dirs([WORKSPACE]),
        headers={**platform.headers, "Content-Type": "application/zip"},
    )
    assert response.status_code == 200, response.text
    report = response.json()
    outcomes = {q["name"]: q.get("outcome") for q in report["queues"] if not q["problem"]}
    assert outcomes == {
        "ACEIMP.ORDERS.IN": "defined",
        "ACEIMP.ORDERS.OUT": "defined",
        "ACEIMP.ORDERS.BACKOUT": "defined",
        "ACEIMP.ORDERS.AUDIT": "defined",
    }
    assert {s["name"]: s.get("outcome") for s in report["subscriptions"] if not s["problem"]} == {
        "ACEIMP.ORDERS.AUDIT": "defined"
    }
    with platform.qm.client() as qm:
        attrs = qm.inquire_queue("ACEIMP.ORDERS.IN")
    assert (attrs["max_depth"], attrs["backout_threshold"], attrs["backout_requeue_q"]) == (
        5000,
        2,
        "ACEIMP.ORDERS.BACKOUT",
    )
    assert attrs["description"] == "Orders arriving"
    # the script's subscription delivers what is published below its topic object's string
    with platform.qm.client() as qm:
        assert qm.publish("aceimp/orders/new", b"<Event/>") == 1
        (event,) = get_all(qm, "ACEIMP.ORDERS.AUDIT", 1, wait=10)
    assert bytes(event.body) == b"<Event/>"

    with WorkerProcess(platform.data):
        # the Java step has no flowbroker node: imported as an Unsupported node that
        # keeps the flow from deploying until it is replaced
        created = platform.request("POST", "/api/deployments", json={"flowName": "orders.OrderRouter"})
        assert created.status_code == 202, created.text
        refused = platform.wait_status(created.json()["id"], {"running", "failed"})
        assert refused["status"] == "failed", refused
        assert "unsupported ACE node (ComIbmJavaCompute)" in json.dumps(refused), refused
        # the user takes it out (it hangs off the Compute's out1 terminal) and deploys again
        flow = platform.request("GET", f"/api/flows/{refused['flowId']}").json()
        document = flow["document"]
        gone = {n["id"] for n in document["nodes"] if n["type"] == "Unsupported"}
        document["nodes"] = [n for n in document["nodes"] if n["id"] not in gone]
        document["connections"] = [
            c
            for c in document["connections"]
            if c["from"]["node"] not in gone and c["to"]["node"] not in gone
        ]
        saved = platform.request("PUT", f"/api/flows/{refused['flowId']}", json=document)
        assert saved.status_code == 200, saved.text
        created = platform.request("POST", "/api/deployments", json={"flowName": "orders.OrderRouter"})
        assert created.status_code == 202, created.text
        deployed = platform.wait_status(created.json()["id"], {"running", "failed"})
        assert deployed["status"] == "running", deployed
        with platform.qm.client() as qm:
            # the flow's MQInput named the alias ACEIMP.ORDERS.ALIAS: it reads the alias's target
            qm.put("ACEIMP.ORDERS.IN", b"<Order><Qty>12</Qty></Order>")
            (out,) = get_all(qm, "ACEIMP.ORDERS.OUT", 1, wait=30)
    body = bytes(out.body).decode()
    assert "<Priority>high</Priority>" in body  # a routine of the library's schema, on the PATH
    assert "<Shop>north</Shop>" in body  # a constant of the module's schema, from another file
    assert "<Region>west</Region>" in body  # the flow's user-defined property
    assert "<Stamped>yes</Stamped>" in body  # the subflow ran
    assert "<Audited>yes</Audited>" in body  # a routine called by its schema-qualified name
