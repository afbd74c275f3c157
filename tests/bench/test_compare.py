"""--compare-seed: seed figure and ratio beside rows, times inverted, unknown keys reported in place."""

from __future__ import annotations

import json

import pytest
from flowbroker_bench.compare import compare
from flowbroker_bench.core import render


def test_ratio_and_goal_for_a_rate() -> None:
    rows = compare([{"scenario": "x", "seed": "004/7.1/np-1024", "msgs_per_sec": 30220}], goal=20)
    assert rows[0]["seed_figure"] == 1511
    assert rows[0]["ratio"] == 20.0
    assert rows[0]["goal_met"] == "yes"
    assert compare([{"seed": "004/7.1/np-1024", "msgs_per_sec": 1511}], goal=20)[0]["goal_met"].startswith(
        "no"
    )


def test_ratio_for_an_elapsed_time_is_seed_over_ours() -> None:
    row = compare([{"seed": "000/subscribers/1000-8", "figure": "elapsed_ms", "elapsed_ms": 1.204}])[0]
    assert row["seed_figure"] == 12.04
    assert row["ratio"] == pytest.approx(10.0, rel=1e-3)


def test_rows_without_key_pass_and_bad_keys_are_reported_not_raised() -> None:
    rows = compare([{"a": 1}, {"seed": "004/7.1/nope", "msgs_per_sec": 5}, {"seed": "004/7.1/p-1024"}])
    assert rows[0] == {"a": 1}
    assert rows[1]["seed_figure"].startswith("unknown: seed 004 table 7.1 has no row 'nope'")
    assert rows[2]["ratio"] is None  # no figure of ours: no ratio, no crash


def test_render_table_csv_json() -> None:
    rows = compare([{"flow": "MQInput->MQOutput", "seed": "004/7.1/np-4096", "msgs_per_sec": 21720.0}])
    table = render(rows, "table").splitlines()
    assert table[0].split() == ["flow", "seed", "msgs_per_sec", "seed_figure", "seed_unit", "ratio"]
    assert "21,720" in table[2] and "1,086" in table[2] and "20" in table[2]
    csv_lines = render(rows, "csv").splitlines()
    assert csv_lines[0] == "flow,seed,msgs_per_sec,seed_figure,seed_unit,ratio"
    assert csv_lines[1].startswith("MQInput->MQOutput,004/7.1/np-4096,21720.0,1086.0,")
    assert json.loads(render(rows, "json"))[0]["ratio"] == 20.0
