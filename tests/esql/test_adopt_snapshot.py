"""SET field = field within one tree: the snapshot's private copy is moved into the target
(``_adopt_tree``) instead of being copied a second time (``_assign_tree``). Both must build the
same tree, and the source must stay as it was."""

from __future__ import annotations

from esql import runtime as rt
from esql.compiler import compile_program
from esql.runtime import ExecutionContext
from esql.tree import NAME, VALUE, Element, build

BODY = """
  SET OutputRoot = InputRoot;
  DECLARE i INTEGER 1;
  WHILE i <= CARDINALITY(OutputRoot.XML.CSIM.Stack.Path.Element[]) DO
    SET OutputRoot.XML.CSIM.Path.Component[i].Name = OutputRoot.XML.CSIM.Stack.Path.Element[i].COMPONENT;
    SET OutputRoot.XML.CSIM.Path.Component[i].Copy = OutputRoot.XML.CSIM.Stack.Path.Element[i];
    SET i = i + 1;
  END WHILE;
  SET OutputRoot.XML.CSIM.Existing = OutputRoot.XML.CSIM.Stack.Path.Element[2];
  SET OutputRoot.XML.CSIM.Stack.Inner = OutputRoot.XML.CSIM.Stack;
  SET OutputRoot.XML.CSIM.Stack.Path.Element[1].Self = OutputRoot.XML.CSIM.Stack.Path.Element[1];
  SET OutputRoot.XML.CSIM.Gone = 'x';
  SET OutputRoot.XML.CSIM.Gone = OutputRoot.XML.CSIM.Missing;
  SET OutputRoot.XML.Whole = OutputRoot.XML.CSIM;
  SET OutputRoot.XML.Plain = InputRoot.XML.CSIM.Stack.Path.Element[3];
  SET OutputRoot.Nowhere.X.Y = OutputRoot.Nowhere.X.Z;
"""


def _program() -> str:
    return f"CREATE COMPUTE MODULE M CREATE FUNCTION Main() RETURNS BOOLEAN BEGIN{BODY} RETURN TRUE; END; END MODULE;"


def _input() -> Element:
    root = build("Root", {"XML": {"CSIM": {"Stack": {"Path": {}}, "Existing": {"old": "1"}}}})
    path = root.child("XML").child("CSIM").child("Stack").child("Path")  # type: ignore[union-attr]
    assert path is not None
    for n in range(1, 4):
        element = path.add("Element", type=NAME)
        component = element.add("COMPONENT", type=NAME)
        component.add("", f"Component{n}", type=VALUE)
        queue = element.add("QUEUE", type=NAME)
        queue.add("", f"QUEUE.{n}", type=VALUE)
    return root


def _shape(element: Element) -> list[object]:
    return [(node.path(), node.type, node.namespace, node.value) for node in element.walk()]


def _run(general: bool) -> tuple[ExecutionContext, Element]:
    program = compile_program(_program(), "adopt.esql", use_cache=False)
    assert "_adopt_tree(" in program.python_source
    if general:
        program.namespace["_adopt_tree"] = rt.assign_tree
    source = _input()
    ctx = ExecutionContext(input_root=source)
    assert program.main_module().run(ctx) is True
    return ctx, source


def test_moving_the_snapshot_builds_what_copying_it_builds() -> None:
    fast, fast_in = _run(general=False)
    general, general_in = _run(general=True)
    assert _shape(fast.output_root) == _shape(general.output_root)
    assert _shape(fast_in) == _shape(_input()) == _shape(general_in)
    csim = fast.output_root.child("XML").child("CSIM")  # type: ignore[union-attr]
    assert csim is not None
    second = csim.child("Path").child("Component", 2)  # type: ignore[union-attr]
    assert second is not None
    assert second.child("Name").child("").value == "Component2"  # type: ignore[union-attr]
    assert csim.child("Existing").child("old") is None  # type: ignore[union-attr]
    assert csim.child("Gone") is None
    assert fast.output_root.child("Nowhere") is None
    inner = csim.child("Stack").child("Inner")  # type: ignore[union-attr]
    assert inner is not None and inner.child("Path") is not None and inner.child("Inner") is None


def test_a_moved_copy_shares_nothing_with_its_source() -> None:
    fast, _ = _run(general=False)
    csim = fast.output_root.child("XML").child("CSIM")  # type: ignore[union-attr]
    assert csim is not None
    name = csim.child("Path").child("Component").child("Name")  # type: ignore[union-attr]
    original = csim.child("Stack").child("Path").child("Element").child("COMPONENT")  # type: ignore[union-attr]
    assert name is not None and original is not None
    text = name.child("")
    assert text is not None and text.parent is name and text is not original.child("")
    text.value = "changed"
    assert original.child("").value == "Component1"  # type: ignore[union-attr]


def test_adopt_tree_moves_the_children_and_leaves_the_copy_empty() -> None:
    source = build("Root", {"a": {"b": "1", "c": {"d": "2"}}}).child("a")
    assert source is not None
    target = Element("t")
    target.add("stale")
    fresh = source.copy()
    reference = Element("t")
    reference.add("stale")
    rt.assign_tree(reference, source.copy())
    rt.adopt_tree(target, fresh)
    assert _shape(target) == _shape(reference)
    assert all(kid.parent is target for kid in target.children())
    assert fresh.first_child is None
    nameless, nameless_reference = Element(""), Element("")
    rt.adopt_tree(nameless, source.copy())
    rt.assign_tree(nameless_reference, source.copy())
    assert nameless.name == "a" and _shape(nameless) == _shape(nameless_reference)


def test_an_unparsed_subtree_is_moved_unread_and_reads_as_the_copied_one() -> None:
    from flowbroker.qm.protocol import Message, MessageDescriptor
    from flowbroker.runtime import assembly

    assembly.ensure_domains()
    esql = (
        "CREATE COMPUTE MODULE M CREATE FUNCTION Main() RETURNS BOOLEAN BEGIN"
        " SET OutputRoot = InputRoot; SET OutputRoot.XML.Again = OutputRoot.XML;"
        " RETURN TRUE; END; END MODULE;"
    )
    shapes = []
    for general in (False, True):
        program = compile_program(esql, "lazy.esql", use_cache=False)
        if general:
            program.namespace["_adopt_tree"] = rt.assign_tree
        message = Message(MessageDescriptor(), {}, b"<doc><a>1</a><b><c>2</c></b></doc>")
        ctx = ExecutionContext(input_root=assembly.build_root(message, {"domain": "XML"}))
        assert program.main_module().run(ctx) is True
        again = ctx.output_root.child("XML").child("Again")  # type: ignore[union-attr]
        assert again is not None and again.lazy is not None  # still unparsed after the SET
        shapes.append(_shape(ctx.output_root.child("XML")))  # type: ignore[arg-type]
    assert shapes[0] == shapes[1]
    assert ("Root.XML.Again.doc.b.c", NAME, "", None) in shapes[0]
