"""Helpers for the format converter tests: attach bytes to a domain element and serialise it back."""

from __future__ import annotations

from typing import Any

import esql.domains
from esql.tree import Element
from flowbroker.formats import load_all

load_all()


def attach(domain: str, data: bytes, ccsid: int = 1208, encoding: int = 546, **options: Any) -> Element:
    element = Element(domain)
    esql.domains.get(domain).attach(element, data, ccsid=ccsid, encoding=encoding, options=options)
    return element


def serialize(element: Element, ccsid: int = 1208, encoding: int = 546, **options: Any) -> bytes:
    return esql.domains.get(element.name).serialize(element, ccsid=ccsid, encoding=encoding, options=options)
