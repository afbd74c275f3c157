"""Every route states what it answers: node specs, flow documents, statistics and their history."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from flowbroker.api.schemas import ConnectionDoc, FlowDocument, FlowNodeDoc, FlowProperties
from flowbroker.services import validation

ROOT = Path(__file__).resolve().parents[2]
# flow documents, not the test cases kept beside them
EXAMPLES = sorted(
    p for p in (ROOT / "examples" / "flows").glob("*.json") if not p.name.endswith(".tests.json")
)
#: Answers that are not JSON: they say what they are through their media type instead.
NOT_JSON = {
    ("get", "/api/archives/export"),
    ("get", "/api/deployments/{deployment_id}/trace"),
    ("get", "/api/stats/trace/{broker}/{group}/{flow}"),
    ("get", "/api/stats/stream"),
}


def test_every_operation_has_a_typed_success_response(api: Any) -> None:
    schema = api.app.openapi()
    untyped = []
    for path, operations in schema["paths"].items():
        for method, operation in operations.items():
            for status, response in operation["responses"].items():
                if not status.startswith("2") or status == "204":
                    continue
                content = response.get("content", {})
                if (method, path) in NOT_JSON:
                    assert content and "application/json" not in content, (method, path)
                    continue
                body = content.get("application/json", {}).get("schema", {})
                if not body or body == {"additionalProperties": True, "type": "object"}:
                    untyped.append(f"{method.upper()} {path}")
    assert untyped == []


def test_the_schema_describes_the_one_error_body(api: Any) -> None:
    schema = api.app.openapi()
    assert "HTTPValidationError" not in schema["components"]["schemas"]
    assert set(schema["components"]["schemas"]["ErrorBody"]["properties"]) == {"code", "message", "detail"}
    invalid = schema["paths"]["/api/flows/{flow_id}"]["get"]["responses"]["422"]
    assert invalid["content"]["application/json"]["schema"] == {"$ref": "#/components/schemas/ErrorBody"}
    assert "HTTPValidationError" not in json.dumps(schema)


def test_flow_routes_take_and_give_the_flow_document_schema(api: Any) -> None:
    schema = api.app.openapi()
    ref = {"$ref": "#/components/schemas/FlowDocument"}
    for path, method in (
        ("/api/flows", "post"),
        ("/api/flows/{flow_id}", "put"),
        ("/api/flows/validate", "post"),
    ):
        body = schema["paths"][path][method]["requestBody"]["content"]["application/json"]["schema"]
        assert body.get("$ref") == ref["$ref"], (method, path, body)
    flow_out = schema["components"]["schemas"]["FlowOut"]["properties"]["document"]
    assert flow_out == ref


def test_the_document_model_knows_exactly_the_fields_the_validator_does() -> None:
    def names(model: Any) -> set[str]:
        return {f.alias or name for name, f in model.model_fields.items()}

    assert names(FlowDocument) == validation.TOP_FIELDS
    assert names(FlowNodeDoc) == validation.NODE_FIELDS
    assert names(FlowProperties) == set(validation.FLOW_PROPERTIES)
    assert names(ConnectionDoc) == {"from", "to", "id"}


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_every_example_flow_is_a_flow_document(path: Path) -> None:
    document = json.loads(path.read_text())
    assert validation.problems(document) == []
    FlowDocument.model_validate(document)


def test_a_saved_document_comes_back_as_it_was_sent(api: Any, unique: str) -> None:
    document = json.loads((ROOT / "examples" / "flows" / "simple_compute.json").read_text())
    document["name"] = unique
    document.pop("version", None)
    created = api.as_("developer", "POST", "/api/flows", json=document)
    assert created.status_code == 201, created.text
    loaded = api.as_("viewer", "GET", f"/api/flows/{created.json()['id']}").json()["document"]
    assert loaded == {**document, "version": 1}
    # nothing the sender did not write is added, so the designer can save it back unchanged
    saved = api.as_("developer", "PUT", f"/api/flows/{created.json()['id']}", json=loaded)
    assert saved.status_code == 200, saved.text


def test_node_types_are_typed_specs(api: Any) -> None:
    specs = api.as_("viewer", "GET", "/api/node-types").json()
    compute = next(s for s in specs if s["type"] == "Compute")
    assert set(compute) == {
        "type",
        "label",
        "category",
        "icon",
        "description",
        "version",
        "inputs",
        "outputs",
        "properties",
        "dynamicTerminals",
        "subflowRole",
        "terminalProperty",
        "extra",
    }
    assert compute["inputs"] == [{"name": "in", "kind": "in", "label": "In"}]
    esql = next(p for p in compute["properties"] if p["name"] == "esql")
    assert esql["type"] == "esql" and esql["required"] is True
    assert compute["subflowRole"] is None and compute["terminalProperty"] is None
    roles = {s["type"]: (s["subflowRole"], s["terminalProperty"]) for s in specs if s["subflowRole"]}
    assert roles == {
        "Subflow": ("node", None),
        "Input": ("input", "terminalName"),
        "Output": ("output", "terminalName"),
    }
    for spec in specs:
        if spec["terminalProperty"]:
            assert spec["terminalProperty"] in [p["name"] for p in spec["properties"]]
    assert next(s for s in specs if s["type"] == "Subflow")["dynamicTerminals"] is True


def _publish(data: Path, t: float, messages: int, elapsed_us: int, group: str = "hist") -> None:
    folder = data / "stats" / "default"
    folder.mkdir(parents=True, exist_ok=True)
    record = {
        "broker": "default",
        "group": group,
        "pid": 4242,
        "time": t,
        "flows": {"Hist": {"flow": "Hist", "messages_in": messages, "elapsed_us": elapsed_us, "nodes": {}}},
    }
    (folder / f"{group}.json").write_text(json.dumps(record))


def test_history_keeps_the_rates_of_the_last_quarter_hour(sqlite_api: Any) -> None:
    data = sqlite_api.app.state.settings.data
    now = time.time()
    # Three publications, read as they come: two intervals of throughput and latency.
    for t, messages, elapsed in (
        (now - 100, 100, 1_000_000),
        (now - 90, 150, 1_500_000),
        (now, 150, 1_500_000),
    ):
        _publish(data, t, messages, elapsed)
        groups = sqlite_api.as_("viewer", "GET", "/api/stats/groups")
        assert groups.status_code == 200
    history = sqlite_api.as_("viewer", "GET", "/api/stats/history").json()
    mine = next(h for h in history if h["group"] == "hist")
    assert (mine["broker"], mine["flow"]) == ("default", "Hist")
    assert [round(p["msgs_per_s"], 3) for p in mine["points"]] == [5.0, 0.0]
    assert mine["points"][0]["latency_ms"] == pytest.approx(10.0)
    assert mine["points"][1]["latency_ms"] is None
    # A page opened later gets the same history; reading the same publication again adds nothing.
    again = sqlite_api.as_("viewer", "GET", "/api/stats/history").json()
    assert next(h for h in again if h["group"] == "hist")["points"] == mine["points"]
    # A shorter window, and a restarted group whose counters begin again, add no bogus point.
    _publish(data, now + 10, 3, 30_000)
    recent = sqlite_api.as_("viewer", "GET", "/api/stats/history", params={"seconds": 30}).json()
    assert [p["msgs_per_s"] for p in next(h for h in recent if h["group"] == "hist")["points"]] == [0.0]
    too_long = sqlite_api.as_("viewer", "GET", "/api/stats/history", params={"seconds": 3600})
    assert too_long.status_code == 422 and too_long.json()["detail"][0]["pointer"] == "/seconds"


@pytest.mark.parametrize(
    ("path", "body", "pointer"),
    [
        ("/api/deployments", {"flowId": True}, "/flowId"),
        ("/api/deployments", {"flowName": "F", "version": True}, "/version"),
        ("/api/deployments", {"flowName": "F", "additionalInstances": True}, "/additionalInstances"),
        ("/api/deployments", {"flowName": "F", "additionalInstances": "2"}, "/additionalInstances"),
    ],
)
def test_an_integer_field_refuses_a_boolean_or_a_string(
    api: Any, path: str, body: dict[str, Any], pointer: str
) -> None:
    refused = api.as_("admin", "POST", path, json=body)
    assert refused.status_code == 422, refused.text
    assert pointer in [d["pointer"] for d in refused.json()["detail"]]
