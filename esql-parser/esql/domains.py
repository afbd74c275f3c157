"""The registry of message domain parsers (XMLNSC, JSON, BLOB, MRM …).

Format converters register a :class:`DomainParser` under each domain name they own; ESQL's
``CREATE … DOMAIN … PARSE(…)`` and ``ASBITSTREAM(…)``, the input nodes and the output nodes find
them here, so the compiler never imports a converter directly.
"""

from __future__ import annotations

from typing import Any, Protocol

from esql.tree import Element, LazyContent


class DomainError(Exception):
    """A body that cannot be parsed or written, with where it went wrong."""

    def __init__(self, message: str, *, domain: str = "", path: str = "", offset: int | None = None) -> None:
        super().__init__(message)
        self.domain = domain
        self.path = path
        self.offset = offset


class DomainParser(Protocol):
    """Turns bytes into a domain element's subtree and back."""

    domains: tuple[str, ...]

    def attach(
        self, element: Element, data: bytes, *, ccsid: int, encoding: int, options: dict[str, Any]
    ) -> None:
        """Make ``element`` (the domain element) stand for ``data``, parsed on first read."""

    def serialize(self, element: Element, *, ccsid: int, encoding: int, options: dict[str, Any]) -> bytes:
        """The bytes of ``element``'s subtree; an unparsed subtree gives its original bytes."""


def attach_unparsed(
    parser: Any, element: Element, data: bytes, *, ccsid: int, encoding: int, options: dict[str, Any]
) -> None:
    """The ``attach`` of a parser that parses on first read and keeps the options as given.

    A parser whose attach is no more than that says so by taking this function as its ``attach``
    (``attach = attach_unparsed``): the message assembly's C code, which makes that content itself,
    recognises it by this function's identity and calls every other attach.
    """
    element.set_lazy(LazyContent(parser, bytes(data), ccsid=ccsid, encoding=encoding, options=options))


_PARSERS: dict[str, DomainParser] = {}


def register(parser: DomainParser) -> DomainParser:
    for name in parser.domains:
        _PARSERS[name.upper()] = parser
    return parser


def get(domain: str) -> DomainParser:
    try:
        return _PARSERS[domain.upper()]
    except KeyError:
        known = ", ".join(sorted(_PARSERS)) or "none registered"
        raise DomainError(f"unknown message domain '{domain}' (known: {known})", domain=domain) from None


def known() -> list[str]:
    return sorted(_PARSERS)
