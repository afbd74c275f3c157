"""Diagnostics table: each program and the exact FILE:LINE:COL lines `esql check` must print."""

from __future__ import annotations

import pytest

from esql.compiler import EsqlCompileError, check_sources, compile_program

CASES = [
    ("syntax1", "SET x = ;\n", ["syntax1.esql:1:9: error: syntax error: unexpected ';'"]),
    (
        "multi",
        "DECLARE a INTEGER;\nSET a = 1 +;\nSET a = 2;\nIF a THEN SET a = ; END IF;\n",
        [
            "multi.esql:2:12: error: syntax error: unexpected ';'",
            "multi.esql:4:19: error: syntax error: unexpected ';'",
        ],
    ),
    (
        "undeclared",
        "SET OutputRoot.XMLNSC.A = nope;\n",
        ["undeclared.esql:1:27: error: undeclared identifier 'nope'"],
    ),
    ("undeclared_set", "SET nope = 1;\n", ["undeclared_set.esql:1:5: error: undeclared identifier 'nope'"]),
    ("routine", "CALL Missing();\n", ["routine.esql:1:1: error: routine 'Missing' is not defined"]),
    (
        "arity",
        "CREATE FUNCTION F(IN a INTEGER) RETURNS INTEGER BEGIN RETURN a; END;\nSET OutputRoot.XMLNSC.A = F(1, 2);\n",
        ["arity.esql:2:27: error: routine 'F' takes 1 argument(s) but 2 were given"],
    ),
    (
        "fn_arity",
        "SET OutputRoot.XMLNSC.A = UPPER('a', 'b');\n",
        ["fn_arity.esql:1:27: error: function UPPER takes 1 argument(s) but 2 were given"],
    ),
    (
        "unknown_fn",
        "SET OutputRoot.XMLNSC.A = FROBNICATE(1);\n",
        ["unknown_fn.esql:1:27: error: routine 'FROBNICATE' is not defined"],
    ),
    (
        "leave",
        "LEAVE nowhere;\n",
        ["leave.esql:1:1: error: LEAVE 'nowhere' is not inside a statement labelled 'nowhere'"],
    ),
    (
        "iterate",
        "X: BEGIN ITERATE X; END X;\n",
        ["iterate.esql:1:10: error: ITERATE 'X' names a BEGIN block, not a loop"],
    ),
    (
        "return_outside",
        "CREATE COMPUTE MODULE M\n  CREATE FUNCTION Main() RETURNS BOOLEAN BEGIN RETURN TRUE; END;\nEND MODULE;\nRETURN TRUE;\n",
        ["return_outside.esql:4:1: error: RETURN outside a function or procedure"],
    ),
    (
        "types",
        "DECLARE i INTEGER 'abc';\nDECLARE b BOOLEAN 5;\nSET OutputRoot.XMLNSC.A = 'a' + 1;\nSET OutputRoot.XMLNSC.B = TRUE = 1;\n",
        [
            "types.esql:1:19: error: cannot initialise INTEGER variable 'i' with a CHARACTER value",
            "types.esql:2:19: error: cannot initialise BOOLEAN variable 'b' with an INTEGER value",
            "types.esql:3:27: error: operator '+' cannot be applied to CHARACTER; use || to concatenate",
            "types.esql:4:27: error: cannot compare BOOLEAN with INTEGER",
        ],
    ),
    (
        "constant",
        "DECLARE k CONSTANT INTEGER 1;\nSET k = 2;\n",
        ["constant.esql:2:1: error: 'k' is a constant and cannot be changed"],
    ),
    (
        "readonly",
        "SET InputRoot.XMLNSC.A = 1;\n",
        [
            "readonly.esql:1:5: error: 'InputRoot' is read-only; only output trees and Environment can be changed"
        ],
    ),
    (
        "dup",
        "DECLARE a INTEGER;\nBEGIN DECLARE a INTEGER; DECLARE a CHARACTER; END;\n",
        ["dup.esql:2:34: error: 'a' is already declared in this scope"],
    ),
    (
        "unterminated",
        "SET OutputRoot.XMLNSC.A = 'abc;\n",
        ["unterminated.esql:1:27: error: unterminated string literal"],
    ),
    ("badchar", "SET OutputRoot.XMLNSC.A = 1 ~ 2;\n", ["badchar.esql:1:29: error: unexpected character '~'"]),
    (
        "label_mismatch",
        "A: WHILE TRUE DO LEAVE A; END WHILE B;\n",
        ["label_mismatch.esql:1:37: error: end label 'B' does not match 'A'"],
    ),
    (
        "move_nonref",
        "DECLARE x INTEGER;\nMOVE x PARENT;\n",
        ["move_nonref.esql:2:6: error: MOVE needs a REFERENCE variable"],
    ),
    (
        "lastmove_nonref",
        "SET OutputRoot.XMLNSC.A = LASTMOVE(InputRoot);\n",
        ["lastmove_nonref.esql:1:27: error: LASTMOVE needs a REFERENCE variable"],
    ),
    (
        "cardinality_nonlist",
        "SET OutputRoot.XMLNSC.A = CARDINALITY(InputRoot.XMLNSC.A);\n",
        [
            "cardinality_nonlist.esql:1:39: error: the argument of CARDINALITY must be a list: end the field reference with []"
        ],
    ),
    (
        "bad_type",
        "DECLARE x WIDGET;\nSET OutputRoot.XMLNSC.A = CAST(1 AS WIDGET);\n",
        ["bad_type.esql:2:37: error: unknown data type 'WIDGET'"],
    ),
    (
        "bad_fieldtype",
        "SET OutputRoot.XMLNSC.(XMLNSC.Bogus)A = 1;\n",
        ["bad_fieldtype.esql:1:23: error: unknown field type 'XMLNSC.Bogus'"],
    ),
    (
        "external_local",
        "CREATE COMPUTE MODULE M\n  CREATE FUNCTION Main() RETURNS BOOLEAN BEGIN DECLARE e EXTERNAL CHARACTER 'x'; RETURN TRUE; END;\nEND MODULE;\n",
        [
            "external_local.esql:2:48: error: EXTERNAL variables can only be declared at schema or module level"
        ],
    ),
    (
        "eof",
        "IF TRUE THEN SET OutputRoot.XMLNSC.A = 1;\n",
        ["eof.esql:2:1: error: syntax error: unexpected end of input"],
    ),
    (
        "propagate_filter",
        "CREATE FILTER MODULE F\n  CREATE FUNCTION Main() RETURNS BOOLEAN BEGIN PROPAGATE; RETURN TRUE; END;\nEND MODULE;\n",
        ["propagate_filter.esql:2:48: error: PROPAGATE is not allowed in a FILTER module"],
    ),
    (
        "int_range",
        "SET OutputRoot.XMLNSC.A = 9223372036854775808;\n",
        [
            "int_range.esql:1:27: error: integer literal 9223372036854775808 is out of the 64-bit INTEGER range"
        ],
    ),
    (
        "bad_date",
        "SET OutputRoot.XMLNSC.A = DATE '2024-13-45';\n",
        [
            "bad_date.esql:1:27: error: invalid DATE literal '2024-13-45': invalid DATE text '2024-13-45': month must be in 1..12"
        ],
    ),
    (
        "proc_in_expr",
        "CREATE PROCEDURE P() BEGIN END;\nSET OutputRoot.XMLNSC.A = P();\n",
        ["proc_in_expr.esql:2:27: error: procedure 'P' returns no value and cannot be used in an expression"],
    ),
    (
        "scalar_as_path",
        "DECLARE x INTEGER 1;\nSET OutputRoot.XMLNSC.A = x.child;\n",
        ["scalar_as_path.esql:2:27: error: 'x' is an INTEGER variable, not a field reference"],
    ),
    (
        "recovery_if_then",
        "CREATE COMPUTE MODULE M\nCREATE FUNCTION Main() RETURNS BOOLEAN BEGIN\n  IF THEN\n    SET OutputRoot.XMLNSC.A = 1;\n"
        "  END IF;\n  SET OutputRoot.XMLNSC.B = 2;\n  SET OutputRoot.XMLNSC.C = ;\n  RETURN TRUE;\nEND;\nEND MODULE;\n",
        [
            "recovery_if_then.esql:3:6: error: syntax error: unexpected 'THEN'",
            "recovery_if_then.esql:7:29: error: syntax error: unexpected ';'",
        ],
    ),
    (
        "recovery_dropped_blocks",
        "WHILE x < DO SET x = 1; END WHILE;\nIF x = THEN SET a = 1; ELSEIF x = 2 THEN SET b = ; ELSE SET c = 3; END IF;\n"
        "CASE x WHEN 1 THEN SET a = ; WHEN 2 THEN SET b = 2; END CASE;\nSET y = 1;\n",
        [
            "recovery_dropped_blocks.esql:1:11: error: syntax error: unexpected 'DO'",
            "recovery_dropped_blocks.esql:2:8: error: syntax error: unexpected 'THEN'",
            "recovery_dropped_blocks.esql:2:50: error: syntax error: unexpected ';'",
            "recovery_dropped_blocks.esql:3:28: error: syntax error: unexpected ';'",
        ],
    ),
    (
        "recovery_end_in_skipped_text",
        "CREATE COMPUTE MODULE M\nCREATE FUNCTION Main() RETURNS BOOLEAN BEGIN\n  IF x = THEN END IF;\n"
        "  IF x = THEN SET y = CASE WHEN a THEN 1 ELSE 2 END; END IF;\n  SET OutputRoot.XMLNSC.C = ;\n"
        "  RETURN TRUE;\nEND;\nEND MODULE;\n",
        [
            "recovery_end_in_skipped_text.esql:3:10: error: syntax error: unexpected 'THEN'",
            "recovery_end_in_skipped_text.esql:4:10: error: syntax error: unexpected 'THEN'",
            "recovery_end_in_skipped_text.esql:5:29: error: syntax error: unexpected ';'",
        ],
    ),
    (
        "decimal_precision_in_declare",
        "DECLARE d DECIMAL(10,2) 1.234;\nBEGIN DECLARE e DECIMAL(10, 2); END;\n",
        [
            "decimal_precision_in_declare.esql:1:18: error: a DECIMAL variable takes no precision or scale (IBM assigns them; give them in CAST)",
        ],
    ),
    (
        "decimal_precision_parsed",
        "BEGIN DECLARE e DECIMAL(10, 2); END;\n",
        [
            "decimal_precision_parsed.esql:1:24: error: a DECIMAL variable takes no precision or scale (IBM assigns them; give them in CAST)"
        ],
    ),
    (
        "compute_uses_root",
        "CREATE COMPUTE MODULE C\n  CREATE FUNCTION Main() RETURNS BOOLEAN BEGIN\n    SET Root.XMLNSC.A = 1;\n"
        "    SET OutputRoot.XMLNSC.A = Body.B;\n    RETURN TRUE;\n  END;\nEND MODULE;\n",
        [
            "compute_uses_root.esql:3:9: error: 'Root' is not a correlation name of a COMPUTE module (a Compute node has InputRoot, OutputRoot, InputLocalEnvironment …)",
            "compute_uses_root.esql:4:31: error: 'Body' is not a correlation name of a COMPUTE module (a Compute node has InputRoot, OutputRoot, InputLocalEnvironment …)",
        ],
    ),
    (
        "filter_sets_output",
        "CREATE FILTER MODULE F\n  CREATE FUNCTION Main() RETURNS BOOLEAN BEGIN\n    SET OutputRoot.XMLNSC.A = 1;\n"
        "    SET Root.XMLNSC.A = 1;\n    SET Environment.A = Root.XMLNSC.A;\n    RETURN TRUE;\n  END;\nEND MODULE;\n",
        [
            "filter_sets_output.esql:3:9: error: 'OutputRoot' is not a correlation name of a FILTER module (a Filter node has Root, Body, Properties, LocalEnvironment …)",
            "filter_sets_output.esql:4:9: error: 'Root' is read-only in a FILTER module; only LocalEnvironment and Environment can be changed",
        ],
    ),
    (
        "call_in_esql_routine",
        "CREATE PROCEDURE P(IN a INTEGER) BEGIN END;\nCALL P(1) IN Database.{'sch'};\nCALL P(2) EXTERNAL SCHEMA 'x';\n",
        [
            "call_in_esql_routine.esql:2:11: error: CALL … IN and EXTERNAL SCHEMA are only valid for LANGUAGE DATABASE routines",
            "call_in_esql_routine.esql:3:11: error: CALL … IN and EXTERNAL SCHEMA are only valid for LANGUAGE DATABASE routines",
        ],
    ),
    (
        "sign_before_null",
        "SET OutputRoot.XMLNSC.A = 1 IS +NULL;\n",
        ["sign_before_null.esql:1:32: error: a sign is only valid before INF or INFINITY, not NULL"],
    ),
    (
        "aggregate_outside",
        "SET OutputRoot.XMLNSC.A = COUNT(1);\n",
        ["aggregate_outside.esql:1:27: error: COUNT is only valid in a SELECT list"],
    ),
]


@pytest.mark.parametrize(("name", "source", "expected"), CASES, ids=[c[0] for c in CASES])
def test_diagnostics(name: str, source: str, expected: list[str]) -> None:
    diagnostics, _ = check_sources({f"{name}.esql": source})
    assert [str(d) for d in diagnostics] == expected


def test_every_case_reports_something() -> None:
    assert all(expected for _n, _s, expected in CASES)


def test_compile_error_carries_all_diagnostics() -> None:
    with pytest.raises(EsqlCompileError) as info:
        compile_program("SET a = 1 +;\nSET b = ;\n", "two.esql")
    assert [str(d) for d in info.value.diagnostics] == [
        "two.esql:1:12: error: syntax error: unexpected ';'",
        "two.esql:2:9: error: syntax error: unexpected ';'",
    ]


def test_unresolved_call_is_warning_unless_strict() -> None:
    source = "CALL other.schema.Helper();\n"
    loose, _ = check_sources({"a.esql": source}, strict=False)
    strict, _ = check_sources({"a.esql": source}, strict=True)
    assert [str(d) for d in loose] == ["a.esql:1:1: warning: routine 'other.schema.Helper' is not defined"]
    assert [str(d) for d in strict] == ["a.esql:1:1: error: routine 'other.schema.Helper' is not defined"]


def test_routines_resolve_across_files_through_path() -> None:
    files = {
        "lib.esql": "BROKER SCHEMA com.acme.lib\nCREATE FUNCTION Greet(IN s CHARACTER) RETURNS CHARACTER BEGIN RETURN 'hi ' || s; END;\n",
        "app.esql": "BROKER SCHEMA com.acme.app\nPATH com.acme.lib;\nCREATE COMPUTE MODULE App\n"
        "  CREATE FUNCTION Main() RETURNS BOOLEAN BEGIN SET OutputRoot.XMLNSC.A = Greet('x'); RETURN TRUE; END;\n"
        "END MODULE;\n",
    }
    diagnostics, _ = check_sources(files)
    assert diagnostics == []
    alone, _ = check_sources({"app.esql": files["app.esql"]})
    assert [str(d) for d in alone] == ["app.esql:4:74: error: routine 'Greet' is not defined"]
