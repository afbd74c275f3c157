"""`flowbroker bench esql`: ESQL compile time and execution rates of the seed 004 Appendix C programs.

Three figures, each the median of several windows on one core: compiling a 500-line Compute
module (no cache), Appendix C's complex compute on its 20-entry CSIM message (tree already
built), and ``SET OutputRoot = InputRoot; SET OutputRoot.XMLNSC.Doc.Status = 'DONE';`` on a
1 KB, 30-element tree. CPU time per operation is reported next to the wall rate because it
survives a noisy machine better.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from collections.abc import Callable
from typing import Any

from flowbroker_bench.core import Row, Scenario

COMPLEX_ESQL = """SET OutputRoot = InputRoot;
DECLARE i INTEGER;
SET i = 1;
WHILE i <= CARDINALITY(OutputRoot.XML.CSIM.TestCase.Stack.ProcessingPath.Element[]) DO
    SET OutputRoot.XML.CSIM.TestCase.ProcessingPath.Component[i].Name =
        OutputRoot.XML.CSIM.TestCase.Stack.ProcessingPath.Element[i].COMPONENT;
    SET OutputRoot.XML.CSIM.TestCase.ProcessingPath.Component[i].Transport.(XML.attr)Type='A';
    SET OutputRoot.XML.CSIM.TestCase.ProcessingPath.Component[i].Transport.Queue =
OutputRoot.XML.CSIM.TestCase.Stack.ProcessingPath.Element[i].QUEUE;
    SET i = i + 1;
END WHILE;
"""

STATUS_ESQL = """SET OutputRoot = InputRoot;
SET OutputRoot.XMLNSC.Doc.Status = 'DONE';
"""


def module_500_lines(tag: int) -> str:
    """A realistic 500-line Compute module (helpers, loops, SELECT, CASE, REFERENCE walks)."""
    lines = [
        f"-- generated benchmark module {tag}",
        "BROKER SCHEMA bench.esql",
        "DECLARE gPrefix EXTERNAL CHARACTER 'ORD-';",
        "CREATE COMPUTE MODULE Bench_Compute",
        "  CREATE FUNCTION Main() RETURNS BOOLEAN",
        "  BEGIN",
        "    CALL CopyMessageHeaders();",
        "    DECLARE total DECIMAL 0;",
        "    DECLARE i INTEGER 1;",
        "    DECLARE r REFERENCE TO InputRoot.XMLNSC.Order;",
    ]
    block = 0
    while len(lines) < 470:
        block += 1
        lines += [
            f"    -- block {block}",
            f"    SET OutputRoot.XMLNSC.Invoice.Part{block}.Id = gPrefix || CAST({block} AS CHARACTER);",
            f"    IF InputRoot.XMLNSC.Order.Item[{block % 5 + 1}].Qty > {block} THEN",
            f"      SET total = total + CAST(InputRoot.XMLNSC.Order.Item[{block % 5 + 1}].Price AS DECIMAL);",
            f"    ELSEIF InputRoot.XMLNSC.Order.Customer = 'C{block}' THEN",
            f"      SET OutputRoot.XMLNSC.Invoice.Part{block}.Flag = TRUE;",
            "    ELSE",
            f"      SET OutputRoot.XMLNSC.Invoice.Part{block}.Note = SUBSTRING('abcdef' FROM 2 FOR 3);",
            "    END IF;",
            "    WHILE i < 3 DO",
            f"      SET OutputRoot.XMLNSC.Invoice.Part{block}.Line[i] = i * {block};",
            "      SET i = i + 1;",
            "    END WHILE;",
            "    SET i = 1;",
            f"    SET OutputRoot.XMLNSC.Invoice.Part{block}.Names[] = SELECT ITEM T.Name "
            f"FROM InputRoot.XMLNSC.Order.Item[] AS T WHERE T.Qty > {block % 7};",
            f"    SET OutputRoot.XMLNSC.Invoice.Part{block}.Kind = CASE {block % 3} WHEN 0 THEN 'a' "
            "WHEN 1 THEN 'b' ELSE 'c' END;",
            "    MOVE r FIRSTCHILD NAME 'Item';",
            "    WHILE LASTMOVE(r) DO",
            "      MOVE r NEXTSIBLING REPEAT TYPE NAME;",
            "    END WHILE;",
        ]
    lines += [
        "    SET OutputRoot.XMLNSC.Invoice.Total = total;",
        "    RETURN TRUE;",
        "  END;",
        "  CREATE PROCEDURE CopyMessageHeaders() BEGIN",
        "    DECLARE I INTEGER 1;",
        "    DECLARE J INTEGER CARDINALITY(InputRoot.*[]);",
        "    WHILE I < J DO",
        "      SET OutputRoot.*[I] = InputRoot.*[I];",
        "      SET I = I + 1;",
        "    END WHILE;",
        "  END;",
        "END MODULE;",
    ]
    while len(lines) < 500:
        lines.insert(-1, "  -- padding comment to reach 500 lines")
    return "\n".join(lines) + "\n"


def csim_message(entries: int = 20) -> Any:
    from esql.tree import build

    elements = [
        {"COMPONENT": f"Component{i:02d}", "QUEUE": f"CSIM.QUEUE.{i:02d}"} for i in range(1, entries + 1)
    ]
    return build(
        "Root",
        {
            "Properties": {"MessageDomain": "XML"},
            "MQMD": {"Format": "MQSTR   "},
            "XML": {"CSIM": {"TestCase": {"Stack": {"ProcessingPath": {"Element": elements}}}}},
        },
    )


def status_message() -> Any:
    """A 1 KB, 30-element XMLNSC document."""
    from flowbroker.formats.assembly import Template, build_root

    fields = "".join(f"<Field{i:02d}>value of field number {i:02d}</Field{i:02d}>" for i in range(1, 30))
    doc = f"<Doc>{fields}</Doc>"
    root = build_root(None, doc.encode(), Template(domain="XMLNSC"))
    for header in ("Properties", "MQMD"):
        found = root.child(header)
        if found is not None:
            found.detach()
    # parsed now: the figure is the ESQL's copy and SET, not the parser's first read
    assert root.child("XMLNSC").first_child is not None  # type: ignore[union-attr]
    return root, len(doc)


def _windows(op: Callable[[], None], seconds: float, windows: int) -> tuple[float, float]:
    """Median operations per second and CPU-ms per operation over ``windows`` timed windows."""
    rates, cpu = [], []
    for _ in range(windows):
        count = 0
        start, cpu_start = time.perf_counter(), time.process_time()
        deadline = start + seconds
        while time.perf_counter() < deadline:
            for _ in range(20):
                op()
            count += 20
        wall, used = time.perf_counter() - start, time.process_time() - cpu_start
        rates.append(count / wall)
        cpu.append(used * 1000 / count)
    return statistics.median(rates), statistics.median(cpu)


def run(args: argparse.Namespace) -> list[Row]:
    from esql.compiler import compile_program
    from esql.parser import grammar
    from esql.runtime import ExecutionContext

    if args.cpu is not None and hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {args.cpu})
    grammar()  # the LALR tables are built once per process, not per compile
    rows: list[Row] = []

    source = module_500_lines(0)
    compile_program(source, "warm-up.esql", use_cache=False)  # first use imports the built-ins
    times, cpu_times = [], []
    for n in range(args.compiles):
        text = source.replace("generated benchmark module 0", f"generated benchmark module {n + 1}")
        start, cpu_start = time.perf_counter(), time.process_time()
        compile_program(text, "bench.esql", use_cache=False)
        times.append((time.perf_counter() - start) * 1000)
        cpu_times.append((time.process_time() - cpu_start) * 1000)
    rows.append(
        {
            "scenario": "compile 500-line Compute module",
            "lines": source.count("\n"),
            "median ms": round(statistics.median(times), 1),
            "best ms": round(min(times), 1),
            "CPU ms": round(statistics.median(cpu_times), 1),
            "target": "< 200 ms",
        }
    )

    complex_program = compile_program(COMPLEX_ESQL, "complex.esql").main_module()
    message = csim_message()

    def complex_once() -> None:
        complex_program.run(ExecutionContext(input_root=message))

    rate, cpu_ms = _windows(complex_once, args.seconds, args.windows)
    rows.append(
        {
            "scenario": "Appendix C complex compute (20 entries)",
            "executions/s": round(rate),
            "CPU ms/exec": round(cpu_ms, 4),
            "target": ">= 5,000/s",
        }
    )

    status_program = compile_program(STATUS_ESQL, "status.esql").main_module()
    doc_root, size = status_message()

    def status_once() -> None:
        status_program.run(ExecutionContext(input_root=doc_root))

    rate, cpu_ms = _windows(status_once, args.seconds, args.windows)
    rows.append(
        {
            "scenario": f"copy + set Status ({size} B, 30 elements)",
            "executions/s": round(rate),
            "CPU ms/exec": round(cpu_ms, 4),
            "target": ">= 30,000/s",
        }
    )
    return rows


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--seconds", type=float, default=3.0, help="length of one timed window")
    parser.add_argument("--windows", type=int, default=5, help="timed windows per figure (median quoted)")
    parser.add_argument(
        "--compiles", type=int, default=15, help="uncached compilations of the 500-line module"
    )
    parser.add_argument("--cpu", type=int, default=None, help="pin the benchmark to this CPU core")


SCENARIOS = {
    "esql": Scenario(
        "esql",
        "ESQL: 500-line compile time, Appendix C complex compute and copy+status executions/s",
        run,
        add_arguments,
        tags=("esql",),
    )
}
