"""Programs at the edges of size: long operator chains compile flat, deep nesting is a positioned error.

Generated Python has its own limits (200 nested parentheses, 100 indentation levels) and the
compiler its own stack; a program beyond them must get a diagnostic, never a crash.
"""

from __future__ import annotations

import pytest

from esql.compiler import check_sources, compile_program
from esql.runtime import ExecutionContext


def run(source: str) -> dict[str, object]:
    program = compile_program(source, "long.esql", use_cache=False)
    ctx = ExecutionContext()
    assert program.main_module().run(ctx) is True
    return {e.name: e.value for e in ctx.output_root.child("XMLNSC").children()}


@pytest.mark.parametrize("count", [200, 1200, 5000])
def test_long_left_associative_chains_compile_and_run(count: int) -> None:
    source = (
        "SET OutputRoot.XMLNSC.C = " + " || ".join(["'a'"] * count) + ";\n"
        "SET OutputRoot.XMLNSC.S = " + " + ".join(["1"] * count) + " - 1 * 2;\n"
        "SET OutputRoot.XMLNSC.A = " + " AND ".join(["TRUE"] * count) + " OR FALSE;\n"
        "SET OutputRoot.XMLNSC.O = " + " OR ".join(["FALSE"] * count) + ";\n"
    )
    diagnostics, _ = check_sources({"long.esql": source})
    assert diagnostics == []
    out = run(source)
    assert out == {"C": "a" * count, "S": count - 2, "A": True, "O": False}


def test_long_chains_and_deep_nesting_assigned_to_typed_variables() -> None:
    source = (
        "DECLARE i INTEGER;\nDECLARE c CHARACTER;\nDECLARE b BOOLEAN;\n"
        "SET i = " + " + ".join(["1"] * 3000) + ";\n"
        "SET c = " + " || ".join(["'a'"] * 3000) + ";\n"
        "SET b = " + " OR ".join(["FALSE"] * 3000) + ";\n"
        "SET OutputRoot.XMLNSC.I = i;\nSET OutputRoot.XMLNSC.C = LENGTH(c);\nSET OutputRoot.XMLNSC.B = b;\n"
    )
    assert run(source) == {"I": 3000, "C": 3000, "B": False}
    deep = "DECLARE i INTEGER;\nSET i = " + "(" * 1000 + "-1" + ")" * 1000 + ";\n"
    diagnostics, _ = check_sources({"deep.esql": deep})
    assert [str(d) for d in diagnostics] == [
        "deep.esql:2:265: error: expression nested too deeply (more than 64 levels)"
    ]


def test_long_chain_keeps_left_to_right_evaluation_and_short_circuit() -> None:
    # A chain long enough to be generated flat still stops at the first FALSE of an AND.
    terms = ["TRUE"] * 30 + ["FALSE"] + ["1 / 0 = 1"] * 30
    source = "SET OutputRoot.XMLNSC.A = " + " AND ".join(terms) + ";\n"
    source += "SET OutputRoot.XMLNSC.D = " + " - ".join(["100"] + ["1"] * 40) + ";\n"
    assert run(source) == {"A": False, "D": 60}


DEEP = [
    (
        "parentheses",
        "SET OutputRoot.XMLNSC.A = " + "(" * 1000 + "1" + ")" * 1000 + ";\n",
        ["deep.esql:1:283: error: expression nested too deeply (more than 64 levels)"],
    ),
    (
        "calls",
        "SET OutputRoot.XMLNSC.A = " + "ABS(" * 300 + "1" + ")" * 300 + ";\n",
        ["deep.esql:1:283: error: expression nested too deeply (more than 64 levels)"],
    ),
    (
        "right_nested_concat",
        "SET OutputRoot.XMLNSC.A = " + "'a' || (" * 100 + "'b'" + ")" * 100 + ";\n",
        ["deep.esql:1:531: error: expression nested too deeply (more than 64 levels)"],
    ),
    (
        "if_blocks",
        "IF TRUE THEN\n" * 40 + "SET OutputRoot.XMLNSC.A = 1;\n" + "END IF;\n" * 40,
        ["deep.esql:31:1: error: statements nested too deeply (more than 30 levels)"],
    ),
    (
        "continue_handlers",
        "DECLARE x INTEGER;\n"
        + "".join(
            f"L{i}: WHILE TRUE DO BEGIN DECLARE CONTINUE HANDLER FOR SQLSTATE LIKE '%' SET x = 1;\n"
            for i in range(14)
        )
        + "SET OutputRoot.XMLNSC.O = 1; LEAVE L0;\n"
        + "".join(f"END; END WHILE L{13 - i};\n" for i in range(14)),
        ["deep.esql:11:1: error: statement too deeply nested to compile"],
    ),
]


@pytest.mark.parametrize(("name", "source", "expected"), DEEP, ids=[d[0] for d in DEEP])
def test_deep_nesting_is_a_positioned_diagnostic(name: str, source: str, expected: list[str]) -> None:
    diagnostics, _ = check_sources({"deep.esql": source})
    assert [str(d) for d in diagnostics] == expected


def test_nesting_within_the_limits_runs() -> None:
    source = (
        "SET OutputRoot.XMLNSC.A = " + "(" * 200 + "1" + ")" * 200 + ";\n"
        "SET OutputRoot.XMLNSC.B = " + "ABS(" * 60 + "-2" + ")" * 60 + ";\n"
        "SET OutputRoot.XMLNSC.C = "
        + "'a' || (" * 30
        + "'b'"
        + ")" * 30
        + ";\n"
        + "IF TRUE THEN\n" * 29
        + "SET OutputRoot.XMLNSC.D = 1;\n"
        + "END IF;\n" * 29
    )
    assert run(source) == {"A": 1, "B": 2, "C": "a" * 30 + "b", "D": 1}
