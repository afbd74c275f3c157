"""SET of one member of a JSON object nobody has read goes into its parsed value without building the
level; what the flow sees and writes afterwards must be what building the level and setting the
field gives."""

from __future__ import annotations

import decimal

import pytest
from esql.compiler import compile_program
from esql.runtime import ExecutionContext
from esql.tree import Element
from flowbroker.formats import json as json_domain
from formats_support import attach, serialize

DOC = (
    b'{"id":7,"status":"new","n":null,"flag":false,"x":1.5,"big":12345678901234567890,'
    b'"items":[{"sku":"A","qty":1},{"sku":"B","qty":2}],"customer":{"name":"Ada"},"e":{}}'
)

CASES = {
    "text over text": "SET OutputRoot.JSON.Data.status = 'processed';",
    "a new member goes last": "SET OutputRoot.JSON.Data.added = 'yes';",
    "integer, boolean, decimal, float": (
        "SET OutputRoot.JSON.Data.id = 8; SET OutputRoot.JSON.Data.flag = TRUE;"
        " SET OutputRoot.JSON.Data.x = 2.25; SET OutputRoot.JSON.Data.f = CAST(0.5 AS FLOAT);"
    ),
    "over a null": "SET OutputRoot.JSON.Data.n = 'set';",
    "over an object": "SET OutputRoot.JSON.Data.customer = 'flat';",
    "over an array": "SET OutputRoot.JSON.Data.items = 3;",
    "NULL deletes": "SET OutputRoot.JSON.Data.status = NULL;",
    "expression": "SET OutputRoot.JSON.Data.id = InputRoot.JSON.Data.id * 2 + 1;",
    "nested object": "SET OutputRoot.JSON.Data.customer.name = 'Bob'; SET OutputRoot.JSON.Data.customer.age = 40;",
    "in an array item": "SET OutputRoot.JSON.Data.items.Item[2].qty = 9;",
    "twice, then read": (
        "SET OutputRoot.JSON.Data.status = 'a'; SET OutputRoot.JSON.Data.status = 'b';"
        " SET OutputRoot.JSON.Data.copy = OutputRoot.JSON.Data.status;"
        " SET OutputRoot.JSON.Data.count = CARDINALITY(OutputRoot.JSON.Data.*[]);"
    ),
    "then a reference walks the level": (
        "SET OutputRoot.JSON.Data.status = 'done';"
        " DECLARE r REFERENCE TO OutputRoot.JSON.Data.id; MOVE r NEXTSIBLING;"
        " SET OutputRoot.JSON.Data.after_id = FIELDNAME(r) || '=' || r;"
    ),
    "then DELETE": "SET OutputRoot.JSON.Data.status = 'x'; DELETE FIELD OutputRoot.JSON.Data.id;",
    "an empty object": "SET OutputRoot.JSON.Data.e.k = 1;",
}


def _run(esql: str, *, member_write: bool, monkeypatch: pytest.MonkeyPatch) -> tuple[Element, bytes]:
    source = (
        "CREATE COMPUTE MODULE M CREATE FUNCTION Main() RETURNS BOOLEAN BEGIN "
        f"SET OutputRoot = InputRoot; {esql} RETURN TRUE; END; END MODULE;"
    )
    with monkeypatch.context() as patch:
        if not member_write:
            patch.setattr(json_domain._ParsedValue, "set_member", lambda *args: False)
        root = Element("Root")
        root.append(attach("JSON", DOC))
        ctx = ExecutionContext(input_root=root)
        assert compile_program(source, "m.esql").main_module().run(ctx) is True
        out = ctx.output_root
        body = serialize(out.child("JSON"))  # type: ignore[arg-type]
    return out, body


@pytest.mark.parametrize("esql", CASES.values(), ids=CASES.keys())
def test_a_member_set_on_an_unread_object_reads_and_writes_as_the_built_level(
    esql: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    fast, fast_body = _run(esql, member_write=True, monkeypatch=monkeypatch)
    built, built_body = _run(esql, member_write=False, monkeypatch=monkeypatch)
    assert fast_body == built_body
    for tree in (fast, built):
        for _ in tree.walk():  # builds every level
            pass
    assert fast.dump() == built.dump()  # names, types, values and order


def test_the_level_is_not_built_and_the_input_keeps_its_value(monkeypatch: pytest.MonkeyPatch) -> None:
    out, body = _run(
        "SET OutputRoot.JSON.Data.status = 'processed';", member_write=True, monkeypatch=monkeypatch
    )
    data = out.child("JSON").child("Data")  # type: ignore[union-attr]
    assert data is not None and data.lazy is not None  # never built
    assert body == DOC.replace(b'"new"', b'"processed"')
    root = Element("Root")
    root.append(attach("JSON", DOC))
    ctx = ExecutionContext(input_root=root)
    program = compile_program(
        "CREATE COMPUTE MODULE M CREATE FUNCTION Main() RETURNS BOOLEAN BEGIN SET OutputRoot = InputRoot;"
        " SET OutputRoot.JSON.Data.status = 'processed'; RETURN TRUE; END; END MODULE;",
        "m.esql",
    )
    assert program.main_module().run(ctx) is True
    assert serialize(root.child("JSON")) == DOC  # type: ignore[arg-type]  # shared parse, own copy
    assert root.child("JSON").child("Data").child("status").value == "new"  # type: ignore[union-attr]


@pytest.mark.parametrize(
    "value", [decimal.Decimal("NaN"), 2**64, b"\x01", None], ids=["NaN", "beyond 64 bits", "BLOB", "NULL"]
)
def test_values_the_parsed_object_cannot_hold_build_the_level(value: object) -> None:
    element = attach("JSON", b'{"a":1}')
    data = element.child("Data")
    assert data is not None and data.lazy is not None
    assert not json_domain._PARSED.set_member(data, data.lazy, "a", value)
    assert data.lazy is not None
