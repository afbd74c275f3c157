"""The XMLNSC domain: compact, namespace-aware XML where an element's text is its value."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any
from xml.etree import ElementTree

from esql.domains import attach_unparsed
from esql.native import compiled
from esql.tree import Element, LazyContent
from lxml import etree

from flowbroker.formats import ccsid as ccsids
from flowbroker.formats import xmlcore
from flowbroker.formats.xmlcore import (
    ATTRIBUTE,
    CDATA_FIELD,
    COMMENT,
    FIELD,
    FOLDER,
    NS_DECL,
    PI_VALUE,
    VALUE,
    XML_DECL,
    XMLNS_URI,
)

_WRITER = xmlcore.Writer("XMLNSC", namespaces=True)
_new_element = object.__new__
#: Passed down instead of an nsmap when the document declares no namespace (skips lxml's nsmap walk).
_NO_NAMESPACES: dict[Any, str] = {}


def _build(parent: Element, node: Any, parent_nsmap: dict[Any, str], comments: bool, pis: bool) -> None:
    tag = node.tag
    if tag[0] == "{":
        ns, _, name = tag[1:].partition("}")
    else:
        ns, name = "", tag
    el = Element(name, namespace=ns, type=FIELD)
    parent.append_new(el)
    nsmap = node.nsmap if parent_nsmap is not _NO_NAMESPACES else parent_nsmap
    if nsmap != parent_nsmap:
        for prefix, uri in nsmap.items():
            if parent_nsmap.get(prefix) != uri:
                el.append_new(
                    Element(prefix or "xmlns", uri, namespace=XMLNS_URI if prefix else "", type=NS_DECL)
                )
    if node.keys():  # a list of names: cheaper to make than lxml's attribute mapping
        for key, val in xmlcore.attributes(node, el, "XMLNSC"):
            ans, aname = xmlcore.split(key)
            el.append_new(Element(aname, val, namespace=ans, type=ATTRIBUTE))
    text = node.text
    if len(node) == 0:
        el.value = text if text is not None else ""
        return
    el.type = FOLDER
    _fill_folder(el, node, text, nsmap, comments, pis)


def _fill_folder(
    el: Element, node: Any, text: str | None, nsmap: dict[Any, str], comments: bool, pis: bool
) -> None:
    """The children of folder ``el`` from lxml ``node`` (whose text is ``text``)."""
    if text and not text.isspace():
        el.append_new(Element("", text, type=VALUE))
    plain = nsmap is _NO_NAMESPACES
    for kid in node:
        ktag = kid.tag
        if type(ktag) is str:
            if plain and ktag[0] != "{" and not kid.keys():
                # A field with no namespace or attributes, the bulk of most messages: made and
                # linked here, without Element() and append_new's calls (the element is new, the
                # parent being filled); a folder's own children are filled the same way.
                field = _new_element(Element)
                field.name = ktag
                field.namespace = ""
                field._first = field._last = field._lazy = field.next_sibling = None
                last = el._last
                field.parent = el
                field.prev_sibling = last
                if last is None:
                    el._first = field
                else:
                    last.next_sibling = field
                el._last = field
                field_text = kid.text
                if len(kid):
                    field.type = FOLDER
                    field.value = None
                    _fill_folder(field, kid, field_text, nsmap, comments, pis)
                else:
                    field.type = FIELD
                    field.value = field_text if field_text is not None else ""
            else:
                _build(el, kid, nsmap, comments, pis)
        elif ktag is etree.Comment:
            if comments:
                el.append_new(Element("", kid.text or "", type=COMMENT))
        elif ktag is etree.PI:
            if pis:
                el.append_new(Element(kid.target, kid.text or "", type=PI_VALUE))
        else:  # an entity reference left unresolved: keep it as its text
            el.append_new(Element("", kid.text or "", type=VALUE))
        tail = kid.tail
        if tail and not tail.isspace():
            el.append_new(Element("", tail, type=VALUE))


#: The fast path's limits: a larger, deeper or attribute-heavier document is read by lxml, so libxml2's
#: own limits (depth 256, text and name lengths) and the attribute check decide it as before.
_FAST_MAX_BYTES = 1 << 20
_FAST_MAX_DEPTH = 100
_FAST_MAX_ATTRIBUTES = xmlcore._FEW_ATTRIBUTES
_S = "[ \t\n]"
#: The only XML declaration the fast path takes (version 1.0), as :func:`xmlcore.declaration` reads it.
_DECLARATION = re.compile(
    rf"<\?xml{_S}+version{_S}*={_S}*(?:\"1\.0\"|'1\.0')"
    rf"(?:{_S}+encoding{_S}*={_S}*(?:\"([A-Za-z][\w.-]*)\"|'([A-Za-z][\w.-]*)'))?"
    rf"(?:{_S}+standalone{_S}*={_S}*(?:\"(yes|no)\"|'(yes|no)'))?{_S}*\?>",
    re.ASCII,
)


class _NotPlain(Exception):
    """The document is not one the fast path takes whole: lxml reads it instead."""


def _plain_document(data: bytes, ccsid: int) -> bool:
    """Whether ``data`` may be read by :func:`_fill_plain`: UTF-8 in ASCII with no namespace (nor the
    xml prefix), comment, DOCTYPE, CDATA section, entity or character reference, and no PI but an XML
    declaration at the start; within the fast path's size and the element limit."""
    if (
        len(data) > _FAST_MAX_BYTES
        or not data.isascii()
        or b"&" in data
        or b"<!" in data
        or data.find(b"<?", 1) >= 0
        or b"xmlns" in data
        or b"xml:" in data  # the one prefix bound without a declaration (xml:space changes blank text)
        or ccsids.codec(ccsid) != "utf-8"
    ):
        return False
    most = xmlcore.limits()[1]
    return not most or len(data) <= most or data.count(b"<") <= most


def _fill_plain(element: Element, data: bytes) -> bool:
    """Build the tree of a plain document (see :func:`_plain_document`) below ``element`` as the lxml
    walk builds it, from the C ElementTree parser's tree (expat: no per-element proxy objects to make
    as lxml's are); False, with nothing added, for a document this does not take whole (lxml then
    reads it and says what is wrong with it)."""
    declaration: dict[str, str] | None = None
    if data.startswith(b"<?"):
        found = _DECLARATION.match(data[:400].decode("ascii"))
        if found is None:
            return False
        declaration = {"Version": "1.0"}
        encoding = found.group(1) or found.group(2)
        if encoding is not None:
            declaration["Encoding"] = encoding
        standalone = found.group(3) or found.group(4)
        if standalone is not None:
            declaration["StandAlone"] = standalone
    root = _plain_tree(data)
    if root is None:
        return False
    if declaration is not None:
        holder = element.add("XmlDeclaration", type=XML_DECL)
        for key, val in declaration.items():
            holder.add(key, val, type=ATTRIBUTE)
    element.append_new(root)
    return True


def _plain_tree_py(data: bytes) -> Element | None:
    """The document element's tree of a plain document, from the C ElementTree parser's tree; None
    for one this does not take whole."""
    parser = ElementTree.XMLParser(encoding="utf-8")
    try:
        parser.feed(data)
        node = parser.close()
    except ElementTree.ParseError:
        return None
    root = Element(node.tag, type=FIELD)
    try:
        if node.keys():
            _plain_attributes(root, node)
        if len(node) == 0:
            root.value = node.text if node.text is not None else ""
        else:
            root.type = FOLDER
            _fill_plain_folder(root, node, node.text, 1)
    except _NotPlain:
        return None
    return root


def _plain_tree_native() -> Callable[[bytes], Element | None] | None:
    """The same tree built in C straight from expat's callbacks (``_xmlnsc_native.c``), when that
    module was built and ``FLOWBROKER_PURE_PYTHON`` is not set."""
    _xmlnsc_native = compiled("flowbroker.formats._xmlnsc_native")
    if _xmlnsc_native is None:
        return None
    _xmlnsc_native.configure(Element, FOLDER, FIELD, ATTRIBUTE, VALUE, _FAST_MAX_DEPTH, _FAST_MAX_ATTRIBUTES)
    tree: Callable[[bytes], Element | None] = _xmlnsc_native.plain_tree
    return tree


def _plain_attributes(el: Element, node: Any) -> None:
    items = node.items()
    if len(items) > _FAST_MAX_ATTRIBUTES:
        raise _NotPlain
    for key, val in items:
        el.append_new(Element(key, val, type=ATTRIBUTE))


def _fill_plain_folder(el: Element, node: Any, text: str | None, depth: int) -> None:
    """:func:`_fill_folder` for an ElementTree ``node`` of a plain document."""
    if depth > _FAST_MAX_DEPTH:
        raise _NotPlain
    if text and not text.isspace():
        el.append_new(Element("", text, type=VALUE))
    new = _new_element
    for kid in node:
        field = new(Element)
        field.name = kid.tag
        field.namespace = ""
        field._first = field._last = field._lazy = field.next_sibling = None
        last = el._last
        field.parent = el
        field.prev_sibling = last
        if last is None:
            el._first = field
        else:
            last.next_sibling = field
        el._last = field
        if kid.keys():
            _plain_attributes(field, kid)
        field_text = kid.text
        if len(kid):
            field.type = FOLDER
            field.value = None
            _fill_plain_folder(field, kid, field_text, depth + 1)
        else:
            field.type = FIELD
            field.value = field_text if field_text is not None else ""
        tail = kid.tail
        if tail and not tail.isspace():
            el.append_new(Element("", tail, type=VALUE))


#: What :func:`_fill_plain` builds a plain document's tree with: the C module, else the walk above.
_plain_tree = _plain_tree_native() or _plain_tree_py


def _mark_cdata(element: Element, data: bytes, ccsid: int) -> None:
    """Give fields read from CDATA sections the type XMLNSC.CDataField, as ACE does."""
    ordinals = xmlcore.cdata_sections(data, ccsid)
    if not ordinals:
        return
    count = 0
    for node in element.walk():
        if node is element or node.type not in (FIELD, FOLDER):
            continue
        count += 1
        if count in ordinals and node.type == FIELD:
            node.type = CDATA_FIELD


class XmlnscParser:
    """Parses on first read; an untouched subtree serialises as the bytes it came from."""

    domains: tuple[str, ...] = ("XMLNSC",)

    #: parsed on first read, the options kept as given
    attach = attach_unparsed

    def fill(self, element: Element, content: LazyContent) -> None:
        if _plain_document(content.data, content.ccsid) and _fill_plain(element, content.data):
            return
        root, head = xmlcore.parse(content.data, content.ccsid, "XMLNSC", element.path())
        decl = xmlcore.declaration(head, root)
        if decl is not None:
            holder = element.add("XmlDeclaration", type=XML_DECL)
            for key, val in decl.items():
                holder.add(key, val, type=ATTRIBUTE)
        comments = bool(content.options.get("retainComments", False))
        pis = bool(content.options.get("retainPIs", False))
        for node in xmlcore.prolog(root):
            if node.tag is etree.Comment and comments:
                element.add("", node.text or "", type=COMMENT)
            elif node.tag is etree.PI and pis:
                element.add(node.target, node.text or "", type=PI_VALUE)
        data = content.data
        plain = b"xmlns" not in data and b"\x00" not in data and not ccsids.is_ebcdic(content.ccsid)
        _build(element, root, _NO_NAMESPACES if plain else {}, comments, pis)
        if b"CDATA" in data or b"\x00" in data or ccsids.is_ebcdic(content.ccsid):
            _mark_cdata(element, data, content.ccsid)

    def serialize(self, element: Element, *, ccsid: int, encoding: int, options: dict[str, Any]) -> bytes:
        lazy = element.lazy
        if lazy is not None and lazy.ccsid == ccsid:
            return lazy.data
        if xmlcore.is_folder(element, self.domains, options):
            return xmlcore.encode(_WRITER.fragment(element), ccsid, "XMLNSC")
        return xmlcore.encode(_WRITER.document(element), ccsid, "XMLNSC")


PARSER = XmlnscParser()
