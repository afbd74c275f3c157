"""Forms found in public ESQL projects that IBM's toolkit and runtime accept, each as IBM documents it."""

from __future__ import annotations

from pathlib import Path

import pytest
from flowbroker import formats

from esql.compiler import check_sources, compile_program
from esql.runtime import ExecutionContext
from esql.tree import build


def setup_module() -> None:
    formats.load_all()


def _run(source: str, root: object = None) -> ExecutionContext:
    ctx = ExecutionContext(input_root=root or build("Root", {"XMLNSC": {"Doc": {"A": "1"}}}))
    program = compile_program(source, "forms.esql", use_cache=False)
    assert program.main_module().run(ctx) is True
    return ctx


def _errors(source: str) -> list[str]:
    return [d.message for d in check_sources({"forms.esql": source})[0] if d.severity == "error"]


# ASBITSTREAM function: "ASBITSTREAM(FieldReference, Encoding, CCSID, SetName, TypeName, FormatName,
# Options)", the older comma form, is still accepted; the options keep their positions.
def test_asbitstream_positional_options_serialise_as_the_keyword_form() -> None:
    ctx = _run("""
SET Environment.Keyed = ASBITSTREAM(InputRoot.XMLNSC ENCODING 546 CCSID 1208);
SET Environment.Positional = ASBITSTREAM(InputRoot.XMLNSC, 546, 1208);
SET Environment.Sparse = ASBITSTREAM(InputRoot.XMLNSC, , 1208, , , , 0);
""")
    keyed = ctx.environment.child("Keyed").value
    assert isinstance(keyed, bytes) and b"<A>1</A>" in keyed
    assert ctx.environment.child("Positional").value == keyed
    assert ctx.environment.child("Sparse").value == keyed


def test_asbitstream_positional_takes_at_most_seven_arguments() -> None:
    assert _errors("SET Environment.B = ASBITSTREAM(InputRoot.XMLNSC, 546, 1208, '', '', '', 0, 9);") == [
        "ASBITSTREAM takes at most 7 arguments"
    ]


# CREATE statement, PARSE clause: PARSE(BitStream, Encoding, CCSID, Set, Type, Format, Options) by position.
def test_create_parse_positional_options() -> None:
    ctx = _run("""
DECLARE text BLOB CAST('<Order><Id>7</Id></Order>' AS BLOB CCSID 1208);
CREATE LASTCHILD OF Environment.A DOMAIN('XMLNSC') PARSE(text, 546, 1208);
CREATE LASTCHILD OF Environment.B DOMAIN 'XMLNSC' PARSE(text, InputRoot.Properties.Encoding, 1208,,,, 0);
""")
    for name in ("A", "B"):
        assert ctx.environment.child(name).child("XMLNSC").child("Order").child("Id").value == "7"


# ESQL variables: a normal variable (neither EXTERNAL nor SHARED) "has a lifetime of just one message
# passing through a node"; declared at module or schema level it belongs to the node. So it is allowed
# there, and each message starts from its initial value.
MODULE_VARIABLES = """
BROKER SCHEMA org.example
DECLARE total INTEGER 10;
CREATE COMPUTE MODULE Counter
  DECLARE seen INTEGER 0;
  DECLARE cache ROW;
  CREATE FUNCTION Main() RETURNS BOOLEAN
  BEGIN
    SET seen = seen + 1;
    SET total = total + 1;
    CALL Bump();
    SET cache.Items[CARDINALITY(cache.Items[]) + 1] = 'x';
    SET OutputRoot.XMLNSC.Out.Seen = seen;
    SET OutputRoot.XMLNSC.Out.Total = total;
    SET OutputRoot.XMLNSC.Out.Items = CARDINALITY(cache.Items[]);
    RETURN TRUE;
  END;
  CREATE PROCEDURE Bump() BEGIN SET seen = seen + 5; END;
END MODULE;
"""


def test_module_and_schema_normal_variables_start_afresh_for_each_message() -> None:
    program = compile_program(MODULE_VARIABLES, "counter.esql", use_cache=False)
    routine = program.main_module("Counter")
    for _message in range(2):
        ctx = ExecutionContext(input_root=build("Root", {"XMLNSC": {"Doc": {}}}))
        assert routine.run(ctx) is True
        out = ctx.output_root.child("XMLNSC").child("Out")
        assert (out.child("Seen").value, out.child("Total").value, out.child("Items").value) == (6, 11, 1)


def test_shared_variable_still_outlives_the_message() -> None:
    source = MODULE_VARIABLES.replace("DECLARE seen INTEGER 0;", "DECLARE seen SHARED INTEGER 0;")
    routine = compile_program(source, "counter.esql", use_cache=False).main_module("Counter")
    seen = []
    for _message in range(2):
        ctx = ExecutionContext(input_root=build("Root", {"XMLNSC": {"Doc": {}}}))
        routine.run(ctx)
        seen.append(ctx.output_root.child("XMLNSC").child("Out").child("Seen").value)
    assert seen == [6, 12]


# SET statement: the target is a field reference; a REFERENCE variable names the field it points to,
# so SET r = source assigns that field (a tree copy that keeps the target's name). MOVE repoints r.
def test_set_through_a_reference_assigns_the_field_it_points_to() -> None:
    ctx = _run("""
SET Environment.Src.A = 1;
SET Environment.Src.B.C = 'x';
CREATE FIELD OutputRoot.XMLNSC.Out.Data;
DECLARE r REFERENCE TO OutputRoot.XMLNSC.Out.Data;
SET r = Environment.Src;
SET OutputRoot.XMLNSC.Out.Name = FIELDNAME(r);
CREATE FIELD OutputRoot.XMLNSC.Out.Scalar;
MOVE r TO OutputRoot.XMLNSC.Out.Scalar;
SET r = 'v';
""")
    out = ctx.output_root.child("XMLNSC").child("Out")
    data = out.child("Data")
    assert data.child("A").value == 1 and data.child("B").child("C").value == "x"
    assert out.child("Name").value == "Data"
    assert out.child("Scalar").value == "v"
    assert ctx.environment.child("Src").child("A").value == 1


# Lexical forms found in public files: a byte order mark, CRLF line ends, lower-case keywords and
# comments between the parts of a statement.
def test_bom_crlf_lower_case_and_comments(tmp_path: Path) -> None:
    text = (
        "\ufeffbroker schema a.b\r\n"
        "create compute module Lower_Compute -- trailing\r\n"
        "  create function Main() returns boolean\r\n"
        "  begin\r\n"
        "    set /* between */ OutputRoot.XMLNSC.Out.V\t=\r\n  upper( 'x' ) ;\r\n"
        "    return true;\r\n"
        "  end;\r\n"
        "end module;\r\n"
    )
    path = tmp_path / "lower.esql"
    path.write_bytes(text.encode("utf-8"))
    source = path.read_bytes().decode("utf-8-sig")
    ctx = ExecutionContext(input_root=build("Root", {"XMLNSC": {"Doc": {}}}))
    assert compile_program(source, "lower.esql", use_cache=False).main_module().run(ctx) is True
    assert ctx.output_root.child("XMLNSC").child("Out").child("V").value == "X"


# SUBSTRING function: with BEFORE, StringLength characters before the first occurrence of the
# BeforeExpression; with AFTER, StringLength characters after the AfterExpression.
def test_substring_before_and_after_take_a_length() -> None:
    ctx = _run("""
SET Environment.After = SUBSTRING('2024-05-06T10:11:12' AFTER 'T' FOR 5);
SET Environment.Before = SUBSTRING('2024-05-06T10:11:12' BEFORE 'T' FOR 5);
SET Environment.Long = SUBSTRING('abcXdef' AFTER 'X' FOR 10);
SET Environment.Whole = SUBSTRING('abcXdef' BEFORE 'X' FOR 10);
SET Environment.Absent = SUBSTRING('abc' AFTER 'Q' FOR 2);
""")
    env = ctx.environment
    assert env.child("After").value == "10:11"
    assert env.child("Before").value == "05-06"
    assert env.child("Long").value == "def"
    assert env.child("Whole").value == "abc"
    assert env.child("Absent").value == ""


# ESQL variables / DECLARE statement: a module-level REFERENCE (a normal variable: one message's
# lifetime) points into the message the node is processing; only SHARED cannot be a REFERENCE.
def test_module_level_reference_and_row_are_set_up_for_each_message() -> None:
    source = """
CREATE COMPUTE MODULE Refs
  DECLARE inRef REFERENCE TO InputRoot.XMLNSC.Doc.A;
  DECLARE copy ROW InputRoot.XMLNSC.Doc;
  CREATE FUNCTION Main() RETURNS BOOLEAN
  BEGIN
    SET OutputRoot.XMLNSC.Out.A = inRef;
    MOVE inRef NEXTSIBLING;
    SET OutputRoot.XMLNSC.Out.Next = inRef;
    SET OutputRoot.XMLNSC.Out.Copy = copy.A;
    CALL Name();
    RETURN TRUE;
  END;
  CREATE PROCEDURE Name() BEGIN SET OutputRoot.XMLNSC.Out.Where = FIELDNAME(inRef); END;
END MODULE;
"""
    routine = compile_program(source, "refs.esql", use_cache=False).main_module()
    for a in ("1", "7"):
        ctx = ExecutionContext(input_root=build("Root", {"XMLNSC": {"Doc": {"A": a, "B": "b"}}}))
        assert routine.run(ctx) is True
        out = ctx.output_root.child("XMLNSC").child("Out")
        assert [out.child(n).value for n in ("A", "Next", "Copy", "Where")] == [a, "b", a, "B"]
    assert _errors("CREATE COMPUTE MODULE S\n  DECLARE r SHARED REFERENCE TO InputRoot;\nEND MODULE;\n") == [
        "a REFERENCE variable cannot be SHARED; keep a shared tree in a ROW"
    ]


# ESQL modules overview / BROKER SCHEMA statement: a module is named within its schema, so two
# schemas of one project may each hold a module of the same name; a node names it schema.Module.
def test_same_module_name_in_two_schemas() -> None:
    template = """BROKER SCHEMA {schema}
CREATE COMPUTE MODULE Same
  DECLARE tag CHARACTER '{schema}';
  CREATE FUNCTION Main() RETURNS BOOLEAN
  BEGIN
    SET OutputRoot.XMLNSC.Out = tag;
    RETURN TRUE;
  END;
END MODULE;
"""
    sources = {"a.esql": template.format(schema="com.a"), "b.esql": template.format(schema="com.b")}
    program = compile_program(sources, use_cache=False)
    for schema in ("com.a", "com.b"):
        ctx = ExecutionContext(input_root=build("Root", {"XMLNSC": {"Doc": {}}}))
        assert program.main_module(f"{schema}.Same").run(ctx) is True
        assert ctx.output_root.child("XMLNSC").child("Out").value == schema
    same = {"a.esql": sources["a.esql"], "c.esql": sources["a.esql"]}
    assert [d.message for d in check_sources(same)[0]] == ["module 'Same' is already defined"]


# CREATE statement: IDENTITY gives type, namespace and name in one path element, and may be
# followed by VALUE; the name can be left out (IDENTITY (JSON.Array)).
def test_create_identity_with_value_and_type_alone() -> None:
    ctx = _run("""
DECLARE ns1 NAMESPACE 'urn:one';
CREATE FIELD OutputRoot.XMLNSC.Root;
CREATE LASTCHILD OF OutputRoot.XMLNSC.Root IDENTITY (XMLNSC.Attribute)ns1:Attr VALUE 'attr value';
CREATE LASTCHILD OF OutputRoot.XMLNSC.Root IDENTITY (XMLNSC.Field)ns1:Element1[1] VALUE 'element value';
CREATE FIELD OutputRoot.JSON.Data.list IDENTITY (JSON.Array);
""")
    root = ctx.output_root.child("XMLNSC").child("Root")
    attr, element = root.first_child, root.last_child
    assert (attr.name, attr.namespace, attr.value) == ("Attr", "urn:one", "attr value")
    assert (element.name, element.namespace, element.value) == ("Element1", "urn:one", "element value")
    from esql.fieldtypes import FIELD_TYPES

    data_list = ctx.output_root.child("JSON").child("Data").child("list")
    assert data_list.type == FIELD_TYPES["JSON.Array"]


# BROKER SCHEMA statement / DECLARE statement: a schema-level variable's initial value may use the
# schema's variables declared before it.
def test_schema_variable_initialised_from_another() -> None:
    ctx = _run("""
BROKER SCHEMA org.example
DECLARE BASE CHARACTER 'org.example.';
DECLARE FLOW CHARACTER BASE || 'Main';
CREATE COMPUTE MODULE UsesSchemaVariables
  CREATE FUNCTION Main() RETURNS BOOLEAN
  BEGIN
    SET OutputRoot.XMLNSC.Out = FLOW;
    RETURN TRUE;
  END;
END MODULE;
""")
    assert ctx.output_root.child("XMLNSC").child("Out").value == "org.example.Main"


# DECLARE HANDLER statement: "Scopes are searched from the innermost to outermost", so an EXIT
# handler of an inner BEGIN … END takes a user exception before a CONTINUE handler of the outer
# scope; one that does not match leaves it to the outer CONTINUE handler, after which execution
# continues with the statement after the THROW.
def test_inner_exit_handler_precedes_outer_continue_handler() -> None:
    ctx = _run("""
DECLARE CONTINUE HANDLER FOR SQLSTATE LIKE 'U%'
BEGIN
  SET OutputRoot.XMLNSC.Out.Continued[CARDINALITY(OutputRoot.XMLNSC.Out.Continued[]) + 1] = SQLSTATE;
END;
THROW USER EXCEPTION VALUES ('first', 'U0001');
SET OutputRoot.XMLNSC.Out.AfterFirst = 1;
BEGIN
  DECLARE EXIT HANDLER FOR SQLSTATE LIKE 'U%' SET OutputRoot.XMLNSC.Out.Inner = SQLSTATE;
  THROW USER EXCEPTION VALUES ('second', 'U0002');
  SET OutputRoot.XMLNSC.Out.NotReached = 1;
END;
SET OutputRoot.XMLNSC.Out.AfterInner = 1;
BEGIN
  DECLARE EXIT HANDLER FOR SQLSTATE 'X0000' SET OutputRoot.XMLNSC.Out.Wrong = 1;
  THROW USER EXCEPTION VALUES ('third', 'U0003');
  SET OutputRoot.XMLNSC.Out.AfterThird = 1;
END;
""")
    out = ctx.output_root.child("XMLNSC").child("Out")
    assert [(c.name, c.value) for c in out.children()] == [
        ("Continued", "U0001"),
        ("AfterFirst", 1),
        ("Inner", "U0002"),
        ("AfterInner", 1),
        ("Continued", "U0003"),
        ("AfterThird", 1),
    ]


# DECLARE HANDLER statement: "Within any one scope, handlers are searched in the order they are
# declared; that is, first to last." The first matching handler of a scope runs, whatever its kind.
def test_handlers_of_one_scope_are_searched_first_to_last() -> None:
    ctx = _run("""
BEGIN
  DECLARE CONTINUE HANDLER FOR SQLSTATE LIKE 'U%' SET OutputRoot.XMLNSC.Out.First = SQLSTATE;
  DECLARE CONTINUE HANDLER FOR SQLSTATE LIKE '%' SET OutputRoot.XMLNSC.Out.Second = SQLSTATE;
  THROW USER EXCEPTION VALUES (-1, 'U0001');
  SET OutputRoot.XMLNSC.Out.AfterContinue = 1;
END;
BEGIN
  DECLARE EXIT HANDLER FOR SQLSTATE LIKE 'U%' SET OutputRoot.XMLNSC.Out.Exit = SQLSTATE;
  DECLARE CONTINUE HANDLER FOR SQLSTATE LIKE '%' SET OutputRoot.XMLNSC.Out.NotThis = SQLSTATE;
  THROW USER EXCEPTION VALUES (-1, 'U0002');
  SET OutputRoot.XMLNSC.Out.NotReached = 1;
END;
SET OutputRoot.XMLNSC.Out.AfterExit = 1;
""")
    out = ctx.output_root.child("XMLNSC").child("Out")
    assert [(c.name, c.value) for c in out.children()] == [
        ("First", "U0001"),
        ("AfterContinue", 1),
        ("Exit", "U0002"),
        ("AfterExit", 1),
    ]


# DECLARE HANDLER statement: a handler guards the statements of its scope that follow it; the
# variables declared before it are declared and initialised as usual.
def test_declarations_before_a_handler_are_kept() -> None:
    ctx = _run("""
DECLARE n INTEGER 5;
DECLARE CONTINUE HANDLER FOR SQLSTATE LIKE 'U%' SET n = n + 10;
THROW USER EXCEPTION VALUES (-1, 'U0001');
SET OutputRoot.XMLNSC.Out.N = n;
""")
    assert ctx.output_root.child("XMLNSC").child("Out").child("N").value == 15


def test_statement_before_a_handler_is_warned_about_and_run_unguarded() -> None:
    source = """
SET OutputRoot.XMLNSC.Out.Before = 1;
DECLARE CONTINUE HANDLER FOR SQLSTATE LIKE 'U%' SET OutputRoot.XMLNSC.Out.H = SQLSTATE;
THROW USER EXCEPTION VALUES (-1, 'U0001');
SET OutputRoot.XMLNSC.Out.After = 1;
"""
    warnings = [d for d in check_sources({"forms.esql": source})[0] if d.severity == "warning"]
    assert [(d.line, d.message) for d in warnings] == [
        (
            3,
            "a handler should be declared at the top of its scope, before other statements: "
            "the statements before it are not guarded by it",
        )
    ]
    out = _run(source).output_root.child("XMLNSC").child("Out")
    assert [(c.name, c.value) for c in out.children()] == [("Before", 1), ("H", "U0001"), ("After", 1)]


# SQLSTATE function, "SQL states": the SQL state of an exception is found in two stages — wrapping
# exceptions are stepped over to the one describing the original error, then its state is read; for
# a user exception (one thrown by THROW) the SQL code, state, native error and error text are its
# first four inserts, in that order, the state taken as is (no 'U' origin is prefixed), which is why
# IBM advises states beginning with 'U' for thrown exceptions so that LIKE 'U%' handles them all.
# IBM's plug-in API says the same from the other side: NBUserException.AddEsqlHandlerInserts
# "constructs ESQL Handler ready inserts with the SQL code, state, native error and error text".
# A THROW with no second insert therefore has an empty SQL state, which only LIKE '%' matches.
def test_user_exception_sqlstate_is_its_second_insert() -> None:
    ctx = _run("""
DECLARE CONTINUE HANDLER FOR SQLSTATE VALUE 'U11222' BEGIN
  SET OutputRoot.XMLNSC.Out.Code = SQLCODE;
  SET OutputRoot.XMLNSC.Out.State = SQLSTATE;
  SET OutputRoot.XMLNSC.Out.Native = SQLNATIVEERROR;
  SET OutputRoot.XMLNSC.Out.Text = SQLERRORTEXT;
END;
THROW USER EXCEPTION VALUES (-1, 'U11222', 42, 'error text');
BEGIN
  DECLARE CONTINUE HANDLER FOR SQLSTATE LIKE 'U%' SET OutputRoot.XMLNSC.Out.NotU = SQLSTATE;
  DECLARE CONTINUE HANDLER FOR SQLSTATE LIKE '%' SET OutputRoot.XMLNSC.Out.Any = '[' || SQLSTATE || ']';
  THROW USER EXCEPTION;
  SET OutputRoot.XMLNSC.Out.After = 1;
END;
""")
    out = ctx.output_root.child("XMLNSC").child("Out")
    assert [(c.name, c.value) for c in out.children()] == [
        ("Code", -1),
        ("State", "U11222"),
        ("Native", 42),
        ("Text", "error text"),
        ("Any", "[]"),
        ("After", 1),
    ]


# THROW statement: "SEVERITY ... If you omit the clause, it defaults to 1"; CATALOG defaults to
# BIPmsgs and MESSAGE to 2951.
def test_throw_defaults() -> None:
    from esql.runtime import UserException

    program = compile_program("THROW USER EXCEPTION;", "throw.esql", use_cache=False)
    with pytest.raises(UserException) as info:
        program.main_module().run(ExecutionContext())
    assert (info.value.severity, info.value.catalog, info.value.number) == (1, "BIPmsgs", 2951)


# BROKER SCHEMA statement: "BROKER SCHEMA schemaName PATH schemaPathList esqlContents" — the PATH
# list needs no semicolon before the file's declarations.
def test_path_clause_without_semicolon() -> None:
    for text in (
        "BROKER SCHEMA a.b PATH x.y, r.t\nDECLARE cache SHARED ROW;\nCREATE COMPUTE MODULE M\nEND MODULE;\n",
        "BROKER SCHEMA a.b\nPATH x.y\n\nCREATE COMPUTE MODULE M\nEND MODULE;\n",
        "BROKER SCHEMA a.b\nPATH x.y\n",
    ):
        assert _errors(text) == [], text


# SQLSTATE function, as above: one insert is the SQL code only (the state stays empty), and a second
# insert that does not start with 'U' is not matched by LIKE 'U%'.
def test_user_exception_with_one_insert_or_another_state_is_not_a_u_state() -> None:
    ctx = _run("""
BEGIN
  DECLARE CONTINUE HANDLER FOR SQLSTATE LIKE 'U%' SET OutputRoot.XMLNSC.Out.U[CARDINALITY(OutputRoot.XMLNSC.Out.U[]) + 1] = SQLSTATE;
  DECLARE CONTINUE HANDLER FOR SQLSTATE LIKE '%' BEGIN
    SET OutputRoot.XMLNSC.Out.Other[CARDINALITY(OutputRoot.XMLNSC.Out.Other[]) + 1] = '[' || SQLSTATE || ']';
    SET OutputRoot.XMLNSC.Out.Code[CARDINALITY(OutputRoot.XMLNSC.Out.Code[]) + 1] = SQLCODE;
  END;
  THROW USER EXCEPTION VALUES (7);
  THROW USER EXCEPTION VALUES (8, 'S22003');
  THROW USER EXCEPTION VALUES (9, 'U00009');
END;
""")
    out = ctx.output_root.child("XMLNSC").child("Out")
    assert [(c.name, c.value) for c in out.children()] == [
        ("Other", "[]"),
        ("Code", 7),
        ("Other", "[S22003]"),
        ("Code", 8),
        ("U", "U00009"),
    ]
