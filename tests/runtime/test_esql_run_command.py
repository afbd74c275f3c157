"""`flowbroker esql run` reads and writes messages with the broker's own domain parsers."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.timeout(120)

ORDER_SET = {
    "name": "ORD",
    "types": {
        "Msg": {
            "elements": [
                {"name": "Id", "type": "string", "cwf": {"length": 4}},
                {"name": "Qty", "type": "integer", "cwf": {"repr": "display", "length": 3, "signed": False}},
            ]
        }
    },
}

TO_CWF = """CREATE COMPUTE MODULE ToCwf
  CREATE FUNCTION Main() RETURNS BOOLEAN
  BEGIN
    SET OutputRoot.Properties.MessageSet = 'ORD';
    SET OutputRoot.Properties.MessageType = 'Msg';
    SET OutputRoot.Properties.MessageFormat = 'CWF';
    SET OutputRoot.MRM = InputRoot.XMLNSC.Msg;
    RETURN TRUE;
  END;
END MODULE;
"""

TO_XML = """CREATE COMPUTE MODULE ToXml
  CREATE FUNCTION Main() RETURNS BOOLEAN
  BEGIN
    SET OutputRoot.XMLNSC.Msg = InputRoot.MRM;
    RETURN TRUE;
  END;
END MODULE;
"""

STATUS = """CREATE COMPUTE MODULE Mark
  CREATE FUNCTION Main() RETURNS BOOLEAN
  BEGIN
    SET OutputRoot = InputRoot;
    SET OutputRoot.{domain}.Doc.Status = Done();
    RETURN TRUE;
  END;
END MODULE;
"""

LIBRARY = """CREATE FUNCTION Done() RETURNS CHARACTER
BEGIN
  RETURN 'DONE' || Suffix({fail});
END;
CREATE FUNCTION Suffix(fail BOOLEAN) RETURNS CHARACTER
BEGIN
  IF fail THEN
    RETURN CAST(1 / 0 AS CHARACTER);
  END IF;
  RETURN '!';
END;
"""


def run(
    tmp_path: Path, sources: dict[str, str], body: bytes, *args: str
) -> subprocess.CompletedProcess[bytes]:
    files = []
    for name, text in sources.items():
        (tmp_path / name).write_text(text)
        files.append(str(tmp_path / name))
    (tmp_path / "input.msg").write_bytes(body)
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "flowbroker.cli",
            "esql",
            "run",
            *files,
            "--input",
            str(tmp_path / "input.msg"),
            *args,
        ],
        capture_output=True,
        timeout=60,
        check=False,
        cwd=tmp_path,
    )


def _set_file(tmp_path: Path, document: object = ORDER_SET) -> str:
    path = tmp_path / "orders.json"
    path.write_text(json.dumps(document))
    return str(path)


def test_xml_declaration_cdata_comments_and_pis_survive_across_a_project_of_files(tmp_path: Path) -> None:
    body = (
        b'<?xml version="1.0" encoding="UTF-8"?><!-- prolog --><Doc><?keep me?>'
        b"<A><![CDATA[<raw> & text]]></A><!-- inner --></Doc>"
    )
    expected = (
        b'<?xml version="1.0" encoding="UTF-8"?><!-- prolog --><Doc><?keep me?>'
        b"<A><![CDATA[<raw> & text]]></A><!-- inner --><Status>DONE!</Status></Doc>\n"
    )
    for domain in ("XMLNSC", "XMLNS", "XML"):
        sources = {"mark.esql": STATUS.format(domain=domain), "lib.esql": LIBRARY.format(fail="FALSE")}
        result = run(tmp_path, sources, body, "--domain", domain)
        assert result.returncode == 0, result.stderr
        assert result.stdout == expected, domain


def test_a_runtime_error_in_another_file_names_that_file(tmp_path: Path) -> None:
    sources = {"mark.esql": STATUS.format(domain="XMLNSC"), "lib.esql": LIBRARY.format(fail="TRUE")}
    result = run(tmp_path, sources, b"<Doc/>", "--domain", "XMLNSC")
    assert result.returncode == 1
    assert (
        result.stderr.decode().strip()
        == f"{tmp_path / 'lib.esql'}:8:5: runtime error: division by zero: 1 / 0"
    )


def test_a_filter_module_prints_its_answer(tmp_path: Path) -> None:
    module = "CREATE FILTER MODULE Big\n  CREATE FUNCTION Main() RETURNS BOOLEAN\n  BEGIN\n    RETURN Root.XMLNSC.Doc.Qty > 10;\n  END;\nEND MODULE;\n"
    answers = []
    for body in (b"<Doc><Qty>12</Qty></Doc>", b"<Doc><Qty>2</Qty></Doc>", b"<Doc/>"):
        result = run(tmp_path, {"big.esql": module}, body, "--domain", "XMLNSC")
        assert result.returncode == 0, result.stderr
        answers.append(result.stdout.decode().strip())
    assert answers == ["TRUE", "FALSE", "UNKNOWN"]


def test_an_mrm_output_is_written_as_its_cwf_record(tmp_path: Path) -> None:
    result = run(
        tmp_path,
        {"tocwf.esql": TO_CWF},
        b"<Msg><Id>AB</Id><Qty>7</Qty></Msg>",
        "--domain",
        "XMLNSC",
        "--message-set",
        _set_file(tmp_path),
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout == b"AB  007\n"
    too_long = run(
        tmp_path,
        {"tocwf.esql": TO_CWF},
        b"<Msg><Id>ABCDEF</Id><Qty>7</Qty></Msg>",
        "--domain",
        "XMLNSC",
        "--message-set",
        _set_file(tmp_path),
    )
    assert too_long.returncode == 1 and b"Traceback" not in too_long.stderr
    assert too_long.stderr.decode().strip() == (
        "flowbroker: error: cannot write the output message: CWF: value 'ABCDEF' is 6 bytes; "
        "the field holds 4 (field Root.MRM.Id, byte offset 0)"
    )


def test_a_cwf_input_is_read_with_its_message_set(tmp_path: Path) -> None:
    args = ("--domain", "MRM", "--message-set", _set_file(tmp_path), "--type", "Msg", "--format", "CWF")
    result = run(tmp_path, {"toxml.esql": TO_XML}, b"AB  007", *args)
    assert result.returncode == 0, result.stderr
    assert result.stdout == b"<Msg><Id>AB</Id><Qty>7</Qty></Msg>\n"
    short = run(tmp_path, {"toxml.esql": TO_XML}, b"AB  07", *args)
    assert short.returncode == 1
    assert short.stderr.decode().strip() == (
        f"flowbroker: error: {tmp_path / 'input.msg'}: CWF: record too short: 3 bytes needed, 2 remain "
        "(field Root.MRM.Qty, byte offset 4)"
    )


def test_bad_message_sets_and_missing_options_are_one_line(tmp_path: Path) -> None:
    broken = tmp_path / "broken.json"
    broken.write_text('{"types":\n {"Msg": }}')
    result = run(tmp_path, {"toxml.esql": TO_XML}, b"x", "--domain", "BLOB", "--message-set", str(broken))
    assert result.returncode == 1
    assert result.stderr.decode().strip() == (
        f"flowbroker: error: {broken}:2:10: invalid JSON (byte offset 19): Expecting value"
    )
    invalid = _set_file(tmp_path, {"types": {"Msg": {"elements": [{"name": "A", "type": "nope"}]}}})
    result = run(tmp_path, {"toxml.esql": TO_XML}, b"x", "--domain", "BLOB", "--message-set", invalid)
    assert result.returncode == 1
    assert result.stderr.decode().strip().startswith(f"flowbroker: error: {invalid}: unknown type 'nope'")
    assert result.stderr.decode().strip().endswith("(at /types/Msg/elements/0/type)")
    result = run(tmp_path, {"toxml.esql": TO_XML}, b"x", "--domain", "MRM")
    assert (
        result.returncode == 1 and b"--domain MRM needs one --message-set FILE and --type T" in result.stderr
    )
