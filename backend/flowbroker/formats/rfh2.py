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
from esql.tree import NAME_VALUE, Element, LazyContent
from lxml import etree

from flowbroker.formats import ccsid as ccsids
from flowbroker.formats import xmlcore

STRUC_ID = "RFH "
FIXED_LENGTH = 36
FOLDER = 0x01000000


def _ints(encoding: int) -> str:
    return "<" if ccsids.integer_order(encoding) == "little" else ">"


def parse(data: bytes, *, encoding: int, ccsid: int) -> tuple[Element, bytes]:
    """Split ``data`` (a body starting with an MQRFH2) into the ``MQRFH2`` folder and what follows.

    Every folder is parsed now, so a malformed one is reported here with its byte offset.
    """
    layout = _layout(data, encoding=encoding, ccsid=ccsid)
    header = Element("MQRFH2", type=FOLDER)
    _fill_header(header, layout, lazy_folders=False)
    return header, data[layout.length :]


class _Layout:
    """The fixed part of a header and where its folders are, found without parsing any folder."""

    __slots__ = ("ccsid", "encoding", "fields", "filled", "fixed", "folders", "length", "raw", "usr")

    def __init__(self) -> None:
        self.fixed: tuple[tuple[str, Any], ...] = ()
        self.folders: list[tuple[str, int]] = []  # (text, byte offset of its first byte)
        self.length = FIXED_LENGTH
        self.encoding = 546
        self.ccsid = 1208
        #: the folders' names and unparsed contents once a header of this layout was filled
        #: without error: the next ones are filled from them, with no check or name read again
        self.filled: tuple[tuple[str, LazyContent], ...] | None = None
        #: the simple fields of the first ``usr`` folder as parsed (see :func:`pristine_usr_fields`)
        self.usr: tuple[tuple[str, Any], ...] | None = None
        #: values of single fields as parsed, by (folder, field) (see :func:`pristine_field`)
        self.fields: dict[tuple[str, str], Any] | None = None
        #: the header's bytes, when the layout is cached by them (:func:`_attached_layout`)
        self.raw: bytes | None = None


def _layout(data: bytes, *, encoding: int, ccsid: int) -> _Layout:
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
    layout = _Layout()
    layout.length, layout.encoding, layout.ccsid = length, enc, ccs
    layout.fixed = (
        ("Version", version),
        ("Format", fmt),
        ("Encoding", enc),
        ("CodedCharSetId", ccs),
        ("Flags", flags),
        ("NameValueCCSID", nv_ccsid),
    )
    try:
        nv_codec = ccsids.codec(nv_ccsid)
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
            folder_text = raw.decode(nv_codec)
        except UnicodeDecodeError as exc:
            raise DomainError(
                f"MQRFH2: folder bytes are not valid in NameValueCCSID {nv_ccsid}: {exc.reason}",
                domain="MQRFH2",
                offset=pos + 4 + exc.start,
            ) from None
        folder_text = folder_text.rstrip(" \x00")
        if folder_text:
            layout.folders.append((folder_text, pos + 4))
        pos += 4 + nv_len
    return layout


def _fill_header(header: Element, layout: _Layout, *, lazy_folders: bool) -> None:
    for name, value in layout.fixed:
        header.append_new(Element(name, value))
    for text, offset in layout.folders:
        if "<!ENTITY" in text or "<!DOCTYPE" in text:
            raise DomainError("MQRFH2: a folder may not declare a DTD", domain="MQRFH2", offset=offset)
        folder_name = _folder_name(text)
        if folder_name is None:
            raise DomainError(
                f"MQRFH2: malformed folder at byte offset {offset}: it does not start with an element",
                domain="MQRFH2",
                offset=offset,
            )
        folder = header.add(folder_name, type=FOLDER)
        if lazy_folders:
            folder.set_lazy(LazyContent(_FOLDER_TEXT, b"", options={"text": text, "offset": offset}))
        else:
            _fill_folder(folder, text, offset)


class _HeaderBytes:
    """Fills an MQRFH2 folder from its bytes the first time something reads it."""

    def content_key(self, content: LazyContent) -> object:
        """What the children :meth:`fill` gives ``content`` depend on alone: its layout, one for
        each header's bytes, encoding and CCSID while it is cached (a Filter that reads only the
        header keeps its answer by this key)."""
        return content.options["layout"]

    def fill(self, element: Element, content: LazyContent) -> None:
        layout: _Layout = content.options["layout"]
        filled = layout.filled
        if filled is None:
            _fill_header(element, layout, lazy_folders=True)
            # checked and named now: later headers of this layout share the folders' contents
            # (unparsed, immutable), as copies of one header do
            kids: list[tuple[str, LazyContent]] = []
            for kid in element.children():
                lazy = kid.lazy
                if lazy is not None and lazy.parser is _FOLDER_TEXT:
                    kids.append((kid.name, lazy))
            layout.filled = tuple(kids)
            return
        for name, value in layout.fixed:
            element.append_new(Element(name, value))
        for name, folder_content in filled:
            folder = element.append_new(Element(name, type=FOLDER))
            folder.set_lazy(folder_content)


class _FolderText:
    """Parses one folder the first time something reads below it; until then it is written
    back as its original text, so a flow that routes on one folder rewrites no other."""

    def fill(self, element: Element, content: LazyContent) -> None:
        _fill_folder(element, content.options["text"], content.options["offset"])


_HEADER_BYTES = _HeaderBytes()
_FOLDER_TEXT = _FolderText()


def attach(
    data: bytes, *, encoding: int, ccsid: int
) -> tuple[Element, bytes, dict[str, str], tuple[int, int]]:
    """The ``MQRFH2`` folder of ``data`` to parse on first read, the body after it, the body's
    template from ``<mcd>``, and the body's (encoding, CCSID).

    The fixed part and the folder lengths are checked now and ``<mcd>`` is read; the other
    folders are parsed when something reads them, and an unread header is written back as its
    original bytes (:func:`original_bytes`).
    """
    layout, found = _attached_layout(data, encoding, ccsid)
    header = Element("MQRFH2", type=FOLDER)
    raw = layout.raw
    length = layout.length
    options = {
        "layout": layout,
        # the cached layout's own copy of these bytes: equal, and sliced once per layout
        "raw": data[:length] if raw is None else raw,
        "template": found,
        "md": (encoding, ccsid),
    }
    # a new element: nothing to drop before its content is set
    header._lazy = LazyContent(_HEADER_BYTES, b"", options=options)
    return header, data[length:], dict(found), (layout.encoding, layout.ccsid)


#: Layouts and <mcd> templates by the header's bytes and the descriptor's encoding and CCSID: a
#: stream of messages nearly always repeats one header, whose layout is then read only once.
_LAYOUT_CACHE: dict[tuple[bytes, int, int], tuple[_Layout, dict[str, str]]] = {}


#: The StrucLength reader for each encoding met.
_LENGTHS: dict[int, struct.Struct] = {}


def _attached_layout(data: bytes, encoding: int, ccsid: int) -> tuple[_Layout, dict[str, str]]:
    if len(data) >= FIXED_LENGTH:
        reader = _LENGTHS.get(encoding)
        if reader is None:
            reader = struct.Struct(_ints(encoding) + "i")
            if len(_LENGTHS) < 64:
                _LENGTHS[encoding] = reader
        (length,) = reader.unpack_from(data, 8)
        if FIXED_LENGTH <= length <= min(len(data), 4096):
            raw = data[:length]
            key = (raw, encoding, ccsid)
            cached = _LAYOUT_CACHE.get(key)
            if cached is not None:
                return cached
            cached = _LAYOUT_CACHE[key] = _read_layout(data, encoding, ccsid)
            cached[0].raw = raw
            if len(_LAYOUT_CACHE) > 512:
                del _LAYOUT_CACHE[next(iter(_LAYOUT_CACHE))]
            return cached
    return _read_layout(data, encoding, ccsid)


def _read_layout(data: bytes, encoding: int, ccsid: int) -> tuple[_Layout, dict[str, str]]:
    layout = _layout(data, encoding=encoding, ccsid=ccsid)
    found: dict[str, str] = {}
    for text, offset in layout.folders:
        if _folder_name(text) == "mcd":
            found = _mcd_template(text, offset)
    return layout, found


def original_bytes(
    header: Element, template_now: dict[str, str], body: tuple[int, int], md: tuple[int, int]
) -> bytes | None:
    """The header's original bytes, if it is unread or still as it was read, and the bytes still
    say what the output needs; else None."""
    lazy = header.lazy
    if lazy is None:
        # read (a filter routing on a folder, say) but perhaps not changed: the original bytes
        # are then a truer copy than the header written anew, and cost no serialising
        lazy = header.source
        if lazy is None or lazy.parser is not _HEADER_BYTES or not _as_parsed(header, lazy.options["layout"]):
            return None
    elif lazy.parser is not _HEADER_BYTES:
        return None
    options = lazy.options
    layout: _Layout = options["layout"]
    if options["md"] != md or (layout.encoding, layout.ccsid) != body:
        return None
    wanted = {key: value for key, value in template_now.items() if value}
    if wanted != options["template"]:
        effective = options.get("effective")
        if effective is None or wanted != {key: value for key, value in effective.items() if value}:
            return None
    return bytes(options["raw"])


def is_as_read(header: Element, content: LazyContent, md: tuple[int, int]) -> bool:
    """Whether ``header`` is the one :func:`attach` made as ``content``, unread or still as it was
    parsed, with the message's descriptor still of encoding and CCSID ``md``."""
    lazy = header.lazy
    if lazy is None:
        if header.source is not content or not _as_parsed(header, content.options["layout"]):
            return False
    elif lazy is not content:
        return False
    return bool(content.options["md"] == md)


def _as_parsed(header: Element, layout: _Layout) -> bool:
    """Whether a filled header's children are exactly those its layout was parsed into."""
    kid = header.first_child
    for name, value in layout.fixed:
        if kid is None:
            return False
        # the usual answer in one comparison: a leaf as parsed (no namespace, no children)
        if (kid.name, kid.namespace, kid.type, kid.value, kid.lazy, kid.first_child) != (
            name,
            "",
            NAME_VALUE,
            value,
            None,
            None,
        ) or type(kid.value) is not type(value):
            if not _same_leaf(kid, name, value):
                return False
        kid = kid.next_sibling
    for text, _offset in layout.folders:
        if kid is None or kid.type != FOLDER or kid.namespace or kid.value is not None:
            return False
        lazy = kid.lazy
        if lazy is not None:
            if lazy.parser is not _FOLDER_TEXT or lazy.options["text"] != text:
                return False
        else:
            parsed = _FOLDER_CACHE.get(text)
            if parsed is None or kid.name != parsed.name or not _same_children(kid, parsed):
                return False
        kid = kid.next_sibling
    return kid is None


def pristine_usr_fields(header: Element) -> tuple[tuple[str, Any], ...] | None:
    """The simple fields (name, value) of the first ``usr`` folder of ``header`` as its bytes
    parse, in order; None when the header was not made from bytes here.

    For a header that is unread or still as it was parsed (:func:`is_as_read` says so): its
    fields are then those of the parse, worked out once for each layout instead of read from the
    header of every message. A header whose folders do not parse raises the error reading them
    gives, every time.
    """
    content = header.lazy or header.source
    if content is None or content.parser is not _HEADER_BYTES:
        return None
    layout: _Layout = content.options["layout"]
    fields = layout.usr
    if fields is None:
        fields = layout.usr = usr_fields(_unread_header(layout))
    return fields


def _unread_header(layout: _Layout) -> Element:
    """A header of ``layout`` of its own, unread: what reading it gives is what any header of the
    layout gives as its bytes parse."""
    header = Element("MQRFH2", type=FOLDER)
    header.set_lazy(LazyContent(_HEADER_BYTES, b"", options={"layout": layout}))
    return header


#: What :func:`pristine_field` gives for a header that is not unread bytes of this module.
NOT_PRISTINE: Any = object()


def pristine_field(header: Element, folder: str, name: str) -> Any:
    """The value of the first ``name`` field of the first ``folder`` folder of an unread header,
    as its bytes parse (None: no such field), without filling the header; :data:`NOT_PRISTINE`
    when the header was read or not made from bytes here.

    Worked out once for each header layout (a stream of messages repeats one header), so a node
    that only looks up a field (a Publication's ``<psc><Topic>``) leaves the header unread and
    the message relayed as its bytes. A header whose folders do not parse raises the error
    reading them gives, every time.
    """
    content = header.lazy
    if content is None or content.parser is not _HEADER_BYTES:
        return NOT_PRISTINE
    layout: _Layout = content.options["layout"]
    fields = layout.fields
    if fields is None:
        fields = layout.fields = {}
    key = (folder, name)
    try:
        return fields[key]
    except KeyError:
        pass
    found = _unread_header(layout).child(folder)
    found = found.child(name) if found is not None else None
    value = found.value if found is not None else None
    if len(fields) < 64:  # the keys come from the nodes of the flows, not from messages
        fields[key] = value
    return value


def usr_fields(header: Element) -> tuple[tuple[str, Any], ...]:
    """The simple fields (name, value) of the header's first ``usr`` folder, in order: its
    children with no children of their own and a string, number or boolean value."""
    usr = header.child("usr")
    if usr is None:
        return ()
    return tuple(
        (kid.name, kid.value)
        for kid in usr.children()
        if kid.first_child is None and isinstance(kid.value, str | int | float | bool)
    )


def _same_leaf(kid: Element, name: str, value: Any) -> bool:
    return (
        kid.name == name
        and not kid.namespace
        and kid.type == NAME_VALUE
        and type(kid.value) is type(value)
        and kid.value == value
        and not kid.has_children()
    )


def _same_children(element: Element, parsed: Element) -> bool:
    mine, theirs = element.first_child, parsed.first_child
    while mine is not None and theirs is not None:
        if (
            mine.name != theirs.name
            or mine.namespace != theirs.namespace
            or mine.type != theirs.type
            or type(mine.value) is not type(theirs.value)
            or mine.value != theirs.value
            or not _same_children(mine, theirs)
        ):
            return False
        mine, theirs = mine.next_sibling, theirs.next_sibling
    return mine is None and theirs is None


def note_effective_template(header: Element, template_in: dict[str, str]) -> None:
    """Record the template the body was parsed with (``<mcd>`` or the input node's default): an
    output that keeps it leaves the header's bytes as they came, adding no ``<mcd>`` of its own."""
    lazy = header.lazy
    if lazy is not None and lazy.parser is _HEADER_BYTES:
        # kept as given (build_root makes it for this header alone): only a header written out
        # compares it, without its empty values (:func:`original_bytes`)
        lazy.options["effective"] = template_in


def inner_format(header: Element) -> str:
    """The header's Format field (the format of what follows it), read without filling the header."""
    lazy = header.lazy
    if lazy is not None and lazy.parser is _HEADER_BYTES:
        return str(dict(lazy.options["layout"].fixed)["Format"])
    kid = header.child("Format")
    return "" if kid is None or kid.value is None else str(kid.value)


#: Templates by the text of their <mcd> folder: a stream of messages nearly always repeats one.
_MCD_CACHE: dict[str, dict[str, str]] = {}


def _mcd_template(text: str, offset: int) -> dict[str, str]:
    cached = _MCD_CACHE.get(text)
    if cached is None:
        if "<!ENTITY" in text or "<!DOCTYPE" in text:
            raise DomainError("MQRFH2: a folder may not declare a DTD", domain="MQRFH2", offset=offset)
        probe = Element("MQRFH2", type=FOLDER)
        _fill_folder(probe.add("mcd", type=FOLDER), text, offset)
        cached = template(probe)
        if len(_MCD_CACHE) < 512:
            _MCD_CACHE[text] = cached
    return dict(cached)


def _folder_name(text: str) -> str | None:
    """The folder's element name, read off its start tag without parsing it."""
    if not text.startswith("<") or text.startswith("<?") or text.startswith("<!"):
        return None
    end = 1
    while end < len(text) and text[end] not in " \t\r\n/>":
        end += 1
    name: str = text[1:end]
    return name if name and name.isprintable() else None


#: Parsed folders by their text: the <mcd> of a stream of messages is nearly always the same.
_FOLDER_CACHE: dict[str, Element] = {}


def _fill_folder(folder: Element, text: str, offset: int) -> None:
    cached = _FOLDER_CACHE.get(text)
    if cached is not None:
        folder.copy_children_from(cached)
        return
    try:
        root = etree.fromstring(text.encode("utf-8"), xmlcore.folder_parser())
    except etree.XMLSyntaxError as exc:
        raise DomainError(
            f"MQRFH2: malformed folder at byte offset {offset}: {exc.msg}", domain="MQRFH2", offset=offset
        ) from None
    if root.tag != folder.name:
        raise DomainError(
            f"MQRFH2: malformed folder at byte offset {offset}: its element is <{root.tag}>",
            domain="MQRFH2",
            offset=offset,
        )
    _fill(folder, root)
    if len(_FOLDER_CACHE) < 512:
        _FOLDER_CACHE[text] = folder.copy()


def _folder_text(element: Element) -> str:
    """A folder's XML: its original text while nobody has read below it, else written anew."""
    lazy = element.lazy
    if lazy is not None and lazy.parser is _FOLDER_TEXT:
        return str(lazy.options["text"])
    return _folder_xml(element)


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
    attrs: list[str] = []
    inner: list[str] = []
    kid = element.first_child
    while kid is not None:
        if kid.type == xmlcore.ATTRIBUTE:
            attrs.append(f' {kid.name}="{xmlcore.escape_attr(xmlcore.text_of(kid.value))}"')
        elif kid.first_child is None and kid.type != FOLDER:
            # a leaf, the bulk of a folder: written without a call of its own
            value = kid.value
            text = "" if value is None else xmlcore.escape_text(xmlcore.text_of(value))
            inner.append(f"<{kid.name}>{text}</{kid.name}>")
        else:
            inner.append(_folder_xml(kid))
        kid = kid.next_sibling
    name = element.name
    if not inner and element.value is not None:
        return f"<{name}{''.join(attrs)}>{xmlcore.escape_text(xmlcore.text_of(element.value))}</{name}>"
    return f"<{name}{''.join(attrs)}>{''.join(inner)}</{name}>"


_FIXED_NAMES = frozenset(
    {"Version", "Format", "Encoding", "CodedCharSetId", "Flags", "NameValueCCSID", "StrucLength"}
)


def serialize(header: Element, *, encoding: int, ccsid: int) -> bytes:
    """The header's bytes (integers in ``encoding``, StrucId and Format in ``ccsid``)."""
    order = _ints(encoding)
    text = ccsids.codec(ccsid)
    fixed_values: dict[str, Any] = {}
    folders_in: list[Element] = []
    kid = header.first_child  # one pass: the fixed fields by name, the folders in order
    while kid is not None:
        if kid.name in _FIXED_NAMES and not kid.has_children():
            fixed_values.setdefault(kid.name, kid.value)
        else:
            folders_in.append(kid)
        kid = kid.next_sibling

    def field(name: str, default: Any) -> Any:
        value = fixed_values.get(name)
        return default if value is None else value

    nv_ccsid = int(field("NameValueCCSID", 1208))
    nv_codec = ccsids.codec(nv_ccsid)
    length_of = struct.Struct(order + "i").pack
    parts: list[bytes] = []
    for folder in folders_in:
        raw = _folder_text(folder).encode(nv_codec)
        raw += b" " * (-len(raw) % 4)
        parts.append(length_of(len(raw)))
        parts.append(raw)
    folders = b"".join(parts)
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
    wanted = {"domain": domain.lower(), "set": set_, "type": type_, "format": fmt}
    if template(header) == {key: value for key, value in wanted.items() if value}:
        return  # it says so already: the folder keeps its original text
    mcd = header.child("mcd") or header.add("mcd", type=FOLDER)
    for tag, value in (("Msd", domain.lower()), ("Set", set_), ("Type", type_), ("Fmt", fmt)):
        kid = mcd.child(tag)
        if value:
            if kid is None:
                kid = mcd.add(tag, type=xmlcore.FIELD)
            kid.value = value
        elif kid is not None:
            kid.detach()
