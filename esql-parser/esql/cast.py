"""CAST: ESQL's explicit conversions between its types, with FORMAT, CCSID, ENCODING and DEFAULT.

The implicit CHARACTER forms (``||``, LIKE, comparison) are in ``esql.values``; CAST uses them
and adds the conversions to every other type, and from text and BLOBs.
"""

from __future__ import annotations

import datetime as _dt
import decimal
import math
import re
from decimal import Decimal
from typing import Any, Literal

from esql import types as _t
from esql.tree import Element
from esql.types import Bit, Interval
from esql.values import (
    _DT_CLASSES,
    _FAULTS,
    _NUMBER_RE,
    DECIMAL_CONTEXT,
    MISSING,
    EsqlValueError,
    _char_to_boolean,
    _check_int,
    _esql_type,
    _reason,
    _show,
    to_character,
    type_name,
)

#: Digits with an optional fraction, no sign, exponent or spaces: what CAST(... AS DECIMAL) meets most.


def _is_plain_decimal(text: str) -> bool:
    """Whether ASCII ``text`` is a plain unsigned decimal (digits, then optionally a point and
    digits), tested with string methods: cheaper than the pattern for a field's short text."""
    if text.isdigit():
        return True
    whole, point, fraction = text.partition(".")
    return bool(point) and whole.isdigit() and fraction.isdigit()


_TARGET_ALIASES = {
    "CHARACTER": "CHARACTER",
    "CHAR": "CHARACTER",
    "VARCHAR": "CHARACTER",
    "INTEGER": "INTEGER",
    "INT": "INTEGER",
    "FLOAT": "FLOAT",
    "DECIMAL": "DECIMAL",
    "DEC": "DECIMAL",
    "BOOLEAN": "BOOLEAN",
    "BLOB": "BLOB",
    "BIT": "BIT",
    "DATE": "DATE",
    "TIME": "TIME",
    "GMTTIME": "GMTTIME",
    "TIMESTAMP": "TIMESTAMP",
    "GMTTIMESTAMP": "GMTTIMESTAMP",
    "INTERVAL": "INTERVAL",
}


_DECIMAL_SPEC = re.compile(r"^DEC(?:IMAL)?\s*\(\s*(\d+)\s*(?:,\s*(\d+)\s*)?\)$")


_LITERAL_PREFIX = re.compile(
    r"^\s*(DATE|TIME|GMTTIME|TIMESTAMP|GMTTIMESTAMP)\s*'(.*)'\s*$", re.IGNORECASE | re.DOTALL
)


def _strip_literal(text: str, kind: str) -> str:
    """Accept both ``2024-02-29`` and the literal form ``DATE '2024-02-29'`` CAST AS CHARACTER gives."""
    m = _LITERAL_PREFIX.match(text)
    if m is not None:
        if m.group(1).upper() != kind:
            raise EsqlValueError(
                f"cannot cast CHARACTER {_show(text)} to {kind}: it is a {m.group(1).upper()} literal"
            )
        return m.group(2)
    return text


def _byte_order(encoding: int | None) -> Literal["little", "big"]:
    """The integer byte order of an MQ encoding: its low nibble 2 is reversed (546, x86), 1 normal (785, 273).

    Without an ENCODING clause ESQL uses the broker's native encoding, 546 on the platforms we run on.
    """
    if encoding is None:
        return "little"
    return "little" if encoding & 0x0F == 2 else "big"


def _bytes_to_int(data: bytes, encoding: int | None) -> int:
    order = _byte_order(encoding)
    if len(data) > 8:
        raise EsqlValueError(f"cannot cast BLOB of {len(data)} bytes to INTEGER: at most 8 bytes")
    return int.from_bytes(data, order, signed=len(data) == 8)


_CODECS: dict[int, str] = {}


def _codec(ccsid: int, encoding: int | None = None) -> str:
    """The Python codec for a CCSID; UTF-16/UTF-32 take their byte order from an explicit ENCODING, as MQ does."""
    codec = _CODECS.get(ccsid)
    if codec is None:
        from esql.functions.encodings import codec_for_ccsid

        codec = _CODECS[ccsid] = codec_for_ccsid(ccsid)
    if encoding is not None and codec.endswith(("-be", "-le")) and codec.startswith("utf-"):
        codec = codec[:-3] + ("-le" if _byte_order(encoding) == "little" else "-be")
    return codec


_BOMS = (
    (b"\xff\xfe\x00\x00", "utf-32-le"),
    (b"\x00\x00\xfe\xff", "utf-32-be"),
    (b"\xff\xfe", "utf-16-le"),
    (b"\xfe\xff", "utf-16-be"),
)


def _decode(data: bytes, codec: str) -> str:
    """Decode, honouring a byte-order mark; a decode error's offset counts from the start of ``data``."""
    skip = 0
    if codec.startswith(("utf-16", "utf-32")):
        # a byte-order mark in the data wins over the CCSID's default order
        width = codec[:6]
        for bom, named in _BOMS:
            if named.startswith(width) and data.startswith(bom):
                skip, codec = len(bom), named
                break
    elif codec == "utf-8" and data.startswith(b"\xef\xbb\xbf"):
        skip = 3
    try:
        return data[skip:].decode(codec)
    except UnicodeDecodeError as exc:
        raise UnicodeDecodeError(exc.encoding, data, exc.start + skip, exc.end + skip, exc.reason) from None


def _to_integer(v: Any, encoding: int | None) -> int:
    t = type(v)
    if t is int:
        return v
    if t is str:
        text = v.strip()
        try:
            if text[:2].lower() in ("0x",) or text[:3].lower() in ("-0x", "+0x"):
                return _check_int(int(text, 16), f"CHARACTER {_show(v)}")
            return _check_int(int(text), f"CHARACTER {_show(v)}")
        except ValueError:
            pass
        try:
            d = Decimal(text)
        except decimal.InvalidOperation:
            raise EsqlValueError(f"cannot cast CHARACTER {_show(v)} to INTEGER: not a number") from None
        if not d.is_finite():
            raise EsqlValueError(f"cannot cast CHARACTER {_show(v)} to INTEGER: not a finite number")
        return _check_int(int(d.to_integral_value(rounding=decimal.ROUND_DOWN)), f"CHARACTER {_show(v)}")
    if t is Decimal:
        if not v.is_finite():
            raise EsqlValueError(f"cannot cast DECIMAL {_show(v)} to INTEGER: not a finite number")
        return _check_int(int(v.to_integral_value(rounding=decimal.ROUND_DOWN)), f"DECIMAL {_show(v)}")
    if t is float:
        if math.isnan(v) or math.isinf(v):
            raise EsqlValueError(f"cannot cast FLOAT {_show(v)} to INTEGER: not a finite number")
        return _check_int(int(v), f"FLOAT {_show(v)}")
    if t is bool:
        return 1 if v else 0
    if t is bytes or t is bytearray:
        return _bytes_to_int(bytes(v), encoding)
    if t is Bit:
        return _check_int(v.to_int(), f"BIT {_show(v)}")
    if isinstance(v, Interval):
        if v.year_month:
            return v.months // 12 if v.qualifier == "YEAR" else v.months
        last = _t.QUALIFIERS[v.qualifier][1]
        unit = {"DAY": _t.MICROS_PER_DAY, "HOUR": _t.MICROS_PER_HOUR, "MINUTE": _t.MICROS_PER_MINUTE}.get(
            last, _t.MICROS_PER_SECOND
        )
        return int(v.micros / unit)
    raise EsqlValueError(f"cannot cast {type_name(v)} {_show(v)} to INTEGER")


def _to_decimal(v: Any) -> Decimal:
    t = type(v)
    if t is Decimal:
        return v
    if t is int:
        return Decimal(v)
    if t is float:
        if math.isnan(v) or math.isinf(v):
            raise EsqlValueError(f"cannot cast FLOAT {_show(v)} to DECIMAL: not a finite number")
        return Decimal(repr(v))
    if t is str:
        text = v.strip()
        if not _NUMBER_RE.match(text):
            raise EsqlValueError(f"cannot cast CHARACTER {_show(v)} to DECIMAL: not a number")
        return Decimal(text)
    if t is bool:
        return Decimal(1 if v else 0)
    if isinstance(v, Interval):
        if v.year_month:
            return Decimal(v.months)
        return (
            Decimal(v.micros).scaleb(-6).normalize()
            if v.micros % 1_000_000
            else Decimal(v.micros // 1_000_000)
        )
    raise EsqlValueError(f"cannot cast {type_name(v)} {_show(v)} to DECIMAL")


def _to_float(v: Any) -> float:
    t = type(v)
    if t is float:
        return v
    if t is int or t is Decimal:
        f = float(v)
        if math.isinf(f):
            raise EsqlValueError(f"cannot cast {type_name(v)} {_show(v)} to FLOAT: out of range")
        return f
    if t is str:
        text = v.strip()
        special = {
            "NAN": math.nan,
            "INF": math.inf,
            "+INF": math.inf,
            "-INF": -math.inf,
            "INFINITY": math.inf,
        }
        if text.upper() in special:
            return special[text.upper()]
        if not _NUMBER_RE.match(text):
            raise EsqlValueError(f"cannot cast CHARACTER {_show(v)} to FLOAT: not a number")
        return float(text)
    if t is bool:
        return 1.0 if v else 0.0
    raise EsqlValueError(f"cannot cast {type_name(v)} {_show(v)} to FLOAT")


def _hex_to_bytes(text: str) -> bytes:
    body = text.strip()
    m = re.fullmatch(r"[Xx]'([0-9A-Fa-f\s]*)'", body)
    if m is not None:
        body = m.group(1)
    body = "".join(body.split())
    if len(body) % 2:
        raise EsqlValueError(f"cannot cast CHARACTER {_show(text)} to BLOB: an odd number of hex digits")
    try:
        return bytes.fromhex(body)
    except ValueError:
        raise EsqlValueError(
            f"cannot cast CHARACTER {_show(text)} to BLOB: not hexadecimal digits (give a CCSID to encode text)"
        ) from None


def _cast_one(
    v: Any, target: str, qualifier: str | None, fmt: str | None, ccsid: int | None, encoding: int | None
) -> Any:
    t = type(v)
    if target == "CHARACTER":
        if fmt is not None and t is not str:
            from esql.functions import formatting

            return formatting.format_value(v, fmt)
        if ccsid is not None and (t is bytes or t is bytearray):
            codec = _codec(ccsid, encoding)
            try:
                return _decode(bytes(v), codec)
            except UnicodeDecodeError as exc:
                raise EsqlValueError(
                    f"cannot cast BLOB to CHARACTER with CCSID {ccsid}: byte 0x{bytes(v)[exc.start]:02X} at offset "
                    f"{exc.start} is not valid {codec}"
                ) from None
        return to_character(v)
    if target == "INTEGER":
        if fmt is not None and t is str:
            from esql.functions import formatting

            return _to_integer(formatting.parse_number(v, fmt), encoding)
        return _to_integer(v, encoding)
    if target == "DECIMAL":
        if fmt is not None and t is str:
            from esql.functions import formatting

            return _to_decimal(formatting.parse_number(v, fmt))
        return _to_decimal(v)
    if target == "FLOAT":
        if fmt is not None and t is str:
            from esql.functions import formatting

            return _to_float(formatting.parse_number(v, fmt))
        return _to_float(v)
    if target == "BOOLEAN":
        if t is bool:
            return v
        if t is str:
            return _char_to_boolean(v)
        if t is int or t is float or t is Decimal:
            return v != 0
        raise EsqlValueError(f"cannot cast {type_name(v)} {_show(v)} to BOOLEAN")
    if target == "BLOB":
        if t is bytes:
            return v
        if t is bytearray:
            return bytes(v)
        if t is str:
            if ccsid is not None:
                codec = _codec(ccsid, encoding)
                try:
                    return v.encode(codec)
                except UnicodeEncodeError as exc:
                    raise EsqlValueError(
                        f"cannot cast CHARACTER to BLOB with CCSID {ccsid}: character {v[exc.start]!r} at "
                        f"position {exc.start + 1} has no {codec} encoding"
                    ) from None
            return _hex_to_bytes(v)
        if t is int:
            return v.to_bytes(8, _byte_order(encoding), signed=True)
        if t is Bit:
            return v.to_bytes()
        raise EsqlValueError(f"cannot cast {type_name(v)} {_show(v)} to BLOB")
    if target == "BIT":
        if t is Bit:
            return v
        try:
            if t is str:
                body = v.strip()
                m = re.fullmatch(r"[Bb]'([01]*)'", body)
                return Bit(m.group(1) if m else body)
        except _t.DatetimeValueError:
            raise EsqlValueError(
                f"cannot cast CHARACTER {_show(v)} to BIT: only 0 and 1 are allowed"
            ) from None
        if t is bytes or t is bytearray:
            return Bit.from_bytes(bytes(v))
        if t is int:
            return Bit.from_int(v, 64)
        raise EsqlValueError(f"cannot cast {type_name(v)} {_show(v)} to BIT")
    if target in ("DATE", "TIME", "GMTTIME", "TIMESTAMP", "GMTTIMESTAMP"):
        return _to_datetime(v, target, fmt)
    if target == "INTERVAL":
        return _to_interval(v, qualifier)
    raise EsqlValueError(f"unknown CAST target type {target}")


def _to_datetime(v: Any, target: str, fmt: str | None) -> Any:
    t = type(v)
    if t is str:
        if fmt is not None:
            from esql.functions import formatting

            return formatting.parse_datetime(v, fmt, target)
        try:
            text = _strip_literal(v, target)
            if target == "DATE":
                return _t.parse_date(text)
            return _DT_CLASSES[target].parse(text)
        except _t.DatetimeValueError as exc:
            raise EsqlValueError(f"cannot cast CHARACTER {_show(v)} to {target}: {exc}") from None
    if target == "DATE":
        if t is _dt.date:
            return v
        if isinstance(v, _dt.datetime):
            return _dt.date(v.year, v.month, v.day)
    elif target in ("TIME", "GMTTIME"):
        if isinstance(v, _dt.datetime):
            return _DT_CLASSES[target](v.hour, v.minute, v.second, v.microsecond)
        if isinstance(v, _dt.time):
            return _DT_CLASSES[target].of(v)
    else:
        if isinstance(v, _dt.datetime):
            return _DT_CLASSES[target].of(v)
        if t is _dt.date:
            return _DT_CLASSES[target].of(v)
    raise EsqlValueError(f"cannot cast {type_name(v)} {_show(v)} to {target}")


def _to_interval(v: Any, qualifier: str | None) -> Interval:
    q = qualifier or (v.qualifier if isinstance(v, Interval) else None)
    if q is None:
        raise EsqlValueError(
            f"CAST of {type_name(v)} {_show(v)} to INTERVAL needs a qualifier (e.g. INTERVAL DAY)"
        )
    try:
        if isinstance(v, Interval):
            return v.with_qualifier(q)
        if type(v) is str:
            text = v.strip()
            m = re.fullmatch(r"(?is)INTERVAL\s*'(.*)'\s*([A-Z ]+)", text)
            if m is not None:
                return _t.Interval.parse(m.group(1), m.group(2)).with_qualifier(q)
            return _t.Interval.parse(text, q)
        if type(v) is int or type(v) is Decimal:
            nq = _t.normalize_qualifier(q)
            first, last = _t.QUALIFIERS[nq]
            if first != last:
                raise EsqlValueError(f"cannot cast a number to INTERVAL {nq}: give a single-field qualifier")
            if nq in _t.YEAR_MONTH:
                return Interval(months=int(v) * (12 if nq == "YEAR" else 1), qualifier=nq)
            unit = {"DAY": _t.MICROS_PER_DAY, "HOUR": _t.MICROS_PER_HOUR, "MINUTE": _t.MICROS_PER_MINUTE}.get(
                nq, _t.MICROS_PER_SECOND
            )
            return Interval(micros=int(Decimal(v) * unit), qualifier=nq)
    except _t.DatetimeValueError as exc:
        raise EsqlValueError(f"cannot cast {type_name(v)} {_show(v)} to INTERVAL {q}: {exc}") from None
    raise EsqlValueError(f"cannot cast {type_name(v)} {_show(v)} to INTERVAL {q}")


def _multi_cast(values: tuple[Any, ...], target: str) -> Any:
    """The multi-argument CASTs: (y, m, d AS DATE), (h, m, s AS TIME), (date, time AS TIMESTAMP), (y,m,d,h,m,s …)."""
    if any(x is None for x in values):
        return None
    try:
        if target == "DATE" and len(values) == 3:
            y, m, d = (_to_integer(x, None) for x in values)
            return _dt.date(y, m, d)
        if target in ("TIME", "GMTTIME") and len(values) == 3:
            h, mi = _to_integer(values[0], None), _to_integer(values[1], None)
            sec = _to_decimal(values[2])
            micros = int(sec * 1_000_000)
            return _DT_CLASSES[target](h, mi, micros // 1_000_000, micros % 1_000_000)
        if target in ("TIMESTAMP", "GMTTIMESTAMP"):
            if len(values) == 2:
                d = _to_datetime(values[0], "DATE", None)
                tm = _to_datetime(values[1], "TIME", None)
                return _DT_CLASSES[target](
                    d.year, d.month, d.day, tm.hour, tm.minute, tm.second, tm.microsecond
                )
            if len(values) == 6:
                y, mo, d, h, mi = (_to_integer(x, None) for x in values[:5])
                micros = int(_to_decimal(values[5]) * 1_000_000)
                return _DT_CLASSES[target](y, mo, d, h, mi, micros // 1_000_000, micros % 1_000_000)
    except ValueError as exc:
        shown = ", ".join(_show(x) for x in values)
        raise EsqlValueError(f"cannot cast ({shown}) to {target}: {exc}") from None
    raise EsqlValueError(f"CAST of {len(values)} values to {target} is not defined")


def _parse_target(type_name_: str) -> tuple[str, str | None, tuple[int, int | None] | None]:
    name = type_name_.strip().upper()
    target = _TARGET_ALIASES.get(name)
    if target is not None:
        return target, None, None
    m = _DECIMAL_SPEC.match(name)
    if m is not None:
        return "DECIMAL", None, (int(m.group(1)), int(m.group(2)) if m.group(2) else 0)
    if name.startswith("INTERVAL"):
        rest = name[len("INTERVAL") :].strip()
        try:
            return "INTERVAL", _t.normalize_qualifier(rest) if rest else None, None
        except _t.DatetimeValueError as exc:
            raise EsqlValueError(str(exc)) from None
    if name.startswith("CHAR") and "(" in name:
        return "CHARACTER", None, None
    raise EsqlValueError(f"unknown CAST target type {type_name_!r}")


_TARGET_CACHE: dict[str, tuple[str, str | None, tuple[int, int | None] | None]] = {}


def cast_decimal(value: Any) -> Any:
    """``CAST(value AS DECIMAL)`` with no precision, FORMAT, CCSID or DEFAULT, as generated code
    calls it: a plain unsigned decimal text (a quantity or price read from a message) made into
    a DECIMAL here, without :func:`cast`'s dispatch on the target type; anything else goes to
    :func:`cast`. The test is :func:`_is_plain_decimal`'s, inline."""
    if type(value) is str and value.isascii():
        if value.isdigit():
            return Decimal(value)
        whole, point, fraction = value.partition(".")
        if point and whole.isdigit() and fraction.isdigit():
            return Decimal(value)
    return cast(value, "DECIMAL")


def cast(
    value: Any,
    type_name: str,
    *,
    format: str | None = None,
    ccsid: int | None = None,
    encoding: int | None = None,
    default: Any = MISSING,
) -> Any:
    """``CAST(value AS type [CCSID c] [ENCODING e] [FORMAT f] [DEFAULT d])``.

    ``value`` may be a tuple for the multi-value forms ``CAST(y, m, d AS DATE)``. With DEFAULT, a
    value that cannot be cast gives the default (itself cast to the type) instead of an error.
    """
    # hot paths first: the flow benchmarks cast to CHARACTER and INTEGER millions of times
    if format is None and ccsid is None and default is MISSING:
        t = type(value)
        if type_name == "CHARACTER" or type_name == "CHAR":
            if t is str:
                return value
            if t is int:
                return str(value)
        elif type_name == "INTEGER" or type_name == "INT":
            if t is int:
                return value
            # plain digits (the usual message field) need no sign, hex or range handling
            if t is str and value.isascii() and value.isdigit() and len(value) < 19:
                return int(value)
        elif type_name == "DECIMAL":
            if t is Decimal:
                return value
            # a plain unsigned decimal (a price or quantity read from a message) is exact as it is
            if t is str and value.isascii() and _is_plain_decimal(value):
                return Decimal(value)
    if value is None:
        return None
    spec = _TARGET_CACHE.get(type_name)
    if spec is None:
        spec = _parse_target(type_name)
        if len(_TARGET_CACHE) < 256:
            _TARGET_CACHE[type_name] = spec
    target, qualifier, precision = spec
    if ccsid is not None and not isinstance(ccsid, int):
        ccsid = _to_integer(ccsid, None)
    if encoding is not None and not isinstance(encoding, int):
        encoding = _to_integer(encoding, None)
    try:
        if isinstance(value, tuple):
            result = _multi_cast(value, target)
        else:
            if isinstance(value, Element):
                value = value.value
                if value is None:
                    return None
            try:
                result = _cast_one(value, target, qualifier, format, ccsid, encoding)
                if precision is not None:
                    result = _fit_decimal(result, precision)
            except _FAULTS as exc:
                raise EsqlValueError(
                    f"cannot cast {_esql_type(value)} {_show(value)} to {type_name.upper()}: {_reason(exc)}"
                ) from None
    except EsqlValueError:
        if default is MISSING:
            raise
        if default is None:
            return None
        return cast(default, type_name, format=format, ccsid=ccsid, encoding=encoding)
    return result


def _fit_decimal(d: Decimal, precision: tuple[int, int | None]) -> Decimal:
    p, s = precision
    q = d.quantize(Decimal(1).scaleb(-(s or 0)), rounding=decimal.ROUND_HALF_UP, context=DECIMAL_CONTEXT)
    digits = len(q.as_tuple().digits)
    if digits > p and q != 0:
        raise EsqlValueError(f"DECIMAL {_show(d)} does not fit DECIMAL({p}, {s or 0})")
    return q
