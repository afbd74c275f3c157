"""The designer's Tests panel runs a flow's cases and shows green, red and the tree diff (see flow-tests.e2e.mjs)."""

from __future__ import annotations

import os
import shutil
import uuid
from pathlib import Path

import pytest

from e2e.conftest import run_script

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.browser


@pytest.mark.timeout(420)
def test_tests_panel_runs_cases_and_shows_the_diff(broker: str, admin_password: str) -> None:
    out = ROOT / "test-output" / "flow-tests"
    shutil.rmtree(out, ignore_errors=True)  # a screenshot of an earlier run proves nothing
    out.mkdir(parents=True)
    env = {
        **os.environ,
        "FLOWBROKER_URL": broker,
        "FLOWBROKER_USER": "admin",
        "FLOWBROKER_PASSWORD": admin_password,
        "OUTPUT_DIR": str(out),
        "FLOW_NAME": f"E2eTests{uuid.uuid4().hex[:6]}",
    }
    run_script("flow-tests.e2e.mjs", env, timeout=400, steps=4)
    assert (out / "flow-tests-01-run.png").is_file() and (out / "flow-tests-02-changed.png").is_file()
