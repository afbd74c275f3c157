"""MQRFH2 vectors built byte by byte from IBM's layout, the MQMD folder, and the message assembly."""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from typing import Any

import pytest
from esql.domains import DomainError
from esql.tree import Element
from flowbroker.formats import assembly, mqmd, rfh2


def folder(text: str) -> bytes:
    raw = text.encode("utf-8")
    raw += b" " * (-len(raw) % 4)
    return raw


def vector(
    order: str, folders: list[str], *, encoding: int = 273, ccsid: int = 1208, fmt: bytes = b"MQSTR   "
) -> bytes:
    """An MQRFH2 laid out field by field: StrucId, Version, StrucLength, Encoding, CCSID, Format, Flags, NameValueCCSID."""
    body = b""
    for text in folders:
        raw = folder(text)
        body += struct.pack(order + "i", len(raw)) + raw
    return (
        b"RFH "
        + struct.pack(order + "i", 2)
        + struct.pack(order + "i", 36 + len(body))
        + struct.pack(order + "i", encoding)
        + struct.pack(order + "i", ccsid)
        + fmt
        + struct.pack(order + "i", 0)
        + struct.pack(order + "i", 1208)
        + body
    )


MCD = "<mcd><Msd>xmlnsc</Msd></mcd>"
USR = "<usr><Region>EMEA</Region><Priority dt='i4'>3</Priority></usr>"


@pytest.mark.parametrize(("order", "md_encoding"), [("<", 546), (">", 273)])
def test_rfh2_parse_and_write_are_byte_compatible(order: str, md_encoding: int) -> None:
    data = vector(order, [MCD, "<usr><Region>EMEA</Region></usr>"]) + b"<a>1</a>"
    header, rest = rfh2.parse(data, encoding=md_encoding, ccsid=1208)
    assert rest == b"<a>1</a>"
    assert header.child("Format").value == "MQSTR   "  # type: ignore[union-attr]
    assert header.child("Encoding").value == 273  # type: ignore[union-attr]
    assert header.child("mcd").child("Msd").value == "xmlnsc"  # type: ignore[union-attr]
    assert header.child("usr").child("Region").value == "EMEA"  # type: ignore[union-attr]
    assert rfh2.template(header) == {"domain": "xmlnsc"}
    assert rfh2.serialize(header, encoding=md_encoding, ccsid=1208) == data[: len(data) - len(rest)]


def test_rfh2_folder_attributes_and_padding() -> None:
    data = vector("<", [USR], encoding=546)
    header, _ = rfh2.parse(data, encoding=546, ccsid=1208)
    prio = header.child("usr").child("Priority")  # type: ignore[union-attr]
    assert prio is not None and prio.value == "3" and prio.child("dt").value == "i4"  # type: ignore[union-attr]
    written = rfh2.serialize(header, encoding=546, ccsid=1208)
    (length,) = struct.unpack_from("<i", written, 36)
    assert length % 4 == 0 and struct.unpack_from("<i", written, 8)[0] == len(written)
    assert written[40:].rstrip(b" ") == b'<usr><Region>EMEA</Region><Priority dt="i4">3</Priority></usr>'


@pytest.mark.parametrize(
    ("data", "message", "offset"),
    [
        (b"RFH \x00\x00\x00\x02", "shorter than the 36-byte", 8),
        (b"XXXX" + b"\x00" * 40, "StrucId", 0),
        (vector(">", [])[:4] + struct.pack(">i", 1) + vector(">", [])[8:], "Version is 1", 4),
        (vector(">", [])[:8] + struct.pack(">i", 999) + vector(">", [])[12:], "StrucLength 999", 8),
        (
            vector(">", [MCD])[:36] + struct.pack(">i", 400) + vector(">", [MCD])[40:],
            "NameValueLength 400",
            36,
        ),
        (vector(">", ["<mcd><Msd>x</mcd>"]), "malformed folder", 40),
    ],
)
def test_bad_rfh2_is_positioned(data: bytes, message: str, offset: int) -> None:
    with pytest.raises(DomainError, match=message) as info:
        rfh2.parse(data, encoding=273, ccsid=1208)
    assert info.value.offset == offset


@dataclass
class Descriptor:
    msg_id: bytes = b"M" * 24
    correl_id: bytes = b"C" * 24
    persistence: int = 1
    priority: int = 4
    expiry: int = -1
    reply_to_q: str = "REPLY.Q"
    reply_to_q_mgr: str = ""
    format: str = "MQSTR   "
    encoding: int = 546
    coded_char_set_id: int = 1208
    put_time: float = 1_700_000_000.5
    backout_count: int = 2
    group_id: bytes = field(default_factory=lambda: b"\x00" * 24)


def test_mqmd_is_filled_from_the_descriptor_on_first_read() -> None:
    md = mqmd.build(Descriptor())
    assert md.lazy is not None
    assert mqmd.fields(md)["reply_to_q"] == "REPLY.Q"  # read without parsing
    assert md.child("BackoutCount").value == 2  # type: ignore[union-attr]
    assert md.child("PutDate").value.isoformat() == "2023-11-14"  # type: ignore[union-attr]
    md.child("Priority").value = 9  # type: ignore[union-attr]
    assert mqmd.fields(md)["priority"] == 9


def test_assembly_without_rfh2_uses_the_input_node_template() -> None:
    root = assembly.build_root(Descriptor(), b"<Msg><A>1</A></Msg>", assembly.Template("XMLNSC"))
    assert [kid.name for kid in root.children()] == ["Properties", "MQMD", "XMLNSC"]
    assert root.child("XMLNSC").lazy is not None  # type: ignore[union-attr]
    assert root.child("XMLNSC").child("Msg").child("A").value == "1"  # type: ignore[union-attr]
    fields, body = assembly.to_message(root)
    assert body == b"<Msg><A>1</A></Msg>" and fields["format"] == "MQSTR   "
    assert fields["msg_id"] == b"M" * 24 and fields["priority"] == 4


def test_assembly_with_rfh2_takes_domain_set_type_format_from_mcd() -> None:
    document = {
        "types": {
            "T": {"elements": [{"name": "N", "type": "integer", "cwf": {"repr": "display", "length": 3}}]}
        }
    }
    from flowbroker.formats.mrm import CATALOG

    CATALOG.install("SETA", document)
    mcd = "<mcd><Msd>mrm</Msd><Set>SETA</Set><Type>T</Type><Fmt>CWF</Fmt></mcd>"
    data = vector("<", [mcd], encoding=546, fmt=b"        ") + b"04C"
    root = assembly.build_root(Descriptor(format="MQHRF2  "), data, assembly.Template("BLOB"))
    assert [kid.name for kid in root.children()] == ["Properties", "MQMD", "MQRFH2", "MRM"]
    props = root.child("Properties")
    assert props.child("MessageSet").value == "SETA" and props.child("MessageFormat").value == "CWF"  # type: ignore[union-attr]
    assert root.child("MRM").child("N").value == 43  # type: ignore[union-attr]
    fields, body = assembly.to_message(root)
    assert fields["format"] == "MQHRF2  " and body == data


def test_output_domain_is_the_last_child_and_format_from_properties() -> None:
    from flowbroker.formats.mrm import CATALOG

    CATALOG.install(
        "SETB", {"types": {"T": {"elements": [{"name": "A", "type": "string", "cwf": {"length": 4}}]}}}
    )
    root = assembly.build_root(Descriptor(), b"<Msg><A>ab</A></Msg>", assembly.Template("XMLNSC"))
    out = Element("Root")
    out.append(root.child("Properties").copy())  # type: ignore[union-attr]
    out.append(root.child("MQMD").copy())  # type: ignore[union-attr]
    props = out.child("Properties")
    for name, value in (("MessageSet", "SETB"), ("MessageType", "T"), ("MessageFormat", "CWF")):
        props.child(name).value = value  # type: ignore[union-attr]
    out.add("MRM").copy_children_from(root.child("XMLNSC").child("Msg"))  # type: ignore[union-attr]
    fields, body = assembly.to_message(out)
    assert body == b"ab  "
    props.child("MessageFormat").value = "XML"  # type: ignore[union-attr]
    assert assembly.to_message(out)[1] == b"<T><A>ab</A></T>"


def test_last_child_that_is_not_a_domain_is_refused() -> None:
    root = Element("Root")
    root.add("Properties")
    root.add("Bogus").add("x", 1)
    with pytest.raises(DomainError, match="not a message domain"):
        assembly.to_message(root)


def test_rfh2_in_ebcdic_with_big_endian_integers() -> None:
    data = "RFH ".encode("cp500") + struct.pack(">iiii", 2, 36, 785, 500) + "MQSTR   ".encode("cp500")
    data += struct.pack(">ii", 0, 1208)
    header, rest = rfh2.parse(data + b"body", encoding=785, ccsid=500)
    assert header.child("Format").value == "MQSTR   " and header.child("CodedCharSetId").value == 500  # type: ignore[union-attr]
    assert rest == b"body" and rfh2.serialize(header, encoding=785, ccsid=500) == data


def test_rfh2_format_names_character_data_when_the_body_is_xml() -> None:
    data = vector("<", [MCD], encoding=546, fmt=b"        ") + b"<a>1</a>"
    root = assembly.build_root(Descriptor(format="MQHRF2  "), data)
    assert root.last_child.name == "XMLNSC"  # type: ignore[union-attr]
    _ = root.last_child.first_child  # type: ignore[union-attr]
    fields, body = assembly.to_message(root)
    header, rest = rfh2.parse(body, encoding=546, ccsid=1208)
    assert header.child("Format").value == "MQSTR   " and rest == b"<a>1</a>"  # type: ignore[union-attr]


def test_unread_rfh2_is_written_back_as_its_original_bytes() -> None:
    # spacing and quoting that a rewrite would normalise: only the original bytes keep them
    usr = "<usr><Region >EMEA</Region ><Note a='x'>n</Note></usr>"
    psc = "<psc><Topic>prices/fx</Topic></psc>"
    data = vector("<", [usr, psc], encoding=546, fmt=b"        ") + b"\x00\x01binary"
    root = assembly.build_root(Descriptor(format="MQHRF2  "), data, assembly.Template("BLOB"))
    fields, body = assembly.to_message(root)
    assert body == data and fields["format"].strip() == "MQHRF2"


def test_reading_one_folder_rewrites_that_folder_only() -> None:
    usr = "<usr><Region>EMEA</Region></usr>"
    psc = "<psc><Topic >prices/fx</Topic ></psc>"
    data = vector("<", [usr, psc], encoding=546, fmt=b"        ") + b"blob"
    root = assembly.build_root(Descriptor(format="MQHRF2  "), data, assembly.Template("BLOB"))
    region = root.child("MQRFH2").child("usr").child("Region")  # type: ignore[union-attr]
    assert region is not None and region.value == "EMEA"
    region.value = "APAC"
    _, body = assembly.to_message(root)
    header, rest = rfh2.parse(body, encoding=546, ccsid=1208)
    assert rest == b"blob"
    assert header.child("usr").child("Region").value == "APAC"  # type: ignore[union-attr]
    assert header.child("mcd") is None  # the body kept its template: no <mcd> was added
    assert folder(psc) in body  # the unread folder kept its exact text


def test_a_header_read_but_not_changed_is_written_back_as_its_original_bytes() -> None:
    # a filter routing on a tag reads the folder; what leaves is what came, spacing included
    usr = "<usr><Region >EMEA</Region ><Route>yes</Route></usr>"
    psc = "<psc><Topic >prices/fx</Topic ></psc>"
    data = vector("<", [usr, psc], encoding=546, fmt=b"        ") + b"blob"
    root = assembly.build_root(Descriptor(format="MQHRF2  "), data, assembly.Template("BLOB"))
    header = root.child("MQRFH2")
    assert header is not None and header.child("usr").child("Route").value == "yes"  # type: ignore[union-attr]
    assert header.child("Format").value == "        "  # type: ignore[union-attr]
    _, body = assembly.to_message(root)
    assert body == data


@pytest.mark.parametrize(
    "change",
    [
        lambda h: setattr(h.child("usr").child("Route"), "value", "no"),
        lambda h: h.child("usr").child("Route").add("Extra", "1"),
        lambda h: h.child("usr").child("Region").detach(),
        lambda h: h.child("usr").add("Region", "EMEA"),
        lambda h: setattr(h.child("Flags"), "value", 1),
        lambda h: setattr(h.child("Encoding"), "value", "546"),
        lambda h: h.child("psc").detach(),
        lambda h: h.add("jms", type=0x01000000).add("Dst", "queue:///Q"),
        lambda h: setattr(h.child("usr"), "name", "app"),
        lambda h: setattr(h.child("usr").child("Route"), "namespace", "urn:x"),
    ],
    ids=[
        "value",
        "child added below a leaf",
        "field removed",
        "field added",
        "fixed field",
        "fixed field type",
        "folder removed",
        "folder added",
        "folder renamed",
        "namespace",
    ],
)
def test_any_change_to_a_read_header_writes_it_anew(change: Any) -> None:
    usr = "<usr><Region >EMEA</Region ><Route>yes</Route></usr>"
    psc = "<psc><Topic >prices/fx</Topic ></psc>"
    data = vector("<", [usr, psc], encoding=546, fmt=b"        ") + b"blob"
    root = assembly.build_root(Descriptor(format="MQHRF2  "), data, assembly.Template("BLOB"))
    header = root.child("MQRFH2")
    assert header is not None and header.child("usr").child("Route") is not None  # type: ignore[union-attr]
    change(header)
    _, body = assembly.to_message(root)
    assert body != data
    again, rest = rfh2.parse(body, encoding=546, ccsid=1208)
    assert rest == b"blob"
    assert again.to_data() == header.to_data()


def test_changing_the_output_template_rewrites_mcd() -> None:
    data = vector("<", [MCD], encoding=546) + b"<a>1</a>"
    root = assembly.build_root(Descriptor(format="MQHRF2  "), data)
    props = root.child("Properties")
    assert props is not None
    props.child("MessageType").value = "Order"  # type: ignore[union-attr]
    _, body = assembly.to_message(root)
    header, _ = rfh2.parse(body, encoding=546, ccsid=1208)
    assert rfh2.template(header) == {"domain": "xmlnsc", "type": "Order"}


def test_malformed_folder_is_positioned_when_first_read() -> None:
    data = vector("<", [MCD, "<usr><Region>EMEA</usr>"], encoding=546) + b"<a/>"
    root = assembly.build_root(Descriptor(format="MQHRF2  "), data)
    header = root.child("MQRFH2")
    assert header is not None
    usr = header.child("usr")
    assert usr is not None  # the header's folders are known; their content is read on demand
    with pytest.raises(DomainError, match="malformed folder at byte offset 72") as info:
        usr.child("Region")
    assert info.value.offset == 72
    bad_mcd = vector("<", ["<mcd><Msd>x</mcd>"], encoding=546) + b"<a/>"
    with pytest.raises(DomainError, match="malformed folder at byte offset 40"):
        assembly.build_root(Descriptor(format="MQHRF2  "), bad_mcd)


def test_body_alone_is_what_to_message_writes() -> None:
    root = assembly.build_root(Descriptor(), b'{"a":1}', assembly.Template("JSON"))
    out = Element("Root")
    out.copy_children_from(root)
    out.child("JSON").child("Data").child("a").value = 2  # type: ignore[union-attr]
    assert assembly.to_body(out) == assembly.to_message(out)[1] == b'{"a":2}'
    # the CCSID comes from Properties, else from the MQMD, else UTF-8
    out.child("Properties").child("CodedCharSetId").value = 1200  # type: ignore[union-attr]
    assert assembly.to_body(out) == assembly.to_message(out)[1] == '{"a":2}'.encode("utf-16-be")
    out.child("Properties").detach()  # type: ignore[union-attr]
    out.child("MQMD").child("CodedCharSetId").value = 819  # type: ignore[union-attr]
    assert assembly.to_body(out) == assembly.to_message(out)[1] == b'{"a":2}'
    out.child("MQMD").detach()  # type: ignore[union-attr]
    assert assembly.to_body(out) == b'{"a":2}'
    # no body at all, and a last child that is no domain
    assert assembly.to_body(Element("Root")) == b""
    bogus = Element("Root")
    bogus.add("Bogus").add("x", 1)
    with pytest.raises(DomainError, match="'Bogus', which is not a message domain"):
        assembly.to_body(bogus)


@pytest.mark.parametrize(
    ("template", "ccsid", "body"),
    [
        (assembly.Template("JSON"), 1208, b'{"a":1,"b":"x"}'),
        (assembly.Template("JSON"), 1200, '{"a":1}'.encode("utf-16-be")),
        (assembly.Template("XMLNSC", "S", "T", "F"), 1208, b"<a><b>1</b></a>"),
        (assembly.Template("BLOB", "", "", ""), 819, b"\x00\x01raw"),
    ],
)
def test_body_alone_from_unread_properties_is_what_their_values_give(
    template: assembly.Template, ccsid: int, body: bytes
) -> None:
    # build_root works out what to_body reads of an unread Properties folder once ("written");
    # the values themselves (the general path, for Properties made elsewhere) give the same bytes
    root = assembly.build_root(Descriptor(coded_char_set_id=ccsid), body, template)
    out = Element("Root")
    out.copy_children_from(root)
    lazy = out.child("Properties").lazy  # type: ignore[union-attr]
    assert lazy is not None and "written" in lazy.options
    fast = assembly.to_body(out)
    del lazy.options["written"]
    assert assembly.to_body(out) == fast == assembly.to_message(out)[1] == body
    # a Properties folder read (and changed) is read field by field, as before
    root = assembly.build_root(Descriptor(coded_char_set_id=ccsid), body, template)
    root.child("Properties").child("MessageSet").value = "Other"  # type: ignore[union-attr]
    assert assembly.to_body(root) == assembly.to_message(root)[1] == body


def test_body_alone_keeps_an_mqrfh2_header_before_the_body() -> None:
    mcd = "<mcd><Msd>xmlnsc</Msd></mcd>"
    data = vector("<", [mcd], encoding=546, fmt=b"MQSTR   ") + b"<a>1</a>"
    root = assembly.build_root(Descriptor(format="MQHRF2  "), data, assembly.Template("BLOB"))
    assert assembly.to_body(root) == assembly.to_message(root)[1] == data


def test_a_repeated_header_reads_as_the_first_whatever_the_first_one_became() -> None:
    # the second message shares the first one's layout: changing the first tree leaves it alone
    usr = "<usr><Region >EMEA</Region ><Route>yes</Route></usr>"
    data = vector("<", [MCD, usr], encoding=546) + b"<a>1</a>"
    first = assembly.build_root(Descriptor(format="MQHRF2  "), data)
    header = first.child("MQRFH2")
    assert header is not None
    header.child("usr").child("Route").value = "no"  # type: ignore[union-attr]
    header.child("mcd").child("Msd").value = "json"  # type: ignore[union-attr]
    second = assembly.build_root(Descriptor(format="MQHRF2  "), data)
    again = second.child("MQRFH2")
    assert again is not None and again.child("usr").child("Route").value == "yes"  # type: ignore[union-attr]
    assert second.last_child is not None and second.last_child.name == "XMLNSC"
    assert assembly.to_message(second)[1] == data
    # a malformed header is refused every time, not only the first
    bad = vector("<", ["<mcd><Msd>x</mcd>"], encoding=546) + b"<a/>"
    for _ in range(2):
        with pytest.raises(DomainError, match="malformed folder at byte offset 40"):
            assembly.build_root(Descriptor(format="MQHRF2  "), bad)
