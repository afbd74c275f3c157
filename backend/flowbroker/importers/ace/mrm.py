"""An MRM message set with a CWF physical format turned into a flowbroker message set document.

The logical structure comes from the set's ``.mxsd`` files (XML Schema): each global element with an
``MRMessage`` annotation is a message; complex types (named or anonymous), ``sequence``, ``choice``,
group references, element references and ``minOccurs``/``maxOccurs`` give the fields. The physical
layout comes from the CWF annotations the Toolkit writes beside them (``cwfInclRep`` and the other
``cwf…Rep`` elements of ``xsd:appinfo`` whose ``messageSetDefaultRep`` names the set's CWF format):

* ``physicalType`` (also read as ``typeDescriptor``): fixedLengthString, integer, packedDecimal,
  externalDecimal, float, binary — length-encoded and null-terminated strings have no counterpart;
* ``length`` / ``lengthCount`` (bytes; a string without one takes its ``length`` or ``maxLength``
  facet; an integer its XSD size; a packed or external decimal its ``totalDigits``);
* ``justification``, ``paddingCharacter``, ``signOrientation``, ``signed``, ``virtualDecimalPoint``;
* ``repeatCount`` and ``repeatReference`` (a repeat of fixed count, or counted by an earlier field),
  else a finite ``maxOccurs`` as the fixed count;
* ``leadingSkipCount`` / ``trailingSkipCount`` as filler bytes; an ``xmlInclRep`` rendering an
  element as an XML attribute marks it so for the MRM XML format.

What has no counterpart here (``xsd:all``, ``xsd:any``, XML attributes of a CWF record, a length
given by reference, byte alignment other than 1, a recursive type, an unbounded repeat without a
count) refuses the whole set with the file and line of the construct; attributes of a CWF
annotation that are not read are returned as warnings, so nothing is dropped silently.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from lxml import etree

XSD_NS = "http://www.w3.org/2001/XMLSchema"
_X = f"{{{XSD_NS}}}"
#: How deep types may contain each other (a CWF record nests far less; a bound on hostile input).
MAX_DEPTH = 64

#: XSD built-in types by our simple type, with the CWF defaults they imply.
_STRINGS = {
    "string", "normalizedString", "token", "language", "Name", "NCName", "NMTOKEN", "NMTOKENS", "ID",
    "IDREF", "IDREFS", "ENTITY", "ENTITIES", "anyURI", "QName", "NOTATION", "anySimpleType",
    "dateTime", "date", "time", "gYear", "gYearMonth", "gMonth", "gMonthDay", "gDay", "duration",
}  # fmt: skip
#: integer types: (length in bytes, signed)
_INTEGERS = {
    "byte": (1, True), "unsignedByte": (1, False), "short": (2, True), "unsignedShort": (2, False),
    "int": (4, True), "unsignedInt": (4, False), "long": (8, True), "unsignedLong": (8, False),
    "integer": (4, True), "nonNegativeInteger": (4, False), "positiveInteger": (4, False),
    "nonPositiveInteger": (4, True), "negativeInteger": (4, True),
}  # fmt: skip
_FLOATS = {"float": 4, "double": 8}
_BINARIES = {"hexBinary", "base64Binary"}

_PHYSICAL = {
    "fixedlengthstring": "string",
    "integer": "binary",
    "packeddecimal": "packed",
    "externaldecimal": "display",
    "float": "float",
    "binary": "bytes",
}
_UNSUPPORTED_PHYSICAL = {
    "nullterminatedstring": "a null-terminated string",
    "lengthencodedstring1": "a length-encoded string",
    "lengthencodedstring2": "a length-encoded string",
    "lengthencodedstring4": "a length-encoded string",
    "lengthencodedstring": "a length-encoded string",
}
_SIGNS = {
    "leading": "leading",
    "trailing": "trailing",
    "leadingseparate": "leading_separate",
    "trailingseparate": "trailing_separate",
}
#: CWF annotation attributes read here; any other is reported as a warning.
_READ = {
    "messageSetDefaultRep", "physicalType", "typeDescriptor", "length", "lengthCount", "lengthUnits",
    "justification", "paddingCharacter", "signOrientation", "signed", "virtualDecimalPoint",
    "repeatCount", "repeatReference", "leadingSkipCount", "trailingSkipCount", "byteAlignment",
    "precision",
}  # fmt: skip
#: Values of annotation attributes that say nothing beyond the defaults.
_NEUTRAL = {"encodingNull": {"nullPadFill", "NULLPadFill"}, "encodingNullValue": {""}}


class Refused(Exception):
    """The set cannot be converted: ``file:line: why``."""

    def __init__(self, source: str, line: int | None, message: str) -> None:
        super().__init__(f"{source}:{line or 1}: {message}")


@dataclass
class _Definitions:
    """The global declarations of every ``.mxsd`` of one set, by local name, with their files."""

    elements: dict[str, tuple[Any, str]] = field(default_factory=dict)
    complex_types: dict[str, tuple[Any, str]] = field(default_factory=dict)
    simple_types: dict[str, tuple[Any, str]] = field(default_factory=dict)
    groups: dict[str, tuple[Any, str]] = field(default_factory=dict)
    messages: list[tuple[str, Any, str]] = field(default_factory=list)


def _local(node: Any) -> str:
    tag = node.tag
    return tag.rpartition("}")[2] if isinstance(tag, str) else ""


def _is_message(element: Any) -> bool:
    return any(_local(n) == "MRMessage" for n in element.iter())


def collect(files: list[tuple[str, Any]]) -> _Definitions:
    """The global declarations of ``files`` (source, parsed root); a name declared twice is refused."""
    found = _Definitions()
    kinds = {
        "element": found.elements,
        "complexType": found.complex_types,
        "simpleType": found.simple_types,
        "group": found.groups,
    }
    for source, root in files:
        for child in root:
            table = kinds.get(_local(child)) if child.tag == _X + _local(child) else None
            if table is None:
                continue
            name = str(child.get("name", ""))
            if not name:
                continue
            if name in table and etree.tostring(table[name][0]) != etree.tostring(child):
                other = table[name][1]
                raise Refused(
                    source,
                    child.sourceline,
                    f"{_local(child)} '{name}' is also declared in {other}; flowbroker message sets have "
                    "one namespace, so the two cannot both be kept",
                )
            table[name] = (child, source)
            if table is found.elements and _is_message(child):
                found.messages.append((name, child, source))
    return found


class _Builder:
    def __init__(self, rep: str, defs: _Definitions, filler: dict[str, Any]) -> None:
        self.rep = rep
        self.filler = filler
        self.defs = defs
        self.types: dict[str, dict[str, Any]] = {}
        self.warnings: list[str] = []
        self._building: list[str] = []
        #: global elements with an anonymous complex type: the type name given to it
        self._global: dict[str, str] = {}

    # -- structure -------------------------------------------------------------------------------

    def message(self, name: str, element: Any, source: str) -> None:
        typed = element.get("type")
        inline = element.find(_X + "complexType")
        if inline is not None:
            self._global[name] = name
            self._complex(name, inline, source)
            return
        if not typed:
            raise Refused(source, element.sourceline, f"message '{name}' has no complex type")
        ns, local = self._qname(element, typed)
        if ns == XSD_NS or local not in self.defs.complex_types:
            raise Refused(
                source,
                element.sourceline,
                f"message '{name}' is of simple type {typed}: a CWF record is a structure",
            )
        node, where = self.defs.complex_types[local]
        if local != name and name in self.defs.complex_types:
            raise Refused(
                source,
                element.sourceline,
                f"message '{name}' and complex type '{name}' would share one type name",
            )
        self._complex(name, node, where)

    def _named_complex(self, name: str, element: Any, source: str) -> str:
        node, where = self.defs.complex_types[name]
        self._complex(name, node, where)
        return name

    def _complex(self, type_name: str, node: Any, source: str) -> None:
        if type_name in self.types:
            return
        if type_name in self._building:
            chain = " → ".join([*self._building[self._building.index(type_name) :], type_name])
            raise Refused(
                source,
                node.sourceline,
                f"type '{type_name}' contains itself ({chain}): a CWF record has a fixed shape",
            )
        if len(self._building) >= MAX_DEPTH:
            raise Refused(source, node.sourceline, f"types nest more than {MAX_DEPTH} deep at '{type_name}'")
        self._building.append(type_name)
        elements: list[dict[str, Any]] = []
        for child in node:
            kind = _local(child) if isinstance(child.tag, str) else ""
            if kind in ("annotation", ""):
                continue
            if kind in ("sequence", "choice", "group", "all"):
                elements.extend(self._particle(child, source, type_name))
            elif kind in ("attribute", "attributeGroup", "anyAttribute"):
                raise Refused(
                    source,
                    child.sourceline,
                    f"type '{type_name}' has an XML attribute ({child.get('name') or child.get('ref') or kind}): "
                    "where attributes sit in a CWF record is not read here",
                )
            elif kind in ("simpleContent", "complexContent"):
                raise Refused(
                    source,
                    child.sourceline,
                    f"type '{type_name}' uses {kind} (derived types) which is not converted",
                )
        self._building.pop()
        if not elements:
            raise Refused(source, node.sourceline, f"type '{type_name}' has no elements")
        earlier: set[str] = set()
        for element in elements:
            occurs = element.get("occurs")
            counter = occurs.get("dependsOn") if isinstance(occurs, dict) else None
            if counter is not None and counter not in earlier:
                raise Refused(
                    source,
                    node.sourceline,
                    f"element '{element['name']}' of type '{type_name}' repeats by '{counter}', which is not "
                    "an earlier field of the type",
                )
            earlier.update(alt.get("name", "") for alt in [element, *element.get("choice", [])])
        self.types[type_name] = {"elements": elements}

    def _particle(self, node: Any, source: str, owner: str) -> list[dict[str, Any]]:
        kind = _local(node)
        if _occurs_of(node) != (1, 1):
            raise Refused(
                source,
                node.sourceline,
                f"a repeating {kind} in type '{owner}' is not converted (repeat an element instead)",
            )
        if kind == "all":
            raise Refused(
                source,
                node.sourceline,
                f"type '{owner}' uses xsd:all, which has no fixed order: a CWF record needs one",
            )
        if kind == "group":
            ref = node.get("ref")
            if not ref:
                raise Refused(source, node.sourceline, "a group without ref")
            _, local = self._qname(node, ref)
            if local not in self.defs.groups:
                raise Refused(source, node.sourceline, f"group '{ref}' is not declared in the message set")
            group, where = self.defs.groups[local]
            out: list[dict[str, Any]] = []
            for child in group:
                if _local(child) in ("sequence", "choice", "all"):
                    out.extend(self._particle(child, where, owner))
            return out
        out = []
        for child in node:
            sub = _local(child) if isinstance(child.tag, str) else ""
            if sub in ("annotation", ""):
                continue
            if sub == "element":
                out.extend(self._element(child, source, owner))
            elif sub in ("sequence", "choice", "group"):
                out.extend(self._particle(child, source, owner))
            elif sub == "any":
                raise Refused(
                    source,
                    child.sourceline,
                    f"type '{owner}' holds xsd:any: a CWF record has no self-defining fields",
                )
            else:
                raise Refused(source, child.sourceline, f"xsd:{sub} in type '{owner}' is not converted")
        if kind == "choice":
            alternatives = [e for e in out if e.get("type") != "filler"]
            if len(alternatives) != len(out):
                raise Refused(
                    source, node.sourceline, f"a choice in type '{owner}' has skip counts: not converted"
                )
            return [{"choice": alternatives}]
        return out

    def _element(self, element: Any, source: str, owner: str) -> list[dict[str, Any]]:
        reps = [self._cwf_rep(element)]
        xml_attribute = self._xml_attribute(element)
        ref = element.get("ref")
        target, target_source = element, source
        if ref:
            _, local = self._qname(element, ref)
            if local not in self.defs.elements:
                raise Refused(
                    source,
                    element.sourceline,
                    f"element reference '{ref}' names no global element of the set",
                )
            target, target_source = self.defs.elements[local]
            reps.append(self._cwf_rep(target))
            xml_attribute = xml_attribute or self._xml_attribute(target)
        name = str(target.get("name", ""))
        rep: dict[str, str] = {}
        for found in reversed(reps):
            rep.update(found)
        self._warn_unread(rep, source, element.sourceline, owner, name)
        doc: dict[str, Any] = {"name": name}
        inline_complex = target.find(_X + "complexType")
        typed = target.get("type")
        if inline_complex is not None:
            if ref and name in self._global:
                anon = self._global[name]
            else:
                anon = self._unique(name if ref else f"{owner}_{name}")
                if ref:
                    self._global[name] = anon
            self._complex(anon, inline_complex, target_source)
            doc["type"] = anon
        elif (
            typed
            and self._qname(target, typed)[0] != XSD_NS
            and self._qname(target, typed)[1] in self.defs.complex_types
        ):
            doc["type"] = self._named_complex(self._qname(target, typed)[1], target, target_source)
        else:
            self._simple(doc, target, target_source, rep, owner)
            if xml_attribute:
                doc["xml"] = {"attribute": True}
        self._occurs(doc, element, source, rep, owner)
        out: list[dict[str, Any]] = []
        lead = _count(rep, "leadingSkipCount", source, element.sourceline)
        trail = _count(rep, "trailingSkipCount", source, element.sourceline)
        if lead:
            out.append({"type": "filler", "cwf": {**self.filler, "length": lead}})
        out.append(doc)
        if trail:
            if doc.get("occurs", 1) != 1:
                raise Refused(
                    source,
                    element.sourceline,
                    f"element '{name}' of type '{owner}' repeats with a trailing skip count: not converted",
                )
            out.append({"type": "filler", "cwf": {**self.filler, "length": trail}})
        alignment = rep.get("byteAlignment", "1Bytes")
        if alignment not in ("1Bytes", "1", ""):
            raise Refused(
                source,
                element.sourceline,
                f"element '{name}' of type '{owner}' has byte alignment {alignment}: model the slack bytes as skip counts",
            )
        return out

    def _simple(
        self, doc: dict[str, Any], element: Any, source: str, rep: dict[str, str], owner: str
    ) -> None:
        name = doc["name"]
        line = element.sourceline
        builtin, facets = self._base(element, source)
        physical_raw = rep.get("physicalType") or rep.get("typeDescriptor") or ""
        physical = re.sub(r"[^a-z0-9]", "", physical_raw.lower())
        if physical in _UNSUPPORTED_PHYSICAL:
            raise Refused(
                source,
                line,
                f"element '{name}' of type '{owner}' is {_UNSUPPORTED_PHYSICAL[physical]} ({physical_raw}): "
                "flowbroker's CWF fields have fixed lengths",
            )
        if physical and physical not in _PHYSICAL:
            raise Refused(
                source,
                line,
                f"element '{name}' of type '{owner}': unknown CWF physical type {physical_raw!r}",
            )
        units = rep.get("lengthUnits", "bytes")
        if units.lower() not in ("bytes", "characters", "characterunits", ""):
            raise Refused(
                source, line, f"element '{name}' of type '{owner}': length units {units!r} are not converted"
            )
        if units.lower() in ("characters", "characterunits"):
            self.warnings.append(
                f"{source}:{line}: element '{name}' of type '{owner}': length in {units} read as bytes "
                "(right for single-byte code pages)"
            )
        if "lengthReference" in rep:
            raise Refused(
                source,
                line,
                f"element '{name}' of type '{owner}' takes its length from {rep['lengthReference']!r}: "
                "flowbroker's CWF fields have fixed lengths",
            )
        length = _count(rep, "length", source, line) or _count(rep, "lengthCount", source, line)
        cwf: dict[str, Any] = {}
        if builtin in _STRINGS or (
            builtin not in _INTEGERS and builtin not in _FLOATS and physical == "fixedlengthstring"
        ):
            if builtin not in _STRINGS and builtin not in _BINARIES:
                self.warnings.append(
                    f"{source}:{line}: element '{name}' of type '{owner}': a {builtin} carried as a fixed-length "
                    "string is read as a string"
                )
            doc["type"] = "string"
            length = length or facets.get("length") or facets.get("maxLength") or 0
            cwf["repr"] = "string"
            justification = rep.get("justification", "leftJustify")
            if justification.lower().startswith("right"):
                cwf["justify"] = "right"
            elif not justification.lower().startswith(("left", "notapplicable")):
                raise Refused(source, line, f"element '{name}': unknown justification {justification!r}")
            pad = rep.get("paddingCharacter")
            if pad is not None and pad != "":
                cwf["pad"] = _pad(pad, source, line, name)
        elif (
            builtin in _INTEGERS
            or builtin == "decimal"
            or (builtin in _FLOATS and physical in ("packeddecimal", "externaldecimal", "integer"))
        ):
            size, signed = _INTEGERS.get(builtin, (4, True))
            scale = facets.get("fractionDigits")
            if scale is None and rep.get("virtualDecimalPoint") not in (None, "", "0"):
                scale = _count(rep, "virtualDecimalPoint", source, line)
            if builtin in _INTEGERS:
                doc["type"] = "integer"
                if scale:
                    raise Refused(source, line, f"element '{name}': an integer with a decimal point")
            else:
                doc["type"] = "decimal" if builtin == "decimal" else "float"
                if scale:
                    doc["scale"] = scale
            kind = _PHYSICAL.get(physical) or ("binary" if builtin in _INTEGERS else "packed")
            if kind not in ("binary", "packed", "display"):
                raise Refused(
                    source,
                    line,
                    f"element '{name}' of type '{owner}': a {builtin} as {physical_raw} is not converted",
                )
            if kind == "binary" and builtin == "decimal":
                self.warnings.append(f"{source}:{line}: element '{name}': a decimal held as a binary integer")
            if "signed" in rep:
                signed = rep["signed"].lower() == "true"
            digits = facets.get("totalDigits")
            if not length:
                if kind == "binary":
                    length = size
                elif kind == "packed" and digits:
                    length = digits // 2 + 1
                elif kind == "display" and digits:
                    length = digits
            cwf["repr"] = kind
            cwf["signed"] = signed
            if kind == "display" and signed:
                orientation = re.sub(r"[^a-z]", "", rep.get("signOrientation", "trailing").lower())
                if orientation not in _SIGNS:
                    raise Refused(
                        source,
                        line,
                        f"element '{name}': sign orientation {rep['signOrientation']!r} is not converted",
                    )
                cwf["sign"] = _SIGNS[orientation]
                if "separate" in orientation and not rep.get("length") and not rep.get("lengthCount"):
                    length += 1
        elif builtin in _FLOATS:
            doc["type"] = "float"
            cwf["repr"] = "float"
            length = length or _FLOATS[builtin]
        elif builtin == "boolean":
            doc["type"] = "boolean"
            cwf["repr"] = "binary"
            length = length or 4
        elif builtin in _BINARIES:
            doc["type"] = "binary"
            cwf["repr"] = "bytes"
            length = length or facets.get("length") or facets.get("maxLength") or 0
        else:
            raise Refused(
                source, line, f"element '{name}' of type '{owner}': XSD type {builtin} is not converted"
            )
        if not length:
            raise Refused(
                source,
                line,
                f"element '{name}' of type '{owner}' has no CWF length (set Length in its {self.rep} properties)",
            )
        cwf["length"] = length
        doc["cwf"] = cwf

    def _occurs(
        self, doc: dict[str, Any], element: Any, source: str, rep: dict[str, str], owner: str
    ) -> None:
        low, high = _occurs_of(element)
        reference = rep.get("repeatReference")
        count = _count(rep, "repeatCount", source, element.sourceline)
        if reference:
            doc["occurs"] = {"dependsOn": reference.rpartition("/")[2], "min": low, "max": high or 0}
            if not high:
                del doc["occurs"]["max"]
            return
        if high is None and not count:
            raise Refused(
                source,
                element.sourceline,
                f"element '{doc['name']}' of type '{owner}' repeats without bound and has no repeat count or "
                "reference: a CWF record needs to know how many",
            )
        times = count or high or 1
        if low == 0 and high == 1 and not count:
            self.warnings.append(
                f"{source}:{element.sourceline}: element '{doc['name']}' of type '{owner}' is optional; in CWF it "
                "is always present"
            )
        if times != 1:
            doc["occurs"] = times

    # -- helpers ---------------------------------------------------------------------------------

    def _base(self, element: Any, source: str) -> tuple[str, dict[str, int]]:
        """The XSD built-in type under ``element``'s simple type, and the facets met on the way."""
        facets: dict[str, int] = {}
        node = element
        for _ in range(32):
            kind = _local(node)
            simple = node if kind == "simpleType" else node.find(_X + "simpleType")
            typed = node.get("type") if kind == "element" else None
            context = node
            if simple is not None:
                restriction = simple.find(_X + "restriction")
                if restriction is None:
                    raise Refused(
                        source, simple.sourceline, "a simple type by list or union is not converted"
                    )
                for facet in restriction:
                    key = _local(facet) if isinstance(facet.tag, str) else ""
                    if key in ("length", "maxLength", "totalDigits", "fractionDigits"):
                        try:
                            facets.setdefault(key, int(str(facet.get("value"))))
                        except ValueError:
                            raise Refused(
                                source,
                                facet.sourceline,
                                f"facet {key} is not a number: {facet.get('value')!r}",
                            ) from None
                typed = restriction.get("base")
                context = restriction
                if not typed and restriction.find(_X + "simpleType") is not None:
                    node = restriction
                    continue
            if not typed:
                return "string", facets
            ns, local = self._qname(context, typed)
            if ns == XSD_NS:
                return local, facets
            found = self.defs.simple_types.get(local)
            if found is None:
                raise Refused(
                    source, context.sourceline, f"type '{typed}' is not declared in the message set"
                )
            node, source = found
        raise Refused(source, element.sourceline, "simple types derive from each other too deeply")

    def _cwf_rep(self, element: Any) -> dict[str, str]:
        for info in element.iterchildren(_X + "annotation"):
            for app in info.iterchildren(_X + "appinfo"):
                for rep in app:
                    name = _local(rep) if isinstance(rep.tag, str) else ""
                    if (
                        name.lower().startswith("cwf")
                        and rep.get("messageSetDefaultRep", self.rep) == self.rep
                    ):
                        return {str(k): str(v) for k, v in rep.attrib.items()}
        return {}

    @staticmethod
    def _xml_attribute(element: Any) -> bool:
        for info in element.iterchildren(_X + "annotation"):
            for app in info.iterchildren(_X + "appinfo"):
                for rep in app:
                    if (
                        _local(rep).lower().startswith("xml")
                        and rep.get("render", "").lower() == "xmlattribute"
                    ):
                        return True
        return False

    def _warn_unread(self, rep: dict[str, str], source: str, line: int, owner: str, name: str) -> None:
        for key, value in rep.items():
            if key in _READ or value in _NEUTRAL.get(key, ()):
                continue
            self.warnings.append(
                f"{source}:{line}: element '{name}' of type '{owner}': CWF property {key}={value!r} is not read"
            )

    def _unique(self, name: str) -> str:
        candidate, n = name, 1
        while candidate in self.types or candidate in self.defs.complex_types or candidate in self._building:
            n += 1
            candidate = f"{name}{n}"
        return candidate

    @staticmethod
    def _qname(node: Any, value: str) -> tuple[str, str]:
        prefix, _, local = value.rpartition(":")
        ns = node.nsmap.get(prefix or None, "")
        return str(ns or ""), local


def _occurs_of(node: Any) -> tuple[int, int | None]:
    def number(raw: str | None, default: int) -> int:
        try:
            return int(raw) if raw is not None else default
        except ValueError:
            return default

    low = number(node.get("minOccurs"), 1)
    high_raw = node.get("maxOccurs")
    high = None if high_raw == "unbounded" else number(high_raw, 1)
    return low, high


def _count(rep: dict[str, str], key: str, source: str, line: int) -> int:
    raw = rep.get(key)
    if raw is None or raw == "":
        return 0
    try:
        value = int(raw)
    except ValueError:
        raise Refused(source, line, f"CWF property {key} is not a number: {raw!r}") from None
    if value < 0 or value > 2**31 - 1:
        raise Refused(source, line, f"CWF property {key} is out of range: {raw!r}")
    return value


def _pad(raw: str, source: str, line: int, name: str) -> str:
    text = raw.strip()
    upper = text.upper()
    if upper in ("SPACE", "NUL", "ZERO"):
        return upper
    if re.fullmatch(r"0[xX][0-9A-Fa-f]{2}", text):
        return text
    if re.fullmatch(r"[uU]\+[0-9A-Fa-f]{4}", text):
        return chr(int(text[2:], 16)) if int(text[2:], 16) else "NUL"
    if len(text) == 3 and text[0] == text[2] and text[0] in "'\"":
        return text[1]
    if len(raw) == 1:
        return raw
    raise Refused(source, line, f"element '{name}': padding character {raw!r} is not converted")


def convert(
    set_name: str, rep: str, files: list[tuple[str, Any]], *, alignment_pad: str = ""
) -> tuple[dict[str, Any], list[str]]:
    """The message set document of ``files`` (source, parsed ``.mxsd`` root) for CWF format ``rep``.

    ``alignment_pad`` is the format's Byte Alignment Pad (``SPACE``, ``NUL``, a character or
    ``0xHH``), written in the bytes skip counts leave; NUL when not given. Raises :class:`Refused`
    naming file and line when something has no counterpart.
    """
    defs = collect(files)
    if not defs.messages:
        source = files[0][0] if files else set_name
        raise Refused(source, 1, "no global element is marked as a message (MRMessage)")
    filler: dict[str, Any] = {}
    if alignment_pad and alignment_pad.upper() not in ("NUL", "0X00"):
        filler = {"repr": "string", "pad": _pad(alignment_pad, files[0][0], 1, "byteAlignmentPad")}
    builder = _Builder(rep, defs, filler)
    for name, element, source in defs.messages:
        builder.message(name, element, source)
    document = {
        "name": set_name,
        "types": builder.types,
        "messages": [name for name, _e, _s in defs.messages],
    }
    return document, builder.warnings
