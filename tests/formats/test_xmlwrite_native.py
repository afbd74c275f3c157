"""The C writer of plain XML subtrees writes exactly what the Python writer writes, and answers None
(leaving the subtree to Python, with Python's errors) wherever a part of the subtree is not plain."""

from __future__ import annotations

import datetime
import decimal
import gc
import random
import sys
import uuid
from collections.abc import Callable
from typing import Any

import esql.domains
import pytest
from esql.domains import DomainError
from esql.tree import NAME, NAME_VALUE, Element
from flowbroker.formats import xmlcore
from flowbroker.formats.xmlcore import (
    ATTRIBUTE,
    CDATA_FIELD,
    CDATA_VALUE,
    COMMENT,
    DOCTYPE,
    FIELD,
    FOLDER,
    NS_DECL,
    PI_FIELD,
    PI_VALUE,
    SINGLE_ATTRIBUTE,
    SINGLE_NS_DECL,
    VALUE,
    XML_DECL,
)
from formats_support import attach, native_writer, serialize

Dec = decimal.Decimal

_NOT_ELEMENTS = {
    ATTRIBUTE,
    SINGLE_ATTRIBUTE,
    NS_DECL,
    SINGLE_NS_DECL,
    CDATA_VALUE,
    CDATA_FIELD,
    COMMENT,
    PI_VALUE,
    PI_FIELD,
    XML_DECL,
    DOCTYPE,
}
_TEXT = {VALUE, 0x02000002}


def _python(element: Element) -> str:
    """What the Python writer alone writes (the C writer is not used for any part)."""
    out: list[str] = []
    native, xmlcore._write_native = xmlcore._write_native, None
    try:
        xmlcore.Writer("XMLNSC", namespaces=True)._element(element, out, {xmlcore.XMLNS_URI: "xmlns"}, [0])
    finally:
        xmlcore._write_native = native
    return "".join(out)


def _plain_value(value: Any) -> bool:
    return value is None or type(value) in (str, int, Dec)


def _element_like(element: Element) -> bool:
    kind = element.type
    return (
        type(kind) is int
        and type(element.name) is str
        and kind not in _NOT_ELEMENTS
        and not (kind in _TEXT and not element.name)
    )


def _plain(element: Element, depth: int = 0) -> bool:
    """Whether the C writer takes ``element`` (an element-like child) whole: the rule it documents."""
    if depth > 256 or type(element) is not Element:
        return False
    if not (
        type(element.name) is str
        and type(element.namespace) is str
        and element.namespace == ""
        and element._lazy is None
        and element.name in xmlcore._GOOD_NAMES
        and _plain_value(element.value)
    ):
        return False
    kid = element._first
    while kid is not None:
        kind = kid.type
        if type(kind) is not int or type(kid.name) is not str or kid._lazy is not None:
            return False
        if kind in (ATTRIBUTE, SINGLE_ATTRIBUTE):
            if (
                kid.namespace != ""
                or kid._first is not None
                or kid.value is None
                or not _plain_value(kid.value)
            ):
                return False
        elif kind in _TEXT and not kid.name:
            if kid._first is not None or not _plain_value(kid.value):
                return False
        elif not _element_like(kid) or not _plain(kid, depth + 1):
            return False
        kid = kid.next_sibling
    return True


NAMES = ["a", "b", "item", "x-y.z_1", "_u", "line", "Qty", "caf\u00e9", "\u65e5\u672c"]
TEXTS = [
    "",
    " ",
    "plain",
    "Pen & ink",
    "<tag>",
    "a > b",
    'say "hi"',
    "it's",
    "line\nbreak",
    "tab\there",
    "cr\rlf",
    "caf\u00e9",
    "\u00ff",
    "\u65e5\u672c\u8a9e",
    "emoji \U0001f600",
    "&amp;",
    'mixed\u00e9\u4e2d\U0001f600&<>"\t\n\r',
]
NUMBERS: list[Any] = [
    0,
    7,
    -12,
    10**30,
    Dec("1.00"),
    Dec("-0.5"),
    Dec("1E+3"),
    Dec("0E-7"),
    Dec("NaN"),
    Dec("-Infinity"),
]
ELEMENT_TYPES = [FIELD, FOLDER, NAME_VALUE, NAME, VALUE, 0]


class _Str(str):
    pass


class _Sub(Element):
    __slots__ = ()


#: what makes a part of a subtree not plain, each applied to an element
def _spoil(rng: random.Random, element: Element) -> None:
    how = rng.randrange(14)
    if how == 0:
        element.namespace = "urn:x"
    elif how == 1:
        element.type = CDATA_FIELD
    elif how == 2:
        element.add("", "c", type=COMMENT)
    elif how == 3:
        element.add("pi", "d", type=rng.choice([PI_VALUE, PI_FIELD]))
    elif how == 4:
        element.add("p", "urn:p", type=rng.choice([NS_DECL, SINGLE_NS_DECL]))
    elif how == 5:
        element.add("", "<c>", type=CDATA_VALUE)
    elif how == 6:
        element.value = rng.choice([1.5, True, b"\x01", datetime.date(2024, 1, 2), _Str("s"), [1]])
    elif how == 7:
        element.add("at", None, type=ATTRIBUTE)
    elif how == 8:
        element.add("at", 2.5, type=ATTRIBUTE)
    elif how == 9:
        element.add("XmlDecl", type=XML_DECL)
    elif how == 10:
        element.add("q", "1", namespace="urn:q", type=ATTRIBUTE)
    elif how == 11:
        element.name = f"fresh{uuid.uuid4().hex}"  # a good name the writer has not seen yet
    elif how == 12:
        element.type = 1.0  # type: ignore[assignment]
    else:
        sub = _Sub("sub", "1")
        element.append_new(sub)


def _random_tree(rng: random.Random, depth: int = 0, spoil: float = 0.0) -> Element:
    element = Element(rng.choice(NAMES), type=rng.choice(ELEMENT_TYPES))
    shape = rng.random()
    if depth < 5 and shape < 0.45:
        if rng.random() < 0.3:
            element.value = rng.choice(TEXTS + NUMBERS)
        for _ in range(rng.randint(0, 6)):
            pick = rng.random()
            if pick < 0.2:
                kind = rng.choice([ATTRIBUTE, SINGLE_ATTRIBUTE])
                element.add(rng.choice(NAMES + ["id", "k"]), rng.choice(TEXTS + NUMBERS), type=kind)
            elif pick < 0.35:
                text = rng.choice([*TEXTS, *NUMBERS, None])
                element.add("", text, type=rng.choice([VALUE, 0x02000002]))
            else:
                element.append_new(_random_tree(rng, depth + 1, spoil))
    else:
        element.value = rng.choice([None, *TEXTS, *NUMBERS])
    if rng.random() < spoil:
        _spoil(rng, element)
    return element


def _check(native: Callable[[Element], str | None], element: Element) -> str | None:
    """The C writer's answer for ``element``, checked against the Python writer's."""
    before = native(element)
    try:
        expected = _python(element)
    except DomainError:
        assert before is None and native(element) is None
        return None
    # the Python writer with the C writer taking the plain parts of a subtree not plain as a whole
    mixed: list[str] = []
    xmlcore.Writer("XMLNSC", namespaces=True)._element(element, mixed, {xmlcore.XMLNS_URI: "xmlns"}, [0])
    assert "".join(mixed) == expected
    found = native(element)
    if _element_like(element) and _plain(element):
        assert found == expected
    else:
        assert found is None
    if before is not None:
        assert before == expected
    return found


@pytest.mark.parametrize("spoil", [0.0, 0.03, 0.2])
def test_random_trees_are_written_as_the_python_writer_writes_them(spoil: float) -> None:
    native = native_writer()
    rng = random.Random(f"xmlwrite{spoil}")
    taken = 0
    for _ in range(400):
        tree = Element("r", type=FOLDER)
        for _ in range(rng.randint(1, 4)):
            tree.append_new(_random_tree(rng, 1, spoil))
        if rng.random() < 0.2:
            tree.value = rng.choice(TEXTS + NUMBERS)
        taken += _check(native, tree) is not None
        kid = tree.first_child
        while kid is not None:  # and each part on its own (a fragment)
            _check(native, kid)
            kid = kid.next_sibling
    assert taken > (350 if spoil == 0.0 else 20)


def _random_document(rng: random.Random) -> bytes:
    texts = [
        "",
        " ",
        "v",
        "Pen &amp; ink",
        "&lt;x&gt;",
        "caf\u00e9",
        "\u65e5\u672c",
        "a\nb",
        "&#9;t",
        "q&quot;",
    ]

    def element(depth: int) -> str:
        name = rng.choice(["a", "b", "item", "x-y.z_1", "caf\u00e9"])
        attrs = "".join(
            f' {key}="{rng.choice(texts)}"' for key in rng.sample(["k", "id", "n-1"], rng.randint(0, 2))
        )
        if depth > 4 or rng.random() < 0.4:
            return f"<{name}{attrs}>{rng.choice(texts)}</{name}>"
        body = "".join(element(depth + 1) + rng.choice(texts) for _ in range(rng.randint(0, 4)))
        return f"<{name}{attrs}>{rng.choice(texts)}{body}</{name}>"

    head = rng.choice(["", '<?xml version="1.0" encoding="UTF-8"?>'])
    extra = rng.choice(["", "<!-- c -->", "<![CDATA[<x>]]>", '<n:q xmlns:n="urn:n">1</n:q>', "<?pi d?>"])
    return (head + "<root>" + element(0) + extra + "</root>").encode()


@pytest.mark.parametrize("domain", ["XMLNSC", "XMLNS", "XML"])
def test_parsed_documents_are_written_as_the_python_writer_writes_them(domain: str) -> None:
    native = native_writer()
    rng = random.Random(domain)
    taken = 0
    for _ in range(200):
        body = attach(domain, _random_document(rng))
        root = body.first_child
        while root is not None and root.type in _NOT_ELEMENTS:
            root = root.next_sibling
        assert root is not None
        taken += _check(native, root) is not None
        # the whole document, through the domain's serializer, with and without the C writer
        written = serialize(body, 1200)
        saved = xmlcore._write_native
        xmlcore._write_native = None
        try:
            assert serialize(body, 1200) == written
        finally:
            xmlcore._write_native = saved
    assert taken > 25


def test_the_invoice_built_by_esql_is_taken_and_written_as_before() -> None:
    native = native_writer()
    body = Element("XMLNSC", type=FOLDER)
    invoice = body.add("invoice")
    invoice.add("orderId", "O1", type=ATTRIBUTE)
    invoice.add("customer", "C & <co>")
    for n in range(3):
        line = invoice.add("line")
        line.add("sku", f"SKU-{n}")
        line.add("quantity", Dec(n))
        line.add("price", Dec("1.13"))
        line.add("amount", Dec(n) * Dec("1.13"))
    invoice.add("total", Dec("3.39"))
    invoice.add("count", 3)
    expected = _python(invoice)
    assert native(invoice) == expected
    assert expected.startswith('<invoice orderId="O1"><customer>C &amp; &lt;co&gt;</customer><line><sku>')
    assert serialize(body) == expected.encode()


def test_a_name_not_yet_checked_is_left_to_python_which_checks_it() -> None:
    native = native_writer()
    name = f"n{uuid.uuid4().hex}"
    element = Element("r", type=FOLDER)
    element.add(name, "1")
    _python(Element("r"))
    assert native(element) is None
    assert _python(element) == f"<r><{name}>1</{name}></r>"
    assert native(element) == f"<r><{name}>1</{name}></r>"
    bad = Element("r", type=FOLDER)
    bad.add("no good", "1")
    assert native(bad) is None
    with pytest.raises(DomainError, match="'no good' is not a valid XML element name"):
        serialize_body(bad)


def serialize_body(element: Element) -> bytes:
    body = Element("XMLNSC", type=FOLDER)
    body.append_new(element)
    return esql.domains.get("XMLNSC").serialize(body, ccsid=1208, encoding=546, options={})


def test_leaves_folders_text_and_attributes_mirror_the_python_writer() -> None:
    native = native_writer()
    cases = []
    r = Element("r", type=FOLDER)
    r.add("a", "", type=ATTRIBUTE)
    cases.append(r)  # attributes only: an empty element tag
    r = Element("r", type=FOLDER)
    r.add("", "", type=VALUE)
    cases.append(r)  # an empty text child still makes content: <r></r>
    r = Element("r", "", type=FOLDER)
    r.add("", None, type=VALUE)
    cases.append(r)
    r = Element("r", Dec("2.50"), type=FOLDER)
    r.add("b", 1, type=SINGLE_ATTRIBUTE)
    r.add("c", None)
    r.add("", "t&", type=VALUE)
    r.add("a", 'x\ty\n"z"\r<&>', type=ATTRIBUTE)
    cases.append(r)
    cases.append(Element("r", 0))
    cases.append(Element("r", "\U0001f600 & \u00e9"))
    cases.append(Element("caf\u00e9", "\u4e2d"))
    for case in cases:
        expected = _python(case)
        assert native(case) == expected, expected
    assert native(cases[1]) == "<r></r>" and native(cases[0]) == '<r a=""/>'
    assert native(cases[3]) == '<r b="1" a="x&#9;y&#10;&quot;z&quot;&#13;&lt;&amp;&gt;">2.50<c/>t&amp;</r>'


def test_what_is_not_an_element_or_not_plain_is_left_to_python() -> None:
    native = native_writer()
    _python(Element("r"))
    assert native(Element("r", 1.5)) is None
    assert native(Element("r", True)) is None
    assert native(Element("r", _Str("s"))) is None
    assert native(Element("r", "1", type=CDATA_FIELD)) is None
    assert native(Element("r", "1", type=ATTRIBUTE)) is None
    assert native(Element("", "1", type=VALUE)) is None
    assert native(_Sub("r", "1")) is None
    assert native("r") is None  # type: ignore[arg-type]
    huge = Element("r", 10**5000)
    assert native(huge) is None
    with pytest.raises(ValueError):
        _python(huge)
    deep = Element("r", type=FOLDER)
    node = deep
    for _ in range(300):
        node = node.add("r", type=FOLDER)
    assert native(deep) is None
    assert _python(deep).count("<r>") == 300
    odd = Element("r", type=FOLDER)
    odd.add("x", "1")
    odd._first.next_sibling = "not an element"  # type: ignore[union-attr, assignment]
    assert native(odd) is None
    unset = object.__new__(Element)
    unset.name = "r"
    assert native(unset) is None


def test_writing_keeps_every_reference_count() -> None:
    native = native_writer()
    text = "".join(["shared ", "value"])
    number = Dec("12.50")
    name = "".join(["ref", "name"])
    tree = Element("r", type=FOLDER)
    tree.add(name, text)
    tree.add("n", number)
    tree.add("k", text, type=ATTRIBUTE)
    tree.add("", text, type=VALUE)
    _python(tree)
    counts = [sys.getrefcount(x) for x in (text, number, name, tree, tree.first_child)]
    for _ in range(1000):
        assert native(tree) is not None
    spoiled = Element("r", type=FOLDER)
    spoiled.add(name, text)
    spoiled.add("f", 1.5)
    for _ in range(1000):
        assert native(spoiled) is None
    del spoiled
    gc.collect()  # a parent and its children refer to each other
    assert [sys.getrefcount(x) for x in (text, number, name, tree, tree.first_child)] == counts


def test_configure_refuses_a_class_without_the_slots() -> None:
    native_writer()
    from flowbroker.formats import _xmlwrite_native  # type: ignore[attr-defined]

    class NoSlots:
        pass

    with pytest.raises(TypeError, match="is not a slot"):
        _xmlwrite_native.configure(NoSlots, set(), Dec)
    _xmlwrite_native.configure(Element, xmlcore._GOOD_NAMES, Dec)


def _random_decimal(rng: random.Random) -> Dec:
    digits = "".join(rng.choice("0123456789") for _ in range(rng.randint(1, 45)))
    text = f"{rng.choice(['', '-'])}{digits}E{rng.randint(-50, 8)}"
    value = Dec(text)
    pick = rng.random()
    if pick < 0.2:
        value = value * Dec(rng.randint(-999, 999)) / Dec(rng.choice([1, 3, 7, 100]))
    elif pick < 0.3:
        value = value.quantize(Dec("0.01")) if abs(value) < Dec("1E20") else value
    elif pick < 0.35:
        value = rng.choice([Dec("NaN"), Dec("-sNaN"), Dec("Infinity"), Dec("-0E+3"), Dec("-0.000")])
    return value


@pytest.mark.parametrize("digits", [True, False])
def test_decimals_are_written_as_str_writes_them(digits: bool) -> None:
    native = native_writer()
    from flowbroker.formats import _xmlwrite_native  # type: ignore[attr-defined]

    rng = random.Random(f"decimals{digits}")
    read = _xmlwrite_native.configure(Element, xmlcore._GOOD_NAMES, Dec, digits)
    try:
        assert read is False if not digits else isinstance(read, bool)
        _python(Element("d"))
        for _ in range(3000):
            value = _random_decimal(rng)
            leaf = Element("d", value)
            assert native(leaf) == _python(leaf) == f"<d>{value}</d>"
            folder = Element("d", value, type=FOLDER)
            folder.add("d", value, type=ATTRIBUTE)
            folder.add("", value, type=VALUE)
            assert native(folder) == _python(folder)
        with decimal.localcontext() as context:
            context.capitals = 0  # str() writes a small e: read where it is written
            for text in ("1E+3", "-1.5E-9", "0.000001", "12.5"):
                leaf = Element("d", Dec(text))
                assert native(leaf) == _python(leaf) == f"<d>{Dec(text)}</d>"
        assert native(Element("d", type("D", (Dec,), {})("1.5"))) is None
    finally:
        _xmlwrite_native.configure(Element, xmlcore._GOOD_NAMES, Dec)


def test_scenario_b_s_invoice_built_by_esql_is_taken_whole() -> None:
    native = native_writer()
    from flowbroker.runtime.harness import FlowHarness, flow
    from flowbroker_bench.peers.engine_host import INVOICE
    from flowbroker_bench.peers.workloads import xml_order

    harness = FlowHarness(
        flow(
            {
                "in": ("MQInput", {"queueName": "IN"}),
                "compute": ("Compute", {"esql": INVOICE, "module": "Invoice"}),
            },
            ["in.out -> compute.in"],
        )
    )
    seen = harness.seen("compute", "out")
    harness.inject("compute", xml_order(3), domain="XMLNSC")
    body = seen.pop().root.child("XMLNSC")
    assert body is not None
    invoice = body.child("invoice")
    assert invoice is not None
    expected = _python(invoice)
    assert native(invoice) == expected
    assert serialize(body) == expected.encode()
