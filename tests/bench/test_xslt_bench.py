"""`flowbroker bench xslt` runs its three rows (tiny counts: behaviour, not speed)."""

from __future__ import annotations

import json

import pytest
from flowbroker.cli import main


def test_bench_xslt_prints_the_in_process_sandbox_and_node_rows(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "xslt", "--messages", "5", "--format", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["mode"].split(" (")[0] for r in rows] == [
        "lxml in process",
        "sandbox process",
        "XSLTransform node",
    ]
    assert all(r["messages"] == 5 and r["msgs_per_s"] > 0 for r in rows)
    assert rows[2]["mode"] == "XSLTransform node (46 result fields)"
