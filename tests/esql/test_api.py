"""The compiler's interface as the flow runtime uses it: module selection, PROPAGATE callbacks, exceptions."""

from __future__ import annotations

import pytest

from esql.compiler import ModuleNotFound, compile_program
from esql.runtime import ExecutionContext, UserException
from esql.tree import Element, build

TWO_MODULES = """
CREATE COMPUTE MODULE First_Compute
  CREATE FUNCTION Main() RETURNS BOOLEAN BEGIN SET OutputRoot.XMLNSC.M = 'first'; RETURN TRUE; END;
END MODULE;
CREATE COMPUTE MODULE Second_Compute
  CREATE FUNCTION Main() RETURNS BOOLEAN BEGIN SET OutputRoot.XMLNSC.M = 'second'; RETURN TRUE; END;
END MODULE;
CREATE FILTER MODULE Route_Filter
  CREATE FUNCTION Main() RETURNS BOOLEAN BEGIN RETURN Root.XMLNSC.Doc.Priority > 5; END;
END MODULE;
"""


def test_module_selection_by_name_and_kind() -> None:
    program = compile_program(TWO_MODULES, "two.esql")
    ctx = ExecutionContext()
    assert program.main_module("Second_Compute").run(ctx) is True
    assert ctx.output_root.child("XMLNSC").child("M").value == "second"
    with pytest.raises(ModuleNotFound) as info:
        program.main_module()
    assert str(info.value) == "the program has 2 COMPUTE modules; name the one to run"
    with pytest.raises(LookupError):
        program.main_module("Missing")
    route = program.main_module(kind="FILTER")
    high = build("Root", {"XMLNSC": {"Doc": {"Priority": "9"}}})
    low = build("Root", {"XMLNSC": {"Doc": {"Priority": "1"}}})
    none = build("Root", {"XMLNSC": {"Doc": {}}})
    assert route.run(ExecutionContext(input_root=high)) is True
    assert route.run(ExecutionContext(input_root=low)) is False
    assert route.run(ExecutionContext(input_root=none)) is None


def test_propagate_callback_receives_each_message() -> None:
    source = """
DECLARE i INTEGER 1;
WHILE i <= 3 DO
  SET OutputRoot.XMLNSC.Part.N = i;
  SET OutputLocalEnvironment.Destination.Label = 'L' || CAST(i AS CHARACTER);
  PROPAGATE TO TERMINAL i;
  SET i = i + 1;
END WHILE;
PROPAGATE TO LABEL 'Done' DELETE NONE;
RETURN FALSE;
"""
    seen: list[tuple[str, bool, object, object]] = []

    def propagate(terminal: str, is_label: bool, root: Element, env: Element, exc: Element) -> None:
        part = root.child("XMLNSC")
        seen.append((terminal, is_label, part.to_data() if part else None, env.to_data()))

    ctx = ExecutionContext(propagate=propagate)
    assert compile_program(source, "prop.esql").main_module().run(ctx) is False
    assert seen == [
        ("out1", False, {"Part": {"N": 1}}, {"Destination": {"Label": "L1"}}),
        ("out2", False, {"Part": {"N": 2}}, {"Destination": {"Label": "L2"}}),
        ("out3", False, {"Part": {"N": 3}}, {"Destination": {"Label": "L3"}}),
        ("Done", True, None, None),
    ]


def test_user_exception_builds_an_exception_list() -> None:
    source = "THROW USER EXCEPTION SEVERITY 2 CATALOG 'MyCat' MESSAGE 4242 VALUES('order', 7);\n"
    with pytest.raises(UserException) as info:
        compile_program(source, "throw.esql").main_module().run(ExecutionContext())
    err = info.value
    assert (err.severity, err.catalog, err.number, err.values, err.line) == (
        2,
        "MyCat",
        4242,
        ["order", 7],
        1,
    )
    assert err.exception_list().to_data() == {
        "UserException": {
            "Catalog": "MyCat",
            "Severity": 2,
            "Number": 4242,
            "Text": "User exception thrown by THROW statement: order, 7",
            "Insert": [{"Text": "order"}, {"Text": 7}],
        }
    }


def test_thrown_exception_carries_number_catalog_inserts_and_sqlstate() -> None:
    # What the flow runtime records as the ExceptionList: the MESSAGE, CATALOG and VALUES.
    source = "THROW USER EXCEPTION CATALOG 'MyCat' MESSAGE 4243 VALUES(-5, 'U0007', 3, 'why');\n"
    with pytest.raises(UserException) as info:
        compile_program(source, "throw.esql").main_module().run(ExecutionContext())
    err = info.value
    assert (err.number, err.catalog, err.inserts, err.sqlstate) == (
        4243,
        "MyCat",
        [-5, "U0007", 3, "why"],
        "U0007",
    )


def test_externals_are_cast_to_their_declared_type() -> None:
    source = """
DECLARE limit EXTERNAL INTEGER 10;
CREATE COMPUTE MODULE Ext_Compute
  CREATE FUNCTION Main() RETURNS BOOLEAN BEGIN SET OutputRoot.XMLNSC.L = limit * 2; RETURN TRUE; END;
END MODULE;
"""
    routine = compile_program(source, "ext.esql").main_module()
    default, overridden = ExecutionContext(), ExecutionContext(externals={"limit": "21"})
    routine.run(default)
    routine.run(overridden)
    assert default.output_root.child("XMLNSC").child("L").value == 20
    assert overridden.output_root.child("XMLNSC").child("L").value == 42
