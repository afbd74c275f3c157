"""`flowbroker flow validate`: every problem with its place; bad JSON with line, column and byte offset."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "flows"


def _validate(path: Path | str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    """Run the command in this process (the CLI's own test covers start-up as a process)."""
    import contextlib
    import io

    from flowbroker.cli import main

    out, err = io.StringIO(), io.StringIO()
    old_stdin = sys.stdin
    sys.stdin = io.StringIO(stdin or "")
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            status = main(["flow", "validate", str(path)])
    finally:
        sys.stdin = old_stdin
    return subprocess.CompletedProcess([], status, out.getvalue(), err.getvalue())


def test_validate_runs_as_a_process() -> None:
    run = subprocess.run(
        [sys.executable, "-m", "flowbroker.cli", "flow", "validate", str(EXAMPLES / "passthrough.json")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert run.returncode == 0 and "is valid" in run.stdout


@pytest.mark.parametrize(
    "example", sorted(p.name for p in EXAMPLES.glob("*.json") if not p.name.endswith(".tests.json"))
)
def test_every_example_flow_is_valid(example: str) -> None:
    run = _validate(EXAMPLES / example)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "is valid" in run.stdout


def test_every_problem_is_reported_with_its_place(tmp_path: Path) -> None:
    doc = {
        "name": "Broken",
        "nodes": [
            {"id": "in", "type": "MQInput", "properties": {}},
            {"id": "c", "type": "Compute", "properties": {"esql": "SET OutputRoot = InputRoot;\nSET x = ;"}},
            {"id": "z", "type": "NoSuchNode"},
        ],
        "connections": [
            {"from": {"node": "in", "terminal": "out"}, "to": {"node": "ghost", "terminal": "in"}}
        ],
    }
    path = tmp_path / "broken.json"
    path.write_text(json.dumps(doc))
    run = _validate(path)
    assert run.returncode == 1
    lines = run.stdout.splitlines()
    assert f"{path}: in.queueName: error: required property of MQInput" in lines
    assert any(line.startswith(f"{path}: z: error: unknown node type") for line in lines)
    assert any(line.startswith(f"{path}: c.esql:2:") for line in lines)
    assert any("ghost" in line for line in lines)


def test_bad_json_names_line_column_and_offset() -> None:
    run = _validate("-", stdin='{"name": "X",\n "nodes": [,]}')
    assert run.returncode == 1
    assert run.stderr.strip() == "flowbroker: error: -:2:12: invalid JSON (byte offset 25): Expecting value"


def test_missing_file_is_one_line() -> None:
    run = _validate("/nonexistent/flow.json")
    assert run.returncode == 1 and "Traceback" not in run.stderr
    assert run.stderr.startswith("flowbroker: error: /nonexistent/flow.json:")
