"""The step debugger in a real Chromium against a real `flowbroker up`: a production group refuses to
pause, a development group holds a message at a breakpoint, a field edited in its tree arrives on the
output queue, and an ESQL breakpoint shows the variables in scope."""

from __future__ import annotations

import os
import shutil

import pytest

from e2e.conftest import PASSWORD, ROOT, run_script

pytestmark = pytest.mark.browser

SCREENSHOTS = ("paused-edited", "esql-variables")


@pytest.mark.timeout(300)
def test_pause_edit_and_resume_in_the_browser(broker: str) -> None:
    out = ROOT / "test-output" / "e2e-debugger"
    shutil.rmtree(out, ignore_errors=True)  # a screenshot of an earlier run proves nothing
    out.mkdir(parents=True)
    env = {
        **os.environ,
        "FLOWBROKER_URL": broker,
        "FLOWBROKER_USER": "admin",
        "FLOWBROKER_PASSWORD": PASSWORD,
        "OUTPUT_DIR": str(out),
    }
    run_script("debugger.e2e.mjs", env, timeout=240, steps=6)
    missing = [shot for shot in SCREENSHOTS if not (out / f"{shot}.png").is_file()]
    assert missing == []
