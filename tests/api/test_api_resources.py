"""Brokers, execution groups, data sources, message sets and deployable archives through the API."""

from __future__ import annotations

import io
import json
import zipfile
from typing import Any

from test_api_flows import flow


def test_brokers_and_groups_crud(api: Any, unique: str) -> None:
    broker = api.as_(
        "operator", "POST", "/api/brokers", json={"name": unique, "qmUrl": "fbqm://127.0.0.1:1414"}
    )
    assert broker.status_code == 201
    broker_id = broker.json()["id"]
    group = api.as_("operator", "POST", f"/api/brokers/{broker_id}/groups", json={"name": "eg1"})
    assert group.status_code == 201
    group_id = group.json()["id"]
    dup = api.as_("operator", "POST", f"/api/brokers/{broker_id}/groups", json={"name": "eg1"})
    assert dup.status_code == 409 and dup.json()["code"] == "duplicate_name"
    bad = api.as_("operator", "POST", f"/api/brokers/{broker_id}/groups", json={"name": "no spaces"})
    assert bad.status_code == 422 and bad.json()["detail"][0]["pointer"] == "/name"

    listed = api.as_("viewer", "GET", f"/api/brokers/{broker_id}").json()
    assert [g["name"] for g in listed["groups"]] == ["eg1"] and listed["qmUrl"] == "fbqm://127.0.0.1:1414"
    renamed = api.as_(
        "operator", "PATCH", f"/api/brokers/{broker_id}/groups/{group_id}", json={"name": "eg2"}
    )
    assert renamed.json()["name"] == "eg2"
    assert api.as_("viewer", "GET", f"/api/brokers/{broker_id}/groups/{group_id + 1000}").status_code == 404
    assert (
        api.as_("operator", "PATCH", f"/api/brokers/{broker_id}", json={"description": "d"}).json()[
            "description"
        ]
        == "d"
    )
    assert api.as_("operator", "DELETE", f"/api/brokers/{broker_id}/groups/{group_id}").status_code == 204
    assert api.as_("operator", "DELETE", f"/api/brokers/{broker_id}").status_code == 204
    assert api.as_("viewer", "GET", f"/api/brokers/{broker_id}").status_code == 404


def test_a_broker_transport_url_is_checked_and_editable(api: Any, unique: str) -> None:
    bad = api.as_("operator", "POST", "/api/brokers", json={"name": unique, "qmUrl": "mqtt://h:1883"})
    assert bad.status_code == 422, bad.text
    (problem,) = bad.json()["detail"]
    assert problem["pointer"] == "/qmUrl"
    assert "unknown scheme 'mqtt'" in problem["message"] and "amqp://" in problem["message"]
    broker = api.as_("operator", "POST", "/api/brokers", json={"name": unique})
    broker_id = broker.json()["id"]
    url = "amqp://guest:guest@rabbit.example:5672/flows"
    changed = api.as_("operator", "PATCH", f"/api/brokers/{broker_id}", json={"qmUrl": f" {url} "})
    assert changed.status_code == 200 and changed.json()["qmUrl"] == url
    refused = api.as_("operator", "PATCH", f"/api/brokers/{broker_id}", json={"qmUrl": "amqp:///novhost"})
    assert refused.status_code == 422 and refused.json()["detail"][0]["pointer"] == "/qmUrl"
    assert api.as_("viewer", "GET", f"/api/brokers/{broker_id}").json()["qmUrl"] == url
    back = api.as_("operator", "PATCH", f"/api/brokers/{broker_id}", json={"qmUrl": ""})
    assert back.status_code == 200 and back.json()["qmUrl"] == ""


def test_data_sources_hide_passwords_and_refuse_bad_urls(api: Any, unique: str) -> None:
    created = api.as_(
        "developer",
        "POST",
        "/api/datasources",
        json={"name": unique, "url": "postgresql+psycopg://app:s3cret@127.0.0.1/test"},
    )
    assert created.status_code == 201
    assert "s3cret" not in created.text and "***" in created.json()["url"]
    source_id = created.json()["id"]
    bad = api.as_("developer", "POST", "/api/datasources", json={"name": unique + "b", "url": "not a url"})
    assert bad.status_code == 422 and bad.json()["detail"][0]["pointer"] == "/url"
    no_broker = api.as_(
        "developer",
        "POST",
        "/api/datasources",
        json={"name": unique + "c", "url": "sqlite://", "brokerId": 999999},
    )
    assert no_broker.status_code == 422 and no_broker.json()["detail"][0]["pointer"] == "/brokerId"
    dup = api.as_("developer", "POST", "/api/datasources", json={"name": unique, "url": "sqlite://"})
    assert dup.status_code == 409
    patched = api.as_(
        "developer", "PATCH", f"/api/datasources/{source_id}", json={"description": "orders db"}
    )
    assert patched.json()["description"] == "orders db"
    assert api.as_("developer", "DELETE", f"/api/datasources/{source_id}").status_code == 204


def _order_set(length: int) -> dict[str, Any]:
    return {"types": {"Order": {"elements": [{"name": "id", "type": "string", "cwf": {"length": length}}]}}}


def test_message_sets_keep_versions(api: Any, unique: str) -> None:
    first = _order_set(8)
    created = api.as_("developer", "POST", "/api/message-sets", json={"name": unique, "document": first})
    assert created.status_code == 201 and created.json()["currentVersion"] == 1
    set_id = created.json()["id"]
    second = _order_set(10)
    saved = api.as_("developer", "PUT", f"/api/message-sets/{set_id}", json={"document": second})
    assert saved.json()["currentVersion"] == 2
    assert api.as_("viewer", "GET", f"/api/message-sets/{set_id}/versions/1").json()["document"] == first
    assert [
        v["version"] for v in api.as_("viewer", "GET", f"/api/message-sets/{set_id}/versions").json()
    ] == [2, 1]
    not_object = api.as_(
        "developer", "POST", "/api/message-sets", json={"name": unique + "x", "document": [1]}
    )
    assert not_object.status_code == 422 and not_object.json()["detail"][0]["pointer"] == "/document"


def test_a_message_set_that_does_not_compile_is_refused_with_its_pointer(api: Any, unique: str) -> None:
    empty = api.as_(
        "developer", "POST", "/api/message-sets", json={"name": unique, "document": {"messageTypes": []}}
    )
    assert empty.status_code == 422
    assert empty.json()["detail"] == [
        {"pointer": "/document/types", "message": "a message set needs a non-empty 'types' object"}
    ]
    bad_length = _order_set(8)
    bad_length["types"]["Order"]["elements"].append(
        {"name": "qty", "type": "integer", "cwf": {"repr": "binary", "length": 3}}
    )
    refused = api.as_("developer", "POST", "/api/message-sets", json={"name": unique, "document": bad_length})
    assert refused.status_code == 422
    assert refused.json()["detail"][0]["pointer"] == "/document/types/Order/elements/1/cwf/length"
    assert "binary integers are 1, 2, 4 or 8 bytes" in refused.json()["message"]
    created = api.as_(
        "developer", "POST", "/api/message-sets", json={"name": unique, "document": _order_set(8)}
    )
    set_id = created.json()["id"]
    cyclic = {
        "types": {
            "A": {"elements": [{"name": "b", "type": "B"}]},
            "B": {"elements": [{"name": "a", "type": "A"}]},
        }
    }
    again = api.as_("developer", "PUT", f"/api/message-sets/{set_id}", json={"document": cyclic})
    assert again.status_code == 422 and again.json()["detail"][0]["pointer"] == "/document/types/A"
    assert api.as_("viewer", "GET", f"/api/message-sets/{set_id}").json()["currentVersion"] == 1


def _zip(entries: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, data in entries.items():
            archive.writestr(name, data)
    return buffer.getvalue()


def test_archive_round_trip_restores_a_flow(api: Any, unique: str) -> None:
    flow_id = api.as_("developer", "POST", "/api/flows", json=flow(unique)).json()["id"]
    api.as_("developer", "POST", "/api/message-sets", json={"name": unique, "document": _order_set(4)})
    exported = api.as_("viewer", "GET", "/api/archives/export", params={"flow": unique, "messageSet": unique})
    assert exported.status_code == 200 and exported.headers["content-type"] == "application/zip"
    with zipfile.ZipFile(io.BytesIO(exported.content)) as archive:
        manifest = json.loads(archive.read("manifest.json"))
    assert [f["name"] for f in manifest["flows"]] == [unique]

    api.as_("developer", "PUT", f"/api/flows/{flow_id}", json=flow(unique, "CHANGED.Q"))
    report = api.as_("developer", "POST", "/api/archives/import", content=exported.content).json()
    assert report["flows"] == [{"name": unique, "version": 3, "outcome": "updated"}]
    assert report["messageSets"] == [{"name": unique, "version": 1, "outcome": "unchanged"}]
    restored = api.as_("viewer", "GET", f"/api/flows/{flow_id}").json()["document"]
    assert restored["nodes"][0]["properties"]["queueName"] == "ORDERS.IN"
    again = api.as_("developer", "POST", "/api/archives/import", content=exported.content).json()
    assert again["flows"][0]["outcome"] == "unchanged"


def test_bad_archives_are_refused_precisely(api: Any, unique: str) -> None:
    def post(data: bytes) -> Any:
        return api.as_("developer", "POST", "/api/archives/import", content=data)

    not_zip = post(b"PK\x03\x04 definitely not a zip")
    assert not_zip.status_code == 400 and not_zip.json()["code"] == "bad_archive"
    no_manifest = post(_zip({"flows/x.json": b"{}"}))
    assert no_manifest.status_code == 400 and "manifest.json" in no_manifest.json()["message"]
    manifest = {"format": "flowbroker-archive", "formatVersion": 1, "flows": [{"path": "flows/a.json"}]}
    broken = post(_zip({"manifest.json": json.dumps(manifest).encode(), "flows/a.json": b'{\n  "name": }'}))
    assert broken.status_code == 400
    assert "line 2, column 11" in broken.json()["message"]
    bad_flow = flow(unique)
    bad_flow["nodes"][0]["type"] = "Nope"
    invalid = post(
        _zip({"manifest.json": json.dumps(manifest).encode(), "flows/a.json": json.dumps(bad_flow).encode()})
    )
    assert invalid.status_code == 422
    assert invalid.json()["detail"][0]["pointer"] == "/flows/a.json/nodes/0/type"
    names = [f["name"] for f in api.as_("viewer", "GET", "/api/flows", params={"limit": 1000}).json()]
    assert unique not in names
    wrong_version = post(_zip({"manifest.json": json.dumps({**manifest, "formatVersion": 9}).encode()}))
    assert (
        wrong_version.status_code == 400
        and wrong_version.json()["detail"][0]["pointer"] == "/manifest.json/formatVersion"
    )
    unknown = api.as_("viewer", "GET", "/api/archives/export", params={"flow": "NoSuchFlowAtAll"})
    assert unknown.status_code == 404
