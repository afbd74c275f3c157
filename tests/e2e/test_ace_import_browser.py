"""The designer's Import ACE… button, in a real Chromium against a real `flowbroker up` (see ace-import.e2e.mjs)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from flowbroker.importers.ace.workspace import zip_dirs

from e2e.conftest import run_script

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
    run_script("ace-import.e2e.mjs", env, timeout=270, steps=2)
    assert (out / "ace-01-report.png").is_file() and (out / "ace-02-opened.png").is_file()
