"""The designer end-to-end in a real Chromium against a real `flowbroker up` on a temporary data directory."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.browser


#: Every page the script photographs on its way; each must exist after a run.
SCREENSHOTS = (
    "01-login",
    "02a-keyboard-connect",
    "02b-connection-refused",
    "02-designer-wired",
    "03-esql-diagnostic",
    "04-saved",
    "04b-version-diff",
    "05-deploy",
    "06-topology",
    "06b-topology-new-group",
    "07-queues",
    "08-got-message",
    "08b-dead-letter",
    "09-monitoring",
    "10-monitoring-counted",
    "11-moved-back",
    "12-designer-live-counts",
    "13-subflow-made",
    "14-developer",
    "15-viewer-designer",
)


@pytest.mark.timeout(480)
def test_designer_end_to_end(broker: str, admin_password: str) -> None:
    out = ROOT / "test-output" / "e2e"
    shutil.rmtree(out, ignore_errors=True)  # a screenshot of an earlier run proves nothing
    out.mkdir(parents=True)
    env = {
        **os.environ,
        "FLOWBROKER_URL": broker,
        "FLOWBROKER_USER": "admin",
        "FLOWBROKER_PASSWORD": admin_password,
        "OUTPUT_DIR": str(out),
    }
    result = subprocess.run(
        ["node", "e2e/designer.e2e.mjs"],
        cwd=ROOT / "frontend",
        env=env,
        capture_output=True,
        text=True,
        timeout=450,
    )
    lines = [line for line in result.stdout.splitlines() if line.startswith("{")]
    assert lines, f"the browser script printed no result:\n{result.stdout}\n{result.stderr}"
    report = json.loads(lines[-1])
    # Every step is required: the whole chain, from drawing to deploying, putting, getting,
    # counting and tracing, must really have happened in the browser.
    not_passed = [s for s in report["steps"] if s["status"] != "passed"]
    assert not not_passed and result.returncode == 0, json.dumps(not_passed, indent=1) + result.stderr
    assert len(report["steps"]) == 21, [s["name"] for s in report["steps"]]
    missing = [shot for shot in SCREENSHOTS if not (out / f"{shot}.png").is_file()]
    assert missing == []
