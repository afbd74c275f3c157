"""The XMLNSC domain: compact, namespace-aware XML where an element's text is its value."""

from __future__ import annotations

from typing import Any

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

    def attach(
        self, element: Element, data: bytes, *, ccsid: int, encoding: int, options: dict[str, Any]
    ) -> None:
        element.set_lazy(LazyContent(self, bytes(data), ccsid=ccsid, encoding=encoding, options=options))

    def fill(self, element: Element, content: LazyContent) -> None:
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
