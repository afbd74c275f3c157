"""Helpers for the format converter tests: attach bytes to a domain element and serialise it back."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import esql.domains
import pytest
from esql.tree import Element
from flowbroker.formats import load_all, xmlcore

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
    if xmlcore._write_native is None:
        if os.environ.get("CI") == "true" and not os.environ.get("FLOWBROKER_PURE_PYTHON"):
            pytest.fail("flowbroker.formats._xmlwrite_native was not built (make setup builds it)")
        pytest.skip("flowbroker.formats._xmlwrite_native is not built, or FLOWBROKER_PURE_PYTHON is set")
    return xmlcore._write_native
