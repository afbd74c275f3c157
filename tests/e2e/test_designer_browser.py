"""The designer end-to-end in a real Chromium against a real `flowbroker up` on a temporary data directory."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from e2e.conftest import run_script

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
    run_script("designer.e2e.mjs", env, timeout=450, steps=21)
    missing = [shot for shot in SCREENSHOTS if not (out / f"{shot}.png").is_file()]
    assert missing == []
