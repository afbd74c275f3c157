"""The message set model: a JSON document of message types compiled into fields the readers walk.

A message set document (the form stored in the config repository and sent over REST)::

    {"name": "ORDERS", "types": {"Order": {"elements": [
        {"name": "Id", "type": "string", "cwf": {"length": 12}},
        {"name": "Qty", "type": "integer", "cwf": {"repr": "binary", "length": 4}},
        {"name": "Amount", "type": "decimal", "scale": 2, "cwf": {"repr": "packed", "length": 5}},
        {"name": "Count", "type": "integer", "cwf": {"repr": "display", "length": 2}},
        {"name": "Line", "type": "Line", "occurs": {"dependsOn": "Count", "max": 20}},
        {"name": "Alt", "choice": [ …elements… ]},
        {"type": "filler", "cwf": {"length": 3}}]}, "Line": {…}}}

``type`` is a simple type (string, integer, decimal, float, binary, boolean, filler) or the name of
another type in the set. ``cwf`` gives the Custom Wire Format: ``repr`` (string, binary, packed,
zoned, display, float, bytes), ``length`` in bytes (digits for zoned/display), ``signed``,
``byteOrder`` (big, little, message), ``justify`` (left, right), ``pad`` (one character, SPACE, NUL, ZERO or 0xHH) and
``sign`` (leading, trailing, leading_separate, trailing_separate, none) for display numerics, and
``ccsid`` for a string held in its own coded character set whatever the message's (a COBOL
national item is UTF-16, CCSID 1200).
A ``choice`` holds alternatives for the same bytes (COBOL REDEFINES); ``selector`` ({"field": F,
"cases": {value: alternative}}) picks one on input, else the first that parses is used.
"""

from __future__ import annotations

import re
from typing import Any

from esql.domains import DomainError

from flowbroker.formats import ccsid as ccsids

SIMPLE_TYPES = ("string", "integer", "decimal", "float", "binary", "boolean", "filler")
REPRS = ("string", "binary", "packed", "zoned", "display", "float", "bytes")
_DEFAULT_REPR = {
    "string": "string",
    "integer": "binary",
    "decimal": "packed",
    "float": "float",
    "binary": "bytes",
    "boolean": "binary",
    "filler": "bytes",
}


class MessageSetError(DomainError):
    """A message set document that does not describe a usable set (with the JSON pointer of the fault)."""

    def __init__(self, message: str, pointer: str) -> None:
        super().__init__(f"{message} (at {pointer})", domain="MRM", path=pointer)
        self.pointer = pointer


class Field:
    """One element of a message type, with its physical (CWF) description."""

    __slots__ = (
        "alternatives",
        "base",
        "ccsid",
        "complex",
        "depends_on",
        "justify",
        "length",
        "max_occurs",
        "min_occurs",
        "name",
        "occurs",
        "order",
        "pad",
        "repr",
        "scale",
        "selector",
        "sign",
        "signed",
        "type_name",
        "xml_attribute",
    )

    def __init__(self) -> None:
        self.name = ""
        self.base = ""
        self.type_name = ""
        self.complex: ComplexType | None = None
        self.alternatives: list[Field] = []
        self.selector: tuple[str, dict[str, str]] | None = None
        self.scale = 0
        self.occurs = 1
        self.min_occurs = 1
        self.max_occurs = 1
        self.depends_on = ""
        self.repr = ""
        self.length = 0
        self.signed = True
        self.order: str | None = None
        self.justify = "left"
        self.pad = " "
        self.sign = "trailing"
        self.xml_attribute = False
        self.ccsid: int | None = None

    @property
    def is_repeat(self) -> bool:
        return self.max_occurs != 1 or bool(self.depends_on)

    def to_document(self) -> dict[str, Any]:
        """This field as a message set document element (what the importers produce)."""
        out: dict[str, Any] = {}
        if self.base != "filler":
            out["name"] = self.name
        if self.alternatives:
            out["choice"] = [alt.to_document() for alt in self.alternatives]
            if self.selector:
                out["selector"] = {"field": self.selector[0], "cases": self.selector[1]}
            return out
        out["type"] = self.type_name if self.complex is not None or self.type_name else self.base
        if self.base == "decimal" and self.scale:
            out["scale"] = self.scale
        if self.depends_on:
            out["occurs"] = {"dependsOn": self.depends_on, "min": self.min_occurs, "max": self.max_occurs}
        elif self.occurs != 1:
            out["occurs"] = self.occurs
        if self.complex is None:
            cwf: dict[str, Any] = {"repr": self.repr, "length": self.length}
            if self.repr in ("binary", "packed", "zoned", "display"):
                cwf["signed"] = self.signed
            if self.repr in ("binary", "float") and self.order:
                cwf["byteOrder"] = self.order
            if self.repr == "string" and self.justify != "left":
                cwf["justify"] = self.justify
            if self.repr == "string" and self.ccsid is not None:
                cwf["ccsid"] = self.ccsid
            if self.repr == "display" and self.signed:
                cwf["sign"] = self.sign
            out["cwf"] = cwf
        return out


class ComplexType:
    """A structure of fields in order (a COBOL group, a C struct, an XML complex type)."""

    __slots__ = ("fields", "fixed_size", "flat", "flat_names", "name", "names")

    def __init__(self, name: str) -> None:
        self.name = name
        self.fields: list[Field] = []
        self.names: frozenset[str] = frozenset()
        #: When every field is a single simple element (fillers aside): those fields and their names.
        self.flat: list[Field] | None = None
        self.flat_names: list[str] = []
        #: The CWF length of a flat type (None for other types).
        self.fixed_size: int | None = None

    def fixed_length(self) -> int | None:
        """The CWF length when every field has a fixed size, else None."""
        total = 0
        for f in self.fields:
            size = field_length(f)
            if size is None:
                return None
            total += size
        return total


def field_length(f: Field) -> int | None:
    if f.depends_on:
        return None
    if f.alternatives:
        sizes = [field_length(alt) for alt in f.alternatives]
        if any(size is None for size in sizes):
            return None
        return max(s for s in sizes if s is not None) * f.occurs
    if f.complex is not None:
        inner = f.complex.fixed_length()
        return None if inner is None else inner * f.occurs
    return f.length * f.occurs


class MessageSet:
    """A compiled message set: its types by name."""

    def __init__(self, name: str, types: dict[str, ComplexType], document: dict[str, Any]) -> None:
        self.name = name
        self.types = types
        self.document = document

    def message_type(self, name: str) -> ComplexType:
        found = self.types.get(name)
        if found is None:
            known = ", ".join(sorted(self.types)) or "none"
            raise DomainError(
                f"message set '{self.name}' has no message type '{name}' (types: {known})", domain="MRM"
            )
        return found


def compile_set(document: Any, name: str = "") -> MessageSet:
    """Check and compile a message set document; faults name the JSON pointer."""
    if not isinstance(document, dict):
        raise MessageSetError("a message set document must be a JSON object", "/")
    types_doc = document.get("types")
    if not isinstance(types_doc, dict) or not types_doc:
        raise MessageSetError("a message set needs a non-empty 'types' object", "/types")
    types = {tname: ComplexType(tname) for tname in types_doc}
    for tname, tdoc in types_doc.items():
        pointer = f"/types/{tname}"
        if not isinstance(tdoc, dict) or not isinstance(tdoc.get("elements"), list):
            raise MessageSetError("a type needs an 'elements' list", pointer)
        for index, edoc in enumerate(tdoc["elements"]):
            types[tname].fields.append(_field(edoc, types, f"{pointer}/elements/{index}"))
    _check_cycles(types)
    for t in types.values():
        t.names = frozenset(g.name for f in t.fields for g in [f, *f.alternatives] if g.name)
        body = [f for f in t.fields if f.base != "filler"]
        if all(
            f.complex is None
            and not f.alternatives
            and f.occurs == 1
            and not f.depends_on
            and not f.xml_attribute
            for f in body
        ) and not any(f.depends_on for f in t.fields):
            t.flat = body
            t.flat_names = [f.name for f in body]
            # a filler may repeat: it is skipped as a whole, ``occurs`` times its length
            t.fixed_size = sum(f.length * f.occurs for f in t.fields)
    return MessageSet(str(document.get("name") or name), types, document)


def _check_cycles(types: dict[str, ComplexType]) -> None:
    def visit(t: ComplexType, stack: tuple[str, ...]) -> None:
        if t.name in stack:
            raise MessageSetError(f"type '{t.name}' contains itself", f"/types/{t.name}")
        for f in t.fields:
            for g in [f, *f.alternatives]:
                if g.complex is not None:
                    visit(g.complex, (*stack, t.name))

    for t in types.values():
        visit(t, ())


def _field(doc: Any, types: dict[str, ComplexType], pointer: str) -> Field:
    if not isinstance(doc, dict):
        raise MessageSetError("an element must be an object", pointer)
    f = Field()
    f.name = str(doc.get("name", "") or "")
    if "choice" in doc:
        alts = doc["choice"]
        if not isinstance(alts, list) or not alts:
            raise MessageSetError("'choice' must be a non-empty list of elements", pointer + "/choice")
        f.alternatives = [_field(alt, types, f"{pointer}/choice/{i}") for i, alt in enumerate(alts)]
        sel = doc.get("selector")
        if sel is not None:
            if not isinstance(sel, dict) or not isinstance(sel.get("cases"), dict) or not sel.get("field"):
                raise MessageSetError("'selector' needs 'field' and a 'cases' object", pointer + "/selector")
            f.selector = (str(sel["field"]), {str(k): str(v) for k, v in sel["cases"].items()})
        f.base = "choice"
        _occurs(f, doc, pointer)
        return f
    tname = doc.get("type")
    if not isinstance(tname, str) or not tname:
        raise MessageSetError("an element needs a 'type'", pointer + "/type")
    if not f.name and tname != "filler":
        raise MessageSetError("an element needs a 'name'", pointer + "/name")
    f.type_name = tname
    _occurs(f, doc, pointer)
    if tname in types:
        f.complex = types[tname]
        f.base = "complex"
        return f
    if tname not in SIMPLE_TYPES:
        raise MessageSetError(
            f"unknown type '{tname}' (a simple type {', '.join(SIMPLE_TYPES)} or a type of this set)",
            pointer + "/type",
        )
    f.base = tname
    f.type_name = ""
    scale = doc.get("scale", 0)
    if not isinstance(scale, int) or scale < 0 or scale > 31:
        raise MessageSetError("'scale' must be an integer from 0 to 31", pointer + "/scale")
    f.scale = scale
    f.xml_attribute = bool((doc.get("xml") or {}).get("attribute", False))
    cwf = doc.get("cwf", {})
    if not isinstance(cwf, dict):
        raise MessageSetError("'cwf' must be an object", pointer + "/cwf")
    f.repr = str(cwf.get("repr", _DEFAULT_REPR[tname]))
    if f.repr not in REPRS:
        raise MessageSetError(f"unknown CWF representation '{f.repr}'", pointer + "/cwf/repr")
    length = cwf.get("length")
    if length is None and f.repr == "float":
        length = 8
    if length is None and f.repr == "binary":
        length = 4
    if not isinstance(length, int) or length <= 0:
        raise MessageSetError("'cwf.length' must be a positive integer", pointer + "/cwf/length")
    if f.repr == "binary" and length not in (1, 2, 4, 8):
        raise MessageSetError("binary integers are 1, 2, 4 or 8 bytes", pointer + "/cwf/length")
    if f.repr == "float" and length not in (4, 8):
        raise MessageSetError("floats are 4 or 8 bytes", pointer + "/cwf/length")
    f.length = length
    f.signed = bool(cwf.get("signed", True))
    order = cwf.get("byteOrder", "message")
    if order not in ("big", "little", "message"):
        raise MessageSetError("'byteOrder' is big, little or message", pointer + "/cwf/byteOrder")
    f.order = None if order == "message" else order
    f.justify = str(cwf.get("justify", "right" if f.repr in ("display", "zoned") else "left"))
    if f.justify not in ("left", "right"):
        raise MessageSetError("'justify' is left or right", pointer + "/cwf/justify")
    f.pad = _pad_character(cwf.get("pad", " "), pointer + "/cwf/pad")
    f.sign = str(cwf.get("sign", "trailing"))
    if f.sign not in ("leading", "trailing", "leading_separate", "trailing_separate", "none"):
        raise MessageSetError("unknown 'sign' option", pointer + "/cwf/sign")
    ccsid = cwf.get("ccsid")
    if ccsid is not None:
        if f.repr != "string" or not isinstance(ccsid, int) or isinstance(ccsid, bool):
            raise MessageSetError("'ccsid' is an integer CCSID of a string field", pointer + "/cwf/ccsid")
        try:
            ccsids.codec(ccsid)
        except DomainError:
            raise MessageSetError(
                f"unsupported coded character set id {ccsid}", pointer + "/cwf/ccsid"
            ) from None
        f.ccsid = ccsid
    if f.repr == "zoned":
        f.repr, f.sign = "display", "trailing" if f.signed else "none"
    if f.repr == "display" and f.sign in ("leading_separate", "trailing_separate") and f.length < 2:
        raise MessageSetError("a separate sign needs at least 2 bytes", pointer + "/cwf/length")
    return f


# ACE's padding-character property takes these names as well as a literal character; NUL has to
# be spelt by name because a stored document may not hold the NUL character (PostgreSQL).
_NAMED_PADS = {"SPACE": " ", "NUL": "\x00", "ZERO": "0"}


def _pad_character(pad: object, pointer: str) -> str:
    if isinstance(pad, str):
        if len(pad) == 1:
            return pad
        if pad.upper() in _NAMED_PADS:
            return _NAMED_PADS[pad.upper()]
        if re.fullmatch(r"0[xX][0-9A-Fa-f]{2}", pad):
            return chr(int(pad[2:], 16))
    raise MessageSetError("'pad' is one character, SPACE, NUL, ZERO or a byte such as 0x00", pointer)


def _occurs(f: Field, doc: dict[str, Any], pointer: str) -> None:
    occ = doc.get("occurs", 1)
    if isinstance(occ, int) and not isinstance(occ, bool):
        if occ < 1:
            raise MessageSetError("'occurs' must be at least 1", pointer + "/occurs")
        f.occurs = f.min_occurs = f.max_occurs = occ
    elif isinstance(occ, dict) and occ.get("dependsOn"):
        f.depends_on = str(occ["dependsOn"])
        f.min_occurs = int(occ.get("min", 0))
        f.max_occurs = int(occ.get("max", 0)) or 2**31 - 1
        f.occurs = 0
    else:
        raise MessageSetError("'occurs' is a count or {'dependsOn': field, 'max': n}", pointer + "/occurs")
