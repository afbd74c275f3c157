"""`bench flow --record both`: each cell measured without a recording and with one holding the whole window."""

from __future__ import annotations

import json

import pytest
from flowbroker.cli import main


@pytest.mark.timeout(300)
def test_record_both_measures_each_cell_off_then_on(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["bench", "flow", "--case", "passthrough", "--sizes", "first", "--persistence", "np"]
    argv += ["--record", "both", "--seconds", "0.5", "--warmup", "0.2", "--clients", "2", "--format", "json"]
    assert main(argv) == 0
    rows = [r for r in json.loads(capsys.readouterr().out) if r.get("table")]
    assert [(r["case"], r["recording"]) for r in rows] == [("passthrough", "off"), ("passthrough", "on")]
    off, on = rows
    assert off["Msgs/Sec"] and on["Msgs/Sec"]
    assert "recorded" not in str(off.get("note", ""))
    note = str(on["note"])
    assert note.startswith("recorded ") and not note.startswith("recorded 0 messages"), note
    assert "ended before the window did" not in note
