"""ESQL's own run-time value types (BIT, TIME, GMTTIME, TIMESTAMP, GMTTIMESTAMP, INTERVAL) and datetime arithmetic."""

from __future__ import annotations

import calendar
import datetime as _dt
import re
from decimal import Decimal
from typing import Self

MICROS_PER_SECOND = 1_000_000
MICROS_PER_MINUTE = 60 * MICROS_PER_SECOND
MICROS_PER_HOUR = 60 * MICROS_PER_MINUTE
MICROS_PER_DAY = 24 * MICROS_PER_HOUR


class DatetimeValueError(ValueError):
    """A datetime or interval text or operation that ESQL rejects (wrapped by esql.values)."""


# -- BIT ---------------------------------------------------------------------------------------


class Bit:
    """An ESQL BIT string: an immutable sequence of binary digits (``B'0101'``)."""

    __slots__ = ("_bits",)

    def __init__(self, bits: str = "") -> None:
        if bits.strip("01"):
            raise DatetimeValueError(f"invalid BIT string {bits!r}: only the digits 0 and 1 are allowed")
        self._bits = bits

    @classmethod
    def from_int(cls, value: int, length: int) -> Bit:
        if value < 0:
            value &= (1 << length) - 1
        return cls(format(value, f"0{length}b")[-length:] if length else "")

    @classmethod
    def from_bytes(cls, data: bytes) -> Bit:
        return cls("".join(format(b, "08b") for b in data))

    @property
    def bits(self) -> str:
        return self._bits

    def to_int(self) -> int:
        return int(self._bits, 2) if self._bits else 0

    def to_bytes(self) -> bytes:
        """The bits as bytes, the last byte padded with zero bits on the right."""
        bits = self._bits
        if len(bits) % 8:
            bits += "0" * (8 - len(bits) % 8)
        return bytes(int(bits[i : i + 8], 2) for i in range(0, len(bits), 8))

    def __len__(self) -> int:
        return len(self._bits)

    def __getitem__(self, item: slice | int) -> Bit:
        return Bit(self._bits[item])

    def __add__(self, other: Bit) -> Bit:
        if not isinstance(other, Bit):
            return NotImplemented
        return Bit(self._bits + other._bits)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Bit) and other._bits == self._bits

    def __lt__(self, other: Bit) -> bool:
        return self._bits < other._bits

    def __le__(self, other: Bit) -> bool:
        return self._bits <= other._bits

    def __gt__(self, other: Bit) -> bool:
        return self._bits > other._bits

    def __ge__(self, other: Bit) -> bool:
        return self._bits >= other._bits

    def __hash__(self) -> int:
        return hash(("BIT", self._bits))

    def __str__(self) -> str:
        return f"B'{self._bits}'"

    def __repr__(self) -> str:
        return f"Bit({self._bits!r})"


# -- TIME / GMTTIME --------------------------------------------------------------------------

_TIME_RE = re.compile(r"^\s*(\d{1,2}):(\d{1,2})(?::(\d{1,2})(?:\.(\d{1,9}))?)?\s*$")
_DATE_RE = re.compile(r"^\s*(\d{1,4})-(\d{1,2})-(\d{1,2})\s*$")
_TS_RE = re.compile(
    r"^\s*(\d{1,4})-(\d{1,2})-(\d{1,2})(?:[ T](\d{1,2}):(\d{1,2})(?::(\d{1,2})(?:\.(\d{1,9}))?)?)?\s*$"
)


def _fraction(text: str | None) -> int:
    if not text:
        return 0
    # ESQL keeps microseconds; further digits are truncated, not rounded.
    return int((text + "000000")[:6])


def _time_text(t: _dt.time) -> str:
    text = f"{t.hour:02d}:{t.minute:02d}:{t.second:02d}"
    if t.microsecond:
        text += "." + f"{t.microsecond:06d}".rstrip("0")
    return text


class Time(_dt.time):
    """An ESQL TIME: a local time of day with microseconds."""

    __slots__ = ()

    @classmethod
    def parse(cls, text: str) -> Self:
        m = _TIME_RE.match(text)
        if m is None:
            raise DatetimeValueError(f"invalid {cls.esql_type} text {text!r}: expected hh:mm:ss[.ffffff]")
        try:
            return cls(int(m.group(1)), int(m.group(2)), int(m.group(3) or 0), _fraction(m.group(4)))
        except ValueError as exc:
            raise DatetimeValueError(f"invalid {cls.esql_type} text {text!r}: {exc}") from None

    @classmethod
    def of(cls, value: _dt.time) -> Self:
        return cls(value.hour, value.minute, value.second, value.microsecond)

    @classmethod
    def from_micros(cls, micros: int) -> Self:
        micros %= MICROS_PER_DAY
        hour, rest = divmod(micros, MICROS_PER_HOUR)
        minute, rest = divmod(rest, MICROS_PER_MINUTE)
        second, micro = divmod(rest, MICROS_PER_SECOND)
        return cls(hour, minute, second, micro)

    def micros(self) -> int:
        return (
            self.hour * MICROS_PER_HOUR
            + self.minute * MICROS_PER_MINUTE
            + self.second * MICROS_PER_SECOND
            + self.microsecond
        )

    esql_type = "TIME"

    def text(self) -> str:
        return _time_text(self)

    def literal_text(self) -> str:
        """The ESQL literal, ``TIME '13:45:00'``, which CAST AS CHARACTER gives."""
        return f"{self.esql_type} '{_time_text(self)}'"

    def __str__(self) -> str:
        return _time_text(self)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({_time_text(self)!r})"


class GmtTime(Time):
    """An ESQL GMTTIME: a time of day in Greenwich Mean Time."""

    __slots__ = ()
    esql_type = "GMTTIME"


# -- TIMESTAMP / GMTTIMESTAMP ----------------------------------------------------------------


class Timestamp(_dt.datetime):
    """An ESQL TIMESTAMP: a local date and time of day with microseconds (no zone)."""

    __slots__ = ()
    esql_type = "TIMESTAMP"

    @classmethod
    def parse(cls, text: str) -> Self:
        m = _TS_RE.match(text)
        if m is None:
            raise DatetimeValueError(
                f"invalid {cls.esql_type} text {text!r}: expected yyyy-mm-dd hh:mm:ss[.ffffff]"
            )
        try:
            return cls(
                int(m.group(1)),
                int(m.group(2)),
                int(m.group(3)),
                int(m.group(4) or 0),
                int(m.group(5) or 0),
                int(m.group(6) or 0),
                _fraction(m.group(7)),
            )
        except ValueError as exc:
            raise DatetimeValueError(f"invalid {cls.esql_type} text {text!r}: {exc}") from None

    @classmethod
    def of(cls, value: _dt.datetime | _dt.date) -> Self:
        if isinstance(value, _dt.datetime):
            return cls(
                value.year, value.month, value.day, value.hour, value.minute, value.second, value.microsecond
            )
        return cls(value.year, value.month, value.day)

    def text(self) -> str:
        return f"{self.year:04d}-{self.month:02d}-{self.day:02d} {_time_text(self.time())}"

    def literal_text(self) -> str:
        """The ESQL literal, ``TIMESTAMP '2024-02-29 13:45:00'``, which CAST AS CHARACTER gives."""
        return f"{self.esql_type} '{self.text()}'"

    def __str__(self) -> str:
        return self.text()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.text()!r})"


class GmtTimestamp(Timestamp):
    """An ESQL GMTTIMESTAMP: a date and time of day in Greenwich Mean Time."""

    __slots__ = ()
    esql_type = "GMTTIMESTAMP"


def parse_date(text: str) -> _dt.date:
    m = _DATE_RE.match(text)
    if m is None:
        raise DatetimeValueError(f"invalid DATE text {text!r}: expected yyyy-mm-dd")
    try:
        return _dt.date(int(m.group(1)), int(m.group(2)), int(m.group(3)))
    except ValueError as exc:
        raise DatetimeValueError(f"invalid DATE text {text!r}: {exc}") from None


def date_text(d: _dt.date) -> str:
    return f"{d.year:04d}-{d.month:02d}-{d.day:02d}"


# -- INTERVAL --------------------------------------------------------------------------------

#: qualifier → (first field, last field)
QUALIFIERS: dict[str, tuple[str, str]] = {
    "YEAR": ("YEAR", "YEAR"),
    "YEAR TO MONTH": ("YEAR", "MONTH"),
    "MONTH": ("MONTH", "MONTH"),
    "DAY": ("DAY", "DAY"),
    "DAY TO HOUR": ("DAY", "HOUR"),
    "DAY TO MINUTE": ("DAY", "MINUTE"),
    "DAY TO SECOND": ("DAY", "SECOND"),
    "HOUR": ("HOUR", "HOUR"),
    "HOUR TO MINUTE": ("HOUR", "MINUTE"),
    "HOUR TO SECOND": ("HOUR", "SECOND"),
    "MINUTE": ("MINUTE", "MINUTE"),
    "MINUTE TO SECOND": ("MINUTE", "SECOND"),
    "SECOND": ("SECOND", "SECOND"),
}
YEAR_MONTH = frozenset({"YEAR", "YEAR TO MONTH", "MONTH"})
_UNIT_MICROS = {
    "DAY": MICROS_PER_DAY,
    "HOUR": MICROS_PER_HOUR,
    "MINUTE": MICROS_PER_MINUTE,
    "SECOND": MICROS_PER_SECOND,
}
_DS_FIELDS = ("DAY", "HOUR", "MINUTE", "SECOND")
_DS_SEPARATORS = {"HOUR": " ", "MINUTE": ":", "SECOND": ":"}


def normalize_qualifier(qualifier: str) -> str:
    q = " ".join(qualifier.upper().split())
    if q not in QUALIFIERS:
        raise DatetimeValueError(
            f"unknown INTERVAL qualifier {qualifier!r} (expected one of {', '.join(QUALIFIERS)})"
        )
    return q


class Interval:
    """An ESQL INTERVAL: either year-month (a number of months) or day-second (microseconds).

    The qualifier says which fields the interval is written with; the value itself is one signed
    count, so ``INTERVAL '90' MINUTE`` equals ``INTERVAL '1:30' HOUR TO MINUTE``.
    """

    __slots__ = ("months", "micros", "qualifier")

    def __init__(self, *, months: int = 0, micros: int = 0, qualifier: str = "DAY TO SECOND") -> None:
        self.qualifier = qualifier
        if qualifier in YEAR_MONTH:
            if micros:
                raise DatetimeValueError("a year-month INTERVAL cannot hold days, hours, minutes or seconds")
            self.months = months
            self.micros = 0
        else:
            if months:
                raise DatetimeValueError("a day-second INTERVAL cannot hold years or months")
            self.months = 0
            self.micros = micros

    @property
    def year_month(self) -> bool:
        return self.qualifier in YEAR_MONTH

    @classmethod
    def parse(cls, text: str, qualifier: str) -> Interval:
        q = normalize_qualifier(qualifier)
        raw = text.strip()
        negative = raw.startswith("-")
        body = raw[1:].strip() if negative or raw.startswith("+") else raw
        first, last = QUALIFIERS[q]
        try:
            if q in YEAR_MONTH:
                if q == "YEAR TO MONTH":
                    m = re.fullmatch(r"(\d+)-(\d+)", body)
                    if m is None:
                        raise DatetimeValueError("expected years-months, e.g. '1-6'")
                    if int(m.group(2)) > 11:
                        raise DatetimeValueError("months must be 0 to 11")
                    months = int(m.group(1)) * 12 + int(m.group(2))
                elif re.fullmatch(r"\d+", body):
                    months = int(body) * (12 if q == "YEAR" else 1)
                else:
                    raise DatetimeValueError(f"expected a whole number of {first.lower()}s")
                return cls(months=-months if negative else months, qualifier=q)
            fields = _DS_FIELDS[_DS_FIELDS.index(first) : _DS_FIELDS.index(last) + 1]
            pattern = ""
            for i, name in enumerate(fields):
                if i:
                    pattern += re.escape(_DS_SEPARATORS[name])
                digits = r"(\d+)" if i == 0 else r"(\d{1,2})"
                if name == "SECOND":
                    digits = r"(\d+(?:\.\d*)?|\.\d+)" if i == 0 else r"(\d{1,2}(?:\.\d*)?)"
                pattern += digits
            m = re.fullmatch(pattern, body)
            if m is None:
                shape = "".join((_DS_SEPARATORS[f] if i else "") + f[0].lower() for i, f in enumerate(fields))
                raise DatetimeValueError(f"expected the form '{shape}'")
            micros = 0
            for i, name in enumerate(fields):
                part = m.group(i + 1)
                limit = {"HOUR": 24, "MINUTE": 60, "SECOND": 60}.get(name)
                if name == "SECOND":
                    amount = int(Decimal(part) * MICROS_PER_SECOND)
                    if i and limit and Decimal(part) >= limit:
                        raise DatetimeValueError("seconds must be below 60")
                else:
                    if i and limit and int(part) >= limit:
                        raise DatetimeValueError(f"{name.lower()}s must be below {limit}")
                    amount = int(part) * _UNIT_MICROS[name]
                micros += amount
            return cls(micros=-micros if negative else micros, qualifier=q)
        except DatetimeValueError as exc:
            raise DatetimeValueError(f"invalid INTERVAL {q} text {text!r}: {exc}") from None

    @classmethod
    def from_timedelta(cls, delta: _dt.timedelta, qualifier: str = "DAY TO SECOND") -> Interval:
        micros = (delta.days * 86400 + delta.seconds) * MICROS_PER_SECOND + delta.microseconds
        return cls(micros=micros, qualifier=qualifier)

    def to_timedelta(self) -> _dt.timedelta:
        if self.year_month:
            raise DatetimeValueError("a year-month INTERVAL has no fixed length in days")
        return _dt.timedelta(microseconds=self.micros)

    def with_qualifier(self, qualifier: str) -> Interval:
        q = normalize_qualifier(qualifier)
        if (q in YEAR_MONTH) != self.year_month:
            raise DatetimeValueError(f"cannot express INTERVAL {self.qualifier} as INTERVAL {q}")
        return Interval(months=self.months, micros=self.micros, qualifier=q)

    def text(self) -> str:
        """The literal's text (without quotes and qualifier), e.g. ``1:30`` for HOUR TO MINUTE."""
        q = self.qualifier
        first, last = QUALIFIERS[q]
        if self.year_month:
            sign = "-" if self.months < 0 else ""
            months = abs(self.months)
            if q == "YEAR":
                body = str(months // 12)
            elif q == "MONTH":
                body = str(months)
            else:
                body = f"{months // 12}-{months % 12:02d}"
            return sign + body
        sign = "-" if self.micros < 0 else ""
        rest = abs(self.micros)
        fields = _DS_FIELDS[_DS_FIELDS.index(first) : _DS_FIELDS.index(last) + 1]
        parts = []
        for i, name in enumerate(fields):
            if name == "SECOND":
                whole, micro = divmod(rest, MICROS_PER_SECOND)
                txt = str(whole) if i == 0 else f"{whole:02d}"
                if micro:
                    txt += "." + f"{micro:06d}".rstrip("0")
                parts.append(("" if i == 0 else ":") + txt)
                rest = 0
                break
            unit = _UNIT_MICROS[name]
            amount, rest = divmod(rest, unit)
            txt = str(amount) if i == 0 else f"{amount:02d}"
            parts.append(("" if i == 0 else _DS_SEPARATORS[name]) + txt)
        return sign + "".join(parts)

    def _key(self) -> tuple[bool, int]:
        return (self.year_month, self.months if self.year_month else self.micros)

    def comparable(self, other: Interval) -> bool:
        return self.year_month == other.year_month

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Interval) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __lt__(self, other: Interval) -> bool:
        return self._key() < other._key()

    def __le__(self, other: Interval) -> bool:
        return self._key() <= other._key()

    def __gt__(self, other: Interval) -> bool:
        return self._key() > other._key()

    def __ge__(self, other: Interval) -> bool:
        return self._key() >= other._key()

    def __neg__(self) -> Interval:
        return Interval(months=-self.months, micros=-self.micros, qualifier=self.qualifier)

    def __str__(self) -> str:
        return f"INTERVAL '{self.text()}' {self.qualifier}"

    def __repr__(self) -> str:
        return f"Interval({self.text()!r}, {self.qualifier!r})"


def _wider_qualifier(a: str, b: str) -> str:
    """The qualifier spanning both (``HOUR`` and ``MINUTE TO SECOND`` give ``HOUR TO SECOND``)."""
    order = ("YEAR", "MONTH", "DAY", "HOUR", "MINUTE", "SECOND")
    fa, la = QUALIFIERS[a]
    fb, lb = QUALIFIERS[b]
    first = min(fa, fb, key=order.index)
    last = max(la, lb, key=order.index)
    return first if first == last else f"{first} TO {last}"


def add_intervals(a: Interval, b: Interval) -> Interval:
    if a.year_month != b.year_month:
        raise DatetimeValueError(f"cannot add INTERVAL {a.qualifier} and INTERVAL {b.qualifier}")
    return Interval(
        months=a.months + b.months,
        micros=a.micros + b.micros,
        qualifier=_wider_qualifier(a.qualifier, b.qualifier),
    )


def scale_interval(a: Interval, factor: int | float | Decimal, divide: bool = False) -> Interval:
    if divide:
        if factor == 0:
            raise DatetimeValueError("division of an INTERVAL by zero")
        if a.year_month:
            return Interval(months=int(Decimal(a.months) / Decimal(str(factor))), qualifier=a.qualifier)
        return Interval(micros=int(Decimal(a.micros) / Decimal(str(factor))), qualifier=a.qualifier)
    if a.year_month:
        return Interval(months=int(Decimal(a.months) * Decimal(str(factor))), qualifier=a.qualifier)
    return Interval(micros=int(Decimal(a.micros) * Decimal(str(factor))), qualifier=a.qualifier)


def add_months(d: _dt.date, months: int) -> _dt.date:
    """``d`` moved by whole months; a day past the new month's end becomes its last day."""
    total = d.year * 12 + (d.month - 1) + months
    year, month0 = divmod(total, 12)
    if not 1 <= year <= 9999:
        raise DatetimeValueError(f"date out of range after adding {months} months to {date_text(d)}")
    day = min(d.day, calendar.monthrange(year, month0 + 1)[1])
    return d.replace(year=year, month=month0 + 1, day=day)


def add_interval(value: object, interval: Interval) -> object:
    """A DATE, TIME, GMTTIME, TIMESTAMP or GMTTIMESTAMP moved by an interval."""
    try:
        if isinstance(value, Timestamp):
            cls = type(value)
            moved: _dt.datetime = value
            if interval.year_month:
                d = add_months(value.date(), interval.months)
                moved = value.replace(year=d.year, month=d.month, day=d.day)
            else:
                moved = value + _dt.timedelta(microseconds=interval.micros)
            return cls.of(moved)
        if isinstance(value, Time):
            if interval.year_month:
                raise DatetimeValueError(
                    f"cannot add INTERVAL {interval.qualifier} to a {value.esql_type}: it holds no date"
                )
            return type(value).from_micros(value.micros() + interval.micros)
        if type(value) is _dt.date:
            if interval.year_month:
                return add_months(value, interval.months)
            days = abs(interval.micros) // MICROS_PER_DAY
            return value + _dt.timedelta(days=days if interval.micros >= 0 else -days)
    except OverflowError:
        raise DatetimeValueError(f"{value!s} plus {interval!s} is out of the datetime range") from None
    raise DatetimeValueError(f"cannot add an INTERVAL to a value of Python type {type(value).__name__}")


def _kind(value: object) -> str:
    if isinstance(value, Time | Timestamp):
        return value.esql_type
    if isinstance(value, _dt.date):
        return "DATE"
    return type(value).__name__


def _trunc_div(a: int, b: int) -> int:
    q = abs(a) // b
    return q if a >= 0 else -q


def _as_datetime(value: object) -> _dt.datetime:
    if isinstance(value, _dt.datetime):
        return value
    if isinstance(value, _dt.date):
        return _dt.datetime(value.year, value.month, value.day)
    raise DatetimeValueError(f"not a date or timestamp: {value!r}")


def difference(a: object, b: object, qualifier: str = "DAY TO SECOND") -> Interval:
    """``(a - b) qualifier``: the interval from ``b`` to ``a``, truncated to the qualifier's last field."""
    q = normalize_qualifier(qualifier)
    first, last = QUALIFIERS[q]
    if isinstance(a, Time) and isinstance(b, Time):
        micros = a.micros() - b.micros()
        if q in YEAR_MONTH:
            raise DatetimeValueError(f"the difference of two times cannot be an INTERVAL {q}")
    elif isinstance(a, _dt.date) and isinstance(b, _dt.date):
        da, db = _as_datetime(a), _as_datetime(b)
        if q in YEAR_MONTH:
            months = (da.year - db.year) * 12 + (da.month - db.month)
            # a month is complete only once the day and time of day have come round again
            rest_a = (da.day, da.time())
            rest_b = (db.day, db.time())
            if months > 0 and rest_a < rest_b:
                months -= 1
            elif months < 0 and rest_a > rest_b:
                months += 1
            if last == "YEAR":
                months = _trunc_div(months, 12) * 12
            return Interval(months=months, qualifier=q)
        delta = da - db
        micros = (delta.days * 86400 + delta.seconds) * MICROS_PER_SECOND + delta.microseconds
    else:
        raise DatetimeValueError(f"cannot subtract {_kind(b)} from {_kind(a)}")
    unit = _UNIT_MICROS[last]
    if last != "SECOND":
        micros = _trunc_div(micros, unit) * unit
    return Interval(micros=micros, qualifier=q)


class DatetimeDifference(Interval):
    """``a - b`` of two datetimes: a DAY TO SECOND interval that remembers its operands, so that a
    following qualifier such as ``(a - b) MONTH`` can count calendar months exactly."""

    __slots__ = ("minuend", "subtrahend")

    def __init__(self, minuend: object, subtrahend: object) -> None:
        exact = difference(minuend, subtrahend, "DAY TO SECOND")
        super().__init__(micros=exact.micros, qualifier="DAY TO SECOND")
        self.minuend = minuend
        self.subtrahend = subtrahend
