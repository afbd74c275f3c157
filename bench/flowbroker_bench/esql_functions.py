"""`flowbroker bench esql-values`: throughput of ESQL's operator, CAST and built-in hot paths on one core."""

from __future__ import annotations

import argparse
import os
import statistics
import time
from collections.abc import Callable
from decimal import Decimal
from typing import Any

from flowbroker_bench.core import Row, Scenario

#: (name, what it stands for in ESQL, factory returning a zero-argument callable, the value it must return)
_Case = tuple[str, str, Callable[[], Callable[[], Any]], Any]


def _cases() -> list[_Case]:
    from esql import values as v
    from esql.cast import cast
    from esql.functions import ENVIRONMENT as F

    ts = v.literal("TIMESTAMP", "2024-02-29 13:45:00")
    day = v.literal("DATE", "2024-02-29")
    month = v.literal("INTERVAL", "1", "MONTH")
    price = Decimal("12.50")
    qty = Decimal("3")
    substring = F["SUBSTRING"].impl
    trim = F["TRIM"].impl
    position = F["POSITION"].impl
    upper = F["UPPER"].impl
    extract = F["EXTRACT"].impl
    coalesce = F["COALESCE"].impl
    blob = "café crème".encode()
    return [
        ("add INTEGER", "n + 1", lambda: lambda: v.add(41, 1), 42),
        ("add DECIMAL", "price + tax", lambda: lambda: v.add(price, qty), Decimal("15.50")),
        ("mul DECIMAL", "qty * price", lambda: lambda: v.mul(qty, price), Decimal("37.50")),
        ("add CHARACTER field + INTEGER", "InputBody.Qty + 1", lambda: lambda: v.add("41", 1), 42),
        ("eq CHARACTER", "status = 'DONE'", lambda: lambda: v.eq("DONE", "DONE"), True),
        ("eq INTEGER", "n = 5", lambda: lambda: v.eq(5, 5), True),
        ("lt DECIMAL/INTEGER", "price < 100", lambda: lambda: v.lt(price, 100), True),
        ("and", "a AND b", lambda: lambda: v.and_(True, None), None),
        ("concat CHARACTER", "'Hello ' || name", lambda: lambda: v.concat("Hello ", "World"), "Hello World"),
        (
            "cast INTEGER AS CHARACTER",
            "CAST(n AS CHARACTER)",
            lambda: lambda: cast(12345, "CHARACTER"),
            "12345",
        ),
        (
            "cast CHARACTER AS INTEGER",
            "CAST('12345' AS INTEGER)",
            lambda: lambda: cast("12345", "INTEGER"),
            12345,
        ),
        (
            "cast CHARACTER AS DECIMAL",
            "CAST('12.50' AS DECIMAL)",
            lambda: lambda: cast("12.50", "DECIMAL"),
            Decimal("12.50"),
        ),
        (
            "cast DECIMAL FORMAT",
            "CAST(x AS CHARACTER FORMAT '#,##0.00')",
            lambda: lambda: cast(Decimal("1234567.891"), "CHARACTER", format="#,##0.00"),
            "1,234,567.89",
        ),
        (
            "cast TIMESTAMP FORMAT",
            "CAST(ts AS CHARACTER FORMAT 'yyyy-MM-dd HH:mm:ss')",
            lambda: lambda: cast(ts, "CHARACTER", format="yyyy-MM-dd HH:mm:ss"),
            "2024-02-29 13:45:00",
        ),
        (
            "cast CHARACTER AS TIMESTAMP FORMAT",
            "CAST('20240229134500' AS TIMESTAMP FORMAT 'yyyyMMddHHmmss')",
            lambda: lambda: cast("20240229134500", "TIMESTAMP", format="yyyyMMddHHmmss"),
            ts,
        ),
        (
            "cast BLOB CCSID 1208",
            "CAST(blob AS CHARACTER CCSID 1208)",
            lambda: lambda: cast(blob, "CHARACTER", ccsid=1208),
            "café crème",
        ),
        (
            "cast DEFAULT (fails)",
            "CAST('abc' AS INTEGER DEFAULT 0)",
            lambda: lambda: cast("abc", "INTEGER", default=0),
            0,
        ),
        ("LIKE", "code LIKE 'AB%_9'", lambda: lambda: v.like("AB-1234-9", "AB%_9"), True),
        ("SUBSTRING", "SUBSTRING(s FROM 3 FOR 4)", lambda: lambda: substring("ABCDEFGHIJ", 3, 4), "CDEF"),
        ("TRIM", "TRIM(s)", lambda: lambda: trim("  padded  ", "BOTH", None), "padded"),
        ("POSITION", "POSITION('-' IN s)", lambda: lambda: position("-", "AB-1234-9", None, None), 3),
        ("UPPER", "UPPER(s)", lambda: lambda: upper("mixed Case"), "MIXED CASE"),
        ("COALESCE", "COALESCE(a, b, 'x')", lambda: lambda: coalesce(None, None, "x"), "x"),
        ("EXTRACT", "EXTRACT(YEAR FROM ts)", lambda: lambda: extract("YEAR", ts), 2024),
        (
            "DATE + INTERVAL",
            "d + INTERVAL '1' MONTH",
            lambda: lambda: v.add(day, month),
            v.literal("DATE", "2024-03-29"),
        ),
    ]


def _measure(fn: Callable[[], Any], seconds: float) -> tuple[float, float]:
    """(operations per wall second, CPU nanoseconds per operation) over about ``seconds``."""
    batch = 1000
    # size the batch so a timing call is a negligible share of each batch
    while True:
        start = time.perf_counter()
        for _ in range(batch):
            fn()
        if time.perf_counter() - start > 0.02 or batch >= 10_000_000:
            break
        batch *= 4
    done = 0
    wall0, cpu0 = time.perf_counter(), time.process_time()
    # at least one batch: a process descheduled before its first check would otherwise count none
    while not done or time.perf_counter() - wall0 < seconds:
        for _ in range(batch):
            fn()
        done += batch
    wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
    return done / wall, cpu * 1e9 / done


def run(args: argparse.Namespace) -> list[Row]:
    if args.cpu is not None:
        os.sched_setaffinity(0, {args.cpu})
    selected = [
        c for c in _cases() if not args.only or any(word.lower() in c[0].lower() for word in args.only)
    ]
    rows: list[Row] = []
    for name, esql, factory, expected in selected:
        fn = factory()
        # the first call fills the caches (patterns, CAST targets), as a deployed flow's would be,
        # and shows the operation is right: a wrong result measured fast is not a figure
        got = fn()
        if type(got) is not type(expected) or got != expected:
            raise ValueError(f"{name}: {esql} returned {got!r}, expected {expected!r}")
        rates, cpu = [], []
        for _ in range(args.repeat):
            rate, ns = _measure(fn, args.seconds)
            rates.append(rate)
            cpu.append(ns)
        rows.append(
            {
                "operation": name,
                "ESQL": esql,
                "ops/s (median)": statistics.median(rates),
                "CPU-ns/op": statistics.median(cpu),
                "repeats": args.repeat,
            }
        )
    return rows


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--seconds", type=float, default=0.5, help="measuring window per repeat (default 0.5)"
    )
    parser.add_argument("--repeat", type=int, default=3, help="repeats per operation; the median is printed")
    parser.add_argument("--cpu", type=int, default=None, help="pin this process to one CPU (e.g. 1)")
    parser.add_argument("--only", nargs="*", default=[], help="only operations whose name contains a word")


SCENARIOS = {
    "esql-values": Scenario(
        "esql-values",
        "ESQL value semantics on one core: arithmetic, comparison, ||, CAST (FORMAT, CCSID, DEFAULT) and built-ins",
        run,
        add_arguments,
        tags=("esql",),
    )
}
