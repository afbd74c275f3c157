"""XML bodies past the per-element attribute limit or the per-message element limit are refused with a
parser exception naming the limit; many attributes within the limits parse whole and in order."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from esql.domains import DomainError
from flowbroker.formats import xmlcore
from formats_support import attach

#: every test runs with each way of writing a plain XML subtree (C and Python)
pytestmark = pytest.mark.usefixtures("xml_writer")

DOMAINS = ("XMLNSC", "XMLNS", "XML")


@pytest.fixture(autouse=True)
def _fresh_limits() -> Iterator[None]:
    xmlcore.limits.cache_clear()
    yield
    xmlcore.limits.cache_clear()


def _many(count: int) -> bytes:
    return (
        '<doc xmlns:p="urn:p" ' + " ".join(f'a{i}="v{i}" p:b{i}="w{i}"' for i in range(count // 2)) + "/>"
    ).encode()


@pytest.mark.parametrize("domain", DOMAINS)
def test_an_element_past_the_attribute_limit_is_refused(domain: str) -> None:
    element = attach(domain, _many(10_002))
    with pytest.raises(DomainError) as info:
        element.first_child  # noqa: B018 - the read that parses
    assert str(info.value) == (
        f"{domain}: element {domain}.doc (line 1) has 10002 attributes, more than the limit of 10000 "
        "per element (FLOWBROKER_XML_MAX_ATTRIBUTES)"
    )
    assert info.value.domain == domain


@pytest.mark.parametrize("domain", DOMAINS)
def test_many_attributes_within_the_limit_parse_whole_and_in_order(domain: str) -> None:
    element = attach(domain, _many(10_000))
    doc = element.child("doc")
    assert doc is not None
    names = [e.name for e in doc.children()]
    attrs = [n for n in names if n not in ("xmlns:p", "p", "xmlns")]
    assert len(attrs) == 10_000
    expected = [n for i in range(5000) for n in (f"a{i}", f"p:b{i}" if domain == "XML" else f"b{i}")]
    assert attrs == expected
    last = doc.last_child
    assert last is not None and last.value == "w4999"
    if domain != "XML":
        assert last.namespace == "urn:p"


def test_the_attribute_limit_is_a_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FLOWBROKER_XML_MAX_ATTRIBUTES", "40")
    with pytest.raises(DomainError, match="has 42 attributes, more than the limit of 40 per element"):
        attach("XMLNSC", _many(42)).first_child  # noqa: B018
    assert attach("XMLNSC", _many(40)).first_child is not None
    monkeypatch.setenv("FLOWBROKER_XML_MAX_ATTRIBUTES", "0")
    xmlcore.limits.cache_clear()
    assert len(list(attach("XMLNSC", _many(12_000)).walk())) == 12_003


@pytest.mark.parametrize("domain", DOMAINS)
def test_a_message_past_the_element_limit_is_refused(monkeypatch: pytest.MonkeyPatch, domain: str) -> None:
    monkeypatch.setenv("FLOWBROKER_XML_MAX_ELEMENTS", "100")
    within = b"<r>" + b"<i>x</i>" * 99 + b"<!-- a comment --></r>"
    assert len(list(attach(domain, within).first_child.children())) >= 99  # type: ignore[union-attr]
    with pytest.raises(DomainError) as info:
        attach(domain, b"<r>" + b"<i>x</i>" * 100 + b"</r>").first_child  # noqa: B018
    assert str(info.value) == (
        f"{domain}: the message has 101 elements, more than the limit of 100 per message "
        "(FLOWBROKER_XML_MAX_ELEMENTS)"
    )


def test_the_default_limits() -> None:
    assert xmlcore.limits() == (10_000, 1_000_000)


def test_the_bench_scenario_parses_with_the_limit_lifted_and_is_refused_with_it() -> None:
    import argparse

    from flowbroker_bench.core import scenarios

    rows = scenarios()["xml-attributes"].run(argparse.Namespace(attributes=10_001, domain=["XMLNS"]))
    assert [(r["limits"], r["outcome"].split(":")[0]) for r in rows] == [
        ("limit lifted", "parsed"),
        ("configured limits", "DomainError"),
    ]
    assert xmlcore.limits() == (10_000, 1_000_000)
