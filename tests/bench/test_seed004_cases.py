"""`bench seed004`: every Appendix B table is a case keyed to the seed data, and every case runs end to end.

The end-to-end runs use real processes (queue manager, execution-group workers, PostgreSQL or
SQLite) with windows of a fraction of a second: they check the rows' shape, never their figures.
"""

from __future__ import annotations

import argparse
import json

import pytest
from flowbroker.cli import main
from flowbroker_bench import appendix_b, flow, seeds

FIGURES = ("Msgs/Sec", "Response", "Get", "Put", "EG CPU (%)", "QM CPU (%)", "Mbits/Sec")


def _json_rows(capsys: pytest.CaptureFixture[str], argv: list[str]) -> list[dict[str, object]]:
    assert main(argv) == 0
    return json.loads(capsys.readouterr().out)  # type: ignore[no-any-return]


def test_every_appendix_b_table_is_a_case_or_says_why_not() -> None:
    covered = {c.table for c in appendix_b.CASES} | set(appendix_b.NOT_REPRODUCED)
    assert {t["id"] for t in seeds.tables("004")} <= covered
    assert len({c.key for c in appendix_b.CASES}) == len(appendix_b.CASES)


def test_every_cell_is_keyed_to_a_seed_figure() -> None:
    for case in appendix_b.CASES:
        assert case.cells(), case.key
        for persistent, size in case.cells():
            key = case.seed_key(persistent, size)
            if case.table:
                assert key is not None and seeds.figure(key).value > 0, (case.key, key)
            else:
                assert key is None and case.sizes_from


def test_the_seeds_own_parameters_are_the_cases() -> None:
    by_table = {c.table: c for c in appendix_b.CASES}
    for n in (1, 10, 30, 50, 70, 100, 1000):
        assert by_table[f"7.11-sub{n}"].subscribers == n
    for n in (1, 2, 4):
        assert by_table[f"7.8-eg{n}"].groups == n
    assert by_table["7.9-yes"].overrides is not None
    assert by_table["7.9-yes"].overrides(1024) == {"in.transactionMode": "yes"}
    assert by_table["7.10-coordinated-no"].flow_properties == {"coordinatedTransaction": False}
    assert by_table["7.12-content"].subscription_filter and not by_table["7.12-topic"].subscription_filter
    assert by_table["7.14-normal-safe"].trace == ("normal", "safe")
    assert by_table["7.2.2"].cells() == [(False, 4096), (False, 16384), (False, 65536), (True, 4096)]


def test_cases_are_chosen_by_key_table_or_prefix() -> None:
    assert [c.key for c in appendix_b.select(["7.8"])] == ["groups-1", "groups-2", "groups-4"]
    assert [c.key for c in appendix_b.select(["7.2"])] == [
        "simple-compute",
        "complex-compute",
        "five-complex",
        "very-complex",
    ]
    assert [c.key for c in appendix_b.select(["7.1"])] == ["passthrough"]
    assert [c.key for c in appendix_b.select(["7.11-sub10", "passthrough"])] == [
        "passthrough",
        "subscribers-10",
    ]
    assert len(appendix_b.select(["7.14"])) == 3
    with pytest.raises(ValueError, match="unknown case 'nope'"):
        appendix_b.select(["nope"])


def _args(**values: object) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    flow.add_arguments(parser)
    args = parser.parse_args([])
    for key, value in values.items():
        setattr(args, key, value)
    return args


def test_sizes_and_persistence_choose_the_cells() -> None:
    (case,) = appendix_b.select(["7.1"])
    assert flow._cells(case, _args()) == case.cells()
    assert flow._cells(case, _args(sizes="first")) == [(False, 1024), (True, 1024)]
    assert flow._cells(case, _args(sizes="4096,65536", persistence="np")) == [(False, 4096), (False, 65536)]
    assert flow._cells(case, _args(sizes="1024", persistence="p")) == [(True, 1024)]
    with pytest.raises(ValueError, match="--sizes: expected all, first"):
        flow._cells(case, _args(sizes="big"))


def test_a_row_has_appendix_b_columns_and_its_seed_key() -> None:
    (case,) = appendix_b.select(["7.11-sub10"])
    result = {
        "count": 2000,
        "bytes": 2000 * 1024,
        "elapsed": 1.0,
        "eg_cpu": 0.5,
        "qm_cpu": 0.25,
        "driver_cpu": 0.1,
        "response_ms": 2.0,
        "get_ms": 1.5,
        "put_ms": 0.5,
        "fanout": "ok: 9,000 copies drained",
    }
    row = flow._row(case, False, 1024, result, case.note)
    assert row["Msgs/Sec"] == 2000.0 and row["Mbits/Sec"] == pytest.approx(15.62, abs=0.01)
    assert (row["EG CPU (%)"], row["QM CPU (%)"], row["Response"], row["Get"], row["Put"]) == (
        50,
        25,
        2,
        1.5,
        0.5,
    )
    assert row["subscribers"] == 10 and row["Deliveries/Sec"] == 10000.0
    assert row["seed"] == "004/7.11-sub10/np-1024" and row["figure"] == "Msgs/Sec"
    assert row["driver CPU-ms/msg"] == 0.05 and row["note"] == case.note
    # the RabbitMQ requesters' wrong, lost or unexpected replies follow the case's note
    told = flow._row(case, False, 1024, {**result, "problems": "3 requests without a reply"}, case.note)
    assert told["note"] == f"{case.note}; 3 requests without a reply"
    unmeasured = flow._row(case, True, 1024, None, "not measured: why")
    assert unmeasured["Msgs/Sec"] is None and unmeasured["note"] == "not measured: why"
    assert unmeasured["seed"] == "004/7.11-sub10/p-1024"


def test_list_names_every_case_and_what_is_not_reproduced(capsys: pytest.CaptureFixture[str]) -> None:
    rows = _json_rows(capsys, ["bench", "seed004", "--list", "--format", "json"])
    assert [r["case"] for r in rows if r["case"]] == [c.key for c in appendix_b.CASES]
    assert any(r["table"] == "7.7-neon-v1-50fields" and r["flow"] == "not reproduced" for r in rows)


def test_an_unknown_case_is_a_one_line_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "seed004", "--case", "7.99", "--list"]) == 1
    assert "unknown case '7.99'" in capsys.readouterr().err


@pytest.mark.timeout(600)
def test_every_case_runs_against_real_processes(capsys: pytest.CaptureFixture[str]) -> None:
    rows = _json_rows(
        capsys,
        [
            "bench",
            "seed004",
            "--sizes",
            "first",
            "--persistence",
            "np",
            "--seconds",
            "0.2",
            "--warmup",
            "0.1",
            "--clients",
            "4",
            "--no-fsync",
            "--compare-seed",
            "--format",
            "json",
        ],
    )
    measured = {r["case"]: r for r in rows if r.get("table")}
    assert list(measured) == [c.key for c in appendix_b.CASES]
    for case in appendix_b.CASES:
        row = measured[case.key]
        assert row["persistence"] == "np" and row["message_size"] == case.size
        # a cell that could not be measured says why in its note
        missing = [k for k in FIGURES if not isinstance(row[k], int | float)]
        assert not missing, f"{case.key}: no {', '.join(missing)}; note: {row.get('note')!r}"
        assert row["Msgs/Sec"] > 0  # type: ignore[operator]
        if case.table:
            assert isinstance(row["seed_figure"], float) and row["ratio"] is not None, row
    assert measured["subscribers-1000"]["subscribers"] == 1000
    assert str(measured["subscribers-10"]["fan-out"]).startswith("ok:")
    assert measured["groups-4"]["execution_groups"] == 4
    assert "data source:" in str(measured["coordinated-no"]["note"])
    assert rows[-1]["case"] == "idle group RSS"


@pytest.mark.timeout(300)
def test_flow_scenario_runs_its_headline_cells(capsys: pytest.CaptureFixture[str]) -> None:
    rows = _json_rows(
        capsys,
        [
            "bench",
            "flow",
            "--case",
            "passthrough",
            "--case",
            "transaction-yes",
            "--sizes",
            "4096",
            "--persistence",
            "both",
            "--seconds",
            "0.2",
            "--warmup",
            "0.1",
            "--clients",
            "2",
            "--format",
            "json",
        ],
    )
    cells = [(r["case"], r["persistence"], r["message_size"]) for r in rows if r.get("table")]
    assert cells == [("passthrough", "np", 4096), ("transaction-yes", "np", 4096)]
    assert all(r["seed"] and r["Msgs/Sec"] for r in rows if r.get("table"))


@pytest.mark.timeout(300)
def test_a_window_too_short_for_any_answer_runs_until_one_comes(capsys: pytest.CaptureFixture[str]) -> None:
    """One publication to 1000 subscribers takes longer than a 1 ms window: the row still has figures."""
    rows = _json_rows(
        capsys,
        ["bench", "flow", "--case", "subscribers-1000", "--sizes", "first", "--persistence", "np"]
        + ["--seconds", "0.001", "--warmup", "0", "--clients", "1", "--no-fsync", "--format", "json"],
    )
    [row] = [r for r in rows if r.get("table")]
    assert all(isinstance(row[k], int | float) for k in FIGURES), row
    assert row["Msgs/Sec"] > 0  # type: ignore[operator]
