"""Copybook constructs that IBM's COBOL importer accepts, each checked against IBM's documentation.

References: Enterprise COBOL for z/OS Language Reference (topics named in each test) and the
IBM "COBOL Importer overview" topic (copybook members hold 01/77 data structures; a member that
needs a record around it is included under one). Every imported layout is also checked with a
generated record written, read back and written again through CWF, byte for byte.
"""

from __future__ import annotations

import json
import struct
import subprocess
import sys
from pathlib import Path

import pytest
from esql.tree import Element
from flowbroker.formats.copybook import ImportFault, import_copybook, library_beside
from flowbroker.formats.mrm import cwf
from flowbroker.formats.mrm.model import compile_set
from flowbroker.formats.mrm.specimen import EBCDIC_CCSID, HOST_ENCODING, round_trip, specimen


def elements(result: dict, name: str | None = None) -> list[dict]:  # type: ignore[type-arg]
    return result["types"][name or result["message"]]["elements"]  # type: ignore[no-any-return]


def assert_round_trip(result: dict) -> bytes:  # type: ignore[type-arg]
    """The generated record of the imported layout, after checking it survives a CWF round trip."""
    trip = round_trip(compile_set({"types": result["types"]}), result["message"])
    assert trip.same, trip.problem()
    return trip.written


def test_dos_end_of_file_byte_ends_the_copybook() -> None:
    """Files saved by DOS editors end with Ctrl-Z (0x1A); nothing after it is COBOL source."""
    text = "       01  REC.\n           05  A  PIC X(2).\n\x1a"
    result = import_copybook(text)
    assert elements(result) == [{"name": "A", "type": "string", "cwf": {"repr": "string", "length": 2}}]
    assert_round_trip(result)


def test_items_without_a_level_01_record_are_wrapped_in_one_named_after_the_file() -> None:
    """COBOL Importer overview: a copybook member holds 01 structures; members written to be
    included under a record (COPY inside an 01 entry) get that record, named after the member."""
    text = (
        "           05  CUST-ID     PIC 9(6).\n"
        "           05  CUST-NAME.\n"
        "               10  FIRST   PIC X(10).\n"
        "           05  CUST-BAL    PIC S9(5)V99 COMP-3.\n"
        "       01  OTHER-REC.\n"
        "           05  X           PIC X.\n"
    )
    result = import_copybook(text, source="lib/CUSTREC.cpy")
    assert result["message"] == "CUSTREC"
    assert [e["name"] for e in elements(result)] == ["CUST-ID", "CUST-NAME", "CUST-BAL"]
    assert "OTHER-REC" in result["types"]
    [warning] = result["warnings"]
    assert (warning["line"], warning["column"]) == (1, 12)
    assert "wrapped in record 'CUSTREC'" in warning["message"]
    assert len(assert_round_trip(result)) == 6 + 10 + 4


def test_binary_and_packed_usages_and_pointers() -> None:
    """USAGE clause: BINARY, COMP, COMP-4 and COMP-5 are binary (2, 4 or 8 bytes by digits),
    PACKED-DECIMAL is COMP-3, POINTER and INDEX take 4 bytes, PROCEDURE-POINTER 8. COMP-0 is no
    Enterprise COBOL usage (IBM's importer lists BINARY, COMP, COMP-4 and COMP-5): other compilers'
    copybooks mean big-endian binary by it, so it is read as COMP with a warning saying so."""
    text = """\
       01  REC.
           05  B1   PIC S9(4)  BINARY.
           05  B2   PIC 9(9)   COMP-4.
           05  B3   PIC S9(18) COMPUTATIONAL-5.
           05  B4   PIC 9(3)   COMP-0.
           05  P1   PIC S9(7)V99 PACKED-DECIMAL.
           05  PTR  USAGE IS POINTER.
           05  PP   PROCEDURE-POINTER.
           05  IX   INDEX.
"""
    result = import_copybook(text)
    got = {e["name"]: (e["cwf"]["repr"], e["cwf"]["length"]) for e in elements(result)}
    assert got == {
        "B1": ("binary", 2),
        "B2": ("binary", 4),
        "B3": ("binary", 8),
        "B4": ("binary", 2),
        "P1": ("packed", 5),
        "PTR": ("bytes", 4),
        "PP": ("bytes", 8),
        "IX": ("bytes", 4),
    }
    assert [(w["line"], w["column"], w["message"]) for w in result["warnings"]] == [
        (5, 32, "USAGE COMP-0 is not an Enterprise COBOL usage: 'B4' is read as binary, like COMP")
    ]
    assert len(assert_round_trip(result)) == 2 + 4 + 8 + 2 + 5 + 4 + 8 + 4


def test_sign_separate_with_and_without_the_sign_keyword() -> None:
    """SIGN clause: ``[SIGN IS] LEADING|TRAILING [SEPARATE CHARACTER]``; a separate sign takes a byte."""
    text = """\
       01  REC.
           05  L1   PIC S9(3) LEADING SEPARATE.
           05  T1   PIC S9(3) SIGN IS TRAILING SEPARATE CHARACTER.
           05  L2   PIC S9(3) SIGN LEADING.
"""
    result = import_copybook(text)
    assert [(e["cwf"]["sign"], e["cwf"]["length"]) for e in elements(result)] == [
        ("leading_separate", 4),
        ("trailing_separate", 4),
        ("leading", 3),
    ]
    record = assert_round_trip(result)
    assert record == "-123123-J23".encode("cp500")


def test_occurs_depending_on_a_qualified_count() -> None:
    """OCCURS clause, variable-length tables: ``OCCURS m TO n TIMES DEPENDING ON name OF group``;
    the record holds as many entries as the count field says."""
    text = """\
       01  ORDER.
           05  HDR.
               10  N      PIC 9(2).
           05  N          PIC 9(2).
           05  LINE OCCURS 0 TO 9 TIMES DEPENDING ON N OF ORDER
                    INDEXED BY LX.
               10  SKU    PIC X(4).
"""
    result = import_copybook(text)
    assert elements(result)[2]["occurs"] == {"dependsOn": "N", "min": 0, "max": 9}
    record = assert_round_trip(result)
    assert record == "1202ABCDABCD".encode("cp500")


def test_redefines_of_groups_and_filler_groups() -> None:
    """REDEFINES clause: a group may redefine a group or an elementary item; FILLER groups (as in
    BMS map copybooks) stay addressable, numbered when a group holds more than one."""
    text = """\
       01  MAP.
           02  NAMEF      PIC X.
           02  FILLER REDEFINES NAMEF.
               03  NAMEA  PIC X.
           02  ADDR.
               03  STREET PIC X(6).
               03  TOWN   PIC X(4).
           02  ADDR-PO REDEFINES ADDR.
               03  BOX    PIC 9(4).
               03  FILLER PIC X(6).
           02  FILLER.
               03  F1     PIC X.
           02  FILLER.
               03  F2     PIC X.
"""
    result = import_copybook(text)
    items = elements(result)
    assert [alt["name"] for alt in items[0]["choice"]] == ["NAMEF", "FILLER"]
    assert [alt["name"] for alt in items[1]["choice"]] == ["ADDR", "ADDR-PO"]
    assert [e["name"] for e in items[2:]] == ["FILLER", "FILLER_2"]
    assert len(assert_round_trip(result)) == 1 + 10 + 1 + 1


def test_values_over_several_lines_continuations_and_level_88() -> None:
    """VALUE clause and continuation lines (reference format): a literal continued with '-' in the
    indicator area runs to column 72 and resumes after the quote on the next line; 88-level
    condition names and their VALUES … THRU lists add no storage."""
    text = (
        "       01  REC.\n"
        "           05  MSG   PIC X(70) VALUE 'THE QUICK FOX. 01 JUMPS OVER\n"
        "      -    ' THE LAZY DOG''S BACK'.\n"
        "           05  CODE  PIC 9(2)\n"
        "                     VALUE\n"
        "                     42.\n"
        "               88  LOW      VALUES 1 THRU 9\n"
        "                                   11 THROUGH 19.\n"
        "               88  DOTTED   VALUE 'A.B'.\n"
        "           05  TAIL  PIC X.\n"
    )
    result = import_copybook(text)
    assert [(e["name"], e["cwf"]["length"]) for e in elements(result)] == [
        ("MSG", 70),
        ("CODE", 2),
        ("TAIL", 1),
    ]
    assert_round_trip(result)


def test_copy_replacing_takes_the_member_beside_the_copybook(tmp_path: Path) -> None:
    """COPY statement: ``COPY member REPLACING ==:TAG:== BY ==text==`` includes the member with
    the tag replaced, also within words; members are looked up beside the including copybook."""
    (tmp_path / "ADDRESS.cpy").write_text(
        "           05  :P:-STREET   PIC X(20).\n           05  :P:-ZIP      PIC 9(5).\n"
    )
    main = tmp_path / "CUST.cpy"
    main.write_text(
        "       01  CUST.\n"
        "           05  ID            PIC 9(4).\n"
        "           COPY ADDRESS REPLACING ==:P:== BY ==HOME==.\n"
        "           COPY ADDRESS REPLACING ==:P:== BY ==WORK==.\n"
    )
    result = import_copybook(main.read_text(), source=str(main), library=library_beside(main))
    assert [e["name"] for e in elements(result)] == [
        "ID",
        "HOME-STREET",
        "HOME-ZIP",
        "WORK-STREET",
        "WORK-ZIP",
    ]
    assert len(assert_round_trip(result)) == 4 + 2 * 25
    (tmp_path / "PARTS.cpy").write_text(
        "           05  WS-PART-NO   PIC 9(3).\n           05  PART-WS      PIC X.\n"
    )
    main.write_text(
        "       01  ORDER.\n           COPY PARTS REPLACING LEADING ==WS-== BY ==OR-==\n"
        "                                TRAILING ==-WS== BY ==-IN==.\n"
    )
    result = import_copybook(main.read_text(), source=str(main), library=library_beside(main))
    assert [e["name"] for e in elements(result)] == ["OR-PART-NO", "PART-IN"]
    with pytest.raises(ImportFault, match=r"CUST\.cpy:2:17: COPY member 'NOPE' not found"):
        import_copybook(
            "       01  R.\n           COPY NOPE.\n", source=str(main), library=library_beside(main)
        )


def test_more_than_31_digits_is_refused_with_the_compilers_reason() -> None:
    """PICTURE clause: a numeric item has 1 to 31 digit positions (ARITH(EXTEND)); binary items
    hold at most 18 (USAGE clause, BINARY)."""
    with pytest.raises(ImportFault) as info:
        import_copybook("       01  R.\n           05  BIG  PIC 9(32).\n", source="big.cpy")
    assert str(info.value) == (
        "big.cpy:2:12: PIC 9(32) has 32 digits: Enterprise COBOL allows 1 to 31 digit positions "
        "in a numeric item (ARITH(EXTEND))"
    )
    with pytest.raises(ImportFault, match="big.cpy:2:12: binary PIC S9.19. has 19 digits"):
        import_copybook("       01  R.\n           05  BIG  PIC S9(19) COMP.\n", source="big.cpy")


def test_reference_format_areas_comments_and_free_format() -> None:
    """Reference format: columns 1-6 are the sequence number area (any characters), column 7 the
    indicator ('*' and '/' comment lines, 'D' debugging lines), 73-80 the identification area;
    ``*>`` starts a floating comment outside literals. Free format has no such areas."""
    fixed = (
        "RECORD*  A COMMENT LINE\n"
        "000200/  A NEW PAGE\n"
        "000300 01  REC.                                                         IDENT001\n"
        "ABCDEF     05  A   PIC X(3) VALUE '*>'. *> a floating comment           IDENT002\n"
        "000500D    05  DEBUG-ONLY PIC X(99).\n"
        "000600     EJECT\n"
        "000700     05  B   PIC 9(2).                                            IDENT003\n"
    )
    result = import_copybook(fixed)
    assert [(e["name"], e["cwf"]["length"]) for e in elements(result)] == [("A", 3), ("B", 2)]
    short_numbers = "     1 01  REC.\n     2     05  A  PIC X.\n"
    assert [e["name"] for e in elements(import_copybook(short_numbers))] == ["A"]
    free = "01 HOSPITAL.\n  03 HOSPNAME   PIC X(20).\n  03 HOSP-PHONE PIC X(10).  *> no areas here\n"
    result = import_copybook(free)
    assert [e["name"] for e in elements(result)] == ["HOSPNAME", "HOSP-PHONE"]
    with pytest.raises(ImportFault, match=r"x.cpy:1:7: '0' in the indicator area \(column 7\)"):
        import_copybook("      01 REC.\n          05 A PIC X.\n", source="x.cpy")


def test_filler_sync_just_blank_when_zero_floats_renames_and_level_77() -> None:
    """FILLER, SYNCHRONIZED, JUSTIFIED, BLANK WHEN ZERO and USAGE DISPLAY/COMP-1/COMP-2 clauses;
    level 66 (RENAMES clause) adds no storage; level 77 items are records of their own."""
    text = """\
       77  COUNTER        PIC 9(4) COMP SYNC.
       01  REC.
           05  FILLER     PIC X(2).
           05  NAME       PIC X(8) JUST RIGHT.
           05  AMT        PIC 9(3)V99 USAGE IS DISPLAY BLANK WHEN ZERO.
           05  F4         COMP-1.
           05  F8         COMPUTATIONAL-2 SYNCHRONIZED.
       66  NAME-AND-AMT   RENAMES NAME THRU AMT.
"""
    result = import_copybook(text, "REC")
    assert elements(result) == [
        {"type": "filler", "cwf": {"repr": "string", "length": 2}},
        {"name": "NAME", "type": "string", "cwf": {"repr": "string", "length": 8, "justify": "right"}},
        {
            "name": "AMT",
            "type": "decimal",
            "scale": 2,
            "cwf": {"repr": "display", "length": 5, "signed": False},
        },
        {"name": "F4", "type": "float", "cwf": {"repr": "float", "length": 4, "byteOrder": "big"}},
        {"type": "filler", "cwf": {"repr": "bytes", "length": 5}},  # slack bytes: F8 starts at 24
        {"name": "F8", "type": "float", "cwf": {"repr": "float", "length": 8, "byteOrder": "big"}},
    ]
    assert "COUNTER" in result["types"]
    assert [w["message"] for w in result["warnings"]] == [
        "level-66 RENAMES 'NAME-AND-AMT' adds no storage and is not imported"
    ]
    assert len(assert_round_trip(result)) == 2 + 8 + 5 + 4 + 5 + 8


def test_synchronized_items_get_the_compilers_slack_bytes() -> None:
    """SYNCHRONIZED clause and Language Environment "COBOL alignment": a level-01 SYNCHRONIZED
    group aligns every binary and floating-point item in it (halfword for 1-4 digits, fullword
    for 5-18 digits) by slack bytes before the item, counted from the record's start; within a
    table the offset varies, which is flagged."""
    text = """\
       01  A SYNCHRONIZED.
           02  B    PIC X.
           02  C    PIC S9(9) BINARY.
           02  D    PIC X.
           02  E    PIC S9(4) COMP.
           02  F    PIC X(3).
           02  G    PIC S9(10) COMP.
           02  T    OCCURS 2.
               03  T1  PIC X.
               03  T2  PIC S9(4) COMP SYNC.
"""
    result = import_copybook(text)
    layout = [(e.get("name", "slack"), e.get("cwf", {}).get("length")) for e in elements(result)]
    assert layout == [
        ("B", 1),
        ("slack", 3),
        ("C", 4),
        ("D", 1),
        ("slack", 1),
        ("E", 2),
        ("F", 3),
        ("slack", 1),
        ("G", 8),
        ("T", None),
    ]
    [warning] = result["warnings"]
    assert warning["message"].startswith("SYNCHRONIZED 'T2': its offset is not fixed here")
    assert len(assert_round_trip(result)) == 24 + 2 * 3


def test_procedure_code_is_refused_as_the_importer_refuses_it() -> None:
    """COBOL Importer overview: a copybook holding other COBOL than data descriptions needs a
    wrapping program."""
    text = "       01  WS-X PIC X.\n           IF WS-X = 'Y'\n               MOVE 'N' TO WS-X\n           END-IF.\n"
    with pytest.raises(
        ImportFault, match=r"p.cpy:2:12: expected a level number, found 'IF'.*wrapping program"
    ):
        import_copybook(text, source="p.cpy")


def test_specimen_fills_every_field_and_the_reader_gives_it_back() -> None:
    """The generated record is deterministic per field type and reads back to the same values."""
    result = import_copybook(
        "       01  R.\n           05  S  PIC X(3).\n           05  N  PIC S9(3)V9 COMP-3.\n"
        "           05  B  PIC S9(4) COMP.\n           05  D  PIC 9(2).\n"
    )
    mtype = compile_set({"types": result["types"]}).message_type("R")
    tree = specimen(mtype)
    written = cwf.Writer(ccsid=EBCDIC_CCSID, encoding=HOST_ENCODING).record(mtype, tree)
    assert written == "ABC".encode("cp500") + bytes.fromhex("01234D") + struct.pack(
        ">h", -1234
    ) + "12".encode("cp500")
    back = Element("MRM")
    cwf.Reader(written, ccsid=EBCDIC_CCSID, encoding=HOST_ENCODING).record(mtype, back)
    assert [(e.name, str(e.value)) for e in back.children()] == [
        ("S", "ABC"),
        ("N", "-123.4"),
        ("B", "-1234"),
        ("D", "12"),
    ]


def test_report_imports_a_directory_and_round_trips_each_layout(tmp_path: Path) -> None:
    """``flowbroker msgset import DIR --report``: refusals and warnings with file:line:column, the
    share imported and the share whose generated record round-trips byte for byte."""
    (tmp_path / "good.cpy").write_text("       01  GOOD.\n           05  A  PIC X(4).\n")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "PART.cpy").write_text("           05  A  PIC 9(4) COMP-3.\n")
    (tmp_path / "bad.cpy").write_text("       01  BAD.\n           05  A  PIC 9(40).\n")
    done = subprocess.run(
        [sys.executable, "-m", "flowbroker.cli", "msgset", "import", str(tmp_path), "--report"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    lines = done.stdout.splitlines()
    assert done.returncode == 1, done.stderr
    assert lines[0].startswith("refused bad.cpy:2:12: PIC 9(40) has 40 digits")
    assert lines[1].startswith("warning sub/PART.cpy:1:12: no level-01 record")
    assert lines[-2:] == [
        "imported 2 of 3 files (66.7 %)",
        "round trip byte for byte: 2 of 2 imported layouts (100.0 %)",
    ]
    (tmp_path / "bad.cpy").unlink()
    again = subprocess.run(
        [sys.executable, "-m", "flowbroker.cli", "msgset", "import", str(tmp_path), "--report"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert again.returncode == 0 and again.stdout.splitlines()[-2] == "imported 2 of 2 files (100.0 %)"


def test_occurs_depending_on_a_count_kept_in_a_header_group() -> None:
    """OCCURS DEPENDING ON clause: the object may be any earlier item of the record, such as a
    count inside a header group; the reader takes the table's size from it."""
    text = """\
       01  VREC.
           05  HEADER.
               10  ITEM-COUNT   PIC 9(2).
           05  ITEMS OCCURS 1 TO 9 DEPENDING ON ITEM-COUNT.
               10  CODE         PIC X(2).
"""
    result = import_copybook(text)
    mtype = compile_set({"types": result["types"]}).message_type("VREC")
    tree = Element("MRM")
    cwf.Reader(b"03AABBCC", ccsid=1208, encoding=273).record(mtype, tree)
    assert [item.child("CODE").value for item in tree.children_named("ITEMS")] == ["AA", "BB", "CC"]  # type: ignore[union-attr]
    assert len(assert_round_trip(result)) == 2 + 2 * 2


@pytest.mark.parametrize(
    ("text", "where", "message"),
    [
        (
            "       01  R.\n           03  GROUP-A\n           05  B  PIC X.\n",
            "3:12",
            "level 05 starts a new entry, but the entry before it has no terminating period",
        ),
        (
            "        * not in column 7\n       01  R  PIC X.\n",
            "1:9",
            "a comment line has its '*' in column 7",
        ),
        (
            "       01  R.\n" + "           05  A".ljust(64) + "PIC X(2).\n",
            "2:69",
            "columns 73-80 are the identification area: '.' on line 2 is ignored",
        ),
    ],
)
def test_reference_format_mistakes_are_named(text: str, where: str, message: str) -> None:
    """Data description entries end with a separator period; comment lines have '*' in column 7;
    columns 73-80 are the identification area (Reference format)."""
    with pytest.raises(ImportFault) as info:
        import_copybook(text, source="m.cpy")
    assert str(info.value).startswith(f"m.cpy:{where}: ") and message in str(info.value)


def test_cli_import_says_what_it_wrapped_and_finds_copy_members_beside_the_file(tmp_path: Path) -> None:
    """``flowbroker msgset import FILE --copybook``: warnings go to standard error with
    file:line:column, COPY members come from the file's directory."""
    (tmp_path / "AMOUNTS.cpy").write_text("           10  :X:-AMT   PIC S9(7)V99 COMP-3.\n")
    main = tmp_path / "PAYMENT.cpy"
    main.write_bytes(
        b"      * montant de l'op\xe9ration (Latin-1, as moved off the host)\n"
        b"           05  PAY-ID       PIC X(8).\n"
        b"           05  PAY-VALUES.\n"
        b"               COPY AMOUNTS REPLACING ==:X:== BY ==PAY==.\n"
    )
    done = subprocess.run(
        [sys.executable, "-m", "flowbroker.cli", "msgset", "import", str(main), "--copybook", "--set", "S"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert f"{main}:2:12: warning: no level-01 record" in done.stderr
    printed = json.loads(done.stdout)
    assert printed["type"] == "PAYMENT" and "warnings" not in printed
    assert [e["name"] for e in printed["types"]["PAY-VALUES"]["elements"]] == ["PAY-AMT"]


def test_occurs_depending_on_names_an_earlier_item_whatever_its_case() -> None:
    """OCCURS clause: the DEPENDING ON object is a data name defined before the table in the
    record; COBOL names are not case-sensitive, so ``item-count`` is ITEM-COUNT."""
    text = """\
       01  REC.
           05  ITEM-COUNT   PIC 9.
           05  ITEMS OCCURS 0 TO 3 DEPENDING ON item-count PIC X.
"""
    result = import_copybook(text)
    assert elements(result)[1]["occurs"]["dependsOn"] == "ITEM-COUNT"
    assert len(assert_round_trip(result)) == 1 + 2
    later = (
        "       01  REC.\n"
        "           05  ITEMS OCCURS 0 TO 3 DEPENDING ON item-count PIC X.\n"
        "           05  ITEM-COUNT   PIC 9.\n"
    )
    with pytest.raises(ImportFault, match=r"r.cpy:2:12: OCCURS … DEPENDING ON 'item-count': no earlier item"):
        import_copybook(later, source="r.cpy")


def test_scaling_position_p_left_of_the_digits() -> None:
    """PICTURE clause, symbol P: each P left of the digits moves the assumed decimal point one
    place further left without taking storage (PIC SVPP99 holds .00dd); P right of the digits
    (units of a power of ten) has no form in the message model and is refused by name."""
    text = "       01  R.\n           05  RATE  PIC SVPP99 COMP-3.\n           05  TINY  PIC PP9.\n"
    result = import_copybook(text)
    assert [(e["type"], e.get("scale"), e["cwf"]["length"]) for e in elements(result)] == [
        ("decimal", 4, 2),
        ("decimal", 3, 1),
    ]
    mtype = compile_set({"types": result["types"]}).message_type("R")
    tree = Element("MRM")
    cwf.Reader(bytes.fromhex("042D") + b"7", ccsid=1208, encoding=273).record(mtype, tree)
    assert [str(e.value) for e in tree.children()] == ["-0.0042", "0.007"]
    assert_round_trip(result)
    with pytest.raises(ImportFault, match=r"PIC 999PP: scaling positions P right of the digits"):
        import_copybook("       01  R.\n           05  BIG  PIC 999PP.\n")


def test_national_items_are_utf16_strings_of_n_characters() -> None:
    """Message sets, importing from COBOL, supported features: PIC N(n) is a fixed-length string
    of n characters (length units: characters). A national item (USAGE NATIONAL, implied for PIC N
    by Enterprise COBOL's default NSYMBOL(NATIONAL)) is UTF-16, two bytes a character, whatever the
    message's code page; the record round-trips through CWF with the EBCDIC text around it."""
    text = """\
       01  REC.
           05  CODE     PIC X(3).
           05  NAME-N   PIC N(5).
           05  CITY-N   PIC NN USAGE NATIONAL.
           05  FILLER   PIC N(2).
           05  AMOUNT   PIC 9(3).
"""
    result = import_copybook(text)
    assert [(e.get("name"), e["cwf"]) for e in elements(result)] == [
        ("CODE", {"repr": "string", "length": 3}),
        ("NAME-N", {"repr": "string", "length": 10, "ccsid": 1200}),
        ("CITY-N", {"repr": "string", "length": 4, "ccsid": 1200}),
        (None, {"repr": "string", "length": 4, "ccsid": 1200}),
        ("AMOUNT", {"repr": "display", "length": 3, "signed": False}),
    ]
    record = assert_round_trip(result)
    assert len(record) == 3 + 10 + 4 + 4 + 3
    assert record[3:13] == "ABCDE".encode("utf-16-be")
    mset = compile_set({"types": result["types"]})
    element = Element("MRM")
    cwf.Reader(
        record[:3] + "Ünïçø".encode("utf-16-be") + record[13:], ccsid=EBCDIC_CCSID, encoding=HOST_ENCODING
    ).record(mset.message_type(result["message"]), element)
    assert element.child("NAME-N").value == "Ünïçø"  # type: ignore[union-attr]


def test_dbcs_items_are_refused_with_the_reason() -> None:
    """PIC G and USAGE DISPLAY-1 items are DBCS text in a DBCS code page (930, 939, …) there is no
    codec for here: refused naming the item, not imported as the wrong bytes."""
    for clause in ("PIC G(4)", "PIC N(4) USAGE DISPLAY-1"):
        with pytest.raises(ImportFault, match="'KANJI' .* is a DBCS item") as info:
            import_copybook(f"       01  REC.\n           05  KANJI  {clause}.\n")
        assert (info.value.line, info.value.column) == (2, 12)


def test_synchronized_eight_byte_binary_is_aligned_on_a_fullword() -> None:
    """USAGE clause, binary items: 10-18 digits take 8 bytes but are aligned on a fullword, not a
    doubleword (only COMP-2 takes a doubleword), so after 4 bytes no slack byte comes before one."""
    text = """\
       01  A SYNCHRONIZED.
           02  B    PIC X(4).
           02  G    PIC S9(18) COMP.
           02  H    PIC X(2).
           02  K    PIC S9(10) BINARY.
           02  L    PIC X(2).
           02  M    COMP-2.
"""
    result = import_copybook(text)
    layout = [(e.get("name", "slack"), e["cwf"]["length"]) for e in elements(result)]
    assert layout == [("B", 4), ("G", 8), ("H", 2), ("slack", 2), ("K", 8), ("L", 2), ("slack", 6), ("M", 8)]
    assert len(assert_round_trip(result)) == 40


@pytest.mark.parametrize(
    ("source", "where"),
    [
        ("       0\u00b2 REC.\n          05 A PIC X.\n", r"1:8: expected a level number, found '0\u00b2'"),
        ("       01 REC.\n          \u00b25 A PIC X.\n", r"2:11: expected a level number"),
        ("       01 REC.\n          05 A PIC X OCCURS \u00b2 TIMES.\n", r"2:22: OCCURS needs a count"),
        ("       01 REC.\n          05 A PIC X OCCURS 1 TO \u0663 TIMES DEPENDING ON B.\n", r"2:"),
    ],
)
def test_digits_of_other_scripts_are_refused_where_they_stand(source: str, where: str) -> None:
    # str.isdigit() admits superscripts and Arabic-Indic digits; int() of some of them fails
    with pytest.raises(ImportFault, match=where):
        import_copybook(source, source="u.cpy")
