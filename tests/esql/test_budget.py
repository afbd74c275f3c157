"""A node invocation's CPU time and memory budget: runaway loops, recursion and growing values end
with an ESQL exception no handler can swallow."""

from __future__ import annotations

import tracemalloc

import pytest

from esql.compiler import compile_program
from esql.runtime import BudgetExceeded, ExecutionContext

pytestmark = pytest.mark.timeout(120)


def run(source: str, **limits: int) -> ExecutionContext:
    program = compile_program(source, "budget.esql", use_cache=False)
    ctx = ExecutionContext(node_name="Compute1", **limits)
    program.main_module().run(ctx)
    return ctx


@pytest.mark.parametrize(
    "loop",
    [
        "WHILE TRUE DO\n  SET i = i + 1;\nEND WHILE;",
        "X: LOOP\n  SET i = i + 1;\nEND LOOP X;",
        "REPEAT\n  SET i = i + 1;\nUNTIL FALSE END REPEAT;",
    ],
)
def test_runaway_loop_ends_with_the_cpu_budget_exception(loop: str) -> None:
    with pytest.raises(BudgetExceeded) as info:
        run("DECLARE i INTEGER 0;\n" + loop + "\n", cpu_limit_ms=200)
    assert info.value.message == "ESQL in node 'Compute1' exceeded its CPU budget of 200 ms"
    assert info.value.line in (2, 3)
    assert str(info.value).startswith(f"line {info.value.line}, column ")


def test_empty_while_true_ends() -> None:
    with pytest.raises(BudgetExceeded, match="exceeded its CPU budget of 100 ms"):
        run("WHILE TRUE DO END WHILE;\n", cpu_limit_ms=100)


def test_recursion_without_loops_is_bounded_by_the_cpu_budget() -> None:
    source = (
        "CREATE FUNCTION Fib(IN n INTEGER) RETURNS INTEGER BEGIN\n"
        "  IF n < 2 THEN RETURN n; END IF;\n"
        "  RETURN Fib(n - 1) + Fib(n - 2);\n"
        "END;\n"
        "SET OutputRoot.XMLNSC.F = Fib(60);\n"
    )
    with pytest.raises(BudgetExceeded, match="exceeded its CPU budget of 200 ms"):
        run(source, cpu_limit_ms=200)


def test_no_handler_catches_the_budget_exception() -> None:
    source = (
        "DECLARE i INTEGER 0;\n"
        "BEGIN\n"
        "  DECLARE CONTINUE HANDLER FOR SQLSTATE LIKE '%' SET i = -1;\n"
        "  WHILE TRUE DO SET i = i + 1; END WHILE;\n"
        "END;\n"
        "SET OutputRoot.XMLNSC.Done = i;\n"
    )
    with pytest.raises(BudgetExceeded):
        run(source, cpu_limit_ms=100)


def test_string_doubling_ends_with_the_memory_budget_exception_before_using_much_memory() -> None:
    source = "DECLARE s CHARACTER 'ab';\nWHILE TRUE DO\n  SET s = s || s;\nEND WHILE;\n"
    limit = 1 << 20
    tracemalloc.start()
    try:
        with pytest.raises(BudgetExceeded) as info:
            run(source, memory_limit_bytes=limit)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert info.value.message == (
        "ESQL in node 'Compute1' exceeded its memory budget of 1048576 bytes: "
        "|| would build a value of 2097152 characters or bytes"
    )
    assert info.value.line == 3
    # the value refused is never built: the largest string kept is the budget itself
    assert peak < 4 * limit


@pytest.mark.parametrize(
    ("expression", "what"),
    [
        ("REPLICATE('abcd', 1000000)", "REPLICATE"),
        ("SPACE(2000000)", "SPACE"),
        ("REPLACE(REPLICATE('a', 600000), 'a', 'bb')", "REPLACE"),
        ("OVERLAY(REPLICATE('a', 600000) PLACING REPLICATE('b', 600000) FROM 1 FOR 0)", "OVERLAY"),
        ("CAST(REPLICATE(X'00', 600000) AS BLOB) || REPLICATE(X'01', 600000)", "||"),
        ("REPLICATE('a', 600000) || 12345 || REPLICATE('b', 600000)", "||"),
    ],
)
def test_functions_that_grow_values_respect_the_memory_budget(expression: str, what: str) -> None:
    with pytest.raises(BudgetExceeded) as info:
        run(f"SET OutputRoot.XMLNSC.V = LENGTH({expression});\n", memory_limit_bytes=1 << 20)
    assert f": {what} would build a value of " in info.value.message


def test_within_the_budget_the_program_runs() -> None:
    source = (
        "DECLARE i INTEGER 0;\nDECLARE s CHARACTER '';\n"
        "WHILE i < 20000 DO SET i = i + 1; SET s = s || 'x'; END WHILE;\n"
        "SET OutputRoot.XMLNSC.I = i;\nSET OutputRoot.XMLNSC.L = LENGTH(s);\n"
    )
    ctx = run(source, cpu_limit_ms=60_000, memory_limit_bytes=1 << 20)
    assert ctx.output_root.to_data() == {"XMLNSC": {"I": 20000, "L": 20000}}


def test_zero_means_unlimited_and_outside_an_invocation_there_is_no_budget() -> None:
    ctx = run("SET OutputRoot.XMLNSC.L = LENGTH(REPLICATE('ab', 1000000));\n")
    assert ctx.output_root.to_data() == {"XMLNSC": {"L": 2000000}}


def test_cpu_time_of_the_nodes_a_propagate_runs_is_not_counted() -> None:
    import time

    def downstream(*_: object) -> None:
        # the next node's work, on this thread, under its own budget
        started = time.thread_time()
        while time.thread_time() - started < 0.005:
            pass

    source = (
        "DECLARE i INTEGER 0;\n"
        "WHILE i < 200 DO\n"
        "  SET OutputRoot.XMLNSC.N = i;\n"
        "  PROPAGATE DELETE NONE;\n"
        "  SET i = i + 1;\n"
        "END WHILE;\n"
        "RETURN FALSE;\n"
    )
    program = compile_program(source, "budget.esql", use_cache=False)
    ctx = ExecutionContext(node_name="Compute1", cpu_limit_ms=300, propagate=downstream)
    assert program.main_module().run(ctx) is False
    assert ctx.propagated == 200
