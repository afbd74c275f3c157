"""CREATE … PARSE and ASBITSTREAM through the registered domain parsers (esql.domains)."""

from __future__ import annotations

import pytest
from flowbroker import formats

from esql.compiler import compile_program
from esql.runtime import EsqlRuntimeError, ExecutionContext
from esql.tree import build


def setup_module() -> None:
    formats.load_all()


def test_create_parse_then_asbitstream_roundtrip() -> None:
    source = """
CREATE LASTCHILD OF OutputRoot DOMAIN('XMLNSC') PARSE(InputRoot.BLOB.BLOB CCSID 1208);
SET OutputRoot.XMLNSC.Doc.B = UPPER(OutputRoot.XMLNSC.Doc.A);
SET Environment.Bytes = ASBITSTREAM(OutputRoot.XMLNSC CCSID 1208);
"""
    root = build("Root", {"BLOB": {"BLOB": b"<Doc><A>parsed</A></Doc>"}})
    ctx = ExecutionContext(input_root=root)
    assert compile_program(source, "parse.esql").main_module().run(ctx) is True
    assert ctx.output_root.child("XMLNSC").child("Doc").child("B").value == "PARSED"
    data = ctx.environment.child("Bytes").value
    assert isinstance(data, bytes)
    assert b"<A>parsed</A>" in data and b"<B>PARSED</B>" in data


def test_parse_of_malformed_body_is_an_esql_error() -> None:
    source = "CREATE LASTCHILD OF OutputRoot DOMAIN('XMLNSC') PARSE(InputRoot.BLOB.BLOB CCSID 1208);\n"
    root = build("Root", {"BLOB": {"BLOB": b"<Doc><A>oops</Doc>"}})
    with pytest.raises(EsqlRuntimeError) as info:
        compile_program(source, "bad.esql").main_module().run(ExecutionContext(input_root=root))
    assert info.value.line == 1
    assert info.value.message.startswith("PARSE: ")


def test_unknown_domain_is_an_esql_error() -> None:
    source = "CREATE LASTCHILD OF OutputRoot DOMAIN('NOPE') PARSE(X'00');\n"
    with pytest.raises(EsqlRuntimeError) as info:
        compile_program(source, "dom.esql").main_module().run(ExecutionContext())
    assert "unknown message domain 'NOPE'" in info.value.message


class RecordingParser:
    """A domain parser that keeps the options PARSE and ASBITSTREAM hand it."""

    domains = ("RECORDING",)

    def __init__(self) -> None:
        self.seen: list[tuple[str, dict[str, object]]] = []

    def attach(self, element, data, *, ccsid, encoding, options):  # type: ignore[no-untyped-def]
        self.seen.append(("attach", options))
        element.add("Data", data.decode())

    def serialize(self, element, *, ccsid, encoding, options):  # type: ignore[no-untyped-def]
        self.seen.append(("serialize", options))
        return b"bytes"


def test_parse_and_asbitstream_pass_set_type_and_format_to_the_parser() -> None:
    from esql import domains

    parser = RecordingParser()
    domains.register(parser)
    source = """
CREATE LASTCHILD OF OutputRoot DOMAIN('RECORDING')
  PARSE(CAST('abc' AS BLOB CCSID 1208) SET 'ORDERS' TYPE 'Order' FORMAT 'CWF1' OPTIONS RootBitStream);
SET Environment.Bytes = ASBITSTREAM(OutputRoot.RECORDING SET 'ORDERS' TYPE 'Order' FORMAT 'XML1');
"""
    ctx = ExecutionContext()
    assert compile_program(source, "opts.esql").main_module().run(ctx) is True
    assert parser.seen == [
        ("attach", {"options": 0, "set": "ORDERS", "type": "Order", "format": "CWF1"}),
        ("serialize", {"options": 0, "set": "ORDERS", "type": "Order", "format": "XML1"}),
    ]
    assert ctx.output_root.child("RECORDING").child("Data").value == "abc"
