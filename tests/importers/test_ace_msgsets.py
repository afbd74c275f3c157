"""MRM message sets with a CWF format become flowbroker message sets; the others are reported precisely."""

from __future__ import annotations

import decimal
import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from esql.tree import Element
from flowbroker.formats.mrm import cwf, xmlformat
from flowbroker.formats.mrm.model import compile_set
from flowbroker.formats.mrm.specimen import round_trip
from flowbroker.importers.ace import Workspace, import_workspace

BANK = Path(__file__).parent / "ace" / "msgsets" / "Bank"


@pytest.fixture(scope="module")
def converted() -> Any:
    return import_workspace(Workspace.from_dirs([BANK]))


def _models(converted: Any) -> dict[str, dict[str, Any]]:
    return {m["file"]: m for m in converted.report.models}


def test_a_cwf_set_becomes_a_message_set_with_every_message_and_type(converted: Any) -> None:
    (bankset,) = converted.message_sets
    assert bankset["name"] == "BANKSET"
    document = bankset["document"]
    assert document["messages"] == ["Account", "Header"]
    assert sorted(document["types"]) == ["Account", "Entry", "Header", "PartyType"]
    account = {e.get("name", f"#{i}"): e for i, e in enumerate(document["types"]["Account"]["elements"])}
    # lengths, representations and facets come from the CWF annotations and the XSD types
    assert account["Id"]["cwf"] == {"repr": "string", "length": 8}
    assert account["Currency"]["xml"] == {"attribute": True}
    assert account["Owner"] == {"name": "Owner", "type": "PartyType"}
    assert document["types"]["PartyType"]["elements"][0]["cwf"] == {"repr": "string", "length": 10}
    assert account["Balance"] == {
        "name": "Balance",
        "type": "decimal",
        "scale": 2,
        "cwf": {"repr": "packed", "signed": True, "length": 5},
    }
    assert account["Branch"]["cwf"] == {"repr": "binary", "signed": False, "length": 2}
    assert account["Rate"]["cwf"] == {"repr": "float", "length": 8}
    assert account["Due"]["cwf"] == {
        "repr": "display",
        "signed": True,
        "sign": "leading_separate",
        "length": 6,
    }
    # Count's leading skip count, written with the format's byte alignment pad
    assert account["#7"] == {"type": "filler", "cwf": {"repr": "string", "pad": "SPACE", "length": 2}}
    assert account["Entry"]["occurs"] == {"dependsOn": "Count", "min": 0, "max": 5}
    assert document["types"]["Entry"]["elements"][1]["scale"] == 2  # virtual decimal point
    assert account["Tag"]["occurs"] == 3
    assert account["Tag"]["cwf"] == {"repr": "string", "justify": "right", "pad": "*", "length": 4}
    assert [alt["name"] for alt in account["#11"]["choice"]] == ["Phone", "Email"]
    entry = _models(converted)["Bank/cwfset/messageSet.mset"]
    assert entry["outcome"] == "converted"
    assert entry["reason"] == (
        "messages parse and write as CWF (format CWF1); and as MRM XML; TDS format Text1 not converted: not supported"
    )
    # a CWF property that is not read is a warning naming file and line, not silence
    assert entry["warnings"] == [
        "Bank/cwfset/bank/Account.mxsd:101: element 'Email' of type 'Account': CWF property "
        "stringTerminator='x' is not read"
    ]


def test_the_converted_set_reads_and_writes_records_and_mrm_xml(converted: Any) -> None:
    mset = compile_set(converted.message_sets[0]["document"])
    for name in ("Account", "Header"):
        trip = round_trip(mset, name)
        assert trip.same, trip.problem()
    record = (
        b"AC000001EUR"
        + b"Ada       Lovelace  "
        + bytes.fromhex("123456789C")  # 1234567.89 packed
        + (7).to_bytes(2, "big")
        + struct_double(0.5)
        + b"-00042"
        + b"  "  # skip count
        + (2).to_bytes(2, "big")
        + b"AAA"
        + bytes.fromhex("0000100C")
        + b"BBB"
        + bytes.fromhex("0000250D")
        + b"**ab"
        + b"**cd"
        + b"**ef"
        + b"555123"
    )
    tree = Element("MRM")
    cwf.Reader(record, ccsid=1208, encoding=273).record(mset.message_type("Account"), tree)
    data = tree.to_data()
    assert data["Owner"]["Last"] == "Lovelace"
    assert data["Balance"] == decimal.Decimal("1234567.89")
    assert (data["Branch"], data["Due"], data["Count"]) == (7, -42, 2)
    assert [e.child("Amount").value for e in tree.children_named("Entry")] == [
        decimal.Decimal("1.00"),
        decimal.Decimal("-2.50"),
    ]
    assert [t.value for t in tree.children_named("Tag")] == ["ab", "cd", "ef"]
    assert cwf.Writer(ccsid=1208, encoding=273).record(mset.message_type("Account"), tree) == record
    # the XML format of the same set: Currency is an attribute there
    xml = b"<Header><Version>3</Version><Kind>AB</Kind></Header>"
    header = Element("MRM")
    xmlformat.read(xml, mset.message_type("Header"), header, ccsid=1208)
    assert header.to_data() == {"Version": 3, "Kind": "AB"}
    written = xmlformat.write(mset.message_type("Account"), tree, ccsid=1208)
    assert written.startswith(b'<Account Currency="EUR"><Id>AC000001</Id>')


def struct_double(number: float) -> bytes:
    import struct

    return struct.pack(">d", number)


def test_sets_without_a_cwf_format_dfdl_and_schemas_are_reported_with_why(converted: Any) -> None:
    models = _models(converted)
    assert models["Bank/xmlset/messageSet.mset"]["reason"].startswith(
        "XML physical format only: not converted because a flowbroker message set describes every simple field "
        "by its CWF length"
    )
    assert (
        models["Bank/tdsset/messageSet.mset"]["reason"]
        == "TDS (tagged/delimited) physical format: not supported"
    )
    assert models["Bank/schemas/Record.xsd"]["kind"] == "DFDL schema"
    assert models["Bank/schemas/Record.xsd"]["reason"].startswith("DFDL not yet supported")
    assert models["Bank/schemas/Order.xsd"]["reason"].startswith(
        "XML schema not registered: XMLNSC messages are not validated"
    )
    assert {m["outcome"] for f, m in models.items() if f != "Bank/cwfset/messageSet.mset"} == {"not imported"}
    assert converted.report.summary()["modelsImported"] == 1


def test_a_malformed_or_unconvertible_definition_leaves_its_whole_set_out_with_the_position(
    converted: Any,
) -> None:
    models = _models(converted)
    assert models["Bank/badset/messageSet.mset"]["reason"].startswith(
        "Bank/badset/Broken.mxsd:7:7: malformed XML"
    )
    assert models["Bank/refusedset/messageSet.mset"]["reason"] == (
        "CWF format CWF1: not converted: Bank/refusedset/Line.mxsd:8: element 'Text' of type 'Line' is a "
        "length-encoded string (lengthEncodedString2): flowbroker's CWF fields have fixed lengths"
    )
    # nothing of either set is carried, though BADSET's other definition file was fine
    assert [s["name"] for s in converted.message_sets] == ["BANKSET"]
    assert converted.report.errors == []


def _set(tmp_path: Path, body: str, name: str = "S") -> Any:
    folder = tmp_path / "P" / "set"
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copy(BANK / "badset" / "messageSet.mset", folder / "messageSet.mset")
    (folder / "M.mxsd").write_text(
        '<?xml version="1.0"?>\n<xsd:schema xmlns:xsd="http://www.w3.org/2001/XMLSchema">\n'
        + body
        + "\n</xsd:schema>\n"
    )
    found = import_workspace(Workspace.from_dirs([tmp_path / "P"]), check=False)
    return found.report.models[0], found.message_sets


_MESSAGE = '<xsd:annotation><xsd:appinfo source="WMQI_APPINFO"><MRMessage messageDefinition="/0/M"/></xsd:appinfo></xsd:annotation>'


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        (
            f'<xsd:element name="M">{_MESSAGE}<xsd:complexType><xsd:all><xsd:element name="A" type="xsd:int"/>'
            "</xsd:all></xsd:complexType></xsd:element>",
            "P/set/M.mxsd:3: type 'M' uses xsd:all, which has no fixed order: a CWF record needs one",
        ),
        (
            f'<xsd:element name="M">{_MESSAGE}<xsd:complexType><xsd:sequence><xsd:element name="A" type="xsd:string"/>'
            "</xsd:sequence></xsd:complexType></xsd:element>",
            "P/set/M.mxsd:3: element 'A' of type 'M' has no CWF length (set Length in its CWF1 properties)",
        ),
        (
            f'<xsd:element name="M">{_MESSAGE}<xsd:complexType><xsd:sequence>'
            '<xsd:element name="A" type="xsd:int" maxOccurs="unbounded"/></xsd:sequence></xsd:complexType></xsd:element>',
            "P/set/M.mxsd:3: element 'A' of type 'M' repeats without bound and has no repeat count or reference: "
            "a CWF record needs to know how many",
        ),
        (
            f'<xsd:element name="M" type="T">{_MESSAGE}</xsd:element><xsd:complexType name="T"><xsd:sequence>'
            '<xsd:element name="Next" type="T"/></xsd:sequence></xsd:complexType>',
            "P/set/M.mxsd:3: type 'T' contains itself (T → T): a CWF record has a fixed shape",
        ),
        (
            f'<xsd:element name="M">{_MESSAGE}<xsd:complexType><xsd:sequence><xsd:element name="A" type="xsd:int"/>'
            '</xsd:sequence><xsd:attribute name="id" type="xsd:string"/></xsd:complexType></xsd:element>',
            "P/set/M.mxsd:3: type 'M' has an XML attribute (id): where attributes sit in a CWF record is not read here",
        ),
        (
            f'<xsd:element name="M">{_MESSAGE}<xsd:complexType><xsd:sequence><xsd:element name="A" type="Missing"/>'
            "</xsd:sequence></xsd:complexType></xsd:element>",
            "P/set/M.mxsd:3: type 'Missing' is not declared in the message set",
        ),
        (
            f'<xsd:element name="M">{_MESSAGE}<xsd:complexType><xsd:sequence><xsd:element name="A" type="xsd:int">'
            '<xsd:annotation><xsd:appinfo><cwfInclRep messageSetDefaultRep="CWF1" length="many"/></xsd:appinfo>'
            "</xsd:annotation></xsd:element></xsd:sequence></xsd:complexType></xsd:element>",
            "P/set/M.mxsd:3: CWF property length is not a number: 'many'",
        ),
        (
            '<xsd:element name="A" type="xsd:int"/>',
            "P/set/M.mxsd:1: no global element is marked as a message (MRMessage)",
        ),
        (
            f'<xsd:element name="M">{_MESSAGE}<xsd:complexType><xsd:sequence>'
            '<xsd:element name="Items" type="xsd:int" maxOccurs="9"><xsd:annotation><xsd:appinfo>'
            '<cwfInclRep messageSetDefaultRep="CWF1" repeatReference="Count"/></xsd:appinfo></xsd:annotation>'
            '</xsd:element><xsd:element name="Count" type="xsd:int"/></xsd:sequence></xsd:complexType></xsd:element>',
            "P/set/M.mxsd:3: element 'Items' of type 'M' repeats by 'Count', which is not an earlier field of "
            "the type",
        ),
        (
            f'<xsd:element name="M" type="T0">{_MESSAGE}</xsd:element>'
            + "".join(
                f'<xsd:complexType name="T{i}"><xsd:sequence><xsd:element name="E" type="T{i + 1}"/>'
                "</xsd:sequence></xsd:complexType>"
                for i in range(2000)
            )
            + '<xsd:complexType name="T2000"><xsd:sequence><xsd:element name="L" type="xsd:int"/>'
            "</xsd:sequence></xsd:complexType>",
            "P/set/M.mxsd:3: types nest more than 64 deep at 'T64'",
        ),
    ],
)
def test_constructs_without_a_counterpart_are_refused_with_file_and_line(
    tmp_path: Path, body: str, reason: str
) -> None:
    entry, sets = _set(tmp_path, body)
    assert sets == []
    assert entry["outcome"] == "not imported"
    assert entry["reason"] == f"CWF format CWF1: not converted: {reason}"


def test_a_definition_that_is_not_a_schema_or_hostile_is_refused(tmp_path: Path) -> None:
    folder = tmp_path / "P" / "set"
    folder.mkdir(parents=True)
    shutil.copy(BANK / "badset" / "messageSet.mset", folder / "messageSet.mset")
    (folder / "M.mxsd").write_text('<?xml version="1.0"?>\n<notaschema/>\n')
    found = import_workspace(Workspace.from_dirs([tmp_path / "P"]), check=False)
    assert (
        found.report.models[0]["reason"]
        == "P/set/M.mxsd:2:1: not an XML schema: the root element is <notaschema>"
    )
    (folder / "M.mxsd").write_text(
        '<?xml version="1.0"?>\n<!DOCTYPE x [<!ENTITY e SYSTEM "file:///etc/passwd">]>\n<x>&e;</x>\n'
    )
    found = import_workspace(Workspace.from_dirs([tmp_path / "P"]), check=False)
    assert found.report.models[0]["reason"] == "P/set/M.mxsd:2:1: DTD entity declarations are not allowed"
    assert found.message_sets == []


def test_the_command_writes_the_message_sets_with_out(tmp_path: Path) -> None:
    out = tmp_path / "out"
    done = subprocess.run(
        [sys.executable, "-m", "flowbroker.cli", "import", "ace", str(BANK), "--out", str(out)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    written = json.loads((out / "messagesets" / "BANKSET.json").read_text())
    assert written["name"] == "BANKSET" and written["document"]["messages"] == ["Account", "Header"]
    assert "MRM message set BANKSET" in done.stdout


def _mrm_flow(name: str, message_set: str) -> str:
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        '<ecore:EPackage xmi:version="2.0" xmlns:xmi="http://www.omg.org/XMI"'
        ' xmlns:ecore="http://www.eclipse.org/emf/2002/Ecore" xmlns:eflow="http://www.ibm.com/wbi/2005/eflow"'
        ' xmlns:ComIbmMQInput.msgnode="ComIbmMQInput.msgnode" xmlns:ComIbmMQOutput.msgnode="ComIbmMQOutput.msgnode"'
        f' nsURI="{name}.msgflow">\n'
        '  <eClassifiers xmi:type="eflow:FCMComposite" name="FCMComposite_1"><composition>\n'
        '    <nodes xmi:type="ComIbmMQInput.msgnode:FCMComposite_1" xmi:id="In" location="20,20"'
        f' queueName="IN" messageDomainProperty="MRM" messageSetProperty="{message_set}"'
        ' messageTypeProperty="Account" messageFormatProperty="CWF1"/>\n'
        '    <nodes xmi:type="ComIbmMQOutput.msgnode:FCMComposite_1" xmi:id="Out" location="120,20" queueName="OUT"/>\n'
        '  <connections xmi:type="eflow:FCMConnection" xmi:id="C1" targetNode="Out" sourceNode="In"'
        ' sourceTerminalName="OutTerminal.out" targetTerminalName="InTerminal.in"/>\n'
        "  </composition></eClassifiers>\n</ecore:EPackage>\n"
    )


def test_flows_naming_a_converted_set_check_against_it_and_the_others_say_why_not(tmp_path: Path) -> None:
    workspace = tmp_path / "Bank"
    shutil.copytree(BANK, workspace)
    (workspace / "Accounts.msgflow").write_text(_mrm_flow("Accounts", "BANKSET"))
    (workspace / "Quotes.msgflow").write_text(_mrm_flow("Quotes", "TDSSET"))
    converted = import_workspace(Workspace.from_dirs([workspace]))
    problems = {f.name: [p["message"] for p in f.problems] for f in converted.report.flows}
    assert problems["Accounts"] == []
    assert problems["Quotes"] == [
        "message set 'TDSSET': the workspace's message set (Bank/tdsset/messageSet.mset) is not imported: "
        "TDS (tagged/delimited) physical format: not supported"
    ]
