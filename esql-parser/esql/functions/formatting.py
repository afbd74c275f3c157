"""CAST … FORMAT: number patterns (``#,##0.00``) and datetime patterns (``yyyy-MM-dd HH:mm:ss``) both ways."""

from __future__ import annotations

import calendar
import datetime as _dt
import decimal
import re
import time as _time
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from esql.types import GmtTime, GmtTimestamp, Time, Timestamp
from esql.values import DECIMAL_CONTEXT, EsqlValueError, _show

# -- numbers -----------------------------------------------------------------------------------

_NUMBER_CHARS = "#0,."


@dataclass(frozen=True, slots=True)
class _NumberPart:
    prefix: str
    suffix: str
    min_int: int
    grouping: int
    min_frac: int
    max_frac: int
    decimal_always: bool
    exp_digits: int  # 0 = no exponent
    multiplier: int


@dataclass(frozen=True, slots=True)
class NumberPattern:
    text: str
    positive: _NumberPart
    negative: _NumberPart | None
    groupsep: str = ","  # written between digit groups; any of these characters is read as one
    decsep: str = "."  # written as the decimal point; any of these characters is read as one


def _split_affix(text: str, pattern: str) -> tuple[str, str, str, int]:
    """(prefix, number part, suffix, multiplier) of one subpattern; quotes make literal text."""
    prefix: list[str] = []
    body: list[str] = []
    suffix: list[str] = []
    multiplier = 1
    i = 0
    state = 0  # 0 prefix, 1 number, 2 suffix
    while i < len(text):
        ch = text[i]
        if ch == "'":
            end = text.find("'", i + 1)
            if end == i + 1:
                lit = "'"
                i += 2
            elif end < 0:
                raise EsqlValueError(f"FORMAT {_show(pattern)}: unterminated quote at position {i + 1}")
            else:
                lit = text[i + 1 : end]
                i = end + 1
            if state == 1:
                state = 2
            (prefix if state == 0 else suffix).append(lit)
            continue
        if ch in _NUMBER_CHARS or (state == 1 and ch in "Ee"):
            if state == 2:
                raise EsqlValueError(
                    f"FORMAT {_show(pattern)}: digit character {ch!r} at position {i + 1} after the suffix"
                )
            state = 1
            body.append(ch.upper())
            if ch in "Ee":
                i += 1
                while i < len(text) and text[i] == "0":
                    body.append("0")
                    i += 1
                continue
        else:
            if ch == "%":
                multiplier = 100
            elif ch == "\u2030":
                multiplier = 1000
            if state == 1:
                state = 2
            (prefix if state == 0 else suffix).append(ch)
        i += 1
    if not body:
        raise EsqlValueError(f"FORMAT {_show(pattern)} has no digits ('#' or '0')")
    return "".join(prefix), "".join(body), "".join(suffix), multiplier


def _number_part(text: str, pattern: str) -> _NumberPart:
    prefix, body, suffix, multiplier = _split_affix(text, pattern)
    exp_digits = 0
    if "E" in body:
        body, _, exp = body.partition("E")
        exp_digits = len(exp)
        if not exp_digits:
            raise EsqlValueError(f"FORMAT {_show(pattern)}: 'E' must be followed by '0' digits")
    int_part, dot, frac_part = body.partition(".")
    if "." in frac_part or "," in frac_part:
        raise EsqlValueError(f"FORMAT {_show(pattern)}: misplaced '.' or ',' in the fraction")
    if re.search(r"0#", int_part.replace(",", "")):
        raise EsqlValueError(f"FORMAT {_show(pattern)}: '#' may not follow '0' in the integer part")
    if re.search(r"#0", frac_part):
        raise EsqlValueError(f"FORMAT {_show(pattern)}: '0' may not follow '#' in the fraction")
    grouping = 0
    if "," in int_part:
        grouping = len(int_part) - int_part.rfind(",") - 1
        if grouping == 0:
            raise EsqlValueError(f"FORMAT {_show(pattern)}: a grouping ',' must be followed by digits")
    return _NumberPart(
        prefix=prefix,
        suffix=suffix,
        min_int=int_part.count("0"),
        grouping=grouping,
        min_frac=frac_part.count("0"),
        max_frac=len(frac_part),
        decimal_always=bool(dot) and not frac_part,
        exp_digits=exp_digits,
        multiplier=multiplier,
    )


_NUMBER_PATTERNS: dict[str, NumberPattern] = {}


def number_pattern(pattern: str) -> NumberPattern:
    cached = _NUMBER_PATTERNS.get(pattern)
    if cached is not None:
        return cached
    # IBM's optional trailing parameters, ":groupsep=chars:decsep=chars", choose other symbols
    body, groupsep, decsep = pattern, ",", "."
    outside_quotes = r"(?=(?:[^']*'[^']*')*[^']*$)"
    params = re.split(":" + outside_quotes, pattern)
    if len(params) > 1:
        body = params[0]
        for param in params[1:]:
            key, eq, chars = param.partition("=")
            if not eq or key.strip().lower() not in ("groupsep", "decsep") or not chars:
                raise EsqlValueError(
                    f"FORMAT {_show(pattern)}: expected ':groupsep=chars' or ':decsep=chars', not {param!r}"
                )
            if key.strip().lower() == "groupsep":
                groupsep = chars
            else:
                decsep = chars
        if set(groupsep) & set(decsep):
            raise EsqlValueError(f"FORMAT {_show(pattern)}: groupsep and decsep must not share a character")
    # a ';' inside quotes is literal text
    parts = re.split(";" + outside_quotes, body)
    if len(parts) > 2:
        raise EsqlValueError(f"FORMAT {_show(pattern)}: at most one ';' (positive;negative)")
    positive = _number_part(parts[0], pattern)
    negative = _number_part(parts[1], pattern) if len(parts) == 2 else None
    result = NumberPattern(pattern, positive, negative, groupsep, decsep)
    if len(_NUMBER_PATTERNS) < 512:
        _NUMBER_PATTERNS[pattern] = result
    return result


def _group(digits: str, size: int, sep: str = ",") -> str:
    if size <= 0 or len(digits) <= size:
        return digits
    head = len(digits) % size or size
    parts = [digits[:head]] + [digits[i : i + size] for i in range(head, len(digits), size)]
    return sep.join(parts)


#: DecimalFormat rounds half to even; the precision is large enough never to round the integer part.
_FORMAT_CONTEXT = decimal.Context(
    prec=1000, rounding=decimal.ROUND_HALF_EVEN, Emax=999_999_999, Emin=-999_999_999
)


def format_number(value: int | float | Decimal, pattern: str) -> str:
    """A number written with a DecimalFormat-style pattern; rounding is ROUND_HALF_EVEN."""
    np = number_pattern(pattern)
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            raise EsqlValueError(f"cannot format FLOAT {_show(value)} with FORMAT {_show(pattern)}")
        d = Decimal(repr(value))
    else:
        d = Decimal(value)
    negative = d < 0
    part = np.positive
    ctx = _FORMAT_CONTEXT
    d = ctx.multiply(abs(d), part.multiplier)
    exponent_text = ""
    if part.exp_digits:
        if d == 0:
            exp = 0
        else:
            int_digits = max(part.min_int, 1)
            exp = d.adjusted() - (int_digits - 1)
        d = d.scaleb(-exp, context=ctx)
        sign = "-" if exp < 0 else ""
        exponent_text = "E" + sign + str(abs(exp)).rjust(part.exp_digits, "0")
    q = d.quantize(Decimal(1).scaleb(-part.max_frac), context=ctx)
    text = format(q, "f")
    int_text, _, frac_text = text.partition(".")
    frac_text = frac_text.rstrip("0")
    if len(frac_text) < part.min_frac:
        frac_text = frac_text.ljust(part.min_frac, "0")
    int_text = int_text.lstrip("0")
    if len(int_text) < part.min_int:
        int_text = int_text.rjust(part.min_int, "0")
    if not int_text and not frac_text:
        int_text = "0"
    body = _group(int_text, part.grouping, np.groupsep[0])
    if frac_text or part.decimal_always:
        body += np.decsep[0] + frac_text
    body += exponent_text
    if negative and q != 0:
        if np.negative is not None:
            return np.negative.prefix + body + np.negative.suffix
        return "-" + part.prefix + body + part.suffix
    return part.prefix + body + part.suffix


def parse_number(text: str, pattern: str) -> int | Decimal:
    """The number in ``text`` written with ``pattern`` (affixes, grouping, percent); an error says where."""
    np = number_pattern(pattern)
    s = text.strip()
    negative = False
    part = np.positive
    candidates: list[tuple[_NumberPart, bool]] = []
    if np.negative is not None:
        candidates.append((np.negative, True))
    candidates.append((np.positive, False))
    body = None
    for cand, neg in candidates:
        if (
            not neg
            and s.startswith("-" + cand.prefix)
            and s.endswith(cand.suffix)
            and not cand.prefix.startswith("-")
        ):
            inner = s[1 + len(cand.prefix) :]
            body = inner[: len(inner) - len(cand.suffix)] if cand.suffix else inner
            part, negative = cand, True
            break
        if (
            s.startswith(cand.prefix)
            and s.endswith(cand.suffix)
            and len(s) >= len(cand.prefix) + len(cand.suffix)
        ):
            body = s[len(cand.prefix) : len(s) - len(cand.suffix)] if cand.suffix else s[len(cand.prefix) :]
            part, negative = cand, neg
            break
    if body is None:
        raise EsqlValueError(
            f"cannot parse CHARACTER {_show(text)} with FORMAT {_show(pattern)}: "
            f"expected prefix {part.prefix!r} and suffix {part.suffix!r}"
        )
    offset = text.find(body) + 1 if body else 1
    if np.groupsep != "," or np.decsep != ".":
        body = "".join(
            "," if ch in np.groupsep else "." if ch in np.decsep else "\x00" if ch in ",." else ch
            for ch in body
        )
    m = re.fullmatch(r"(\d[\d,]*)?(?:\.(\d*))?(?:E([+-]?\d+))?", body)
    if m is None or not (m.group(1) or m.group(2)):
        bad = next((i for i, ch in enumerate(body) if ch not in "0123456789,.E+-"), None)
        where = f" at position {offset + bad}" if bad is not None else ""
        raise EsqlValueError(
            f"cannot parse CHARACTER {_show(text)} with FORMAT {_show(pattern)}: not a number{where}"
        )
    digits = (m.group(1) or "0").replace(",", "")
    frac = m.group(2)
    number: Decimal = Decimal(digits + ("." + frac if frac else ""))
    if m.group(3):
        number = number.scaleb(int(m.group(3)), context=DECIMAL_CONTEXT)
    if part.multiplier != 1:
        number = DECIMAL_CONTEXT.divide(number, Decimal(part.multiplier))
    if negative:
        number = -number
    if frac is None and part.multiplier == 1 and not m.group(3):
        return int(number)
    return number


# -- datetimes ---------------------------------------------------------------------------------

_MONTHS = [calendar.month_name[i] for i in range(1, 13)]
_MONTHS_SHORT = [calendar.month_abbr[i] for i in range(1, 13)]
_DAYS = [calendar.day_name[i] for i in range(7)]  # Monday first
_DAYS_SHORT = [calendar.day_abbr[i] for i in range(7)]

#: IBM's ISO 8601 shorthands.
_SHORTHANDS = {
    "I": "yyyy-MM-dd'T'HH:mm:ss.SSSSSSXXX",
    "IU": "yyyy-MM-dd'T'HH:mm:ss.SSSSSS'Z'",
    "T": "HH:mm:ss.SSSSSSXXX",
    "TU": "HH:mm:ss.SSSSSS'Z'",
}

_Token = tuple[str, str]  # ("lit", text) or ("field", letters)


_TOKEN_CACHE: dict[str, list[_Token]] = {}


def _tokens(pattern: str) -> list[_Token]:
    """The pattern split into literal text and field letters (cached: flows reuse a few patterns)."""
    cached = _TOKEN_CACHE.get(pattern)
    if cached is not None:
        return cached
    tokens = _scan(pattern)
    if len(_TOKEN_CACHE) < 512:
        _TOKEN_CACHE[pattern] = tokens
    return tokens


def _scan(pattern: str) -> list[_Token]:
    if pattern in _SHORTHANDS:
        pattern = _SHORTHANDS[pattern]
    out: list[_Token] = []
    i = 0
    n = len(pattern)
    while i < n:
        ch = pattern[i]
        if ch == "'":
            if i + 1 < n and pattern[i + 1] == "'":
                out.append(("lit", "'"))
                i += 2
                continue
            end = i + 1
            buf = []
            while True:
                if end >= n:
                    raise EsqlValueError(f"FORMAT {_show(pattern)}: unterminated quote at position {i + 1}")
                if pattern[end] == "'":
                    if end + 1 < n and pattern[end + 1] == "'":
                        buf.append("'")
                        end += 2
                        continue
                    break
                buf.append(pattern[end])
                end += 1
            out.append(("lit", "".join(buf)))
            i = end + 1
            continue
        if ch.isascii() and ch.isalpha():
            j = i
            while j < n and pattern[j] == ch:
                j += 1
            letters = pattern[i:j]
            if ch not in "GyYuMLdDEeFwWahHkKmsSZzXxI":
                raise EsqlValueError(
                    f"FORMAT {_show(pattern)}: unknown pattern letter {ch!r} at position {i + 1} "
                    "(quote literal text with '…')"
                )
            out.append(("field", letters))
            i = j
            continue
        out.append(("lit", ch))
        i += 1
    return out


def _local_offset(value: _dt.datetime) -> int:
    """The local zone's offset from GMT, in seconds, at this local date and time."""
    try:
        stamp = _time.mktime(value.replace(microsecond=0).timetuple())
        return int(
            _dt.datetime.fromtimestamp(stamp).timestamp() - _dt.datetime.utcfromtimestamp(stamp).timestamp()
        )
    except (OverflowError, ValueError, OSError):
        return -_time.timezone


def _zone_text(offset: int, letters: str) -> str:
    sign = "+" if offset >= 0 else "-"
    hh, rest = divmod(abs(offset), 3600)
    mm = rest // 60
    ch, count = letters[0], len(letters)
    if ch in "Xx":
        if ch == "X" and offset == 0:
            return "Z"
        if count == 1:
            return f"{sign}{hh:02d}" + (f"{mm:02d}" if mm else "")
        if count == 2 or count == 4:
            return f"{sign}{hh:02d}{mm:02d}"
        return f"{sign}{hh:02d}:{mm:02d}"
    if ch == "z":
        return "GMT" if offset == 0 else f"GMT{sign}{hh:02d}:{mm:02d}"
    # Z
    if count <= 3:
        return f"{sign}{hh:02d}{mm:02d}"
    if count == 4:
        return "GMT" if offset == 0 else f"GMT{sign}{hh:02d}:{mm:02d}"
    return "Z" if offset == 0 else f"{sign}{hh:02d}:{mm:02d}"


def format_datetime(value: Any, pattern: str) -> str:
    """A DATE, TIME, GMTTIME, TIMESTAMP or GMTTIMESTAMP written with an ICU-style pattern."""
    if type(value) is _dt.date:
        moment = _dt.datetime(value.year, value.month, value.day)
        gmt = False
    elif isinstance(value, _dt.datetime):
        moment = value
        gmt = isinstance(value, GmtTimestamp)
    elif isinstance(value, _dt.time):
        moment = _dt.datetime(1970, 1, 1, value.hour, value.minute, value.second, value.microsecond)
        gmt = isinstance(value, GmtTime)
    else:
        raise EsqlValueError(f"cannot format {type(value).__name__} with a datetime FORMAT")
    if pattern in _SHORTHANDS:
        return _format_iso(value, moment, gmt, pattern)
    out: list[str] = []
    for kind, text in _tokens(pattern):
        if kind == "lit":
            out.append(text)
            continue
        ch, count = text[0], len(text)
        if ch == "G":
            out.append("AD" if count < 4 else "Anno Domini")
        elif ch in "yYu":
            out.append(f"{moment.year % 100:02d}" if count == 2 else str(moment.year).rjust(count, "0"))
        elif ch in "ML":
            if count >= 4:
                out.append(_MONTHS[moment.month - 1])
            elif count == 3:
                out.append(_MONTHS_SHORT[moment.month - 1])
            else:
                out.append(str(moment.month).rjust(count, "0"))
        elif ch == "d":
            out.append(str(moment.day).rjust(count, "0"))
        elif ch == "D":
            out.append(str(moment.timetuple().tm_yday).rjust(count, "0"))
        elif ch == "E":
            out.append(_DAYS[moment.weekday()] if count >= 4 else _DAYS_SHORT[moment.weekday()])
        elif ch == "e":
            if count >= 4:
                out.append(_DAYS[moment.weekday()])
            elif count == 3:
                out.append(_DAYS_SHORT[moment.weekday()])
            else:
                out.append(str(moment.isoweekday()).rjust(count, "0"))
        elif ch == "F":
            out.append(str((moment.day - 1) // 7 + 1).rjust(count, "0"))
        elif ch == "w":
            out.append(str(moment.isocalendar()[1]).rjust(count, "0"))
        elif ch == "W":
            # weeks of the month start on Sunday, as in ICU's default locale
            first_sunday_based = (moment.replace(day=1).weekday() + 1) % 7
            out.append(str((moment.day + first_sunday_based - 1) // 7 + 1).rjust(count, "0"))
        elif ch == "a":
            out.append("AM" if moment.hour < 12 else "PM")
        elif ch == "H":
            out.append(str(moment.hour).rjust(count, "0"))
        elif ch == "k":
            out.append(str(moment.hour or 24).rjust(count, "0"))
        elif ch == "h":
            out.append(str(moment.hour % 12 or 12).rjust(count, "0"))
        elif ch == "K":
            out.append(str(moment.hour % 12).rjust(count, "0"))
        elif ch == "m":
            out.append(str(moment.minute).rjust(count, "0"))
        elif ch == "s":
            out.append(str(moment.second).rjust(count, "0"))
        elif ch == "S":
            # S is a fraction of a second: SSS milliseconds, SSSSSS microseconds (truncated)
            out.append(f"{moment.microsecond:06d}".ljust(count, "0")[:count])
        elif ch in "ZzXx":
            offset = 0 if gmt else _local_offset(moment)
            out.append(_zone_text(offset, text))
        elif ch == "I":
            raise EsqlValueError(f"FORMAT {_show(pattern)}: 'I' may only be used alone ('I' or 'IU')")
    return "".join(out)


class _Reader:
    __slots__ = ("pattern", "pos", "text")

    def __init__(self, text: str, pattern: str) -> None:
        self.text = text
        self.pattern = pattern
        self.pos = 0

    def fail(self, what: str) -> EsqlValueError:
        found = self.text[self.pos : self.pos + 10]
        return EsqlValueError(
            f"cannot parse CHARACTER {_show(self.text)} with FORMAT {_show(self.pattern)}: expected {what} "
            f"at position {self.pos + 1}" + (f", found {found!r}" if found else ", found the end of the text")
        )

    def digits(self, minimum: int, maximum: int, what: str) -> int:
        start = self.pos
        end = start
        while end < len(self.text) and end - start < maximum and self.text[end].isdigit():
            end += 1
        if end - start < minimum:
            raise self.fail(what)
        self.pos = end
        return int(self.text[start:end])

    def word(self, choices: list[str], what: str) -> int:
        rest = self.text[self.pos :].lower()
        best = -1
        best_len = 0
        for i, choice in enumerate(choices):
            c = choice.lower()
            if rest.startswith(c) and len(c) > best_len:
                best, best_len = i, len(c)
        if best < 0:
            raise self.fail(what)
        self.pos += best_len
        return best

    def literal(self, lit: str) -> None:
        if not self.text.startswith(lit, self.pos):
            raise self.fail(repr(lit))
        self.pos += len(lit)

    def zone(self) -> int:
        rest = self.text[self.pos :]
        if rest[:1] in ("Z", "z"):
            self.pos += 1
            return 0
        m = re.match(r"(?:GMT|UTC)?([+-])(\d{2}):?(\d{2})?", rest)
        if m is None:
            if rest.startswith(("GMT", "UTC")):
                self.pos += 3
                return 0
            raise self.fail("a time zone such as +01:00, +0100 or Z")
        self.pos += m.end()
        seconds = int(m.group(2)) * 3600 + int(m.group(3) or 0) * 60
        return seconds if m.group(1) == "+" else -seconds


def _pivot_year(two: int) -> int:
    this = _dt.date.today().year
    year = this - this % 100 + two
    if year > this + 20:
        year -= 100
    elif year <= this - 80:
        year += 100
    return year


def _fraction_text(micro: int) -> str:
    if not micro:
        return ""
    if micro % 1000 == 0:
        return f".{micro // 1000:03d}"
    return f".{micro:06d}"


def _format_iso(value: Any, moment: _dt.datetime, gmt: bool, pattern: str) -> str:
    """IBM's I / IU / T / TU: ISO 8601 text with as much precision as the value has (U: in UTC, marked Z)."""
    if type(value) is _dt.date:
        return f"{moment.year:04d}-{moment.month:02d}-{moment.day:02d}"
    offset = 0 if gmt else _local_offset(moment)
    if pattern.endswith("U") and offset:
        moment = moment - _dt.timedelta(seconds=offset)
        offset = 0
    clock = f"{moment.hour:02d}:{moment.minute:02d}:{moment.second:02d}{_fraction_text(moment.microsecond)}"
    zone = "Z" if pattern.endswith("U") else _zone_text(offset, "XXX")
    if pattern.startswith("T") or isinstance(value, _dt.time):
        return clock + zone
    return f"{moment.year:04d}-{moment.month:02d}-{moment.day:02d}T{clock}{zone}"


_ISO_DATETIME = re.compile(
    r"(?P<y>[+-]?\d{4,})-(?P<mo>\d{2})-(?P<d>\d{2})"
    r"(?:[T ](?P<h>\d{2}):(?P<mi>\d{2})(?::(?P<s>\d{2})(?:[.,](?P<f>\d+))?)?)?"
    r"(?P<z>Z|[+-]\d{2}(?::?\d{2})?)?"
)
_ISO_TIME = re.compile(
    r"(?P<h>\d{2}):(?P<mi>\d{2})(?::(?P<s>\d{2})(?:[.,](?P<f>\d+))?)?(?P<z>Z|[+-]\d{2}(?::?\d{2})?)?"
)


def _parse_iso(text: str, pattern: str, target: str) -> Any:
    """Read ISO 8601 text in any of its usual precisions (I, IU: date and time; T, TU: time)."""
    m = (_ISO_TIME if pattern.startswith("T") else _ISO_DATETIME).fullmatch(text.strip())
    if m is None:
        shape = "hh:mm[:ss[.fff]][zone]" if pattern.startswith("T") else "yyyy-MM-dd[Thh:mm[:ss[.fff]]][zone]"
        raise EsqlValueError(
            f"cannot parse CHARACTER {_show(text)} with FORMAT {_show(pattern)}: expected ISO 8601 {shape}"
        )
    g = m.groupdict()
    zone_text = g.get("z")
    zone: int | None = None
    if zone_text:
        if zone_text == "Z":
            zone = 0
        else:
            digits = zone_text[1:].replace(":", "")
            seconds = int(digits[:2]) * 3600 + int(digits[2:4] or 0) * 60
            zone = seconds if zone_text[0] == "+" else -seconds
    micro = int(((g.get("f") or "") + "000000")[:6])
    try:
        moment = _dt.datetime(
            int(g.get("y") or 1970),
            int(g.get("mo") or 1),
            int(g.get("d") or 1),
            int(g.get("h") or 0),
            int(g.get("mi") or 0),
            int(g.get("s") or 0),
            micro,
        )
    except ValueError as exc:
        raise EsqlValueError(
            f"cannot parse CHARACTER {_show(text)} with FORMAT {_show(pattern)}: {exc}"
        ) from None
    return _finish(moment, zone, target)


def _finish(moment: _dt.datetime, zone: int | None, target: str) -> Any:
    """The parsed moment as the CAST's target type, moved to GMT or local time when a zone was read."""
    gmt_target = target in ("GMTTIME", "GMTTIMESTAMP")
    if zone is not None:
        utc = moment - _dt.timedelta(seconds=zone)
        moment = utc if gmt_target else utc + _dt.timedelta(seconds=_local_offset(utc))
    if target == "DATE":
        return _dt.date(moment.year, moment.month, moment.day)
    if target in ("TIME", "GMTTIME"):
        cls_t = GmtTime if gmt_target else Time
        return cls_t(moment.hour, moment.minute, moment.second, moment.microsecond)
    cls_ts = GmtTimestamp if gmt_target else Timestamp
    return cls_ts.of(moment)


def parse_datetime(text: str, pattern: str, target: str) -> Any:
    """CAST(text AS DATE|TIME|GMTTIME|TIMESTAMP|GMTTIMESTAMP FORMAT pattern)."""
    if pattern in _SHORTHANDS:
        return _parse_iso(text, pattern, target)
    tokens = _tokens(pattern)
    r = _Reader(text, pattern)
    year, month, day, hour, minute, second, micro = 1970, 1, 1, 0, 0, 0, 0
    day_of_year: int | None = None
    pm: bool | None = None
    hour12: int | None = None
    zone: int | None = None
    for index, (kind, tok) in enumerate(tokens):
        if kind == "lit":
            if tok.isspace():
                while r.pos < len(text) and text[r.pos].isspace():
                    r.pos += 1
                continue
            r.literal(tok)
            continue
        ch, count = tok[0], len(tok)
        nxt = tokens[index + 1] if index + 1 < len(tokens) else None
        # adjacent numeric fields (yyyyMMdd) need fixed widths to split the digits
        fixed = (
            nxt is not None
            and nxt[0] == "field"
            and nxt[1][0] not in "aEeGZzXx"
            and not (nxt[1][0] in "ML" and len(nxt[1]) >= 3)
        )
        width = count if fixed else 1
        maximum = count if fixed else 9
        if ch in "yYu":
            if count == 2:
                year = _pivot_year(r.digits(2, 2, "a 2-digit year ('yy')"))
            else:
                year = r.digits(max(1, count if fixed else 1), maximum if fixed else 4, f"a year ('{tok}')")
        elif ch in "ML":
            if count >= 4:
                month = r.word(_MONTHS, "a month name ('MMMM')") + 1
            elif count == 3:
                month = r.word(_MONTHS_SHORT, "a month abbreviation ('MMM')") + 1
            else:
                month = r.digits(width, maximum if fixed else 2, f"a month ('{tok}')")
        elif ch == "d":
            day = r.digits(width, maximum if fixed else 2, f"a day of the month ('{tok}')")
        elif ch == "D":
            day_of_year = r.digits(width, maximum if fixed else 3, f"a day of the year ('{tok}')")
        elif ch in "Ee":
            if count >= 4:
                r.word(_DAYS, "a day name ('EEEE')")
            elif ch == "E" or count == 3:
                r.word(_DAYS_SHORT, "a day abbreviation ('EEE')")
            else:
                r.digits(1, 1, "a day of the week")
        elif ch == "G":
            r.word(["AD", "Anno Domini"], "the era 'AD'")
        elif ch == "a":
            pm = r.word(["AM", "PM"], "AM or PM") == 1
        elif ch == "H":
            hour = r.digits(width, maximum if fixed else 2, f"an hour 0-23 ('{tok}')")
        elif ch == "k":
            hour = r.digits(width, maximum if fixed else 2, f"an hour 1-24 ('{tok}')") % 24
        elif ch in "hK":
            hour12 = r.digits(width, maximum if fixed else 2, f"an hour ('{tok}')") % 12
        elif ch == "m":
            minute = r.digits(width, maximum if fixed else 2, f"minutes ('{tok}')")
        elif ch == "s":
            second = r.digits(width, maximum if fixed else 2, f"seconds ('{tok}')")
        elif ch == "S":
            start = r.pos
            r.digits(1 if not fixed else count, count if fixed else 9, f"a fraction of a second ('{tok}')")
            micro = int((text[start : r.pos] + "000000")[:6])
        elif ch in "ZzXx":
            zone = r.zone()
        elif ch in "FwW":
            r.digits(1, 2, f"a week number ('{tok}')")
        else:
            raise r.fail(f"a field for pattern letter {ch!r}")
    if r.pos != len(text):
        raise r.fail("the end of the text")
    if hour12 is not None:
        hour = hour12 + (12 if pm else 0)
    elif pm is not None and hour < 12 and pm:
        hour += 12
    try:
        if day_of_year is not None:
            base = _dt.date(year, 1, 1) + _dt.timedelta(days=day_of_year - 1)
            if base.year != year:
                raise ValueError(f"day of year {day_of_year} is past the end of {year}")
            month, day = base.month, base.day
        moment = _dt.datetime(year, month, day, hour, minute, second, micro)
    except ValueError as exc:
        raise EsqlValueError(
            f"cannot parse CHARACTER {_show(text)} with FORMAT {_show(pattern)}: {exc}"
        ) from None
    return _finish(moment, zone, target)


def format_value(value: Any, pattern: str) -> str:
    """CAST(value AS CHARACTER FORMAT pattern) for numbers and datetimes."""
    if isinstance(value, bool):
        raise EsqlValueError(
            f"FORMAT applies to numbers and datetimes, not BOOLEAN (FORMAT {_show(pattern)})"
        )
    if isinstance(value, int | float | Decimal):
        return format_number(value, pattern)
    if isinstance(value, _dt.date | _dt.time):
        return format_datetime(value, pattern)
    from esql.values import to_character, type_name

    if isinstance(value, bytes | str):
        return to_character(value)
    raise EsqlValueError(f"FORMAT applies to numbers and datetimes, not {type_name(value)}")
