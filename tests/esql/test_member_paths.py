"""SET and reads whose last step is a plain name take one-call paths (``_assign_member_tree``,
``_child_value``, ``_assign_member``); the same statements with an explicit ``[1]`` on that step
take the general ones (``_ensure``/``_step`` with ``_assign_tree``/``_value``). Both must build the
same tree."""

from __future__ import annotations

from esql.compiler import compile_program
from esql.fieldtypes import FIELD_TYPES
from esql.runtime import ExecutionContext
from esql.tree import NAME, VALUE, Element, build

BODY = """
  SET OutputRoot.XMLNSC.Out.existing = 'old';
  SET OutputRoot.XMLNSC.Out.leaf{i} = InputRoot.XMLNSC.In.leaf{i};
  SET OutputRoot.XMLNSC.Out.existing{i} = InputRoot.XMLNSC.In.leaf{i};
  SET OutputRoot.XMLNSC.Out.folder{i} = InputRoot.XMLNSC.In.folder{i};
  SET OutputRoot.XMLNSC.Out.gone = 'here';
  SET OutputRoot.XMLNSC.Out.gone{i} = InputRoot.XMLNSC.In.missing{i};
  SET OutputRoot.XMLNSC.Out.text{i} = InputRoot.XMLNSC.In.mixed{i};
  SET OutputRoot.XMLNSC.Out.sum = CAST(InputRoot.XMLNSC.In.leaf{i} AS DECIMAL) + 1;
  SET OutputRoot.XMLNSC.Out.mixedValue = InputRoot.XMLNSC.In.mixed{i} || '!';
  SET OutputRoot.XMLNSC.Out.absent = COALESCE(InputRoot.XMLNSC.In.missing{i}, 'none');
  SET OutputRoot.XMLNSC.Out.twice = 1;
  SET OutputRoot.XMLNSC.Out.twice{i} = 2.5;
  SET OutputRoot.XMLNSC.Out.copy = OutputRoot.XMLNSC.Out.folder{i};
  SET OutputRoot.NewFolder{i} = InputRoot.XMLNSC.In.leaf{i};
  SET OutputRoot.NewValue{i} = 'v';
"""


def _program(index: str) -> str:
    body = BODY.replace("existing{i}", "existing" + index).replace("{i}", index)
    return (
        "CREATE COMPUTE MODULE M CREATE FUNCTION Main() RETURNS BOOLEAN BEGIN"
        f"{body} RETURN TRUE; END; END MODULE;"
    )


def _input() -> Element:
    root = build("Root", {"XMLNSC": {"In": {"leaf": "12.50", "folder": {"a": "1", "b": {"c": "2"}}}}})
    body = root.child("XMLNSC").child("In")  # type: ignore[union-attr]
    assert body is not None
    body.child("leaf").type = FIELD_TYPES["XMLNSC.CDataField"]  # type: ignore[union-attr]  # a type SET copies
    mixed = body.add("mixed", type=NAME)
    mixed.add("", "abc", type=VALUE)
    return root


def _shape(element: Element) -> list[object]:
    rows: list[object] = []
    for node in element.walk():
        rows.append((node.path(), node.type, node.namespace, node.value))
    return rows


def test_plain_last_steps_build_what_indexed_ones_build() -> None:
    fast = compile_program(_program(""), "fast.esql")
    general = compile_program(_program("[1]"), "general.esql")
    assert "_assign_member_tree(" in fast.python_source and "_child_value(" in fast.python_source
    assert (
        "_assign_member_tree(" not in general.python_source and "_child_value(" not in general.python_source
    )
    out_fast = ExecutionContext(input_root=_input())
    out_general = ExecutionContext(input_root=_input())
    assert fast.main_module().run(out_fast) is True
    assert general.main_module().run(out_general) is True
    assert _shape(out_fast.output_root) == _shape(out_general.output_root)
    out = out_fast.output_root.child("XMLNSC").child("Out")  # type: ignore[union-attr]
    assert out is not None
    assert out.child("leaf").value == "12.50"  # type: ignore[union-attr]
    assert out.child("leaf").type == FIELD_TYPES["XMLNSC.CDataField"]  # type: ignore[union-attr]
    assert out.child("gone") is None
    assert out.child("text").value is None and out.child("text").type == NAME  # type: ignore[union-attr]
    assert str(out.child("sum").value) == "13.50"  # type: ignore[union-attr]
    assert out.child("mixedValue").value == "abc!"  # type: ignore[union-attr]
    assert out.child("copy").child("b").child("c").value == "2"  # type: ignore[union-attr]
