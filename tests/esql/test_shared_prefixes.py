"""A WHILE loop resolves the leading part of its paths once (esql.codegen.pathcache): every
program here must build the same tree, and fail with the same error at the same line, as the
code generated without shared prefixes, above all when the tree changes between two uses of a
prefix (deleted, replaced, renamed, created, an index moved on)."""

from __future__ import annotations

import re

import pytest

from esql.codegen.pathcache import PathCache
from esql.compiler import compile_program
from esql.runtime import EsqlRuntimeError, ExecutionContext
from esql.tree import NAME, VALUE, Element, LazyContent, build


def _program(body: str) -> str:
    return (
        "CREATE COMPUTE MODULE M CREATE FUNCTION Main() RETURNS BOOLEAN BEGIN\n"
        "DECLARE i INTEGER 1; DECLARE n INTEGER 0; DECLARE s CHARACTER '';\n"
        f"{body}\nRETURN TRUE; END; END MODULE;"
    )


def _input() -> Element:
    root = build(
        "Root",
        {
            "XMLNSC": {
                "Doc": {
                    "Head": {"Id": "7"},
                    "List": {"Item": [{"v": "a", "w": "1"}, {"v": "b", "w": "2"}, {"v": "c", "w": "3"}]},
                }
            }
        },
    )
    return root


def _shape(element: Element) -> list[object]:
    return [(node.path(), node.type, node.namespace, node.value) for node in element.walk()]


def _run(source: str, shared: bool, root: Element | None = None) -> tuple[object, str]:
    saved = PathCache.share_prefixes
    PathCache.share_prefixes = shared
    try:
        program = compile_program(source, "loop.esql", use_cache=False)
    finally:
        PathCache.share_prefixes = saved
    ctx = ExecutionContext(input_root=root if root is not None else _input())
    try:
        program.main_module().run(ctx)
    except EsqlRuntimeError as exc:
        return ("error", str(exc), _shape(ctx.output_root)), program.python_source
    return ("tree", _shape(ctx.output_root)), program.python_source


def _same_as_unshared(body: str, root_factory=_input, shares: bool = True) -> object:
    source = _program(body)
    with_cache, code = _run(source, True, root_factory())
    without, plain = _run(source, False, root_factory())
    assert ("_peek_" in code) is shares, code
    assert "_peek_" not in plain
    assert with_cache == without
    return with_cache


LOOPS = {
    "reads and writes below one prefix": """
        SET OutputRoot = InputRoot;
        WHILE i <= CARDINALITY(OutputRoot.XMLNSC.Doc.List.Item[]) DO
          SET OutputRoot.XMLNSC.Doc.Out.Entry[i].Name = OutputRoot.XMLNSC.Doc.List.Item[i].v;
          SET OutputRoot.XMLNSC.Doc.Out.Entry[i].(XMLNSC.Attribute)n = i;
          SET OutputRoot.XMLNSC.Doc.Out.Entry[i].Copy = OutputRoot.XMLNSC.Doc.List.Item[i];
          SET i = i + 1;
        END WHILE;""",
    "a prefix element deleted between two uses": """
        SET OutputRoot = InputRoot;
        WHILE i <= 3 DO
          SET OutputRoot.XMLNSC.Doc.Seen[i] = OutputRoot.XMLNSC.Doc.List.Item[1].v;
          SET OutputRoot.XMLNSC.Doc.List.Item[1] = NULL;
          SET OutputRoot.XMLNSC.Doc.After[i] = COALESCE(OutputRoot.XMLNSC.Doc.List.Item[1].v, 'none');
          SET i = i + 1;
        END WHILE;""",
    "an ancestor of the prefix deleted, then created again": """
        SET OutputRoot = InputRoot;
        WHILE i <= 3 DO
          SET OutputRoot.XMLNSC.Doc.List.Item[i].x = OutputRoot.XMLNSC.Doc.List.Item[i].v;
          SET OutputRoot.XMLNSC.Doc.List = NULL;
          SET OutputRoot.XMLNSC.Doc.Gone[i] = CARDINALITY(OutputRoot.XMLNSC.Doc.List.Item[]);
          SET OutputRoot.XMLNSC.Doc.List.Item[1].v = 'new';
          SET i = i + 1;
        END WHILE;""",
    "the prefix's children replaced from another tree": """
        SET OutputRoot = InputRoot;
        WHILE i <= 2 DO
          SET OutputRoot.XMLNSC.Doc.Count = CARDINALITY(OutputRoot.XMLNSC.Doc.List.Item[]);
          SET OutputRoot.XMLNSC.Doc = InputRoot.XMLNSC.Doc.Head;
          SET OutputRoot.XMLNSC.Doc.Again = OutputRoot.XMLNSC.Doc.Id;
          SET i = i + 1;
        END WHILE;""",
    "the prefix replaced from its own tree": """
        SET OutputRoot = InputRoot;
        WHILE i <= 2 DO
          SET OutputRoot.XMLNSC.Doc.List.Last[i] = OutputRoot.XMLNSC.Doc.List.Item[2].v;
          SET OutputRoot.XMLNSC.Doc.List = OutputRoot.XMLNSC.Doc.Head;
          SET OutputRoot.XMLNSC.Doc.List.Item[1].v = OutputRoot.XMLNSC.Doc.List.Id;
          SET i = i + 1;
        END WHILE;""",
    "a prefix missing at first, created by the loop": """
        WHILE i <= 3 DO
          SET n = CARDINALITY(OutputRoot.XMLNSC.Doc.List.Item[]);
          SET OutputRoot.XMLNSC.Doc.List.Item[i].v = n;
          SET OutputRoot.XMLNSC.Doc.List.Item[i].w = OutputRoot.XMLNSC.Doc.List.Item[i].v;
          SET i = i + 1;
        END WHILE;""",
    "the index moved on between two uses": """
        SET OutputRoot = InputRoot;
        WHILE i <= 2 DO
          SET OutputRoot.XMLNSC.Doc.List.Item[i].x = OutputRoot.XMLNSC.Doc.List.Item[i].v;
          SET i = i + 1;
          SET OutputRoot.XMLNSC.Doc.List.Item[i].y = OutputRoot.XMLNSC.Doc.List.Item[i].v;
        END WHILE;""",
    "a renamed sibling becomes the first of the prefix's name": """
        SET OutputRoot = InputRoot;
        WHILE i <= 2 DO
          SET OutputRoot.XMLNSC.Doc.Before[i] = OutputRoot.XMLNSC.Doc.List.Item[1].v;
          SET OutputRoot.XMLNSC.Doc.Head NAME = 'List';
          SET OutputRoot.XMLNSC.Doc.After[i] = COALESCE(OutputRoot.XMLNSC.Doc.List.Item[1].v, 'none');
          SET i = i + 1;
        END WHILE;""",
    "a wildcard target that may be the prefix": """
        SET OutputRoot = InputRoot;
        WHILE i <= 2 DO
          SET OutputRoot.XMLNSC.Doc.Before[i] = OutputRoot.XMLNSC.Doc.List.Item[2].v;
          SET OutputRoot.XMLNSC.Doc.*[2] = NULL;
          SET OutputRoot.XMLNSC.Doc.After[i] = COALESCE(OutputRoot.XMLNSC.Doc.List.Item[2].v, 'none');
          SET i = i + 1;
        END WHILE;""",
    "a typed target of the prefix's name": """
        SET OutputRoot = InputRoot;
        WHILE i <= 2 DO
          SET OutputRoot.XMLNSC.Doc.Before[i] = OutputRoot.XMLNSC.Doc.List.Item[1].v;
          SET OutputRoot.XMLNSC.Doc.(XMLNSC.Field)List = NULL;
          SET OutputRoot.XMLNSC.Doc.After[i] = COALESCE(OutputRoot.XMLNSC.Doc.List.Item[1].v, 'none');
          SET i = i + 1;
        END WHILE;""",
    "a list assignment at the prefix's level": """
        SET OutputRoot = InputRoot;
        WHILE i <= 2 DO
          SET OutputRoot.XMLNSC.Doc.Before[i] = OutputRoot.XMLNSC.Doc.List.Item[1].v;
          SET OutputRoot.XMLNSC.Doc.List[] = OutputRoot.XMLNSC.Doc.Head;
          SET OutputRoot.XMLNSC.Doc.After[i] = COALESCE(OutputRoot.XMLNSC.Doc.List.Item[1].v, 'none');
          SET i = i + 1;
        END WHILE;""",
    "another correlation name that shares the tree": """
        SET OutputLocalEnvironment.Doc.List.Item = 'x';
        WHILE i <= 2 DO
          SET OutputRoot.XMLNSC.Seen[i] = OutputDestinationList.Doc.List.Item;
          SET OutputLocalEnvironment.Doc.List = NULL;
          SET OutputRoot.XMLNSC.After[i] = COALESCE(OutputDestinationList.Doc.List.Item, 'none');
          SET OutputLocalEnvironment.Doc.List.Item = 'y';
          SET i = i + 1;
        END WHILE;
        SET OutputRoot.XMLNSC.Env = OutputLocalEnvironment.Doc;""",
}


@pytest.mark.parametrize("body", list(LOOPS.values()), ids=list(LOOPS))
def test_a_loop_with_shared_prefixes_builds_what_it_built_without(body: str) -> None:
    outcome = _same_as_unshared(body)
    assert outcome[0] == "tree"


def test_the_shared_prefix_is_walked_once_per_loop() -> None:
    source = _program(LOOPS["reads and writes below one prefix"])
    _outcome, code = _run(source, True)
    # the loop's prefixes are resolved before each statement only while unknown, and the
    # statements walk from them, not from OutputRoot
    walks = re.findall(r"(?<!\w)_child\(ctx\.output_root, 'XMLNSC'\)", code)
    fallbacks = re.findall(r"else _child\(ctx\.output_root, 'XMLNSC'\)", code)
    assert len(walks) == len(fallbacks) > 0
    assert code.count("_peek_child(ctx.output_root, 'XMLNSC')") >= 3


def test_a_deleted_prefix_is_forgotten_after_the_statement() -> None:
    _outcome, code = _run(_program(LOOPS["a prefix element deleted between two uses"]), True)
    delete = code.index("_delete(")
    assert "= None" in code[delete : code.index("_peek_", delete)]


@pytest.mark.parametrize(
    "index",
    ["0", "j", "i - i"],
    ids=["zero", "null variable", "zero expression"],
)
def test_a_bad_index_fails_as_it_did(index: str) -> None:
    body = f"""
        DECLARE j INTEGER;
        SET OutputRoot = InputRoot;
        WHILE i <= 2 DO
          SET OutputRoot.XMLNSC.Doc.A[i] = OutputRoot.XMLNSC.Doc.List.Item[i].v;
          SET OutputRoot.XMLNSC.Doc.B[i] = OutputRoot.XMLNSC.Doc.List.Item[{index}].v;
          SET i = i + 1;
        END WHILE;"""
    outcome = _same_as_unshared(body)
    assert outcome[0] == "error"


class _Parser:
    """Fills an element from bytes: ``bad`` raises, anything else is a CSV of item values."""

    def __init__(self) -> None:
        self.fills = 0

    def fill(self, element: Element, content: LazyContent) -> None:
        self.fills += 1
        if content.data == b"bad":
            raise EsqlRuntimeError("malformed content")
        items = element.add("List", type=NAME)
        for value in content.data.decode().split(","):
            item = items.add("Item", type=NAME)
            item.add("v", type=NAME).add("", value, type=VALUE)


def _lazy_root(data: bytes) -> Element:
    root = Element("Root")
    root.add("Properties")
    body = root.add("XMLNSC", type=NAME)
    doc = body.add("Doc", type=NAME)
    doc.set_lazy(LazyContent(_Parser(), data))
    return root


def test_unparsed_content_is_parsed_where_it_was() -> None:
    body = """
        WHILE i <= 2 DO
          SET OutputRoot.XMLNSC.Out.Seen[i] = 'before';
          SET OutputRoot.XMLNSC.Out.V[i] = InputRoot.XMLNSC.Doc.List.Item[i].v;
          SET OutputRoot.XMLNSC.Out.W[i] = InputRoot.XMLNSC.Doc.List.Item[i].v;
          SET i = i + 1;
        END WHILE;"""
    outcome = _same_as_unshared(body, lambda: _lazy_root(b"p,q"))
    assert outcome[0] == "tree"
    failed = _same_as_unshared(body, lambda: _lazy_root(b"bad"))
    assert failed[0] == "error"
    assert "line 6" in str(failed[1])  # the statement that first reads below the content
    assert ("Root.XMLNSC.Out.Seen", NAME_VALUE_TYPE, "", "before") in failed[2]


NAME_VALUE_TYPE = Element("x").type


def test_a_loop_that_calls_a_routine_shares_nothing() -> None:
    source = (
        "CREATE COMPUTE MODULE M CREATE FUNCTION Main() RETURNS BOOLEAN BEGIN\n"
        "DECLARE i INTEGER 1; SET OutputRoot = InputRoot;\n"
        "WHILE i <= 2 DO\n"
        "  SET OutputRoot.XMLNSC.Doc.A[i] = OutputRoot.XMLNSC.Doc.List.Item[i].v;\n"
        "  SET OutputRoot.XMLNSC.Doc.B[i] = Drop(i);\n"
        "  SET OutputRoot.XMLNSC.Doc.C[i] = OutputRoot.XMLNSC.Doc.List.Item[i].v;\n"
        "  SET i = i + 1;\n"
        "END WHILE;\nRETURN TRUE; END;\n"
        "CREATE FUNCTION Drop(IN k INTEGER) RETURNS INTEGER BEGIN\n"
        "  SET OutputRoot.XMLNSC.Doc.List = NULL; RETURN k; END;\n"
        "END MODULE;"
    )
    with_cache, code = _run(source, True)
    without, _plain = _run(source, False)
    assert "_peek_" not in code
    assert with_cache == without


def test_a_source_of_the_targets_own_tree_is_copied_before_the_target_changes() -> None:
    # both walked from OutputRoot: _snapshot_own copies a source with children, so a source that
    # is an ancestor of the target is taken as it was before the SET, as _snapshot would
    source = _program(
        "SET OutputRoot = InputRoot;\n"
        "SET OutputRoot.XMLNSC.Doc.Head.Copy = OutputRoot.XMLNSC.Doc.Head;\n"
        "SET OutputRoot.XMLNSC.Doc.Leaf = OutputRoot.XMLNSC.Doc.Head.Id;"
    )
    program = compile_program(source, "own.esql", use_cache=False)
    assert "_snapshot_own(" in program.python_source
    ctx = ExecutionContext(input_root=_input())
    program.main_module().run(ctx)
    head = ctx.output_root.child("XMLNSC").child("Doc").child("Head")  # type: ignore[union-attr]
    assert head is not None
    assert head.to_data() == {"Id": "7", "Copy": {"Id": "7"}}
    assert ctx.output_root.child("XMLNSC").child("Doc").child("Leaf").value == "7"  # type: ignore[union-attr]


def test_a_source_in_a_disjoint_subtree_is_copied_once_into_the_target() -> None:
    # Doc.Out and Doc.List differ at a named step: creating Out cannot reach the source, so the
    # source is not snapshot; a source that contains the target's parent still is
    source = _program(
        "SET OutputRoot = InputRoot;\n"
        "SET OutputRoot.XMLNSC.Doc.Out.Item = OutputRoot.XMLNSC.Doc.List.Item[2];\n"
        "SET OutputRoot.XMLNSC.Doc.List.Item[3].Inner.Copy = OutputRoot.XMLNSC.Doc.List.Item[3];"
    )
    program = compile_program(source, "disjoint.esql", use_cache=False)
    code = program.python_source
    assert code.count("_snapshot_own(") == 1
    ctx = ExecutionContext(input_root=_input())
    program.main_module().run(ctx)
    doc = ctx.output_root.child("XMLNSC").child("Doc")  # type: ignore[union-attr]
    assert doc is not None
    assert doc.child("Out").to_data() == {"Item": {"v": "b", "w": "2"}}  # type: ignore[union-attr]
    third = doc.child("List").child("Item", 3)  # type: ignore[union-attr]
    assert third is not None
    assert third.to_data() == {"v": "c", "w": "3", "Inner": {"Copy": {"v": "c", "w": "3"}}}
