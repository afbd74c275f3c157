"""The esql-values benchmark scenario checks every operation's result before it times it (no timing asserted)."""

from __future__ import annotations

import argparse

import pytest
from flowbroker_bench import esql_functions
from flowbroker_bench.core import scenarios


def _args(*argv: str) -> argparse.Namespace:
    scenario = scenarios()["esql-values"]
    parser = argparse.ArgumentParser()
    assert scenario.add_arguments is not None
    scenario.add_arguments(parser)
    return parser.parse_args(["--seconds", "0.01", "--repeat", "1", *argv])


def test_esql_values_scenario_runs_selected_operations() -> None:
    rows = scenarios()["esql-values"].run(_args("--only", "concat", "FORMAT"))
    names = [row["operation"] for row in rows]
    assert names == [
        "concat CHARACTER",
        "cast DECIMAL FORMAT",
        "cast TIMESTAMP FORMAT",
        "cast CHARACTER AS TIMESTAMP FORMAT",
    ]
    for row in rows:
        assert row["ops/s (median)"] > 0 and row["CPU-ns/op"] > 0
        assert row["repeats"] == 1


def test_every_operation_returns_its_esql_result() -> None:
    rows = scenarios()["esql-values"].run(_args())
    assert [row["operation"] for row in rows] == [case[0] for case in esql_functions._cases()]


def test_an_operation_returning_the_wrong_value_is_not_measured(monkeypatch: pytest.MonkeyPatch) -> None:
    from esql.cast import cast

    wrong = [
        (
            "cast DEFAULT (fails)",
            "CAST('abc' AS INTEGER DEFAULT 0)",
            lambda: lambda: cast("abc", "INTEGER", default=0),
            "0",
        ),
    ]
    monkeypatch.setattr(esql_functions, "_cases", lambda: wrong)
    with pytest.raises(ValueError, match=r"cast DEFAULT \(fails\): .* returned 0, expected '0'"):
        esql_functions.run(_args())
