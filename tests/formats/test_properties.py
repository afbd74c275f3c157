"""Round-trip properties of the self-defining domains: a tree written and read back is the same tree."""

from __future__ import annotations

from typing import Any

from esql.tree import Element
from formats_support import attach, serialize
from hypothesis import given, settings
from hypothesis import strategies as st

NAMES = st.from_regex(r"[A-Za-z_][A-Za-z0-9_.\-]{0,8}", fullmatch=True).filter(
    lambda n: not n.lower().startswith("xml")
)
# XML 1.0 characters, without the white space XMLNSC drops between elements and without CR (normalised).
TEXT = st.text(
    alphabet=st.characters(blacklist_categories=("Cs", "Cc"), blacklist_characters="\r"),
    min_size=1,
    max_size=12,
).filter(lambda t: not t.isspace())

LEAF = st.tuples(NAMES, TEXT)
TREE = st.recursive(
    LEAF,
    lambda kids: st.tuples(NAMES, st.lists(kids, min_size=1, max_size=4)),
    max_leaves=12,
)


def build(parent: Element, node: Any) -> None:
    name, content = node
    if isinstance(content, str):
        parent.add(name, content)
    else:
        folder = parent.add(name, type=0x01000000)
        for kid in content:
            build(folder, kid)


def shape(element: Element) -> Any:
    kids = list(element.children())
    if not kids:
        return (element.name, element.value)
    return (element.name, [shape(k) for k in kids])


@settings(max_examples=80, deadline=None)
@given(root=TREE, ccsid=st.sampled_from([1208, 1200]))
def test_xmlnsc_trees_round_trip(root: Any, ccsid: int) -> None:
    if isinstance(root[1], str):
        root = (root[0], [root])
    element = Element("XMLNSC")
    build(element, root)
    data = serialize(element, ccsid=ccsid)
    again = attach("XMLNSC", data, ccsid=ccsid)
    assert shape(again.child(root[0])) == shape(element.child(root[0]))  # type: ignore[arg-type]
    assert serialize(again, ccsid=ccsid) == data


JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**53), 2**53)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8),
    lambda kids: (
        st.lists(kids, max_size=4) | st.dictionaries(st.text(min_size=1, max_size=6), kids, max_size=4)
    ),
    max_leaves=15,
)


@settings(max_examples=80, deadline=None)
@given(value=JSON_VALUES)
def test_json_documents_round_trip_through_the_tree(value: Any) -> None:
    import orjson

    data = orjson.dumps(value)
    element = attach("JSON", data)
    _ = element.first_child
    assert orjson.loads(serialize(element)) == value
