"""Any value of any ESQL type given to any operator, CAST or built-in fails only with EsqlValueError."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from typing import Any

import pytest
from esql import values as v
from esql.cast import cast
from esql.functions import ENVIRONMENT
from esql.tree import Element
from esql.types import Bit, GmtTime, GmtTimestamp, Interval, Time, Timestamp
from esql.values import EsqlValueError
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

_QUALIFIERS = ["YEAR", "YEAR TO MONTH", "MONTH", "DAY", "DAY TO SECOND", "HOUR TO MINUTE", "MINUTE", "SECOND"]


def _interval(q: str, n: int) -> Interval:
    if q in ("YEAR", "YEAR TO MONTH", "MONTH"):
        return Interval(months=n * 12 if q == "YEAR" else n, qualifier=q)
    return Interval(micros=n * 1_000_000, qualifier=q)


def _element() -> Element:
    root = Element("Root")
    body = root.add("XMLNSC")
    body.add("a", "1")
    return body


esql_values = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**63), max_value=2**63 - 1),
    st.integers(min_value=-5, max_value=40),
    st.floats(),
    st.decimals(allow_nan=True, allow_infinity=True),
    st.decimals(min_value=-1000, max_value=1000, places=3),
    st.text(max_size=12),
    st.sampled_from(["", " ", "1", "-0x1F", "2024-02-29", "TRUE", "1e400", "%_", "X'0D'", "B'01'", "1:30"]),
    st.binary(max_size=12),
    st.text(alphabet="01", max_size=10).map(Bit),
    st.dates(),
    st.times().map(Time.of),
    st.times().map(GmtTime.of),
    st.datetimes().map(Timestamp.of),
    st.datetimes().map(GmtTimestamp.of),
    st.builds(_interval, st.sampled_from(_QUALIFIERS), st.integers(-(10**6), 10**6)),
    st.lists(st.integers(0, 3), max_size=3),
    st.just(None).map(lambda _: _element()),
)

TYPES = [
    "CHARACTER",
    "INTEGER",
    "FLOAT",
    "DECIMAL",
    "DECIMAL(5, 2)",
    "BOOLEAN",
    "BLOB",
    "BIT",
    "DATE",
    "TIME",
    "GMTTIME",
    "TIMESTAMP",
    "GMTTIMESTAMP",
    "INTERVAL DAY",
    "INTERVAL YEAR TO MONTH",
    "INTERVAL",
]
FORMATS = st.one_of(
    st.none(),
    st.sampled_from(
        ["#,##0.00", "0.###E0", "yyyy-MM-dd", "yyyyMMddHHmmss", "I", "h:mm a", "'x", ";", "E0", "0%"]
    ),
    st.text(alphabet="#0,.;'yMdHhmsSaEZXx -:E%", max_size=10),
)

OPERATORS = [v.add, v.sub, v.mul, v.div, v.concat, v.eq, v.ne, v.lt, v.le, v.gt, v.ge, v.and_, v.or_, v.like]


def _only_value_errors(fn: Any, *args: Any, **kwargs: Any) -> None:
    try:
        fn(*args, **kwargs)
    except EsqlValueError as exc:
        assert str(exc), "an EsqlValueError must say what went wrong"


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(OPERATORS), esql_values, esql_values)
def test_operators_fail_only_with_value_errors(op: Any, a: Any, b: Any) -> None:
    _only_value_errors(op, a, b)


@settings(max_examples=300, deadline=None)
@given(esql_values)
def test_unary_operators_fail_only_with_value_errors(a: Any) -> None:
    _only_value_errors(v.neg, a)
    _only_value_errors(v.not_, a)
    _only_value_errors(v.to_element_value, a)
    assert isinstance(v.type_name(a), str)


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(esql_values, st.sampled_from(TYPES), FORMATS, st.sampled_from([None, 1208, 819, 500, 1200, 99999]))
def test_cast_fails_only_with_value_errors(
    value: Any, target: str, fmt: str | None, ccsid: int | None
) -> None:
    _only_value_errors(cast, value, target, format=fmt, ccsid=ccsid)


@settings(max_examples=300, deadline=None)
@given(
    st.sampled_from(["DATE", "TIME", "TIMESTAMP", "GMTTIMESTAMP", "INTERVAL", "X", "B"]),
    st.text(max_size=20),
    st.sampled_from([None, *_QUALIFIERS, "WEEK"]),
)
def test_literals_fail_only_with_value_errors(kind: str, text: str, qualifier: str | None) -> None:
    _only_value_errors(v.literal, kind, text, qualifier)


_SAFE = sorted(name for name in ENVIRONMENT if name not in ("SLEEP",))


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(_SAFE), st.lists(esql_values, max_size=4), st.data())
def test_builtins_fail_only_with_value_errors(name: str, args: list[Any], data: st.DataObject) -> None:
    f = ENVIRONMENT[name]
    high = f.max_args if f.max_args is not None else f.min_args + 3
    if not f.min_args <= len(args) <= high:
        args = (args + [None] * high)[: f.min_args] if len(args) < f.min_args else args[:high]
    if name in ("TRIM",) and len(args) >= 2:
        args[1] = data.draw(st.sampled_from(["BOTH", "LEADING", "TRAILING", "SIDEWAYS", None]))
    if name == "EXTRACT" and args:
        args[0] = data.draw(st.sampled_from(["YEAR", "SECOND", "DAYS", "WEEKOFMONTH", "MONTHS", "BAD"]))
    if name in ("REPLICATE", "SPACE") and args and isinstance(args[-1], int) and args[-1] > 1000:
        args[-1] = 1000
    _only_value_errors(f.impl, *args)


@pytest.mark.parametrize("ccsid", [1208, 819, 37, 1200])
def test_every_byte_value_is_handled_by_ccsid_cast(ccsid: int) -> None:
    for b in range(256):
        _only_value_errors(cast, bytes([b, 0x80, 0xFF]), "CHARACTER", ccsid=ccsid)


def test_datetime_extremes() -> None:
    big = Interval(micros=10**18, qualifier="SECOND")
    for value in (dt.date.max, dt.date.min, Timestamp(9999, 12, 31, 23, 59, 59), Time(23, 59, 59, 999999)):
        _only_value_errors(v.add, value, big)
        _only_value_errors(v.sub, value, big)
        _only_value_errors(v.add, value, Interval(months=10**9, qualifier="MONTH"))
    _only_value_errors(v.mul, big, Decimal("1e30"))
    _only_value_errors(v.mul, big, float("inf"))
    _only_value_errors(v.div, big, float("nan"))
