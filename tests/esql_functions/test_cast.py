"""CAST in all its forms: plain, FORMAT (numbers and datetimes), CCSID, ENCODING, DEFAULT, multi-value."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal as D
from typing import Any

import pytest
from esql import values as v
from esql.cast import cast
from esql.types import Bit, GmtTime, GmtTimestamp, Interval, Time, Timestamp
from esql.values import EsqlValueError
from hypothesis import given, settings
from hypothesis import strategies as st

PLAIN = [
    # value, type, expected
    ("42", "INTEGER", 42),
    (" -7 ", "INT", -7),
    ("0x1F", "INTEGER", 31),
    ("12.9", "INTEGER", 12),
    (D("-12.9"), "INTEGER", -12),
    (12.9, "INTEGER", 12),
    (True, "INTEGER", 1),
    ("3.14", "DECIMAL", D("3.14")),
    ("1e3", "DECIMAL", D("1e3")),
    (7, "DECIMAL", D(7)),
    (0.1, "DECIMAL", D("0.1")),
    ("1.5E2", "FLOAT", 150.0),
    (3, "FLOAT", 3.0),
    ("NaN", "FLOAT", None),  # checked separately below
    (42, "CHARACTER", "42"),
    (D("1.50"), "CHARACTER", "1.50"),
    (D("1E+2"), "CHARACTER", "100"),
    (150.0, "CHARACTER", "1.5E+2"),
    (0.001, "CHAR", "1E-3"),
    (-2.5, "CHARACTER", "-2.5E+0"),
    (True, "CHARACTER", "TRUE"),
    (b"\x0d\x0a", "CHARACTER", "X'0D0A'"),
    (Bit("101"), "CHARACTER", "B'101'"),
    (dt.date(2024, 2, 29), "CHARACTER", "DATE '2024-02-29'"),
    (Time(13, 45, 0, 500000), "CHARACTER", "TIME '13:45:00.5'"),
    (GmtTime(1, 2, 3), "CHARACTER", "GMTTIME '01:02:03'"),
    (Timestamp(2024, 2, 29, 13, 45), "CHARACTER", "TIMESTAMP '2024-02-29 13:45:00'"),
    (GmtTimestamp(2024, 2, 29, 13, 45), "CHARACTER", "GMTTIMESTAMP '2024-02-29 13:45:00'"),
    (
        Interval(micros=90 * 60_000_000, qualifier="HOUR TO MINUTE"),
        "CHARACTER",
        "INTERVAL '1:30' HOUR TO MINUTE",
    ),
    ("true", "BOOLEAN", True),
    ("FALSE", "BOOLEAN", False),
    ("UNKNOWN", "BOOLEAN", None),
    (0, "BOOLEAN", False),
    ("2024-02-29", "DATE", dt.date(2024, 2, 29)),
    ("DATE '2024-02-29'", "DATE", dt.date(2024, 2, 29)),
    ("13:45:00", "TIME", Time(13, 45)),
    ("2024-02-29 13:45:00.25", "TIMESTAMP", Timestamp(2024, 2, 29, 13, 45, 0, 250000)),
    ("2024-02-29T13:45:00", "GMTTIMESTAMP", GmtTimestamp(2024, 2, 29, 13, 45)),
    (Timestamp(2024, 2, 29, 13, 45), "DATE", dt.date(2024, 2, 29)),
    (Timestamp(2024, 2, 29, 13, 45), "TIME", Time(13, 45)),
    (dt.date(2024, 2, 29), "TIMESTAMP", Timestamp(2024, 2, 29)),
    ("0D0A", "BLOB", b"\r\n"),
    ("X'0D0A'", "BLOB", b"\r\n"),
    ("0101", "BIT", Bit("0101")),
    (b"\x80", "BIT", Bit("10000000")),
    (Bit("0000000100000010"), "BLOB", b"\x01\x02"),
    ("90", "INTERVAL MINUTE", Interval(micros=90 * 60_000_000, qualifier="MINUTE")),
    ("1:30", "INTERVAL HOUR TO MINUTE", Interval(micros=90 * 60_000_000, qualifier="HOUR TO MINUTE")),
    (3, "INTERVAL DAY", Interval(micros=3 * 86_400_000_000, qualifier="DAY")),
    ("12.345", "DECIMAL(5, 2)", D("12.35")),
    (None, "INTEGER", None),
]


@pytest.mark.parametrize(("value", "target", "expected"), PLAIN)
def test_plain_cast(value: Any, target: str, expected: Any) -> None:
    result = cast(value, target)
    if expected is None and value == "NaN":
        assert result != result
        return
    assert result == expected
    assert type(result) is type(expected)


CAST_ERRORS = [
    ("abc", "INTEGER", "cannot cast CHARACTER 'abc' to INTEGER: not a number"),
    ("99999999999999999999", "INTEGER", "INTEGER overflow: CHARACTER '99999999999999999999'"),
    ("1.2.3", "DECIMAL", "cannot cast CHARACTER '1.2.3' to DECIMAL: not a number"),
    ("x", "FLOAT", "cannot cast CHARACTER 'x' to FLOAT: not a number"),
    ("yes", "BOOLEAN", "cannot cast CHARACTER 'yes' to BOOLEAN: expected TRUE, FALSE or UNKNOWN"),
    ("2024-13-01", "DATE", "cannot cast CHARACTER '2024-13-01' to DATE: invalid DATE text"),
    ("TIME '10:00:00'", "DATE", "cannot cast CHARACTER 'TIME ''10:00:00''' to DATE: it is a TIME literal"),
    ("0G", "BLOB", "cannot cast CHARACTER '0G' to BLOB: not hexadecimal digits"),
    ("012", "BLOB", "cannot cast CHARACTER '012' to BLOB: an odd number of hex digits"),
    ("12", "BIT", "cannot cast CHARACTER '12' to BIT"),
    (dt.date(2024, 1, 1), "INTEGER", "cannot cast DATE DATE '2024-01-01' to INTEGER"),
    (1, "TIME", "cannot cast INTEGER 1 to TIME"),
    ("1", "WIDGET", "unknown CAST target type 'WIDGET'"),
    ("1", "INTERVAL", "CAST of CHARACTER '1' to INTERVAL needs a qualifier"),
    (b"\x00" * 9, "INTEGER", "cannot cast BLOB of 9 bytes to INTEGER: at most 8 bytes"),
    ("123.456", "DECIMAL(4, 2)", "DECIMAL 123.456 does not fit DECIMAL(4, 2)"),
]


@pytest.mark.parametrize(("value", "target", "message"), CAST_ERRORS)
def test_cast_errors_name_value_and_type(value: Any, target: str, message: str) -> None:
    with pytest.raises(EsqlValueError) as info:
        cast(value, target)
    assert str(info.value).startswith(message)


def test_default_replaces_a_failed_cast() -> None:
    assert cast("abc", "INTEGER", default=0) == 0
    assert cast("12", "INTEGER", default=0) == 12
    assert cast("abc", "INTEGER", default="7") == 7
    assert cast("abc", "INTEGER", default=None) is None
    assert cast("xx", "DATE", default=dt.date(2000, 1, 1)) == dt.date(2000, 1, 1)
    # NULL casts to NULL, not to the default
    assert cast(None, "INTEGER", default=0) is None
    with pytest.raises(EsqlValueError, match="cannot cast CHARACTER 'bad' to INTEGER"):
        cast("abc", "INTEGER", default="bad")


NUMBER_FORMATS = [
    (1234567.891, "#,##0.00", "1,234,567.89"),
    (D("1234.5"), "#,##0.00", "1,234.50"),
    (0, "#,##0.00", "0.00"),
    (D("0.5"), "#.##", ".5"),
    (D("-1234.5"), "#,##0.00", "-1,234.50"),
    (D("-1234.5"), "#,##0.00;(#,##0.00)", "(1,234.50)"),
    (42, "000000", "000042"),
    (D("0.256"), "0.0%", "25.6%"),
    (D("2.345"), "0.00", "2.34"),  # DecimalFormat rounds half even
    (D("2.355"), "0.00", "2.36"),
    (1234, "'EUR '#,##0", "EUR 1,234"),
    (D("12345.678"), "0.###E0", "1.235E4"),
    (D("0.00012"), "0.00E00", "1.20E-04"),
    (1234567, "#,####", "123,4567"),
    (5, "0.", "5."),
    (D("1234567.891"), "#,##0.00:groupsep=.:decsep=,", "1.234.567,89"),
    (D("-1234.5"), "#,##0.00;(#,##0.00):groupsep= ", "(1 234.50)"),
    (D("12345"), "0.00e0", "1.23E4"),
]


@pytest.mark.parametrize(("value", "pattern", "expected"), NUMBER_FORMATS)
def test_cast_number_to_character_with_format(value: Any, pattern: str, expected: str) -> None:
    assert cast(value, "CHARACTER", format=pattern) == expected


NUMBER_PARSES = [
    ("1,234.50", "#,##0.00", "DECIMAL", D("1234.50")),
    ("1,234", "#,##0", "INTEGER", 1234),
    ("(1,234.50)", "#,##0.00;(#,##0.00)", "DECIMAL", D("-1234.50")),
    ("-12", "0", "INTEGER", -12),
    ("25.6%", "0.0%", "DECIMAL", D("0.256")),
    ("EUR 1,234", "'EUR '#,##0", "INTEGER", 1234),
    ("1.5", "0.0", "FLOAT", 1.5),
    ("1.234.567,89", "#,##0.00:groupsep=.:decsep=,", "DECIMAL", D("1234567.89")),
    ("1 234,5", "#,##0.0:groupsep= _:decsep=,", "DECIMAL", D("1234.5")),
    ("1_234,5", "#,##0.0:groupsep= _:decsep=,", "DECIMAL", D("1234.5")),
]


@pytest.mark.parametrize(("text", "pattern", "target", "expected"), NUMBER_PARSES)
def test_cast_character_to_number_with_format(text: str, pattern: str, target: str, expected: Any) -> None:
    result = cast(text, target, format=pattern)
    assert result == expected
    assert type(result) is type(expected)


def test_number_format_errors() -> None:
    with pytest.raises(
        EsqlValueError, match=r"cannot parse CHARACTER '12a' with FORMAT '0': not a number at position 3"
    ):
        cast("12a", "INTEGER", format="0")
    with pytest.raises(EsqlValueError, match="has no digits"):
        cast(1, "CHARACTER", format="abc")
    with pytest.raises(EsqlValueError, match="unterminated quote"):
        cast(1, "CHARACTER", format="'abc0")
    assert cast("12a", "INTEGER", format="0", default=-1) == -1
    with pytest.raises(EsqlValueError, match="expected ':groupsep=chars' or ':decsep=chars', not 'sep=x'"):
        cast(1, "CHARACTER", format="0:sep=x")
    with pytest.raises(EsqlValueError, match="groupsep and decsep must not share a character"):
        cast(1, "CHARACTER", format="0:groupsep=.:decsep=.")
    with pytest.raises(EsqlValueError, match="not a number at position 6"):
        cast("1,234.5", "DECIMAL", format="#,##0.0:groupsep= :decsep=,")


TS = Timestamp(2024, 2, 29, 13, 5, 9, 123456)
DATETIME_FORMATS = [
    (TS, "yyyy-MM-dd HH:mm:ss", "2024-02-29 13:05:09"),
    (TS, "yyyyMMddHHmmss", "20240229130509"),
    (TS, "yyyy-MM-dd'T'HH:mm:ss.SSS", "2024-02-29T13:05:09.123"),
    (TS, "dd/MM/yy h:mm a", "29/02/24 1:05 PM"),
    (TS, "EEE, d MMM yyyy", "Thu, 29 Feb 2024"),
    (TS, "EEEE d MMMM", "Thursday 29 February"),
    (TS, "D", "60"),
    (TS, "'at' HH 'o''clock'", "at 13 o'clock"),
    (TS, "SSSSSS", "123456"),
    (dt.date(2024, 2, 29), "dd.MM.yyyy", "29.02.2024"),
    (Time(7, 8, 9), "HH:mm", "07:08"),
    (Time(0, 30), "hh:mm a k", "12:30 AM 24"),
    (GmtTimestamp(2024, 2, 29, 13, 5, 9), "yyyy-MM-dd HH:mm:ssZZZZZ", "2024-02-29 13:05:09Z"),
    (GmtTimestamp(2024, 2, 29, 13, 5, 9), "IU", "2024-02-29T13:05:09Z"),
    (GmtTimestamp(2024, 2, 29, 13, 5, 9, 500000), "I", "2024-02-29T13:05:09.500Z"),
    (GmtTimestamp(2024, 2, 29, 13, 5, 9, 123456), "IU", "2024-02-29T13:05:09.123456Z"),
    (GmtTime(13, 5, 9), "T", "13:05:09Z"),
    (dt.date(2024, 2, 29), "I", "2024-02-29"),
    (GmtTimestamp(2024, 2, 29, 13, 5, 9), "yyyy-MM-dd HH:mm:ss Z", "2024-02-29 13:05:09 +0000"),
]


@pytest.mark.parametrize(("value", "pattern", "expected"), DATETIME_FORMATS)
def test_cast_datetime_to_character_with_format(value: Any, pattern: str, expected: str) -> None:
    assert cast(value, "CHARACTER", format=pattern) == expected


DATETIME_PARSES = [
    ("2024-02-29 13:05:09", "yyyy-MM-dd HH:mm:ss", "TIMESTAMP", Timestamp(2024, 2, 29, 13, 5, 9)),
    ("20240229130509", "yyyyMMddHHmmss", "TIMESTAMP", Timestamp(2024, 2, 29, 13, 5, 9)),
    ("20240229", "yyyyMMdd", "DATE", dt.date(2024, 2, 29)),
    ("29/2/2024", "d/M/yyyy", "DATE", dt.date(2024, 2, 29)),
    ("29 Feb 2024", "dd MMM yyyy", "DATE", dt.date(2024, 2, 29)),
    ("Thursday, 29 February 2024", "EEEE, dd MMMM yyyy", "DATE", dt.date(2024, 2, 29)),
    ("1:05 PM", "h:mm a", "TIME", Time(13, 5)),
    ("12:05 AM", "hh:mm a", "TIME", Time(0, 5)),
    ("13:05:09.5", "HH:mm:ss.S", "TIME", Time(13, 5, 9, 500000)),
    (
        "2024-02-29T13:05:09.123+01:00",
        "yyyy-MM-dd'T'HH:mm:ss.SSSXXX",
        "GMTTIMESTAMP",
        GmtTimestamp(2024, 2, 29, 12, 5, 9, 123000),
    ),
    ("2024-02-29T13:05:09.5Z", "I", "GMTTIMESTAMP", GmtTimestamp(2024, 2, 29, 13, 5, 9, 500000)),
    ("2024-060", "yyyy-DDD", "DATE", dt.date(2024, 2, 29)),
    ("2024-02-29", "I", "GMTTIMESTAMP", GmtTimestamp(2024, 2, 29)),
    ("2024-02-29T13:05", "I", "GMTTIMESTAMP", GmtTimestamp(2024, 2, 29, 13, 5)),
    ("2024-02-29 13:05:09,25-02:30", "IU", "GMTTIMESTAMP", GmtTimestamp(2024, 2, 29, 15, 35, 9, 250000)),
    ("13:05:09.25Z", "T", "GMTTIME", GmtTime(13, 5, 9, 250000)),
    ("24-02-29", "yy-MM-dd", "DATE", dt.date(2024, 2, 29)),
]


@pytest.mark.parametrize(("text", "pattern", "target", "expected"), DATETIME_PARSES)
def test_cast_character_to_datetime_with_format(text: str, pattern: str, target: str, expected: Any) -> None:
    result = cast(text, target, format=pattern)
    assert result == expected
    assert type(result) is type(expected)


@pytest.mark.parametrize(
    ("text", "pattern", "message"),
    [
        (
            "2024-02-3x",
            "yyyy-MM-dd",
            "cannot parse CHARACTER '2024-02-3x' with FORMAT 'yyyy-MM-dd': expected the end of the text at "
            "position 10, found 'x'",
        ),
        (
            "2024/02/29",
            "yyyy-MM-dd",
            "cannot parse CHARACTER '2024/02/29' with FORMAT 'yyyy-MM-dd': expected '-' at position 5, found '/02/29'",
        ),
        (
            "2023-02-29",
            "yyyy-MM-dd",
            "cannot parse CHARACTER '2023-02-29' with FORMAT 'yyyy-MM-dd': day is out of range for month",
        ),
        (
            "2024",
            "yyyyMMdd",
            "cannot parse CHARACTER '2024' with FORMAT 'yyyyMMdd': expected a month ('MM') at position 5, found the end of the text",
        ),
    ],
)
def test_datetime_format_errors_say_where(text: str, pattern: str, message: str) -> None:
    with pytest.raises(EsqlValueError) as info:
        cast(text, "DATE", format=pattern)
    assert str(info.value) == message


def test_unknown_pattern_letter() -> None:
    with pytest.raises(EsqlValueError, match="unknown pattern letter 'Q' at position 6"):
        cast(TS, "CHARACTER", format="yyyy-QQ")


CCSID = [
    ("café", 1208, b"caf\xc3\xa9"),
    ("café", 819, b"caf\xe9"),
    ("AB", 1200, b"\x00A\x00B"),
    ("AB", 500, b"\xc1\xc2"),
    ("€", 1252, b"\x80"),
]


@pytest.mark.parametrize(("text", "ccsid", "data"), CCSID)
def test_blob_character_ccsid(text: str, ccsid: int, data: bytes) -> None:
    assert cast(text, "BLOB", ccsid=ccsid) == data
    assert cast(data, "CHARACTER", ccsid=ccsid) == text


def test_ccsid_errors() -> None:
    with pytest.raises(EsqlValueError) as info:
        cast(b"ab\xffcd", "CHARACTER", ccsid=1208)
    assert str(info.value) == (
        "cannot cast BLOB to CHARACTER with CCSID 1208: byte 0xFF at offset 2 is not valid utf-8"
    )
    with pytest.raises(EsqlValueError, match="unsupported CCSID 4242"):
        cast(b"a", "CHARACTER", ccsid=4242)
    with pytest.raises(EsqlValueError, match=r"character '€' at position 2 has no ascii encoding"):
        cast("a€", "BLOB", ccsid=367)


def test_encoding_sets_utf16_byte_order_and_a_bom_wins() -> None:
    assert cast("AB", "BLOB", ccsid=1200) == b"\x00A\x00B"
    assert cast("AB", "BLOB", ccsid=1200, encoding=546) == b"A\x00B\x00"
    assert cast("AB", "BLOB", ccsid=1200, encoding=785) == b"\x00A\x00B"
    assert cast(b"A\x00B\x00", "CHARACTER", ccsid=1200, encoding=546) == "AB"
    assert cast(b"\xff\xfeA\x00", "CHARACTER", ccsid=1200) == "A"
    assert cast(b"\xfe\xff\x00A", "CHARACTER", ccsid=1200, encoding=546) == "A"
    assert cast(b"\xef\xbb\xbfhi", "CHARACTER", ccsid=1208) == "hi"
    with pytest.raises(EsqlValueError) as info:
        cast(b"\xef\xbb\xbfh\xffi", "CHARACTER", ccsid=1208)
    assert str(info.value).endswith("byte 0xFF at offset 4 is not valid utf-8")


def test_encoding_orders_integer_bytes() -> None:
    assert cast(b"\x01\x00", "INTEGER") == 1
    assert cast(b"\x01\x00", "INTEGER", encoding=785) == 256
    assert cast(258, "BLOB", encoding=785) == b"\x00" * 6 + b"\x01\x02"
    assert cast(258, "BLOB", encoding=546) == b"\x02\x01" + b"\x00" * 6


def test_multi_value_casts() -> None:
    assert cast((2024, 2, 29), "DATE") == dt.date(2024, 2, 29)
    assert cast((13, 5, D("9.5")), "TIME") == Time(13, 5, 9, 500000)
    assert cast((dt.date(2024, 2, 29), Time(1, 2, 3)), "TIMESTAMP") == Timestamp(2024, 2, 29, 1, 2, 3)
    assert cast((2024, 2, 29, 1, 2, 3), "GMTTIMESTAMP") == GmtTimestamp(2024, 2, 29, 1, 2, 3)
    assert cast((2024, None, 1), "DATE") is None
    with pytest.raises(EsqlValueError, match=r"cannot cast \(2023, 2, 29\) to DATE: day is out of range"):
        cast((2023, 2, 29), "DATE")
    # a date and time written out as text, as the compiler may pass them
    assert cast(f"{dt.date(2024, 2, 29)} {Time(1, 2, 3)}", "TIMESTAMP") == Timestamp(2024, 2, 29, 1, 2, 3)


# -- round trips -------------------------------------------------------------------------------

int64 = st.integers(min_value=-(2**63), max_value=2**63 - 1)
decimals = st.decimals(allow_nan=False, allow_infinity=False, places=None).filter(
    lambda d: abs(d.adjusted()) < 200
)
finite_floats = st.floats(allow_nan=False, allow_infinity=False)
timestamps = st.datetimes(min_value=dt.datetime(1, 1, 1), max_value=dt.datetime(9999, 12, 31, 23, 59, 59))


@settings(max_examples=300, deadline=None)
@given(int64)
def test_integer_character_round_trip(n: int) -> None:
    assert cast(cast(n, "CHARACTER"), "INTEGER") == n


@settings(max_examples=300, deadline=None)
@given(decimals)
def test_decimal_character_round_trip(d: D) -> None:
    back = cast(cast(d, "CHARACTER"), "DECIMAL")
    assert back == d


@settings(max_examples=300, deadline=None)
@given(finite_floats)
def test_float_character_round_trip(f: float) -> None:
    assert cast(cast(f, "CHARACTER"), "FLOAT") == f


@settings(max_examples=200, deadline=None)
@given(timestamps)
def test_timestamp_character_round_trip(moment: dt.datetime) -> None:
    ts = Timestamp.of(moment)
    assert cast(cast(ts, "CHARACTER"), "TIMESTAMP") == ts
    for pattern in ("yyyy-MM-dd HH:mm:ss.SSSSSS", "yyyyMMddHHmmssSSSSSS", "dd MMM yyyy HH:mm:ss.SSSSSS"):
        assert cast(cast(ts, "CHARACTER", format=pattern), "TIMESTAMP", format=pattern) == ts


@settings(max_examples=200, deadline=None)
@given(st.decimals(min_value=-(10**12), max_value=10**12, places=2))
def test_number_format_round_trip(d: D) -> None:
    text = cast(d, "CHARACTER", format="#,##0.00;(#,##0.00)")
    assert cast(text, "DECIMAL", format="#,##0.00;(#,##0.00)") == d


@settings(max_examples=200, deadline=None)
@given(st.text(), st.sampled_from([1208, 1200, 1202, 13488]))
def test_unicode_ccsid_round_trip(text: str, ccsid: int) -> None:
    text = "".join(ch for ch in text if not 0xD800 <= ord(ch) <= 0xDFFF)
    assert cast(cast(text, "BLOB", ccsid=ccsid), "CHARACTER", ccsid=ccsid) == text


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=64))
def test_blob_hex_round_trip(data: bytes) -> None:
    assert cast(cast(data, "CHARACTER"), "BLOB") == data
    assert cast(cast(data, "BIT"), "BLOB") == data


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(["YEAR", "YEAR TO MONTH", "MONTH"]), st.integers(min_value=-(10**6), max_value=10**6))
def test_year_month_interval_round_trip(qualifier: str, months: int) -> None:
    if qualifier == "YEAR":
        months -= months % 12 if months >= 0 else -((-months) % 12)
    iv = Interval(months=months, qualifier=qualifier)
    assert cast(cast(iv, "CHARACTER"), "INTERVAL " + qualifier) == iv


@settings(max_examples=300, deadline=None)
@given(
    st.sampled_from(
        ["DAY TO SECOND", "HOUR TO SECOND", "MINUTE TO SECOND", "SECOND", "DAY TO MINUTE", "HOUR", "DAY"]
    ),
    st.integers(min_value=-(10**15), max_value=10**15),
)
def test_day_second_interval_round_trip(qualifier: str, micros: int) -> None:
    unit = {"DAY TO MINUTE": 60_000_000, "HOUR": 3_600_000_000, "DAY": 86_400_000_000}.get(qualifier, 1)
    micros = micros // unit * unit if micros >= 0 else -((-micros) // unit * unit)
    iv = Interval(micros=micros, qualifier=qualifier)
    text = iv.text()
    assert v.literal("INTERVAL", text, qualifier) == iv
    assert cast(cast(iv, "CHARACTER"), "INTERVAL " + qualifier) == iv


LOCAL_ZONE_SCRIPT = """
from esql.cast import cast
from esql.types import Timestamp
from esql.functions import ENVIRONMENT as E
winter = Timestamp(2024, 2, 29, 13, 5, 9, 500000)
summer = Timestamp(2024, 7, 1, 12, 0)
print(cast(winter, "CHARACTER", format="I"))
print(cast(winter, "CHARACTER", format="IU"))
print(cast(summer, "CHARACTER", format="yyyy-MM-dd HH:mm ZZZZZ"))
print(cast("2024-07-01T12:00:00Z", "TIMESTAMP", format="I"))
print(cast("2024-02-29 13:05:09 +0000", "TIMESTAMP", format="yyyy-MM-dd HH:mm:ss Z"))
"""


@pytest.mark.timeout(90)
def test_local_time_zone_offsets_follow_the_zone_rules() -> None:
    import os
    import subprocess
    import sys

    env = dict(os.environ, TZ="Europe/Berlin")
    out = subprocess.run(
        [sys.executable, "-c", LOCAL_ZONE_SCRIPT],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout.splitlines()
    assert out == [
        "2024-02-29T13:05:09.500+01:00",
        "2024-02-29T12:05:09.500Z",
        "2024-07-01 12:00 +02:00",
        "2024-07-01 14:00:00",
        "2024-02-29 14:05:09",
    ]


@pytest.mark.parametrize(
    "text", ["12.50", "007.10", "0", "5.", ".5", " 3.25 ", "+1.0", "-0.00", "1E2", "99999999999999999999.123"]
)
def test_cast_text_to_decimal_keeps_its_digits_and_scale(text: str) -> None:
    # plain digits take a short path; signs, spaces, exponents and bare points the general one: both
    # give the number exactly as written, its trailing zeros included
    got = cast(text, "DECIMAL")
    assert type(got) is D
    assert str(got) == str(D(text.strip()))


@pytest.mark.parametrize("text", ["1.2.3", "12,5", "1_000", "12.5x", ""])
def test_cast_text_to_decimal_rejects_what_is_not_a_number(text: str) -> None:
    with pytest.raises(EsqlValueError, match="to DECIMAL"):
        cast(text, "DECIMAL")


def test_decimal_arithmetic_keeps_scale_and_null() -> None:
    assert str(v.mul(D("2"), D("1.25"))) == "2.50"
    assert str(v.add(D("0.10"), D("0.2"))) == "0.30"
    assert v.mul(D("2"), None) is None
    assert v.add(None, D("2")) is None


@settings(max_examples=400, deadline=None)
@given(st.text(alphabet="0123456789.+-eE _x٣", max_size=8))
def test_plain_decimal_test_is_the_pattern_digits_point_digits(text: str) -> None:
    # the short path of CAST(… AS DECIMAL) takes exactly the texts this pattern matches; the
    # general path gives the same number for them (or the same error for the rest)
    import re

    from esql.cast import _is_plain_decimal

    plain = re.fullmatch(r"[0-9]+(\.[0-9]+)?", text) is not None
    assert (text.isascii() and _is_plain_decimal(text)) == plain
    if plain:
        assert str(cast(text, "DECIMAL")) == str(D(text))


@settings(max_examples=400, deadline=None)
@given(
    st.one_of(
        st.text(alphabet="0123456789.+-eE _x٣", max_size=8),
        st.none(),
        st.integers(),
        st.decimals(allow_nan=False),
        st.floats(allow_nan=False, allow_infinity=False),
        st.booleans(),
    )
)
def test_cast_decimal_is_cast_to_decimal(value: Any) -> None:
    # the generated code's CAST(x AS DECIMAL) takes the same values to the same DECIMAL, and
    # refuses the same values with the same error, as the general cast
    from esql.cast import cast_decimal

    try:
        expected = cast(value, "DECIMAL")
    except EsqlValueError as exc:
        with pytest.raises(EsqlValueError) as got:
            cast_decimal(value)
        assert str(got.value) == str(exc)
        return
    result = cast_decimal(value)
    assert type(result) is type(expected)
    assert str(result) == str(expected)


def test_cast_as_decimal_compiles_to_the_short_call_only_without_options() -> None:
    from esql.compiler import compile_program

    source = """CREATE COMPUTE MODULE M
CREATE FUNCTION Main() RETURNS BOOLEAN
BEGIN
  SET OutputRoot.XMLNSC.a = CAST(InputRoot.XMLNSC.q AS DECIMAL);
  SET OutputRoot.XMLNSC.b = CAST(InputRoot.XMLNSC.q AS DECIMAL(5, 2));
  SET OutputRoot.XMLNSC.c = CAST(InputRoot.XMLNSC.q AS DECIMAL DEFAULT 0);
  RETURN TRUE;
END;
END MODULE;"""
    generated = compile_program(source, use_cache=False).python_source
    assert generated.count("_cast_decimal(") == 1
    assert "'DECIMAL(5, 2)'" in generated and "default=" in generated
