"""The topology graph, the ESQL editor's skeleton and wide panel, and export/import with subflows,
in a real Chromium against a real `flowbroker up` (the fixture of the designer's end-to-end)."""

from __future__ import annotations

import os
import shutil

import pytest

from e2e.conftest import PASSWORD, ROOT, run_script

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
    run_script("topology.e2e.mjs", env, timeout=240, steps=8)
    missing = [shot for shot in SCREENSHOTS if not (out / f"{shot}.png").is_file()]
    assert missing == []
