"""The message view: trees with field and value types, the serialized body, bounds, and edits by ref."""

from __future__ import annotations

from typing import Any

import pytest
from esql.tree import Element
from flowbroker.formats import assembly as formats_assembly
from flowbroker.qm.protocol import MessageDescriptor
from flowbroker.runtime import message_view
from flowbroker.runtime.message_view import EditError, Limits, set_value, view_assembly
from flowbroker_nodes.base import Assembly


def _assembly(body: bytes, domain: str) -> Assembly:
    root = formats_assembly.build_root(MessageDescriptor(), body, formats_assembly.Template(domain))
    return Assembly(root)


def _find(node: dict[str, Any], path: str) -> dict[str, Any]:
    if node["path"] == path:
        return node
    for kid in node["children"]:
        if path == kid["path"] or path.startswith(kid["path"] + "."):
            return _find(kid, path)
    raise AssertionError(f"{path} not in view")


def test_xml_body_tree_types_and_pretty_body() -> None:
    assembly = _assembly(b'<Order id="7"><Qty>3</Qty><Qty>4</Qty></Order>', "XMLNSC")
    view = view_assembly(assembly)
    root = view["trees"][0]
    assert [t["name"] for t in view["trees"]] == ["Root", "LocalEnvironment", "Environment", "ExceptionList"]
    assert [kid["name"] for kid in root["children"]] == ["Properties", "MQMD", "XMLNSC"]
    attribute = _find(root, "Root.XMLNSC.Order.id")
    assert attribute["fieldType"] == "XMLNSC.Attribute"
    assert attribute["value"] == "7" and attribute["valueType"] == "CHARACTER"
    second = _find(root, "Root.XMLNSC.Order.Qty[2]")
    assert second["value"] == "4" and second["ref"] == [2, 0, 2]
    ccsid = _find(root, "Root.Properties.CodedCharSetId")
    assert ccsid["valueType"] == "INTEGER" and ccsid["value"] == "1208"
    assert view["body"]["format"] == "xml"
    assert view["body"]["text"] == '<Order id="7">\n  <Qty>3</Qty>\n  <Qty>4</Qty>\n</Order>'
    assert view["truncated"] is False
    # viewing parsed a copy: the message itself is still unparsed
    assert formats_assembly.body_element(assembly.root).lazy is not None  # type: ignore[union-attr]


def test_json_body_pretty_printed_and_blob_as_hex() -> None:
    view = view_assembly(_assembly(b'{"a":{"b":[1,2]}}', "JSON"))
    assert view["body"]["format"] == "json"
    assert view["body"]["text"] == '{\n  "a": {\n    "b": [\n      1,\n      2\n    ]\n  }\n}'
    blob = view_assembly(_assembly(b"AB\x00\xff", "BLOB"))
    assert blob["body"]["format"] == "hex"
    assert blob["body"]["text"] == "00000000  41 42 00 FF" + " " * 38 + "AB.."
    field = _find(blob["trees"][0], "Root.BLOB.BLOB")
    assert field["valueType"] == "BLOB" and field["value"] == "414200FF"


def test_ten_megabyte_message_is_bounded_with_notices() -> None:
    body = b"<Big>" + b"<R>xxxxxxxx</R>" * (10 * 1024 * 1024 // 15) + b"</Big>"
    view = view_assembly(_assembly(body, "XMLNSC"), Limits(max_body_bytes=4096, max_parse_bytes=1 << 20))
    assert view["truncated"] is True
    assert len(view["body"]["text"]) == 4096
    assert view["body"]["bytes"] == len(body)
    assert any("parse limit" in n for n in view["notices"])
    assert any(
        f"the body is {len(body):,} bytes: only the first 4,096 are shown" == n for n in view["notices"]
    )


def test_field_budget_leaves_out_the_rest_with_a_count() -> None:
    body = b"<L>" + b"<I>1</I>" * 300 + b"</L>"
    view = view_assembly(_assembly(body, "XMLNSC"), Limits(max_fields=100))
    total = 0

    def count(node: dict[str, Any]) -> None:
        nonlocal total
        total += 1
        for kid in node["children"]:
            count(kid)

    for tree in view["trees"]:
        count(tree)
    assert total == 100 + 3  # the tops of the other three trees always show
    assert any("more than 100 fields" in n for n in view["notices"])


def test_body_that_does_not_parse_is_a_notice_not_an_error() -> None:
    view = view_assembly(_assembly(b"<a><b></a>", "XMLNSC"))
    assert any(n.startswith("the XMLNSC body does not parse") for n in view["notices"])
    assert view["body"]["text"] == "<a><b></a>"


def test_set_value_by_ref_converts_to_the_type() -> None:
    assembly = _assembly(b"<Order><Qty>3</Qty></Order>", "XMLNSC")
    view = view_assembly(assembly)
    qty = _find(view["trees"][0], "Root.XMLNSC.Order.Qty")
    set_value(assembly, "Root", qty["ref"], "42", "INTEGER")
    assert assembly.root.child("XMLNSC").child("Order").child("Qty").value == 42  # type: ignore[union-attr]
    assert message_view.view_body(assembly.root)["text"] == "<Order>\n  <Qty>42</Qty>\n</Order>"
    assembly.environment.add("Flag", "x")
    set_value(assembly, "Environment", [0], "true", "BOOLEAN")
    assert assembly.environment.child("Flag").value is True  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("tree", "ref", "text", "kind", "message"),
    [
        ("Root", [9], "1", "INTEGER", "Root has no child at position 9"),
        (
            "Body",
            [0],
            "1",
            "INTEGER",
            "tree must be one of Root, LocalEnvironment, Environment, ExceptionList",
        ),
        ("Root", [0], "abc", "INTEGER", "'abc' is not a valid INTEGER"),
        ("Root", [0], "zz", "BLOB", "'zz' is not hexadecimal"),
        ("Root", [0], "1", "WIDGET", "value type must be one of"),
    ],
)
def test_bad_edits_say_why(tree: str, ref: list[int], text: str, kind: str, message: str) -> None:
    assembly = Assembly(Element("Root"))
    assembly.root.add("A", "1")
    with pytest.raises(EditError) as caught:
        set_value(assembly, tree, ref, text, kind)
    assert str(caught.value).startswith(message)


def test_a_large_blob_value_is_cut_before_it_becomes_hex() -> None:
    assembly = Assembly(Element("Root"))
    assembly.root.add("BLOB").add("BLOB", b"\xab" * (10 * 1024 * 1024))
    view = view_assembly(assembly, Limits(max_value_chars=64))
    field = _find(view["trees"][0], "Root.BLOB.BLOB")
    assert field["value"] == "AB" * 32 and field["valueCut"] is True
    assert "1 values longer than 64 characters are cut short" in view["notices"]
