"""The semantics of ESQL values: operators, three-valued logic, comparisons, CHARACTER forms and typed literals.

CAST is in ``esql.cast``.
"""

from __future__ import annotations

import datetime as _dt
import decimal
import math
import operator
import re
from collections.abc import Callable, Iterable
from contextvars import ContextVar
from decimal import Decimal
from typing import Any

from esql import types as _t
from esql.tree import Element
from esql.types import Bit, GmtTime, GmtTimestamp, Interval, Time, Timestamp

INT_MIN = -(2**63)
INT_MAX = 2**63 - 1

#: DECIMAL arithmetic: ESQL's DECIMAL is arbitrary precision, so the context never rounds in practice.
DECIMAL_CONTEXT = decimal.Context(
    prec=1000, Emax=999_999_999, Emin=-999_999_999, rounding=decimal.ROUND_HALF_UP
)
#: Division has no exact result for 1/3; ESQL keeps 34 significant digits there.
DIVISION_CONTEXT = decimal.Context(
    prec=34, Emax=999_999_999, Emin=-999_999_999, rounding=decimal.ROUND_HALF_UP
)


class _Missing:
    __slots__ = ()

    def __repr__(self) -> str:
        return "MISSING"


#: Marks an absent CAST ``DEFAULT`` clause (None is a legitimate default: NULL).
MISSING: Any = _Missing()


class EsqlValueError(Exception):
    """An ESQL value operation that fails: divide by zero, bad cast, overflow, incomparable types.

    ``sqlstate`` is the state a handler sees, as IBM documents for ESQL's own errors ('S' origin,
    then the SQL standard's class and subclass): S22012 division by zero, S22003 numeric value out
    of range, S22018 invalid character value for cast, S22007 invalid datetime format.
    """

    def __init__(self, message: str, sqlstate: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.sqlstate = sqlstate or _state_of(message)


_DATETIME_TARGET = re.compile(r"\bto (DATE|TIME|GMTTIME|TIMESTAMP|GMTTIMESTAMP|INTERVAL)\b")


def _state_of(message: str) -> str:
    """The SQLSTATE of a value error, from the one place that words them all (this module)."""
    text = message.lower()
    if (text.startswith("cannot cast") or ": cannot cast" in text) and _DATETIME_TARGET.search(message):
        return "S22007"
    if "division by zero" in text:
        return "S22012"
    if "overflow" in text or "out of range" in text or "does not fit" in text or "out of the" in text:
        return "S22003"
    if text.startswith("cannot cast") or ": cannot cast" in text:
        return "S22007" if _DATETIME_TARGET.search(message) else "S22018"
    if "invalid date" in text or "invalid time" in text:
        return "S22007"
    return "S22000"


# -- type names --------------------------------------------------------------------------------

_TYPE_NAMES: dict[type, str] = {
    str: "CHARACTER",
    int: "INTEGER",
    float: "FLOAT",
    Decimal: "DECIMAL",
    bool: "BOOLEAN",
    type(None): "NULL",
    bytes: "BLOB",
    bytearray: "BLOB",
    Bit: "BIT",
    _dt.date: "DATE",
    Time: "TIME",
    GmtTime: "GMTTIME",
    Timestamp: "TIMESTAMP",
    GmtTimestamp: "GMTTIMESTAMP",
    Interval: "INTERVAL",
    list: "LIST",
    tuple: "LIST",
    _dt.datetime: "TIMESTAMP",
    _dt.time: "TIME",
}


def type_name(value: Any) -> str:
    """The ESQL type name of a run-time value (``CHARACTER``, ``INTEGER`` … ``ROW``/``REFERENCE``)."""
    name = _TYPE_NAMES.get(type(value))
    if name is not None:
        return name
    if isinstance(value, Element):
        return "ROW" if value.parent is None else "REFERENCE"
    element = getattr(value, "element", None)
    if isinstance(element, Element):
        return "REFERENCE"
    for cls, nm in _TYPE_NAMES.items():
        if isinstance(value, cls):
            return nm
    return type(value).__name__.upper()


_esql_type = type_name  # for code where a parameter is called type_name (CAST's signature)


def _show(value: Any) -> str:
    """A value as it appears in an error message (ESQL literal form, cut short)."""
    if value is None:
        return "NULL"
    if isinstance(value, str):
        text = "'" + value.replace("'", "''") + "'"
    elif isinstance(value, bool):
        text = "TRUE" if value else "FALSE"
    elif isinstance(value, bytes | bytearray):
        text = "X'" + bytes(value).hex().upper() + "'"
    elif isinstance(value, float):
        text = _float_text(value)
    elif isinstance(value, Decimal):
        text = _decimal_text(value)
    elif isinstance(value, Element):
        text = value.path()
    elif isinstance(value, _dt.date | _dt.time):
        text = to_character(value)
    else:
        text = str(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _check_int(value: int, what: str) -> int:
    if INT_MIN <= value <= INT_MAX:
        return value
    raise EsqlValueError(f"INTEGER overflow: {what} = {value} is outside the 64-bit range")


#: What Python raises for values ESQL cannot operate on (DECIMAL NaN, infinities, dates out of range…);
#: the public operations turn these into EsqlValueError so no traceback reaches a flow.
_FAULTS = (ArithmeticError, TypeError, ValueError)


def _reason(exc: BaseException) -> str:
    if isinstance(exc, decimal.InvalidOperation):
        return "not a valid DECIMAL operation (NaN or infinity)"
    if isinstance(exc, decimal.DecimalException | OverflowError):
        return "the result is out of range"
    text = str(exc)
    return text or type(exc).__name__


def _fault(op: str, exc: BaseException, *operands: Any) -> EsqlValueError:
    shown = " and ".join(f"{type_name(x)} {_show(x)}" for x in operands)
    return EsqlValueError(f"cannot apply '{op}' to {shown}: {_reason(exc)}")


# -- implicit numeric conversion ---------------------------------------------------------------

_NUMBER_RE = re.compile(r"^\s*[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?\s*$")


def _parse_number(text: str, what: str) -> int | Decimal | float:
    if text.isascii() and text.isdigit() and len(text) < 19:
        return int(text)
    m = _NUMBER_RE.match(text)
    if m is None:
        raise EsqlValueError(f"cannot use CHARACTER {_show(text)} as a number in {what}")
    stripped = text.strip()
    if m.group(2):
        return float(stripped)
    if "." in stripped:
        return Decimal(stripped)
    return _check_int(int(stripped), f"CHARACTER {_show(text)}")


def _numeric_pair(a: Any, b: Any, op: str) -> tuple[Any, Any]:
    """Bring a CHARACTER operand of an arithmetic operator to a number (message fields are text)."""
    if isinstance(a, str):
        if isinstance(b, str):
            raise EsqlValueError(f"cannot apply '{op}' to CHARACTER {_show(a)} and CHARACTER {_show(b)}")
        a = _parse_number(a, f"'{op}'")
    if isinstance(b, str):
        b = _parse_number(b, f"'{op}'")
    return a, b


def _is_number(v: Any) -> bool:
    t = type(v)
    return t is int or t is float or t is Decimal


def _promote(a: Any, b: Any) -> tuple[Any, Any]:
    """IBM's promotion: INTEGER < DECIMAL < FLOAT."""
    ta, tb = type(a), type(b)
    if ta is tb:
        return a, b
    if ta is float or tb is float:
        return float(a), float(b)
    if ta is Decimal or tb is Decimal:
        return (a if ta is Decimal else Decimal(a)), (b if tb is Decimal else Decimal(b))
    return a, b


def _arith_error(op: str, a: Any, b: Any) -> EsqlValueError:
    return EsqlValueError(f"cannot apply '{op}' to {type_name(a)} {_show(a)} and {type_name(b)} {_show(b)}")


def _float_result(value: float, op: str, a: Any, b: Any) -> float:
    if (
        math.isinf(value)
        and not (isinstance(a, float) and math.isinf(a))
        and not (isinstance(b, float) and math.isinf(b))
    ):
        raise EsqlValueError(f"FLOAT overflow: {_show(a)} {op} {_show(b)}")
    return value


# -- arithmetic --------------------------------------------------------------------------------


def add(a: Any, b: Any) -> Any:
    """``a + b``: numbers, datetime + INTERVAL, INTERVAL + INTERVAL; NULL if either is NULL."""
    try:
        ta = type(a)
        if ta is int and type(b) is int:
            r = a + b
            if INT_MIN <= r <= INT_MAX:
                return r
            raise EsqlValueError(f"INTEGER overflow: {a} + {b} is outside the 64-bit range")
        if ta is Decimal and type(b) is Decimal:
            return DECIMAL_CONTEXT.add(a, b)
        if a is None or b is None:
            return None
        if ta is bool or type(b) is bool:
            raise _arith_error("+", a, b)
        if isinstance(a, str) or isinstance(b, str):
            a, b = _numeric_pair(a, b, "+")
        if _is_number(a) and _is_number(b):
            x, y = _promote(a, b)
            if type(x) is int:
                return _check_int(x + y, f"{a} + {b}")
            if type(x) is Decimal:
                return DECIMAL_CONTEXT.add(x, y)
            return _float_result(x + y, "+", a, b)
        try:
            if isinstance(b, Interval):
                if isinstance(a, Interval):
                    return _t.add_intervals(a, b)
                if isinstance(a, _dt.date | _dt.time):
                    return _t.add_interval(a, b)
            if isinstance(a, Interval) and isinstance(b, _dt.date | _dt.time):
                return _t.add_interval(b, a)
            # DATE + TIME gives the TIMESTAMP of that day and time
            if type(a) is _dt.date and isinstance(b, Time):
                return _combine(a, b)
            if isinstance(a, Time) and type(b) is _dt.date:
                return _combine(b, a)
        except _t.DatetimeValueError as exc:
            raise EsqlValueError(str(exc)) from None
        raise _arith_error("+", a, b)
    except _FAULTS as exc:
        raise _fault("+", exc, a, b) from None


def _combine(d: _dt.date, t: Time) -> Timestamp:
    cls = GmtTimestamp if type(t) is GmtTime else Timestamp
    return cls(d.year, d.month, d.day, t.hour, t.minute, t.second, t.microsecond)


def sub(a: Any, b: Any) -> Any:
    """``a - b``; a datetime minus a datetime gives an INTERVAL DAY TO SECOND (see :func:`difference`)."""
    try:
        ta = type(a)
        if ta is int and type(b) is int:
            r = a - b
            if INT_MIN <= r <= INT_MAX:
                return r
            raise EsqlValueError(f"INTEGER overflow: {a} - {b} is outside the 64-bit range")
        if a is None or b is None:
            return None
        if ta is bool or type(b) is bool:
            raise _arith_error("-", a, b)
        if isinstance(a, str) or isinstance(b, str):
            a, b = _numeric_pair(a, b, "-")
        if _is_number(a) and _is_number(b):
            x, y = _promote(a, b)
            if type(x) is int:
                return _check_int(x - y, f"{a} - {b}")
            if type(x) is Decimal:
                return DECIMAL_CONTEXT.subtract(x, y)
            return _float_result(x - y, "-", a, b)
        if isinstance(b, Interval):
            return add(a, -b)
        if isinstance(a, _dt.date | _dt.time) and isinstance(b, _dt.date | _dt.time):
            try:
                return _t.DatetimeDifference(a, b)
            except _t.DatetimeValueError as exc:
                raise EsqlValueError(str(exc)) from None
        raise _arith_error("-", a, b)
    except _FAULTS as exc:
        raise _fault("-", exc, a, b) from None


def difference(a: Any, b: Any, qualifier: str) -> Interval | None:
    """``(a - b) qualifier``: the INTERVAL between two datetimes, expressed in ``qualifier``."""
    if a is None or b is None:
        return None
    try:
        return _t.difference(a, b, qualifier)
    except _t.DatetimeValueError as exc:
        raise EsqlValueError(str(exc)) from None


def qualify(value: Any, qualifier: str) -> Interval | None:
    """Re-express an INTERVAL (or the difference ``sub`` produced) with another qualifier."""
    if value is None:
        return None
    if not isinstance(value, Interval):
        raise EsqlValueError(
            f"an INTERVAL qualifier needs an INTERVAL, not {type_name(value)} {_show(value)}"
        )
    try:
        if isinstance(value, _t.DatetimeDifference):
            return _t.difference(value.minuend, value.subtrahend, qualifier)
        q = _t.normalize_qualifier(qualifier)
        if q in _t.YEAR_MONTH or value.year_month:
            return value.with_qualifier(q)
        last = _t.QUALIFIERS[q][1]
        unit = {"DAY": _t.MICROS_PER_DAY, "HOUR": _t.MICROS_PER_HOUR, "MINUTE": _t.MICROS_PER_MINUTE}.get(
            last, 1
        )
        micros = value.micros
        micros = (abs(micros) // unit * unit) * (1 if micros >= 0 else -1)
        return Interval(micros=micros, qualifier=q)
    except _t.DatetimeValueError as exc:
        raise EsqlValueError(str(exc)) from None


def mul(a: Any, b: Any) -> Any:
    """``a * b``: numbers, or an INTERVAL scaled by a number."""
    try:
        ta = type(a)
        if ta is int and type(b) is int:
            r = a * b
            if INT_MIN <= r <= INT_MAX:
                return r
            raise EsqlValueError(f"INTEGER overflow: {a} * {b} is outside the 64-bit range")
        if ta is Decimal and type(b) is Decimal:
            return DECIMAL_CONTEXT.multiply(a, b)
        if a is None or b is None:
            return None
        if ta is bool or type(b) is bool:
            raise _arith_error("*", a, b)
        if isinstance(a, str) or isinstance(b, str):
            a, b = _numeric_pair(a, b, "*")
        if _is_number(a) and _is_number(b):
            x, y = _promote(a, b)
            if type(x) is int:
                return _check_int(x * y, f"{a} * {b}")
            if type(x) is Decimal:
                return DECIMAL_CONTEXT.multiply(x, y)
            return _float_result(x * y, "*", a, b)
        if isinstance(a, Interval) and _is_number(b):
            return _t.scale_interval(a, b)
        if isinstance(b, Interval) and _is_number(a):
            return _t.scale_interval(b, a)
        raise _arith_error("*", a, b)
    except _FAULTS as exc:
        raise _fault("*", exc, a, b) from None


def div(a: Any, b: Any) -> Any:
    """``a / b``: INTEGER / INTEGER truncates toward zero; dividing by zero is an error."""
    try:
        ta = type(a)
        if a is None or b is None:
            return None
        if ta is bool or type(b) is bool:
            raise _arith_error("/", a, b)
        if isinstance(a, str) or isinstance(b, str):
            a, b = _numeric_pair(a, b, "/")
        if _is_number(a) and _is_number(b):
            if b == 0:
                raise EsqlValueError(f"division by zero: {_show(a)} / {_show(b)}")
            x, y = _promote(a, b)
            if type(x) is int:
                q = abs(x) // abs(y)
                return _check_int(q if (x >= 0) == (y >= 0) else -q, f"{a} / {b}")
            if type(x) is Decimal:
                return DIVISION_CONTEXT.divide(x, y)
            return _float_result(x / y, "/", a, b)
        if isinstance(a, Interval) and _is_number(b):
            try:
                return _t.scale_interval(a, b, divide=True)
            except _t.DatetimeValueError as exc:
                raise EsqlValueError(str(exc)) from None
        raise _arith_error("/", a, b)
    except _FAULTS as exc:
        raise _fault("/", exc, a, b) from None


def neg(a: Any) -> Any:
    """Unary minus."""
    try:
        t = type(a)
        if t is int:
            return _check_int(-a, f"-({a})")
        if a is None:
            return None
        if t is Decimal or t is float or isinstance(a, Interval):
            return -a
        if t is str:
            return neg(_parse_number(a, "unary '-'"))
        raise EsqlValueError(f"cannot negate {type_name(a)} {_show(a)}")
    except _FAULTS as exc:
        raise _fault("-", exc, a) from None


#: Character strings and BLOBs up to this size are built without asking the invocation's budget.
SIZE_CHECKED_FROM = 65536

#: The running node invocation's :class:`esql.runtime.Budget` (None outside one: no size limit).
VALUE_BUDGET: ContextVar[Any] = ContextVar("esql_value_budget", default=None)


def check_size(size: int, what: str) -> None:
    """Refuse to build a value of ``size`` characters or bytes beyond the invocation's memory budget."""
    if size > SIZE_CHECKED_FROM:
        budget = VALUE_BUDGET.get()
        if budget is not None:
            budget.check_size(size, what)


def concat(a: Any, b: Any) -> Any:
    """``a || b`` on CHARACTER, BLOB or BIT; NULL || x is NULL; another type beside a string is cast to CHARACTER."""
    try:
        ta, tb = type(a), type(b)
        if ta is str and tb is str:
            if len(a) + len(b) > SIZE_CHECKED_FROM:
                check_size(len(a) + len(b), "||")
            return a + b
        if a is None or b is None:
            return None
        if ta is bytes and tb is bytes:
            if len(a) + len(b) > SIZE_CHECKED_FROM:
                check_size(len(a) + len(b), "||")
            return a + b
        if ta is Bit and tb is Bit:
            check_size(len(a.bits) + len(b.bits), "||")
            return a + b
        if ta is str:
            b = to_character(b)
            check_size(len(a) + len(b), "||")
            return a + b
        if tb is str:
            a = to_character(a)
            check_size(len(a) + len(b), "||")
            return a + b
        if isinstance(a, bytes | bytearray) and isinstance(b, bytes | bytearray):
            check_size(len(a) + len(b), "||")
            return bytes(a) + bytes(b)
        raise EsqlValueError(f"cannot concatenate {type_name(a)} {_show(a)} and {type_name(b)} {_show(b)}")
    except _FAULTS as exc:
        raise _fault("||", exc, a, b) from None


# -- comparison --------------------------------------------------------------------------------


def _cmp_prepare(a: Any, b: Any, op: str) -> tuple[Any, Any]:
    """Bring two non-NULL operands to a form Python compares the ESQL way, or raise."""
    ta, tb = type(a), type(b)
    if ta is tb or (isinstance(a, Interval) and isinstance(b, Interval)):
        if ta is str:
            # trailing blanks do not count in a CHARACTER comparison
            return a.rstrip(" "), b.rstrip(" ")
        if isinstance(a, Interval) and not a.comparable(b):
            raise EsqlValueError(f"cannot compare INTERVAL {a.qualifier} with INTERVAL {b.qualifier}")
        return a, b
    if ta is bool or tb is bool:
        if ta is str:
            return _char_to_boolean(a), b
        if tb is str:
            return a, _char_to_boolean(b)
        raise _compare_error(a, b, op)
    if _is_number(a):
        if _is_number(b):
            # IBM compares a FLOAT with another number as FLOATs (so DECIMAL 0.1 = FLOAT 0.1)
            if ta is float or tb is float:
                return float(a), float(b)
            return a, b
        if tb is str:
            return a, _parse_number(b, f"'{op}'")
        raise _compare_error(a, b, op)
    if _is_number(b):
        if ta is str:
            return _parse_number(a, f"'{op}'"), b
        raise _compare_error(a, b, op)
    if isinstance(a, _dt.date) and isinstance(b, _dt.date):
        # a DATE meets a TIMESTAMP at the start of its day
        return _t._as_datetime(a), _t._as_datetime(b)
    if isinstance(a, _dt.time) and isinstance(b, _dt.time):
        return a, b
    if isinstance(a, bytes | bytearray) and isinstance(b, bytes | bytearray):
        return bytes(a), bytes(b)
    if ta is str and tb in _FROM_TEXT:
        from esql.cast import cast

        return cast(a, _TYPE_NAMES[tb]), b
    if tb is str and ta in _FROM_TEXT:
        from esql.cast import cast

        return a, cast(b, _TYPE_NAMES[ta])
    raise _compare_error(a, b, op)


def _compare_error(a: Any, b: Any, op: str) -> EsqlValueError:
    return EsqlValueError(
        f"cannot compare {type_name(a)} {_show(a)} with {type_name(b)} {_show(b)} using '{op}'"
    )


def eq(a: Any, b: Any) -> bool | None:
    """``a = b``: TRUE/FALSE, or UNKNOWN (None) when either is NULL."""
    try:
        ta = type(a)
        if ta is type(b) and (ta is str or ta is int):
            if a == b:
                return True
            if ta is int:
                return False
            return a.rstrip(" ") == b.rstrip(" ")
        if a is None or b is None:
            return None
        if isinstance(a, Element) or isinstance(b, Element):
            if isinstance(a, Element) and isinstance(b, Element):
                return _tree_equal(a, b)
            raise _compare_error(a, b, "=")
        if isinstance(a, list | tuple) or isinstance(b, list | tuple):
            return _list_equal(a, b)
        x, y = _cmp_prepare(a, b, "=")
        return bool(x == y)
    except _FAULTS as exc:
        raise _fault("=", exc, a, b) from None


def ne(a: Any, b: Any) -> bool | None:
    r = eq(a, b)
    return None if r is None else not r


def _ordered(a: Any, b: Any, op: str, test: Callable[[Any, Any], bool]) -> bool | None:
    """The general path of ``<``, ``<=``, ``>``, ``>=`` once the same-type numeric case is ruled out."""
    ta, tb = type(a), type(b)
    if (ta is int or ta is float or ta is Decimal) and (tb is int or tb is float or tb is Decimal):
        # a FLOAT meets other numbers as FLOATs, as IBM promotes; NaN is never ordered
        try:
            if ta is not tb and (ta is float or tb is float):
                return test(float(a), float(b))
            return test(a, b)
        except _FAULTS as exc:
            raise _fault(op, exc, a, b) from None
    if a is None or b is None:
        return None
    x, y = _cmp_prepare(a, b, op)
    if type(x) is bool and type(y) is bool:
        return test(int(x), int(y))  # IBM: FALSE < TRUE
    if type(x) is bool or isinstance(x, Element | list):
        raise _compare_error(a, b, op)
    if isinstance(x, float) and math.isnan(x) or isinstance(y, float) and math.isnan(y):
        return False
    try:
        return test(x, y)
    except TypeError:
        raise _compare_error(a, b, op) from None
    except _FAULTS as exc:
        raise _fault(op, exc, a, b) from None


# The four orderings inline the commonest case (two INTEGERs, as in WHILE i <= CARDINALITY(...))
# so a loop test costs one type check and one comparison.


def lt(a: Any, b: Any) -> bool | None:
    """``a < b``: TRUE/FALSE, or UNKNOWN (None) when either is NULL."""
    if type(a) is int and type(b) is int:
        return a < b
    return _ordered(a, b, "<", operator.lt)


def le(a: Any, b: Any) -> bool | None:
    """``a <= b``: TRUE/FALSE, or UNKNOWN (None) when either is NULL."""
    if type(a) is int and type(b) is int:
        return a <= b
    return _ordered(a, b, "<=", operator.le)


def gt(a: Any, b: Any) -> bool | None:
    """``a > b``: TRUE/FALSE, or UNKNOWN (None) when either is NULL."""
    if type(a) is int and type(b) is int:
        return a > b
    return _ordered(a, b, ">", operator.gt)


def ge(a: Any, b: Any) -> bool | None:
    """``a >= b``: TRUE/FALSE, or UNKNOWN (None) when either is NULL."""
    if type(a) is int and type(b) is int:
        return a >= b
    return _ordered(a, b, ">=", operator.ge)


def _tree_equal(a: Element, b: Element) -> bool | None:
    """ROW / tree equality: same names, in order, with equal values (NULL values compare unknown)."""
    ka, kb = list(a.children()), list(b.children())
    if len(ka) != len(kb):
        return False
    if not ka:
        return eq(a.value, b.value)
    result: bool | None = True
    for x, y in zip(ka, kb, strict=True):
        if x.name != y.name:
            return False
        r = _tree_equal(x, y)
        if r is False:
            return False
        if r is None:
            result = None
    return result


def _list_equal(a: Any, b: Any) -> bool | None:
    if not isinstance(a, list | tuple) or not isinstance(b, list | tuple):
        raise _compare_error(a, b, "=")
    if len(a) != len(b):
        return False
    result: bool | None = True
    for x, y in zip(a, b, strict=True):
        r = eq(x, y)
        if r is False:
            return False
        if r is None:
            result = None
    return result


# -- logic -------------------------------------------------------------------------------------


def _truth(v: Any, op: str) -> bool | None:
    if v is True or v is False or v is None:
        return v
    if type(v) is str:
        return _char_to_boolean(v)
    raise EsqlValueError(f"'{op}' needs BOOLEAN operands, not {type_name(v)} {_show(v)}")


def and_(a: Any, b: Any) -> bool | None:
    """Three-valued AND: FALSE beats UNKNOWN beats TRUE."""
    a, b = _truth(a, "AND"), _truth(b, "AND")
    if a is False or b is False:
        return False
    if a is None or b is None:
        return None
    return True


def or_(a: Any, b: Any) -> bool | None:
    """Three-valued OR: TRUE beats UNKNOWN beats FALSE."""
    a, b = _truth(a, "OR"), _truth(b, "OR")
    if a is True or b is True:
        return True
    if a is None or b is None:
        return None
    return False


def not_(a: Any) -> bool | None:
    """Three-valued NOT: NOT UNKNOWN is UNKNOWN."""
    a = _truth(a, "NOT")
    return None if a is None else not a


def is_true(v: Any) -> bool:
    return v is True


def is_false(v: Any) -> bool:
    return v is False


def is_unknown(v: Any) -> bool:
    return v is None


def is_null(v: Any) -> bool:
    return v is None


def between(v: Any, lo: Any, hi: Any, symmetric: bool = False) -> bool | None:
    """``v BETWEEN [SYMMETRIC] lo AND hi``; SYMMETRIC accepts the bounds in either order."""
    if symmetric and lo is not None and hi is not None and gt(lo, hi):
        lo, hi = hi, lo
    return and_(ge(v, lo), le(v, hi))


def in_(v: Any, items: Iterable[Any]) -> bool | None:
    """``v IN (items…)``: TRUE on a match, else UNKNOWN if any comparison was, else FALSE."""
    unknown = v is None
    if unknown:
        return None
    for item in items:
        r = eq(v, item)
        if r is True:
            return True
        if r is None:
            unknown = True
    return None if unknown else False


_LIKE_CACHE: dict[tuple[str, str | None], re.Pattern[str]] = {}


def _like_regex(pattern: str, escape: str | None) -> re.Pattern[str]:
    key = (pattern, escape)
    rx = _LIKE_CACHE.get(key)
    if rx is not None:
        return rx
    if escape is not None and len(escape) != 1:
        raise EsqlValueError(f"the LIKE ESCAPE character must be one character, not {_show(escape)}")
    out = []
    i = 0
    while i < len(pattern):
        ch = pattern[i]
        if escape is not None and ch == escape:
            if i + 1 >= len(pattern):
                raise EsqlValueError(f"LIKE pattern {_show(pattern)} ends with its ESCAPE character")
            nxt = pattern[i + 1]
            if nxt not in ("%", "_", escape):
                raise EsqlValueError(
                    f"in LIKE pattern {_show(pattern)} the ESCAPE character must precede '%', '_' or itself"
                )
            out.append(re.escape(nxt))
            i += 2
            continue
        if ch == "%":
            out.append(".*")
        elif ch == "_":
            out.append(".")
        else:
            out.append(re.escape(ch))
        i += 1
    rx = re.compile("".join(out), re.DOTALL)
    if len(_LIKE_CACHE) > 2048:
        _LIKE_CACHE.clear()
    _LIKE_CACHE[key] = rx
    return rx


def like(value: Any, pattern: Any, escape: Any = None) -> bool | None:
    """``value LIKE pattern [ESCAPE c]``: ``_`` one character, ``%`` any run; NULL anywhere gives UNKNOWN."""
    if value is None or pattern is None:
        return None
    if not isinstance(value, str):
        value = to_character(value)
    if not isinstance(pattern, str):
        raise EsqlValueError(f"a LIKE pattern must be CHARACTER, not {type_name(pattern)} {_show(pattern)}")
    if escape is not None and not isinstance(escape, str):
        raise EsqlValueError(f"a LIKE ESCAPE must be CHARACTER, not {type_name(escape)}")
    return _like_regex(pattern, escape).fullmatch(value) is not None


# -- CHARACTER forms (the implicit casts of ||, LIKE and comparison) --------------------------------

_FROM_TEXT = {_dt.date, Time, GmtTime, Timestamp, GmtTimestamp, Bit}


def _float_text(f: float) -> str:
    """IBM's CHARACTER form of a FLOAT: a mantissa and a signed exponent (``1.5E+2``)."""
    if math.isnan(f):
        return "NaN"
    if math.isinf(f):
        return "INF" if f > 0 else "-INF"
    if f == 0:
        return "0E+0" if math.copysign(1, f) > 0 else "-0E+0"
    # the shortest digits that round-trip, as repr() finds them
    d = Decimal(repr(f))
    sign, ds, dexp = d.as_tuple()
    assert isinstance(dexp, int)
    coeff = "".join(str(x) for x in ds).rstrip("0") or "0"
    exponent = dexp + len(ds) - 1
    text = coeff[0] + ("." + coeff[1:] if len(coeff) > 1 else "")
    return ("-" if sign else "") + f"{text}E{'+' if exponent >= 0 else '-'}{abs(exponent)}"


def _decimal_text(d: Decimal) -> str:
    if not d.is_finite():
        return {"NaN": "NaN", "sNaN": "NaN", "Infinity": "INF", "-Infinity": "-INF"}.get(str(d), str(d))
    return format(d, "f")


def to_character(value: Any) -> str:
    """CAST(value AS CHARACTER) without a FORMAT: the implicit form ``||`` and LIKE use too."""
    t = type(value)
    if t is str:
        return value
    if t is int:
        return str(value)
    if t is Decimal:
        return _decimal_text(value)
    if t is float:
        return _float_text(value)
    if t is bool:
        return "TRUE" if value else "FALSE"
    if t is bytes or t is bytearray:
        return "X'" + bytes(value).hex().upper() + "'"
    if t is _dt.date:
        return f"DATE '{_t.date_text(value)}'"
    if t is Bit or isinstance(value, Interval):
        return str(value)
    if isinstance(value, Time | Timestamp):
        return value.literal_text()
    if isinstance(value, _dt.datetime):
        return Timestamp.of(value).literal_text()
    if isinstance(value, _dt.time):
        return Time.of(value).literal_text()
    if isinstance(value, Element):
        return to_character(value.value)
    raise EsqlValueError(f"cannot cast {type_name(value)} {_show(value)} to CHARACTER")


def _char_to_boolean(text: str) -> bool | None:
    word = text.strip().upper()
    if word in ("TRUE", "1"):
        return True
    if word in ("FALSE", "0"):
        return False
    if word == "UNKNOWN":
        return None
    raise EsqlValueError(f"cannot cast CHARACTER {_show(text)} to BOOLEAN: expected TRUE, FALSE or UNKNOWN")


_DT_CLASSES: dict[str, Any] = {
    "TIME": Time,
    "GMTTIME": GmtTime,
    "TIMESTAMP": Timestamp,
    "GMTTIMESTAMP": GmtTimestamp,
}


# -- literals ----------------------------------------------------------------------------------


def literal(kind: str, text: str, qualifier: str | None = None) -> Any:
    """A typed literal's value: DATE '…', TIME '…', GMTTIME, TIMESTAMP, GMTTIMESTAMP, INTERVAL '…' q, X'…', B'…'."""
    k = kind.upper()
    try:
        if k == "DATE":
            return _t.parse_date(text)
        if k in _DT_CLASSES:
            return _DT_CLASSES[k].parse(text)
        if k == "INTERVAL":
            if not qualifier:
                raise EsqlValueError(
                    f"INTERVAL literal {_show(text)} needs a qualifier (e.g. INTERVAL '2' DAY)"
                )
            return Interval.parse(text, qualifier)
        if k in ("X", "BLOB"):
            body = "".join(text.split())
            if len(body) % 2:
                raise EsqlValueError(f"BLOB literal X'{text}' has an odd number of hex digits")
            try:
                return bytes.fromhex(body)
            except ValueError:
                raise EsqlValueError(
                    f"BLOB literal X'{text}' holds a character that is not a hex digit"
                ) from None
        if k in ("B", "BIT"):
            return Bit(text)
    except _t.DatetimeValueError as exc:
        raise EsqlValueError(str(exc)) from None
    raise EsqlValueError(f"unknown literal kind {kind!r}")


# -- tree storage ------------------------------------------------------------------------------


def to_element_value(value: Any) -> Any:
    """The value a tree field stores for ``value``: scalars as they are; a ROW or LIST cannot be a field value."""
    t = type(value)
    if t is str or t is int or value is None or t is Decimal or t is float or t is bool or t is bytes:
        return value
    if t is bytearray:
        return bytes(value)
    if isinstance(value, Element):
        return value.value
    if isinstance(value, list | tuple):
        raise EsqlValueError(
            "a LIST cannot be stored as the value of one field (assign it to field[] instead)"
        )
    if t in _TYPE_NAMES:
        return value
    raise EsqlValueError(f"a value of type {type_name(value)} cannot be stored in a message field")
