"""The BLOB domain: the body as one opaque byte string, ``BLOB.BLOB``."""

from __future__ import annotations

from typing import Any

from esql.domains import DomainError, attach_unparsed
from esql.tree import Element, LazyContent

from flowbroker.formats import ccsid as ccsids


class BlobParser:
    """The bytes pass through unchanged; ESQL sees them as the BLOB field of the BLOB domain."""

    domains: tuple[str, ...] = ("BLOB", "NONE")

    #: parsed on first read, the options kept as given
    attach = attach_unparsed

    def fill(self, element: Element, content: LazyContent) -> None:
        element.append(Element("BLOB", content.data))

    def serialize(self, element: Element, *, ccsid: int, encoding: int, options: dict[str, Any]) -> bytes:
        lazy = element.lazy
        if lazy is not None:
            return lazy.data
        parts: list[bytes] = []
        kids = [element] if element.name.upper() not in self.domains else list(element.children())
        for kid in kids:
            value = kid.value
            if value is None:
                continue
            if isinstance(value, bytes | bytearray):
                parts.append(bytes(value))
            elif isinstance(value, str):
                parts.append(value.encode(ccsids.codec(ccsid)))
            else:
                raise DomainError(
                    f"BLOB: field '{kid.name}' holds a {type(value).__name__}, not a BLOB",
                    domain="BLOB",
                    path=kid.path(),
                )
        return b"".join(parts)


PARSER = BlobParser()
