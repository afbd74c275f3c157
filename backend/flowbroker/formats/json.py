"""The JSON domain: ``JSON.Data`` holds the document; objects and arrays carry ACE's JSON field types.

Numbers follow ACE's JSON parser: one without a fraction or exponent is an INTEGER, exactly (a
DECIMAL when it is beyond ESQL's 64-bit INTEGER), one with either is a FLOAT. On output a DECIMAL
is written digit for digit, never through a float.
"""

from __future__ import annotations

import decimal
import json
from collections.abc import Callable
from typing import Any

import orjson
from esql.domains import DomainError, attach_unparsed
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
        if type(parsed) is not dict or isinstance(parsed.get(name), (dict, list)):
            return False
        kind = type(value)
        if kind is int:
            if not _INT_MIN <= value <= _INT_MAX:
                return False
        elif kind is decimal.Decimal:
            if not value.is_finite():
                return False
        elif kind is not str and kind is not bool and kind is not float:
            return False
        changed = dict(parsed)
        changed[name] = value
        element._lazy = LazyContent(self, b"", options={"value": changed})
        return True


_PARSED = _ParsedValue()


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
        if not data or data.isspace():  # (strip() would copy the whole body to find out)
            raise DomainError("JSON: the message body is empty", domain="JSON", path=element.path(), offset=0)
        try:
            value = orjson.loads(data)
        except orjson.JSONDecodeError as exc:
            raise DomainError(
                f"JSON: malformed JSON at line {exc.lineno}, column {exc.colno} (byte offset {exc.pos}): {exc.msg}",
                domain="JSON",
                path=element.path(),
                offset=exc.pos,
            ) from None
        if _has_long_number(data):
            try:
                value = _exact(data)
            except ValueError as exc:  # an integer of thousands of digits
                raise DomainError(f"JSON: {exc}", domain="JSON", path=element.path()) from None
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
            text = orjson.dumps(_data(data), default=_default)
        except TypeError as exc:
            raise DomainError(f"JSON: {exc}", domain="JSON", path=data.path()) from None
        if ccsid != 1208:
            return text.decode("utf-8").encode(ccsids.codec(ccsid))
        return text


PARSER = JsonParser()
