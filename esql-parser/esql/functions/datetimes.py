"""ESQL datetime functions: the CURRENT_… values, LOCAL_TIMEZONE and EXTRACT."""

from __future__ import annotations

import calendar
import datetime as _dt
import time as _time
from contextvars import ContextVar
from typing import Any

from esql.functions.registry import builtin
from esql.types import (
    MICROS_PER_DAY,
    MICROS_PER_HOUR,
    MICROS_PER_MINUTE,
    GmtTime,
    GmtTimestamp,
    Interval,
    Time,
    Timestamp,
)
from esql.values import EsqlValueError, _show, type_name


class Moment:
    """The one instant (GMT, naive) of a node invocation, read off the clock when first asked for:
    most invocations never ask."""

    __slots__ = ("value",)

    def __init__(self, value: _dt.datetime | None = None) -> None:
        self.value = value

    def get(self) -> _dt.datetime:
        if self.value is None:
            self.value = _dt.datetime.now(_dt.UTC).replace(tzinfo=None)
        return self.value


#: The moment of the node invocation running now: every CURRENT_… call within one node
#: invocation gives the same moment, as IBM documents. Unset, each call reads the clock.
INVOCATION_INSTANT: ContextVar[Moment | None] = ContextVar("esql_invocation_instant", default=None)


def _now_gmt() -> _dt.datetime:
    frozen = INVOCATION_INSTANT.get()
    if frozen is not None:
        return frozen.get()
    return _dt.datetime.now(_dt.UTC).replace(tzinfo=None)


def _now_local() -> _dt.datetime:
    frozen = INVOCATION_INSTANT.get()
    if frozen is None:
        return _dt.datetime.now()
    return frozen.get().replace(tzinfo=_dt.UTC).astimezone().replace(tzinfo=None)


@builtin("CURRENT_DATE", "datetime", "CURRENT_DATE → DATE", 0, 0)
def current_date() -> _dt.date:
    """Today's local date."""
    return _now_local().date()


@builtin("CURRENT_TIME", "datetime", "CURRENT_TIME → TIME", 0, 0)
def current_time() -> Time:
    """The local time of day."""
    now = _now_local()
    return Time(now.hour, now.minute, now.second, now.microsecond)


@builtin("CURRENT_TIMESTAMP", "datetime", "CURRENT_TIMESTAMP → TIMESTAMP", 0, 0)
def current_timestamp() -> Timestamp:
    """The local date and time of day."""
    return Timestamp.of(_now_local())


@builtin("CURRENT_GMTDATE", "datetime", "CURRENT_GMTDATE → DATE", 0, 0)
def current_gmtdate() -> _dt.date:
    """Today's date in GMT."""
    return _now_gmt().date()


@builtin("CURRENT_GMTTIME", "datetime", "CURRENT_GMTTIME → GMTTIME", 0, 0)
def current_gmttime() -> GmtTime:
    """The time of day in GMT."""
    now = _now_gmt()
    return GmtTime(now.hour, now.minute, now.second, now.microsecond)


@builtin("CURRENT_GMTTIMESTAMP", "datetime", "CURRENT_GMTTIMESTAMP → GMTTIMESTAMP", 0, 0)
def current_gmttimestamp() -> GmtTimestamp:
    """The date and time of day in GMT."""
    return GmtTimestamp.of(_now_gmt())


@builtin("LOCAL_TIMEZONE", "datetime", "LOCAL_TIMEZONE → INTERVAL HOUR TO MINUTE", 0, 0)
def local_timezone() -> Interval:
    """The local time zone's offset from GMT (positive east of Greenwich)."""
    now = _time.time()
    offset = _dt.datetime.fromtimestamp(now).replace(microsecond=0) - _dt.datetime.utcfromtimestamp(
        now
    ).replace(microsecond=0)
    return Interval(micros=int(offset.total_seconds()) * 1_000_000, qualifier="HOUR TO MINUTE")


_PARTS = (
    "YEAR",
    "MONTH",
    "DAY",
    "HOUR",
    "MINUTE",
    "SECOND",
    "DAYS",
    "DAYOFYEAR",
    "DAYOFWEEK",
    "MONTHS",
    "QUARTEROFYEAR",
    "QUARTERS",
    "WEEKS",
    "WEEKOFYEAR",
    "WEEKOFMONTH",
    "ISLEAPYEAR",
)


def _extract_interval(part: str, iv: Interval) -> Any:
    if iv.year_month:
        sign = -1 if iv.months < 0 else 1
        months = abs(iv.months)
        if part == "YEAR":
            return sign * (months // 12)
        if part == "MONTH":
            return sign * (months % 12) if iv.qualifier == "YEAR TO MONTH" else sign * months
        if part == "MONTHS":
            return iv.months
        raise EsqlValueError(f"EXTRACT: {part} cannot be extracted from INTERVAL {iv.qualifier}")
    sign = -1 if iv.micros < 0 else 1
    rest = abs(iv.micros)
    first = iv.qualifier.split(" TO ")[0]
    units = {"DAY": MICROS_PER_DAY, "HOUR": MICROS_PER_HOUR, "MINUTE": MICROS_PER_MINUTE}
    if part == "DAYS":
        return sign * (rest // MICROS_PER_DAY)
    if part in ("DAY", "HOUR", "MINUTE"):
        order = ("DAY", "HOUR", "MINUTE", "SECOND")
        # the leading field holds the whole amount; later fields are what is left below the larger ones
        if order.index(part) < order.index(first):
            return 0
        if part == first:
            return sign * (rest // units[part])
        above = order[order.index(part) - 1]
        return sign * ((rest % units[above]) // units[part])
    if part == "SECOND":
        micros = rest if first == "SECOND" else rest % MICROS_PER_MINUTE
        return sign * micros / 1_000_000
    raise EsqlValueError(f"EXTRACT: {part} cannot be extracted from INTERVAL {iv.qualifier}")


@builtin("EXTRACT", "datetime", "EXTRACT(part FROM datetime) → INTEGER (SECOND: FLOAT)", 2, 2)
def extract(part: Any, source: Any) -> Any:
    """One field of a DATE, TIME, TIMESTAMP or INTERVAL (YEAR … SECOND, DAYOFWEEK, ISLEAPYEAR …)."""
    if source is None:
        return None
    p = str(part).strip().upper()
    if p not in _PARTS:
        raise EsqlValueError(f"EXTRACT: unknown part {_show(part)} (expected one of {', '.join(_PARTS)})")
    if isinstance(source, Interval):
        return _extract_interval(p, source)
    has_date = isinstance(source, _dt.date)
    has_time = isinstance(source, _dt.datetime | _dt.time)
    if not has_date and not has_time:
        raise EsqlValueError(
            f"EXTRACT: source must be a datetime or INTERVAL, not {type_name(source)} {_show(source)}"
        )
    if p in ("HOUR", "MINUTE", "SECOND"):
        if not has_time:
            raise EsqlValueError(f"EXTRACT: {p} cannot be extracted from DATE {_show(source)}")
        if p == "HOUR":
            return source.hour  # type: ignore[union-attr]
        if p == "MINUTE":
            return source.minute  # type: ignore[union-attr]
        # IBM's EXTRACT gives SECOND as a FLOAT, so fractions of a second survive
        return source.second + source.microsecond / 1_000_000  # type: ignore[union-attr]
    if not has_date:
        raise EsqlValueError(f"EXTRACT: {p} cannot be extracted from {type_name(source)} {_show(source)}")
    d: _dt.date = source  # type: ignore[assignment]
    if p == "YEAR":
        return d.year
    if p == "MONTH":
        return d.month
    if p == "DAY":
        return d.day
    if p == "DAYOFYEAR":
        return d.timetuple().tm_yday
    if p == "DAYOFWEEK":
        return d.isoweekday() % 7 + 1  # Sunday is 1
    if p == "QUARTEROFYEAR":
        return (d.month - 1) // 3 + 1
    if p == "WEEKOFYEAR":
        return d.isocalendar()[1]
    if p == "WEEKOFMONTH":
        first = (_dt.date(d.year, d.month, 1).isoweekday()) % 7  # Sunday-based offset of the 1st
        return (d.day + first - 1) // 7 + 1
    if p == "ISLEAPYEAR":
        return calendar.isleap(d.year)
    # counts since 0001-01-01, the start of the ESQL calendar
    if p == "DAYS":
        return _dt.date(d.year, d.month, d.day).toordinal()
    if p == "MONTHS":
        return (d.year - 1) * 12 + d.month
    if p == "QUARTERS":
        return (d.year - 1) * 4 + (d.month - 1) // 3 + 1
    if p == "WEEKS":
        return (_dt.date(d.year, d.month, d.day).toordinal() - 1) // 7 + 1
    raise EsqlValueError(f"EXTRACT: unknown part {p}")
