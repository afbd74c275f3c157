"""`flowbroker bench http`: a short real run against the flow in its own engine process (behaviour, not speed)."""

from __future__ import annotations

import json

import pytest
from flowbroker.cli import main
from flowbroker_bench import http_flow
from flowbroker_bench.core import scenarios


def test_the_scenario_is_discovered_under_its_name() -> None:
    assert scenarios()["http"].run is http_flow.run


@pytest.mark.timeout(120)
def test_a_short_run_counts_checked_replies_and_the_engine_cpu(capsys: pytest.CaptureFixture[str]) -> None:
    # cores past the machine's leave both processes unpinned, so the test binds nothing
    code = main(
        [
            "bench",
            "http",
            "--format",
            "json",
            "--clients",
            "2",
            "--instances",
            "2",
            "--warmup",
            "0.5",
            "--window",
            "1",
            "--engine-core",
            "99",
            "--load-core",
            "99",
        ]
    )
    assert code == 0
    (row,) = json.loads(capsys.readouterr().out)
    assert row["instances"] == 2 and row["clients"] == 2 and row["body_bytes"] == 1024
    assert row["requests"] > 0 and row["wrong"] == 0
    assert row["msgs_per_s"] > 0 and row["cpu_ms_per_req"] > 0


def test_the_node_red_flow_serves_the_same_route_and_sets_the_same_field() -> None:
    nodes = {n["id"]: n for n in http_flow.nodered_flow()}
    assert (nodes["fb.in"]["type"], nodes["fb.in"]["url"], nodes["fb.in"]["method"]) == (
        "http in",
        "/bench",
        "post",
    )
    assert nodes["fb.in"]["wires"] == [["fb.set"]] and nodes["fb.set"]["wires"] == [["fb.out"]]
    assert nodes["fb.set"]["rules"] == [
        {"t": "set", "p": "payload.status", "pt": "msg", "to": "processed", "tot": "str"}
    ]
    assert nodes["fb.out"]["type"] == "http response"
    # our flow: the same path, method and field
    ours = http_flow.document(1)
    (entry,) = [n for n in ours["nodes"] if n["type"] == "HTTPInput"]
    assert (entry["properties"]["path"], entry["properties"]["method"]) == ("/bench", "POST")
    assert "SET OutputRoot.JSON.Data.status = 'processed';" in http_flow.SET_STATUS
