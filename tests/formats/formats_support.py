"""Helpers for the format converter tests: attach bytes to a domain element and serialise it back."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import esql.domains
from esql.tree import Element
from flowbroker.formats import load_all, xmlcore
from native_support import require_compiled

load_all()


def attach(domain: str, data: bytes, ccsid: int = 1208, encoding: int = 546, **options: Any) -> Element:
    element = Element(domain)
    esql.domains.get(domain).attach(element, data, ccsid=ccsid, encoding=encoding, options=options)
    return element


def serialize(element: Element, ccsid: int = 1208, encoding: int = 546, **options: Any) -> bytes:
    return esql.domains.get(element.name).serialize(element, ccsid=ccsid, encoding=encoding, options=options)


def native_writer() -> Callable[[Element], str | None]:
    """The C writer of plain XML subtrees; it is built by ``make setup`` on every machine the
    project supports, so under CI its absence fails the test that needs it."""
    return require_compiled(xmlcore._write_native, "flowbroker.formats._xmlwrite_native")
