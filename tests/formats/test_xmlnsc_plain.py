"""XMLNSC's fast path for plain documents builds exactly the tree the lxml walk builds, and leaves
every document it does not take whole (namespaces, entities, CDATA, comments, PIs, non-ASCII, deep,
large, attribute-heavy, past a limit, malformed) to lxml, with lxml's errors."""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator

import pytest
from esql.domains import DomainError
from esql.tree import Element
from flowbroker.formats import xmlcore, xmlnsc
from flowbroker_bench.peers.workloads import xml_order
from formats_support import attach, serialize
from native_support import require_compiled

#: every test runs with each way of writing a plain XML subtree (C and Python)
pytestmark = pytest.mark.usefixtures("xml_writer")


@pytest.fixture(autouse=True)
def _fresh_limits() -> Iterator[None]:
    xmlcore.limits.cache_clear()
    yield
    xmlcore.limits.cache_clear()


_NATIVE = xmlnsc._plain_tree_native()


def _native_tree() -> Callable[[bytes], Element | None]:
    """The C tree builder; it is built by ``make setup`` on every machine the project supports, so
    under CI its absence fails the test that needs it."""
    return require_compiled(_NATIVE, "flowbroker.formats._xmlnsc_native")


@pytest.fixture(autouse=True, params=["native", "python"])
def builder(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Every test runs with each way of building a plain document's tree."""
    tree = _native_tree() if request.param == "native" else xmlnsc._plain_tree_py
    monkeypatch.setattr(xmlnsc, "_plain_tree", tree)
    return str(request.param)


def _shape(element: Element) -> list[object]:
    rows: list[object] = []

    def walk(node: Element, depth: int) -> None:
        kid = node.first_child
        prev = None
        while kid is not None:
            assert kid.parent is node and kid.prev_sibling is prev
            rows.append((depth, kid.name, kid.namespace, kid.type, kid.value))
            walk(kid, depth + 1)
            prev, kid = kid, kid.next_sibling
        assert node.last_child is prev

    walk(element, 0)
    return rows


def _by_lxml(monkeypatch: pytest.MonkeyPatch, data: bytes, **options: object) -> tuple[list[object], bytes]:
    with monkeypatch.context() as patch:
        patch.setattr(xmlnsc, "_plain_document", lambda *_: False)
        element = attach("XMLNSC", data, **options)
        return _shape(element), serialize(element)


def _taken(data: bytes) -> bool:
    return xmlnsc._plain_document(data, 1208) and xmlnsc._fill_plain(Element("XMLNSC"), data)


PLAIN = [
    xml_order(7),
    xml_order(123, items=3),
    b"<a/>",
    b"<a></a>",
    b"<a>text</a>",
    b"<a> </a>",  # whitespace-only text of a leaf is its value
    b"<r><a>  </a><b>x</b></r>",
    b"<r>\n  <a>1</a>\n  <b>\n    <c>2</c>\n  </b>\n</r>\n",  # indentation: no value children
    b"<r>head<b>bold</b>tail<c/> <d>x</d>end</r>",  # mixed content
    b'<r a=\'1\' b="two words" c=\'\'><k x="y">v</k><e z="1"/></r>',
    b"<r a='x > y'>1 &gt; 0</r>".replace(b"&gt;", b">"),
    b'<?xml version="1.0"?><a>1</a>',
    b'<?xml version="1.0" encoding="UTF-8"?>\n<a>1</a>',
    b"<?xml version='1.0' encoding='utf-8' standalone='yes'?><a>1</a>",
    b'<?xml version="1.0" standalone="no" ?><a>1</a>',
    b'<?xml version="1.0" encoding="UTF-16"?><a>1</a>',  # the CCSID decides, not the declaration
    b'<?xml version="1.0" encoding="ISO-8859-1"?><a>1</a>',
    b"  <a>1</a>  \n",
    b"<r>\r\n<a>x\r\ny</a>\r\n</r>",
    b"<r><x-y.z_1>1</x-y.z_1><_u>2</_u><xml>3</xml></r>",
    b"<r><a>tab\there</a><a attr='v'>  </a></r>",
    b"<r>" + b"<i>" * 50 + b"deep" + b"</i>" * 50 + b"</r>",
    b"<r " + b" ".join(b'a%d="%d"' % (i, i) for i in range(32)) + b"/>",
]


@pytest.mark.parametrize("data", PLAIN)
def test_plain_documents_take_the_fast_path_and_build_what_lxml_builds(
    monkeypatch: pytest.MonkeyPatch, data: bytes
) -> None:
    assert _taken(data)
    element = attach("XMLNSC", data)
    assert (_shape(element), serialize(element)) == _by_lxml(monkeypatch, data)


NOT_PLAIN = [
    b'<o:r xmlns:o="urn:o"><o:a>1</o:a></o:r>',  # namespaces
    b'<r xmlns="urn:d"><a>1</a></r>',
    b'<r xml:lang="en"><a xml:space="preserve">  </a></r>',  # the xml prefix needs no declaration
    b"<xml:r><a>1</a></xml:r>",
    b"<r><a>Pen &amp; ink</a><b>&#65;</b></r>",  # entities, character references
    b"<r><a><![CDATA[<x>]]></a></r>",  # CDATA
    b"<r><!-- c --><a>1</a></r>",  # comment
    b"<r><?pi data?><a>1</a></r>",  # PI
    b'<?xml version="1.0"?><?xml-stylesheet href="s"?><r/>',
    b"<!DOCTYPE r><r/>",
    "<r><a>caf\u00e9</a></r>".encode(),  # non-ASCII
    "<r><caf\u00e9>1</caf\u00e9></r>".encode(),
    b'<?xml version="1.1"?><r/>',  # only version 1.0 is taken
    b"<r>" + b"<i>" * 120 + b"</i>" * 120 + b"</r>",  # deeper than the fast path goes
    b"<r " + b" ".join(b'a%d="%d"' % (i, i) for i in range(33)) + b"/>",  # past the attribute threshold
    b"<r>" + b"<a>x</a>" * 140_000 + b"</r>",  # larger than the fast path reads
]


@pytest.mark.parametrize("data", NOT_PLAIN)
def test_documents_that_are_not_plain_go_to_lxml_and_parse_as_before(
    monkeypatch: pytest.MonkeyPatch, data: bytes
) -> None:
    assert not _taken(data)
    element = attach("XMLNSC", data)
    assert (_shape(element), serialize(element)) == _by_lxml(monkeypatch, data)


MALFORMED = [
    b"<r><a>1</b></r>",
    b"<r><a>1</a>",
    b"<r/><s/>",
    b"<r/>text",
    b"<r a=1/>",
    b"<r a='1' a='2'/>",
    b"<r a='<'/>",
    b"<r>]]></r>",
    b"<r>\x01</r>",
    b"<r><1a/></r>",
    b"<a:b>1</a:b>",
    b'  <?xml version="1.0"?><r/>',
    b'<?xml version="1.0" standalone="maybe"?><r/>',
    b"<r>" + b"<i>" * 300 + b"</i>" * 300 + b"</r>",  # past libxml2's depth
]


@pytest.mark.parametrize("data", MALFORMED)
def test_malformed_documents_are_refused_with_lxml_s_error(
    monkeypatch: pytest.MonkeyPatch, data: bytes
) -> None:
    with monkeypatch.context() as patch:
        patch.setattr(xmlnsc, "_plain_document", lambda *_: False)
        with pytest.raises(DomainError) as expected:
            attach("XMLNSC", data).first_child  # noqa: B018 - the read that parses
    assert not _taken(data)
    with pytest.raises(DomainError) as found:
        attach("XMLNSC", data).first_child  # noqa: B018
    assert str(found.value) == str(expected.value)


def test_the_element_limit_still_refuses_a_plain_document(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FLOWBROKER_XML_MAX_ELEMENTS", "10")
    data = b"<r>" + b"<a>x</a>" * 10 + b"</r>"
    assert not xmlnsc._plain_document(data, 1208)
    with pytest.raises(DomainError, match="more than the limit of 10"):
        attach("XMLNSC", data).first_child  # noqa: B018
    # the gate counts "<" (two a field): a body with no more of them than the limit is taken
    assert xmlnsc._plain_document(b"<r>" + b"<a>x</a>" * 4 + b"</r>", 1208)


def test_other_code_pages_and_retained_comments_are_unchanged(monkeypatch: pytest.MonkeyPatch) -> None:
    data = b"<r><a>1</a></r>"
    assert not xmlnsc._plain_document(data, 819) and not xmlnsc._plain_document(data, 1200)
    kept = attach("XMLNSC", data, retainComments=True, retainPIs=True)
    assert (_shape(kept), serialize(kept)) == _by_lxml(monkeypatch, data, retainComments=True, retainPIs=True)


def _random_plain_document(rng: random.Random) -> bytes:
    """A plain document of random shape: nesting, repeated names, attributes, blank and non-blank
    text and tails, empty elements, line ends of every kind."""
    names = ["a", "b", "item", "x-y.z_1", "_u", "line", "Qty"]
    texts = ["", " ", "\n  ", "\t", "v", "two words", " lead", "trail ", "1.50", "a\r\nb", "x > y", "\r"]

    def element(depth: int) -> str:
        name = rng.choice(names)
        attrs = "".join(
            f' {key}="{rng.choice(texts).strip() or "q"}"'
            for key in rng.sample(["k", "id", "n-1"], rng.randint(0, 2))
        )
        if rng.random() < 0.2:
            return f"<{name}{attrs}/>"
        parts = [rng.choice(texts)]
        if depth < 6:
            for _ in range(rng.randint(0, 4)):
                parts.append(element(depth + 1))
                parts.append(rng.choice(texts))
        return f"<{name}{attrs}>{''.join(parts)}</{name}>"

    head = rng.choice(["", '<?xml version="1.0"?>', "<?xml version='1.0' encoding='UTF-8'?>\n"])
    return (head + element(0) + rng.choice(["", "\n", "  "])).encode("ascii")


def test_the_c_builder_and_the_python_walk_build_the_same_trees() -> None:
    # calls both builders itself, whichever the fixture installed
    native = _native_tree()
    rng = random.Random(20261129)
    documents = PLAIN + NOT_PLAIN[-4:-1] + MALFORMED + [_random_plain_document(rng) for _ in range(400)]
    for data in documents:
        ours, theirs = native(data), xmlnsc._plain_tree_py(data)
        assert (ours is None) == (theirs is None), data
        if ours is not None and theirs is not None:
            holder_ours, holder_theirs = Element("XMLNSC"), Element("XMLNSC")
            holder_ours.append_new(ours)
            holder_theirs.append_new(theirs)
            assert _shape(holder_ours) == _shape(holder_theirs), data


@pytest.mark.parametrize("levels", [100, 101, 102, 126, 127, 128, 129, 1000])
def test_depth_at_and_past_the_fast_path_s_limit(levels: int) -> None:
    data = b"<i>" * levels + b"x" + b"</i>" * levels
    taken = _taken(data)
    # a folder deeper than 100 levels is not taken: 101 levels is a folder at 100 holding a leaf
    assert taken == (levels <= 101)
    element = attach("XMLNSC", data)
    if levels <= 255:
        with pytest.MonkeyPatch.context() as patch:
            assert (_shape(element), serialize(element)) == _by_lxml(patch, data)
