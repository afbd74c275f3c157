"""`flowbroker esql check|run` as users call it: real processes, exit codes and printed lines."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

FLOWBROKER = [sys.executable, "-m", "flowbroker.cli"]

MODULE = """CREATE COMPUTE MODULE Run_Compute
  CREATE FUNCTION Main() RETURNS BOOLEAN
  BEGIN
    SET OutputRoot = InputRoot;
    SET OutputRoot.XMLNSC.Doc.Status = 'DONE';
    SET OutputRoot.XMLNSC.Doc.Who = who;
    RETURN TRUE;
  END;
  DECLARE who EXTERNAL CHARACTER 'nobody';
END MODULE;
"""


def flowbroker(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*FLOWBROKER, *args], capture_output=True, text=True, timeout=60, check=False)


@pytest.mark.timeout(120)
def test_check_clean_file(tmp_path: Path) -> None:
    path = tmp_path / "ok.esql"
    path.write_text(MODULE)
    result = flowbroker("esql", "check", str(path))
    assert result.returncode == 0, result.stderr
    assert result.stdout == ""


@pytest.mark.timeout(120)
def test_check_reports_every_error(tmp_path: Path) -> None:
    path = tmp_path / "bad.esql"
    path.write_text("SET a = 1 +;\nSET b = ;\n")
    result = flowbroker("esql", "check", str(path))
    assert result.returncode == 1
    assert result.stdout.splitlines() == [
        f"{path}:1:12: error: syntax error: unexpected ';'",
        f"{path}:2:9: error: syntax error: unexpected ';'",
    ]


@pytest.mark.timeout(120)
def test_check_unresolved_call_warning_and_strict(tmp_path: Path) -> None:
    path = tmp_path / "call.esql"
    path.write_text("CALL Elsewhere();\n")
    loose = flowbroker("esql", "check", str(path))
    assert loose.returncode == 0
    assert loose.stdout.strip() == f"{path}:1:1: warning: routine 'Elsewhere' is not defined"
    strict = flowbroker("esql", "check", "--strict", str(path))
    assert strict.returncode == 1
    assert strict.stdout.strip() == f"{path}:1:1: error: routine 'Elsewhere' is not defined"


@pytest.mark.timeout(120)
def test_check_project_across_files(tmp_path: Path) -> None:
    lib = tmp_path / "lib.esql"
    lib.write_text("BROKER SCHEMA lib\nCREATE FUNCTION Two() RETURNS INTEGER BEGIN RETURN 2; END;\n")
    app = tmp_path / "app.esql"
    app.write_text("BROKER SCHEMA app\nPATH lib;\nSET OutputRoot.XMLNSC.A = Two();\n")
    assert flowbroker("esql", "check", "--strict", str(lib), str(app)).returncode == 0
    assert flowbroker("esql", "check", "--strict", str(app)).returncode == 1


@pytest.mark.timeout(120)
def test_check_missing_file(tmp_path: Path) -> None:
    result = flowbroker("esql", "check", str(tmp_path / "absent.esql"))
    assert result.returncode == 1
    assert "cannot read" in result.stderr and "Traceback" not in result.stderr


@pytest.mark.timeout(120)
def test_run_xmlnsc(tmp_path: Path) -> None:
    program = tmp_path / "run.esql"
    program.write_text(MODULE)
    msg = tmp_path / "in.xml"
    msg.write_text("<Doc><A>1</A></Doc>")
    result = flowbroker("esql", "run", str(program), "--input", str(msg), "--domain", "XMLNSC")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "<Doc><A>1</A><Status>DONE</Status><Who>nobody</Who></Doc>"
    result = flowbroker(
        "esql", "run", str(program), "--input", str(msg), "--domain", "XMLNSC", "--external", "who=ops"
    )
    assert result.stdout.strip() == "<Doc><A>1</A><Status>DONE</Status><Who>ops</Who></Doc>"


@pytest.mark.timeout(120)
def test_run_json(tmp_path: Path) -> None:
    program = tmp_path / "j.esql"
    program.write_text(
        "SET OutputRoot = InputRoot;\nSET OutputRoot.JSON.Data.sum = InputRoot.JSON.Data.a + 1;\n"
    )
    msg = tmp_path / "in.json"
    msg.write_text('{"a": 41}')
    result = flowbroker("esql", "run", str(program), "--input", str(msg), "--domain", "JSON")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == {"a": 41, "sum": 42}


@pytest.mark.timeout(120)
def test_run_blob(tmp_path: Path) -> None:
    program = tmp_path / "b.esql"
    program.write_text(
        "SET OutputRoot = InputRoot;\nSET OutputRoot.BLOB.BLOB = InputRoot.BLOB.BLOB || X'21';\n"
    )
    msg = tmp_path / "in.bin"
    msg.write_bytes(b"hi")
    result = subprocess.run(
        [*FLOWBROKER, "esql", "run", str(program), "--input", str(msg), "--domain", "BLOB"],
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout == b"hi!\n"


@pytest.mark.timeout(120)
def test_run_reports_bad_input_and_runtime_errors(tmp_path: Path) -> None:
    program = tmp_path / "e.esql"
    program.write_text("SET OutputRoot = InputRoot;\nSET OutputRoot.XMLNSC.Doc.X = 1 / 0;\n")
    bad = tmp_path / "bad.xml"
    bad.write_text("<Doc><A></Doc>")
    result = flowbroker("esql", "run", str(program), "--input", str(bad), "--domain", "XMLNSC")
    assert result.returncode == 1
    assert "malformed XML" in result.stderr and "line 1" in result.stderr
    assert "Traceback" not in result.stderr
    good = tmp_path / "good.xml"
    good.write_text("<Doc/>")
    result = flowbroker("esql", "run", str(program), "--input", str(good), "--domain", "XMLNSC")
    assert result.returncode == 1
    assert result.stderr.strip() == f"{program}:2:1: runtime error: division by zero: 1 / 0"


@pytest.mark.timeout(120)
def test_run_compile_error(tmp_path: Path) -> None:
    program = tmp_path / "c.esql"
    program.write_text("SET OutputRoot.XMLNSC.A = undefinedVar;\n")
    msg = tmp_path / "in.xml"
    msg.write_text("<Doc/>")
    result = flowbroker("esql", "run", str(program), "--input", str(msg), "--domain", "XMLNSC")
    assert result.returncode == 1
    assert result.stderr.strip() == f"{program}:1:27: error: undeclared identifier 'undefinedVar'"


@pytest.mark.timeout(120)
def test_bad_bytes_and_bad_json_are_precise(tmp_path: Path) -> None:
    binary = tmp_path / "latin1.esql"
    binary.write_bytes(b"SET OutputRoot.XMLNSC.A = 'caf\xe9';\n")
    result = flowbroker("esql", "check", str(binary))
    assert result.returncode == 1
    assert result.stderr.strip() == f"flowbroker: error: {binary}: not UTF-8 text (byte offset 30)"
    program = tmp_path / "p.esql"
    program.write_text("SET OutputRoot = InputRoot;\n")
    msg = tmp_path / "bad.json"
    msg.write_text('{"a": 1,\n "b": }')
    result = flowbroker("esql", "run", str(program), "--input", str(msg), "--domain", "JSON")
    assert result.returncode == 1
    assert (
        result.stderr.strip()
        == f"flowbroker: error: {msg}: JSON: malformed JSON at line 2, column 7 (byte offset 15): "
        "unexpected character, expected a JSON value"
    )


@pytest.mark.timeout(120)
def test_check_report_counts_files_per_project(tmp_path: Path) -> None:
    """A directory is checked project by project; a file that does not parse does not hide the rest,
    and a routine defined in no given file is a warning, not a refusal."""
    first = tmp_path / "ProjA"
    first.mkdir()
    (first / ".project").write_text("<projectDescription/>")
    (first / "a.esql").write_text(MODULE)
    (first / "b.esql").write_text("SET a = 1 +;\n")
    second = tmp_path / "ProjB" / "com" / "x"
    second.mkdir(parents=True)
    (tmp_path / "ProjB" / ".project").write_text("<projectDescription/>")
    # the same module name in another project is no clash
    (second / "c.esql").write_text(
        "BROKER SCHEMA com.x\n" + MODULE.replace("SET OutputRoot = InputRoot;", "CALL Elsewhere();")
    )
    result = flowbroker("esql", "check", "--report", str(tmp_path))
    assert result.returncode == 1
    lines = result.stdout.splitlines()
    assert lines[0] == f"{first / 'b.esql'}:1:12: error: syntax error: unexpected ';'"
    assert lines[-1] == "2 of 3 files accepted (66.7 %), 1 refused, 1 warnings"
