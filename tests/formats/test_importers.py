"""Copybook and C header import: realistic layouts, the CLI and the REST route."""

from __future__ import annotations

import decimal
import json
import struct
import subprocess
import sys
from pathlib import Path

import pytest
from esql.tree import Element
from flowbroker.formats.cheader import import_c_header
from flowbroker.formats.copybook import ImportFault, import_copybook
from flowbroker.formats.mrm import cwf
from flowbroker.formats.mrm.model import compile_set

ACCOUNT = """\
000100* ACCOUNT MASTER RECORD - FIXED FORMAT WITH SEQUENCE NUMBERS
000200 01  ACCOUNT-REC.
000300     05  ACCT-KEY.
000400         10  BRANCH        PIC 9(4).
000500         10  ACCT-NO       PIC 9(8).
000600     05  ACCT-NAME         PIC X(20).
000700     05  ACCT-TYPE         PIC X.
000800         88  CHECKING      VALUE 'C'.
000900         88  SAVINGS       VALUE 'S'.
001000     05  BALANCE           PIC S9(9)V99 COMP-3.
001100     05  RATE              COMP-2.
001200     05  OPENED            PIC 9(8) COMP.
001300     05  FILLER            PIC X(2).
001400     05  TXN-COUNT         PIC S9(4) COMP.
001500     05  TXN OCCURS 0 TO 10 TIMES DEPENDING ON TXN-COUNT.
001600         10  TXN-DATE      PIC 9(8).
001700         10  TXN-AMT       PIC S9(7)V99 SIGN LEADING SEPARATE.
001800     05  CONTACT           PIC X(12).
001900     05  CONTACT-NUM REDEFINES CONTACT PIC 9(12).
"""


def record(document: dict, name: str) -> bytes:  # type: ignore[type-arg]
    """The bytes of one ACCOUNT-REC, built field by field from the layout."""
    out = b"0042" + b"00001234" + b"J SMITH".ljust(20) + b"S"
    out += bytes.fromhex("00001234567C")  # BALANCE +12345.67 in 6 packed bytes
    out += struct.pack(">d", 0.0325) + struct.pack(">i", 20240131) + b"  "
    out += struct.pack(">h", 2)
    out += b"20240201" + b"+000001050" + b"20240202" + b"-000000099"
    out += b"555-0100    "
    return out


def test_copybook_with_groups_comp3_odo_redefines_and_levels_88() -> None:
    result = import_copybook(ACCOUNT)
    assert result["message"] == "ACCOUNT-REC"
    types = result["types"]
    assert set(types) == {"ACCOUNT-REC", "ACCT-KEY", "TXN"}
    names = [e.get("name") for e in types["ACCOUNT-REC"]["elements"]]
    assert "CHECKING" not in names and names[-1] == "CONTACT_alternatives"
    mset = compile_set({"types": types})
    data = record(types, "ACCOUNT-REC")
    element = Element("MRM")
    cwf.Reader(data, ccsid=1208, encoding=546).record(mset.message_type("ACCOUNT-REC"), element)
    assert element.child("ACCT-KEY").child("ACCT-NO").value == 1234  # type: ignore[union-attr]
    assert element.child("ACCT-NAME").value == "J SMITH"  # type: ignore[union-attr]
    assert element.child("BALANCE").value == decimal.Decimal("12345.67")  # type: ignore[union-attr]
    assert element.child("RATE").value == 0.0325  # type: ignore[union-attr]
    assert element.child("OPENED").value == 20240131  # type: ignore[union-attr]
    txns = list(element.children_named("TXN"))
    assert [t.child("TXN-AMT").value for t in txns] == [decimal.Decimal("10.50"), decimal.Decimal("-0.99")]  # type: ignore[union-attr]
    assert element.child("CONTACT").value == "555-0100"  # type: ignore[union-attr]
    assert cwf.Writer(ccsid=1208, encoding=546).record(mset.message_type("ACCOUNT-REC"), element) == data


def test_copybook_value_literals_with_periods_and_spaces() -> None:
    text = (
        "       01  REC.\n"
        "           05  A  PIC X(5) VALUE 'A.B'.\n"
        "               88  IS-AB VALUE 'A B.C'.\n"
        "           05  B  PIC 9(3) VALUE ZERO.\n"
    )
    elements = import_copybook(text)["types"]["REC"]["elements"]
    assert [e["name"] for e in elements] == ["A", "B"]


def test_copybook_free_format_and_type_name() -> None:
    text = "01 ORDER.\n  05 QTY PIC S9(3) COMP-3.\n  05 ITEMS PIC X(5) OCCURS 3 TIMES.\n  05 PRICE PIC 9(5)V99.\n"
    result = import_copybook(text, "Order")
    assert result["message"] == "Order"
    assert result["types"]["Order"]["elements"][1]["occurs"] == 3
    assert result["types"]["Order"]["elements"][2] == {
        "name": "PRICE",
        "type": "decimal",
        "scale": 2,
        "cwf": {"repr": "display", "length": 7, "signed": False},
    }


@pytest.mark.parametrize(
    ("text", "line", "column", "message"),
    [
        ("       01  REC.\n           05  A  PIC X(4) WIBBLE.\n", 2, 28, "unexpected word 'WIBBLE'"),
        ("       01  REC.\n           05  A  PIC X(4)\n", 2, 23, "no terminating period"),
        ("       01  REC.\n           05  B  REDEFINES NOPE PIC X.\n", 2, 12, "not an earlier item"),
        ("       01  REC.\n           05  A.\n", 2, 12, "has no PIC clause"),
        ("       01  REC.\n           05  A PIC X OCCURS 1 TO 5.\n", 2, 24, "needs DEPENDING ON"),
        ("       01  REC.\n           05  A PIC 9(40).\n", 2, 12, "allows 1 to 31 digit positions"),
    ],
)
def test_copybook_errors_are_positioned(text: str, line: int, column: int, message: str) -> None:
    with pytest.raises(ImportFault) as info:
        import_copybook(text, source="rec.cpy")
    assert (info.value.line, info.value.column) == (line, column)
    assert message in str(info.value) and str(info.value).startswith(f"rec.cpy:{line}:{column}: ")


HEADER = """\
#include <stdint.h>
#define MAX_LINES 3
/* an order as the C application sends it */
typedef struct {
    char     sku[8];
    int32_t  qty;
    double   price;          // 8-aligned: 4 bytes of padding before it
} Line;

struct Order {
    char     id[6];
    uint16_t count;
    Line     lines[MAX_LINES];
    struct { float lat; float lon; } where;
    unsigned char flags;
};
"""


def test_c_header_with_nested_structs_arrays_and_alignment() -> None:
    result = import_c_header(HEADER)
    assert result["message"] == "Order"
    mset = compile_set({"types": result["types"]})
    order = mset.message_type("Order")
    assert mset.message_type("Line").fixed_length() == 24
    assert order.fixed_length() == 6 + 2 + 3 * 24 + 8 + 1 + 7
    element = Element("MRM")
    element.add("id", "A1")
    element.add("count", 1)
    for i in range(3):
        line = element.add("lines")
        line.add("sku", f"S{i}")
        line.add("qty", i)
        line.add("price", 1.5 * i)
    where = element.add("where")
    where.add("lat", 51.5)
    where.add("lon", -0.25)
    element.add("flags", 255)
    data = cwf.Writer(ccsid=1208, encoding=546).record(order, element)
    assert data[:8] == b"A1\x00\x00\x00\x00\x01\x00"
    assert data[8:16] == b"S0\x00\x00\x00\x00\x00\x00" and data[16:20] == b"\x00\x00\x00\x00"
    assert struct.unpack_from("<d", data, 8 + 24 + 16)[0] == 1.5
    back = Element("MRM")
    cwf.Reader(data, ccsid=1208, encoding=546).record(order, back)
    assert back.child("lines", 3).child("price").value == 3.0  # type: ignore[union-attr]
    assert back.child("where").child("lon").value == -0.25  # type: ignore[union-attr]
    assert back.child("flags").value == 255  # type: ignore[union-attr]


def test_c_header_pragma_pack_removes_padding() -> None:
    result = import_c_header("#pragma pack(1)\nstruct P { char c; int32_t n; double d; };\n")
    assert compile_set({"types": result["types"]}).message_type("P").fixed_length() == 13


@pytest.mark.parametrize(
    ("text", "line", "message"),
    [
        ("struct A { int x[N]; };", 1, "array size 'N' is not a constant"),
        ("struct A {\n  widget w;\n};", 2, "unknown type 'widget'"),
        ("struct A { int x; ", 1, "unterminated struct"),
        ("union U { int x; };", 1, "'union' declarations are not supported"),
    ],
)
def test_c_header_errors_are_positioned(text: str, line: int, message: str) -> None:
    with pytest.raises(ImportFault) as info:
        import_c_header(text, source="order.h")
    assert message in str(info.value) and info.value.line == line


def run_cli(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "flowbroker.cli", *args],
        capture_output=True,
        text=True,
        input=stdin,
        timeout=60,
    )


@pytest.mark.timeout(120)
def test_cli_msgset_import(tmp_path: Path) -> None:
    path = tmp_path / "acct.cpy"
    path.write_text(ACCOUNT)
    done = run_cli("msgset", "import", str(path), "--copybook", "--set", "BANK")
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["set"] == "BANK" and result["type"] == "ACCOUNT-REC" and "TXN" in result["types"]
    header = run_cli("msgset", "import", "-", "--c-header", "--set", "S", "--type", "Line", stdin=HEADER)
    assert header.returncode == 0 and json.loads(header.stdout)["type"] == "Line"
    bad = tmp_path / "bad.cpy"
    bad.write_text("       01  REC.\n           05  A  PIC X(4) WIBBLE.\n")
    failed = run_cli("msgset", "import", str(bad), "--copybook", "--set", "S")
    assert failed.returncode == 1 and "Traceback" not in failed.stderr
    assert failed.stderr.strip() == f"flowbroker: error: {bad}:2:28: unexpected word 'WIBBLE'"
    missing = run_cli("msgset", "import", str(tmp_path / "none.cpy"), "--copybook", "--set", "S")
    assert missing.returncode == 1 and "cannot read" in missing.stderr
