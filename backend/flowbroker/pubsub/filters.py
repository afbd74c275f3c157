"""Content filters of subscriptions: ESQL boolean expressions compiled by the ``esql`` package.

The queue manager never interprets filter text itself: the expression becomes the ``RETURN`` of
a FILTER module's Main, compiled once by ``esql.compiler.compile_program``, and runs against the
message assembly a flow would see for the publication, built by the format converters of
``flowbroker.formats``: ``Root.Properties`` (with ``Topic`` and ``MessageDomain``), ``Root.MQMD``,
``Root.MQRFH2`` (the publication's own MQRFH2 header, whose ``<mcd>`` names the body's domain,
and a ``usr`` folder holding the message properties) and the body under its domain. The body is
parsed only if a filter reads below the domain element, once per publication however many
filters read it. Without an ``<mcd>`` domain, the body's first byte chooses XMLNSC, JSON or BLOB.
A filter that raises or returns UNKNOWN does not match, as in a Filter node's unknown terminal.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Any

from flowbroker.qm.protocol import (
    FORMAT_RFH2,
    RC_SELECTOR_NOT_SUPPORTED,
    RC_SELECTOR_SYNTAX_ERROR,
    Message,
    QMError,
    decode_message,
)

_TEMPLATE = """CREATE FILTER MODULE SubscriptionFilter
  CREATE FUNCTION Main() RETURNS BOOLEAN
  BEGIN
    RETURN (
{expr}
    );
  END;
END MODULE;
"""
_EXPR_FIRST_LINE = 5  # the line of _TEMPLATE where the expression starts
_FOLDER = 0x01000000


class Publication:
    """One publication as every content filter sees it; its assembly is built on first use."""

    __slots__ = ("raw", "topic", "_root", "_error")

    def __init__(self, raw: bytes, topic: str) -> None:
        self.raw = raw
        self.topic = topic
        self._root: Any = None
        self._error: Exception | None = None

    @property
    def root(self) -> Any:
        if self._error is not None:
            raise self._error
        if self._root is None:
            try:
                self._root = message_assembly(decode_message(self.raw), self.topic)
            except Exception as exc:  # an unreadable header: no filter can match it
                self._error = exc
                raise
        return self._root


Filter = Callable[[Publication], bool]


def compile_filter(text: str) -> Filter:
    """A predicate over a publication for the ESQL boolean expression ``text``, or QMError."""
    if not isinstance(text, str) or not text.strip():
        raise QMError(RC_SELECTOR_SYNTAX_ERROR, "content filter is empty")
    if ";" in text:
        raise QMError(RC_SELECTOR_SYNTAX_ERROR, "content filter must be one expression (found ';')")
    try:
        from esql.compiler import EsqlCompileError, compile_program
        from esql.runtime import ExecutionContext
    except ImportError:
        raise QMError(
            RC_SELECTOR_NOT_SUPPORTED,
            "content filters need the esql package's compiler (esql.compiler.compile_program), "
            "which is not installed",
        ) from None
    try:
        program = compile_program(_TEMPLATE.format(expr=text), filename="filter.esql")
        routine = program.main_module(kind="FILTER")
    except EsqlCompileError as exc:
        raise QMError(RC_SELECTOR_SYNTAX_ERROR, f"content filter: {_relocate(exc)}") from None
    except Exception as exc:  # the compiler refusing the module shape
        raise QMError(RC_SELECTOR_SYNTAX_ERROR, f"content filter: {exc}") from None

    def matches(publication: Publication) -> bool:
        return routine.run(ExecutionContext(input_root=publication.root)) is True

    return matches


def _relocate(exc: Exception) -> str:
    """The first diagnostic with its line counted from the filter text, not the wrapper module."""
    diagnostics = getattr(exc, "diagnostics", None)
    if not diagnostics:
        return str(exc)
    d = diagnostics[0]
    line = getattr(d, "line", None)
    column = getattr(d, "column", None)
    message = getattr(d, "message", str(d))
    if isinstance(line, int) and line >= _EXPR_FIRST_LINE:
        return f"line {line - _EXPR_FIRST_LINE + 1}, column {column}: {message}"
    return str(d)


def message_assembly(message: Message, topic: str) -> Any:
    """Root for a publication, as the format converters build it for a flow's input node."""
    from esql.tree import Element

    from flowbroker.formats.assembly import Template, body_element, build_root

    md = message.md
    root = build_root(md, message.body, Template(domain=_sniff_domain(md.format, md.encoding, message.body)))
    body = body_element(root)
    properties = root.child("Properties")
    if properties is not None:
        if properties.child("MessageDomain") is None and body is not None:
            properties.add("MessageDomain", body.name)
        properties.add("Topic", topic)
    if message.properties:
        header = root.child("MQRFH2")
        if header is None:
            header = Element("MQRFH2", type=_FOLDER)
            if body is not None:
                body.insert_before(header)
            else:
                root.append(header)
        usr = header.child("usr") or header.add("usr", type=_FOLDER)
        for key, value in message.properties.items():
            # Properties the header's own usr folder already carries keep the header's value.
            if isinstance(value, str | int | float | bool) and usr.child(key) is None:
                usr.add(key, value)
    return root


def _sniff_domain(fmt: str, encoding: int, body: bytes) -> str:
    """The domain to assume when no ``<mcd>`` names one: from the first byte of the body proper."""
    if fmt.strip() == FORMAT_RFH2.strip() and len(body) >= 12:
        order = "<" if (int(encoding) & 0x0F) == 2 else ">"
        (length,) = struct.unpack_from(order + "i", body, 8)
        if 36 <= length <= len(body):
            body = body[length:]
    head = body.lstrip()[:1]
    return "XMLNSC" if head == b"<" else "JSON" if head in (b"{", b"[") else "BLOB"
