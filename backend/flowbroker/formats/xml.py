"""The XML domain of MQSI V2: generic XML without namespace processing (names keep their prefixes)."""

from __future__ import annotations

from typing import Any

from esql.tree import Element

from flowbroker.formats import xmlcore
from flowbroker.formats.xmlcore import ATTRIBUTE, FOLDER


def _qualified(tag: str, nsmap: dict[Any, str]) -> str:
    ns, name = xmlcore.split(tag)
    if not ns:
        return name
    for prefix, uri in nsmap.items():
        if uri == ns and prefix:
            return f"{prefix}:{name}"
    return name


class XmlParser(xmlcore.ContentParser):
    """Element and attribute names keep their prefixes; namespace declarations are attributes."""

    domains: tuple[str, ...] = ("XML",)

    def element(self, parent: Element, node: Any, parent_nsmap: dict[Any, str]) -> Element:
        nsmap = node.nsmap
        prefix = node.prefix
        _, name = xmlcore.split(node.tag)
        el = parent.append_new(Element(f"{prefix}:{name}" if prefix else name, type=FOLDER))
        if nsmap != parent_nsmap:
            for pfx, uri in nsmap.items():
                if parent_nsmap.get(pfx) != uri:
                    el.append_new(Element(f"xmlns:{pfx}" if pfx else "xmlns", uri, type=ATTRIBUTE))
        for key, val in xmlcore.attributes(node, el, "XML"):
            el.append_new(Element(_qualified(key, nsmap), val, type=ATTRIBUTE))
        return el


PARSER = XmlParser()
