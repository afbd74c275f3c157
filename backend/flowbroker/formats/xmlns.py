"""The XMLNS domain: namespace-aware XML with text, comments and white space kept as Content children."""

from __future__ import annotations

from typing import Any

from esql.tree import Element

from flowbroker.formats import xmlcore
from flowbroker.formats.xmlcore import ATTRIBUTE, FOLDER, NS_DECL, XMLNS_URI


class XmlnsParser(xmlcore.ContentParser):
    """Names are local names with their namespace URIs; declarations are NamespaceDecl fields."""

    domains: tuple[str, ...] = ("XMLNS",)
    namespaces = True

    def element(self, parent: Element, node: Any, parent_nsmap: dict[Any, str]) -> Element:
        ns, name = xmlcore.split(node.tag)
        el = parent.append_new(Element(name, namespace=ns, type=FOLDER))
        nsmap = node.nsmap
        if nsmap != parent_nsmap:
            for prefix, uri in nsmap.items():
                if parent_nsmap.get(prefix) != uri:
                    el.append_new(
                        Element(prefix or "xmlns", uri, namespace=XMLNS_URI if prefix else "", type=NS_DECL)
                    )
        for key, val in xmlcore.attributes(node, el, "XMLNS"):
            ans, aname = xmlcore.split(key)
            el.append_new(Element(aname, val, namespace=ans, type=ATTRIBUTE))
        return el


PARSER = XmlnsParser()
