"""Numeric functions and DECIMAL/INTEGER arithmetic checked against Python's decimal with ESQL's rules."""

from __future__ import annotations

import decimal
import math
from decimal import Decimal as D
from typing import Any

import pytest
from esql import values as v
from esql.functions import ENVIRONMENT
from esql.values import EsqlValueError
from hypothesis import given, settings
from hypothesis import strategies as st


def call(name: str, *args: Any) -> Any:
    return ENVIRONMENT[name].impl(*args)


TABLE = [
    ("ABS", (-5,), 5),
    ("ABSVAL", (D("-1.5"),), D("1.5")),
    ("ABS", (-2.0,), 2.0),
    ("SIGN", (-3,), -1),
    ("SIGN", (D("0"),), D(0)),
    ("SIGN", (2.5,), 1.0),
    ("CEIL", (D("1.2"),), D(2)),
    ("CEILING", (D("-1.2"),), D(-1)),
    ("CEIL", (1.2,), 2.0),
    ("CEIL", (7,), 7),
    ("FLOOR", (D("-1.2"),), D(-2)),
    ("FLOOR", (1.8,), 1.0),
    ("MOD", (7, 3), 1),
    ("MOD", (-7, 3), -1),
    ("MOD", (7, -3), 1),
    ("MOD", (D("7.5"), 2), D("1.5")),
    ("POWER", (2, 10), 1024),
    ("POWER", (2, -1), 0.5),
    ("POWER", (D("1.5"), 2), D("2.25")),
    ("POWER", (4.0, 0.5), 2.0),
    ("SQRT", (16,), 4.0),
    ("ROUND", (D("2.5"), 0, None), D("2")),
    ("ROUND", (D("-2.5"), 0, None), D("-2")),
    ("ROUND", (D("3.5"), 0, None), D("4")),
    ("ROUND", (D("2.5"), 0, "ROUND_HALF_UP"), D("3")),
    ("ROUND", (D("2.5"), 0, "ROUND_HALF_EVEN"), D("2")),
    ("ROUND", (D("3.5"), 0, "ROUND_HALF_EVEN"), D("4")),
    ("ROUND", (D("2.5"), 0, "ROUND_HALF_DOWN"), D("2")),
    ("ROUND", (D("2.1"), 0, "ROUND_UP"), D("3")),
    ("ROUND", (D("2.9"), 0, "ROUND_DOWN"), D("2")),
    ("ROUND", (D("-2.1"), 0, "ROUND_CEILING"), D("-2")),
    ("ROUND", (D("-2.1"), 0, "ROUND_FLOOR"), D("-3")),
    ("ROUND", (D("1.23456"), 3, None), D("1.235")),
    ("ROUND", (D("1.2345"), 3, None), D("1.234")),
    ("ROUND", (D("1234.5"), -2, None), D("1200")),
    ("ROUND", (1255, -1, None), 1260),
    ("ROUND", (1250, -2, None), 1200),
    ("ROUND", (1255, 2, None), 1255),
    ("ROUND", (2.675, 2, None), 2.68),
    ("ROUND", (D("1.5"), 0, "HALF_EVEN"), D("2")),
    ("TRUNCATE", (D("1.999"), 2), D("1.99")),
    ("TRUNCATE", (D("-1.999"), 0), D("-1")),
    ("TRUNCATE", (1.99, 1), 1.9),
    ("BITAND", (12, 10), 8),
    ("BITAND", (15, 7, 3), 3),
    ("BITOR", (12, 3), 15),
    ("BITXOR", (12, 10), 6),
    ("BITNOT", (0,), -1),
    ("BITNOT", (-1,), 0),
    ("DEGREES", (math.pi,), 180.0),
    ("RADIANS", (180,), math.pi),
    ("EXP", (0,), 1.0),
    ("LN", (1,), 0.0),
    ("LOG", (math.e,), 1.0),
    ("LOG10", (1000,), 3.0),
    ("COS", (0,), 1.0),
    ("SIN", (0,), 0.0),
    ("TAN", (0,), 0.0),
    ("ACOS", (1,), 0.0),
    ("ASIN", (0,), 0.0),
    ("ATAN", (0,), 0.0),
    ("ATAN2", (1, 1), math.pi / 4),
    ("COSH", (0,), 1.0),
    ("SINH", (0,), 0.0),
    ("TANH", (0,), 0.0),
    ("COT", (math.pi / 4,), 1.0000000000000002),
    ("ABS", ("-3",), 3),
    ("ROUND", ("2.345", 2, None), D("2.34")),
]


@pytest.mark.parametrize(("name", "args", "expected"), TABLE)
def test_numeric_function(name: str, args: tuple[Any, ...], expected: Any) -> None:
    result = call(name, *args)
    if isinstance(expected, float):
        assert result == pytest.approx(expected)
    else:
        assert result == expected
    assert type(result) is type(expected)


@pytest.mark.parametrize(
    "name",
    ["ABS", "SIGN", "CEIL", "FLOOR", "SQRT", "EXP", "LN", "COS", "BITNOT"],
)
def test_null_gives_null(name: str) -> None:
    assert call(name, None) is None


ERRORS = [
    ("MOD", (1, 0), "MOD: division by zero (1, 0)"),
    ("SQRT", (-1,), "SQRT: -1 is negative"),
    ("LN", (0,), "LN: 0 is outside the function's domain"),
    ("ACOS", (2,), "ACOS: 2 is outside the function's domain"),
    ("ROUND", (D("1.5"), 0, "ROUND_SIDEWAYS"), "ROUND: unknown MODE 'ROUND_SIDEWAYS'"),
    ("ROUND", (D("1.5"), D("1.5"), None), "ROUND: places must be INTEGER, not DECIMAL 1.5"),
    ("BITAND", (1, 1.5), "BITAND: argument must be INTEGER, not FLOAT 1.5E+0"),
    ("ABS", ("abc",), "ABS: argument must be numeric, not CHARACTER 'abc'"),
    ("ABS", (-(2**63),), "INTEGER overflow: ABS(-9223372036854775808)"),
    ("POWER", (10, 19), "INTEGER overflow: POWER(10, 19)"),
    ("POWER", (0, -1), "POWER: 0 raised to the negative power -1"),
    ("POWER", (-8, 0.5), "POWER: a negative base -8 with the fractional exponent 5E-1"),
]


@pytest.mark.parametrize(("name", "args", "message"), ERRORS)
def test_numeric_errors(name: str, args: tuple[Any, ...], message: str) -> None:
    with pytest.raises(EsqlValueError) as info:
        call(name, *args)
    assert str(info.value).startswith(message)


def test_rand_is_seedable_and_in_range() -> None:
    first = call("RAND", 42)
    again = call("RAND", 42)
    assert first == again
    assert all(0.0 <= call("RAND") < 1.0 for _ in range(100))


# -- DECIMAL and INTEGER arithmetic vs Python's decimal ---------------------------------------

EXACT = decimal.Context(prec=10_000, Emax=10**8, Emin=-(10**8))
DIV = decimal.Context(prec=34, rounding=decimal.ROUND_HALF_UP, Emax=10**8, Emin=-(10**8))

decimals = st.decimals(
    allow_nan=False, allow_infinity=False, min_value=-(10**30), max_value=10**30, places=None
)
int64 = st.integers(min_value=-(2**63), max_value=2**63 - 1)


@settings(max_examples=500, deadline=None)
@given(decimals, decimals)
def test_decimal_add_sub_mul_are_exact(a: D, b: D) -> None:
    assert v.add(a, b) == EXACT.add(a, b)
    assert v.sub(a, b) == EXACT.subtract(a, b)
    assert v.mul(a, b) == EXACT.multiply(a, b)


@settings(max_examples=500, deadline=None)
@given(decimals, decimals.filter(lambda d: d != 0))
def test_decimal_division_keeps_34_digits_half_up(a: D, b: D) -> None:
    assert v.div(a, b) == DIV.divide(a, b)


@settings(max_examples=500, deadline=None)
@given(int64, int64)
def test_integer_arithmetic_is_64_bit_checked(a: int, b: int) -> None:
    for fn, exact in ((v.add, a + b), (v.sub, a - b), (v.mul, a * b)):
        if -(2**63) <= exact < 2**63:
            assert fn(a, b) == exact
        else:
            with pytest.raises(EsqlValueError, match="INTEGER overflow"):
                fn(a, b)


@settings(max_examples=500, deadline=None)
@given(int64, int64.filter(lambda n: n != 0))
def test_integer_division_truncates_toward_zero(a: int, b: int) -> None:
    q = abs(a) // abs(b) * (1 if (a >= 0) == (b >= 0) else -1)
    if -(2**63) <= q < 2**63:
        assert v.div(a, b) == q
        assert call("MOD", a, b) == a - q * b


@settings(max_examples=300, deadline=None)
@given(int64, decimals)
def test_integer_with_decimal_promotes_to_decimal(a: int, b: D) -> None:
    r = v.add(a, b)
    assert type(r) is D
    assert r == EXACT.add(D(a), b)


@settings(max_examples=300, deadline=None)
@given(
    decimals,
    st.integers(-5, 8),
    st.sampled_from(
        sorted(
            [
                "ROUND_UP",
                "ROUND_DOWN",
                "ROUND_HALF_UP",
                "ROUND_HALF_EVEN",
                "ROUND_HALF_DOWN",
                "ROUND_CEILING",
                "ROUND_FLOOR",
            ]
        )
    ),
)
def test_round_matches_decimal_quantize(d: D, places: int, mode: str) -> None:
    expected = d.quantize(D(1).scaleb(-places), rounding=getattr(decimal, mode), context=EXACT)
    assert call("ROUND", d, places, mode) == expected
