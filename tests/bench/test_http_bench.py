"""`flowbroker bench http`: a short real run against the flow in its own engine process (behaviour, not speed)."""

from __future__ import annotations

import json

import pytest
from flowbroker.bench import http_flow
from flowbroker.bench.core import scenarios
from flowbroker.cli import main


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
