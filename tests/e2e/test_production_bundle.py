"""The built designer carries no test hooks: the browser scripts find the store through React's
own links (frontend/e2e/browser.mjs), so the bundle they drive is the bundle that ships."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

DIST = Path(__file__).resolve().parents[2] / "frontend" / "dist"
IN_CI = os.environ.get("CI", "").lower() == "true"
#: Names a page script could reach the designer's state by, had a build exposed it.
HOOKS = ("__designer",)


def test_the_built_designer_exposes_no_test_hook() -> None:
    scripts = sorted((DIST / "assets").glob("*.js")) if (DIST / "index.html").is_file() else []
    if not scripts:
        reason = "the frontend is not built (make frontend)"
        if IN_CI:
            pytest.fail(f"{reason} (CI=true requires it)")
        pytest.skip(reason)
    found = [f"{path.name}: {hook}" for path in scripts for hook in HOOKS if hook in path.read_text("utf-8")]
    assert found == []
