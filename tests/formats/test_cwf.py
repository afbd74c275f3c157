"""CWF: each physical type read and written byte for byte, round-trip properties, positioned errors."""

from __future__ import annotations

import decimal
import struct
from typing import Any

import pytest
from esql.domains import DomainError
from esql.tree import Element
from flowbroker.formats.mrm import cwf
from flowbroker.formats.mrm.model import MessageSetError, compile_set
from formats_support import attach, serialize
from hypothesis import given, settings
from hypothesis import strategies as st


def one_field(**spec: Any) -> dict[str, Any]:
    return {"name": "S", "types": {"T": {"elements": [{"name": "F", **spec}]}}}


def read(document: dict[str, Any], data: bytes, ccsid: int = 1208, encoding: int = 546) -> Element:
    element = Element("MRM")
    cwf.Reader(data, ccsid=ccsid, encoding=encoding).record(compile_set(document).message_type("T"), element)
    return element


def write(document: dict[str, Any], element: Element, ccsid: int = 1208, encoding: int = 546) -> bytes:
    return cwf.Writer(ccsid=ccsid, encoding=encoding).record(compile_set(document).message_type("T"), element)


def tree(**values: Any) -> Element:
    element = Element("MRM")
    for key, value in values.items():
        element.add(key, value)
    return element


@pytest.mark.parametrize(
    ("spec", "data", "value"),
    [
        ({"type": "string", "cwf": {"length": 6}}, b"ab    ", "ab"),
        ({"type": "string", "cwf": {"length": 6, "justify": "right", "pad": "*"}}, b"****ab", "ab"),
        ({"type": "string", "cwf": {"length": 4, "pad": "NUL"}}, b"ab\x00\x00", "ab"),
        ({"type": "string", "cwf": {"length": 4, "justify": "right", "pad": "0x2e"}}, b"..ab", "ab"),
        ({"type": "integer", "cwf": {"repr": "binary", "length": 2, "byteOrder": "big"}}, b"\xff\xfe", -2),
        (
            {"type": "integer", "cwf": {"repr": "binary", "length": 4, "byteOrder": "little"}},
            b"\x01\x02\x00\x00",
            513,
        ),
        ({"type": "integer", "cwf": {"repr": "binary", "length": 1, "signed": False}}, b"\xff", 255),
        (
            {"type": "integer", "cwf": {"repr": "binary", "length": 8, "byteOrder": "big"}},
            (2**40).to_bytes(8, "big"),
            2**40,
        ),
        (
            {"type": "decimal", "scale": 2, "cwf": {"repr": "packed", "length": 3}},
            b"\x12\x34\x5d",
            decimal.Decimal("-123.45"),
        ),
        ({"type": "integer", "cwf": {"repr": "packed", "length": 2, "signed": False}}, b"\x12\x3f", 123),
        ({"type": "integer", "cwf": {"repr": "zoned", "length": 3}}, b"12J", -121),
        (
            {"type": "integer", "cwf": {"repr": "display", "length": 4, "sign": "leading_separate"}},
            b"-012",
            -12,
        ),
        (
            {"type": "integer", "cwf": {"repr": "display", "length": 4, "sign": "trailing_separate"}},
            b"012+",
            12,
        ),
        ({"type": "integer", "cwf": {"repr": "display", "length": 3, "sign": "leading"}}, b"}23", -23),
        ({"type": "integer", "cwf": {"repr": "display", "length": 3, "signed": False}}, b"042", 42),
        (
            {"type": "float", "cwf": {"repr": "float", "length": 8, "byteOrder": "big"}},
            struct.pack(">d", 2.5),
            2.5,
        ),
        (
            {"type": "float", "cwf": {"repr": "float", "length": 4, "byteOrder": "little"}},
            struct.pack("<f", -0.5),
            -0.5,
        ),
        ({"type": "binary", "cwf": {"repr": "bytes", "length": 3}}, b"\x00\x01\x02", b"\x00\x01\x02"),
    ],
)
def test_each_physical_type_reads_and_writes_the_same_bytes(
    spec: dict[str, Any], data: bytes, value: Any
) -> None:
    document = one_field(**spec)
    element = read(document, data)
    assert element.child("F").value == value  # type: ignore[union-attr]
    assert write(document, element) == data


def test_message_byte_order_follows_the_encoding() -> None:
    document = one_field(type="integer", cwf={"repr": "binary", "length": 4})
    assert write(document, tree(F=1), encoding=546) == b"\x01\x00\x00\x00"
    assert write(document, tree(F=1), encoding=273) == b"\x00\x00\x00\x01"
    assert read(document, b"\x00\x00\x00\x07", encoding=273).child("F").value == 7  # type: ignore[union-attr]


def test_ebcdic_strings_and_zoned_decimal() -> None:
    document = {
        "types": {
            "T": {
                "elements": [
                    {"name": "Name", "type": "string", "cwf": {"length": 5}},
                    {"name": "Amt", "type": "decimal", "scale": 1, "cwf": {"repr": "zoned", "length": 3}},
                ]
            }
        }
    }
    data = "AB   ".encode("cp037") + b"\xf1\xf2\xd3"  # zoned -12.3: last byte zone D (negative)
    element = read(document, data, ccsid=37)
    assert element.child("Name").value == "AB"  # type: ignore[union-attr]
    assert element.child("Amt").value == decimal.Decimal("-12.3")  # type: ignore[union-attr]
    assert write(document, element, ccsid=37) == data


NESTED = {
    "types": {
        "Rec": {
            "elements": [
                {"name": "Kind", "type": "string", "cwf": {"length": 1}},
                {
                    "name": "Count",
                    "type": "integer",
                    "cwf": {"repr": "binary", "length": 2, "byteOrder": "big"},
                },
                {"name": "Line", "type": "Line", "occurs": {"dependsOn": "Count", "max": 5}},
                {"name": "Pair", "type": "integer", "occurs": 2, "cwf": {"repr": "binary", "length": 1}},
                {
                    "name": "Body",
                    "choice": [
                        {"name": "Text", "type": "string", "cwf": {"length": 4}},
                        {"name": "Num", "type": "integer", "cwf": {"repr": "binary", "length": 2}},
                    ],
                    "selector": {"field": "Kind", "cases": {"T": "Text", "N": "Num"}},
                },
                {"type": "filler", "cwf": {"repr": "string", "length": 2}},
            ]
        },
        "Line": {"elements": [{"name": "Sku", "type": "string", "cwf": {"length": 3}}]},
    }
}


def nested_read(data: bytes) -> Element:
    element = Element("MRM")
    mset = compile_set(NESTED)
    cwf.Reader(data, ccsid=1208, encoding=273).record(mset.message_type("Rec"), element)
    return element


def test_repeats_counted_by_an_earlier_field_choices_and_filler() -> None:
    data = b"T\x00\x02AAABBB\x01\x02WXYZ  "
    element = nested_read(data)
    assert element.to_data() == {
        "Kind": "T",
        "Count": 2,
        "Line": [{"Sku": "AAA"}, {"Sku": "BBB"}],
        "Pair": [1, 2],
        "Text": "WXYZ",
    }
    mset = compile_set(NESTED)
    assert cwf.Writer(ccsid=1208, encoding=273).record(mset.message_type("Rec"), element) == data
    numeric = nested_read(b"N\x00\x00\x01\x02\x00\x05    ")
    assert numeric.child("Num").value == 5  # type: ignore[union-attr]
    # the shorter alternative is padded to the size of the longest on output
    assert cwf.Writer(ccsid=1208, encoding=273).record(mset.message_type("Rec"), numeric) == (
        b"N\x00\x00\x01\x02\x00\x05    "
    )


def test_record_too_short_names_field_and_offset() -> None:
    with pytest.raises(DomainError) as info:
        nested_read(b"T\x00\x02AAAB")
    assert info.value.path == "MRM.Line.Sku" and info.value.offset == 6
    assert "record too short" in str(info.value)


def test_record_too_long_names_offset() -> None:
    with pytest.raises(DomainError) as info:
        nested_read(b"T\x00\x00\x01\x02WXYZ  EXTRA")
    assert info.value.offset == 11 and "5 bytes left over" in str(info.value)


def test_invalid_packed_decimal_nibble_is_positioned() -> None:
    document = {
        "types": {
            "T": {
                "elements": [
                    {"name": "A", "type": "string", "cwf": {"length": 2}},
                    {"name": "P", "type": "decimal", "cwf": {"repr": "packed", "length": 3}},
                ]
            }
        }
    }
    with pytest.raises(DomainError) as info:
        read(document, b"xx\x12\xa4\x5c")
    assert info.value.offset == 3 and info.value.path == "MRM.P" and "nibble 0xA" in str(info.value)
    with pytest.raises(DomainError, match="sign nibble 0x5"):
        read(document, b"xx\x12\x34\x55")


@pytest.mark.parametrize(
    ("spec", "value", "message"),
    [
        ({"type": "string", "cwf": {"length": 3}}, "toolong", "the field holds 3"),
        ({"type": "integer", "cwf": {"repr": "binary", "length": 1}}, 300, "does not fit a 1-byte"),
        ({"type": "integer", "cwf": {"repr": "packed", "length": 2}}, 12345, "more digits"),
        ({"type": "integer", "cwf": {"repr": "display", "length": 2, "signed": False}}, -1, "unsigned"),
        ({"type": "integer", "cwf": {"repr": "binary", "length": 4}}, "12x", "not a number"),
        ({"type": "integer", "cwf": {"repr": "binary", "length": 4}}, "1.5", "not an integer"),
        ({"type": "float", "cwf": {"repr": "float", "length": 4}}, 1e300, "does not fit a 4-byte float"),
    ],
)
def test_value_that_does_not_fit_on_output(spec: dict[str, Any], value: Any, message: str) -> None:
    with pytest.raises(DomainError, match=message) as info:
        write(one_field(**spec), tree(F=value))
    assert info.value.path == "MRM.F" and info.value.offset == 0


def test_missing_field_and_wrong_depends_on_count_on_output() -> None:
    with pytest.raises(DomainError, match="mandatory field missing"):
        write(one_field(type="string", cwf={"length": 2}), tree())
    element = nested_read(b"T\x00\x02AAABBB\x01\x02WXYZ  ")
    element.child("Line").detach()  # type: ignore[union-attr]
    with pytest.raises(DomainError, match="'Count' is 2 but 1 instances"):
        cwf.Writer(ccsid=1208, encoding=273).record(compile_set(NESTED).message_type("Rec"), element)


def test_bad_message_set_documents_name_the_pointer() -> None:
    with pytest.raises(MessageSetError) as info:
        compile_set({"types": {"T": {"elements": [{"name": "A", "type": "nosuch"}]}}})
    assert info.value.pointer == "/types/T/elements/0/type"
    with pytest.raises(MessageSetError, match="1, 2, 4 or 8"):
        compile_set(one_field(type="integer", cwf={"repr": "binary", "length": 3}))
    with pytest.raises(MessageSetError, match="contains itself"):
        compile_set({"types": {"T": {"elements": [{"name": "A", "type": "T"}]}}})
    with pytest.raises(MessageSetError, match="SPACE, NUL, ZERO or a byte") as info:
        compile_set(one_field(type="string", cwf={"length": 2, "pad": "ab"}))
    assert info.value.pointer == "/types/T/elements/0/cwf/pad"


def test_mrm_domain_parses_on_demand_and_round_trips() -> None:
    options = {"messageSetDocument": NESTED, "type": "Rec", "format": "CWF"}
    data = b"T\x00\x02AAABBB\x01\x02WXYZ  "
    element = attach("MRM", data, encoding=273, **options)
    assert element.lazy is not None
    assert serialize(element, encoding=273, **options) == data  # untouched: original bytes
    assert element.child("Count").value == 2  # type: ignore[union-attr]
    assert serialize(element, encoding=273, **options) == data  # parsed and written again


# -- properties ------------------------------------------------------------------------------


@settings(max_examples=60, deadline=None)
@given(
    length=st.sampled_from([1, 2, 4, 8]),
    signed=st.booleans(),
    order=st.sampled_from(["big", "little"]),
    data=st.data(),
)
def test_binary_integers_round_trip(length: int, signed: bool, order: str, data: st.DataObject) -> None:
    bits = length * 8
    low, high = (-(2 ** (bits - 1)), 2 ** (bits - 1) - 1) if signed else (0, 2**bits - 1)
    value = data.draw(st.integers(low, high))
    document = one_field(
        type="integer", cwf={"repr": "binary", "length": length, "signed": signed, "byteOrder": order}
    )
    raw = write(document, tree(F=value))
    assert raw == value.to_bytes(length, order, signed=signed)  # type: ignore[arg-type]
    assert read(document, raw).child("F").value == value  # type: ignore[union-attr]


@settings(max_examples=80, deadline=None)
@given(length=st.integers(1, 10), scale=st.integers(0, 4), signed=st.booleans(), data=st.data())
def test_packed_decimals_round_trip(length: int, scale: int, signed: bool, data: st.DataObject) -> None:
    digits = length * 2 - 1
    limit = 10**digits - 1
    unscaled = data.draw(st.integers(-limit if signed else 0, limit))
    value = decimal.Decimal(unscaled).scaleb(-scale)
    document = one_field(
        type="decimal", scale=scale, cwf={"repr": "packed", "length": length, "signed": signed}
    )
    raw = write(document, tree(F=value))
    assert len(raw) == length
    assert read(document, raw).child("F").value == value  # type: ignore[union-attr]


@settings(max_examples=80, deadline=None)
@given(
    length=st.integers(2, 12),
    sign=st.sampled_from(["leading", "trailing", "leading_separate", "trailing_separate", "none"]),
    ccsid=st.sampled_from([1208, 37, 500]),
    data=st.data(),
)
def test_display_numerics_round_trip(length: int, sign: str, ccsid: int, data: st.DataObject) -> None:
    width = length - (1 if sign.endswith("separate") else 0)
    limit = 10**width - 1
    value = data.draw(st.integers(0 if sign == "none" else -limit, limit))
    document = one_field(
        type="integer", cwf={"repr": "display", "length": length, "signed": sign != "none", "sign": sign}
    )
    raw = write(document, tree(F=value), ccsid=ccsid)
    assert len(raw) == length
    assert read(document, raw, ccsid=ccsid).child("F").value == value  # type: ignore[union-attr]


@settings(max_examples=60, deadline=None)
@given(
    text=st.text(alphabet=st.characters(min_codepoint=33, max_codepoint=126), max_size=10),
    justify=st.sampled_from(["left", "right"]),
    ccsid=st.sampled_from([1208, 819, 37, 500]),
)
def test_strings_round_trip(text: str, justify: str, ccsid: int) -> None:
    document = one_field(type="string", cwf={"length": 10, "justify": justify})
    raw = write(document, tree(F=text), ccsid=ccsid)
    assert len(raw) == 10
    assert read(document, raw, ccsid=ccsid).child("F").value == text  # type: ignore[union-attr]


@settings(max_examples=60, deadline=None)
@given(value=st.floats(allow_nan=False), order=st.sampled_from(["big", "little"]))
def test_doubles_round_trip(value: float, order: str) -> None:
    document = one_field(type="float", cwf={"repr": "float", "length": 8, "byteOrder": order})
    assert read(document, write(document, tree(F=value))).child("F").value == value  # type: ignore[union-attr]


REPEATED_FILLER = {
    "types": {
        "T": {
            "elements": [
                {"name": "A", "type": "string", "cwf": {"length": 2}},
                {"type": "filler", "occurs": 3, "cwf": {"repr": "string", "length": 1}},
                {"name": "B", "type": "string", "cwf": {"length": 2}},
            ]
        }
    }
}


def test_a_repeated_filler_in_a_flat_type_is_skipped_whole() -> None:
    element = read(REPEATED_FILLER, b"abxyzcd")
    assert element.to_data() == {"A": "ab", "B": "cd"}
    assert write(REPEATED_FILLER, element) == b"ab   cd"
    with pytest.raises(DomainError) as info:
        read(REPEATED_FILLER, b"abxyzc")
    assert "record too short" in str(info.value) and info.value.offset == 5


def test_a_filler_counted_by_an_earlier_field_keeps_the_type_off_the_fixed_path() -> None:
    document = {
        "types": {
            "T": {
                "elements": [
                    {
                        "name": "N",
                        "type": "integer",
                        "cwf": {"repr": "display", "length": 1, "signed": False},
                    },
                    {"type": "filler", "occurs": {"dependsOn": "N", "max": 4}, "cwf": {"length": 1}},
                    {"name": "B", "type": "string", "cwf": {"length": 1}},
                ]
            }
        }
    }
    assert read(document, b"2..z").to_data() == {"N": 2, "B": "z"}
    assert read(document, b"0z").to_data() == {"N": 0, "B": "z"}
