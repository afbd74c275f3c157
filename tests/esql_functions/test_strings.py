"""String functions, table-driven, and checked against direct implementations with hypothesis."""

from __future__ import annotations

from typing import Any

import pytest
from esql.functions import ENVIRONMENT
from esql.types import Bit
from esql.values import EsqlValueError
from hypothesis import given, settings
from hypothesis import strategies as st


def call(name: str, *args: Any) -> Any:
    return ENVIRONMENT[name].impl(*args)


TABLE = [
    ("LENGTH", ("Hello",), 5),
    ("LENGTH", (b"\x00\x01",), 2),
    ("LENGTH", (Bit("101"),), 3),
    ("LENGTH", ("",), 0),
    ("CHARACTER_LENGTH", ("ab",), 2),
    ("LEFT", ("Hello", 2), "He"),
    ("LEFT", ("Hello", 9), "Hello"),
    ("LEFT", (b"\x01\x02\x03", 1), b"\x01"),
    ("RIGHT", ("Hello", 3), "llo"),
    ("RIGHT", ("Hello", 0), ""),
    ("UPPER", ("abc Ä",), "ABC Ä"),
    ("UCASE", ("x",), "X"),
    ("LOWER", ("ABC",), "abc"),
    ("LCASE", ("X",), "x"),
    ("TRIM", ("  ab  ", "BOTH", None), "ab"),
    ("TRIM", ("  ab  ", "LEADING", None), "ab  "),
    ("TRIM", ("  ab  ", "TRAILING", None), "  ab"),
    ("TRIM", ("000120", "LEADING", "0"), "120"),
    ("TRIM", ("xxaxx", "BOTH", "x"), "a"),
    ("TRIM", (b"\x00\x01\x00", "BOTH", None), b"\x01"),
    ("TRIM", (Bit("0010100"), "BOTH", None), Bit("101")),
    ("LTRIM", ("  a ",), "a "),
    ("RTRIM", ("  a ",), "  a"),
    ("SUBSTRING", ("Hello", 2, 3), "ell"),
    ("SUBSTRING", ("Hello", 2, None), "ello"),
    ("SUBSTRING", ("Hello", 0, 2), "H"),
    ("SUBSTRING", ("Hello", -1, 3), "H"),
    ("SUBSTRING", ("Hello", 9, 2), ""),
    ("SUBSTRING", (b"\x01\x02\x03", 2, 1), b"\x02"),
    ("SUBSTRING", (Bit("1100"), 2, 2), Bit("10")),
    ("SUBSTRING_BEFORE", ("key=value", "="), "key"),
    ("SUBSTRING_BEFORE", ("keyvalue", "="), ""),
    ("SUBSTRING_AFTER", ("key=value=x", "="), "value=x"),
    ("SUBSTRING_AFTER", ("keyvalue", "="), ""),
    ("POSITION", ("l", "Hello", None, None), 3),
    ("POSITION", ("l", "Hello", None, 2), 4),
    ("POSITION", ("l", "Hello", 4, None), 4),
    ("POSITION", ("z", "Hello", None, None), 0),
    ("POSITION", ("", "Hello", None, None), 1),
    ("POSITION", ("l", "Hello", -1, None), 4),
    ("POSITION", ("l", "Hello", -1, 2), 3),
    ("POSITION", ("l", "Hello", None, -1), 0),
    ("POSITION", ("o", "Hello", 1, 3), 0),
    ("POSITION", (b"\x02", b"\x01\x02\x02", None, 2), 3),
    ("REPLACE", ("a-b-c", "-", "+"), "a+b+c"),
    ("REPLACE", ("a-b-c", "-", None), "abc"),
    ("REPLACE", ("aaa", "aa", "b"), "ba"),
    ("REPLICATE", ("ab", 3), "ababab"),
    ("REPLICATE", ("ab", 0), ""),
    ("SPACE", (3,), "   "),
    ("TRANSLATE", ("abcabc", "ab", "xy"), "xycxyc"),
    ("TRANSLATE", ("abcabc", "ab", "x"), "xcxc"),
    ("TRANSLATE", ("abcabc", "ab", None), "cc"),
    ("TRANSLATE", ("a-b", "-", "_"), "a_b"),
    ("TRANSLATE", (b"\x00\x01\x02\x01", b"\x01\x02", b"\xff"), b"\x00\xff\xff"),
    ("TRANSLATE", (Bit("0110"), Bit("1"), Bit("0")), Bit("0000")),
    ("OVERLAY", ("abcdef", "XY", 3, None), "abXYef"),
    ("OVERLAY", ("abcdef", "XY", 3, 0), "abXYcdef"),
    ("OVERLAY", ("abcdef", "XY", 3, 4), "abXY"),
    ("OVERLAY", ("abc", "XY", 5, None), "abcXY"),
    ("CONTAINS", ("Hello", "ell"), True),
    ("CONTAINS", ("Hello", "xyz"), False),
    ("STARTSWITH", ("Hello", "He"), True),
    ("STARTSWITH", ("Hello", "he"), False),
    ("ENDSWITH", ("Hello", "lo"), True),
    ("ENDSWITH", (b"\x01\x02", b"\x02"), True),
    ("BASE64ENCODE", (b"hello",), "aGVsbG8="),
    ("BASE64ENCODE", ("é",), "w6k="),
    ("BASE64DECODE", ("aGVsbG8=",), b"hello"),
    ("BASE64DECODE", ("aGVs\nbG8=",), b"hello"),
    ("LENGTH", (12345,), 5),
]


@pytest.mark.parametrize(("name", "args", "expected"), TABLE)
def test_string_function(name: str, args: tuple[Any, ...], expected: Any) -> None:
    result = call(name, *args)
    assert result == expected
    assert type(result) is type(expected)


NULLS = [
    ("LENGTH", 1),
    ("LEFT", 2),
    ("RIGHT", 2),
    ("UPPER", 1),
    ("LOWER", 1),
    ("LTRIM", 1),
    ("RTRIM", 1),
    ("SUBSTRING", 3),
    ("SUBSTRING_BEFORE", 2),
    ("SUBSTRING_AFTER", 2),
    ("POSITION", 4),
    ("REPLACE", 3),
    ("REPLICATE", 2),
    ("SPACE", 1),
    ("TRANSLATE", 3),
    ("OVERLAY", 4),
    ("CONTAINS", 2),
    ("STARTSWITH", 2),
    ("ENDSWITH", 2),
    ("BASE64ENCODE", 1),
    ("BASE64DECODE", 1),
]


@pytest.mark.parametrize(("name", "arity"), NULLS)
def test_null_source_gives_null(name: str, arity: int) -> None:
    args: list[Any] = [None] + ["a"] * (arity - 1)
    if name in ("LEFT", "RIGHT", "REPLICATE"):
        args[1] = 1
    if name == "OVERLAY":
        args[2] = 1
    if name in ("SUBSTRING",):
        args[1] = 1
    assert call(name, *args) is None


ERRORS = [
    ("LEFT", ("abc", -1), "LEFT: length must not be negative, got -1"),
    ("SUBSTRING", ("abc", 1, -2), "SUBSTRING: FOR length must not be negative, got -2"),
    ("SUBSTRING", ("abc", "x", 1), "SUBSTRING: FROM must be INTEGER, not CHARACTER 'x'"),
    ("UPPER", (b"\x01",), "UPPER: source must be CHARACTER, not BLOB X'01'"),
    ("REPLACE", ("abc", "", "x"), "REPLACE: the search string must not be empty"),
    ("SPACE", (-1,), "SPACE: count must not be negative, got -1"),
    ("TRIM", ("abc", "MIDDLE", None), "TRIM: expected BOTH, LEADING or TRAILING, not 'MIDDLE'"),
    ("OVERLAY", ("abc", "x", 0, None), "OVERLAY: FROM must be at least 1, got 0"),
    ("BASE64DECODE", ("ab$c",), "BASE64DECODE: character '$' at position 3 is not Base64"),
    ("CONTAINS", (b"\x01", Bit("1")), "CONTAINS: cannot mix BLOB X'01' with BIT B'1'"),
    ("LENGTH", ([1],), "LENGTH: source must be CHARACTER, BLOB or BIT, not LIST [1]"),
]


@pytest.mark.parametrize(("name", "args", "message"), ERRORS)
def test_string_function_errors(name: str, args: tuple[Any, ...], message: str) -> None:
    with pytest.raises(EsqlValueError) as info:
        call(name, *args)
    assert str(info.value) == message


# -- properties against direct implementations -------------------------------------------------

texts = st.text(alphabet="abcxyz -", max_size=20)


def direct_substring(s: str, start: int, length: int | None) -> str:
    # SQL's rule written out character by character: keep positions in [start, start + length)
    return "".join(
        ch for pos, ch in enumerate(s, 1) if pos >= start and (length is None or pos < start + length)
    )


@settings(max_examples=400, deadline=None)
@given(texts, st.integers(-5, 25), st.one_of(st.none(), st.integers(0, 25)))
def test_substring_matches_direct(s: str, start: int, length: int | None) -> None:
    assert call("SUBSTRING", s, start, length) == direct_substring(s, start, length)


def direct_position(needle: str, hay: str, start: int, repeat: int) -> int:
    hits = [i + 1 for i in range(len(hay)) if hay[i:].startswith(needle) and i + 1 >= start]
    return hits[repeat - 1] if len(hits) >= repeat else 0


@settings(max_examples=400, deadline=None)
@given(
    st.text(alphabet="ab", min_size=1, max_size=3),
    st.text(alphabet="abc", max_size=20),
    st.integers(1, 22),
    st.integers(1, 5),
)
def test_position_matches_direct(needle: str, hay: str, start: int, repeat: int) -> None:
    assert call("POSITION", needle, hay, start, repeat) == direct_position(needle, hay, start, repeat)


def direct_position_backward(needle: str, hay: str, repeat: int) -> int:
    hits = [i + 1 for i in range(len(hay)) if hay[i:].startswith(needle)]
    hits.reverse()
    return hits[repeat - 1] if len(hits) >= repeat else 0


@settings(max_examples=300, deadline=None)
@given(
    st.text(alphabet="ab", min_size=1, max_size=2), st.text(alphabet="abc", max_size=20), st.integers(1, 5)
)
def test_backward_position_matches_direct(needle: str, hay: str, repeat: int) -> None:
    assert call("POSITION", needle, hay, -1, repeat) == direct_position_backward(needle, hay, repeat)


@settings(max_examples=300, deadline=None)
@given(texts, st.sampled_from(["BOTH", "LEADING", "TRAILING"]), st.sampled_from([None, " ", "-", "a"]))
def test_trim_matches_direct(s: str, where: str, singleton: str | None) -> None:
    ch = singleton or " "
    expected = s
    if where in ("BOTH", "LEADING"):
        while expected.startswith(ch):
            expected = expected[1:]
    if where in ("BOTH", "TRAILING"):
        while expected.endswith(ch):
            expected = expected[:-1]
    assert call("TRIM", s, where, singleton) == expected


@settings(max_examples=300, deadline=None)
@given(texts, st.integers(0, 25))
def test_left_right_length(s: str, n: int) -> None:
    left, right = call("LEFT", s, n), call("RIGHT", s, n)
    assert call("LENGTH", left) == min(n, len(s))
    assert left + s[len(left) :] == s
    assert s[: len(s) - len(right)] + right == s


@settings(max_examples=300, deadline=None)
@given(texts, st.text(alphabet="xy", min_size=1, max_size=2), st.text(alphabet="z", max_size=2))
def test_replace_matches_direct(s: str, find: str, repl: str) -> None:
    out = []
    i = 0
    while i < len(s):
        if s.startswith(find, i):
            out.append(repl)
            i += len(find)
        else:
            out.append(s[i])
            i += 1
    assert call("REPLACE", s, find, repl) == "".join(out)


@settings(max_examples=300, deadline=None)
@given(texts, texts, st.integers(1, 25), st.one_of(st.none(), st.integers(0, 25)))
def test_overlay_is_substring_splice(s: str, r: str, start: int, length: int | None) -> None:
    n = len(r) if length is None else length
    expected = direct_substring(s, 1, start - 1) + r + direct_substring(s, start + n, None)
    assert call("OVERLAY", s, r, start, length) == expected


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=100))
def test_base64_round_trip(data: bytes) -> None:
    assert call("BASE64DECODE", call("BASE64ENCODE", data)) == data


# -- BLOB and BIT behave as CHARACTER does, unit for unit ----------------------------------------

_SAME_SHAPE: list[tuple[str, int]] = [
    ("LENGTH", 0),
    ("LEFT", 1),
    ("RIGHT", 1),
    ("SUBSTRING", 2),
    ("SUBSTRING_BEFORE", 0),
    ("SUBSTRING_AFTER", 0),
    ("POSITION", 2),
    ("REPLACE", 0),
    ("TRANSLATE", 0),
    ("OVERLAY", 2),
    ("CONTAINS", 0),
    ("STARTSWITH", 0),
    ("ENDSWITH", 0),
    ("TRIM", 0),
    ("REPLICATE", 1),
]


def _as_text(value: Any) -> Any:
    if isinstance(value, bytes):
        return value.decode("latin-1")
    if isinstance(value, Bit):
        return value.bits
    return value


def _args(name: str, source: Any, other: Any, third: Any, n1: int, n2: int | None) -> tuple[Any, ...]:
    if name in ("LEFT", "RIGHT", "REPLICATE"):
        return (source, n1)
    if name == "SUBSTRING":
        return (source, n1, n2)
    if name == "POSITION":
        return (other, source, n1 or None, n2 or None)
    if name == "OVERLAY":
        return (source, other, max(n1, 1), n2)
    if name in ("REPLACE", "TRANSLATE"):
        return (source, other, third)
    if name == "TRIM":
        return (source, "BOTH", other[:1])
    if name == "LENGTH":
        return (source,)
    return (source, other)


@settings(max_examples=600, deadline=None)
@given(
    st.sampled_from(_SAME_SHAPE),
    st.sampled_from(["blob", "bit"]),
    st.data(),
    st.integers(-3, 12),
    st.one_of(st.none(), st.integers(0, 12)),
)
def test_blob_and_bit_match_character(
    spec: tuple[str, int], kind: str, data: st.DataObject, n1: int, n2: int | None
) -> None:
    name, _ = spec
    if kind == "blob":
        units = st.binary(min_size=0, max_size=10)
        source = data.draw(st.binary(max_size=10))
        other = data.draw(st.binary(min_size=1, max_size=2))
        third = data.draw(units)
    else:
        source = Bit(data.draw(st.text(alphabet="01", max_size=10)))
        other = Bit(data.draw(st.text(alphabet="01", min_size=1, max_size=2)))
        third = Bit(data.draw(st.text(alphabet="01", max_size=3)))
    if name in ("LEFT", "RIGHT", "REPLICATE"):
        n1 = abs(n1)
    args = _args(name, source, other, third, n1, n2)
    text_args = tuple(_as_text(a) for a in args)
    try:
        expected = call(name, *text_args)
    except EsqlValueError as exc:
        with pytest.raises(EsqlValueError) as info:
            call(name, *args)
        assert str(info.value).split(":")[0] == str(exc).split(":")[0]
        return
    assert _as_text(call(name, *args)) == expected
