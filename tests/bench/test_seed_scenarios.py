"""The seed scenarios run end to end against a real queue manager (tiny windows: behaviour, not speed)."""

from __future__ import annotations

import json

import pytest
from flowbroker.cli import main
from flowbroker_bench import flow, seeds
from flowbroker_bench.core import scenarios
from flowbroker_bench.seed004 import seed_key

MINE = {
    "seed-table",
    "report",
    "seed000-subscribers",
    "seed000-dummy-subscriptions",
    "seed000-subscriber-queues",
    "seed000-bank",
    "seed001-streaming",
    "seed002-p2p-4q",
    "seed002-p2p-nn",
    "seed002-pubsub-1n",
    "seed002-pubsub-nn",
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
    # which steps hold depends on this machine's load; the ramp's rules and delivery do not:
    # it climbs until a step fails, every message put is delivered, and the MST is the highest
    # step that held
    offered = [r["offered_rate"] for r in steps]
    assert offered in ([200], [200, 400]), steps
    assert all(str(r["sustainable"]).startswith(("yes", "no: ")) for r in steps), steps
    assert offered == [200, 400] or steps[0]["sustainable"] != "yes", steps
    assert all(r["lost"] == 0 for r in steps), steps
    summary = rows[-1]
    assert summary["step"] == "MST" and summary["seed"] == "003/npnt/1-1024"
    held = [r["offered_rate"] for r in steps if r["sustainable"] == "yes"]
    assert summary["msgs_per_sec"] == max(held, default=0), rows


def test_bad_options_are_one_line_errors(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "seed000-subscribers", "--sizes", "10,x"]) == 1
    assert "expected comma-separated integers, got '10,x'" in capsys.readouterr().err
    assert main(["bench", "seed001-streaming", "--variants", "nope"]) == 1
    assert "unknown variant 'nope'" in capsys.readouterr().err


@pytest.mark.timeout(180)
def test_seed000_bank_ramps_publications_through_the_flow(capsys: pytest.CaptureFixture[str]) -> None:
    rows = _json_rows(
        capsys,
        [
            "bench",
            "seed000-bank",
            "--sizes",
            "10",
            "--warmup",
            "0.2",
            "--window",
            "1",
            "--start-rate",
            "100",
            "--factor",
            "2",
            "--max-rate",
            "200",
            "--refine",
            "0",
            "--steps",
            "--no-fsync",
            "--compare-seed",
            "--format",
            "json",
        ],
    )
    steps = [r for r in rows if r["step"] == "ramp"]
    assert [r["offered_rate"] for r in steps][:1] == [100]
    # every publication reaches all three subscribers, however loaded this machine is
    assert all(r["lost"] == 0 for r in steps), steps
    summary = rows[-1]
    assert summary["step"] == "MST" and summary["seed"] == "000/bank/10" and summary["subscriptions"] == 3
    assert all(str(r["sustainable"]).startswith(("yes", "no: ")) for r in steps)
    # which step holds depends on the load: the MST is the highest step that held
    held = [r["offered_rate"] for r in steps if r["sustainable"] == "yes"]
    assert summary["seed_figure"] == 49 and summary["msgs_per_sec"] == max(held, default=0), rows


@pytest.mark.timeout(180)
def test_seed001_six_duplicates_and_peaks_are_keyed_to_their_tables(
    capsys: pytest.CaptureFixture[str],
) -> None:
    rows = _json_rows(
        capsys,
        [
            "bench",
            "seed001-streaming",
            "--variants",
            "bestef-pubsub6,pubsub6",
            "--putters",
            "1",
            "--seconds",
            "0.3",
            "--warmup",
            "0.1",
            "--compare-seed",
            "--format",
            "json",
        ],
    )
    assert [(r["variant"], r["putters"]) for r in rows] == [
        ("bestef-pubsub6", 1),
        ("bestef-pubsub6", "peak (at 1)"),
        ("pubsub6", 1),
        ("pubsub6", "peak (at 1)"),
    ]
    assert (
        rows[0]["seed"]
        == "001/multiple-duplicates/6-duplicates-streaming-queues-bestef-with-pub-sub/1#app1_put_rate"
    )
    assert rows[3]["seed"] == "001/peak-persistent/6-duplicates-pub-sub#app1_put_rate"
    # seven copies of every put: the application's and six duplicates, all drained
    assert all(r["total_rate"] > r["app1_put_rate"] for r in rows)  # type: ignore[operator]
    assert all(isinstance(r["seed_figure"], float) for r in rows)


@pytest.mark.timeout(180)
def test_seed002_pubsub_nn_and_client_features(capsys: pytest.CaptureFixture[str]) -> None:
    rows = _json_rows(
        capsys,
        [
            "bench",
            "seed002-pubsub-nn",
            "--triplets",
            "1,2",
            "--seconds",
            "0.3",
            "--warmup",
            "0.1",
            "--compare-seed",
            "--format",
            "json",
        ],
    )
    assert [(r["triplets"], r["rate_per_publisher"], r["expected_rate"]) for r in rows] == [
        (1, 1600, 3200),
        (2, 1600, 6400),
    ]
    assert all(r["seed"] == "002/pubsub-nn-np/binding#total_rate" and r["subscribe_rate"] for r in rows)
    rows = _json_rows(
        capsys,
        [
            "bench",
            "seed002-async",
            "--seconds",
            "0.2",
            "--warmup",
            "0.1",
            "--triplets-async",
            "1",
            "--format",
            "json",
        ],
    )
    by_key = {str(r["seed"]): r for r in rows}
    assert by_key["002/sharecnv/sharecnv-20#rate"]["connections"] == 1
    assert by_key["002/sharecnv/sharecnv-1#rate"]["connections"] == 6
    assert by_key["002/read-ahead-size/buffer-10kb#rate"]["read_ahead"] == 5
    assert all(r["msgs_per_sec"] for r in rows)
