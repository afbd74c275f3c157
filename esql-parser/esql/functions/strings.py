"""ESQL string functions over CHARACTER, BLOB and BIT values (positions are 1-based)."""

from __future__ import annotations

import base64
import binascii
from typing import Any

from esql.functions.registry import builtin
from esql.types import Bit
from esql.values import EsqlValueError, _show, check_size, to_character, type_name

_Str = str | bytes | Bit


def _string(value: Any, fn: str, arg: str = "source", *, char_only: bool = False) -> Any:
    t = type(value)
    if t is str:
        return value
    if (t is bytes or t is Bit) and not char_only:
        return value
    if t is bytearray and not char_only:
        return bytes(value)
    if t is int or t is float or t is bool or type_name(value) in ("DECIMAL", "DATE", "TIME", "TIMESTAMP"):
        # numbers and datetimes are cast to CHARACTER, as IBM's implicit casts do
        return to_character(value)
    kinds = "CHARACTER" if char_only else "CHARACTER, BLOB or BIT"
    raise EsqlValueError(f"{fn}: {arg} must be {kinds}, not {type_name(value)} {_show(value)}")


def _same_kind(a: Any, b: Any, fn: str) -> Any:
    """Coerce ``b`` to ``a``'s string type, or raise when they cannot meet."""
    if type(a) is type(b):
        return b
    if type(a) is str:
        return to_character(b)
    raise EsqlValueError(f"{fn}: cannot mix {type_name(a)} {_show(a)} with {type_name(b)} {_show(b)}")


def _int(value: Any, fn: str, arg: str) -> int:
    if type(value) is int:
        return value
    if type(value) is bool:
        raise EsqlValueError(f"{fn}: {arg} must be INTEGER, not BOOLEAN")
    from esql.cast import cast

    try:
        return int(cast(value, "INTEGER"))
    except EsqlValueError:
        raise EsqlValueError(f"{fn}: {arg} must be INTEGER, not {type_name(value)} {_show(value)}") from None


def _empty(like: Any) -> Any:
    return like[:0]


@builtin("LENGTH", "string", "LENGTH(source) → INTEGER", 1, 1, aliases=("CHARACTER_LENGTH", "CHAR_LENGTH"))
def length(source: Any) -> int | None:
    """Number of characters (CHARACTER), bytes (BLOB) or bits (BIT) in the source."""
    if source is None:
        return None
    return len(_string(source, "LENGTH"))


@builtin("LEFT", "string", "LEFT(source, length) → same type", 2, 2)
def left(source: Any, count: Any) -> Any:
    """The first ``length`` characters, bytes or bits of the source."""
    if source is None or count is None:
        return None
    s = _string(source, "LEFT")
    n = _int(count, "LEFT", "length")
    if n < 0:
        raise EsqlValueError(f"LEFT: length must not be negative, got {n}")
    return s[:n]


@builtin("RIGHT", "string", "RIGHT(source, length) → same type", 2, 2)
def right(source: Any, count: Any) -> Any:
    """The last ``length`` characters, bytes or bits of the source."""
    if source is None or count is None:
        return None
    s = _string(source, "RIGHT")
    n = _int(count, "RIGHT", "length")
    if n < 0:
        raise EsqlValueError(f"RIGHT: length must not be negative, got {n}")
    return s[len(s) - n :] if n else _empty(s)


@builtin("UPPER", "string", "UPPER(source) → CHARACTER", 1, 1, aliases=("UCASE",))
def upper(source: Any) -> str | None:
    """The source with every letter in upper case."""
    if source is None:
        return None
    return str(_string(source, "UPPER", char_only=True)).upper()


@builtin("LOWER", "string", "LOWER(source) → CHARACTER", 1, 1, aliases=("LCASE",))
def lower(source: Any) -> str | None:
    """The source with every letter in lower case."""
    if source is None:
        return None
    return str(_string(source, "LOWER", char_only=True)).lower()


def _default_pad(s: Any) -> Any:
    if type(s) is bytes:
        return b"\x00"
    if type(s) is Bit:
        return Bit("0")
    return " "


def _trim(s: Any, where: str, chars: Any) -> Any:
    if type(s) is Bit:
        bits = s.bits
        pad = chars.bits if isinstance(chars, Bit) else "0"
        if where in ("BOTH", "LEADING"):
            bits = bits.lstrip(pad)
        if where in ("BOTH", "TRAILING"):
            bits = bits.rstrip(pad)
        return Bit(bits)
    if where == "BOTH":
        return s.strip(chars)
    if where == "LEADING":
        return s.lstrip(chars)
    return s.rstrip(chars)


@builtin("TRIM", "string", "TRIM([BOTH|LEADING|TRAILING] [singleton] FROM source)", 1, 3)
def trim(source: Any, where: Any = "BOTH", singleton: Any = None) -> Any:
    """Remove leading and/or trailing occurrences of the singleton (blanks by default)."""
    if source is None:
        return None
    s = _string(source, "TRIM")
    spec = (where or "BOTH").upper() if isinstance(where, str) else "BOTH"
    if spec not in ("BOTH", "LEADING", "TRAILING"):
        raise EsqlValueError(f"TRIM: expected BOTH, LEADING or TRAILING, not {_show(where)}")
    if singleton is None:
        chars = _default_pad(s)
    else:
        chars = _same_kind(s, singleton, "TRIM")
        if len(chars) == 0:
            return s
    return _trim(s, spec, chars)


@builtin("LTRIM", "string", "LTRIM(source) → same type", 1, 1)
def ltrim(source: Any) -> Any:
    """The source without leading blanks (X'00' for BLOB, B'0' for BIT)."""
    if source is None:
        return None
    s = _string(source, "LTRIM")
    return _trim(s, "LEADING", _default_pad(s))


@builtin("RTRIM", "string", "RTRIM(source) → same type", 1, 1)
def rtrim(source: Any) -> Any:
    """The source without trailing blanks (X'00' for BLOB, B'0' for BIT)."""
    if source is None:
        return None
    s = _string(source, "RTRIM")
    return _trim(s, "TRAILING", _default_pad(s))


@builtin("SUBSTRING", "string", "SUBSTRING(source FROM start [FOR length])", 2, 3)
def substring(source: Any, start: Any, count: Any = None) -> Any:
    """The part of the source from 1-based ``start`` for ``length`` (or to the end)."""
    if source is None or start is None:
        return None
    s = _string(source, "SUBSTRING")
    a = _int(start, "SUBSTRING", "FROM")
    end = len(s) + 1
    if count is not None:
        n = _int(count, "SUBSTRING", "FOR")
        if n < 0:
            raise EsqlValueError(f"SUBSTRING: FOR length must not be negative, got {n}")
        end = a + n
    lo = max(a, 1)
    hi = min(end, len(s) + 1)
    if hi <= lo:
        return _empty(s)
    return s[lo - 1 : hi - 1]


@builtin("SUBSTRING_BEFORE", "string", "SUBSTRING(source BEFORE search [FOR length])", 2, 3)
def substring_before(source: Any, search: Any, count: Any = None) -> Any:
    """The part of the source before the first occurrence of ``search`` (empty when absent); with
    FOR, only the ``length`` characters just before it (SUBSTRING function: BeforeExpression)."""
    if source is None or search is None:
        return None
    s = _string(source, "SUBSTRING")
    x = _same_kind(s, search, "SUBSTRING")
    if type(s) is Bit:
        i = s.bits.find(x.bits)
    else:
        i = s.find(x)
    if i < 0:
        return _empty(s)
    return s[max(0, i - _for_length(count)) : i] if count is not None else s[:i]


def _for_length(count: Any) -> int:
    n = _int(count, "SUBSTRING", "FOR")
    if n < 0:
        raise EsqlValueError(f"SUBSTRING: FOR length must not be negative, got {n}")
    return n


@builtin("SUBSTRING_AFTER", "string", "SUBSTRING(source AFTER search [FOR length])", 2, 3)
def substring_after(source: Any, search: Any, count: Any = None) -> Any:
    """The part of the source after the first occurrence of ``search`` (empty when absent); with
    FOR, only the first ``length`` characters of it (SUBSTRING function: AfterExpression)."""
    if source is None or search is None:
        return None
    s = _string(source, "SUBSTRING")
    x = _same_kind(s, search, "SUBSTRING")
    if type(s) is Bit:
        i = s.bits.find(x.bits)
    else:
        i = s.find(x)
    if i < 0:
        return _empty(s)
    start = i + len(x)
    return s[start : start + _for_length(count)] if count is not None else s[start:]


def _raw(v: Any) -> Any:
    return v.bits if type(v) is Bit else v


@builtin("POSITION", "string", "POSITION(search IN source [FROM start] [REPEAT n]) → INTEGER", 2, 4)
def position(search: Any, source: Any, start: Any = None, repeat: Any = None) -> int | None:
    """1-based position of the n-th occurrence of ``search`` (0 when absent); negatives search from the end."""
    if search is None or source is None:
        return None
    s = _string(source, "POSITION", "IN")
    x = _same_kind(s, search, "POSITION")
    hay, needle = _raw(s), _raw(x)
    frm = 1 if start is None else _int(start, "POSITION", "FROM")
    rep = 1 if repeat is None else _int(repeat, "POSITION", "REPEAT")
    if frm == 0 or rep == 0:
        return 0
    n = len(hay)
    if frm > 0 and rep > 0:
        pos = frm - 1
        for _ in range(rep):
            i = hay.find(needle, pos)
            if i < 0:
                return 0
            found = i
            pos = i + 1
        return found + 1
    # a negative FROM or REPEAT searches backwards, FROM counting from the end
    begin = n + frm if frm < 0 else frm - 1  # index where the backward search may start a match
    if begin < 0:
        return 0
    limit = min(begin + len(needle), n)
    for _ in range(abs(rep)):
        i = hay.rfind(needle, 0, limit)
        if i < 0:
            return 0
        found = i
        limit = i + len(needle) - 1
    return found + 1


@builtin("REPLACE", "string", "REPLACE(source, search [, replacement]) → same type", 2, 3)
def replace(source: Any, search: Any, replacement: Any = None) -> Any:
    """Every occurrence of ``search`` replaced (removed when no replacement is given)."""
    if source is None or search is None:
        return None
    s = _string(source, "REPLACE")
    x = _same_kind(s, search, "REPLACE")
    if len(x) == 0:
        raise EsqlValueError("REPLACE: the search string must not be empty")
    r = _empty(s) if replacement is None else _same_kind(s, replacement, "REPLACE")
    if len(r) > len(x) and len(s) > 1:
        check_size(len(s) + _raw(s).count(_raw(x)) * (len(r) - len(x)), "REPLACE")
    if type(s) is Bit:
        return Bit(s.bits.replace(x.bits, r.bits))
    return s.replace(x, r)


@builtin("REPLICATE", "string", "REPLICATE(pattern, count) → same type", 2, 2)
def replicate(pattern: Any, count: Any) -> Any:
    """The pattern repeated ``count`` times."""
    if pattern is None or count is None:
        return None
    s = _string(pattern, "REPLICATE", "pattern")
    n = _int(count, "REPLICATE", "count")
    if n < 0:
        raise EsqlValueError(f"REPLICATE: count must not be negative, got {n}")
    if len(s) * n > 100_000_000:
        raise EsqlValueError(f"REPLICATE: a result of {len(s) * n} characters is too long")
    check_size(len(s) * n, "REPLICATE")
    if type(s) is Bit:
        return Bit(s.bits * n)
    return s * n


@builtin("SPACE", "string", "SPACE(count) → CHARACTER", 1, 1)
def space(count: Any) -> str | None:
    """A string of ``count`` blanks."""
    if count is None:
        return None
    n = _int(count, "SPACE", "count")
    if n < 0:
        raise EsqlValueError(f"SPACE: count must not be negative, got {n}")
    if n > 100_000_000:
        raise EsqlValueError(f"SPACE: {n} blanks is too long")
    check_size(n, "SPACE")
    return " " * n


@builtin("TRANSLATE", "string", "TRANSLATE(source, search [, replace]) → same type", 2, 3)
def translate(source: Any, search: Any, replace_: Any = None) -> Any:
    """Each character of ``search`` found in the source becomes the one at the same place in ``replace``
    (or is removed when ``replace`` is shorter)."""
    if source is None or search is None:
        return None
    s = _string(source, "TRANSLATE")
    frm = _same_kind(s, search, "TRANSLATE")
    to = _empty(s) if replace_ is None else _same_kind(s, replace_, "TRANSLATE")
    if type(s) is Bit:
        frm_s, to_s, src = frm.bits, to.bits, s.bits
    else:
        frm_s, to_s, src = frm, to, s
    table: dict[Any, Any] = {}
    for i, ch in enumerate(frm_s):
        if ch not in table:
            table[ch] = to_s[i : i + 1]
    if type(s) is bytes:
        # iterating bytes gives ints: the table is keyed by byte value
        return b"".join(table.get(byte, bytes((byte,))) for byte in s)
    out = "".join(table.get(ch, ch) for ch in src)
    return Bit(out) if type(s) is Bit else out


@builtin("OVERLAY", "string", "OVERLAY(source PLACING replacement FROM start [FOR length])", 3, 4)
def overlay(source: Any, replacement: Any, start: Any, count: Any = None) -> Any:
    """The source with ``length`` units from ``start`` replaced by ``replacement`` (length defaults to its size)."""
    if source is None or replacement is None or start is None:
        return None
    s = _string(source, "OVERLAY")
    r = _same_kind(s, replacement, "OVERLAY")
    a = _int(start, "OVERLAY", "FROM")
    if a < 1:
        raise EsqlValueError(f"OVERLAY: FROM must be at least 1, got {a}")
    n = len(r) if count is None else _int(count, "OVERLAY", "FOR")
    if n < 0:
        raise EsqlValueError(f"OVERLAY: FOR length must not be negative, got {n}")
    check_size(len(s) + len(r), "OVERLAY")
    return s[: a - 1] + r + s[a - 1 + n :]


def _bool_search(fn: str, source: Any, search: Any) -> tuple[Any, Any] | None:
    if source is None or search is None:
        return None
    s = _string(source, fn)
    x = _same_kind(s, search, fn)
    return _raw(s), _raw(x)


@builtin("CONTAINS", "string", "CONTAINS(source, search) → BOOLEAN", 2, 2)
def contains(source: Any, search: Any) -> bool | None:
    """TRUE when ``search`` occurs in the source."""
    pair = _bool_search("CONTAINS", source, search)
    return None if pair is None else pair[1] in pair[0]


@builtin("STARTSWITH", "string", "STARTSWITH(source, prefix) → BOOLEAN", 2, 2)
def startswith(source: Any, prefix: Any) -> bool | None:
    """TRUE when the source begins with ``prefix``."""
    pair = _bool_search("STARTSWITH", source, prefix)
    return None if pair is None else pair[0].startswith(pair[1])


@builtin("ENDSWITH", "string", "ENDSWITH(source, suffix) → BOOLEAN", 2, 2)
def endswith(source: Any, suffix: Any) -> bool | None:
    """TRUE when the source ends with ``suffix``."""
    pair = _bool_search("ENDSWITH", source, suffix)
    return None if pair is None else pair[0].endswith(pair[1])


@builtin("BASE64ENCODE", "string", "BASE64ENCODE(source) → CHARACTER", 1, 1)
def base64encode(source: Any) -> str | None:
    """The Base64 text of a BLOB (a CHARACTER source is encoded as UTF-8 first)."""
    if source is None:
        return None
    if type(source) is str:
        data = source.encode("utf-8")
    elif isinstance(source, bytes | bytearray):
        data = bytes(source)
    elif type(source) is Bit:
        data = source.to_bytes()
    else:
        raise EsqlValueError(f"BASE64ENCODE: source must be BLOB or CHARACTER, not {type_name(source)}")
    return base64.b64encode(data).decode("ascii")


@builtin("BASE64DECODE", "string", "BASE64DECODE(source) → BLOB", 1, 1)
def base64decode(source: Any) -> bytes | None:
    """The BLOB a Base64 text (CHARACTER, or BLOB of ASCII) stands for."""
    if source is None:
        return None
    if type(source) is str:
        text = source
    elif isinstance(source, bytes | bytearray):
        text = bytes(source).decode("ascii", errors="replace")
    else:
        raise EsqlValueError(f"BASE64DECODE: source must be CHARACTER, not {type_name(source)}")
    compact = "".join(text.split())
    for i, ch in enumerate(compact):
        if not (ch.isascii() and (ch.isalnum() or ch in "+/=")):
            raise EsqlValueError(f"BASE64DECODE: character {ch!r} at position {i + 1} is not Base64")
    try:
        return base64.b64decode(compact, validate=True)
    except binascii.Error as exc:
        raise EsqlValueError(f"BASE64DECODE: invalid Base64 text {_show(source)}: {exc}") from None
