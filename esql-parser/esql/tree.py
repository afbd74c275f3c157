"""The message tree: named, typed, ordered elements that ESQL reads and writes.

Every part of a message assembly (Root, Properties, MQMD, the body domain, LocalEnvironment,
Environment, ExceptionList) is a tree of :class:`Element`. Children form a doubly linked list so
that the statements ESQL programs lean on most — MOVE to a sibling, DETACH, ATTACH, CREATE
NEXTSIBLING — are constant time.

Parse on demand: a format converter attaches a :class:`LazyContent` to a domain element instead
of children. The first read below that element asks the parser to fill the children; until then
the element serialises as its original bytes and copies share those bytes.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from typing import Any, Protocol

#: Field type of an element with no domain-specific type (IBM: a name-value element).
NAME_VALUE = 0x03000000
NAME = 0x01000000
VALUE = 0x02000000


#: The shape stamp, ``SHAPE[0]``: a :class:`ChildCursor` trusts what it remembers only while the
#: stamp it was made under is current. The changes this module's methods and ESQL's runtime
#: helpers make forget the cursor of the one element whose children they change (a removal, an
#: insertion before a sibling, children cleared, a child renamed: see :func:`renamed`); code
#: that changes a tree by other means calls :func:`reshape` afterwards, which forgets them all.
#: Appending a new last child needs neither: it moves no child from its place.
SHAPE = [0]
_next_shape = itertools.count(1).__next__


def reshape() -> None:
    """Renew the shape stamp: every :class:`ChildCursor` made before is forgotten.

    The stamps come from one counter, each given out once, so a stamp a cursor holds can never
    become current again, whichever thread writes last.
    """
    SHAPE[0] = _next_shape()


def renamed(element: Element) -> None:
    """``element``'s name or namespace changed: its parent's cursor is forgotten (the field may
    start or stop being one of the children a cursor counts)."""
    parent = element.parent
    if parent is not None:
        parent._cursor = None


class ChildCursor:
    """What an element remembers of its children named ``name`` (no namespace), for index loops.

    ``node`` is the ``index``-th such child (``index`` 0: none remembered), so ``X[i + 1]`` after
    ``X[i]`` is a step from ``node``, not a walk from the first child; ``total`` is their number
    when ``last`` was the element's last child (-1: not counted), so ``CARDINALITY(X[])`` again
    after only reads costs nothing. An element keeps one (``_cursor``); every change to its
    children other than an append drops it, and it is valid only while ``shape`` is the current
    :data:`SHAPE` stamp. An append moves no child from its place; the count is checked against
    the last child, which every append changes.
    """

    __slots__ = ("index", "last", "name", "node", "shape", "total")

    def __init__(self, shape: int, name: str, index: int, node: Element | None) -> None:
        self.shape = shape
        self.name = name
        self.index = index
        self.node = node
        self.total = -1
        self.last: Element | None = None


class ContentParser(Protocol):
    """What a domain parser offers the tree: fill an element's children from bytes."""

    def fill(self, element: Element, content: LazyContent) -> None:
        """Create ``element``'s children (and value, if any) from ``content.data``."""


class LazyContent:
    """Bytes of a subtree that has not been parsed yet, and how to parse them.

    Copies of an unparsed subtree share one content. When a second of them is read, its parse
    is kept (``parsed``, private, never changed) and the ones read after it get a copy of that
    instead of parsing the bytes again (``SET OutputRoot = InputRoot`` repeated, each copy read).
    """

    __slots__ = ("ccsid", "data", "encoding", "filled", "options", "parsed", "parser")

    def __init__(
        self,
        parser: ContentParser,
        data: bytes,
        *,
        ccsid: int = 1208,
        encoding: int = 546,
        options: dict[str, Any] | None = None,
    ) -> None:
        self.parser = parser
        self.data = data
        self.ccsid = ccsid
        self.encoding = encoding
        self.options = options or {}
        #: how many elements were filled from this content, and the pristine parse kept at the second
        self.filled = 0
        self.parsed: Element | None = None


class Element:
    """One field of a message tree."""

    __slots__ = (
        "_cursor",
        "_first",
        "_last",
        "_lazy",
        "_source",
        "name",
        "namespace",
        "next_sibling",
        "parent",
        "prev_sibling",
        "type",
        "value",
    )

    def __init__(
        self,
        name: str = "",
        value: Any = None,
        *,
        namespace: str = "",
        type: int = NAME_VALUE,
    ) -> None:
        self.name = name
        self.namespace = namespace
        self.type = type
        self.value = value
        self.parent: Element | None = None
        self.prev_sibling: Element | None = None
        self.next_sibling: Element | None = None
        self._first: Element | None = None
        self._last: Element | None = None
        self._lazy: LazyContent | None = None
        # left unset by code that makes elements without __init__: read it with a default
        self._cursor: ChildCursor | None = None

    # -- parse on demand -------------------------------------------------------------------

    def set_lazy(self, content: LazyContent | None) -> None:
        """Replace this element's children by unparsed content, filled on first read."""
        if self._first is not None:  # a new element (the usual case) has nothing to drop
            self.clear_children()
        self._lazy = content

    @property
    def lazy(self) -> LazyContent | None:
        """The unparsed content, or None once parsed (or if there never was any)."""
        return self._lazy

    @property
    def source(self) -> LazyContent | None:
        """The content this element's children were parsed from, if they were (not kept by copies).

        A serialiser may write those original bytes again when it finds the children still as
        they were parsed; it must check that itself, since nothing records changes below.
        """
        return getattr(self, "_source", None)

    def _materialize(self) -> None:
        lazy = self._lazy
        if lazy is None:
            return
        self._lazy = None
        self._source = lazy
        parsed = lazy.parsed
        if parsed is not None:
            # the same bytes were parsed for another element: their children copied, not parsed
            _copy_children(self, parsed)
            return
        if not lazy.filled:
            lazy.filled = 1
            lazy.parser.fill(self, lazy)
            return
        # a second element reads these bytes: parse, and keep the parse for the next ones when
        # the parser set nothing but the children (their copies then are exactly a parse)
        own = (self.name, self.namespace, self.type, self.value)
        lazy.parser.fill(self, lazy)
        lazy.filled += 1
        if own == (self.name, self.namespace, self.type, self.value):
            kept = Element(self.name, self.value, namespace=self.namespace, type=self.type)
            _copy_children(kept, self)
            lazy.parsed = kept

    # -- navigation ------------------------------------------------------------------------

    @property
    def first_child(self) -> Element | None:
        if self._lazy is not None:
            self._materialize()
        return self._first

    @property
    def last_child(self) -> Element | None:
        if self._lazy is not None:
            self._materialize()
        return self._last

    def children(self) -> Iterator[Element]:
        """Iterate the children in order (safe against removing the current child)."""
        child = self.first_child
        while child is not None:
            nxt = child.next_sibling
            yield child
            child = nxt

    def children_named(self, name: str, namespace: str | None = None) -> Iterator[Element]:
        """Children with this name (and namespace, when given)."""
        for child in self.children():
            if child.name == name and (namespace is None or child.namespace == namespace):
                yield child

    def child(self, name: str, index: int = 1, namespace: str | None = None) -> Element | None:
        """The ``index``-th (1-based; negative counts from the end) child with this name."""
        if index > 0:
            seen = 0
            node = self.first_child
            while node is not None:
                if node.name == name and (namespace is None or node.namespace == namespace):
                    seen += 1
                    if seen == index:
                        return node
                node = node.next_sibling
            return None
        seen = 0
        node = self.last_child
        while node is not None:
            if node.name == name and (namespace is None or node.namespace == namespace):
                seen -= 1
                if seen == index:
                    return node
            node = node.prev_sibling
        return None

    def child_count(self) -> int:
        count = 0
        node = self.first_child
        while node is not None:
            count += 1
            node = node.next_sibling
        return count

    def has_children(self) -> bool:
        return self._lazy is not None or self._first is not None

    def root(self) -> Element:
        node = self
        while node.parent is not None:
            node = node.parent
        return node

    def path(self) -> str:
        """A dotted path from the root, for diagnostics (``Root.XMLNSC.Order.Item``)."""
        parts = []
        node: Element | None = self
        while node is not None:
            parts.append(node.name or "?")
            node = node.parent
        return ".".join(reversed(parts))

    def walk(self) -> Iterator[Element]:
        """This element and all its descendants, depth first, in document order."""
        yield self
        for child in self.children():
            yield from child.walk()

    # -- structure changes -----------------------------------------------------------------

    def append(self, child: Element) -> Element:
        """Add ``child`` as the last child (detaching it from where it was)."""
        if self._lazy is not None:
            self._materialize()
        child.detach()
        child.parent = self
        child.prev_sibling = self._last
        child.next_sibling = None
        if self._last is None:
            self._first = child
        else:
            self._last.next_sibling = child
        self._last = child
        return child

    def append_new(self, child: Element) -> Element:
        """Append a freshly created child that has no parent or siblings yet, without checks.

        For parsers filling an element's children (the element has no unparsed content left);
        anything else should use :meth:`append`.
        """
        last = self._last
        child.parent = self
        child.prev_sibling = last
        if last is None:
            self._first = child
        else:
            last.next_sibling = child
        self._last = child
        return child

    def prepend(self, child: Element) -> Element:
        """Add ``child`` as the first child."""
        if self._lazy is not None:
            self._materialize()
        child.detach()
        self._cursor = None  # every child moves one place on
        child.parent = self
        child.prev_sibling = None
        child.next_sibling = self._first
        if self._first is None:
            self._last = child
        else:
            self._first.prev_sibling = child
        self._first = child
        return child

    def insert_after(self, sibling: Element) -> Element:
        """Put ``sibling`` immediately after this element, under the same parent."""
        parent = self.parent
        if parent is None:
            raise ValueError("cannot add a sibling to an element that has no parent")
        sibling.detach()
        parent._cursor = None
        sibling.parent = parent
        sibling.prev_sibling = self
        sibling.next_sibling = self.next_sibling
        if self.next_sibling is None:
            parent._last = sibling
        else:
            self.next_sibling.prev_sibling = sibling
        self.next_sibling = sibling
        return sibling

    def insert_before(self, sibling: Element) -> Element:
        """Put ``sibling`` immediately before this element, under the same parent."""
        parent = self.parent
        if parent is None:
            raise ValueError("cannot add a sibling to an element that has no parent")
        sibling.detach()
        parent._cursor = None
        sibling.parent = parent
        sibling.next_sibling = self
        sibling.prev_sibling = self.prev_sibling
        if self.prev_sibling is None:
            parent._first = sibling
        else:
            self.prev_sibling.next_sibling = sibling
        self.prev_sibling = sibling
        return sibling

    def detach(self) -> Element:
        """Remove this element (with its subtree) from its parent; it stays usable."""
        parent = self.parent
        if parent is None:
            return self
        parent._cursor = None
        if self.prev_sibling is None:
            parent._first = self.next_sibling
        else:
            self.prev_sibling.next_sibling = self.next_sibling
        if self.next_sibling is None:
            parent._last = self.prev_sibling
        else:
            self.next_sibling.prev_sibling = self.prev_sibling
        self.parent = self.prev_sibling = self.next_sibling = None
        return self

    def clear_children(self) -> None:
        """Drop every child (and any unparsed content)."""
        self._lazy = None
        self._cursor = None
        node = self._first
        while node is not None:
            nxt = node.next_sibling
            node.parent = node.prev_sibling = node.next_sibling = None
            node = nxt
        self._first = self._last = None

    def add(self, name: str, value: Any = None, *, namespace: str = "", type: int = NAME_VALUE) -> Element:
        """Create a child and append it; returns the new child."""
        return self.append(Element(name, value, namespace=namespace, type=type))

    # -- copying ---------------------------------------------------------------------------

    def copy(self) -> Element:
        """A deep copy of this element and its subtree, detached.

        An unparsed subtree is copied by sharing its (immutable) bytes, so copying a message
        nobody has read costs no parse.
        """
        clone = Element(self.name, self.value, namespace=self.namespace, type=self.type)
        if self._lazy is not None:
            clone._lazy = self._lazy
            return clone
        node = self._first
        last: Element | None = None
        # Link the copies directly: they are new, so append's detach and parse checks are not needed.
        while node is not None:
            kid = node.copy()
            kid.parent = clone
            kid.prev_sibling = last
            if last is None:
                clone._first = kid
            else:
                last.next_sibling = kid
            last = kid
            node = node.next_sibling
        clone._last = last
        return clone

    def copy_children_from(self, other: Element) -> None:
        """Replace this element's children by copies of ``other``'s children (ESQL tree SET)."""
        self.clear_children()
        if other._lazy is not None:
            self._lazy = other._lazy
            return
        node = other._first
        while node is not None:
            self.append_new(node.copy())
            node = node.next_sibling

    # -- conveniences for tests and converters ---------------------------------------------

    def to_data(self) -> Any:
        """A plain nested representation (name → value or dict/list) for assertions."""
        kids = list(self.children())
        if not kids:
            return self.value
        out: dict[str, Any] = {}
        for kid in kids:
            data = kid.to_data()
            if kid.name in out:
                existing = out[kid.name]
                if isinstance(existing, list) and getattr(existing, "_repeat", False):
                    existing.append(data)
                else:
                    rep = _Repeat([existing, data])
                    out[kid.name] = rep
            else:
                out[kid.name] = data
        return {k: (list(v) if isinstance(v, _Repeat) else v) for k, v in out.items()}

    def dump(self, indent: int = 0, out: Callable[[str], None] | None = None) -> str:
        """An indented text rendering, one element a line (for logs and test failures)."""
        lines: list[str] = []

        def visit(node: Element, depth: int) -> None:
            label = f"{node.namespace}:{node.name}" if node.namespace else node.name
            text = f"{'  ' * depth}{label} (0x{node.type:08X})"
            if node.value is not None:
                text += f" = {node.value!r}"
            if node._lazy is not None:
                text += f" <unparsed {len(node._lazy.data)} bytes>"
            lines.append(text)
            for kid in node.children() if node._lazy is None else ():
                visit(kid, depth + 1)

        visit(self, indent)
        text = "\n".join(lines)
        if out is not None:
            out(text)
        return text

    def __repr__(self) -> str:
        return f"Element({self.name!r}, {self.value!r}, type=0x{self.type:08X})"


def _copy_children(target: Element, source: Element) -> None:
    """Deep copies of ``source``'s children appended to childless ``target`` (linked directly:
    the copies are new); an unparsed subtree below is shared, as :meth:`Element.copy` does."""
    node = source._first
    last = target._last
    new = _new_element
    while node is not None:
        clone = new(Element)
        clone.name = node.name
        clone.namespace = node.namespace
        clone.type = node.type
        clone.value = node.value
        clone.parent = target
        clone.prev_sibling = last
        clone.next_sibling = None
        clone._lazy = node._lazy
        clone._first = clone._last = clone._cursor = None
        if last is None:
            target._first = clone
        else:
            last.next_sibling = clone
        last = clone
        if node._first is not None and node._lazy is None:
            _copy_children(clone, node)
        node = node.next_sibling
    target._last = last


_new_element = object.__new__


class _Repeat(list):  # type: ignore[type-arg]
    _repeat = True


def build(name: str, data: Any) -> Element:
    """Build a tree from nested dicts/lists/scalars (a list repeats the element name)."""
    root = Element(name)
    _fill(root, data)
    return root


def _fill(element: Element, data: Any) -> None:
    if isinstance(data, dict):
        for key, val in data.items():
            if isinstance(val, list):
                for item in val:
                    _fill(element.add(key), item)
            else:
                _fill(element.add(key), val)
    else:
        element.value = data
