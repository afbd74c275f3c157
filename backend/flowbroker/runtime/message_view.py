"""A message assembly as a JSON-able view (trees with field types and values, the serialized body), and edits back.

The flow exerciser records what crosses a connection, the step debugger shows and edits a paused
message, and flow tests compare expected trees: all of them see an assembly through this module.
A view is bounded (fields per message, characters per value, bytes of serialized body) so one
10 MB message cannot exhaust the memory of whoever records or shows it; what was cut is said in
``notices``. Viewing never changes the message: an unparsed body is parsed on a copy, and a body
larger than the parse limit is shown as bytes only.

A field is addressed by its tree (``Root``, ``LocalEnvironment``, ``Environment``,
``ExceptionList``) and the list of child positions below it (``ref``), which stays unambiguous
where names repeat or carry namespaces; ``path`` is the ESQL-style name for people.
"""

from __future__ import annotations

import datetime
import json
import xml.dom.minidom
from collections.abc import Iterable
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import esql.domains
from esql import values as esql_values
from esql.cast import cast as esql_cast
from esql.fieldtypes import FIELD_TYPES
from esql.tree import Element
from flowbroker_nodes.base import Assembly

from flowbroker.formats import assembly as formats_assembly
from flowbroker.formats import ccsid as ccsids
from flowbroker.formats import load_all

TREES = ("Root", "LocalEnvironment", "Environment", "ExceptionList")
#: Value types an edit may give (ESQL's names); NULL clears the value.
EDIT_TYPES = (
    "CHARACTER",
    "INTEGER",
    "DECIMAL",
    "FLOAT",
    "BOOLEAN",
    "BLOB",
    "DATE",
    "TIME",
    "TIMESTAMP",
    "NULL",
)
_XML_DOMAINS = frozenset({"XMLNSC", "XMLNS", "XML"})


@dataclass(frozen=True)
class Limits:
    """How much of one message a view keeps."""

    #: Fields over all four trees; the rest are left out with a notice.
    max_fields: int = 5000
    #: Characters of one value (a BLOB counts two per byte).
    max_value_chars: int = 4096
    #: Bytes of serialized body kept (pretty printed text or hex).
    max_body_bytes: int = 256 * 1024
    #: An unparsed body larger than this is not parsed for the tree view, only shown as bytes.
    max_parse_bytes: int = 1024 * 1024


DEFAULT_LIMITS = Limits()


class EditError(ValueError):
    """An edit that cannot be applied: unknown field, unknown type or a value that does not convert."""


# -- field types ---------------------------------------------------------------------------------

_GENERIC = {0x01000000: "Name", 0x02000000: "Value", 0x03000000: "NameValue"}


def _type_names() -> dict[tuple[str, int], str]:
    names: dict[tuple[str, int], str] = {}
    for qualified, number in FIELD_TYPES.items():
        domain, _, name = qualified.partition(".")
        if name:
            names.setdefault((domain, number), name)
    return names


_DOMAIN_TYPE_NAMES = _type_names()


def field_type_name(domain: str, number: int) -> str:
    """``XMLNSC.Attribute`` and the like for a field of ``domain``; the generic name elsewhere."""
    name = _DOMAIN_TYPE_NAMES.get((domain, number))
    if name is not None:
        return f"{domain}.{name}"
    return _GENERIC.get(number, f"0x{number:08X}")


def value_type(value: Any) -> str:
    """The ESQL type name of a field value (``NULL`` for none)."""
    if value is None:
        return "NULL"
    return esql_values.type_name(value)


def value_text(value: Any) -> str | None:
    """A field value as text: ESQL's CHARACTER form, a BLOB as hex."""
    if value is None:
        return None
    if isinstance(value, bytes | bytearray):
        return bytes(value).hex().upper()
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    try:
        return esql_values.to_character(value)
    except Exception:  # a value type ESQL cannot cast (e.g. a reference): show what Python says
        return str(value)


# -- building a view -----------------------------------------------------------------------------


class _Budget:
    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        self.fields = 0
        self.fields_left_out = 0
        self.values_cut = 0


def view_assembly(assembly: Assembly, limits: Limits = DEFAULT_LIMITS) -> dict[str, Any]:
    """The four trees of ``assembly`` and its serialized body, bounded by ``limits``."""
    load_all()
    budget = _Budget(limits)
    notices: list[str] = []
    root = assembly.root
    body = formats_assembly.body_element(root)
    body_view = view_body(root, limits)
    trees = []
    for name, tree in zip(
        TREES, (root, assembly.local_environment, assembly.environment, assembly.exception_list), strict=True
    ):
        trees.append(_view_tree(tree, name, budget, body, notices))
    if budget.fields_left_out:
        notices.append(
            f"the message has more than {limits.max_fields} fields: "
            f"{budget.fields_left_out} fields are left out of this view"
        )
    if budget.values_cut:
        notices.append(
            f"{budget.values_cut} values longer than {limits.max_value_chars} characters are cut short"
        )
    notices.extend(body_view.pop("notices"))
    return {"trees": trees, "body": body_view, "truncated": bool(notices), "notices": notices}


def view_tree(element: Element, limits: Limits = DEFAULT_LIMITS) -> dict[str, Any]:
    """One tree (e.g. a paused Environment) on its own, bounded like a whole assembly."""
    notices: list[str] = []
    budget = _Budget(limits)
    return {"tree": _view_tree(element, element.name, budget, None, notices), "notices": notices}


def _view_tree(
    element: Element, tree: str, budget: _Budget, body: Element | None, notices: list[str]
) -> dict[str, Any]:
    node = _field(element, "", tree, [], budget)
    _fill(node, element, "", budget, body, notices)
    return node


def _field(element: Element, domain: str, path: str, ref: list[int], budget: _Budget) -> dict[str, Any]:
    budget.fields += 1
    value = element.value
    limit = budget.limits.max_value_chars
    cut = False
    if isinstance(value, bytes | bytearray) and len(value) * 2 > limit:
        # hex only what is kept: a 10 MB BLOB is never turned into 20 MB of text
        text: str | None = bytes(value[: limit // 2]).hex().upper()
        cut = True
        budget.values_cut += 1
    else:
        text = value_text(value)
    if text is not None and len(text) > limit:
        text = text[:limit]
        cut = True
        budget.values_cut += 1
    field: dict[str, Any] = {
        "name": element.name,
        "namespace": element.namespace,
        "fieldType": field_type_name(domain, element.type),
        "valueType": value_type(element.value),
        "value": text,
        "path": path,
        "ref": ref,
        "children": [],
    }
    if cut:
        field["valueCut"] = True
    return field


def _fill(
    node: dict[str, Any],
    element: Element,
    domain: str,
    budget: _Budget,
    body: Element | None,
    notices: list[str],
) -> None:
    source = element
    if element is body and element.lazy is not None:
        lazy = element.lazy
        if len(lazy.data) > budget.limits.max_parse_bytes:
            notices.append(
                f"the {element.name} body of {len(lazy.data):,} bytes is larger than the "
                f"{budget.limits.max_parse_bytes:,}-byte parse limit of this view: its tree is not shown"
            )
            node["unparsed"] = len(lazy.data)
            return
        source = element.copy()  # parse a copy: viewing must not parse (or fail) the real message
        try:
            source.first_child  # noqa: B018 (reading fills the children)
        except Exception as exc:
            notices.append(f"the {element.name} body does not parse: {exc}")
            node["unparsed"] = len(lazy.data)
            return
    if element is body:
        domain = element.name
    counts: dict[tuple[str, str], int] = {}
    position = 0
    for kid in source.children():
        if budget.fields >= budget.limits.max_fields:
            budget.fields_left_out += _count(kid)
            continue
        key = (kid.namespace, kid.name)
        counts[key] = counts.get(key, 0) + 1
        label = f"{kid.namespace}:{kid.name}" if kid.namespace else (kid.name or "*")
        step = label if counts[key] == 1 else f"{label}[{counts[key]}]"
        kid_domain = domain or (kid.name if kid is body else "")
        child = _field(kid, kid_domain, f"{node['path']}.{step}", [*node["ref"], position], budget)
        node["children"].append(child)
        _fill(child, kid, kid_domain, budget, body, notices)
        position += 1


def _count(element: Element) -> int:
    if element.lazy is not None:
        return 1
    return sum(1 for _ in element.walk())


# -- the serialized body -------------------------------------------------------------------------


def view_body(root: Element, limits: Limits = DEFAULT_LIMITS) -> dict[str, Any]:
    """The body as its domain writes it: XML and JSON pretty printed, anything else as hex."""
    body = formats_assembly.body_element(root)
    notices: list[str] = []
    if body is None:
        return {"domain": "", "format": "none", "text": "", "bytes": 0, "notices": notices}
    domain = body.name.upper()
    try:
        data = _body_bytes(root, body)
    except Exception as exc:
        notices.append(f"the {domain} body cannot be serialized: {exc}")
        return {"domain": domain, "format": "none", "text": "", "bytes": 0, "notices": notices}
    size = len(data)
    kept = data[: limits.max_body_bytes]
    if size > limits.max_body_bytes:
        notices.append(f"the body is {size:,} bytes: only the first {limits.max_body_bytes:,} are shown")
    ccsid = _properties_int(root, "CodedCharSetId") or 1208
    text: str | None = None
    fmt = "hex"
    if domain in _XML_DOMAINS or domain == "JSON":
        try:
            decoded = kept.decode(_codec(ccsid))
        except (UnicodeDecodeError, LookupError):
            decoded = None
        if decoded is not None:
            fmt = "xml" if domain in _XML_DOMAINS else "json"
            text = decoded if size > limits.max_body_bytes else _pretty(decoded, fmt)
    if text is None:
        text = hex_dump(kept)
        fmt = "hex"
    return {"domain": domain, "format": fmt, "text": text, "bytes": size, "notices": notices}


def _body_bytes(root: Element, body: Element) -> bytes:
    lazy = body.lazy
    if lazy is not None:
        return bytes(lazy.data)
    options = {
        "set": _properties_text(root, "MessageSet"),
        "type": _properties_text(root, "MessageType"),
        "format": _properties_text(root, "MessageFormat"),
    }
    return esql.domains.get(body.name).serialize(
        body,
        ccsid=_properties_int(root, "CodedCharSetId") or 1208,
        encoding=_properties_int(root, "Encoding") or 546,
        options=options,
    )


def _pretty(text: str, fmt: str) -> str:
    try:
        if fmt == "json":
            return json.dumps(json.loads(text), indent=2, ensure_ascii=False)
        if "<!DOCTYPE" in text or "<!ENTITY" in text:
            return text  # never expand entities of a recorded message
        pretty = xml.dom.minidom.parseString(text.encode()).toprettyxml(indent="  ")
        lines = [line for line in pretty.splitlines() if line.strip()]
        if not text.lstrip().startswith("<?xml") and lines and lines[0].startswith("<?xml"):
            lines = lines[1:]
        return "\n".join(lines)
    except Exception:  # not well formed (e.g. a fragment): shown as it is
        return text


#: Each byte as hex_dump shows it on the right: itself when printable ASCII, else a dot.
_PRINTABLE = bytes(b if 32 <= b < 127 else 0x2E for b in range(256))


def hex_dump(data: bytes, width: int = 16) -> str:
    """Offset, hex bytes and printable ASCII, ``width`` bytes a line."""
    lines = []
    view = memoryview(data)
    for offset in range(0, len(data), width):
        chunk = bytes(view[offset : offset + width])
        hexes = chunk.hex(" ").upper()
        lines.append(f"{offset:08X}  {hexes:<{width * 3 - 1}}  {chunk.translate(_PRINTABLE).decode('ascii')}")
    return "\n".join(lines)


def _codec(ccsid: int) -> str:
    return ccsids.codec(ccsid)


def _properties_value(root: Element, name: str) -> Any:
    properties = root.child("Properties")
    if properties is None:
        return None
    field = properties.child(name)
    return field.value if field is not None else None


def _properties_text(root: Element, name: str) -> str:
    value = _properties_value(root, name)
    return str(value) if value is not None else ""


def _properties_int(root: Element, name: str) -> int:
    try:
        return int(_properties_value(root, name))
    except (TypeError, ValueError):
        return 0


# -- edits ---------------------------------------------------------------------------------------


def tree_of(assembly: Assembly, tree: str) -> Element:
    trees = dict(
        zip(
            TREES,
            (assembly.root, assembly.local_environment, assembly.environment, assembly.exception_list),
            strict=True,
        )
    )
    try:
        return trees[tree]
    except KeyError:
        raise EditError(f"tree must be one of {', '.join(TREES)}, not {tree!r}") from None


def find(assembly: Assembly, tree: str, ref: Iterable[int]) -> Element:
    """The field at child positions ``ref`` below ``tree`` (parsing the body if the path goes there)."""
    element = tree_of(assembly, tree)
    walked = tree
    for position in ref:
        if not isinstance(position, int) or position < 0:
            raise EditError(f"field position {position!r} below {walked} is not a non-negative integer")
        kid = element.first_child
        for _ in range(position):
            if kid is None:
                break
            kid = kid.next_sibling
        if kid is None:
            raise EditError(f"{walked} has no child at position {position}")
        element = kid
        walked = f"{walked}.{element.name}"
    return element


def parse_value(text: str | None, type_name: str) -> Any:
    """``text`` as a value of ESQL type ``type_name`` (BLOB as hex), or an :class:`EditError` saying why not."""
    kind = type_name.upper()
    if kind not in EDIT_TYPES:
        raise EditError(f"value type must be one of {', '.join(EDIT_TYPES)}, not {type_name!r}")
    if kind == "NULL" or text is None:
        return None
    if kind == "CHARACTER":
        return text
    if kind == "BLOB":
        try:
            return bytes.fromhex("".join(text.split()))
        except ValueError:
            raise EditError(
                f"{text[:40]!r} is not hexadecimal: a BLOB value is written as hex digits"
            ) from None
    if kind == "BOOLEAN":
        word = text.strip().upper()
        if word not in {"TRUE", "FALSE"}:
            raise EditError(f"{text[:40]!r} is not a BOOLEAN: write TRUE or FALSE")
        return word == "TRUE"
    try:
        return esql_cast(text.strip(), kind)
    except Exception as exc:
        raise EditError(f"{text[:40]!r} is not a valid {kind}: {exc}") from None


def set_value(assembly: Assembly, tree: str, ref: Iterable[int], text: str | None, type_name: str) -> Element:
    """Set the value of the field at ``ref`` of ``tree``; returns the field."""
    value = parse_value(text, type_name)
    element = find(assembly, tree, list(ref))
    element.value = value
    return element


def jsonable(value: Any) -> Any:
    """A plain JSON value for one field value (for callers that build their own documents)."""
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float | Decimal | datetime.date | datetime.time | bytes | bytearray):
        return value_text(value)
    return str(value)
