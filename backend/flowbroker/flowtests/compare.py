"""Comparing an output message with the expected one as parsed trees in the message's domain.

Both messages are parsed the way an input node parses a queue message (MQMD, headers such as
MQRFH2, then the body in its domain), so a difference in layout that the parser does not keep
(attribute order, whitespace between JSON tokens) is no difference, and a difference is named by
the field's tree path: ``XMLNSC.Order.Item[2].Price``. MQMD fields are compared where the
expected message names them; Properties (derived from MQMD and headers) are not compared.
"""

from __future__ import annotations

import datetime
import fnmatch
import re
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from esql.tree import Element

from flowbroker.flowtests.cases import TestMessage

#: Differences listed per message; more are counted, not listed.
MAX_DIFFERENCES = 50
#: Where a difference of the queue message's own properties (not a tree) is named.
PROPERTIES = "(properties)"
#: The path segment of a field without a name (the text of an XML element).
TEXT = "(text)"
_INDEX = re.compile(r"^(.*?)(?:\[(\d+|\*)\])?$")


@dataclass(frozen=True)
class Leaf:
    """One field of a flattened tree: its path, field type and value as text."""

    path: str
    type: int
    value: str | None


@dataclass(frozen=True)
class Difference:
    path: str
    #: ``changed``, ``missing`` (expected, not there) or ``unexpected`` (there, not expected).
    kind: str
    expected: str | None
    actual: str | None

    def describe(self) -> str:
        if self.kind == "missing":
            return f"{self.path}: missing (expected {_show(self.expected)})"
        if self.kind == "unexpected":
            return f"{self.path}: not expected (got {_show(self.actual)})"
        return f"{self.path}: expected {_show(self.expected)}, got {_show(self.actual)}"

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, "kind": self.kind, "expected": self.expected, "actual": self.actual}


class UnparsableMessage(ValueError):
    """A message whose body or header does not parse in the domain it is compared in."""


def _show(value: str | None) -> str:
    if value is None:
        return "NULL"
    text = value if len(value) <= 120 else value[:117] + "..."
    return repr(text)


def root_of(md: Any, body: bytes, domain: str) -> Element:
    """Root of a queue message (descriptor, body bytes) parsed as an input node with ``domain`` would."""
    from flowbroker.qm.protocol import Message
    from flowbroker.runtime import assembly

    assembly.ensure_domains()
    return assembly.build_root(Message(md, {}, body), {"domain": domain or "BLOB"}, transactional=False)


def expected_root(message: TestMessage) -> Element:
    from flowbroker.qm.protocol import MessageDescriptor

    return root_of(MessageDescriptor(**message.descriptor_fields()), message.wire_body(), message.domain)


def value_text(value: Any) -> str | None:
    """A field value as text: bytes in hex, booleans as ESQL writes them, numbers and times as usual."""
    if value is None:
        return None
    if isinstance(value, bytes | bytearray):
        return bytes(value).hex().upper()
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, Decimal | int | float | str):
        return str(value)
    if isinstance(value, datetime.date | datetime.time | datetime.datetime):
        return value.isoformat()
    return str(value)


def flatten(root: Element) -> list[Leaf]:
    """Every field below Root with a value or without children, in tree order, each with its path.

    A name repeated among siblings carries its 1-based position (``Item[2]``), as ESQL counts.
    Raises :class:`UnparsableMessage` when a lazily parsed part does not parse.
    """
    leaves: list[Leaf] = []
    try:
        _walk(root, "", leaves)
    except UnparsableMessage:
        raise
    except Exception as exc:  # a parser error of any domain: positioned in its message
        raise UnparsableMessage(str(exc)) from None
    return leaves


def _walk(element: Element, prefix: str, leaves: list[Leaf]) -> None:
    kids = list(element.children())
    if any(kid.name for kid in kids):
        # whitespace between elements is layout, not content: a pretty-printed expectation matches
        kids = [kid for kid in kids if kid.name or not _blank(kid)]
    counts: dict[str, int] = {}
    for kid in kids:
        counts[kid.name] = counts.get(kid.name, 0) + 1
    seen: dict[str, int] = {}
    for kid in kids:
        seen[kid.name] = seen.get(kid.name, 0) + 1
        label = kid.name or TEXT
        name = label if counts[kid.name] == 1 else f"{label}[{seen[kid.name]}]"
        path = f"{prefix}.{name}" if prefix else name
        has_children = kid.has_children()
        if kid.value is not None or not has_children:
            leaves.append(Leaf(path, kid.type, value_text(kid.value)))
        if has_children:
            _walk(kid, path, leaves)


def _blank(element: Element) -> bool:
    return isinstance(element.value, str) and not element.value.strip() and not element.has_children()


def ignored(path: str, patterns: tuple[str, ...] | list[str]) -> bool:
    """Whether ``path`` is at or below one of ``patterns`` (``*`` any name, no ``[n]`` any index)."""
    segments = path.split(".")
    for pattern in patterns:
        wanted = pattern.split(".")
        if len(wanted) > len(segments):
            continue
        if all(_segment_matches(w, s) for w, s in zip(wanted, segments, strict=False)):
            return True
    return False


def _segment_matches(pattern: str, segment: str) -> bool:
    pattern_name, pattern_index = _split(pattern)
    name, index = _split(segment)
    if not fnmatch.fnmatchcase(name, pattern_name):
        return False
    return pattern_index in (None, "*") or pattern_index == (index or "1")


def _split(segment: str) -> tuple[str, str | None]:
    match = _INDEX.match(segment)
    assert match is not None
    return match.group(1), match.group(2)


def _scope(leaves: list[Leaf], mqmd_fields: set[str]) -> dict[str, Leaf]:
    """The leaves compared: all but Properties, and of MQMD only the fields the expectation names."""
    kept: dict[str, Leaf] = {}
    for leaf in leaves:
        top, _, rest = leaf.path.partition(".")
        if top == "Properties":
            continue
        if top == "MQMD" and rest.split(".")[0] not in mqmd_fields:
            continue
        kept[leaf.path] = leaf
    return kept


def compare(
    expected: TestMessage,
    md: Any,
    body: bytes,
    ignore: tuple[str, ...],
    properties: dict[str, Any] | None = None,
) -> list[Difference]:
    """The differences of the message (``md``, ``body``) from ``expected``; none means equal.

    Raises :class:`UnparsableMessage` (naming which side) when either does not parse.
    """
    try:
        want_leaves = flatten(expected_root(expected))
    except UnparsableMessage as exc:
        raise UnparsableMessage(
            f"the expected message does not parse as {expected.domain or 'BLOB'}: {exc}"
        ) from None
    try:
        got_leaves = flatten(root_of(md, body, expected.domain))
    except UnparsableMessage as exc:
        raise UnparsableMessage(
            f"the output message does not parse as {expected.domain or 'BLOB'}: {exc}"
        ) from None
    fields = set(expected.mqmd)
    want = {p: leaf for p, leaf in _scope(want_leaves, fields).items() if not ignored(p, ignore)}
    got = {p: leaf for p, leaf in _scope(got_leaves, fields).items() if not ignored(p, ignore)}
    differences: list[Difference] = []
    for path, leaf in want.items():
        other = got.get(path)
        if other is None:
            differences.append(Difference(path, "missing", leaf.value, None))
        elif _normal(path, other.value) != _normal(path, leaf.value):
            differences.append(Difference(path, "changed", leaf.value, other.value))
        elif other.type != leaf.type:  # same value, another kind of field (an attribute for an element)
            differences.append(
                Difference(path, "changed", f"field type 0x{leaf.type:08X}", f"field type 0x{other.type:08X}")
            )
    for path, leaf in got.items():
        if path not in want:
            differences.append(Difference(path, "unexpected", None, leaf.value))
    # the queue message's own properties: those the expectation names
    for key, value in expected.properties.items():
        path = f"{PROPERTIES}.{key}"
        if ignored(path, ignore):
            continue
        have = (properties or {}).get(key)
        if key not in (properties or {}):
            differences.append(Difference(path, "missing", value_text(value), None))
        elif have != value:
            differences.append(Difference(path, "changed", value_text(value), value_text(have)))
    order = {leaf.path: n for n, leaf in enumerate(got_leaves)}
    order.update({leaf.path: n for n, leaf in enumerate(want_leaves)})
    differences.sort(key=lambda d: order.get(d.path, len(order)))
    return differences


def _normal(path: str, value: str | None) -> str | None:
    # MQMD.Format is blank-padded to 8 characters on the queue, given unpadded in a test
    if path == "MQMD.Format" and value is not None:
        return value.strip()
    return value
