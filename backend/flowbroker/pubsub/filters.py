"""Content filters of subscriptions: ESQL boolean expressions compiled by the ``esql`` package.

The queue manager never interprets filter text itself: the expression becomes the ``RETURN`` of
a FILTER module's Main, compiled once by ``esql.compiler.compile_program``, and runs against the
message assembly of each publication (``Root.Properties``, ``Root.MQRFH2.usr`` holding the
message properties, and the body parsed as XMLNSC, JSON or BLOB by its first byte). A filter
that raises or returns UNKNOWN does not match, as in a Filter node's unknown terminal.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from flowbroker.qm.protocol import RC_SELECTOR_NOT_SUPPORTED, RC_SELECTOR_SYNTAX_ERROR, QMError

Filter = Callable[[dict[str, Any], bytes], bool]

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


def compile_filter(text: str) -> Filter:
    """A predicate over (properties, body) for the ESQL boolean expression ``text``, or QMError."""
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

    def matches(properties: dict[str, Any], body: bytes) -> bool:
        ctx = ExecutionContext(input_root=_assembly(properties, body))
        return routine.run(ctx) is True

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


def _assembly(properties: dict[str, Any], body: bytes) -> Any:
    from esql.tree import Element
    from esql.xmlio import read_json_into, read_xml_into

    root = Element("Root")
    props = root.add("Properties")
    head = body.lstrip()[:1]
    domain = "XMLNSC" if head == b"<" else "JSON" if head in (b"{", b"[") else "BLOB"
    props.add("MessageDomain", domain)
    if properties:
        usr = root.add("MQRFH2").add("usr")
        for key, value in properties.items():
            if isinstance(value, str | int | float | bool):
                usr.add(key, value)
    element = root.add(domain)
    try:
        if domain == "XMLNSC":
            read_xml_into(element, body)
        elif domain == "JSON":
            read_json_into(element, body)
        else:
            element.add("BLOB", bytes(body))
    except ValueError:
        element.add("BLOB", bytes(body))
    return root
