"""The XML domain of MQSI V2: generic XML without namespace processing (names keep their prefixes)."""

from __future__ import annotations

from typing import Any

from esql.tree import Element, LazyContent
from lxml import etree

from flowbroker.formats import xmlcore
from flowbroker.formats.xmlcore import ATTRIBUTE, COMMENT, FOLDER, PI_FIELD, VALUE, XML_DECL

_WRITER = xmlcore.Writer("XML", namespaces=False)


def _qualified(tag: str, nsmap: dict[Any, str]) -> str:
    ns, name = xmlcore.split(tag)
    if not ns:
        return name
    for prefix, uri in nsmap.items():
        if uri == ns and prefix:
            return f"{prefix}:{name}"
    return name


def _build(parent: Element, node: Any, parent_nsmap: dict[Any, str]) -> None:
    nsmap = node.nsmap
    prefix = node.prefix
    ns, name = xmlcore.split(node.tag)
    el = parent.append_new(Element(f"{prefix}:{name}" if prefix else name, type=FOLDER))
    if nsmap != parent_nsmap:
        for pfx, uri in nsmap.items():
            if parent_nsmap.get(pfx) != uri:
                el.append_new(Element(f"xmlns:{pfx}" if pfx else "xmlns", uri, type=ATTRIBUTE))
    for key, val in xmlcore.attributes(node, el, "XML"):
        el.append_new(Element(_qualified(key, nsmap), val, type=ATTRIBUTE))
    if node.text:
        el.append_new(Element("", node.text, type=VALUE))
    for kid in node:
        _child(el, kid, nsmap)
        if kid.tail:
            el.append_new(Element("", kid.tail, type=VALUE))


def _child(el: Element, kid: Any, nsmap: dict[Any, str]) -> None:
    if isinstance(kid.tag, str):
        _build(el, kid, nsmap)
    elif kid.tag is etree.Comment:
        el.append_new(Element("", kid.text or "", type=COMMENT))
    elif kid.tag is etree.PI:
        el.append_new(Element(kid.target, kid.text or "", type=PI_FIELD))
    else:
        el.append_new(Element("", kid.text or "", type=VALUE))


class XmlParser:
    """Parses on first read; an untouched subtree serialises as the bytes it came from."""

    domains: tuple[str, ...] = ("XML",)

    def attach(
        self, element: Element, data: bytes, *, ccsid: int, encoding: int, options: dict[str, Any]
    ) -> None:
        element.set_lazy(LazyContent(self, bytes(data), ccsid=ccsid, encoding=encoding, options=options))

    def fill(self, element: Element, content: LazyContent) -> None:
        root, head = xmlcore.parse(content.data, content.ccsid, "XML", element.path(), keep_blank=True)
        decl = xmlcore.declaration(head, root)
        if decl is not None:
            holder = element.add("XmlDecl", type=XML_DECL)
            for key, val in decl.items():
                holder.add("Standalone" if key == "StandAlone" else key, val, type=ATTRIBUTE)
        for node in xmlcore.prolog(root):
            _child(element, node, {})
        _build(element, root, {})
        for node in xmlcore.epilog(root):
            _child(element, node, {})
        xmlcore.mark_cdata_content(element, content.data, content.ccsid)

    def serialize(self, element: Element, *, ccsid: int, encoding: int, options: dict[str, Any]) -> bytes:
        lazy = element.lazy
        if lazy is not None and lazy.ccsid == ccsid:
            return lazy.data
        if xmlcore.is_folder(element, self.domains, options):
            return xmlcore.encode(_WRITER.fragment(element), ccsid, "XML")
        return xmlcore.encode(_WRITER.document(element), ccsid, "XML")


PARSER = XmlParser()
