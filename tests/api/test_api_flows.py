"""Flows through the API: round-trip with versions, validation with JSON pointers, conflicts."""

from __future__ import annotations

from typing import Any


def flow(name: str, queue: str = "ORDERS.IN") -> dict[str, Any]:
    return {
        "name": name,
        "properties": {"coordinatedTransaction": False, "additionalInstances": 0},
        "nodes": [
            {
                "id": "in1",
                "type": "MQInput",
                "name": queue,
                "properties": {"queueName": queue, "transactionMode": "automatic"},
                "position": {"x": 40, "y": 80},
            },
            {
                "id": "out1",
                "type": "MQOutput",
                "properties": {"queueName": "ORDERS.OUT"},
                "position": {"x": 240, "y": 80},
            },
        ],
        "connections": [
            {"from": {"node": "in1", "terminal": "out"}, "to": {"node": "out1", "terminal": "in"}}
        ],
    }


def test_flow_round_trips_with_versions(api: Any, unique: str) -> None:
    created = api.as_("developer", "POST", "/api/flows", json=flow(unique), params={"comment": "first"})
    assert created.status_code == 201, created.text
    body = created.json()
    assert body["currentVersion"] == 1 and body["document"]["version"] == 1
    flow_id = body["id"]

    second = flow(unique, "ORDERS.IN2")
    second["version"] = 1
    saved = api.as_("developer", "PUT", f"/api/flows/{flow_id}", json=second, params={"comment": "second"})
    assert saved.status_code == 200, saved.text
    assert saved.json()["currentVersion"] == 2

    loaded = api.as_("viewer", "GET", f"/api/flows/{flow_id}").json()
    assert loaded["document"]["nodes"][0]["properties"]["queueName"] == "ORDERS.IN2"
    assert loaded["document"]["version"] == 2

    history = api.as_("viewer", "GET", f"/api/flows/{flow_id}/versions").json()
    assert [(v["version"], v["comment"], v["author"]) for v in history] == [
        (2, "second", "developer"),
        (1, "first", "developer"),
    ]
    first = api.as_("viewer", "GET", f"/api/flows/{flow_id}/versions/1").json()
    assert first["document"]["nodes"][0]["properties"]["queueName"] == "ORDERS.IN"
    listed = api.as_("viewer", "GET", "/api/flows", params={"limit": 1000}).json()
    assert unique in [f["name"] for f in listed]


def test_stale_version_is_refused_with_409(api: Any, unique: str) -> None:
    flow_id = api.as_("developer", "POST", "/api/flows", json=flow(unique)).json()["id"]
    api.as_("developer", "PUT", f"/api/flows/{flow_id}", json={**flow(unique), "version": 1})
    stale = api.as_("developer", "PUT", f"/api/flows/{flow_id}", json={**flow(unique), "version": 1})
    assert stale.status_code == 409
    assert stale.json()["code"] == "version_conflict"
    assert stale.json()["detail"]["current"] == 2


def test_duplicate_flow_name_is_409(api: Any, unique: str) -> None:
    assert api.as_("developer", "POST", "/api/flows", json=flow(unique)).status_code == 201
    again = api.as_("developer", "POST", "/api/flows", json=flow(unique))
    assert again.status_code == 409
    assert again.json() == {
        "code": "duplicate_name",
        "message": f"a flow named {unique!r} already exists",
        "detail": {"pointer": "/name"},
    }


def test_rename_onto_an_existing_name_is_409(api: Any, unique: str) -> None:
    api.as_("developer", "POST", "/api/flows", json=flow(unique + "a"))
    other = api.as_("developer", "POST", "/api/flows", json=flow(unique + "b")).json()["id"]
    clash = api.as_("developer", "PUT", f"/api/flows/{other}", json=flow(unique + "a"))
    assert clash.status_code == 409


def _pointers(response: Any) -> list[str]:
    return [p["pointer"] for p in response.json()["detail"]]


def test_unknown_node_type_names_the_field(api: Any, unique: str) -> None:
    document = flow(unique)
    document["nodes"][1]["type"] = "NoSuchNode"
    response = api.as_("developer", "POST", "/api/flows", json=document)
    assert response.status_code == 422
    assert response.json()["code"] == "invalid_flow"
    assert "/nodes/1/type" in _pointers(response)
    assert "NoSuchNode" in response.json()["message"]


def test_unknown_terminal_names_the_field(api: Any, unique: str) -> None:
    document = flow(unique)
    document["connections"][0]["from"]["terminal"] = "sideways"
    response = api.as_("developer", "POST", "/api/flows", json=document)
    assert response.status_code == 422
    assert _pointers(response) == ["/connections/0/from/terminal"]
    assert "has no output terminal 'sideways'" in response.json()["message"]


def test_missing_required_property_names_the_field(api: Any, unique: str) -> None:
    document = flow(unique)
    del document["nodes"][0]["properties"]["queueName"]
    response = api.as_("developer", "POST", "/api/flows", json=document)
    assert response.status_code == 422
    assert _pointers(response) == ["/nodes/0/properties/queueName"]


def test_wrong_types_and_unknown_fields_are_each_named(api: Any, unique: str) -> None:
    document = flow(unique)
    document["nodes"][0]["properties"]["waitInterval"] = "soon"
    document["nodes"][0]["properties"]["transactionMode"] = "maybe"
    document["nodes"][1]["colour"] = "red"
    document["connections"][0]["to"]["node"] = "ghost"
    document["extra"] = 1
    response = api.as_("developer", "POST", "/api/flows", json=document)
    assert response.status_code == 422
    assert set(_pointers(response)) == {
        "/nodes/0/properties/waitInterval",
        "/nodes/0/properties/transactionMode",
        "/nodes/1/colour",
        "/connections/0/to/node",
        "/extra",
    }


def test_validate_endpoint_reports_without_saving(api: Any, unique: str) -> None:
    bad = flow(unique)
    bad["nodes"][0]["properties"]["queueName"] = "bad queue name!"
    response = api.as_("viewer", "POST", "/api/flows/validate", json=bad)
    assert response.status_code == 200
    assert response.json()["valid"] is False
    assert response.json()["problems"][0]["pointer"] == "/nodes/0/properties/queueName"
    ok = api.as_("viewer", "POST", "/api/flows/validate", json=flow(unique)).json()
    assert ok == {"valid": True, "problems": []}
    names = [f["name"] for f in api.as_("viewer", "GET", "/api/flows", params={"limit": 1000}).json()]
    assert unique not in names


def test_malformed_json_gets_line_and_column(api: Any) -> None:
    response = api.as_(
        "developer",
        "POST",
        "/api/flows",
        content=b'{"name": "X",\n  "nodes": [,]}',
        headers={"Content-Type": "application/json"},
    )
    assert response.status_code == 400
    body = response.json()
    assert body["code"] == "malformed_json"
    assert body["detail"] == {"line": 2, "column": 13, "offset": 26}


def test_non_object_document_is_422(api: Any) -> None:
    response = api.as_("developer", "POST", "/api/flows", json=[1, 2])
    assert response.status_code == 422
    assert response.json()["detail"] == [{"pointer": "", "message": "a flow document must be a JSON object"}]


def test_delete_flow_and_its_history(api: Any, unique: str) -> None:
    flow_id = api.as_("developer", "POST", "/api/flows", json=flow(unique)).json()["id"]
    assert api.as_("developer", "DELETE", f"/api/flows/{flow_id}").status_code == 204
    assert api.as_("viewer", "GET", f"/api/flows/{flow_id}").status_code == 404
    assert api.as_("viewer", "GET", f"/api/flows/{flow_id}/versions").status_code == 404


def test_node_types_are_the_registry_specs(api: Any) -> None:
    from flowbroker_nodes import registry

    served = api.as_("viewer", "GET", "/api/node-types").json()
    assert [s["type"] for s in served] == [s.type for s in registry.specs()]
    mq_input = next(s for s in served if s["type"] == "MQInput")
    assert any(p["name"] == "queueName" and p["required"] for p in mq_input["properties"])


def test_esql_budget_flow_properties_are_saved_and_checked(api: Any, unique: str) -> None:
    doc = flow(unique)
    doc["properties"] = {"esqlCpuLimitMs": 250, "esqlMemoryLimitBytes": 1048576}
    created = api.as_("developer", "POST", "/api/flows", json=doc)
    assert created.status_code == 201, created.text
    assert created.json()["document"]["properties"] == doc["properties"]
    bad = flow(unique + "b")
    bad["properties"] = {"esqlCpuLimitMs": -1}
    refused = api.as_("developer", "POST", "/api/flows", json=bad)
    assert refused.status_code == 422, refused.text
    assert "/properties/esqlCpuLimitMs" in refused.text


def test_save_refuses_what_deploy_refuses_with_a_pointer_per_problem(api: Any, unique: str) -> None:
    """An MQOutput without a queue name and broken ESQL: refused on create and on save, not only on deploy."""
    document = flow(unique)
    document["nodes"][1]["properties"] = {"destinationMode": "queueName"}
    document["nodes"].append(
        {
            "id": "calc",
            "type": "Compute",
            "properties": {
                "esql": "CREATE COMPUTE MODULE X\nCREATE FUNCTION Main() RETURNS BOOLEAN\nBEGIN\n"
                "  SET OutputRoot = ;\nEND;\nEND MODULE;"
            },
        }
    )
    created = api.as_("developer", "POST", "/api/flows", json=document)
    assert created.status_code == 422, created.text
    detail = {p["pointer"]: p for p in created.json()["detail"]}
    assert set(detail) == {"/nodes/1/properties/queueName", "/nodes/2/properties/esql"}
    assert (
        "required when the destination mode is queueName"
        in detail["/nodes/1/properties/queueName"]["message"]
    )
    assert detail["/nodes/2/properties/esql"]["node"] == "calc"
    assert detail["/nodes/2/properties/esql"]["line"] == 4
    assert detail["/nodes/2/properties/esql"]["column"] > 0

    saved = api.as_("developer", "POST", "/api/flows", json=flow(unique))
    assert saved.status_code == 201, saved.text
    bad = flow(unique)
    bad["nodes"][1]["properties"] = {}
    put = api.as_("developer", "PUT", f"/api/flows/{saved.json()['id']}", json=bad)
    assert put.status_code == 422, put.text
    assert _pointers(put) == ["/nodes/1/properties/queueName"]
    checked = api.as_("viewer", "POST", "/api/flows/validate", json=bad).json()
    assert checked["valid"] is False
    assert [p["pointer"] for p in checked["problems"]] == ["/nodes/1/properties/queueName"]
    assert checked["problems"][0]["node"] == "out1" and checked["problems"][0]["property"] == "queueName"
