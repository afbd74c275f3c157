"""Whatever bytes arrive, a parser either reads them or raises a DomainError — never anything else."""

from __future__ import annotations

from esql.domains import DomainError
from flowbroker.formats import rfh2
from formats_support import attach
from hypothesis import example, given, settings
from hypothesis import strategies as st

CWF_SET = {
    "types": {
        "R": {
            "elements": [
                {"name": "N", "type": "integer", "cwf": {"repr": "display", "length": 2, "signed": False}},
                {"name": "P", "type": "decimal", "scale": 1, "cwf": {"repr": "packed", "length": 2}},
                {"name": "L", "type": "string", "occurs": {"dependsOn": "N", "max": 3}, "cwf": {"length": 2}},
                {"name": "Z", "type": "integer", "cwf": {"repr": "zoned", "length": 2}},
            ]
        }
    }
}
MRM_XML_SET = {
    "types": {"R": {"elements": [{"name": "A", "type": "integer"}, {"name": "B", "type": "float"}]}}
}

XMLISH = st.one_of(
    st.binary(max_size=60),
    st.text(alphabet="<>/a b=\"'&;!?[]-CDATAxml", max_size=60).map(str.encode),
)


def read_all(domain: str, data: bytes, ccsid: int = 1208, **options: object) -> None:
    element = attach(domain, data, ccsid=ccsid, **options)
    try:
        list(element.walk())
    except DomainError:
        pass


@settings(max_examples=150, deadline=None)
@given(data=XMLISH, ccsid=st.sampled_from([1208, 819, 1200, 37]))
def test_xml_domains_only_raise_domain_errors(data: bytes, ccsid: int) -> None:
    for domain in ("XMLNSC", "XMLNS", "XML"):
        read_all(domain, data, ccsid)
    read_all("MRM", data, ccsid, messageSetDocument=MRM_XML_SET, type="R", format="XML")


@settings(max_examples=150, deadline=None)
@given(data=st.binary(max_size=40))
@example(data="\u00b2".encode() * 20)  # a superscript digit: str.isdigit() says yes, int() refuses it
def test_json_cwf_and_rfh2_only_raise_domain_errors(data: bytes) -> None:
    read_all("JSON", data)
    read_all("MRM", data, messageSetDocument=CWF_SET, type="R", format="CWF")
    try:
        rfh2.parse(b"RFH " + data, encoding=546, ccsid=1208)
    except DomainError:
        pass


@settings(max_examples=200, deadline=None)
@given(
    folders=st.binary(max_size=40),
    extra=st.integers(-8, 48),
    nv_ccsid=st.sampled_from([1208, 1200, 819, 37, 4242]),
    fmt=st.binary(min_size=8, max_size=8),
)
def test_rfh2_with_plausible_fixed_part_only_raises_domain_errors(
    folders: bytes, extra: int, nv_ccsid: int, fmt: bytes
) -> None:
    import struct

    framed = struct.pack("<i", len(folders)) + folders
    for body, length in ((folders, 36 + extra), (framed, 36 + len(framed))):
        fixed = b"RFH " + struct.pack("<iiii", 2, length, 546, 1208) + fmt + struct.pack("<ii", 0, nv_ccsid)
        try:
            rfh2.parse(fixed + body, encoding=546, ccsid=1208)
        except DomainError:
            pass


COBOLISH = st.lists(
    st.sampled_from(
        [
            "01",
            "05",
            "10",
            "88",
            "77",
            "66",
            "REC",
            "A",
            "B",
            "FILLER",
            "PIC",
            "X(3)",
            "S9(4)V99",
            "9(40)",
            "COMP-3",
            "COMP",
            "COMP-1",
            "OCCURS",
            "2",
            "TO",
            "5",
            "TIMES",
            "DEPENDING",
            "ON",
            "REDEFINES",
            "VALUE",
            "'x.'",
            "SIGN",
            "LEADING",
            "SEPARATE",
            ".",
            "\n",
            "*",
            "ZZ9.99",
            "P9",
            "JUSTIFIED",
            "SYNC",
            "POINTER",
            "COPY",
            "REPLACING",
            "==:T:==",
            "BY",
            "\n      -    '",
            "\x1a",
            "*>",
        ]
    ),
    max_size=30,
).map(" ".join)
CISH = st.lists(
    st.sampled_from(
        [
            "struct",
            "typedef",
            "S",
            "T",
            "{",
            "}",
            ";",
            "int",
            "char",
            "x",
            "y",
            "[",
            "]",
            "4",
            "0",
            "N",
            "unsigned",
            "long",
            "double",
            "#define N 3\n",
            "#pragma pack(1)\n",
            ",",
            "/*",
            "*/",
            "//",
            "\n",
            "union",
            "uint8_t",
        ]
    ),
    max_size=30,
).map(" ".join)


@settings(max_examples=200, deadline=None)
@given(copybook=COBOLISH, header=CISH)
def test_importers_only_raise_import_faults(copybook: str, header: str) -> None:
    from flowbroker.formats.copybook import ImportFault
    from flowbroker.formats.importing import import_layout

    for text, kind in ((copybook, "copybook"), (header, "c-header")):
        try:
            import_layout(text, kind, "S", None, "in")
        except (ImportFault, DomainError):
            pass
