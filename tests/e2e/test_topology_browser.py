"""The topology graph, the ESQL editor's skeleton and wide panel, and export/import with subflows,
in a real Chromium against a real `flowbroker up` (the fixture of the designer's end-to-end)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess

import pytest

from e2e.conftest import FRONTEND, PASSWORD, ROOT

pytestmark = pytest.mark.browser

SCREENSHOTS = ("topology-graph", "esql-wide", "import-conflict", "import-overwrite")


@pytest.mark.timeout(300)
def test_topology_editor_and_import_in_the_browser(broker: str) -> None:
    out = ROOT / "test-output" / "e2e-topology"
    shutil.rmtree(out, ignore_errors=True)  # a screenshot of an earlier run proves nothing
    out.mkdir(parents=True)
    env = {
        **os.environ,
        "FLOWBROKER_URL": broker,
        "FLOWBROKER_USER": "admin",
        "FLOWBROKER_PASSWORD": PASSWORD,
        "OUTPUT_DIR": str(out),
    }
    result = subprocess.run(
        ["node", "e2e/topology.e2e.mjs"], cwd=FRONTEND, env=env, capture_output=True, text=True, timeout=240
    )
    lines = [line for line in result.stdout.splitlines() if line.startswith("{")]
    assert lines, f"the browser script printed no result:\n{result.stdout}\n{result.stderr}"
    report = json.loads(lines[-1])
    not_passed = [s for s in report["steps"] if s["status"] != "passed"]
    assert not not_passed and result.returncode == 0, json.dumps(not_passed, indent=1) + result.stderr
    assert len(report["steps"]) == 7, [s["name"] for s in report["steps"]]
    missing = [shot for shot in SCREENSHOTS if not (out / f"{shot}.png").is_file()]
    assert missing == []
