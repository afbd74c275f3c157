"""MQRFH2: the rules-and-formatting header, read and written in IBM's published byte layout.

Fixed part (36 bytes): StrucId ``RFH `` (4), Version (4), StrucLength (4), Encoding (4),
CodedCharSetId (4), Format (8), Flags (4), NameValueCCSID (4); then folders, each a 4-byte
NameValueLength and that many bytes of XML (``<mcd>…</mcd>``) padded with blanks to a multiple
of 4. Integers follow the encoding of the message that carries the header; StrucId and Format
are in its CCSID; folders are in NameValueCCSID.
"""

from __future__ import annotations

import struct
from typing import Any

from esql.domains import DomainError
from esql.tree import Element
from lxml import etree

from flowbroker.formats import ccsid as ccsids
from flowbroker.formats import xmlcore

STRUC_ID = "RFH "
FIXED_LENGTH = 36
FOLDER = 0x01000000
_NVCCSIDS = {1208: "utf-8", 1200: "utf-16-be", 13488: "utf-16-be", 17584: "utf-16-be", 819: "iso-8859-1"}


def _ints(encoding: int) -> str:
    return "<" if ccsids.integer_order(encoding) == "little" else ">"


def parse(data: bytes, *, encoding: int, ccsid: int) -> tuple[Element, bytes]:
    """Split ``data`` (a body starting with an MQRFH2) into the ``MQRFH2`` folder and what follows."""
    if len(data) < FIXED_LENGTH:
        raise DomainError(
            f"MQRFH2: {len(data)} bytes is shorter than the 36-byte fixed part",
            domain="MQRFH2",
            offset=len(data),
        )
    text = ccsids.codec(ccsid)
    struc_id = data[0:4].decode(text, "replace")
    if struc_id != STRUC_ID:
        raise DomainError(f"MQRFH2: StrucId is {struc_id!r}, expected 'RFH '", domain="MQRFH2", offset=0)
    order = _ints(encoding)
    version, length, enc, ccs = struct.unpack_from(order + "iiii", data, 4)
    fmt = data[20:28].decode(text, "replace")
    flags, nv_ccsid = struct.unpack_from(order + "ii", data, 28)
    if version != 2:
        raise DomainError(f"MQRFH2: Version is {version}, expected 2", domain="MQRFH2", offset=4)
    if length < FIXED_LENGTH or length > len(data):
        raise DomainError(
            f"MQRFH2: StrucLength {length} does not fit the {len(data)}-byte message",
            domain="MQRFH2",
            offset=8,
        )
    header = Element("MQRFH2", type=FOLDER)
    for name, value in (
        ("Version", version),
        ("Format", fmt),
        ("Encoding", enc),
        ("CodedCharSetId", ccs),
        ("Flags", flags),
        ("NameValueCCSID", nv_ccsid),
    ):
        header.append_new(Element(name, value))
    try:
        nv_codec = _NVCCSIDS.get(nv_ccsid) or ccsids.codec(nv_ccsid)
    except DomainError:
        raise DomainError(
            f"MQRFH2: unsupported NameValueCCSID {nv_ccsid}", domain="MQRFH2", offset=32
        ) from None
    pos = FIXED_LENGTH
    while pos < length:
        if pos + 4 > length:
            raise DomainError("MQRFH2: a NameValueLength runs past StrucLength", domain="MQRFH2", offset=pos)
        (nv_len,) = struct.unpack_from(order + "i", data, pos)
        if nv_len < 0 or pos + 4 + nv_len > length:
            raise DomainError(
                f"MQRFH2: NameValueLength {nv_len} at byte offset {pos} runs past StrucLength {length}",
                domain="MQRFH2",
                offset=pos,
            )
        raw = data[pos + 4 : pos + 4 + nv_len]
        try:
            text = raw.decode(nv_codec)
        except UnicodeDecodeError as exc:
            raise DomainError(
                f"MQRFH2: folder bytes are not valid in NameValueCCSID {nv_ccsid}: {exc.reason}",
                domain="MQRFH2",
                offset=pos + 4 + exc.start,
            ) from None
        _folder(header, text.rstrip(" \x00"), pos + 4)
        pos += 4 + nv_len
    return header, data[length:]


#: Parsed folders by their text: the <mcd> of a stream of messages is nearly always the same.
_FOLDER_CACHE: dict[str, Element] = {}


def _folder(header: Element, text: str, offset: int) -> None:
    if not text:
        return
    cached = _FOLDER_CACHE.get(text)
    if cached is not None:
        header.append_new(cached.copy())
        return
    if "<!ENTITY" in text or "<!DOCTYPE" in text:
        raise DomainError("MQRFH2: a folder may not declare a DTD", domain="MQRFH2", offset=offset)
    try:
        root = etree.fromstring(text.encode("utf-8"), xmlcore.folder_parser())
    except etree.XMLSyntaxError as exc:
        raise DomainError(
            f"MQRFH2: malformed folder at byte offset {offset}: {exc.msg}", domain="MQRFH2", offset=offset
        ) from None
    folder = header.add(root.tag, type=FOLDER)
    _fill(folder, root)
    if len(_FOLDER_CACHE) < 512:
        _FOLDER_CACHE[text] = folder.copy()


def _fill(element: Element, node: Any) -> None:
    for key, val in node.attrib.items():
        element.add(key, val, type=xmlcore.ATTRIBUTE)
    kids = [kid for kid in node if isinstance(kid.tag, str)]
    if not kids:
        element.type = xmlcore.FIELD
        element.value = node.text or ""
        return
    for kid in kids:
        _fill(element.add(kid.tag, type=FOLDER), kid)


def _folder_xml(element: Element) -> str:
    attrs = "".join(
        f' {kid.name}="{xmlcore.escape_attr(xmlcore.text_of(kid.value))}"'
        for kid in element.children()
        if kid.type == xmlcore.ATTRIBUTE
    )
    inner = "".join(_folder_xml(kid) for kid in element.children() if kid.type != xmlcore.ATTRIBUTE)
    if not inner and element.value is not None:
        inner = xmlcore.escape_text(xmlcore.text_of(element.value))
    return f"<{element.name}{attrs}>{inner}</{element.name}>"


_FIXED_NAMES = frozenset(
    {"Version", "Format", "Encoding", "CodedCharSetId", "Flags", "NameValueCCSID", "StrucLength"}
)


def serialize(header: Element, *, encoding: int, ccsid: int) -> bytes:
    """The header's bytes (integers in ``encoding``, StrucId and Format in ``ccsid``)."""
    order = _ints(encoding)
    text = ccsids.codec(ccsid)

    def field(name: str, default: Any) -> Any:
        kid = header.child(name)
        return default if kid is None or kid.value is None else kid.value

    nv_ccsid = int(field("NameValueCCSID", 1208))
    nv_codec = _NVCCSIDS.get(nv_ccsid) or ccsids.codec(nv_ccsid)
    folders = b""
    for kid in header.children():
        if kid.name in _FIXED_NAMES and not kid.has_children():
            continue
        raw = _folder_xml(kid).encode(nv_codec)
        raw += b" " * (-len(raw) % 4)
        folders += struct.pack(order + "i", len(raw)) + raw
    fmt = str(field("Format", "        "))[:8].ljust(8)
    fixed = (
        STRUC_ID.encode(text)
        + struct.pack(
            order + "iiii",
            int(field("Version", 2)),
            FIXED_LENGTH + len(folders),
            int(field("Encoding", 546)),
            int(field("CodedCharSetId", 1208)),
        )
        + fmt.encode(text)
        + struct.pack(order + "ii", int(field("Flags", 0)), nv_ccsid)
    )
    return fixed + folders


def template(header: Element) -> dict[str, str]:
    """The message template named by the ``<mcd>`` folder: domain, set, type, format (those present)."""
    mcd = header.child("mcd")
    out: dict[str, str] = {}
    if mcd is None:
        return out
    for tag, key in (("Msd", "domain"), ("Set", "set"), ("Type", "type"), ("Fmt", "format")):
        kid = mcd.child(tag)
        if kid is not None and kid.value not in (None, ""):
            out[key] = str(kid.value)
    return out


def set_template(header: Element, domain: str, set_: str = "", type_: str = "", fmt: str = "") -> None:
    """Write the body's template into ``<mcd>`` (creating the folder), as an output node does."""
    mcd = header.child("mcd") or header.add("mcd", type=FOLDER)
    for tag, value in (("Msd", domain.lower()), ("Set", set_), ("Type", type_), ("Fmt", fmt)):
        kid = mcd.child(tag)
        if value:
            if kid is None:
                kid = mcd.add(tag, type=xmlcore.FIELD)
            kid.value = value
        elif kid is not None:
            kid.detach()
