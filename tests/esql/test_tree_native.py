"""The tree steps compiled in C (``esql/_tree_native.c``) do what their Python functions in
``esql.runtime`` do: random operation sequences run on twin trees, one with each, leave the same
trees and give the same answers and errors; unparsed content, values other than plain scalars and
elements of other classes go to the Python functions."""

from __future__ import annotations

import random
from collections.abc import Callable
from decimal import Decimal
from typing import Any

import pytest
from native_support import require_compiled

from esql import runtime, values
from esql.tree import NAME, NAME_VALUE, Element, LazyContent

STEPS = runtime.PYTHON_STEPS


def _native() -> dict[str, Callable[..., Any]]:
    steps = runtime.native_steps()
    return require_compiled(steps, "esql._tree_native")


def test_the_runtime_uses_the_compiled_steps_unless_told_not_to() -> None:
    steps = _native()
    for name, function in steps.items():
        assert getattr(runtime, name) is function
        assert STEPS[name] is not function


def _shape(element: Element) -> list[object]:
    rows: list[object] = []

    def walk(node: Element, depth: int) -> None:
        kid = node.first_child
        prev = None
        while kid is not None:
            assert kid.parent is node and kid.prev_sibling is prev
            value = kid.value
            if isinstance(value, Element):  # a value made anew in each run: compared by what it is
                value = repr(value)
            rows.append((depth, kid.name, kid.namespace, kid.type, type(value).__name__, value))
            walk(kid, depth + 1)
            prev, kid = kid, kid.next_sibling
        assert node.last_child is prev

    walk(element, 0)
    return rows


class _Text:
    """A parser for unparsed content: ``a=1;b=2`` becomes leaves."""

    def fill(self, element: Element, content: LazyContent) -> None:
        for pair in content.data.decode().split(";"):
            name, _, value = pair.partition("=")
            element.add(name, value)


def _tree(rng: random.Random) -> Element:
    root = Element("Root", type=0x01000000)
    names = ["a", "b", "c", "Root", ""]
    for top in ("Properties", "XMLNSC", "JSON"):
        folder = root.add(top, type=0x01000000)
        for _ in range(rng.randint(0, 4)):
            leaf = folder.add(rng.choice(names), rng.choice([None, "x", 3, Decimal("1.5")]))
            if rng.random() < 0.3:
                leaf.namespace = "urn:n"
            if rng.random() < 0.2:
                leaf.type = NAME
                if rng.random() < 0.5:
                    leaf.add("", "text", type=0x02000000)
            if rng.random() < 0.2:
                leaf.set_lazy(LazyContent(_Text(), b"a=1;b=2;a=3"))
    return root


def _elements(root: Element) -> list[Element]:
    return list(root.walk())


def _values(rng: random.Random) -> Any:
    return rng.choice(
        ["v", "", 7, True, False, 1.25, Decimal("2.50"), None, b"\x01", [1], Element("x"), 2**70]
    )


def _run(steps: dict[str, Callable[..., Any]], seed: int) -> tuple[list[object], list[object]]:
    """One random sequence of steps on a fresh tree; the answers (as positions in the tree) and the tree."""
    rng = random.Random(seed)
    root = _tree(rng)
    answers: list[object] = []
    to_value = values.to_element_value
    for _ in range(40):
        nodes = _elements(root)
        target = rng.choice(nodes + [None]) if rng.random() < 0.1 else rng.choice(nodes)
        name = rng.choice(["a", "b", "c", "new", "Root", ""])
        op = rng.choice(
            [
                "child",
                "child_value",
                "ensure_child",
                "new_last_child",
                "assign_member",
                "new_child",
                "peek_child",
                "assign_member_tree",
            ]
        )
        try:
            if op == "child":
                got = steps["child"](target, name)
            elif op == "child_value":
                got = steps["child_value"](target, name)
            elif op == "ensure_child":
                got = steps["ensure_child"](target, name)
            elif op == "new_last_child":
                got = steps["new_last_child"](target, name)
            elif op == "new_child":
                if target is None:
                    continue
                got = steps["new_child"](target, name, rng.choice(["", "urn:n"]), NAME_VALUE)
            elif op == "peek_child":
                got = steps["peek_child"](target, name)
            elif op == "assign_member_tree":
                if target is None or not name:  # an unnamed target field is the Python code's alone
                    continue
                source = rng.choice(nodes) if rng.random() < 0.5 else Element("s", _values(rng), type=NAME)
                # as compiled SETs call it: a snapshot against the target's root, never None
                copied = runtime.snapshot(source, root)
                if copied is None:
                    continue
                got = steps["assign_member_tree"](target, name, copied)
            else:
                got = steps["assign_member"](target, name, _values(rng), to_value)
        except Exception as exc:  # the error is part of what must match
            answers.append((op, "error", type(exc).__name__, str(exc)))
            continue
        if isinstance(got, Element):
            walk = _elements(root)
            answers.append((op, "element", walk.index(got) if got in walk else -1, got.name, got.type))
        else:
            answers.append((op, "value", type(got).__name__, got))
    return answers, _shape(root)


def test_random_step_sequences_do_the_same_with_either() -> None:
    native = _native()
    for seed in range(300):
        assert _run(native, seed) == _run(STEPS, seed), seed


def test_what_the_compiled_steps_leave_to_python() -> None:
    native = _native()
    # unparsed content is filled first, as the Python step does
    lazy = Element("Data")
    lazy.set_lazy(LazyContent(_Text(), b"a=1;b=2"))
    assert native["child_value"](lazy, "b") == "2"
    assert lazy.lazy is None
    # a name element's text is its value children's
    holder = Element("r")
    leaf = holder.add("n", type=NAME)
    leaf.add("", "text", type=0x02000000)
    assert native["child_value"](holder, "n") == STEPS["child_value"](holder, "n") == "text"
    # a field SET creates below a message Root is a NAME (header or body folder), elsewhere NAME_VALUE
    root = Element("Root")
    assert native["ensure_child"](root, "XMLNSC").type == NAME
    assert native["ensure_child"](Element("Other"), "x").type == NAME_VALUE

    # elements of another class are the Python code's
    class Mine(Element):
        __slots__ = ()

    mine = Mine("m")
    assert native["ensure_child"](mine, "k") is mine.first_child
    # an element made without its slots set fails as the Python step fails
    bare = object.__new__(Element)
    for name in ("child", "child_value", "ensure_child", "new_last_child"):
        with pytest.raises(AttributeError):
            native[name](bare, "x")
    with pytest.raises(AttributeError):
        native["new_child"]("not an element", "x", "", NAME_VALUE)
    assert native["new_child"](mine, "k2", "", NAME_VALUE) is mine.last_child
