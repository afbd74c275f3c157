"""The esql-values benchmark scenario runs and reports every operation it names (no timing asserted)."""

from __future__ import annotations

import argparse

from flowbroker.bench.core import scenarios


def test_esql_values_scenario_runs_selected_operations() -> None:
    scenario = scenarios()["esql-values"]
    parser = argparse.ArgumentParser()
    assert scenario.add_arguments is not None
    scenario.add_arguments(parser)
    args = parser.parse_args(["--seconds", "0.01", "--repeat", "1", "--only", "concat", "FORMAT"])
    rows = scenario.run(args)
    names = [row["operation"] for row in rows]
    assert names == [
        "concat CHARACTER",
        "cast DECIMAL FORMAT",
        "cast TIMESTAMP FORMAT",
        "cast CHARACTER AS TIMESTAMP FORMAT",
    ]
    for row in rows:
        assert row["ops/s (median)"] > 0
        assert row["CPU-ns/op"] >= 0
        assert row["repeats"] == 1
