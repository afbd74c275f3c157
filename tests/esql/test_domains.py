"""CREATE … PARSE and ASBITSTREAM through the registered domain parsers (esql.domains)."""

from __future__ import annotations

import pytest

from esql.compiler import compile_program
from esql.runtime import EsqlRuntimeError, ExecutionContext
from esql.tree import build

formats = pytest.importorskip("flowbroker.formats")


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
