"""Index steps from an element's child cursor (``X[i + 1]`` one step on from ``X[i]``, a repeated
``CARDINALITY`` not counted again) must find what a walk from the first child finds, whatever
changed the siblings in between: DELETE, SET … = NULL, CREATE before or after, DETACH and
ATTACH, a rename, a new namespace, a REFERENCE kept across the changes, indexes from the end.

Each program runs twice, with the cursors and with the shape stamp the runtime reads replaced
by one that changes at every read (no cursor is ever trusted: every step walks from the first
child), and the two outputs must be the same. The runtime helpers are also driven through
random changes against the tree's own unremembered :meth:`Element.child`.
"""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from esql import runtime as rt
from esql import tree
from esql.compiler import compile_program
from esql.runtime import EsqlRuntimeError, ExecutionContext
from esql.tree import Element, build


class _Ticking:
    """A shape stamp that is never the same twice: no cursor is ever valid."""

    def __init__(self) -> None:
        self._next = itertools.count(-1, -1).__next__

    def __getitem__(self, index: int) -> int:
        return self._next()


def _input() -> Element:
    root = build("Root", {"XML": {"Doc": {"List": {}, "Out": {}}}})
    lst = root.child("XML").child("Doc").child("List")  # type: ignore[union-attr]
    assert lst is not None
    for n in range(1, 9):
        lst.add("X", f"x{n}")
        if n % 3 == 0:
            lst.add("Y", f"y{n}")
    return root


def _shape(element: Element) -> list[object]:
    return [(node.path(), node.type, node.namespace, node.value) for node in element.walk()]


def _run(body: str, *, cursors: bool, monkeypatch: pytest.MonkeyPatch) -> tuple[list[object], str | None]:
    source = f"CREATE COMPUTE MODULE M CREATE FUNCTION Main() RETURNS BOOLEAN BEGIN {body} RETURN TRUE; END; END MODULE;"
    program = compile_program(source, "cursor.esql", use_cache=False)
    with monkeypatch.context() as patch:
        if not cursors:
            patch.setattr(rt, "SHAPE", _Ticking())
        ctx = ExecutionContext(input_root=_input())
        error = None
        try:
            program.main_module().run(ctx)
        except EsqlRuntimeError as exc:
            error = exc.message
    return _shape(ctx.output_root), error


PROGRAMS = {
    "read loop": """
        SET OutputRoot = InputRoot;
        DECLARE i INTEGER 1;
        WHILE i <= CARDINALITY(OutputRoot.XML.Doc.List.X[]) DO
          SET OutputRoot.XML.Doc.Out.C[i].V = OutputRoot.XML.Doc.List.X[i];
          SET OutputRoot.XML.Doc.Out.C[i].W = OutputRoot.XML.Doc.List.X[i];
          SET i = i + 1;
        END WHILE;""",
    "delete X[i] inside the loop": """
        SET OutputRoot = InputRoot;
        DECLARE i INTEGER 1;
        WHILE i <= CARDINALITY(OutputRoot.XML.Doc.List.X[]) DO
          SET OutputRoot.XML.Doc.Out.C[i] = OutputRoot.XML.Doc.List.X[i];
          IF i = 2 THEN DELETE FIELD OutputRoot.XML.Doc.List.X[i]; END IF;
          SET OutputRoot.XML.Doc.Out.D[i] = OutputRoot.XML.Doc.List.X[i];
          SET i = i + 1;
        END WHILE;""",
    "delete an earlier X": """
        SET OutputRoot = InputRoot;
        DECLARE i INTEGER 1;
        WHILE i <= CARDINALITY(OutputRoot.XML.Doc.List.X[]) DO
          SET OutputRoot.XML.Doc.Out.C[i] = OutputRoot.XML.Doc.List.X[i];
          IF i = 4 THEN DELETE FIELD OutputRoot.XML.Doc.List.X[1]; END IF;
          SET OutputRoot.XML.Doc.Out.D[i] = OutputRoot.XML.Doc.List.X[i];
          SET i = i + 1;
        END WHILE;""",
    "SET X[i] = NULL": """
        SET OutputRoot = InputRoot;
        DECLARE i INTEGER 1;
        WHILE i <= CARDINALITY(OutputRoot.XML.Doc.List.X[]) DO
          SET OutputRoot.XML.Doc.Out.C[i] = OutputRoot.XML.Doc.List.X[i];
          SET OutputRoot.XML.Doc.List.X[i] = NULL;
          SET i = i + 1;
        END WHILE;""",
    "create before and after X[i]": """
        SET OutputRoot = InputRoot;
        DECLARE i INTEGER 1;
        WHILE i <= 12 AND i <= CARDINALITY(OutputRoot.XML.Doc.List.X[]) DO
          SET OutputRoot.XML.Doc.Out.C[i] = OutputRoot.XML.Doc.List.X[i];
          IF i = 3 THEN
            CREATE PREVIOUSSIBLING OF OutputRoot.XML.Doc.List.X[i] NAME 'X' VALUE 'before';
          END IF;
          IF i = 5 THEN
            CREATE NEXTSIBLING OF OutputRoot.XML.Doc.List.X[i] NAME 'X' VALUE 'after';
          END IF;
          IF i = 6 THEN
            CREATE FIRSTCHILD OF OutputRoot.XML.Doc.List NAME 'X' VALUE 'first';
          END IF;
          SET OutputRoot.XML.Doc.Out.D[i] = OutputRoot.XML.Doc.List.X[i];
          SET i = i + 1;
        END WHILE;""",
    "append while reading": """
        SET OutputRoot = InputRoot;
        DECLARE i INTEGER 1;
        WHILE i <= 14 AND i <= CARDINALITY(OutputRoot.XML.Doc.List.X[]) DO
          IF i <= 3 THEN CREATE LASTCHILD OF OutputRoot.XML.Doc.List NAME 'X' VALUE 'more'; END IF;
          SET OutputRoot.XML.Doc.Out.C[i] = OutputRoot.XML.Doc.List.X[i];
          SET OutputRoot.XML.Doc.Out.N[i] = CARDINALITY(OutputRoot.XML.Doc.List.X[]);
          SET i = i + 1;
        END WHILE;""",
    "rename and new namespace": """
        SET OutputRoot = InputRoot;
        DECLARE i INTEGER 1;
        WHILE i <= CARDINALITY(OutputRoot.XML.Doc.List.X[]) DO
          SET OutputRoot.XML.Doc.Out.C[i] = OutputRoot.XML.Doc.List.X[i];
          IF i = 2 THEN SET OutputRoot.XML.Doc.List.X[1] NAME = 'Z'; END IF;
          IF i = 3 THEN SET OutputRoot.XML.Doc.List.Y[1] NAME = 'X'; END IF;
          IF i = 4 THEN SET OutputRoot.XML.Doc.List.X[2] NAMESPACE = 'urn:n'; END IF;
          SET OutputRoot.XML.Doc.Out.D[i] = OutputRoot.XML.Doc.List.X[i];
          SET i = i + 1;
        END WHILE;""",
    "detach and attach": """
        SET OutputRoot = InputRoot;
        DECLARE i INTEGER 1;
        DECLARE moved REFERENCE TO OutputRoot.XML.Doc.List.X[5];
        WHILE i <= CARDINALITY(OutputRoot.XML.Doc.List.X[]) DO
          SET OutputRoot.XML.Doc.Out.C[i] = OutputRoot.XML.Doc.List.X[i];
          IF i = 2 THEN DETACH moved; END IF;
          IF i = 3 THEN ATTACH moved TO OutputRoot.XML.Doc.List AS FIRSTCHILD; END IF;
          SET OutputRoot.XML.Doc.Out.D[i] = OutputRoot.XML.Doc.List.X[i];
          SET i = i + 1;
        END WHILE;""",
    "a REFERENCE kept across changes": """
        SET OutputRoot = InputRoot;
        DECLARE r REFERENCE TO OutputRoot.XML.Doc.List.X[4];
        DECLARE i INTEGER 1;
        WHILE i <= 6 DO
          SET OutputRoot.XML.Doc.Out.C[i] = OutputRoot.XML.Doc.List.X[i];
          IF i = 2 THEN DELETE FIELD OutputRoot.XML.Doc.List.X[1]; END IF;
          SET OutputRoot.XML.Doc.Out.R[i] = r;
          SET OutputRoot.XML.Doc.Out.S[i] = r.*[1];
          MOVE r NEXTSIBLING REPEAT TYPE NAME;
          SET i = i + 1;
        END WHILE;""",
    "sibling index on a REFERENCE": """
        SET OutputRoot = InputRoot;
        DECLARE r REFERENCE TO OutputRoot.XML.Doc.List.X[2];
        DECLARE i INTEGER 1;
        WHILE i <= 8 DO
          SET OutputRoot.XML.Doc.Out.C[i] = r[i];
          IF i = 3 THEN DELETE FIELD OutputRoot.XML.Doc.List.X[3]; END IF;
          SET i = i + 1;
        END WHILE;""",
    "indexes from the end": """
        SET OutputRoot = InputRoot;
        DECLARE i INTEGER 1;
        WHILE i <= 8 DO
          SET OutputRoot.XML.Doc.Out.C[i] = OutputRoot.XML.Doc.List.X[i];
          SET OutputRoot.XML.Doc.Out.L[i] = OutputRoot.XML.Doc.List.X[<i];
          SET OutputRoot.XML.Doc.Out.F[i] = OutputRoot.XML.Doc.List.X[>i];
          SET OutputRoot.XML.Doc.Out.Last[i] = OutputRoot.XML.Doc.List.X[<];
          SET OutputRoot.XML.Doc.Out.First[i] = OutputRoot.XML.Doc.List.X[>];
          IF i = 2 THEN DELETE FIELD OutputRoot.XML.Doc.List.X[<]; END IF;
          IF i = 4 THEN DELETE FIELD OutputRoot.XML.Doc.List.X[>]; END IF;
          SET i = i + 1;
        END WHILE;""",
    "two names on one parent, backwards": """
        SET OutputRoot = InputRoot;
        DECLARE i INTEGER 8;
        WHILE i >= 1 DO
          SET OutputRoot.XML.Doc.Out.C[9 - i] = OutputRoot.XML.Doc.List.X[i];
          SET OutputRoot.XML.Doc.Out.Y[9 - i] = OutputRoot.XML.Doc.List.Y[1 + MOD(i, 2)];
          SET OutputRoot.XML.Doc.Out.Z[9 - i] = OutputRoot.XML.Doc.List.X[MOD(i * 5, 8) + 1];
          SET i = i - 1;
        END WHILE;""",
    "SET X[i] creates, past the end fails": """
        SET OutputRoot = InputRoot;
        DECLARE i INTEGER 1;
        WHILE i <= 5 DO
          SET OutputRoot.XML.Doc.Out.N[i] = i;
          SET OutputRoot.XML.Doc.Out.N[i] = i * 10;
          IF i = 5 THEN DELETE FIELD OutputRoot.XML.Doc.Out.N[2]; END IF;
          SET i = i + 1;
        END WHILE;
        SET OutputRoot.XML.Doc.Out.N[9] = 'too far';""",
    "the whole list replaced": """
        SET OutputRoot = InputRoot;
        DECLARE i INTEGER 1;
        WHILE i <= 6 DO
          SET OutputRoot.XML.Doc.Out.C[i] = OutputRoot.XML.Doc.List.X[i];
          IF i = 3 THEN
            SET OutputRoot.XML.Doc.List.X[] = LIST{'a', 'b', 'c', 'd', 'e', 'f'};
          END IF;
          IF i = 4 THEN SET OutputRoot.XML.Doc.List = InputRoot.XML.Doc.List; END IF;
          SET OutputRoot.XML.Doc.Out.D[i] = OutputRoot.XML.Doc.List.X[i];
          SET i = i + 1;
        END WHILE;""",
}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_program_sees_the_same_fields_with_and_without_cursors(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    with_cursors = _run(PROGRAMS[name], cursors=True, monkeypatch=monkeypatch)
    without = _run(PROGRAMS[name], cursors=False, monkeypatch=monkeypatch)
    assert with_cursors == without
    out = [entry for entry in with_cursors[0] if ".Out." in str(entry[0])]
    assert out, "the program wrote nothing to compare"


def test_the_read_loop_reads_each_x_in_order(monkeypatch: pytest.MonkeyPatch) -> None:
    fields, error = _run(PROGRAMS["read loop"], cursors=True, monkeypatch=monkeypatch)
    assert error is None
    values = [value for path, _t, _ns, value in fields if str(path).endswith(".Out.C.V")]
    assert values == [f"x{n}" for n in range(1, 9)]


def test_past_the_end_error_is_the_walks(monkeypatch: pytest.MonkeyPatch) -> None:
    _fields, error = _run(
        PROGRAMS["SET X[i] creates, past the end fails"], cursors=True, monkeypatch=monkeypatch
    )
    assert error == "cannot create Root.XML.Doc.Out.N[9]: only 4 such field(s) exist"


def test_a_change_made_between_runs_without_the_helpers_is_not_trusted() -> None:
    """A run starts with no cursor trusted: code outside ESQL may have renamed fields directly."""
    program = compile_program(
        "CREATE COMPUTE MODULE M CREATE FUNCTION Main() RETURNS BOOLEAN BEGIN "
        "SET OutputRoot.Out.A = InputRoot.List.X[3]; "
        "SET OutputRoot.Out.N = CARDINALITY(InputRoot.List.X[]); RETURN TRUE; END; END MODULE;",
        "between.esql",
        use_cache=False,
    )
    source = build("Root", {"List": {"X": ["a", "b", "c", "d"]}})
    ctx = ExecutionContext(input_root=source)
    program.main_module().run(ctx)
    assert ctx.output_root.to_data() == {"Out": {"A": "c", "N": 4}}
    lst = source.child("List")
    assert lst is not None
    first = lst.child("X")
    assert first is not None
    first.name = "Renamed"  # directly, without reshape()
    ctx = ExecutionContext(input_root=source)
    program.main_module().run(ctx)
    assert ctx.output_root.child("Out").child("A").value == "d"  # type: ignore[union-attr]
    assert ctx.output_root.child("Out").child("N").value == 3  # type: ignore[union-attr]


# -- the runtime helpers under random changes, against Element.child -----------------------

NAMES = ("X", "Y")

_op = st.one_of(
    st.tuples(st.just("step"), st.sampled_from(NAMES), st.integers(1, 9)),
    st.tuples(st.just("sweep"), st.sampled_from(NAMES), st.integers(1, 9)),
    st.tuples(st.just("ensure"), st.sampled_from(NAMES), st.integers(1, 9)),
    st.tuples(st.just("count"), st.sampled_from(NAMES), st.just(0)),
    st.tuples(st.just("detach"), st.sampled_from(NAMES), st.integers(1, 9)),
    st.tuples(st.just("before"), st.sampled_from(NAMES), st.integers(1, 9)),
    st.tuples(st.just("after"), st.sampled_from(NAMES), st.integers(1, 9)),
    st.tuples(st.just("prepend"), st.sampled_from(NAMES), st.just(0)),
    st.tuples(st.just("append"), st.sampled_from(NAMES), st.just(0)),
    st.tuples(st.just("rename"), st.sampled_from(NAMES), st.integers(1, 9)),
    st.tuples(st.just("namespace"), st.sampled_from(NAMES), st.integers(1, 9)),
    st.tuples(st.just("clear"), st.just("X"), st.just(0)),
    st.tuples(st.just("adopt"), st.sampled_from(NAMES), st.just(0)),
    st.tuples(st.just("lazy"), st.just("X"), st.just(0)),
)


def _sweep(parent: Element, name: str, start: int) -> None:
    """Every index of ``name`` (and one past the last) from ``start`` on, then those before it."""
    total = sum(1 for _ in parent.children_named(name, ""))
    assert rt.count(parent, name, "", None) == total
    for i in [*range(start, total + 2), *range(1, min(start, total + 2))]:
        assert rt.step(parent, name, "", i, None) is _nth(parent, name, i)


class _Parser:
    """Unparsed content of two X and one Y, filled on first read."""

    def fill(self, element: Element, content: tree.LazyContent) -> None:
        for name in ("X", "Y", "X"):
            element.append_new(Element(name, "parsed"))


def _nth(parent: Element, name: str, index: int) -> Element | None:
    return parent.child(name, index, namespace="")


@settings(max_examples=500, deadline=None)
@given(st.lists(_op, max_size=40))
def test_helpers_agree_with_a_walk_after_any_change(ops: list[tuple[str, str, int]]) -> None:
    """Changes are not followed by a check of their own, so a cursor made before one is asked after it."""
    parent = build("List", {"X": ["a", "b", "c"], "Y": ["d"], "Z": "e"})
    made = itertools.count()
    for kind, name, index in ops:
        target = _nth(parent, name, index) if index else None
        if kind == "step":
            assert rt.step(parent, name, "", index, None) is _nth(parent, name, index)
        elif kind == "sweep":
            _sweep(parent, name, index)
        elif kind == "ensure":
            expected = _nth(parent, name, index)
            total = sum(1 for _ in parent.children_named(name, ""))
            try:
                got: Any = rt.ensure(parent, name, "", index, None)
            except EsqlRuntimeError as exc:
                assert expected is None and index > total + 1
                assert exc.message.endswith(f"[{index}]: only {total} such field(s) exist")
            else:
                assert got is _nth(parent, name, index)
                assert expected is None or got is expected
                assert expected is not None or index == total + 1
        elif kind == "count":
            assert rt.count(parent, name, "", None) == sum(1 for _ in parent.children_named(name, ""))
        elif kind == "detach" and target is not None:
            target.detach()
        elif kind == "before" and target is not None:
            target.insert_before(Element(name, f"n{next(made)}"))
        elif kind == "after" and target is not None:
            target.insert_after(Element(name, f"n{next(made)}"))
        elif kind == "prepend":
            parent.prepend(Element(name, f"n{next(made)}"))
        elif kind == "append":
            rt.new_child(parent, name, "", tree.NAME_VALUE).value = f"n{next(made)}"
        elif kind == "rename" and target is not None:
            rt._rename(target, "Y" if name == "X" else "X", "")
        elif kind == "namespace" and target is not None:
            rt._rename(target, target.name, "urn:n")
        elif kind == "clear":
            parent.clear_children()
        elif kind == "adopt":
            fresh = build("List", {name: ["p", "q"]})
            rt.adopt_tree(parent, fresh)
            assert fresh.first_child is None
        elif kind == "lazy":
            parent.set_lazy(tree.LazyContent(_Parser(), b""))
    for check in NAMES:
        _sweep(parent, check, 2)


def _change(parent: Element, kind: str, index: int) -> None:
    target = _nth(parent, "X", index)
    assert target is not None
    if kind == "before":
        target.insert_before(Element("X", "new"))
    elif kind == "after":
        target.insert_after(Element("X", "new"))
    elif kind == "prepend":
        parent.prepend(Element("X", "new"))
    elif kind == "detach":
        target.detach()
    elif kind == "attach first":
        parent.prepend(target)
    elif kind == "rename":
        rt._rename(target, "Y", "")
    elif kind == "rename other":
        other = _nth(parent, "Y", 1)
        assert other is not None
        rt._rename(other, "X", "")
    elif kind == "namespace":
        rt._rename(target, "X", "urn:n")
    elif kind == "clear":
        parent.clear_children()
        parent.add("X", "only")
    elif kind == "adopt":
        rt.adopt_tree(parent, build("List", {"X": ["p", "q", "r", "s"]}))
    elif kind == "lazy":
        parent.set_lazy(tree.LazyContent(_Parser(), b""))
    elif kind == "append":
        rt.new_child(parent, "X", "", tree.NAME_VALUE)


CHANGES = (
    "before",
    "after",
    "prepend",
    "detach",
    "attach first",
    "rename",
    "rename other",
    "namespace",
    "clear",
    "adopt",
    "lazy",
    "append",
)


@pytest.mark.parametrize("kind", CHANGES)
@pytest.mark.parametrize("remembered", [2, 3, 4])
@pytest.mark.parametrize("changed", [1, 2, 4])
def test_a_cursor_made_before_a_change_is_not_trusted_after_it(
    kind: str, remembered: int, changed: int
) -> None:
    """The cursor points at X[remembered] and holds the count when X[changed] is changed; every
    index asked afterwards, upwards from the remembered one, is what a walk finds."""
    parent = build("List", {"X": ["a", "b", "c", "d"], "Y": ["y"], "Z": "z"})
    assert rt.count(parent, "X", "", None) == 4
    assert rt.step(parent, "X", "", remembered, None) is _nth(parent, "X", remembered)
    _change(parent, kind, changed)
    total = sum(1 for _ in parent.children_named("X", ""))
    for i in [*range(remembered, total + 2), *range(1, remembered)]:
        assert rt.step(parent, "X", "", i, None) is _nth(parent, "X", i), i
    assert rt.count(parent, "X", "", None) == total


def test_a_field_ensure_appends_is_counted_and_remembered() -> None:
    parent = build("List", {"X": ["a", "b", "c"], "Z": "z"})
    assert rt.count(parent, "X", "", None) == 3
    assert rt.step(parent, "X", "", 3, None) is _nth(parent, "X", 3)
    made = rt.ensure(parent, "X", "", 4, None)
    assert made is parent.last_child and made.name == "X"
    assert rt.count(parent, "X", "", None) == 4
    assert rt.ensure(parent, "X", "", 4, None) is made
    assert rt.step(parent, "X", "", 4, None) is made
    made.insert_before(Element("X", "between"))
    assert rt.count(parent, "X", "", None) == 5
    assert rt.step(parent, "X", "", 5, None) is made
    with pytest.raises(EsqlRuntimeError, match=r"List.X\[7\]: only 5 such field"):
        rt.ensure(parent, "X", "", 7, None)


def test_a_count_taken_before_another_append_is_not_grown_by_ensure() -> None:
    parent = build("List", {"X": ["a", "b", "c"]})
    assert rt.count(parent, "X", "", None) == 3
    rt.new_child(parent, "X", "", tree.NAME_VALUE)
    assert rt.step(parent, "X", "", 4, None) is parent.last_child
    rt.ensure(parent, "X", "", 5, None)
    assert rt.count(parent, "X", "", None) == 5


def test_the_copy_adopt_empties_keeps_no_cursor() -> None:
    target = Element("Target")
    fresh = build("List", {"X": ["a", "b", "c"]})
    moved = rt.step(fresh, "X", "", 2, None)
    assert rt.count(fresh, "X", "", None) == 3
    rt.adopt_tree(target, fresh)
    assert rt.step(fresh, "X", "", 2, None) is None
    assert rt.count(fresh, "X", "", None) == 0
    assert rt.step(target, "X", "", 2, None) is moved
