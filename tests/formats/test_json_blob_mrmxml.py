"""JSON and BLOB domains, and MRM XML validated against the message set."""

from __future__ import annotations

import decimal

import pytest
from esql.domains import DomainError
from esql.fieldtypes import FIELD_TYPES, lookup
from esql.tree import Element
from formats_support import attach, serialize

SET = {
    "types": {
        "Order": {
            "elements": [
                {"name": "id", "type": "integer", "xml": {"attribute": True}},
                {"name": "Customer", "type": "string", "cwf": {"length": 10}},
                {"name": "Line", "type": "Line", "occurs": {"dependsOn": "Count", "max": 3}},
                {"name": "Total", "type": "decimal", "scale": 2, "cwf": {"repr": "packed", "length": 4}},
            ]
        },
        "Line": {
            "elements": [
                {"name": "Sku", "type": "string", "cwf": {"length": 4}},
                {"name": "Qty", "type": "integer"},
            ]
        },
    }
}
OPTS = {"messageSetDocument": SET, "type": "Order", "format": "XML"}


def test_json_round_trip_and_field_types() -> None:
    data = b'{"order":{"id":7,"lines":[{"sku":"A","qty":2},{"sku":"B","qty":1.5}],"note":null,"ok":true}}'
    element = attach("JSON", data)
    assert serialize(element) == data
    order = element.child("Data").child("order")  # type: ignore[union-attr]
    assert order.type == FIELD_TYPES["JSON.Object"]  # type: ignore[union-attr]
    lines = order.child("lines")  # type: ignore[union-attr]
    assert lines.type == FIELD_TYPES["JSON.Array"] and lines.child_count() == 2  # type: ignore[union-attr]
    assert lines.child("Item", 2).child("qty").value == 1.5  # type: ignore[union-attr]
    assert serialize(element) == data  # parsed, written again


def test_json_written_from_an_esql_built_tree() -> None:
    element = Element("JSON")
    data = element.add("Data", type=FIELD_TYPES["JSON.Object"])
    data.add("amount", decimal.Decimal("12.50"))
    arr = data.add("tags", type=FIELD_TYPES["JSON.Array"])
    arr.add("Item", "x")
    assert serialize(element) == b'{"amount":12.50,"tags":["x"]}'


def test_json_integers_are_exact_and_fractions_are_floats_as_in_ace() -> None:
    data = (
        b'{"small":-9223372036854775808,"u64":12345678901234567890,'
        b'"huge":-123456789012345678901234567890,"s":"12345678901234567890123","f":2.5,"e":1E2}'
    )
    element = attach("JSON", data)
    values = {kid.name: kid.value for kid in element.child("Data").children()}  # type: ignore[union-attr]
    # INTEGER while it fits ESQL's 64 bits, DECIMAL beyond; a fraction or exponent makes a FLOAT
    assert values["small"] == -(2**63) and type(values["small"]) is int
    assert values["u64"] == decimal.Decimal("12345678901234567890")
    assert isinstance(values["u64"], decimal.Decimal)
    assert values["huge"] == decimal.Decimal("-123456789012345678901234567890")
    assert values["s"] == "12345678901234567890123"
    assert values["f"] == 2.5 and values["e"] == 100.0 and type(values["e"]) is float
    element.child("Data").add("added", 1)  # type: ignore[union-attr]
    assert serialize(element) == (
        b'{"small":-9223372036854775808,"u64":12345678901234567890,'
        b'"huge":-123456789012345678901234567890,"s":"12345678901234567890123","f":2.5,"e":100.0,"added":1}'
    )


def test_json_fills_one_level_at_a_time_and_writes_unread_objects_from_their_parsed_value() -> None:
    data = (
        b'{"id":1,"customer":{"name":"Ada","limits":{"credit":12345678901234567890}},'
        b'"lines":[{"sku":"A","qty":2},{"sku":"B","qty":3}],"status":"new"}'
    )
    element = attach("JSON", data)
    top = element.child("Data")
    assert top is not None
    customer, lines = top.child("customer"), top.child("lines")
    assert customer is not None and lines is not None
    assert customer.lazy is not None and lines.lazy is not None  # types known, children not built
    assert customer.type == FIELD_TYPES["JSON.Object"] and lines.type == FIELD_TYPES["JSON.Array"]
    top.child("status").value = "processed"  # type: ignore[union-attr]
    # the unread levels, a 64-bit-overflowing DECIMAL among them, are written exactly
    assert serialize(element) == data.replace(b'"new"', b'"processed"')
    limits = customer.child("limits")
    assert limits is not None and limits.child("credit").value == decimal.Decimal("12345678901234567890")  # type: ignore[union-attr]
    copy = element.copy()  # copies share an unread level's parsed value without building it
    assert copy.child("Data").child("lines").lazy is not None  # type: ignore[union-attr]
    second = lines.child("Item", 2)
    assert second is not None and second.child("qty").value == 3  # type: ignore[union-attr]
    second.child("qty").value = 4  # type: ignore[union-attr]
    assert b'{"sku":"B","qty":4}' in serialize(element)
    assert b'{"sku":"B","qty":3}' in serialize(copy)  # the copy's level was never touched


def test_json_decimals_are_written_without_float_rounding() -> None:
    element = Element("JSON")
    data = element.add("Data", type=FIELD_TYPES["JSON.Object"])
    data.add("price", decimal.Decimal("12345678901234567.89"))
    data.add("tiny", decimal.Decimal("1E-30"))
    data.add("big", 2**80)
    assert serialize(element) == (
        b'{"price":12345678901234567.89,"tiny":0.000000000000000000000000000001,'
        b'"big":1208925819614629174706176}'
    )
    data.add("bad", decimal.Decimal("NaN"))
    with pytest.raises(DomainError) as info:
        serialize(element)
    assert info.value.path == "JSON.Data.bad" and "not a finite number" in str(info.value)


def test_bad_json_is_positioned() -> None:
    element = attach("JSON", b'{"a": 1,\n "b": }')
    with pytest.raises(DomainError) as info:
        _ = element.first_child
    assert "line 2" in str(info.value) and info.value.offset == 15


def test_blob_passes_bytes_through() -> None:
    element = attach("BLOB", b"\x00\x01binary")
    assert element.child("BLOB").value == b"\x00\x01binary"  # type: ignore[union-attr]
    assert serialize(element) == b"\x00\x01binary"
    element.child("BLOB").value = 42  # type: ignore[union-attr]
    with pytest.raises(DomainError, match="not a BLOB"):
        serialize(element)


def test_mrm_xml_reads_typed_values_and_writes_the_predefined_layout() -> None:
    data = b'<Order id="7"><Customer>Ann</Customer><Line><Sku>A1</Sku><Qty>2</Qty></Line><Total>9.50</Total></Order>'
    element = attach("MRM", data, **OPTS)
    assert element.child("id").value == 7  # type: ignore[union-attr]
    assert element.child("Line").child("Qty").value == 2  # type: ignore[union-attr]
    assert element.child("Total").value == decimal.Decimal("9.50")  # type: ignore[union-attr]
    assert serialize(element, **OPTS) == data


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"<Other/>", "root element is 'Other'"),
        (
            b'<Order id="7"><Line><Sku>A</Sku><Qty>1</Qty></Line><Total>1</Total></Order>',
            "Customer: expected 1",
        ),
        (b'<Order id="x"><Customer>a</Customer><Total>1</Total></Order>', "'x' is not a valid integer"),
        (b'<Order id="1"><Customer>a</Customer><Total>1</Total><Extra/></Order>', "'Extra' is not defined"),
        (b'<Order id="1"><Customer>a</Customer><Total>1</Total>', "malformed XML"),
    ],
)
def test_mrm_xml_validation_errors(data: bytes, message: str) -> None:
    element = attach("MRM", data, **OPTS)
    with pytest.raises(DomainError, match=message.split(": ")[-1] if ": " in message else message) as info:
        _ = element.first_child
    assert info.value.domain == "MRM" and info.value.offset is not None
    if "Customer" in message:
        assert info.value.path == "MRM.Customer"


def test_mrm_xml_error_offset_is_the_start_of_the_line() -> None:
    data = b'<Order id="1">\n<Customer>a</Customer>\n<Total>x</Total></Order>'
    element = attach("MRM", data, **OPTS)
    with pytest.raises(DomainError) as info:
        _ = element.first_child
    assert info.value.offset == data.index(b"<Total>") and "line 3" in str(info.value)
    assert str(info.value).endswith(f"byte offset {info.value.offset})")


def test_mrm_xml_converts_to_cwf_through_the_tree() -> None:
    data = b'<Order id="7"><Customer>Ann</Customer><Line><Sku>A1</Sku><Qty>2</Qty></Line><Total>9.50</Total></Order>'
    element = attach("MRM", data, **OPTS)
    out = serialize(element, encoding=273, **{**OPTS, "format": "CWF"})
    assert out == b"\x00\x00\x00\x07Ann       A1  \x00\x00\x00\x02\x00\x00\x95\x0c"


def test_field_type_names_resolve() -> None:
    assert lookup("xmlnsc.Attribute") == 0x03000100
    assert FIELD_TYPES["XMLNSC.Field"] == 0x03000000 and FIELD_TYPES["JSON.Array"] == 0x01001000
    assert lookup("XMLNSC.Nonsense") is None


def test_json_numbers_of_hundreds_of_digits_are_exact_or_refused_with_their_offset() -> None:
    long_integer = "9" * 300
    element = attach("JSON", f'{{"n":{long_integer}}}'.encode())
    assert element.child("Data").child("n").value == decimal.Decimal(long_integer)  # type: ignore[union-attr]
    beyond_float = attach("JSON", b'{"a": 1, "n": ' + b"9" * 400 + b"}")
    with pytest.raises(DomainError) as info:
        _ = beyond_float.first_child
    assert info.value.offset == 14 and "line 1, column 15" in str(info.value)


# One CCSID table serves CAST … CCSID and the parsers: the JSON domain reads and writes every CCSID
# that CAST accepts (1251 is Windows Cyrillic), and refuses an unknown one with a domain error.
def test_json_domain_accepts_every_ccsid_cast_accepts() -> None:
    from esql.cast import cast

    text = '{"name":"Привет"}'
    data = text.encode("cp1251")
    assert cast(data, "CHARACTER", ccsid=1251) == text
    element = attach("JSON", data, ccsid=1251)
    assert element.child("Data").child("name").value == "Привет"  # type: ignore[union-attr]
    assert serialize(element, ccsid=1251) == data
    with pytest.raises(DomainError, match="unsupported coded character set id 4711"):
        attach("JSON", data, ccsid=4711).child("Data")


def test_json_members_of_every_kind_come_back_after_one_level_is_read_and_changed() -> None:
    data = b'{"e":{},"a":[],"n":null,"t":true,"f":false,"x":1.25,"s":"\\u00e9","aa":[[1],[]],"o":{"k":[{"z":0}]}}'
    element = attach("JSON", data)
    top = element.child("Data")
    assert top.child("e").type == FIELD_TYPES["JSON.Object"] and not top.child("e").has_children()  # type: ignore[union-attr]
    assert top.child("a").type == FIELD_TYPES["JSON.Array"]  # type: ignore[union-attr]
    top.add("s", "again")  # type: ignore[union-attr]  # a repeated name becomes an array
    top.child("aa").child("Item").add("Item", 2)  # type: ignore[union-attr]
    assert serialize(element) == (
        b'{"e":{},"a":[],"n":null,"t":true,"f":false,"x":1.25,"s":["\xc3\xa9","again"],'
        b'"aa":[[1,2],[]],"o":{"k":[{"z":0}]}}'
    )
