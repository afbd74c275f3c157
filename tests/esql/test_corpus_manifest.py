"""The public-corpus manifest: every row names a repository, a path, the commit read and a verdict."""

from __future__ import annotations

import re

from .esql_corpus import read_manifest


def test_manifest_rows_are_complete() -> None:
    rows = read_manifest()
    assert len(rows) >= 300
    assert len({row["repo"] for row in rows}) >= 25
    for row in rows:
        assert re.fullmatch(r"[\w.-]+/[\w.-]+", row["repo"]), row
        assert row["path"].lower().endswith(".esql"), row
        assert re.fullmatch(r"[0-9a-f]{40}", row["commit"]), row
        assert row["verdict"] == "ok" or re.fullmatch(r"refused: .+ \(line \d+\) \[.+\]", row["verdict"]), row
