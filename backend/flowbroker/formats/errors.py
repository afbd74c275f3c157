"""Parser errors as the ExceptionList entries a flow's catch and failure paths see (ACE's ParserException)."""

from __future__ import annotations

from esql.domains import DomainError
from esql.tree import Element

FOLDER = 0x01000000
#: The message number ACE uses for a parser that cannot read or write a bit stream.
PARSER_ERROR_NUMBER = 5285


def parser_exception(exc: DomainError, *, node_label: str = "") -> Element:
    """A ``ParserException`` folder naming the domain, the field path and the byte offset."""
    entry = Element("ParserException", type=FOLDER)
    entry.add("File", "flowbroker/formats")
    entry.add("Catalog", "BIPmsgs")
    entry.add("Severity", 3)
    entry.add("Number", PARSER_ERROR_NUMBER)
    entry.add("Label", node_label)
    entry.add("Text", str(exc))
    for value in (exc.domain, exc.path, -1 if exc.offset is None else exc.offset):
        insert = entry.add("Insert", type=FOLDER)
        insert.add("Type", 2 if isinstance(value, int) else 5)
        insert.add("Text", str(value))
    return entry


def cause_entry(exc: BaseException, node_label: str) -> Element | None:
    """The ParserException for a parser error found while a node ran; None for any other cause."""
    return parser_exception(exc, node_label=node_label) if isinstance(exc, DomainError) else None
