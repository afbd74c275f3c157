"""A SQLite data source's SQL stays inside its database file: ATTACH, DETACH, VACUUM INTO,
load_extension and file-reaching PRAGMAs are refused with a database exception and create nothing."""

from __future__ import annotations

from pathlib import Path

import pytest
from flowbroker.runtime.harness import FlowHarness, flow

REPORT = """CREATE COMPUTE MODULE Reach
  CREATE FUNCTION Main() RETURNS BOOLEAN
  BEGIN
    DECLARE EXIT HANDLER FOR SQLSTATE LIKE '%'
    BEGIN
      SET OutputRoot.XMLNSC.r.state = SQLSTATE;
      SET OutputRoot.XMLNSC.r.text = SQLERRORTEXT;
      PROPAGATE;
    END;
    PASSTHRU(InputRoot.XMLNSC.m.sql);
    SET OutputRoot.XMLNSC.r.state = 'ran';
    RETURN TRUE;
  END;
END MODULE;
"""

REFUSAL = (
    ": a SQLite data source refuses ATTACH, DETACH, VACUUM INTO, load_extension and file-reaching PRAGMAs"
)


def _outcome(tmp_path: Path, sql: str) -> tuple[str, str]:
    doc = flow(
        {
            "in": ("MQInput", {"queueName": "UNUSED", "messageDomain": "XMLNSC"}),
            "c": ("Compute", {"esql": REPORT, "dataSource": "db"}),
        },
        ["in.out -> c"],
    )
    h = FlowHarness(doc, data_sources={"db": f"sqlite:///{tmp_path / 'main.db'}"})
    try:
        body = f"<m><sql>{sql}</sql></m>".encode()
        h.inject("in", body, domain="XMLNSC")
        (out,) = h.seen("c", "out")
        r = out.root.child("XMLNSC").child("r")
        text = r.child("text")
        return r.child("state").value, text.value if text is not None else ""
    finally:
        h.close()


@pytest.mark.parametrize(
    ("sql", "reason"),
    [
        ("ATTACH DATABASE '{outside}' AS e", "not authorized"),
        ("VACUUM INTO '{outside}'", "authorization denied"),
        ("SELECT load_extension('{outside}')", "not authorized to use function: load_extension"),
        ("PRAGMA temp_store_directory = '{dir}'", "not authorized"),
        ("PRAGMA writable_schema = ON", "not authorized"),
    ],
)
def test_file_reaching_sql_is_refused_and_creates_nothing(tmp_path: Path, sql: str, reason: str) -> None:
    outside = tmp_path / "elsewhere" / "e.db"
    outside.parent.mkdir()
    state, text = _outcome(tmp_path, sql.format(outside=outside, dir=outside.parent))
    assert (state, text) == ("42501", "database error: " + reason + REFUSAL)
    assert list(outside.parent.iterdir()) == []


def test_detach_is_refused(tmp_path: Path) -> None:
    assert _outcome(tmp_path, "DETACH DATABASE main") == ("42501", "database error: not authorized" + REFUSAL)


def test_ordinary_sql_and_pragmas_still_run(tmp_path: Path) -> None:
    assert _outcome(tmp_path, "CREATE TABLE t (a INTEGER)")[0] == "ran"
    assert _outcome(tmp_path, "PRAGMA table_info(t)")[0] == "ran"
    assert _outcome(tmp_path, "PRAGMA journal_mode")[0] == "ran"
