"""A flow's test cases are versioned with it, can be added from messages seen, and run from the designer's API."""

from __future__ import annotations

from typing import Any

import pytest
from conftest import Api

pytestmark = pytest.mark.timeout(180)

DOUBLE = "SET OutputRoot = InputRoot;\nSET OutputRoot.XMLNSC.Order.Total = InputRoot.XMLNSC.Order.Qty * 2;\n"


def _flow(name: str, esql: str = DOUBLE) -> dict[str, Any]:
    return {
        "name": name,
        "nodes": [
            {
                "id": "in",
                "type": "MQInput",
                "properties": {"queueName": f"{name}.IN", "messageDomain": "XMLNSC"},
            },
            {"id": "calc", "type": "Compute", "properties": {"esql": esql}},
            {"id": "out", "type": "MQOutput", "properties": {"queueName": f"{name}.OUT"}},
        ],
        "connections": [
            {"from": {"node": "in", "terminal": "out"}, "to": {"node": "calc", "terminal": "in"}},
            {"from": {"node": "calc", "terminal": "out"}, "to": {"node": "out", "terminal": "in"}},
        ],
    }


def _case(name: str, qty: int, total: int, flow: str) -> dict[str, Any]:
    return {
        "name": name,
        "input": {"body": f"<Order><Qty>{qty}</Qty></Order>"},
        "outputs": {f"{flow}.OUT": [{"body": f"<Order><Qty>{qty}</Qty><Total>{total}</Total></Order>"}]},
    }


def test_tests_are_saved_with_a_version_and_malformed_ones_are_refused(api: Api, unique: str) -> None:
    created = api.as_("developer", "POST", "/api/flows", json=_flow(unique))
    assert created.status_code == 201, created.text  # type: ignore[attr-defined]
    flow_id = created.json()["id"]  # type: ignore[attr-defined]
    bad = {
        **_flow(unique),
        "tests": [{"name": "x", "input": {}, "expect": [{"node": "calc", "messages": []}]}],
    }
    refused = api.as_("developer", "PUT", f"/api/flows/{flow_id}", json=bad)
    assert refused.status_code == 422  # type: ignore[attr-defined]
    (problem,) = refused.json()["detail"]  # type: ignore[attr-defined]
    assert problem["pointer"] == "/tests/0/expect/0/node" and "not an MQOutput" in problem["message"]

    added = api.as_("developer", "POST", f"/api/flows/{flow_id}/tests", json=_case("doubles", 3, 6, unique))
    assert added.status_code == 201, added.text  # type: ignore[attr-defined]
    assert added.json()["version"] == 2 and "MQMD.MsgId" in added.json()["case"]["ignore"]  # type: ignore[attr-defined]
    again = api.as_("developer", "POST", f"/api/flows/{flow_id}/tests", json=_case("doubles", 1, 2, unique))
    assert again.status_code == 409  # type: ignore[attr-defined]
    viewer = api.as_("viewer", "POST", f"/api/flows/{flow_id}/tests", json=_case("other", 1, 2, unique))
    assert viewer.status_code == 403  # type: ignore[attr-defined]
    versions = {
        n: api.as_("viewer", "GET", f"/api/flows/{flow_id}/versions/{n}").json()["document"]  # type: ignore[attr-defined]
        for n in (1, 2)
    }
    assert "tests" not in versions[1] and [c["name"] for c in versions[2]["tests"]] == ["doubles"]
    no_cases = api.as_("developer", "POST", f"/api/flows/{flow_id}/tests/run", json={"cases": ["nope"]})
    assert no_cases.status_code == 422  # type: ignore[attr-defined]


def test_run_from_the_api_passes_and_fails_with_a_tree_diff(sqlite_api: Api, unique: str) -> None:
    api = sqlite_api
    flow_id = api.as_("developer", "POST", "/api/flows", json=_flow(unique)).json()["id"]  # type: ignore[attr-defined]
    for case in (_case("doubles", 3, 6, unique), _case("wrong on purpose", 3, 9, unique)):
        assert api.as_("developer", "POST", f"/api/flows/{flow_id}/tests", json=case).status_code == 201  # type: ignore[attr-defined]
    run = api.as_("developer", "POST", f"/api/flows/{flow_id}/tests/run", json={})
    assert run.status_code == 200, run.text  # type: ignore[attr-defined]
    body = run.json()  # type: ignore[attr-defined]
    assert body["version"] == 3 and body["passed"] is False
    passed = {r["case"]: r["passed"] for r in body["results"]}
    assert passed == {"doubles": True, "wrong on purpose": False}
    (failed,) = [r for r in body["results"] if not r["passed"]]
    assert failed["messages"][0]["differences"] == [
        {"path": "XMLNSC.Order.Total", "kind": "changed", "expected": "9", "actual": "6"}
    ]
    # the message that arrived comes with the failure, as the message view shows it
    actual = failed["messages"][0]["actual"]
    assert actual["trees"][0]["name"] == "Root" and "<Total>6</Total>" in actual["body"]["text"]
    assert [r["messages"][0]["actual"] for r in body["results"] if r["passed"]] == [None]
    assert api.as_("viewer", "POST", f"/api/flows/{flow_id}/tests/run", json={}).status_code == 403  # type: ignore[attr-defined]
