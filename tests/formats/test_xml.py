"""XMLNSC, XMLNS and XML domains: parse on demand, round trips, namespaces, encodings, hostile input."""

from __future__ import annotations

import esql.domains
import pytest
from esql.domains import DomainError
from esql.fieldtypes import FIELD_TYPES
from esql.tree import Element
from formats_support import attach, serialize

#: every test runs with each way of writing a plain XML subtree (C and Python)
pytestmark = pytest.mark.usefixtures("xml_writer")

DOC = (
    b'<?xml version="1.0" encoding="UTF-8"?>'
    b'<o:Order xmlns:o="urn:orders" id="7"><o:Item qty="2">Pen &amp; ink</o:Item>'
    b"<Note>a<b>bold</b>c</Note><Empty/></o:Order>"
)


def test_attach_does_not_parse_and_untouched_body_is_original_bytes() -> None:
    element = attach("XMLNSC", b"<not-even-xml")
    assert element.lazy is not None
    assert serialize(element) == b"<not-even-xml"


def test_xmlnsc_tree_has_ace_field_types() -> None:
    element = attach("XMLNSC", DOC)
    decl = element.child("XmlDeclaration")
    assert decl is not None and decl.type == FIELD_TYPES["XMLNSC.XmlDeclaration"]
    assert decl.child("Encoding").value == "UTF-8"  # type: ignore[union-attr]
    order = element.child("Order")
    assert (
        order is not None and order.namespace == "urn:orders" and order.type == FIELD_TYPES["XMLNSC.Folder"]
    )
    ns = order.child("o")
    assert ns is not None and ns.type == FIELD_TYPES["XMLNSC.NamespaceDecl"] and ns.value == "urn:orders"
    attr = order.child("id")
    assert attr is not None and attr.type == FIELD_TYPES["XMLNSC.Attribute"] and attr.value == "7"
    item = order.child("Item")
    assert item is not None and item.value == "Pen & ink" and item.type == FIELD_TYPES["XMLNSC.Field"]
    note = order.child("Note")
    assert [(k.name, k.value) for k in note.children()] == [("", "a"), ("b", "bold"), ("", "c")]  # type: ignore[union-attr]
    assert order.child("Empty").value == ""  # type: ignore[union-attr]


def test_xmlnsc_parsed_tree_writes_equivalent_document() -> None:
    element = attach("XMLNSC", DOC)
    _ = element.first_child
    assert serialize(element) == DOC.replace(b"<Empty/>", b"<Empty/>")


def test_xmlnsc_writes_tree_built_by_hand_with_namespace_prefixes() -> None:
    element = Element("XMLNSC")
    msg = element.add("Msg", namespace="urn:a", type=FIELD_TYPES["XMLNSC.Folder"])
    msg.add("x", "1 < 2", namespace="urn:a")
    msg.add("flag", "yes", type=FIELD_TYPES["XMLNSC.Attribute"])
    msg.add("c", "<raw>", type=FIELD_TYPES["XMLNSC.CDataField"])
    assert (
        serialize(element)
        == b'<NS1:Msg xmlns:NS1="urn:a" flag="yes"><NS1:x>1 &lt; 2</NS1:x><c><![CDATA[<raw>]]></c></NS1:Msg>'
    )


def test_xmlnsc_folder_of_leaves_writes_as_the_general_path_does() -> None:
    # a folder of plain leaves (written in one pass) next to folders that are not: a value that
    # needs escaping, an empty text, numbers, an attribute, a CDATA field and a nested folder
    from decimal import Decimal

    element = Element("XMLNSC")
    doc = element.add("Doc", type=FIELD_TYPES["XMLNSC.Folder"])
    for _ in range(2):  # the second pass writes names the first one checked
        line = doc.add("Line")
        line.add("sku", "A&B<1>")
        line.add("note", "")
        line.add("qty", Decimal("2.50"))
        line.add("n", 7)
    odd = doc.add("Odd")
    odd.add("id", "x", type=FIELD_TYPES["XMLNSC.Attribute"])
    odd.add("c", "<raw>", type=FIELD_TYPES["XMLNSC.CDataField"])
    odd.add("Inner").add("v", "1")
    line_xml = b"<Line><sku>A&amp;B&lt;1&gt;</sku><note/><qty>2.50</qty><n>7</n></Line>"
    expected = (
        b"<Doc>" + line_xml * 2 + b'<Odd id="x"><c><![CDATA[<raw>]]></c><Inner><v>1</v></Inner></Odd></Doc>'
    )
    assert serialize(element) == expected
    assert serialize(element) == expected


def test_xmlnsc_folder_whose_later_child_is_not_a_leaf_is_written_once() -> None:
    # the one-pass writer has written the leading leaves when it meets the nested folder and the
    # attribute: what it wrote is taken back and the general path writes the whole folder
    element = Element("XMLNSC")
    doc = element.add("Doc", type=FIELD_TYPES["XMLNSC.Folder"])
    for _ in range(2):  # the second pass knows every name, so the one-pass writer is tried
        mixed = doc.add("Mixed")
        mixed.add("a", "1")
        mixed.add("Sub").add("b", "2")
        later = doc.add("Later")
        later.add("c", "3")
        later.add("id", "x", type=FIELD_TYPES["XMLNSC.Attribute"])
    once = b'<Mixed><a>1</a><Sub><b>2</b></Sub></Mixed><Later id="x"><c>3</c></Later>'
    assert serialize(element) == b"<Doc>" + once * 2 + b"</Doc>"
    assert serialize(element) == b"<Doc>" + once * 2 + b"</Doc>"


def test_xmlns_keeps_whitespace_comments_and_pis() -> None:
    data = b'<a xmlns="urn:d">\n  <!-- c --><?pi data?><b>t</b>\n</a>'
    element = attach("XMLNS", data)
    a = element.child("a")
    assert a is not None and a.namespace == "urn:d"
    kinds = [(k.type, k.value) for k in a.children()]
    assert (FIELD_TYPES["XMLNS.Content"], "\n  ") in kinds
    assert (FIELD_TYPES["XMLNS.Comment"], " c ") in kinds
    assert serialize(element) == data


def test_xml_domain_keeps_prefixes_in_names() -> None:
    data = b'<p:a xmlns:p="urn:p"><p:b p:x="1">v</p:b></p:a>'
    element = attach("XML", data)
    a = element.child("p:a")
    assert a is not None and a.namespace == ""
    assert a.child("xmlns:p").value == "urn:p"  # type: ignore[union-attr]
    assert a.child("p:b").child("p:x").value == "1"  # type: ignore[union-attr]
    assert serialize(element) == data


@pytest.mark.parametrize(
    ("ccsid", "codec"),
    [(1208, "utf-8"), (819, "iso-8859-1"), (1200, "utf-16-be"), (37, "cp037"), (500, "cp500")],
)
def test_encodings_by_ccsid(ccsid: int, codec: str) -> None:
    text = "<Msg><Name>Zoë Müller</Name><Amt>12.50</Amt></Msg>"
    element = attach("XMLNSC", text.encode(codec), ccsid=ccsid)
    assert element.child("Msg").child("Name").value == "Zoë Müller"  # type: ignore[union-attr]
    assert serialize(element, ccsid=ccsid) == text.encode(codec)
    # written in another code page from the same tree
    assert serialize(element, ccsid=1208) == text.encode("utf-8")


def test_utf16_with_bom_and_declaration() -> None:
    data = '<?xml version="1.0" encoding="UTF-16"?><a>é</a>'.encode("utf-16")
    element = attach("XMLNSC", data, ccsid=1208)
    assert element.child("a").value == "é"  # type: ignore[union-attr]


def test_bad_xml_reports_line_column_and_byte_offset() -> None:
    element = attach("XMLNSC", b"<a>\n  <b>1</c>\n</a>")
    with pytest.raises(DomainError) as info:
        _ = element.first_child
    err = info.value
    assert err.domain == "XMLNSC" and err.path == "XMLNSC"
    assert "line 2" in str(err) and err.offset is not None and 4 <= err.offset <= 16


def test_external_entity_is_refused_and_never_read(tmp_path) -> None:  # type: ignore[no-untyped-def]
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP-SECRET")
    data = (
        f'<?xml version="1.0"?><!DOCTYPE a [<!ENTITY xxe SYSTEM "file://{secret}">]><a>&xxe;</a>'
    ).encode()
    for domain in ("XMLNSC", "XMLNS", "XML"):
        element = attach(domain, data)
        with pytest.raises(DomainError, match="entity declarations are not allowed"):
            _ = element.first_child


def test_billion_laughs_is_refused() -> None:
    lines = ['<!ENTITY lol "lol">'] + [
        f'<!ENTITY lol{i} "{("&lol" + str(i - 1) + ";") * 10}">' for i in range(1, 10)
    ]
    data = (
        '<?xml version="1.0"?><!DOCTYPE lolz ['
        + "".join(lines).replace("&lol0;", "&lol;")
        + "]><lolz>&lol9;</lolz>"
    ).encode()
    element = attach("XMLNSC", data)
    with pytest.raises(DomainError):
        _ = element.first_child


def test_utf16_entity_declaration_caught_after_parse() -> None:
    data = '<!DOCTYPE a [<!ENTITY e "x">]><a>&e;</a>'.encode("utf-16")
    element = attach("XMLNSC", data)
    with pytest.raises(DomainError, match="entity declarations"):
        _ = element.first_child


def test_external_dtd_is_ignored_not_fetched(tmp_path) -> None:  # type: ignore[no-untyped-def]
    import socket

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    listener.settimeout(0.2)
    port = listener.getsockname()[1]
    data = f'<?xml version="1.0"?><!DOCTYPE a SYSTEM "http://127.0.0.1:{port}/evil.dtd"><a>1</a>'.encode()
    for domain in ("XMLNSC", "XMLNS", "XML"):
        element = attach(domain, data)
        assert "1" in str(element.to_data())
    # the DTD is not part of the XMLNSC tree, so a rewritten document has none
    element = attach("XMLNSC", data)
    element.child("a").value = "2"  # type: ignore[union-attr]
    assert serialize(element) == b'<?xml version="1.0"?><a>2</a>'
    with pytest.raises(TimeoutError):
        listener.accept()  # nobody tried to fetch the DTD
    listener.close()
    # a DTD on the local file system is not read either: its entity stays undefined
    dtd = tmp_path / "local.dtd"
    dtd.write_text('<!ENTITY secret "TOP-SECRET">')
    element = attach("XMLNSC", f'<!DOCTYPE a SYSTEM "file://{dtd}"><a><b>2</b><c>&secret;</c></a>'.encode())
    assert "TOP-SECRET" not in str(element.to_data())
    assert element.child("a").child("b").value == "2"  # type: ignore[union-attr]


def test_a_document_whose_doctype_declares_entities_is_still_refused() -> None:
    data = b'<!DOCTYPE a SYSTEM "x.dtd" [<!ENTITY e "x">]><a>&e;</a>'
    element = attach("XMLNSC", data)
    with pytest.raises(DomainError, match="entity declarations are not allowed"):
        _ = element.first_child


def test_two_roots_refused_on_output() -> None:
    element = Element("XMLNSC")
    element.add("a", "1")
    element.add("b", "2")
    with pytest.raises(DomainError, match="one root element"):
        serialize(element)


def test_unknown_domain_is_a_domain_error() -> None:
    with pytest.raises(DomainError, match="unknown message domain"):
        esql.domains.get("NEON")


def test_asbitstream_of_a_folder_writes_that_element() -> None:
    element = attach("XMLNSC", b"<Msg><A>1</A><B><C>2</C></B></Msg>")
    folder = element.child("Msg").child("B")  # type: ignore[union-attr]
    parser = esql.domains.get("XMLNSC")
    assert parser.serialize(folder, ccsid=1208, encoding=546, options={"folder": True}) == b"<B><C>2</C></B>"  # type: ignore[arg-type]
    assert parser.serialize(folder, ccsid=1208, encoding=546, options={}) == b"<B><C>2</C></B>"  # type: ignore[arg-type]


def test_xmlnsc_keeps_comments_only_when_asked() -> None:
    data = b"<!-- head --><a><!-- inner --><b>1</b></a>"
    dropped = attach("XMLNSC", data)
    assert [k.name for k in dropped.child("a").children()] == ["b"]  # type: ignore[union-attr]
    kept = attach("XMLNSC", data, retainComments=True)
    assert kept.first_child.type == FIELD_TYPES["XMLNSC.Comment"]  # type: ignore[union-attr]
    assert kept.child("a").first_child.value == " inner "  # type: ignore[union-attr]


def test_load_all_is_idempotent() -> None:
    from flowbroker.formats import load_all

    assert load_all() == load_all()
    assert {"XMLNSC", "XMLNS", "XML", "JSON", "BLOB", "MRM"} <= set(esql.domains.known())


def test_cdata_sections_become_cdata_fields_and_are_written_back() -> None:
    data = b"<Msg><Script><![CDATA[if a < b && c]]></Script><Plain>x</Plain></Msg>"
    element = attach("XMLNSC", data)
    msg = element.child("Msg")
    script = msg.child("Script")  # type: ignore[union-attr]
    assert script.value == "if a < b && c" and script.type == FIELD_TYPES["XMLNSC.CDataField"]  # type: ignore[union-attr]
    assert msg.child("Plain").type == FIELD_TYPES["XMLNSC.Field"]  # type: ignore[union-attr]
    msg.child("Plain").value = "y"  # type: ignore[union-attr]
    assert serialize(element) == data.replace(b">x<", b">y<")


def test_cdata_found_in_ebcdic_documents() -> None:
    data = "<a><b><![CDATA[<x>]]></b></a>".encode("cp500")
    element = attach("XMLNSC", data, ccsid=500)
    assert element.child("a").child("b").type == FIELD_TYPES["XMLNSC.CDataField"]  # type: ignore[union-attr]
    assert serialize(element, ccsid=500) == data


def test_parsing_from_many_threads_at_once() -> None:
    import threading

    errors: list[BaseException] = []

    def work(n: int) -> None:
        try:
            for i in range(200):
                data = f"<m><n>{n}</n><i>{i}</i></m>".encode()
                element = attach("XMLNSC", data)
                assert element.child("m").child("i").value == str(i)  # type: ignore[union-attr]
                assert serialize(element) == data
        except BaseException as exc:  # collected and re-raised in the main thread
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not errors


@pytest.mark.parametrize("domain", ["XMLNS", "XML"])
def test_cdata_sections_in_xmlns_and_xml_are_cdata_content(domain: str) -> None:
    data = b"<m><s><![CDATA[a < b]]></s><t>plain</t></m>"
    element = attach(domain, data)
    s = element.child("m").child("s")  # type: ignore[union-attr]
    assert s.first_child.type == FIELD_TYPES[f"{domain}.CDataSection"] and s.first_child.value == "a < b"  # type: ignore[union-attr]
    assert element.child("m").child("t").first_child.type == FIELD_TYPES[f"{domain}.Content"]  # type: ignore[union-attr]
    assert serialize(element) == data


def test_xmlnsc_writes_each_kind_of_leaf_value_in_a_folder_and_alone() -> None:
    from decimal import Decimal

    from flowbroker.formats.xmlcore import CDATA_FIELD

    element = Element("XMLNSC")
    doc = element.add("Doc")
    doc.add("Amount", Decimal("12.50"))
    doc.add("Tiny", Decimal("1E-7"))
    doc.add("Qty", -3)
    doc.add("Flag", True)
    doc.add("Text", "a<b&c>d")
    doc.add("Empty", "")
    doc.add("Null")
    doc.add("Ratio", 0.5)
    doc.add("Raw", b"\x01\xab")
    doc.add("Wrapped", Decimal("7"), type=CDATA_FIELD)
    doc.add("Bad name", "x")
    with pytest.raises(DomainError, match="'Bad name' is not a valid XML element name"):
        serialize(element)
    doc.last_child.detach()  # type: ignore[union-attr]
    assert serialize(element) == (
        b"<Doc><Amount>12.50</Amount><Tiny>1E-7</Tiny><Qty>-3</Qty><Flag>true</Flag>"
        b"<Text>a&lt;b&amp;c&gt;d</Text><Empty/><Null/><Ratio>0.5</Ratio><Raw>01AB</Raw>"
        b"<Wrapped><![CDATA[7]]></Wrapped></Doc>"
    )
    # the same leaves as the document element's only child take the writer's leaf path
    for value, text in ((Decimal("0.10"), b"0.10"), (42, b"42"), ("x&y", b"x&amp;y"), ("", b"")):
        alone = Element("XMLNSC")
        alone.add("V", value)
        assert serialize(alone) == (b"<V>" + text + b"</V>" if text else b"<V/>")


def test_xmlnsc_writes_numbers_as_their_formatted_text_on_every_path() -> None:
    # the writer's three number paths (a leaf alone, a folder of leaves, a leaf next to an
    # attribute) give each DECIMAL and INTEGER the text format(value, "") gives it
    from decimal import Decimal

    values: list[object] = [
        Decimal(text)
        for text in (
            "0",
            "-0",
            "0.10",
            "1E+2",
            "1E-7",
            "-1.23E-10",
            "0E-5",
            "1.000000E+30",
            "123456789012.345678",
        )
    ]
    values += [0, -3, 2**63 - 1, Decimal("NaN"), Decimal("-Infinity")]
    for value in values:
        text = format(value, "").encode()
        alone = Element("XMLNSC")
        alone.add("V", value)
        assert serialize(alone) == b"<V>" + text + b"</V>"
        folder = Element("XMLNSC")
        doc = folder.add("Doc")
        for _ in range(2):  # the second pass knows the names: the one-pass folder writer
            doc.add("Line").add("n", value)
        line = b"<Line><n>" + text + b"</n></Line>"
        assert serialize(folder) == b"<Doc>" + line * 2 + b"</Doc>"
        general = Element("XMLNSC")
        odd = general.add("Odd")
        odd.add("id", "x", type=FIELD_TYPES["XMLNSC.Attribute"])
        odd.add("n", value)
        assert serialize(general) == b'<Odd id="x"><n>' + text + b"</n></Odd>"


def _shape(element: Element) -> list[object]:
    """Every field below ``element`` as (depth, name, namespace, type, value), in document order."""
    rows: list[object] = []

    def walk(node: Element, depth: int) -> None:
        for kid in node.children():
            rows.append((depth, kid.name, kid.namespace, kid.type, kid.value))
            assert kid.parent is node
            walk(kid, depth + 1)

    walk(element, 0)
    return rows


@pytest.mark.parametrize("options", [{}, {"retainComments": True, "retainPIs": True}])
def test_xmlnsc_plain_fields_are_built_as_the_namespace_aware_path_builds_them(
    options: dict[str, bool],
) -> None:
    # A document with no xmlns anywhere takes the plain path (fields and folders made in the tree
    # walk); the same document with one unused namespace declaration takes the general path.
    body = (
        b"<items><item><sku>A-1</sku><qty>2</qty><empty/><note>x<!-- c --><?pi d?>y</note></item>"
        b'<item n="2"><deep><deeper><leaf>z</leaf></deeper> tail </deep><sku></sku></item>'
        b"<mixed>head<b>bold</b>tail</mixed></items>"
    )
    plain = attach("XMLNSC", b"<order>" + body + b"</order>", **options)
    general = attach("XMLNSC", b'<order xmlns:u="urn:unused">' + body + b"</order>", **options)
    general_order = general.child("order")
    assert general_order is not None
    declaration = general_order.child("u")
    assert declaration is not None and declaration.type == FIELD_TYPES["XMLNSC.NamespaceDecl"]
    declaration.detach()
    assert _shape(plain) == _shape(general)
    assert serialize(plain) == serialize(general)
