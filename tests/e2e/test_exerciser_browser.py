"""The flow exerciser in a real Chromium against a real `flowbroker up` (see frontend/e2e/exerciser.e2e.mjs)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from e2e.conftest import run_script

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.browser

#: What each step photographs; each must exist after a run.
SCREENSHOTS = (
    "exerciser-01-panel",
    "exerciser-02-connection-tree",
    "exerciser-03-parse-error",
    "exerciser-04-sent-path",
    "exerciser-05-viewer",
    "exerciser-06-truncated",
    "exerciser-07-test-case",
    "exerciser-08-test-case-fails",
)


@pytest.mark.timeout(540)
def test_flow_exerciser_records_shows_and_sends(broker: str, admin_password: str) -> None:
    out = ROOT / "test-output" / "exerciser"
    shutil.rmtree(out, ignore_errors=True)  # a screenshot of an earlier run proves nothing
    out.mkdir(parents=True)
    env = {
        **os.environ,
        "FLOWBROKER_URL": broker,
        "FLOWBROKER_USER": "admin",
        "FLOWBROKER_PASSWORD": admin_password,
        "OUTPUT_DIR": str(out),
    }
    run_script("exerciser.e2e.mjs", env, timeout=520, steps=7)
    missing = [shot for shot in SCREENSHOTS if not (out / f"{shot}.png").is_file()]
    assert missing == []
