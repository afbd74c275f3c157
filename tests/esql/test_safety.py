"""The sandbox: generated code reaches only the runtime's helpers, user names cannot collide, loops stop."""

from __future__ import annotations

import ast
import threading

import pytest

from esql.compiler import compile_program
from esql.runtime import ExecutionContext, StopRequested
from esql.tree import Element, build

TRICKY = """
DECLARE open CHARACTER 'o';
DECLARE eval, exec, print CHARACTER;
DECLARE "__import__" INTEGER 1;
DECLARE "my var" INTEGER 2;
DECLARE _add INTEGER 3;
SET eval = 'e';
SET OutputRoot.XMLNSC.Out.A = open || eval;
SET OutputRoot.XMLNSC.Out.B = "__import__" + "my var" + _add;
SET OutputRoot.XMLNSC.Out.C = InputRoot.XMLNSC.Doc.__class__;
SET OutputRoot.XMLNSC.Out.D = InputRoot.XMLNSC.Doc.{'__dict__'};
SET OutputRoot.XMLNSC.Out.{'__globals__'} = 'field';
"""


def test_user_names_cannot_reach_python() -> None:
    program = compile_program(TRICKY, "tricky.esql")
    root = build("Root", {"XMLNSC": {"Doc": {"__class__": "cls", "__dict__": "dct"}}})
    ctx = ExecutionContext(input_root=root)
    assert program.main_module().run(ctx) is True
    assert ctx.output_root.to_data() == {
        "XMLNSC": {"Out": {"A": "oe", "B": 6, "C": "cls", "D": "dct", "__globals__": "field"}}
    }


def test_generated_code_has_no_builtins_and_only_known_globals() -> None:
    program = compile_program(TRICKY, "tricky.esql")
    assert program.namespace["__builtins__"] == {}
    tree = ast.parse(program.python_source)
    assigned = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    params = {a.arg for n in ast.walk(tree) if isinstance(n, ast.arguments) for a in n.args}
    defined = {n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)}
    handlers = {n.name for n in ast.walk(tree) if isinstance(n, ast.ExceptHandler) and n.name}
    loaded = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    unknown = loaded - assigned - params - defined - handlers - set(program.namespace)
    assert unknown == set()
    attributes = {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)}
    assert not any(a.startswith("__") for a in attributes)


def test_no_eval_of_program_or_message_text() -> None:
    source = "SET OutputRoot.XMLNSC.Out.A = InputRoot.XMLNSC.Doc.Code;\n"
    program = compile_program(source, "t.esql")
    root = build("Root", {"XMLNSC": {"Doc": {"Code": "__import__('os').system('false')"}}})
    ctx = ExecutionContext(input_root=root)
    program.main_module().run(ctx)
    assert ctx.output_root.to_data() == {"XMLNSC": {"Out": {"A": "__import__('os').system('false')"}}}
    assert "system" not in program.python_source


@pytest.mark.timeout(60)
def test_runaway_loop_honours_stop_request() -> None:
    program = compile_program(
        "DECLARE i INTEGER 0;\nWHILE TRUE DO\n  SET i = i + 1;\nEND WHILE;\n", "loop.esql"
    )
    stop = threading.Event()
    ctx = ExecutionContext(stop=stop)
    timer = threading.Timer(0.2, stop.set)
    timer.start()
    try:
        with pytest.raises(StopRequested) as info:
            program.main_module().run(ctx)
    finally:
        timer.cancel()
    assert info.value.line == 2


@pytest.mark.timeout(60)
def test_every_loop_form_checks_stop() -> None:
    loops = [
        "X: LOOP END LOOP X;",
        "REPEAT UNTIL FALSE END REPEAT;",
        "WHILE 1 = 1 DO END WHILE;",
    ]
    for body in loops:
        program = compile_program(body + "\n", "loop.esql")
        stop = threading.Event()
        stop.set()
        with pytest.raises(StopRequested):
            program.main_module().run(ExecutionContext(stop=stop))
    program = compile_program("FOR x AS InputRoot.A[] DO END FOR;\n", "for.esql")
    stop = threading.Event()
    stop.set()
    root = Element("Root")
    root.add("A")
    with pytest.raises(StopRequested):
        program.main_module().run(ExecutionContext(input_root=root, stop=stop))


@pytest.mark.timeout(60)
def test_runaway_recursion_is_an_esql_error() -> None:
    from esql.runtime import EsqlRuntimeError

    source = (
        "CREATE FUNCTION Down(IN n INTEGER) RETURNS INTEGER BEGIN RETURN Down(n + 1); END;\n"
        "SET OutputRoot.XMLNSC.A = Down(1);\n"
    )
    program = compile_program(source, "rec.esql")
    with pytest.raises(EsqlRuntimeError) as info:
        program.main_module().run(ExecutionContext())
    assert info.value.message == "routine calls nested too deeply (runaway recursion)"


def test_compile_cache_by_source_hash() -> None:
    a = compile_program("SET OutputRoot.XMLNSC.A = 1;\n", "c.esql")
    b = compile_program("SET OutputRoot.XMLNSC.A = 1;\n", "c.esql")
    c = compile_program("SET OutputRoot.XMLNSC.A = 2;\n", "c.esql")
    assert a is b and a is not c


def test_shared_variable_is_safe_across_threads() -> None:
    source = """CREATE COMPUTE MODULE Count_Compute
  DECLARE total SHARED INTEGER 0;
  CREATE FUNCTION Main() RETURNS BOOLEAN
  BEGIN
    DECLARE i INTEGER 0;
    WHILE i < 200 DO
      BEGIN ATOMIC
        SET total = total + 1;
      END;
      SET i = i + 1;
    END WHILE;
    SET OutputRoot.XMLNSC.Total = total;
    RETURN TRUE;
  END;
END MODULE;
"""
    program = compile_program(source, "shared.esql")
    routine = program.main_module()
    threads = [threading.Thread(target=routine.run, args=(ExecutionContext(),)) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    ctx = ExecutionContext()
    routine.run(ctx)
    assert ctx.output_root.child("XMLNSC").child("Total").value == 1000


def test_eval_text_is_compiled_by_the_esql_compiler_and_stays_sandboxed() -> None:
    source = """
DECLARE code CHARACTER InputRoot.XMLNSC.Doc.Code;
BEGIN
  DECLARE EXIT HANDLER FOR SQLSTATE LIKE '%' SET OutputRoot.XMLNSC.Out.Err = SQLERRORTEXT;
  SET OutputRoot.XMLNSC.Out.Value = EVAL(code);
END;
EVAL('SET OutputRoot.XMLNSC.Out.' || InputRoot.XMLNSC.Doc.Field || ' = 1;');
"""
    program = compile_program(source, "evalsafe.esql")
    root = build("Root", {"XMLNSC": {"Doc": {"Code": "__import__('os').getcwd()", "Field": "__class__"}}})
    ctx = ExecutionContext(input_root=root)
    program.main_module().run(ctx)
    out = ctx.output_root.child("XMLNSC").child("Out")
    # Python syntax is no ESQL: the text fails to parse instead of running
    assert out.child("Err").value == "EVAL text, line 1, column 17: syntax error: unexpected '.'"
    assert out.child("__class__").value == 1
    compiled = [v for k, v in program.namespace.items() if k == "__builtins__"]
    assert compiled == [{}]


def test_eval_is_cached_by_text() -> None:
    program = compile_program(
        "DECLARE i INTEGER 0;\nWHILE i < 50 DO SET i = EVAL('i + 1'); END WHILE;\n", "c.esql"
    )
    program.main_module().run(ExecutionContext())
    assert len(program._evals) == 1
