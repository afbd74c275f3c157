"""The ESQL syntax tree: one typed node class per grammar rule, named fields, a position on every node.

The code generator reads nodes by field name (``stmt.condition``), never by child position; the
last test keeps it so.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from esql import ast
from esql.parser import grammar, parse

CODEGEN = Path(ast.__file__).with_name("codegen")

PROGRAM = """BROKER SCHEMA com.example
PATH com.common;
DECLARE gPrefix EXTERNAL CHARACTER 'ORD-';
CREATE COMPUTE MODULE Copy_Compute
  CREATE FUNCTION Main() RETURNS BOOLEAN
  BEGIN
    ;
    DECLARE i, j INTEGER 1;
    DECLARE r REFERENCE TO InputRoot.XMLNSC.Order;
    DECLARE EXIT HANDLER FOR SQLSTATE LIKE 'U%' SET i = 0;
    IF i = 1 AND NOT (j > 2) THEN
      SET OutputRoot.XMLNSC.A.(XMLNSC.Attribute)b[1] = InputRoot.[<];
    ELSEIF i IN (2, 3) THEN
      SET OutputRoot.XMLNSC.A.ns:c = CAST(j AS DECIMAL(10, 2) DEFAULT 0) || 'x';
    ELSE
      CALL Helper(i, j);
    END IF;
    L1: WHILE i < 3 DO SET i = i + 1; ITERATE L1; END WHILE L1;
    SET OutputRoot.XMLNSC.Rows.Row[] = SELECT R.id AS Id FROM InputRoot.XMLNSC.Order.Item[] AS R
      WHERE R.qty BETWEEN 1 AND 5;
    CREATE LASTCHILD OF OutputRoot.XMLNSC.A DOMAIN 'XMLNSC' NAME 'B' VALUE -1;
    MOVE r NEXTSIBLING REPEAT TYPE NAME;
    PROPAGATE TO TERMINAL 'out1' DELETE NONE;
    RETURN CASE WHEN i IS NULL THEN FALSE ELSE TRUE END;
  END;
  CREATE PROCEDURE Helper(IN a INTEGER, OUT b INTEGER)
  BEGIN
    SET b = SUBSTRING('abc' FROM a FOR 1);
  END;
END MODULE;
"""


def _tree_rule_names() -> set[str]:
    """The names the parser gives the trees it builds: aliases and the rules that are not inlined."""
    names = set()
    for rule in grammar().lark.rules:
        if rule.alias:
            names.add(str(rule.alias))
        elif not rule.options.expand1 and not rule.origin.name.startswith("_"):
            names.add(str(rule.origin.name))
    return names


def test_every_grammar_rule_has_a_node_class() -> None:
    missing = {
        name
        for name in _tree_rule_names()
        if name not in ast.NODE_CLASSES and name not in ast.KEYWORD_GROUPS and name != "anon_elem"
    }
    assert missing == set()
    # and no node class names a rule the grammar does not have
    assert set(ast.NODE_CLASSES) - _tree_rule_names() == set()
    assert ast.KEYWORD_GROUPS - _tree_rule_names() == set()


def test_nodes_have_named_fields() -> None:
    result = parse(PROGRAM)
    assert result.diagnostics == []
    program = result.tree
    assert isinstance(program, ast.Program)
    schema, path, declare, module = program.items
    assert isinstance(schema, ast.BrokerSchema) and schema.name.text == "com.example"
    assert isinstance(path, ast.PathDecl) and [p.text for p in path.schemas] == ["com.common"]
    assert isinstance(declare, ast.Declare) and declare.modifier is not None
    assert ast.keyword(declare.modifier) == "EXTERNAL"
    assert isinstance(module, ast.ModuleDef) and ast.ident(module.name) == "Copy_Compute"
    main, helper = module.items
    assert isinstance(main, ast.RoutineDef) and main.params == [] and main.returns is not None
    assert main.returns.type.text == "BOOLEAN"
    assert isinstance(helper, ast.RoutineDef) and [ast.ident(p.name) for p in helper.params] == ["a", "b"]
    assert [ast.keyword(p.direction) for p in helper.params] == ["IN", "OUT"]
    assert isinstance(main.body, ast.EsqlBody) and isinstance(main.body.body, ast.BeginStmt)
    body = main.body.body.body.body
    kinds = [s.kind for s in body]
    assert kinds[:4] == ["empty", "declare", "declare", "handler"]
    two = body[1]
    assert isinstance(two, ast.Declare) and [ast.ident(n) for n in two.names] == ["i", "j"]
    assert isinstance(two.init, ast.IntLit) and two.init.token == "1"
    handler = body[3]
    assert isinstance(handler, ast.Handler) and ast.keyword(handler.handler_kind) == "EXIT"
    assert isinstance(handler.conditions[0], ast.SqlstateLike)
    if_stmt = body[4]
    assert isinstance(if_stmt, ast.IfStmt)
    assert isinstance(if_stmt.condition, ast.AndOp) and isinstance(if_stmt.condition.right, ast.NotOp)
    assert len(if_stmt.elseifs) == 1 and isinstance(if_stmt.elseifs[0].condition, ast.InList)
    assert if_stmt.else_part is not None and isinstance(if_stmt.else_part.body.body[0], ast.CallStmt)
    set_stmt = if_stmt.then.body[0]
    assert isinstance(set_stmt, ast.SetStmt)
    last = set_stmt.target.elems[-1]
    assert last.type_qual is not None and last.type_qual.text == "XMLNSC.Attribute"
    assert isinstance(last.index, ast.IndexN)
    # InputRoot.[<] is InputRoot.*[<]: a nameless step matches any name
    source = set_stmt.value
    assert isinstance(source, ast.FieldRef) and isinstance(source.elems[0].step.name, ast.Star)
    assert isinstance(source.elems[0].index, ast.IndexLast)
    prefixed = if_stmt.elseifs[0].then.body[0]
    assert isinstance(prefixed, ast.SetStmt)
    step = prefixed.target.elems[-1].step
    assert step.prefix is not None and ast.ident(step.prefix) == "ns" and ast.ident(step.name) == "c"
    assert isinstance(prefixed.value, ast.Concat) and isinstance(prefixed.value.left, ast.CastExpr)
    cast = prefixed.value.left
    assert isinstance(cast.type, ast.CastType) and (cast.type.precision, cast.type.scale) == ("10", "2")
    assert [ast.keyword(o.option) for o in cast.options] == ["DEFAULT"]
    labelled = body[5]
    assert isinstance(labelled, ast.Labelled) and isinstance(labelled.loop, ast.WhileStmt)
    assert labelled.loop.end_label is not None and ast.ident(labelled.loop.end_label) == "L1"
    select = body[6].value
    assert isinstance(select, ast.SelectExpr) and isinstance(select.select_list, ast.SelectFields)
    assert isinstance(select.condition, ast.Between) and ast.ident(select.sources[0].alias) == "R"
    create = body[7]
    assert isinstance(create, ast.CreateStmt) and isinstance(create.where, ast.WhereRel)
    assert isinstance(create.content, ast.CreateValues) and len(create.content.values) == 2
    move = body[8]
    assert isinstance(move, ast.MoveStmt) and isinstance(move.destination, ast.MoveRel)
    assert [ast.keyword(a) for a in move.destination.qualifiers[0].attrs] == ["TYPE", "NAME"]
    propagate = body[9]
    assert isinstance(propagate, ast.PropagateStmt) and propagate.destination is not None
    assert isinstance(propagate.options[0], ast.PropFlag)
    returned = body[10]
    assert isinstance(returned, ast.ReturnStmt) and isinstance(returned.value, ast.CaseExpr)
    assert isinstance(returned.value.whens[0].condition, ast.IsTest)


def test_every_node_has_a_position() -> None:
    tree = parse(PROGRAM).tree
    assert tree is not None
    unplaced = [n for n in tree.iter_nodes() if n.line < 1 or n.column < 1]
    assert unplaced == []
    lines = PROGRAM.splitlines()
    for node in tree.iter_nodes():
        if isinstance(node, ast.WhileStmt):
            assert lines[node.line - 1][node.column - 1 :].startswith("WHILE")
        if isinstance(node, ast.SetStmt):
            assert lines[node.line - 1][node.column - 1 :].startswith("SET")


def test_long_operator_chains_build_without_recursion() -> None:
    """Thousands of operands nest thousands deep on the left spine; building them must not recurse."""
    text = "SET OutputRoot.XMLNSC.A = " + " || ".join(f"'{i}'" for i in range(5000)) + ";"
    tree = parse(text).tree
    assert tree is not None
    value = tree.items[0].value
    first, links = ast.left_chain(value, ("concat",))
    assert isinstance(first, ast.StringLit) and first.value == "0" and len(links) == 4999


def test_equal_paths_compare_equal_whatever_their_position() -> None:
    tree = parse("SET OutputRoot.A.B = OutputRoot.A.C;\nSET OutputRoot.A.B = 1;").tree
    assert tree is not None
    first, second = tree.items
    assert first.target == second.target and first.target.line != second.target.line
    assert first.target != first.value


def test_a_node_class_refuses_a_field_named_like_its_position() -> None:
    with pytest.raises(TypeError, match="no field names"):

        class Clash(ast.Node):
            kind = "clash"
            fields = ("value", "column")


def test_code_generation_reads_no_child_by_position() -> None:
    """The generator names the parts it reads; ``children[i]`` would break silently on a grammar change."""
    files = sorted(CODEGEN.glob("*.py"))
    assert {f.name for f in files} >= {"statements.py", "expressions.py", "fieldrefs.py", "generator.py"}
    found = [
        f"{path.name}:{number}: {line.strip()}"
        for path in files
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if re.search(r"\bchildren\s*\[", line)
    ]
    assert found == []


def test_building_leaves_the_garbage_collector_as_it_found_it() -> None:
    """The build pauses the cyclic collector; afterwards it is on again, or still off if it was off."""
    import gc

    assert gc.isenabled()
    assert parse("SET OutputRoot.A = 1;").tree is not None
    assert gc.isenabled()
    gc.disable()
    try:
        assert parse("SET OutputRoot.A = 1;").tree is not None
        assert not gc.isenabled()
    finally:
        gc.enable()
    # a syntax error stops before the build and leaves the collector alone too
    assert parse("SET OutputRoot.A = ;").tree is None
    assert gc.isenabled()
