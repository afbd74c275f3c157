"""The seed scenarios run end to end against a real queue manager (tiny windows: behaviour, not speed)."""

from __future__ import annotations

import json

import pytest
from flowbroker.bench import seeds
from flowbroker.bench.core import scenarios
from flowbroker.bench.seed004 import seed_key
from flowbroker.cli import main

MINE = {
    "seed-table",
    "report",
    "seed000-subscribers",
    "seed000-dummy-subscriptions",
    "seed000-subscriber-queues",
    "seed001-streaming",
    "seed002-p2p-4q",
    "seed002-p2p-nn",
    "seed002-pubsub-1n",
    "seed002-async",
    "seed003-mst",
    "seed004",
    "peers-mqtt-transport",
    "peers-nodered",
    "peers-flowbroker",
}


def test_every_scenario_is_discovered() -> None:
    assert MINE <= set(scenarios())


def test_runtime_driver_figures_match_the_seed_data() -> None:
    flow = pytest.importorskip("flowbroker.bench.flow")
    for case in flow.CASES:
        if not case.seed_table:
            continue
        key = seed_key(case.seed_table, case.size, case.persistent, case.groups)
        assert seeds.figure(key).value == pytest.approx(case.seed), (case.key, key)
    assert seeds.figure(seed_key("7.8", 4096, False, 2)).value == 73.1


def _json_rows(capsys: pytest.CaptureFixture[str], argv: list[str]) -> list[dict[str, object]]:
    assert main(argv) == 0
    return json.loads(capsys.readouterr().out)  # type: ignore[no-any-return]


@pytest.mark.timeout(120)
def test_seed000_subscribers_against_the_queue_manager(capsys: pytest.CaptureFixture[str]) -> None:
    rows = _json_rows(
        capsys,
        [
            "bench",
            "seed000-subscribers",
            "--sizes",
            "10",
            "--subscribers",
            "1,4",
            "--persistence",
            "np",
            "--repeats",
            "3",
            "--compare-seed",
            "--format",
            "json",
        ],
    )
    assert [r["subscribers"] for r in rows] == [1, 4]
    assert all(isinstance(r["elapsed_ms"], float) and r["elapsed_ms"] > 0 for r in rows)
    assert rows[1]["seed_figure"] == 8.33 and rows[1]["ratio"] is not None


@pytest.mark.timeout(120)
def test_seed003_ramp_against_the_queue_manager(capsys: pytest.CaptureFixture[str]) -> None:
    rows = _json_rows(
        capsys,
        [
            "bench",
            "seed003-mst",
            "--qos",
            "NPNT",
            "--warmup",
            "0.5",
            "--window",
            "1",
            "--start-rate",
            "200",
            "--factor",
            "2",
            "--max-rate",
            "400",
            "--refine",
            "0",
            "--steps",
            "--format",
            "json",
        ],
    )
    steps = [r for r in rows if r["step"] == "ramp"]
    assert [r["offered_rate"] for r in steps] == [200, 400]
    assert all(r["lost"] == 0 for r in steps)
    summary = rows[-1]
    assert summary["step"] == "MST" and summary["seed"] == "003/npnt/1-1024"
    assert summary["msgs_per_sec"] in (200, 400)


def test_bad_options_are_one_line_errors(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "seed000-subscribers", "--sizes", "10,x"]) == 1
    assert "expected comma-separated integers, got '10,x'" in capsys.readouterr().err
    assert main(["bench", "seed001-streaming", "--variants", "nope"]) == 1
    assert "unknown variant 'nope'" in capsys.readouterr().err
