"""The topology graph (deployed flows with the queues they read and write) and the flow-name check
an import uses to offer a rename or an overwrite."""

from __future__ import annotations

from typing import Any

from flowbroker.services.topology import flow_queues
from test_api_flows import flow


def test_name_check_offers_a_free_name(api: Any, unique: str) -> None:
    free = api.as_("viewer", "GET", "/api/flows/names", params={"name": unique})
    assert free.status_code == 200, free.text
    assert free.json() == {
        "name": unique,
        "taken": False,
        "flowId": None,
        "currentVersion": None,
        "free": unique,
    }

    first = api.as_("developer", "POST", "/api/flows", json=flow(unique)).json()
    api.as_("developer", "POST", "/api/flows", json=flow(f"{unique}_2"))
    taken = api.as_("viewer", "GET", "/api/flows/names", params={"name": unique}).json()
    assert taken == {
        "name": unique,
        "taken": True,
        "flowId": first["id"],
        "currentVersion": 1,
        "free": f"{unique}_3",
    }
    # a name that already ends in _N counts on from N
    assert api.as_("viewer", "GET", "/api/flows/names", params={"name": f"{unique}_2"}).json()["free"] == (
        f"{unique}_3"
    )
    missing = api.as_("viewer", "GET", "/api/flows/names")
    assert missing.status_code == 422 and "name" in missing.text


def test_topology_graph_has_deployed_flows_and_their_queues(api: Any, unique: str) -> None:
    broker = api.as_("operator", "POST", "/api/brokers", json={"name": unique}).json()
    group = api.as_("operator", "POST", f"/api/brokers/{broker['id']}/groups", json={"name": "eg1"}).json()
    created = api.as_("developer", "POST", "/api/flows", json=flow(unique, f"{unique}.IN")).json()
    deployed = api.as_(
        "operator",
        "POST",
        "/api/deployments",
        json={
            "flowId": created["id"],
            "broker": unique,
            "group": "eg1",
            "overrides": {"out1.queueName": f"{unique}.OUT"},
        },
    )
    assert deployed.status_code == 202, deployed.text

    graph = api.as_("viewer", "GET", "/api/topology/graph")
    assert graph.status_code == 200, graph.text
    body = graph.json()
    assert {"id": broker["id"], "name": unique, "local": False} in body["brokers"]
    assert any(g["id"] == group["id"] and g["brokerId"] == broker["id"] for g in body["groups"])
    mine = [f for f in body["flows"] if f["flow"] == unique]
    assert len(mine) == 1 and mine[0]["groupId"] == group["id"] and mine[0]["version"] == 1
    # the deployment's override names the queue written, not the document's default
    assert mine[0]["reads"] == [f"{unique}.IN"] and mine[0]["writes"] == [f"{unique}.OUT"]
    queues = {q["name"]: q for q in body["queues"]}
    assert queues[f"{unique}.IN"]["readBy"] == [deployed.json()["id"]]
    assert queues[f"{unique}.OUT"]["writtenBy"] == [deployed.json()["id"]]
    assert "ORDERS.OUT" not in queues


def test_flow_queues_follow_subflows() -> None:
    sub = {
        "name": "Sub",
        "nodes": [{"id": "o", "type": "MQOutput", "properties": {"queueName": "SUB.OUT"}}],
    }
    inline = {
        "name": "Inline",
        "nodes": [{"id": "i", "type": "MQInput", "properties": {"queueName": "IN.2"}}],
    }
    document = {
        "name": "Top",
        "nodes": [
            {"id": "in", "type": "MQInput", "properties": {"queueName": "TOP.IN"}},
            {"id": "s1", "type": "Subflow", "properties": {"flow": {"name": "Sub"}}},
            {"id": "s2", "type": "Subflow", "properties": {"flow": inline}},
            {
                "id": "d",
                "type": "MQOutput",
                "properties": {"destinationMode": "destinationList", "queueName": "X"},
            },
        ],
    }
    dependencies = {"subflows": [{"name": "Sub", "version": 3, "latest": True, "document": sub}]}
    assert flow_queues(document, dependencies) == (["IN.2", "TOP.IN"], ["SUB.OUT"])
    # a subflow the deployment does not carry adds nothing
    assert flow_queues(document) == (["IN.2", "TOP.IN"], [])
