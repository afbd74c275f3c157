"""Message models of a workspace: MRM message sets (``.mset`` + ``.mxsd``), XML schemas, DFDL schemas.

None of them becomes a flowbroker message set yet, and the report says why for each: flowbroker's
message sets are CWF record layouts imported from copybooks and C headers (``flowbroker msgset
import``); an MRM set's ``.mxsd`` files describe the logical structure, and only the set's CWF
physical format could be carried over, which these files do not hold in a form read here. XML and
TDS physical formats have no counterpart, XMLNSC does not validate against schemas, and DFDL is not
supported. Each set is reported with its name, domain, physical formats and the messages its
definitions declare, so that the flows using it can be followed up.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Any

from flowbroker.importers.ace import xmi

MSET = ".mset"
MXSD = ".mxsd"
XSD = (".xsd", ".dfdl")
XSD_NS = "http://www.w3.org/2001/XMLSchema"
XSI_TYPE = "{http://www.w3.org/2001/XMLSchema-instance}type"
#: A schema declaring this namespace carries DFDL annotations.
DFDL_NS_PREFIX = "http://www.ogf.org/dfdl/"
#: MRM physical format kinds by the xsi:type of an ``MRMessageSetRep``.
FORMATS = {"MRCWFMessageSetRep": "CWF", "MRTDSMessageSetRep": "TDS", "MRXMLMessageSetRep": "XML"}

_WHY_FORMAT = {
    "CWF": "the CWF layout is not read from .mxsd files: import the record's copybook or C header with "
    "`flowbroker msgset import --save`",
    "TDS": "the TDS (tagged/delimited) physical format is not supported",
    "XML": "the MRM XML physical format has no counterpart: parse these messages in the XMLNSC domain",
}


@dataclass
class _Set:
    file: str
    name: str
    domain: str
    formats: list[str] = field(default_factory=list)
    definitions: list[str] = field(default_factory=list)
    messages: list[str] = field(default_factory=list)
    problem: str = ""


def report(project: str, files: dict[str, bytes]) -> list[dict[str, Any]]:
    """One entry per message set, loose message definition file and schema of ``project``'s model files."""
    sets: dict[str, _Set] = {}
    entries: list[dict[str, Any]] = []
    for rel, data in sorted(files.items()):
        if rel.endswith(MSET):
            sets[str(PurePosixPath(rel).parent)] = _message_set(f"{project}/{rel}", data)
    for rel, data in sorted(files.items()):
        source = f"{project}/{rel}"
        if rel.endswith(MXSD):
            owner = _owner(rel, sets)
            messages, problem = _messages(data, source)
            if owner is not None:
                owner.definitions.append(source)
                owner.messages.extend(messages)
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
    for found in sets.values():
        entries.append(_set_entry(found))
    return sorted(entries, key=lambda e: str(e["file"]))


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
    return found


def _messages(data: bytes, source: str) -> tuple[list[str], str]:
    """The global elements an ``.mxsd`` declares as messages, or why the file cannot be read."""
    try:
        root = xmi.read_xml(data, source)
    except xmi.XmiError as exc:
        return [], str(exc)
    names = []
    for element in root.findall(f"{{{XSD_NS}}}element"):
        if any(etree_localname(node) == "MRMessage" for node in element.iter()):
            names.append(str(element.get("name", "")))
    return names, ""


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
        return {
            "file": source,
            "kind": "DFDL schema",
            "outcome": "not imported",
            "reason": "DFDL is not supported yet: model the record with a copybook or C header "
            "(`flowbroker msgset import`)",
        }
    return {
        "file": source,
        "kind": "XML schema",
        "outcome": "not imported",
        "reason": "XMLNSC messages are not validated against schemas here, so there is nothing to register; "
        "flows parse the XML without it",
    }


def _set_entry(found: _Set) -> dict[str, Any]:
    if found.problem:
        reason = found.problem
    else:
        kinds = [f.rpartition("(")[2].rstrip(")") for f in found.formats]
        reasons = [_WHY_FORMAT[k] for k in dict.fromkeys(kinds) if k in _WHY_FORMAT]
        reason = "; ".join(reasons) or "the set has no physical format: nothing to read its messages with"
    return {
        "file": found.file,
        "kind": "MRM message set",
        "name": found.name,
        "domain": found.domain,
        "formats": found.formats,
        "definitions": len(found.definitions),
        "messages": found.messages,
        "outcome": "not imported",
        "reason": reason,
    }
