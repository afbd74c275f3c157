"""Code nodes through the API: only an admin lets a group run them, audited, and a deploy elsewhere gets 409."""

from __future__ import annotations

from typing import Any

CODE = "def main(ctx):\n    ctx.copy_message()\n    return True\n"


def python_flow(name: str) -> dict[str, Any]:
    return {
        "name": name,
        "nodes": [
            {"id": "in", "type": "MQInput", "properties": {"queueName": f"{name}.IN"}},
            {"id": "py", "type": "PythonCompute", "name": "Enrich", "properties": {"code": CODE}},
            {"id": "out", "type": "MQOutput", "properties": {"queueName": f"{name}.OUT"}},
        ],
        "connections": [
            {"from": {"node": "in", "terminal": "out"}, "to": {"node": "py", "terminal": "in"}},
            {"from": {"node": "py", "terminal": "out"}, "to": {"node": "out", "terminal": "in"}},
        ],
    }


def _group(api: Any, unique: str) -> tuple[int, int]:
    broker = api.as_("operator", "POST", "/api/brokers", json={"name": unique}).json()
    group = api.as_("operator", "POST", f"/api/brokers/{broker['id']}/groups", json={"name": "eg1"})
    assert group.status_code == 201, group.text
    assert group.json()["codeNodes"] is False
    return broker["id"], group.json()["id"]


def test_only_an_admin_allows_code_nodes_and_it_is_audited(api: Any, unique: str) -> None:
    broker_id, group_id = _group(api, unique)
    path = f"/api/brokers/{broker_id}/groups/{group_id}"
    refused = api.as_("operator", "PATCH", path, json={"codeNodes": True})
    assert refused.status_code == 403, refused.text
    assert "admin" in refused.json()["message"]
    assert api.as_("viewer", "GET", path).json()["codeNodes"] is False
    # an operator may still rename the group, sending the unchanged flag along
    renamed = api.as_("operator", "PATCH", path, json={"description": "batch", "codeNodes": False})
    assert renamed.status_code == 200, renamed.text

    allowed = api.as_("admin", "PATCH", path, json={"codeNodes": True})
    assert allowed.status_code == 200, allowed.text
    assert allowed.json()["codeNodes"] is True
    entries = api.as_(
        "viewer", "GET", "/api/audit", params={"target": f"group:{unique}/eg1", "action": "group.code_nodes"}
    ).json()
    assert [(e["actor"], e["action"]) for e in entries] == [("admin", "group.code_nodes")]
    assert entries[0]["detail"]["code_nodes"] is True

    # creating a group with code nodes allowed is an admin's decision too
    created = api.as_(
        "operator", "POST", f"/api/brokers/{broker_id}/groups", json={"name": "eg2", "codeNodes": True}
    )
    assert created.status_code == 403, created.text
    created = api.as_(
        "admin", "POST", f"/api/brokers/{broker_id}/groups", json={"name": "eg2", "codeNodes": True}
    )
    assert created.status_code == 201 and created.json()["codeNodes"] is True


def test_deploying_a_code_node_to_a_group_without_them_is_refused(api: Any, unique: str) -> None:
    broker_id, group_id = _group(api, unique)
    saved = api.as_("developer", "POST", "/api/flows", json=python_flow(unique))
    assert saved.status_code == 201, saved.text
    request = {"flowId": saved.json()["id"], "broker": unique, "group": "eg1"}
    refused = api.as_("operator", "POST", "/api/deployments", json=request)
    assert refused.status_code == 409, refused.text
    body = refused.json()
    assert body["code"] == "code_nodes_disabled"
    assert f"{unique}/eg1" in body["message"] and "'Enrich'" in body["message"]
    assert body["detail"]["nodes"] == [{"id": "py", "name": "Enrich", "type": "PythonCompute"}]
    # nothing was recorded for the refused deployment
    assert api.as_("viewer", "GET", f"/api/groups/{group_id}/flows").json() == []

    api.as_("admin", "PATCH", f"/api/brokers/{broker_id}/groups/{group_id}", json={"codeNodes": True})
    accepted = api.as_("operator", "POST", "/api/deployments", json=request)
    assert accepted.status_code == 202, accepted.text
    assert [d["id"] for d in api.as_("viewer", "GET", f"/api/groups/{group_id}/flows").json()] == [
        accepted.json()["id"]
    ]
    # code nodes are not withdrawn from under a deployed flow that needs them
    withdrawn = api.as_(
        "admin", "PATCH", f"/api/brokers/{broker_id}/groups/{group_id}", json={"codeNodes": False}
    )
    assert withdrawn.status_code == 409, withdrawn.text
    assert withdrawn.json()["code"] == "in_use" and unique in withdrawn.json()["message"]


def test_a_syntax_error_is_refused_on_save_with_line_and_column(api: Any, unique: str) -> None:
    doc = python_flow(unique)
    doc["nodes"][1]["properties"]["code"] = "def main(ctx):\n    return ctx.input_root +\n"
    refused = api.as_("developer", "POST", "/api/flows", json=doc)
    assert refused.status_code == 422, refused.text
    (found,) = refused.json()["detail"]
    assert (found["node"], found["property"], found["line"]) == ("py", "code", 2)
    assert found["column"] > 0 and "syntax error" in found["message"]
