"""Operators, three-valued logic, comparisons, LIKE, literals and type names of esql.values."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal as D
from typing import Any

import pytest
from esql import values as v
from esql.tree import Element
from esql.types import Bit, GmtTimestamp, Interval, Time, Timestamp
from esql.values import EsqlValueError
from hypothesis import given, settings
from hypothesis import strategies as st

INT_MAX = 2**63 - 1
INT_MIN = -(2**63)


def lit(kind: str, text: str, q: str | None = None) -> Any:
    return v.literal(kind, text, q)


ARITHMETIC = [
    # (function, a, b, expected, expected python type)
    (v.add, 1, 2, 3, int),
    (v.add, 1, D("1.5"), D("2.5"), D),
    (v.add, 1, 1.5, 2.5, float),
    (v.add, D("0.1"), 0.2, 0.1 + 0.2, float),
    (v.add, D("0.1"), D("0.2"), D("0.3"), D),
    (v.add, "5", 2, 7, int),
    (v.add, 2, "1.25", D("3.25"), D),
    (v.sub, 10, 3, 7, int),
    (v.sub, D("1.00"), 1, D("0.00"), D),
    (v.mul, 6, 7, 42, int),
    (v.mul, D("1.5"), 2, D("3.0"), D),
    (v.mul, 2.0, 3, 6.0, float),
    (v.div, 7, 2, 3, int),
    (v.div, -7, 2, -3, int),
    (v.div, 7, -2, -3, int),
    (v.div, D("1"), D("4"), D("0.25"), D),
    (v.div, D("1"), 3, D("0.3333333333333333333333333333333333"), D),
    (v.div, 1.0, 4, 0.25, float),
    (v.div, D("10"), D("2"), D("5"), D),
]


@pytest.mark.parametrize(("fn", "a", "b", "expected", "kind"), ARITHMETIC)
def test_arithmetic_promotes_as_ibm_documents(fn: Any, a: Any, b: Any, expected: Any, kind: type) -> None:
    result = fn(a, b)
    assert result == expected
    assert type(result) is kind


@pytest.mark.parametrize("fn", [v.add, v.sub, v.mul, v.div, v.concat])
def test_null_operand_gives_null(fn: Any) -> None:
    assert fn(None, 1 if fn is not v.concat else "a") is None
    assert fn(1 if fn is not v.concat else "a", None) is None


@pytest.mark.parametrize(
    ("fn", "a", "b", "message"),
    [
        (v.add, INT_MAX, 1, "INTEGER overflow: 9223372036854775807 + 1 is outside the 64-bit range"),
        (v.sub, INT_MIN, 1, "INTEGER overflow: -9223372036854775808 - 1 is outside the 64-bit range"),
        (v.mul, 2**62, 2, "INTEGER overflow: 4611686018427387904 * 2 is outside the 64-bit range"),
        (v.div, 1, 0, "division by zero: 1 / 0"),
        (v.div, D("1.5"), D("0"), "division by zero: 1.5 / 0"),
        (v.div, 1.0, 0.0, "division by zero: 1E+0 / 0E+0"),
        (v.add, "a", "b", "cannot apply '+' to CHARACTER 'a' and CHARACTER 'b'"),
        (v.add, 1, "x", "cannot use CHARACTER 'x' as a number in '+'"),
        (v.add, True, 1, "cannot apply '+' to BOOLEAN TRUE and INTEGER 1"),
        (v.mul, dt.date(2024, 1, 1), 2, "cannot apply '*' to DATE DATE '2024-01-01' and INTEGER 2"),
    ],
)
def test_arithmetic_errors_are_precise(fn: Any, a: Any, b: Any, message: str) -> None:
    with pytest.raises(EsqlValueError) as info:
        fn(a, b)
    assert str(info.value) == message


def test_division_of_min_integer_by_minus_one_overflows() -> None:
    with pytest.raises(EsqlValueError, match="INTEGER overflow"):
        v.div(INT_MIN, -1)


def test_neg() -> None:
    assert v.neg(5) == -5
    assert v.neg(None) is None
    assert v.neg(D("1.5")) == D("-1.5")
    assert v.neg(lit("INTERVAL", "2", "DAY")) == lit("INTERVAL", "-2", "DAY")
    with pytest.raises(EsqlValueError, match="INTEGER overflow"):
        v.neg(INT_MIN)
    with pytest.raises(EsqlValueError, match="cannot negate BOOLEAN TRUE"):
        v.neg(True)


CONCAT = [
    ("ab", "cd", "abcd"),
    (b"\x01", b"\x02", b"\x01\x02"),
    (Bit("01"), Bit("1"), Bit("011")),
    ("n=", 5, "n=5"),
    (D("1.50"), " EUR", "1.50 EUR"),
    ("ok:", True, "ok:TRUE"),
    ("", "", ""),
]


@pytest.mark.parametrize(("a", "b", "expected"), CONCAT)
def test_concat(a: Any, b: Any, expected: Any) -> None:
    assert v.concat(a, b) == expected


def test_concat_of_blob_and_bit_is_an_error() -> None:
    with pytest.raises(EsqlValueError, match="cannot concatenate BLOB X'01' and BIT B'1'"):
        v.concat(b"\x01", Bit("1"))


COMPARISONS = [
    # a, b, eq, lt
    (1, 1, True, False),
    (1, 2, False, True),
    (1, D("1.0"), True, False),
    (1, 1.5, False, True),
    (D("2.5"), 2.5, True, False),
    (D("0.1"), 0.1, True, False),
    (0.1 + 0.2, D("0.3"), False, False),
    (2**53 + 1, float(2**53), True, False),
    ("abc", "abc  ", True, False),
    ("abc", "abd", False, True),
    ("10", 9, False, False),
    (b"\x01", b"\x02", False, True),
    (dt.date(2024, 1, 1), dt.date(2024, 1, 2), False, True),
    (dt.date(2024, 1, 1), Timestamp(2024, 1, 1), True, False),
    (Time(10, 0), Time(11, 0), False, True),
    (lit("INTERVAL", "90", "MINUTE"), lit("INTERVAL", "1:30", "HOUR TO MINUTE"), True, False),
    (lit("INTERVAL", "1", "YEAR"), lit("INTERVAL", "13", "MONTH"), False, True),
    (True, True, True, None),
    ("TRUE", True, True, None),
    (Bit("01"), Bit("01"), True, False),
]


@pytest.mark.parametrize(("a", "b", "equal", "less"), COMPARISONS)
def test_comparisons(a: Any, b: Any, equal: bool, less: bool | None) -> None:
    assert v.eq(a, b) is equal
    assert v.ne(a, b) is (not equal)
    if less is not None:
        assert v.lt(a, b) is less
        assert v.ge(a, b) is (not less)
        assert v.le(a, b) is (less or equal)
        assert v.gt(a, b) is (not less and not equal)


@pytest.mark.parametrize("fn", [v.eq, v.ne, v.lt, v.le, v.gt, v.ge])
def test_comparison_with_null_is_unknown(fn: Any) -> None:
    assert fn(None, 1) is None
    assert fn("a", None) is None
    assert fn(None, None) is None


@pytest.mark.parametrize(
    ("a", "b", "message"),
    [
        (1, dt.date(2024, 1, 1), "cannot compare INTEGER 1 with DATE DATE '2024-01-01' using '='"),
        ("abc", 1, "cannot use CHARACTER 'abc' as a number in '='"),
        (
            lit("INTERVAL", "1", "YEAR"),
            lit("INTERVAL", "1", "DAY"),
            "cannot compare INTERVAL YEAR with INTERVAL DAY",
        ),
    ],
)
def test_incomparable_types(a: Any, b: Any, message: str) -> None:
    with pytest.raises(EsqlValueError) as info:
        v.eq(a, b)
    assert str(info.value) == message


def test_booleans_are_ordered_false_before_true() -> None:
    assert v.lt(False, True) is True
    assert v.gt(True, False) is True
    assert v.lt(True, False) is False
    assert v.ge(False, False) is True
    assert v.lt(True, None) is None
    with pytest.raises(EsqlValueError, match="cannot compare BOOLEAN TRUE with INTEGER 1 using '<'"):
        v.lt(True, 1)


def test_row_and_list_equality() -> None:
    a = Element("Row")
    a.add("x", 1)
    a.add("y", "b")
    b = a.copy()
    assert v.eq(a, b) is True
    b.child("y").value = "c"  # type: ignore[union-attr]
    assert v.eq(a, b) is False
    assert v.eq([1, 2], [1, 2]) is True
    assert v.eq([1, 2], [1, 3]) is False
    assert v.eq([1, None], [1, 2]) is None
    assert v.eq([1], [1, 2]) is False


T, F, U = True, False, None
TRUTH = [
    # a, b, AND, OR
    (T, T, T, T),
    (T, F, F, T),
    (T, U, U, T),
    (F, F, F, F),
    (F, U, F, U),
    (U, U, U, U),
]


@pytest.mark.parametrize(("a", "b", "conj", "disj"), TRUTH)
def test_three_valued_logic(a: Any, b: Any, conj: Any, disj: Any) -> None:
    assert v.and_(a, b) is conj
    assert v.and_(b, a) is conj
    assert v.or_(a, b) is disj
    assert v.or_(b, a) is disj


def test_not_and_is_tests() -> None:
    assert v.not_(True) is False
    assert v.not_(False) is True
    assert v.not_(None) is None
    assert v.is_true(True) and not v.is_true(None)
    assert v.is_false(False) and not v.is_false(None)
    assert v.is_unknown(None) and not v.is_unknown(False)
    with pytest.raises(EsqlValueError, match="'AND' needs BOOLEAN operands, not INTEGER 1"):
        v.and_(1, True)


LIKE = [
    ("abc", "abc", None, True),
    ("abc", "a%", None, True),
    ("abc", "%c", None, True),
    ("abc", "a_c", None, True),
    ("abbc", "a_c", None, False),
    ("a%c", "a\\%c", "\\", True),
    ("abc", "a\\%c", "\\", False),
    ("a_c", "a$_c", "$", True),
    ("axc", "a$_c", "$", False),
    ("line1\nline2", "line1%", None, True),
    ("", "%", None, True),
    ("x.y", "x.y", None, True),
    ("xzy", "x.y", None, False),
    ("50%", "50!%", "!", True),
    ("a!b", "a!!b", "!", True),
]


@pytest.mark.parametrize(("value", "pattern", "escape", "expected"), LIKE)
def test_like(value: str, pattern: str, escape: str | None, expected: bool) -> None:
    assert v.like(value, pattern, escape) is expected


def test_like_null_and_errors() -> None:
    assert v.like(None, "a%") is None
    assert v.like("a", None) is None
    with pytest.raises(EsqlValueError, match="ends with its ESCAPE character"):
        v.like("a", "a\\", "\\")
    with pytest.raises(EsqlValueError, match="must be one character"):
        v.like("a", "a", "ab")


def test_between_and_in() -> None:
    assert v.between(5, 1, 10) is True
    assert v.between(5, 10, 1) is False
    assert v.between(5, 10, 1, symmetric=True) is True
    assert v.between(None, 1, 2) is None
    assert v.between(5, None, 4) is False
    assert v.between(3, None, 4) is None
    assert v.in_(2, [1, 2, 3]) is True
    assert v.in_(4, [1, 2, 3]) is False
    assert v.in_(4, [1, None]) is None
    assert v.in_(1, [1, None]) is True
    assert v.in_(None, [1]) is None
    assert v.in_("b ", ["a", "b"]) is True


LITERALS = [
    ("DATE", "2024-02-29", None, dt.date(2024, 2, 29)),
    ("TIME", "13:45:00", None, Time(13, 45)),
    ("TIME", "13:45:00.123456", None, Time(13, 45, 0, 123456)),
    ("GMTTIMESTAMP", "2024-02-29 13:45:00.5", None, GmtTimestamp(2024, 2, 29, 13, 45, 0, 500000)),
    ("TIMESTAMP", "2024-02-29 13:45:00", None, Timestamp(2024, 2, 29, 13, 45)),
    ("INTERVAL", "2", "DAY", Interval(micros=2 * 86_400_000_000, qualifier="DAY")),
    ("INTERVAL", "1:30", "HOUR TO MINUTE", Interval(micros=90 * 60_000_000, qualifier="HOUR TO MINUTE")),
    ("INTERVAL", "1-6", "YEAR TO MONTH", Interval(months=18, qualifier="YEAR TO MONTH")),
    ("INTERVAL", "-3", "MONTH", Interval(months=-3, qualifier="MONTH")),
    ("INTERVAL", "1 02:03:04.5", "DAY TO SECOND", Interval(micros=93_784_500_000, qualifier="DAY TO SECOND")),
    ("INTERVAL", "2:30.25", "MINUTE TO SECOND", Interval(micros=150_250_000, qualifier="MINUTE TO SECOND")),
    ("X", "0D0A", None, b"\r\n"),
    ("B", "0101", None, Bit("0101")),
]


@pytest.mark.parametrize(("kind", "text", "qualifier", "expected"), LITERALS)
def test_literals(kind: str, text: str, qualifier: str | None, expected: Any) -> None:
    value = v.literal(kind, text, qualifier)
    assert value == expected
    assert type(value) is type(expected)


@pytest.mark.parametrize(
    ("kind", "text", "qualifier", "message"),
    [
        ("DATE", "2023-02-29", None, "invalid DATE text '2023-02-29': day is out of range for month"),
        ("DATE", "29/02/2024", None, "invalid DATE text '29/02/2024': expected yyyy-mm-dd"),
        ("TIME", "25:00:00", None, "invalid TIME text '25:00:00': hour must be in 0..23"),
        (
            "INTERVAL",
            "1:75",
            "HOUR TO MINUTE",
            "invalid INTERVAL HOUR TO MINUTE text '1:75': minutes must be below 60",
        ),
        ("INTERVAL", "1", "WEEK", "unknown INTERVAL qualifier 'WEEK'"),
        ("X", "0D0", None, "BLOB literal X'0D0' has an odd number of hex digits"),
        ("X", "0G", None, "BLOB literal X'0G' holds a character that is not a hex digit"),
        ("B", "012", None, "invalid BIT string '012': only the digits 0 and 1 are allowed"),
    ],
)
def test_bad_literals(kind: str, text: str, qualifier: str | None, message: str) -> None:
    with pytest.raises(EsqlValueError) as info:
        v.literal(kind, text, qualifier)
    assert str(info.value).startswith(message)


TYPE_NAMES = [
    ("a", "CHARACTER"),
    (1, "INTEGER"),
    (1.0, "FLOAT"),
    (D(1), "DECIMAL"),
    (True, "BOOLEAN"),
    (None, "NULL"),
    (b"", "BLOB"),
    (Bit("1"), "BIT"),
    (dt.date(2024, 1, 1), "DATE"),
    (Time(1, 0), "TIME"),
    (lit("GMTTIME", "01:00:00"), "GMTTIME"),
    (Timestamp(2024, 1, 1), "TIMESTAMP"),
    (GmtTimestamp(2024, 1, 1), "GMTTIMESTAMP"),
    (Interval(months=1, qualifier="MONTH"), "INTERVAL"),
    ([1], "LIST"),
    (Element("Row"), "ROW"),
]


@pytest.mark.parametrize(("value", "name"), TYPE_NAMES)
def test_type_name(value: Any, name: str) -> None:
    assert v.type_name(value) == name


def test_reference_type_name() -> None:
    root = Element("Root")
    child = root.add("A", 1)
    assert v.type_name(child) == "REFERENCE"


def test_to_element_value() -> None:
    assert v.to_element_value("x") == "x"
    assert v.to_element_value(bytearray(b"ab")) == b"ab"
    ts = Timestamp(2024, 1, 1)
    assert v.to_element_value(ts) is ts
    row = Element("Row", 5)
    assert v.to_element_value(row) == 5
    with pytest.raises(EsqlValueError, match="a LIST cannot be stored"):
        v.to_element_value([1, 2])


# -- LIKE against a direct matcher -------------------------------------------------------------


def direct_like(value: str, pattern: str, escape: str | None) -> bool:
    """Dynamic programming over (value position, pattern item): no regular expressions involved."""
    items: list[tuple[str, str]] = []  # ("any", ""), ("one", ""), ("lit", ch)
    i = 0
    while i < len(pattern):
        ch = pattern[i]
        if escape is not None and ch == escape:
            items.append(("lit", pattern[i + 1]))
            i += 2
            continue
        items.append(("any", "") if ch == "%" else ("one", "") if ch == "_" else ("lit", ch))
        i += 1
    reach = {0}
    for kind, lit in items:
        nxt: set[int] = set()
        for pos in reach:
            if kind == "any":
                nxt.update(range(pos, len(value) + 1))
            elif pos < len(value) and (kind == "one" or value[pos] == lit):
                nxt.add(pos + 1)
        reach = nxt
    return len(value) in reach


like_text = st.text(alphabet="ab%_!.", max_size=8)


@settings(max_examples=600, deadline=None)
@given(st.text(alphabet="ab%_!.\n", max_size=10), like_text, st.sampled_from([None, "!"]))
def test_like_matches_direct_matcher(value: str, pattern: str, escape: str | None) -> None:
    try:
        result = v.like(value, pattern, escape)
    except EsqlValueError:
        # only a badly escaped pattern may be refused
        assert escape is not None and escape in pattern
        return
    assert result is direct_like(value, pattern, escape)
