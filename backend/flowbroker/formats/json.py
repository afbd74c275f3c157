"""The JSON domain: ``JSON.Data`` holds the document; objects and arrays carry ACE's JSON field types.

Numbers follow ACE's JSON parser: one without a fraction or exponent is an INTEGER, exactly (a
DECIMAL when it is beyond ESQL's 64-bit INTEGER), one with either is a FLOAT. On output a DECIMAL
is written digit for digit, never through a float.
"""

from __future__ import annotations

import decimal
import json
from collections.abc import Callable, Sequence
from typing import Any

import orjson
from esql.domains import DomainError, attach_unparsed
from esql.edits import FieldEdit
from esql.native import compiled
from esql.tree import NAME_VALUE, Element, LazyContent

from flowbroker.formats import ccsid as ccsids

OBJECT = 0x01000000
ARRAY = 0x01001000
_INT_MIN, _INT_MAX = -(2**63), 2**63 - 1
#: An integer of 19 digits or more may be beyond 64 bits, where orjson gives a float (or an
#: unsigned int). Found by mapping every digit to '0' and anything else to ' ' and looking for
#: a run of 19 zeros: a tenth of the time a regular expression takes on a 1 KB message.
_DIGIT_MAP = bytes(0x30 if 0x30 <= b <= 0x39 else 0x20 for b in range(256))
_LONG_RUN = b"0" * 19


def _has_long_number_py(data: bytes) -> bool:
    return data.translate(_DIGIT_MAP).find(_LONG_RUN) >= 0


def _has_long_number_native() -> Callable[[bytes], bool] | None:
    """The same scan in C (``_json_native.c``: one pass, no copy), when that module was built and
    ``FLOWBROKER_PURE_PYTHON`` is not set."""
    _json_native = compiled("flowbroker.formats._json_native")
    if _json_native is None:
        return None
    scan: Callable[[bytes], bool] = _json_native.has_long_number
    return scan


_has_long_number = _has_long_number_native() or _has_long_number_py


def _integer(text: str) -> int | decimal.Decimal:
    number = int(text)
    return number if _INT_MIN <= number <= _INT_MAX else decimal.Decimal(text)


def _exact(data: bytes) -> Any:
    """The document parsed again with every integer kept exact (only for documents with long numbers)."""
    return json.loads(data, parse_int=_integer)


class _ParsedValue:
    """Fills an object or array element from its parsed value the first time something reads it:
    one level at a time, so a flow that sets one field builds the elements of one level, and an
    unread object is written out again straight from its parsed value."""

    def fill(self, element: Element, content: LazyContent) -> None:
        _build(element, content.options["value"])

    def set_member(self, element: Element, content: LazyContent, name: str, value: Any) -> bool:
        """``SET element.name = value`` on an object never read: the value goes into a copy of the
        parsed object (the old one may be shared with the tree this one was copied from), so the
        level is still not built, and is written out from the object. Building the level later
        gives the same fields as setting the built field would have: in place when ``name`` is
        there, last when it is new. Only a plain leaf that writes as the element would (text,
        a boolean, a 64-bit integer, a float, a finite DECIMAL) over a leaf or a new member;
        anything else is set on the built level as before."""
        parsed = content.options["value"]
        if type(parsed) is not dict or isinstance(parsed.get(name), (dict, list)) or not plain_leaf(value):
            return False
        changed = dict(parsed)
        changed[name] = value
        element._lazy = LazyContent(self, b"", options={"value": changed})
        return True


_PARSED = _ParsedValue()


def plain_leaf(value: Any) -> bool:
    """True when ``value`` writes as a JSON leaf exactly as an element holding it would: text, a
    boolean, a 64-bit integer, a float or a finite DECIMAL."""
    kind = type(value)
    if kind is str or kind is bool or kind is float:
        return True
    if kind is int:
        return _INT_MIN <= value <= _INT_MAX
    if kind is decimal.Decimal:
        return bool(value.is_finite())
    return False


def _build(element: Element, value: Any) -> None:
    """``element`` becomes ``value``: a scalar, or a container whose children are filled on demand."""
    if isinstance(value, dict):
        element.type = OBJECT
        append = element.append_new
        for key, val in value.items():
            append(_field(key, val))
    elif isinstance(value, list):
        element.type = ARRAY
        append = element.append_new
        for val in value:
            append(_field("Item", val))
    else:
        element.type = NAME_VALUE
        element.value = value


def _field(name: str, value: Any) -> Element:
    """A new element for one member or item: a scalar as its value, a container to fill on first read."""
    if isinstance(value, (dict, list)):  # (a tuple: ``dict | list`` makes a union object a call)
        kid = Element(name, type=OBJECT if isinstance(value, dict) else ARRAY)
        if value:
            # a new element has no children to clear: the content is set directly
            kid._lazy = LazyContent(_PARSED, b"", options={"value": value})
        return kid
    return Element(name, value)


def _data(element: Element) -> Any:
    lazy = element._lazy
    if lazy is not None and lazy.parser is _PARSED:
        return lazy.options["value"]  # never read: the parsed value is still exact
    node = element.first_child
    kind = element.type
    if kind == ARRAY:
        items = []
        while node is not None:
            items.append(_data(node))
            node = node.next_sibling
        return items
    if node is not None or kind == OBJECT:
        out: dict[str, Any] = {}
        while node is not None:
            val = _data(node)
            name = node.name
            if name in out:
                # Repeated names (e.g. built by ESQL) become an array, as ACE's serialiser does.
                prev = out[name]
                out[name] = [*prev, val] if isinstance(prev, _Many) else _Many([prev, val])
            else:
                out[name] = val
            node = node.next_sibling
        return out
    value = element.value
    scalar = type(value)
    if scalar is str or scalar is float or scalar is bool or value is None:
        return value
    if isinstance(value, decimal.Decimal):
        if not value.is_finite():
            raise DomainError(f"JSON: {value} is not a finite number", domain="JSON", path=element.path())
        return orjson.Fragment(format(value, "f").encode())
    if type(value) is int and not _INT_MIN <= value <= 2**64 - 1:
        return orjson.Fragment(str(value).encode())
    return value


class _Many(list):  # type: ignore[type-arg]
    pass


def _default(value: Any) -> Any:
    if isinstance(value, decimal.Decimal):  # inside a parsed value that was never read
        if not value.is_finite():
            raise TypeError(f"{value} is not a finite number")
        return orjson.Fragment(format(value, "f").encode())
    if isinstance(value, bytes | bytearray):
        return bytes(value).hex().upper()
    if isinstance(value, Element):
        return _data(value)
    return str(value)


class _Unparsable(ValueError):
    """A body that is not a JSON document: why, and the byte offset where known."""

    def __init__(self, text: str, offset: int | None = None) -> None:
        super().__init__(text)
        self.offset = offset


def parse_document(data: bytes) -> Any:
    """The value of the UTF-8 JSON document ``data``, every integer beyond 64 bits exact."""
    if not data or data.isspace():  # (strip() would copy the whole body to find out)
        raise _Unparsable("the message body is empty", 0)
    try:
        value = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise _Unparsable(
            f"malformed JSON at line {exc.lineno}, column {exc.colno} (byte offset {exc.pos}): {exc.msg}",
            exc.pos,
        ) from None
    if _has_long_number(data):
        try:
            return _exact(data)
        except ValueError as exc:  # an integer of thousands of digits
            raise _Unparsable(str(exc)) from None
    return value


def dump_document(value: Any) -> bytes:
    """The UTF-8 JSON text of ``value`` (what :func:`_data` gives for a tree, or a parsed value);
    TypeError for a value JSON cannot hold."""
    return orjson.dumps(value, default=_default)


_ABSENT = object()


def document_editor(edits: Sequence[FieldEdit]) -> Callable[[bytes], bytes | None]:
    """What a Compute module of ``edits`` (:func:`esql.edits.message_edits`) makes of a UTF-8 JSON
    body that ``SET OutputRoot = InputRoot`` copied: the output body's bytes, or None when this
    document is one the edits cannot be applied to directly (not JSON, not an object, a path
    through something other than an object, an object or array replaced, a value that would not
    write as it reads), so that the module must run as compiled, which gives the same bytes or
    the error.

    The result is what running the module and writing the body gives: the module reads only the
    input message, which it cannot change, so every input field is read first; a field set keeps
    its place and a new one goes last; NULL deletes. With no edits the body is the input's bytes,
    never parsed, as the copied tree writes them.
    """
    if not edits:
        return _unchanged
    steps = tuple((e.path[:-1], e.path[-1], e.value, e.source) for e in edits)
    reads = any(e.source is not None for e in edits)

    def edit(data: bytes) -> bytes | None:
        try:
            doc = parse_document(data)
        except _Unparsable:
            return None
        if type(doc) is not dict:
            return None
        values = (
            [_read(doc, source) if source is not None else value for _, _, value, source in steps]
            if reads
            else None
        )
        for index, (through, name, value, _) in enumerate(steps):
            if values is not None:
                value = values[index]
                if value is _ABSENT:
                    return None
            target = doc
            for step in through:
                target = target.get(step, _ABSENT)
                if type(target) is not dict:
                    return None
            if value is None:
                target.pop(name, None)
                continue
            old = target.get(name)
            if type(old) is dict or type(old) is list or not plain_leaf(value):
                return None
            target[name] = value
        try:
            return dump_document(doc)
        except TypeError:
            return None

    return edit


def _unchanged(data: bytes) -> bytes:
    return data


def _read(doc: dict[str, Any], path: tuple[str, ...]) -> Any:
    """The scalar at ``path`` of ``doc``: None when a step is missing (NULL), ``_ABSENT`` when the
    path goes through or ends on something other than an object member holding a scalar."""
    value: Any = doc
    for step in path:
        if type(value) is not dict:
            return _ABSENT
        value = value.get(step, _MISSING)
        if value is _MISSING:
            return None
    if value is None or type(value) is dict or type(value) is list:
        return _ABSENT
    return value


_MISSING = object()


class JsonParser:
    """Parses on first read (orjson); an untouched subtree serialises as the bytes it came from."""

    domains: tuple[str, ...] = ("JSON",)

    #: parsed on first read, the options kept as given
    attach = attach_unparsed

    def fill(self, element: Element, content: LazyContent) -> None:
        data = content.data
        if content.ccsid != 1208:
            try:
                data = data.decode(ccsids.codec(content.ccsid)).encode("utf-8")
            except UnicodeError as exc:
                raise DomainError(f"JSON: {exc}", domain="JSON", path=element.path()) from None
        try:
            value = parse_document(data)
        except _Unparsable as exc:
            raise DomainError(f"JSON: {exc}", domain="JSON", path=element.path(), offset=exc.offset) from None
        # Data itself is filled on first read too: a flow that only sets a member of it (or nothing)
        # never builds its level
        element.append_new(_field("Data", value))

    def serialize(self, element: Element, *, ccsid: int, encoding: int, options: dict[str, Any]) -> bytes:
        lazy = element.lazy
        if lazy is not None and lazy.ccsid == ccsid:
            return lazy.data
        if element.name.upper() != "JSON" and options.get("folder") is not False:
            data: Element | None = element  # ASBITSTREAM of a folder below JSON.Data
        else:
            data = element.child("Data")
        if data is None:
            # ESQL that builds OutputRoot.JSON.x without Data: treat the domain element as the object.
            if element.first_child is None:
                return b""
            data = element
        try:
            text = dump_document(_data(data))
        except TypeError as exc:
            raise DomainError(f"JSON: {exc}", domain="JSON", path=data.path()) from None
        if ccsid != 1208:
            return text.decode("utf-8").encode(ccsids.codec(ccsid))
        return text


PARSER = JsonParser()
