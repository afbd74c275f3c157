"""Datetime functions and datetime/INTERVAL arithmetic."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
from esql import values as v
from esql.functions import ENVIRONMENT
from esql.types import GmtTime, GmtTimestamp, Interval, Time, Timestamp
from esql.values import EsqlValueError
from hypothesis import given, settings
from hypothesis import strategies as st


def call(name: str, *args: Any) -> Any:
    return ENVIRONMENT[name].impl(*args)


def iv(text: str, q: str) -> Interval:
    return v.literal("INTERVAL", text, q)  # type: ignore[no-any-return]


DAY = dt.date(2024, 2, 29)  # a Thursday in a leap year
TS = Timestamp(2024, 2, 29, 13, 45, 30, 250000)

EXTRACT = [
    ("YEAR", DAY, 2024),
    ("MONTH", DAY, 2),
    ("DAY", DAY, 29),
    ("DAYOFYEAR", DAY, 60),
    ("DAYOFWEEK", DAY, 5),  # Sunday = 1
    ("DAYOFWEEK", dt.date(2024, 3, 3), 1),
    ("QUARTEROFYEAR", DAY, 1),
    ("QUARTEROFYEAR", dt.date(2024, 10, 1), 4),
    ("WEEKOFYEAR", DAY, 9),
    ("WEEKOFMONTH", DAY, 5),
    ("WEEKOFMONTH", dt.date(2024, 3, 1), 1),
    ("WEEKOFMONTH", dt.date(2024, 3, 3), 2),
    ("ISLEAPYEAR", DAY, True),
    ("ISLEAPYEAR", dt.date(1900, 1, 1), False),
    ("DAYS", dt.date(1, 1, 1), 1),
    ("DAYS", dt.date(1, 1, 31), 31),
    ("MONTHS", dt.date(1, 3, 1), 3),
    ("QUARTERS", dt.date(2, 4, 1), 6),
    ("WEEKS", dt.date(1, 1, 8), 2),
    ("HOUR", TS, 13),
    ("MINUTE", TS, 45),
    ("SECOND", TS, 30.25),
    ("SECOND", Time(1, 2, 3), 3.0),
    ("YEAR", TS, 2024),
    ("HOUR", GmtTime(23, 0), 23),
    ("DAY", iv("3 04:05:06", "DAY TO SECOND"), 3),
    ("HOUR", iv("3 04:05:06", "DAY TO SECOND"), 4),
    ("MINUTE", iv("3 04:05:06", "DAY TO SECOND"), 5),
    ("SECOND", iv("3 04:05:06.5", "DAY TO SECOND"), 6.5),
    ("SECOND", iv("90.5", "SECOND"), 90.5),
    ("HOUR", iv("30:00", "HOUR TO MINUTE"), 30),
    ("DAYS", iv("30:00", "HOUR TO MINUTE"), 1),
    ("YEAR", iv("2-06", "YEAR TO MONTH"), 2),
    ("MONTH", iv("2-06", "YEAR TO MONTH"), 6),
    ("MONTHS", iv("2-06", "YEAR TO MONTH"), 30),
    ("MINUTE", iv("-90", "MINUTE"), -90),
]


@pytest.mark.parametrize(("part", "source", "expected"), EXTRACT)
def test_extract(part: str, source: Any, expected: Any) -> None:
    result = call("EXTRACT", part, source)
    assert result == expected
    assert type(result) is type(expected)


@pytest.mark.parametrize(
    ("part", "source", "message"),
    [
        ("HOUR", DAY, "EXTRACT: HOUR cannot be extracted from DATE DATE '2024-02-29'"),
        ("YEAR", Time(1, 0), "EXTRACT: YEAR cannot be extracted from TIME TIME '01:00:00'"),
        ("FORTNIGHT", DAY, "EXTRACT: unknown part 'FORTNIGHT'"),
        ("YEAR", "2024-01-01", "EXTRACT: source must be a datetime or INTERVAL, not CHARACTER '2024-01-01'"),
        ("DAY", iv("1", "YEAR"), "EXTRACT: DAY cannot be extracted from INTERVAL YEAR"),
    ],
)
def test_extract_errors(part: str, source: Any, message: str) -> None:
    with pytest.raises(EsqlValueError) as info:
        call("EXTRACT", part, source)
    assert str(info.value).startswith(message)


def test_extract_of_null_is_null() -> None:
    assert call("EXTRACT", "YEAR", None) is None


def test_current_values_have_esql_types_and_follow_the_clock() -> None:
    before = dt.datetime.now(dt.UTC).replace(tzinfo=None)
    gmt = call("CURRENT_GMTTIMESTAMP")
    after = dt.datetime.now(dt.UTC).replace(tzinfo=None)
    assert type(gmt) is GmtTimestamp
    assert before <= gmt <= after
    assert type(call("CURRENT_TIMESTAMP")) is Timestamp
    assert type(call("CURRENT_DATE")) is dt.date
    assert type(call("CURRENT_GMTDATE")) is dt.date
    assert type(call("CURRENT_TIME")) is Time
    assert type(call("CURRENT_GMTTIME")) is GmtTime
    local = call("CURRENT_TIMESTAMP")
    zone = call("LOCAL_TIMEZONE")
    assert zone.qualifier == "HOUR TO MINUTE"
    # local time minus the zone offset is GMT (to within the moments between the two calls)
    gmt_again = v.sub(local, zone)
    assert abs((gmt_again - gmt).total_seconds()) < 3600


ARITH = [
    (v.add, DAY, iv("1", "DAY"), dt.date(2024, 3, 1)),
    (v.add, dt.date(2024, 1, 31), iv("1", "MONTH"), dt.date(2024, 2, 29)),
    (v.add, dt.date(2023, 1, 31), iv("1", "MONTH"), dt.date(2023, 2, 28)),
    (v.add, DAY, iv("1", "YEAR"), dt.date(2025, 2, 28)),
    (v.sub, DAY, iv("1-1", "YEAR TO MONTH"), dt.date(2023, 1, 29)),
    (v.add, DAY, iv("25", "HOUR"), dt.date(2024, 3, 1)),
    (v.add, iv("1", "DAY"), DAY, dt.date(2024, 3, 1)),
    (v.add, Time(23, 30), iv("45", "MINUTE"), Time(0, 15)),
    (v.sub, Time(0, 15), iv("30", "MINUTE"), Time(23, 45)),
    (v.add, GmtTime(1, 0), iv("1", "HOUR"), GmtTime(2, 0)),
    (v.add, TS, iv("1:15", "HOUR TO MINUTE"), Timestamp(2024, 2, 29, 15, 0, 30, 250000)),
    (v.add, TS, iv("12", "MONTH"), Timestamp(2025, 2, 28, 13, 45, 30, 250000)),
    (v.add, GmtTimestamp(2024, 1, 1), iv("0.5", "SECOND"), GmtTimestamp(2024, 1, 1, 0, 0, 0, 500000)),
    (v.add, iv("1", "HOUR"), iv("30", "MINUTE"), iv("1:30", "HOUR TO MINUTE")),
    (v.sub, iv("1", "YEAR"), iv("1", "MONTH"), iv("11", "MONTH")),
    (v.mul, iv("1:30", "HOUR TO MINUTE"), 2, iv("3:00", "HOUR TO MINUTE")),
    (v.mul, 3, iv("1", "MONTH"), iv("3", "MONTH")),
    (v.div, iv("3", "HOUR"), 2, iv("90", "MINUTE")),
    (v.add, DAY, Time(1, 2, 3), Timestamp(2024, 2, 29, 1, 2, 3)),
]


@pytest.mark.parametrize(("fn", "a", "b", "expected"), ARITH)
def test_datetime_arithmetic(fn: Any, a: Any, b: Any, expected: Any) -> None:
    result = fn(a, b)
    assert result == expected
    assert type(result) is type(expected)


DIFFERENCES = [
    (Timestamp(2024, 3, 1), Timestamp(2024, 2, 28, 12), "HOUR", iv("36", "HOUR")),
    (Timestamp(2024, 3, 1), Timestamp(2024, 2, 28, 12), "DAY", iv("1", "DAY")),
    (Timestamp(2024, 3, 1), Timestamp(2024, 2, 28, 12), "DAY TO HOUR", iv("1 12", "DAY TO HOUR")),
    (Timestamp(2024, 3, 1, 0, 0, 1, 500000), Timestamp(2024, 3, 1), "SECOND", iv("1.5", "SECOND")),
    (Timestamp(2024, 3, 31, 10), Timestamp(2024, 1, 31, 12), "MONTH", iv("1", "MONTH")),
    (dt.date(2024, 3, 31), dt.date(2024, 1, 31), "MONTH", iv("2", "MONTH")),
    (dt.date(2024, 1, 1), dt.date(2020, 6, 1), "YEAR", iv("3", "YEAR")),
    (dt.date(2024, 1, 1), dt.date(2020, 6, 1), "YEAR TO MONTH", iv("3-7", "YEAR TO MONTH")),
    (dt.date(2020, 6, 1), dt.date(2024, 1, 1), "MONTH", iv("-43", "MONTH")),
    (Time(10, 0), Time(8, 30), "MINUTE", iv("90", "MINUTE")),
    (DAY, Timestamp(2024, 2, 28, 18), "HOUR", iv("6", "HOUR")),
]


@pytest.mark.parametrize(("a", "b", "qualifier", "expected"), DIFFERENCES)
def test_difference_with_qualifier(a: Any, b: Any, qualifier: str, expected: Interval) -> None:
    assert v.difference(a, b, qualifier) == expected
    # the compiler's (a - b) qualifier: sub() then qualify()
    qualified = v.qualify(v.sub(a, b), qualifier)
    assert qualified == expected
    assert qualified is not None and qualified.qualifier == expected.qualifier


@pytest.mark.parametrize(
    ("fn", "a", "b", "message"),
    [
        (v.add, Time(1, 0), iv("1", "MONTH"), "cannot add INTERVAL MONTH to a TIME: it holds no date"),
        (v.add, iv("1", "MONTH"), iv("1", "DAY"), "cannot add INTERVAL MONTH and INTERVAL DAY"),
        (v.div, iv("1", "DAY"), 0, "division of an INTERVAL by zero"),
        (v.add, dt.date(9999, 12, 1), iv("1", "MONTH"), "date out of range after adding 1 months"),
        (v.sub, Time(1, 0), DAY, "cannot subtract DATE from TIME"),
    ],
)
def test_datetime_arithmetic_errors(fn: Any, a: Any, b: Any, message: str) -> None:
    with pytest.raises(EsqlValueError) as info:
        fn(a, b)
    assert str(info.value).startswith(message)


def test_qualify_errors() -> None:
    with pytest.raises(EsqlValueError, match="cannot express INTERVAL DAY as INTERVAL MONTH"):
        v.qualify(iv("3", "DAY"), "MONTH")
    with pytest.raises(EsqlValueError, match="an INTERVAL qualifier needs an INTERVAL, not INTEGER 3"):
        v.qualify(3, "DAY")
    assert v.qualify(None, "DAY") is None


dates = st.dates(min_value=dt.date(1, 1, 1), max_value=dt.date(9000, 12, 31))
day_seconds = st.integers(min_value=-(10**14), max_value=10**14)


@settings(max_examples=300, deadline=None)
@given(st.datetimes(min_value=dt.datetime(100, 1, 1), max_value=dt.datetime(9000, 1, 1)), day_seconds)
def test_timestamp_plus_interval_minus_interval(moment: dt.datetime, micros: int) -> None:
    ts = Timestamp.of(moment)
    step = Interval(micros=micros, qualifier="DAY TO SECOND")
    moved = v.add(ts, step)
    assert v.sub(moved, step) == ts
    assert v.difference(moved, ts, "DAY TO SECOND") == step


@settings(max_examples=300, deadline=None)
@given(dates, dates)
def test_date_difference_in_days_matches_ordinals(a: dt.date, b: dt.date) -> None:
    diff = v.difference(a, b, "DAY")
    assert diff is not None
    assert call("EXTRACT", "DAYS", diff) == a.toordinal() - b.toordinal()
    assert v.add(b, diff) == a


@settings(max_examples=300, deadline=None)
@given(dates, st.integers(min_value=-1000, max_value=1000))
def test_adding_months_lands_in_the_right_month(d: dt.date, months: int) -> None:
    total = d.year * 12 + d.month - 1 + months
    if not 12 <= total < 9999 * 12:
        return
    moved = v.add(d, Interval(months=months, qualifier="MONTH"))
    year, month0 = divmod(total, 12)
    assert (moved.year, moved.month) == (year, month0 + 1)
    assert moved.day <= d.day


def test_current_values_are_one_moment_within_an_invocation() -> None:
    from esql.functions import invocation

    instant = dt.datetime(2024, 2, 29, 12, 0, 0, 123456)
    with invocation(instant=instant):
        first = call("CURRENT_GMTTIMESTAMP")
        assert first == GmtTimestamp.of(instant)
        assert call("CURRENT_GMTTIMESTAMP") == first
        assert call("CURRENT_GMTDATE") == instant.date()
        assert call("CURRENT_GMTTIME") == GmtTime(12, 0, 0, 123456)
        local = call("CURRENT_TIMESTAMP")
        # the local moment is the same instant, shifted by the local zone
        assert v.sub(local, call("LOCAL_TIMEZONE")) == first
        assert call("CURRENT_DATE") == local.date()
        assert call("CURRENT_TIME") == Time(local.hour, local.minute, local.second, local.microsecond)
    # outside an invocation the clock moves on
    assert call("CURRENT_GMTTIMESTAMP") != first


def test_an_invocation_reads_the_clock_when_first_asked_then_keeps_that_moment() -> None:
    import time

    from esql.functions import invocation

    before = GmtTimestamp.of(dt.datetime.now(dt.UTC).replace(tzinfo=None))
    with invocation():
        time.sleep(0.002)
        first = call("CURRENT_GMTTIMESTAMP")
        assert first > before  # read when asked for, not when the invocation began
        time.sleep(0.002)
        assert call("CURRENT_GMTTIMESTAMP") == first
        assert call("CURRENT_TIMESTAMP") == call("CURRENT_TIMESTAMP")
    with invocation():
        assert call("CURRENT_GMTTIMESTAMP") > first  # the next invocation has its own moment
