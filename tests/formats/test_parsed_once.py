"""Copies of an unparsed body that are read one after another: from the second on, the parse is
kept and the later copies get a copy of it instead of parsing the bytes again. Every copy must
hold exactly what its own parse would have given, whatever was done to the ones read before."""

from __future__ import annotations

import pytest
from esql.tree import Element, LazyContent
from flowbroker.formats.assembly import Template, build_root
from flowbroker.runtime import assembly as assemblies

BODIES = {
    "XML": b"<Doc a='1'><!-- c --><Item><N>one</N><Q>1</Q></Item><Item><N>two</N></Item>tail<?pi x?></Doc>",
    "XMLNSC": b"<Doc xmlns:p='urn:p' a='1'><p:Item><N>one</N></p:Item><Item><N>two</N><![CDATA[x]]></Item></Doc>",
    "XMLNS": b"<Doc xmlns:p='urn:p'><p:Item>one</p:Item><Item>two</Item></Doc>",
    "JSON": b'{"a": {"b": [1, 2, {"c": "d"}], "e": null}, "f": 1.5, "g": true}',
    "BLOB": b"\x00\x01bytes",
}


def _body(domain: str) -> Element:
    assemblies.ensure_domains()
    root = build_root(None, BODIES[domain], Template(domain=domain))
    body = root.last_child
    assert body is not None and body.lazy is not None
    return body


def _fresh_parse(domain: str) -> str:
    return _body(domain).dump()


def _dump_all(element: Element) -> str:
    """The whole subtree, every unparsed level below read first."""
    for node in element.walk():
        node.first_child  # noqa: B018
    return element.dump()


@pytest.mark.parametrize("domain", sorted(BODIES))
def test_each_copy_read_holds_its_own_parse(domain: str) -> None:
    body = _body(domain)
    copies = [body.copy() for _ in range(4)]
    expected = _fresh_parse(domain)
    expected_all = _dump_all(_body(domain))
    for n, copy in enumerate(copies):
        assert copy.dump() == expected, n
        # what one copy's reader does must not reach the next copy read
        first = copy.first_child
        if first is not None:
            first.add("Added", "by copy")
            first.value = "changed"
            if first.next_sibling is not None:
                first.next_sibling.detach()
    assert _dump_all(body) == expected_all
    for copy in [body.copy() for _ in range(2)]:
        assert _dump_all(copy) == expected_all


def test_the_third_copy_is_not_parsed() -> None:
    calls: list[str] = []

    class Counting:
        def fill(self, element: Element, content: LazyContent) -> None:
            calls.append(element.name)
            element.add("A", "1").add("B", "2")
            element.add("C")._lazy = LazyContent(Inner(), b"")

    class Inner:
        def fill(self, element: Element, content: LazyContent) -> None:
            calls.append("inner")
            element.add("D", "3")

    source = Element("Body")
    source.set_lazy(LazyContent(Counting(), b"x"))
    copies = [source.copy() for _ in range(5)]
    for copy in copies:
        copy.first_child  # noqa: B018
    assert calls == ["Body", "Body"]  # the first two parsed, the next three copied
    assert len({copy.dump() for copy in copies}) == 1
    kept = copies[2].child("C")
    assert kept is not None and kept.lazy is not None  # an unparsed level below stays unparsed
    assert [kid.dump() for kid in kept.children()] == ["D (0x03000000) = '3'"]
    assert calls == ["Body", "Body", "inner"]
    assert [copy.source for copy in copies] == [source.lazy] * 5


def test_a_parser_that_sets_the_element_itself_parses_every_copy() -> None:
    calls: list[int] = []

    class SetsValue:
        def fill(self, element: Element, content: LazyContent) -> None:
            calls.append(1)
            element.value = "from the parse"
            element.add("A", len(calls))

    source = Element("Body")
    source.set_lazy(LazyContent(SetsValue(), b"x"))
    copies = [source.copy() for _ in range(4)]
    for n, copy in enumerate(copies, 1):
        assert copy.value is None
        assert copy.child("A").value == n  # type: ignore[union-attr]
        assert copy.value == "from the parse"
    assert len(calls) == 4


def test_malformed_bytes_fail_at_every_read() -> None:
    assemblies.ensure_domains()
    root = build_root(None, b"<Doc><Open></Doc>", Template(domain="XMLNSC"))
    body = root.last_child
    assert body is not None
    copies = [body.copy() for _ in range(3)]
    for copy in copies:
        with pytest.raises(Exception, match="(?i)pars|malformed|mismatch"):
            copy.first_child  # noqa: B018
