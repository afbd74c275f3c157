"""The XML machinery the XMLNSC, XMLNS and XML domains share: a hardened lxml parse and one tree writer."""

from __future__ import annotations

import base64
import datetime
import decimal
import functools
import re
import threading
from collections.abc import Callable
from typing import Any
from xml.parsers import expat

from esql.domains import DomainError, attach_unparsed
from esql.native import compiled
from esql.tree import Element, LazyContent
from lxml import etree

from flowbroker.formats import ccsid as ccsids

FOLDER = 0x01000000
DOCTYPE = 0x01000300
XML_DECL = 0x01000400
VALUE = 0x02000000
CDATA_VALUE = 0x02000001
COMMENT = 0x02000400
PI_VALUE = 0x02000401
FIELD = 0x03000000
CDATA_FIELD = 0x03000001
ATTRIBUTE = 0x03000100
SINGLE_ATTRIBUTE = 0x03000101
NS_DECL = 0x03000102
SINGLE_NS_DECL = 0x03000103
PI_FIELD = 0x03000401

XMLNS_URI = "http://www.w3.org/2000/xmlns/"
_ATTRIBUTE_TYPES = frozenset({ATTRIBUTE, SINGLE_ATTRIBUTE})
_NS_TYPES = frozenset({NS_DECL, SINGLE_NS_DECL})
_TEXT_TYPES = frozenset({VALUE, 0x02000002})
_PI_TYPES = frozenset({PI_VALUE, PI_FIELD})

# lxml parser objects must not be shared between threads: each flow thread gets its own set.
_LOCAL = threading.local()


class _NothingExternal(etree.Resolver):
    """Answers every request for an external resource (a DOCTYPE's SYSTEM DTD) with nothing.

    ACE's XMLNSC ignores a document's DTD; libxml2 would otherwise try to open it (from the
    file system, or refuse the whole document when it is on the network), so a message naming
    its DTD could neither be read nor be kept from reading local files.
    """

    def resolve(self, system_url: str, public_id: str, context: Any) -> Any:
        return self.resolve_string("", context)


def _parser(encoding: str | None, keep_blank: bool) -> etree.XMLParser:
    """A parser that never resolves entities, loads a DTD or touches the network."""
    key = (encoding, keep_blank)
    parsers: dict[tuple[str | None, bool], etree.XMLParser] | None = getattr(_LOCAL, "parsers", None)
    if parsers is None:
        parsers = _LOCAL.parsers = {}
    found = parsers.get(key)
    if found is None:
        found = etree.XMLParser(
            encoding=encoding,
            resolve_entities=False,
            no_network=True,
            load_dtd=False,
            dtd_validation=False,
            huge_tree=False,
            remove_blank_text=not keep_blank,
            strip_cdata=True,
            collect_ids=False,
        )
        found.resolvers.add(_NothingExternal())
        parsers[key] = found
    return found


@functools.cache
def limits() -> tuple[int, int]:
    """Most attributes on one element and most elements in one message (0: no limit), from the settings."""
    from flowbroker.settings import Settings

    settings = Settings()
    return settings.xml_max_attributes, settings.xml_max_elements


#: Up to this many attributes, lxml's own (per-name lookup) accessor is the faster one.
_FEW_ATTRIBUTES = 32


def attributes(node: Any, element: Element, domain: str) -> Any:
    """(Clark name, value) of each attribute of ``node`` in document order, in time linear in their number.

    lxml's ``attrib.items()`` looks each value up by name along the element's attribute list,
    quadratic in the count: 200,000 attributes took minutes. An XPath ``@*`` walks the list once.
    ``element`` is the tree element being built (named in the error past the limit).
    """
    attrib = node.attrib
    count = len(attrib)
    if count <= _FEW_ATTRIBUTES:
        return attrib.items()
    most = limits()[0]
    if most and count > most:
        raise DomainError(
            f"{domain}: element {element.path()} (line {node.sourceline}) has {count} attributes, "
            f"more than the limit of {most} per element (FLOWBROKER_XML_MAX_ATTRIBUTES)",
            domain=domain,
            path=element.path(),
        )
    return [(found.attrname, str(found)) for found in node.xpath("@*")]


def _check_elements(data: bytes, root: Any, domain: str, path: str) -> None:
    most = limits()[1]
    # every element starts with a '<' byte (in UTF-16 too): only a body with more of them is counted
    if most and data.count(b"<") > most:
        count = sum(1 for _ in root.iter(etree.Element))
        if count > most:
            raise DomainError(
                f"{domain}: the message has {count} elements, more than the limit of {most} "
                "per message (FLOWBROKER_XML_MAX_ELEMENTS)",
                domain=domain,
                path=path,
                offset=0,
            )


def line_offset(data: bytes, line: int) -> int:
    """The byte offset where ``line`` (1-based) starts."""
    return _offset(data, line, 1)


def _offset(data: bytes, line: int, column: int) -> int:
    pos = 0
    for _ in range(max(line - 1, 0)):
        nxt = data.find(b"\n", pos)
        if nxt < 0:
            break
        pos = nxt + 1
    return pos + max(column - 1, 0)


def parse(data: bytes, ccsid: int, domain: str, path: str, *, keep_blank: bool = False) -> tuple[Any, str]:
    """Parse ``data`` (in ``ccsid`` unless it starts with a byte-order mark): the lxml root and the text head."""
    if not data.strip():
        raise DomainError(f"{domain}: the message body is empty", domain=domain, path=path, offset=0)
    encoding: str | None
    if data[:2] in (b"\xfe\xff", b"\xff\xfe") or data[:3] == b"\xef\xbb\xbf":
        encoding = None
    else:
        encoding = ccsids.codec(ccsid)
        if encoding.startswith("utf-16"):
            encoding = "utf-16le" if encoding.endswith("le") else "utf-16be"
        elif encoding != "utf-8":
            # libxml2 does not know every code page by Python's name (EBCDIC, DOS, EUC…):
            # transcode to UTF-8 here and tell the parser so.
            try:
                data = data.decode(encoding).encode("utf-8")
            except UnicodeError as exc:
                raise DomainError(f"{domain}: {exc}", domain=domain, path=path) from None
            encoding = "utf-8"
    if b"<!ENTITY" in data:
        # Entity declarations are how XXE and entity expansion attacks start; refuse them outright.
        raise DomainError(
            f"{domain}: DTD entity declarations are not allowed (byte offset {data.find(b'<!ENTITY')})",
            domain=domain,
            path=path,
            offset=data.find(b"<!ENTITY"),
        )
    try:
        root = etree.fromstring(data, _parser(encoding, keep_blank))
    except etree.XMLSyntaxError as exc:
        line, column = exc.position if exc.position else (exc.lineno or 0, 0)
        offset = _offset(data, line, column)
        message = exc.msg or str(exc)
        raise DomainError(
            f"{domain}: malformed XML at line {line}, column {column} (byte offset {offset}): {message}",
            domain=domain,
            path=path,
            offset=offset,
        ) from None
    except (ValueError, LookupError) as exc:
        raise DomainError(f"{domain}: {exc}", domain=domain, path=path, offset=0) from None
    dtd = root.getroottree().docinfo.internalDTD
    if dtd is not None and any(True for _ in dtd.iterentities()):
        raise DomainError(f"{domain}: DTD entity declarations are not allowed", domain=domain, path=path)
    _check_elements(data, root, domain, path)
    return root, _head(data, encoding)


def declaration(head: str, root: Any) -> dict[str, str] | None:
    """The XML declaration's pseudo-attributes, when the document (whose start is ``head``) has one."""
    head = head.lstrip("\ufeff")
    if not head.startswith("<?xml"):
        return None
    info = root.getroottree().docinfo
    out = {"Version": info.xml_version or "1.0"}
    decl = head.split("?>", 1)[0]
    if "encoding" in decl:
        match = re.search(r"encoding\s*=\s*[\"']([^\"']*)", decl)
        out["Encoding"] = match.group(1) if match else (info.encoding or "")
    if "standalone" in decl:
        out["StandAlone"] = "yes" if info.standalone else "no"
    return out


def _head(data: bytes, encoding: str | None) -> str:
    if data[:3] == b"\xef\xbb\xbf":
        return data[3:400].decode("utf-8", "ignore")
    if data[:2] == b"\xfe\xff":
        return data[2:400].decode("utf-16-be", "ignore")
    if data[:2] == b"\xff\xfe":
        return data[2:400].decode("utf-16-le", "ignore")
    return data[:400].decode(encoding or "utf-8", "ignore")


def split(tag: str) -> tuple[str, str]:
    if tag[0] == "{":
        ns, _, name = tag[1:].partition("}")
        return ns, name
    return "", tag


def prolog(root: Any) -> list[Any]:
    """Comments and processing instructions before the document element, in order."""
    return list(reversed(list(root.itersiblings(preceding=True))))


def epilog(root: Any) -> list[Any]:
    return list(root.itersiblings())


# -- writing -------------------------------------------------------------------------------------


def text_of(value: Any) -> str:
    """How a tree value is written as XML character data."""
    kind = type(value)
    if kind is str:
        return value
    if kind is decimal.Decimal or kind is int:
        return str(value)
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | decimal.Decimal):
        return str(value)
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, bytes | bytearray):
        return base64.b16encode(bytes(value)).decode("ascii")
    if isinstance(value, datetime.datetime | datetime.date | datetime.time):
        return value.isoformat()
    return str(value)


def escape_text(text: str) -> str:
    if "&" in text:
        text = text.replace("&", "&amp;")
    if "<" in text:
        text = text.replace("<", "&lt;")
    if ">" in text:
        text = text.replace(">", "&gt;")
    return text


def escape_attr(text: str) -> str:
    text = escape_text(text)
    if '"' in text:
        text = text.replace('"', "&quot;")
    if "\n" in text or "\r" in text or "\t" in text:
        text = text.replace("\n", "&#10;").replace("\r", "&#13;").replace("\t", "&#9;")
    return text


class Writer:
    """Writes an XML-domain subtree as text; ``namespaces`` says whether names carry a namespace URI."""

    def __init__(self, domain: str, namespaces: bool) -> None:
        self.domain = domain
        self.namespaces = namespaces

    def document(self, domain_element: Element) -> str:
        out: list[str] = []
        roots = 0
        for child in domain_element.children():
            kind = child.type
            if kind == XML_DECL:
                out.append(self._declaration(child))
            elif kind == COMMENT:
                out.append(f"<!--{text_of(child.value)}-->")
            elif kind in _PI_TYPES:
                out.append(f"<?{child.name} {text_of(child.value)}?>" if child.value else f"<?{child.name}?>")
            elif kind == DOCTYPE or kind in _ATTRIBUTE_TYPES or kind in _NS_TYPES:
                continue
            elif kind in _TEXT_TYPES and not child.name:
                if child.value is not None and text_of(child.value).strip():
                    raise DomainError(
                        f"{self.domain}: text outside the document element",
                        domain=self.domain,
                        path=child.path(),
                    )
            else:
                roots += 1
                if roots > 1:
                    raise DomainError(
                        f"{self.domain}: an XML document has one root element; found a second, '{child.name}'",
                        domain=self.domain,
                        path=child.path(),
                    )
                native = _write_native
                text = native(child) if native is not None else None
                if text is not None:
                    out.append(text)
                else:
                    self._element(child, out, {"http://www.w3.org/XML/1998/namespace": "xml"}, [0])
        return "".join(out)

    def fragment(self, element: Element) -> str:
        """One element below the domain (ASBITSTREAM of a folder) as an XML fragment."""
        native = _write_native
        text = native(element) if native is not None else None
        if text is not None:
            return text
        out: list[str] = []
        self._element(element, out, {"http://www.w3.org/XML/1998/namespace": "xml"}, [0])
        return "".join(out)

    def _declaration(self, decl: Element) -> str:
        parts = {kid.name.lower(): text_of(kid.value) for kid in decl.children() if kid.value is not None}
        text = f'<?xml version="{parts.get("version", "1.0")}"'
        if "encoding" in parts:
            text += f' encoding="{parts["encoding"]}"'
        if "standalone" in parts:
            text += f' standalone="{parts["standalone"]}"'
        return text + "?>"

    def _qname(
        self, element: Element, scope: dict[str, str], decls: list[str], counter: list[int], attr: bool
    ) -> str:
        ns = element.namespace
        if not ns or not self.namespaces:
            return element.name
        prefix = scope.get(ns)
        if prefix is None or (attr and prefix == ""):
            counter[0] += 1
            prefix = f"NS{counter[0]}"
            scope[ns] = prefix
            decls.append(f' xmlns:{prefix}="{escape_attr(ns)}"')
        return f"{prefix}:{element.name}" if prefix else element.name

    def _check_name(self, element: Element, name: str) -> None:
        """Refuse a name that is no XML element name; remember a good one (up to 10,000), so the
        writer tests each name once."""
        if not kid_names_ok(name):
            raise DomainError(
                f"{self.domain}: '{name}' is not a valid XML element name",
                domain=self.domain,
                path=element.path(),
            )
        if len(_GOOD_NAMES) < 10000:
            _GOOD_NAMES.add(name)

    def _element(self, element: Element, out: list[str], scope: dict[str, str], counter: list[int]) -> None:
        first = element._first if element._lazy is None else element.first_child
        if first is None and (not element.namespace or not self.namespaces):
            # A leaf with no namespace, the bulk of most messages: written without the general machinery.
            name = element.name
            if name not in _GOOD_NAMES:
                self._check_name(element, name)
            value = element.value
            vtype = type(value)
            if (vtype is decimal.Decimal or vtype is int) and element.type != CDATA_FIELD:
                # digits, a sign, a point or an exponent: nothing to escape (and no Decimal == str,
                # which goes through the numbers ABCs); ``!s`` is str(), the same text as the plain
                # ``{value}`` (format with an empty spec) without parsing that spec each time
                out.append(f"<{name}>{value!s}</{name}>")
            elif value is None or (vtype is str and not value) or (vtype is not str and value == ""):
                out.append(f"<{name}/>")
            elif element.type == CDATA_FIELD:
                out.append(f"<{name}><![CDATA[{text_of(value)}]]></{name}>")
            else:
                text = value if type(value) is str else text_of(value)
                out.append(f"<{name}>{escape_text(text)}</{name}>")
            return
        if (
            element.value is None
            and element.name in _GOOD_NAMES
            and (not element.namespace or not self.namespaces)
        ):
            # A folder of plain leaf fields (a repeated record such as an invoice line): written in
            # one pass when every child is a leaf of a known good name holding text or a number;
            # anything else (an attribute, a namespace, a nested folder) takes the general path.
            # Written straight into ``out``; a child that needs the general path takes back what
            # was written of this folder.
            mark = len(out)
            name = element.name
            out.append(f"<{name}>")
            kid = first
            while kid is not None:
                if kid.type != FIELD or kid._first is not None or kid._lazy is not None or kid.namespace:
                    break
                kname = kid.name
                if kname not in _GOOD_NAMES:
                    break
                text = kid.value
                vt = type(text)
                if vt is str:
                    out.append(f"<{kname}>{escape_text(text)}</{kname}>" if text else f"<{kname}/>")
                elif vt is decimal.Decimal or vt is int:
                    out.append(f"<{kname}>{text!s}</{kname}>")
                else:
                    break
                kid = kid.next_sibling
            else:
                out.append(f"</{name}>")
                return
            del out[mark:]
        local_scope = scope
        attrs: list[str] = []
        body: list[Element] = []
        child = first
        while child is not None:
            kind = child.type
            if kind in _NS_TYPES:
                if local_scope is scope:
                    local_scope = dict(scope)
                uri = text_of(child.value)
                if child.name in ("xmlns", ""):
                    local_scope[uri] = ""
                    attrs.append(f' xmlns="{escape_attr(uri)}"')
                else:
                    local_scope[uri] = child.name
                    attrs.append(f' xmlns:{child.name}="{escape_attr(uri)}"')
            elif kind in _ATTRIBUTE_TYPES:
                body.append(child)
            else:
                body.append(child)
            child = child.next_sibling
        decls: list[str] = []
        if local_scope is scope and self.namespaces and element.namespace and element.namespace not in scope:
            local_scope = dict(scope)
        name = self._qname(element, local_scope, decls, counter, False)
        content: list[str] = []
        native = _write_native
        value = element.value
        if value is not None:
            if element.type == CDATA_FIELD:
                content.append(f"<![CDATA[{text_of(value)}]]>")
            elif value != "":
                content.append(escape_text(text_of(value)))
        for kid in body:
            kind = kid.type
            if kind == FIELD and kid._first is None and kid._lazy is None and not kid.namespace:
                # a leaf field of a known good name holding text or a number: written in place
                kname = kid.name
                if kname in _GOOD_NAMES:
                    text = kid.value
                    vt = type(text)
                    if vt is str:
                        content.append(f"<{kname}>{escape_text(text)}</{kname}>" if text else f"<{kname}/>")
                        continue
                    if vt is decimal.Decimal or vt is int:
                        content.append(f"<{kname}>{text!s}</{kname}>")
                        continue
            if kind in _ATTRIBUTE_TYPES:
                if local_scope is scope and self.namespaces and kid.namespace and kid.namespace not in scope:
                    local_scope = dict(scope)
                aname = self._qname(kid, local_scope, decls, counter, True)
                attrs.append(f' {aname}="{escape_attr(text_of(kid.value))}"')
            elif kind in _TEXT_TYPES and not kid.name:
                if kid.value is not None:
                    content.append(escape_text(text_of(kid.value)))
            elif kind == CDATA_VALUE and not kid.name:
                content.append(f"<![CDATA[{text_of(kid.value)}]]>")
            elif kind == COMMENT:
                content.append(f"<!--{text_of(kid.value)}-->")
            elif kind in _PI_TYPES:
                content.append(f"<?{kid.name} {text_of(kid.value)}?>" if kid.value else f"<?{kid.name}?>")
            elif kind == XML_DECL or kind == DOCTYPE:
                continue
            else:
                # a plain part of a subtree that is not plain as a whole (below a namespace
                # declaration, beside a comment): written in C when it can be
                written = native(kid) if native is not None and not kid.namespace else None
                if written is None:
                    self._element(kid, content, local_scope, counter)
                else:
                    content.append(written)
        if name not in _GOOD_NAMES:
            self._check_name(element, name)
        start = "<" + name + "".join(decls) + "".join(attrs)
        if content:
            out.append(start + ">" + "".join(content) + "</" + name + ">")
        else:
            out.append(start + "/>")


_GOOD_NAMES: set[str] = set()


def _write_native_module() -> Callable[[Element], str | None] | None:
    """:meth:`Writer._element` for a plain subtree, in C (``_xmlwrite_native.c``): its text, or None
    for a subtree that is not plain (the Python writer then writes it). Used when that module was
    built and ``FLOWBROKER_PURE_PYTHON`` is not set.

    Every writer may use it: in a subtree with no namespace anywhere, ``namespaces`` changes nothing.
    """
    _xmlwrite_native = compiled("flowbroker.formats._xmlwrite_native")
    if _xmlwrite_native is None:
        return None
    _xmlwrite_native.configure(Element, _GOOD_NAMES, decimal.Decimal)
    write: Callable[[Element], str | None] = _xmlwrite_native.element
    return write


#: What :meth:`Writer.document` and :meth:`Writer.fragment` try first: the C writer, else None.
_write_native = _write_native_module()


def kid_names_ok(name: str) -> bool:
    return bool(name) and not any(ch in name for ch in ' <>&"=/')


def is_folder(element: Element, domains: tuple[str, ...], options: dict[str, Any]) -> bool:
    """Whether ``element`` is a subtree below the domain element rather than the domain element itself."""
    if "folder" in options:
        return bool(options["folder"])
    return element.name.upper() not in domains


def encode(text: str, ccsid: int, domain: str) -> bytes:
    try:
        return text.encode(ccsids.codec(ccsid))
    except UnicodeEncodeError as exc:
        raise DomainError(
            f"{domain}: character {exc.object[exc.start]!r} cannot be written in CCSID {ccsid}",
            domain=domain,
            offset=exc.start,
        ) from None


BuildFn = Callable[[Element, Any], None]


def folder_parser() -> etree.XMLParser:
    """The hardened parser for small header folders (MQRFH2), one per thread."""
    return _parser("utf-8", False)


def cdata_sections(data: bytes, ccsid: int) -> dict[int, list[str]]:
    """The text of each CDATA section, by the document-order number of the element holding it.

    lxml does not say which text came from CDATA, so documents that contain a section get a
    second pass with expat that records only that (lxml has already accepted the document).
    """
    if data[:2] in (b"\xfe\xff", b"\xff\xfe") or data[:3] == b"\xef\xbb\xbf":
        text = data.decode("utf-16" if data[:3] != b"\xef\xbb\xbf" else "utf-8-sig")
    else:
        text = data.decode(ccsids.codec(ccsid), "replace")
    if "<![CDATA[" not in text:
        return {}
    found: dict[int, list[str]] = {}
    stack: list[int] = []
    count = 0
    inside = False

    def start(_name: str, _attrs: Any) -> None:
        nonlocal count
        count += 1
        stack.append(count)

    def begin() -> None:
        nonlocal inside
        inside = True
        if stack:
            found.setdefault(stack[-1], []).append("")

    def finish() -> None:
        nonlocal inside
        inside = False

    def chars(piece: str) -> None:
        if inside and stack:
            found[stack[-1]][-1] += piece

    parser = expat.ParserCreate(encoding="UTF-8")
    parser.StartElementHandler = start
    parser.EndElementHandler = lambda _name: stack.pop()
    parser.StartCdataSectionHandler = begin
    parser.EndCdataSectionHandler = finish
    parser.CharacterDataHandler = chars
    parser.SetParamEntityParsing(expat.XML_PARAM_ENTITY_PARSING_NEVER)
    try:
        parser.Parse(text, True)
    except expat.ExpatError:
        return {}
    return found


def mark_cdata_content(element: Element, data: bytes, ccsid: int) -> None:
    """XMLNS and XML: Content children that are exactly a CDATA section become CDataSection."""
    if b"CDATA" not in data and b"\x00" not in data and not ccsids.is_ebcdic(ccsid):
        return
    sections = cdata_sections(data, ccsid)
    if not sections:
        return
    count = 0
    for node in element.walk():
        if node is element or node.type != FOLDER:
            continue
        count += 1
        texts = sections.get(count)
        if texts:
            for kid in node.children():
                if kid.type == VALUE and not kid.name and kid.value in texts:
                    kid.type = CDATA_VALUE


class ContentParser:
    """The XML and XMLNS domains: text, comments and white space kept as Content children.

    Parses on first read; an untouched subtree serialises as the bytes it came from. The two
    domains differ only in how an element, its namespace declarations and its attributes are
    named (``element``); everything else lives here.
    """

    domains: tuple[str, ...] = ()
    namespaces = False

    def __init__(self) -> None:
        self.domain = self.domains[0]
        self._writer = Writer(self.domain, namespaces=self.namespaces)

    def element(self, parent: Element, node: Any, parent_nsmap: dict[Any, str]) -> Element:
        """Append the element of ``node`` with its namespace declarations and attributes."""
        raise NotImplementedError

    def _build(self, parent: Element, node: Any, parent_nsmap: dict[Any, str]) -> None:
        el = self.element(parent, node, parent_nsmap)
        nsmap = node.nsmap
        if node.text:
            el.append_new(Element("", node.text, type=VALUE))
        for kid in node:
            self._child(el, kid, nsmap)
            if kid.tail:
                el.append_new(Element("", kid.tail, type=VALUE))

    def _child(self, el: Element, kid: Any, nsmap: dict[Any, str]) -> None:
        if isinstance(kid.tag, str):
            self._build(el, kid, nsmap)
        elif kid.tag is etree.Comment:
            el.append_new(Element("", kid.text or "", type=COMMENT))
        elif kid.tag is etree.PI:
            el.append_new(Element(kid.target, kid.text or "", type=PI_FIELD))
        else:
            el.append_new(Element("", kid.text or "", type=VALUE))

    #: parsed on first read, the options kept as given
    attach = attach_unparsed

    def fill(self, element: Element, content: LazyContent) -> None:
        root, head = parse(content.data, content.ccsid, self.domain, element.path(), keep_blank=True)
        decl = declaration(head, root)
        if decl is not None:
            holder = element.add("XmlDecl", type=XML_DECL)
            for key, val in decl.items():
                holder.add("Standalone" if key == "StandAlone" else key, val, type=ATTRIBUTE)
        for node in prolog(root):
            self._child(element, node, {})
        self._build(element, root, {})
        for node in epilog(root):
            self._child(element, node, {})
        mark_cdata_content(element, content.data, content.ccsid)

    def serialize(self, element: Element, *, ccsid: int, encoding: int, options: dict[str, Any]) -> bytes:
        lazy = element.lazy
        if lazy is not None and lazy.ccsid == ccsid:
            return lazy.data
        if is_folder(element, self.domains, options):
            return encode(self._writer.fragment(element), ccsid, self.domain)
        return encode(self._writer.document(element), ccsid, self.domain)
