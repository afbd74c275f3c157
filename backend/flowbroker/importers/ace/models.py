"""Message models of a workspace: MRM message sets (``.mset`` + ``.mxsd``), XML schemas, DFDL schemas.

An MRM set with a CWF physical format becomes a flowbroker message set of the same name
(:mod:`flowbroker.importers.ace.mrm` reads its ``.mxsd`` files): its messages are the set's message
types, parsed and written in the MRM domain as CWF records, and as MRM XML when the set also has an
XML format. A set is converted whole or not at all: a definition file that cannot be read, or a
construct without a counterpart, leaves the set out with the file and line. Sets with only XML or
TDS physical formats, loose ``.mxsd`` files, XML schemas and DFDL schemas are reported with why they
are not imported.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Any

from flowbroker.importers.ace import mrm, xmi

MSET = ".mset"
MXSD = ".mxsd"
XSD = (".xsd", ".dfdl")
XSD_NS = "http://www.w3.org/2001/XMLSchema"
XSI_TYPE = "{http://www.w3.org/2001/XMLSchema-instance}type"
#: A schema declaring this namespace carries DFDL annotations.
DFDL_NS_PREFIX = "http://www.ogf.org/dfdl/"
#: MRM physical format kinds by the xsi:type of an ``MRMessageSetRep``.
FORMATS = {"MRCWFMessageSetRep": "CWF", "MRTDSMessageSetRep": "TDS", "MRXMLMessageSetRep": "XML"}

XML_ONLY = (
    "XML physical format only: not converted because a flowbroker message set describes every simple "
    "field by its CWF length, which a set without a CWF format does not give, and the XMLNSC parser "
    "neither reads message sets nor validates against them; flows parse these messages in XMLNSC "
    "without the set"
)
TDS = "TDS (tagged/delimited) physical format: not supported"
NO_FORMAT = (
    "no physical format: the set only describes XML for validation (XMLNSC or SOAP), and XMLNSC does "
    "not validate against a model here, so there is nothing to register; flows parse the XML without it"
)
DFDL = "DFDL not yet supported: model the record with a copybook or C header (`flowbroker msgset import`)"
XML_SCHEMA = (
    "XML schema not registered: XMLNSC messages are not validated against schemas here; flows parse "
    "the XML without it"
)


@dataclass
class _Set:
    file: str
    name: str
    domain: str
    formats: list[str] = field(default_factory=list)
    definitions: list[str] = field(default_factory=list)
    messages: list[str] = field(default_factory=list)
    problem: str = ""
    reps: list[tuple[str, str]] = field(default_factory=list)  # (format name, CWF/TDS/XML/other)
    alignment_pad: str = ""  # the CWF format's byteAlignmentPad
    roots: list[tuple[str, Any]] = field(default_factory=list)  # parsed definitions: (source, root)


@dataclass
class Models:
    """What a project's model files gave: report entries, and the message set documents converted."""

    entries: list[dict[str, Any]] = field(default_factory=list)
    sets: list[dict[str, Any]] = field(default_factory=list)  # {"name", "document", "source"}


def read(project: str, files: dict[str, bytes]) -> Models:
    """One entry per message set, loose message definition file and schema of ``project``'s model files."""
    sets: dict[str, _Set] = {}
    found = Models()
    entries = found.entries
    for rel, data in sorted(files.items()):
        if rel.endswith(MSET):
            sets[str(PurePosixPath(rel).parent)] = _message_set(f"{project}/{rel}", data)
    for rel, data in sorted(files.items()):
        source = f"{project}/{rel}"
        if rel.endswith(MXSD):
            owner = _owner(rel, sets)
            messages, problem, root = _messages(data, source)
            if owner is not None:
                owner.definitions.append(source)
                owner.messages.extend(messages)
                if problem and not owner.problem:
                    owner.problem = problem
                elif root is not None:
                    owner.roots.append((source, root))
                continue
            entries.append(
                {
                    "file": source,
                    "kind": "MRM message definition",
                    "messages": messages,
                    "outcome": "not imported",
                    "reason": problem or "no messageSet.mset above it names its message set and formats",
                }
            )
        elif rel.endswith(XSD):
            entries.append(_schema(source, data))
    for one in sets.values():
        entry = _set_entry(one)
        entries.append(entry)
        if entry.get("document") is not None:
            found.sets.append({"name": one.name, "document": entry.pop("document"), "source": one.file})
    found.entries.sort(key=lambda e: str(e["file"]))
    return found


def report(project: str, files: dict[str, bytes]) -> list[dict[str, Any]]:
    """The report entries of :func:`read`."""
    return read(project, files).entries


def _owner(rel: str, sets: dict[str, _Set]) -> _Set | None:
    """The message set whose folder holds ``rel`` (the nearest ``.mset`` above it)."""
    for parent in PurePosixPath(rel).parents:
        found = sets.get(str(parent))
        if found is not None:
            return found
    return None


def _message_set(source: str, data: bytes) -> _Set:
    try:
        root = xmi.read_xml(data, source)
    except xmi.XmiError as exc:
        return _Set(source, "", "", problem=str(exc))
    found = _Set(source, root.get("name", ""), root.get("parserDomain", ""))
    for rep in root.iter("MRMessageSetRep"):
        kind = FORMATS.get(str(rep.get(XSI_TYPE, "")).rpartition(":")[2], "other")
        found.formats.append(f"{rep.get('name', '')} ({kind})")
        found.reps.append((str(rep.get("name", "")), kind))
        if kind == "CWF" and not found.alignment_pad:
            found.alignment_pad = str(rep.get("byteAlignmentPad", ""))
    return found


def _messages(data: bytes, source: str) -> tuple[list[str], str, Any]:
    """The global elements an ``.mxsd`` declares as messages, why the file cannot be read, its root."""
    try:
        root = xmi.read_xml(data, source)
    except xmi.XmiError as exc:
        return [], str(exc), None
    if etree_localname(root) != "schema" or not str(root.tag).startswith(f"{{{XSD_NS}}}"):
        line = root.sourceline or 1
        return (
            [],
            f"{source}:{line}:1: not an XML schema: the root element is <{etree_localname(root)}>",
            None,
        )
    names = []
    for element in root.findall(f"{{{XSD_NS}}}element"):
        if any(etree_localname(node) == "MRMessage" for node in element.iter()):
            names.append(str(element.get("name", "")))
    return names, "", root


def etree_localname(node: Any) -> str:
    tag = node.tag
    return tag.rpartition("}")[2] if isinstance(tag, str) else ""


def _schema(source: str, data: bytes) -> dict[str, Any]:
    try:
        root = xmi.read_xml(data, source)
    except xmi.XmiError as exc:
        return {"file": source, "kind": "schema", "outcome": "not imported", "reason": str(exc)}
    namespaces = set(root.nsmap.values()) if hasattr(root, "nsmap") else set()
    if any(str(ns).startswith(DFDL_NS_PREFIX) for ns in namespaces):
        return {"file": source, "kind": "DFDL schema", "outcome": "not imported", "reason": DFDL}
    return {"file": source, "kind": "XML schema", "outcome": "not imported", "reason": XML_SCHEMA}


def _set_entry(found: _Set) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "file": found.file,
        "kind": "MRM message set",
        "name": found.name,
        "domain": found.domain,
        "formats": found.formats,
        "definitions": len(found.definitions),
        "messages": found.messages,
        "outcome": "not imported",
    }
    kinds = [kind for _name, kind in found.reps]
    if found.problem:
        entry["reason"] = found.problem
        return entry
    cwf = next((name for name, kind in found.reps if kind == "CWF"), None)
    if cwf is None:
        reasons = []
        if "XML" in kinds and "TDS" not in kinds:
            reasons.append(XML_ONLY)
        if "TDS" in kinds:
            reasons.append(TDS)
        entry["reason"] = "; ".join(reasons) or NO_FORMAT
        return entry
    if not found.roots:
        entry["reason"] = "the set has a CWF format but no message definition (.mxsd) files"
        return entry
    try:
        document, warnings = mrm.convert(found.name, cwf, found.roots, alignment_pad=found.alignment_pad)
    except mrm.Refused as exc:
        entry["reason"] = f"CWF format {cwf}: not converted: {exc}"
        return entry
    from flowbroker.services.errors import Invalid
    from flowbroker.services.messagesets import check

    try:
        check(found.name, document)
    except Invalid as exc:
        entry["reason"] = f"CWF format {cwf}: the converted set does not compile: {exc}"
        return entry
    notes = [f"messages parse and write as CWF (format {cwf})"]
    if "XML" in kinds:
        notes.append("and as MRM XML")
    for name, kind in found.reps:
        if kind == "TDS":
            notes.append(f"TDS format {name} not converted: not supported")
    entry["outcome"] = "converted"
    entry["reason"] = "; ".join(notes)
    entry["types"] = len(document["types"])
    entry["warnings"] = warnings
    entry["document"] = document
    return entry
