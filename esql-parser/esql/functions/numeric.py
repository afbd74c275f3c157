"""ESQL numeric functions: rounding, bit operations, MOD, POWER and the transcendental functions."""

from __future__ import annotations

import decimal
import math
import random
from collections.abc import Callable
from decimal import Decimal
from typing import Any

from esql.cast import cast
from esql.functions.registry import builtin
from esql.values import DECIMAL_CONTEXT, INT_MAX, INT_MIN, EsqlValueError, _check_int, _show, type_name

ROUND_MODES = {
    "ROUND_UP": decimal.ROUND_UP,
    "ROUND_DOWN": decimal.ROUND_DOWN,
    "ROUND_CEILING": decimal.ROUND_CEILING,
    "ROUND_FLOOR": decimal.ROUND_FLOOR,
    "ROUND_HALF_UP": decimal.ROUND_HALF_UP,
    "ROUND_HALF_EVEN": decimal.ROUND_HALF_EVEN,
    "ROUND_HALF_DOWN": decimal.ROUND_HALF_DOWN,
}


def _number(value: Any, fn: str, arg: str = "argument") -> int | float | Decimal:
    t = type(value)
    if t is int or t is float or t is Decimal:
        return value  # type: ignore[no-any-return]
    if t is str:
        # message fields hold text: a numeric text is taken as its number
        for target in ("INTEGER", "DECIMAL", "FLOAT"):
            try:
                result: int | float | Decimal = cast(value, target)
            except EsqlValueError:
                continue
            if target != "INTEGER" or value.strip().lstrip("+-").isdigit():
                return result
        raise EsqlValueError(f"{fn}: {arg} must be numeric, not CHARACTER {_show(value)}")
    raise EsqlValueError(f"{fn}: {arg} must be numeric, not {type_name(value)} {_show(value)}")


def _integer(value: Any, fn: str, arg: str = "argument") -> int:
    n = _number(value, fn, arg)
    if type(n) is not int:
        raise EsqlValueError(f"{fn}: {arg} must be INTEGER, not {type_name(n)} {_show(n)}")
    return n


def _float(value: Any, fn: str) -> float:
    n = _number(value, fn)
    try:
        return float(n)
    except OverflowError:
        raise EsqlValueError(f"{fn}: {_show(n)} is too large for FLOAT") from None


def _math(fn: str, op: Callable[[float], float], x: Any) -> float | None:
    if x is None:
        return None
    f = _float(x, fn)
    try:
        return op(f)
    except (ValueError, OverflowError):
        raise EsqlValueError(f"{fn}: {_show(x)} is outside the function's domain") from None


def _register_float_functions() -> None:
    table: list[tuple[str, Callable[[float], float], str]] = [
        ("ACOS", math.acos, "arc cosine, in radians"),
        ("ASIN", math.asin, "arc sine, in radians"),
        ("ATAN", math.atan, "arc tangent, in radians"),
        ("COS", math.cos, "cosine of an angle in radians"),
        ("COSH", math.cosh, "hyperbolic cosine"),
        ("COT", lambda x: 1.0 / math.tan(x), "cotangent of an angle in radians"),
        ("DEGREES", math.degrees, "radians converted to degrees"),
        ("EXP", math.exp, "e raised to the argument"),
        ("LN", math.log, "natural logarithm"),
        ("LOG10", math.log10, "base-10 logarithm"),
        ("RADIANS", math.radians, "degrees converted to radians"),
        ("SIN", math.sin, "sine of an angle in radians"),
        ("SINH", math.sinh, "hyperbolic sine"),
        ("TAN", math.tan, "tangent of an angle in radians"),
        ("TANH", math.tanh, "hyperbolic tangent"),
    ]
    for name, op, text in table:
        impl = _float_function(name, op)
        impl.__doc__ = f"The FLOAT {text}."
        builtin(name, "numeric", f"{name}(x) → FLOAT", 1, 1, aliases=("LOG",) if name == "LN" else ())(impl)


def _float_function(name: str, op: Callable[[float], float]) -> Callable[[Any], float | None]:
    def impl(x: Any) -> float | None:
        try:
            return _math(name, op, x)
        except ZeroDivisionError:
            raise EsqlValueError(f"{name}: {_show(x)} is outside the function's domain") from None

    impl.__name__ = name.lower()
    return impl


_register_float_functions()


@builtin("ATAN2", "numeric", "ATAN2(y, x) → FLOAT", 2, 2)
def atan2(y: Any, x: Any) -> float | None:
    """The angle in radians of the point (x, y)."""
    if y is None or x is None:
        return None
    return math.atan2(_float(y, "ATAN2"), _float(x, "ATAN2"))


@builtin("SQRT", "numeric", "SQRT(x) → FLOAT", 1, 1)
def sqrt(x: Any) -> float | None:
    """The FLOAT square root of a non-negative number."""
    if x is None:
        return None
    f = _float(x, "SQRT")
    if f < 0:
        raise EsqlValueError(f"SQRT: {_show(x)} is negative")
    return math.sqrt(f)


@builtin("ABS", "numeric", "ABS(x) → same type", 1, 1, aliases=("ABSVAL",))
def abs_(x: Any) -> Any:
    """The absolute value, in the argument's type."""
    if x is None:
        return None
    n = _number(x, "ABS")
    if type(n) is int:
        return _check_int(abs(n), f"ABS({n})")
    return abs(n)


@builtin("SIGN", "numeric", "SIGN(x) → same type", 1, 1)
def sign(x: Any) -> Any:
    """-1, 0 or 1 in the argument's type."""
    if x is None:
        return None
    n = _number(x, "SIGN")
    s = (n > 0) - (n < 0)
    if type(n) is float:
        return float(s)
    if type(n) is Decimal:
        return Decimal(s)
    return s


def _to_integral(n: Any, rounding: str, fn: str) -> Any:
    if type(n) is int:
        return n
    if type(n) is float:
        if math.isnan(n) or math.isinf(n):
            return n
        return float(math.ceil(n) if rounding == decimal.ROUND_CEILING else math.floor(n))
    return n.to_integral_value(rounding=rounding)


@builtin("CEIL", "numeric", "CEIL(x) → same type", 1, 1, aliases=("CEILING",))
def ceil(x: Any) -> Any:
    """The smallest integral value not less than the argument, in its type."""
    if x is None:
        return None
    return _to_integral(_number(x, "CEIL"), decimal.ROUND_CEILING, "CEIL")


@builtin("FLOOR", "numeric", "FLOOR(x) → same type", 1, 1)
def floor(x: Any) -> Any:
    """The largest integral value not greater than the argument, in its type."""
    if x is None:
        return None
    return _to_integral(_number(x, "FLOOR"), decimal.ROUND_FLOOR, "FLOOR")


@builtin("MOD", "numeric", "MOD(dividend, divisor) → INTEGER", 2, 2)
def mod(dividend: Any, divisor: Any) -> Any:
    """The remainder of dividend / divisor; negative only when the dividend is."""
    if dividend is None or divisor is None:
        return None
    a, b = _number(dividend, "MOD", "dividend"), _number(divisor, "MOD", "divisor")
    if b == 0:
        raise EsqlValueError(f"MOD: division by zero ({_show(a)}, {_show(b)})")
    if type(a) is int and type(b) is int:
        r = abs(a) % abs(b)
        return -r if a < 0 else r
    if type(a) is float or type(b) is float:
        return math.fmod(float(a), float(b))
    return DECIMAL_CONTEXT.remainder(Decimal(a), Decimal(b))


@builtin("POWER", "numeric", "POWER(base, exponent) → number", 2, 2)
def power(base: Any, exponent: Any) -> Any:
    """``base`` raised to ``exponent``: INTEGER for INTEGER operands with a non-negative exponent."""
    if base is None or exponent is None:
        return None
    a, b = _number(base, "POWER", "base"), _number(exponent, "POWER", "exponent")
    try:
        if type(a) is int and type(b) is int and b >= 0:
            if abs(a) > 1 and b > 64:
                raise EsqlValueError(f"INTEGER overflow: POWER({a}, {b}) is outside the 64-bit range")
            return _check_int(a**b, f"POWER({a}, {b})")
        if type(a) is Decimal and type(b) is int:
            if a == 0 and b < 0:
                raise EsqlValueError(f"POWER: 0 raised to the negative power {b}")
            return DECIMAL_CONTEXT.power(a, b)
        fa, fb = float(a), float(b)
        if fa == 0 and fb < 0:
            raise EsqlValueError(f"POWER: 0 raised to the negative power {_show(b)}")
        if fa < 0 and not fb.is_integer():
            raise EsqlValueError(f"POWER: a negative base {_show(a)} with the fractional exponent {_show(b)}")
        return math.pow(fa, fb)
    except OverflowError:
        raise EsqlValueError(f"POWER({_show(a)}, {_show(b)}) overflows") from None


def _mode(mode: Any) -> str:
    if mode is None:
        # IBM's ROUND reference: "If you do not specify MODE, a value of ROUND_HALF_EVEN is used."
        return decimal.ROUND_HALF_EVEN
    key = str(mode).strip().upper()
    if not key.startswith("ROUND_"):
        key = "ROUND_" + key
    try:
        return ROUND_MODES[key]
    except KeyError:
        raise EsqlValueError(
            f"ROUND: unknown MODE {_show(mode)} (expected one of {', '.join(ROUND_MODES)})"
        ) from None


def _round_decimal(d: Decimal, places: int, rounding: str) -> Decimal:
    exp = Decimal(1).scaleb(-places)
    return d.quantize(exp, rounding=rounding, context=DECIMAL_CONTEXT)


@builtin("ROUND", "numeric", "ROUND(source, places [MODE mode]) → same type", 2, 3)
def round_(source: Any, places: Any, mode: Any = None) -> Any:
    """The source rounded to ``places`` decimal places (negative: left of the point); default ROUND_HALF_EVEN."""
    if source is None or places is None:
        return None
    n = _number(source, "ROUND", "source")
    p = _integer(places, "ROUND", "places")
    rounding = _mode(mode)
    if type(n) is int:
        if p >= 0:
            return n
        r = _round_decimal(Decimal(n), p, rounding)
        return _check_int(int(r), f"ROUND({n}, {p})")
    if type(n) is float:
        if math.isnan(n) or math.isinf(n):
            return n
        return float(_round_decimal(Decimal(repr(n)), p, rounding))
    assert isinstance(n, Decimal)
    r = _round_decimal(n, p, rounding)
    # a negative place count gives an integral DECIMAL without an exponent
    return r.quantize(Decimal(1), context=DECIMAL_CONTEXT) if p < 0 else r


@builtin("TRUNCATE", "numeric", "TRUNCATE(source, places) → same type", 2, 2)
def truncate(source: Any, places: Any) -> Any:
    """The source truncated (toward zero) to ``places`` decimal places."""
    if source is None or places is None:
        return None
    return round_(source, places, "ROUND_DOWN")


def _bit_operands(fn: str, args: tuple[Any, ...]) -> list[int] | None:
    if any(a is None for a in args):
        return None
    return [_integer(a, fn) for a in args]


@builtin("BITAND", "numeric", "BITAND(a, b, …) → INTEGER", 2, None)
def bitand(*args: Any) -> int | None:
    """The bitwise AND of two or more INTEGERs."""
    ops = _bit_operands("BITAND", args)
    if ops is None:
        return None
    r = ops[0]
    for x in ops[1:]:
        r &= x
    return r


@builtin("BITOR", "numeric", "BITOR(a, b, …) → INTEGER", 2, None)
def bitor(*args: Any) -> int | None:
    """The bitwise OR of two or more INTEGERs."""
    ops = _bit_operands("BITOR", args)
    if ops is None:
        return None
    r = ops[0]
    for x in ops[1:]:
        r |= x
    return r


@builtin("BITXOR", "numeric", "BITXOR(a, b, …) → INTEGER", 2, None)
def bitxor(*args: Any) -> int | None:
    """The bitwise exclusive OR of two or more INTEGERs."""
    ops = _bit_operands("BITXOR", args)
    if ops is None:
        return None
    r = ops[0]
    for x in ops[1:]:
        r ^= x
    return r


@builtin("BITNOT", "numeric", "BITNOT(a) → INTEGER", 1, 1)
def bitnot(a: Any) -> int | None:
    """The bitwise complement of a 64-bit INTEGER."""
    if a is None:
        return None
    r = ~_integer(a, "BITNOT")
    assert INT_MIN <= r <= INT_MAX
    return r


_RANDOM = random.Random()


@builtin("RAND", "numeric", "RAND([seed]) → FLOAT", 0, 1)
def rand(seed: Any = None) -> float:
    """A pseudo-random FLOAT in [0, 1); a seed restarts the sequence."""
    if seed is not None:
        _RANDOM.seed(_integer(seed, "RAND", "seed"))
    return _RANDOM.random()
