"""The designer's Import ACE… button, in a real Chromium against a real `flowbroker up` (see ace-import.e2e.mjs)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from flowbroker.importers.ace.workspace import zip_dirs

ROOT = Path(__file__).resolve().parents[2]
WORKSPACE = ROOT / "tests" / "importers" / "ace" / "workspace"

pytestmark = pytest.mark.browser


@pytest.mark.timeout(300)
def test_import_ace_button(broker: str, tmp_path: Path, admin_password: str) -> None:
    out = ROOT / "test-output" / "ace-import"
    shutil.rmtree(out, ignore_errors=True)  # a screenshot of an earlier run proves nothing
    out.mkdir(parents=True)
    archive = tmp_path / "workspace.zip"
    archive.write_bytes(zip_dirs([WORKSPACE]))
    not_zip = tmp_path / "notes.zip"
    not_zip.write_text("these are notes, not an archive")
    env = {
        **os.environ,
        "FLOWBROKER_URL": broker,
        "FLOWBROKER_USER": "admin",
        "FLOWBROKER_PASSWORD": admin_password,
        "OUTPUT_DIR": str(out),
        "ACE_ZIP": str(archive),
        "NOT_ZIP": str(not_zip),
    }
    result = subprocess.run(
        ["node", "e2e/ace-import.e2e.mjs"],
        cwd=ROOT / "frontend",
        env=env,
        capture_output=True,
        text=True,
        timeout=270,
    )
    lines = [line for line in result.stdout.splitlines() if line.startswith("{")]
    assert lines, f"the browser script printed no result:\n{result.stdout}\n{result.stderr}"
    report = json.loads(lines[-1])
    not_passed = [s for s in report["steps"] if s["status"] != "passed"]
    assert not not_passed and result.returncode == 0, json.dumps(not_passed, indent=1) + result.stderr
    assert len(report["steps"]) == 2, [s["name"] for s in report["steps"]]
    assert (out / "ace-01-report.png").is_file() and (out / "ace-02-opened.png").is_file()
