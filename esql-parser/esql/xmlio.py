"""A small XML/JSON/BLOB reader and writer for ``flowbroker esql run`` and the language tests.

It turns a document into the body of a message tree (``Root.XMLNSC.…``, ``Root.JSON.Data.…``,
``Root.BLOB.BLOB``) and back; the format converters replace it for real flows. External
entities and DTD loading are disabled.
"""

from __future__ import annotations

import datetime
import json
from decimal import Decimal
from typing import Any

from lxml import etree

from esql.runtime import ATTRIBUTE, ATTRIBUTE_TYPES, FIELD, FOLDER, JSON_ARRAY, NAMESPACE_DECL, VALUE_TYPE
from esql.tree import Element

XML_DOMAINS = ("XMLNSC", "XMLNS", "XML")


class DocumentError(ValueError):
    """An input document that cannot be read, with the line and column where it failed."""

    def __init__(self, message: str, line: int | None = None, column: int | None = None) -> None:
        where = f" at line {line}, column {column}" if line is not None else ""
        super().__init__(f"{message}{where}")
        self.line = line
        self.column = column


def read_message(data: bytes, domain: str) -> Element:
    """A message tree ``Root`` with Properties and one body element of ``domain``."""
    domain = domain.upper()
    root = Element("Root")
    props = root.add("Properties", type=FOLDER)
    props.add("MessageDomain", domain)
    props.add("CodedCharSetId", 1208)
    body = root.add(domain, type=FOLDER)
    if domain in XML_DOMAINS:
        read_xml_into(body, data)
    elif domain == "JSON":
        read_json_into(body, data)
    elif domain == "BLOB":
        body.add("BLOB", bytes(data))
    else:
        raise DocumentError(f"unknown domain '{domain}' (XMLNSC, XML, XMLNS, JSON or BLOB)")
    return root


def read_xml_into(body: Element, data: bytes) -> None:
    parser = etree.XMLParser(resolve_entities=False, no_network=True, load_dtd=False, remove_comments=True)
    try:
        doc = etree.fromstring(data, parser)
    except etree.XMLSyntaxError as exc:
        line, col = exc.position if exc.position else (None, None)
        raise DocumentError(f"malformed XML: {exc.msg}", line, col) from None
    _xml_element(body, doc, {})


def _xml_element(parent: Element, node: Any, in_scope: dict[str | None, str]) -> None:
    qname = etree.QName(node)
    elem = parent.add(qname.localname, namespace=qname.namespace or "", type=FOLDER)
    for prefix, uri in node.nsmap.items():
        if in_scope.get(prefix) != uri:
            elem.add(prefix or "xmlns", uri, namespace="" if prefix is None else "xmlns", type=NAMESPACE_DECL)
    # XPath walks the attribute list once; attrib.items() looks each value up by name (quadratic)
    found = (
        node.attrib.items() if len(node.attrib) <= 32 else [(a.attrname, str(a)) for a in node.xpath("@*")]
    )
    for key, value in found:
        aq = etree.QName(key)
        elem.add(aq.localname, value, namespace=aq.namespace or "", type=ATTRIBUTE)
    children = [c for c in node if isinstance(c.tag, str)]
    if not children:
        if node.text is not None:
            elem.value = node.text
        elem.type = FIELD if not any(c.type in ATTRIBUTE_TYPES for c in elem.children()) else FOLDER
        if elem.type == FOLDER and node.text:
            elem.value = node.text
        return
    if node.text and node.text.strip():
        elem.add("", node.text, type=VALUE_TYPE)
    scope = dict(in_scope)
    scope.update(node.nsmap)
    for child in children:
        _xml_element(elem, child, scope)
        if child.tail and child.tail.strip():
            elem.add("", child.tail, type=VALUE_TYPE)


def text_of(value: Any) -> str:
    """How a field value is written into a document."""
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, bytes):
        return value.hex().upper()
    if isinstance(value, (datetime.date, datetime.time)):
        return value.isoformat()
    return str(value)


def write_xml(body: Element) -> bytes:
    """The XML document of a domain element (its element children; the first is the root)."""
    roots = [c for c in body.children() if c.type not in ATTRIBUTE_TYPES and c.name]
    if not roots:
        return b""
    if len(roots) > 1:
        raise DocumentError(f"the {body.name} body has {len(roots)} root elements; XML allows one")
    node = _xml_build(roots[0], None, {})
    return etree.tostring(node, encoding="utf-8")  # type: ignore[no-any-return]


def _xml_build(elem: Element, parent: Any, nsmap: dict[str, str]) -> Any:
    decls: dict[str | None, str] = {}
    for child in elem.children():
        if child.type in (NAMESPACE_DECL, NAMESPACE_DECL + 1):
            prefix = (
                None
                if child.name == "xmlns" and child.namespace in ("", "xmlns") and child.namespace != "xmlns"
                else child.name
            )
            decls[prefix] = text_of(child.value)
    tag = f"{{{elem.namespace}}}{elem.name}" if elem.namespace else elem.name
    if parent is None:
        node = etree.Element(tag, nsmap=decls or None)
    else:
        node = etree.SubElement(parent, tag, nsmap=decls or None)
    if elem.value is not None:
        node.text = text_of(elem.value)
    last: Any = None
    for child in elem.children():
        if child.type in (NAMESPACE_DECL, NAMESPACE_DECL + 1):
            continue
        if child.type in ATTRIBUTE_TYPES:
            key = f"{{{child.namespace}}}{child.name}" if child.namespace else child.name
            node.set(key, "" if child.value is None else text_of(child.value))
        elif not child.name:
            text = "" if child.value is None else text_of(child.value)
            if last is None:
                node.text = (node.text or "") + text
            else:
                last.tail = (last.tail or "") + text
        else:
            last = _xml_build(child, node, nsmap)
    return node


def read_json_into(body: Element, data: bytes) -> None:
    try:
        doc = json.loads(data.decode("utf-8"), parse_float=Decimal)
    except UnicodeDecodeError as exc:
        raise DocumentError(f"JSON is not UTF-8 (byte offset {exc.start})") from None
    except json.JSONDecodeError as exc:
        raise DocumentError(f"malformed JSON: {exc.msg}", exc.lineno, exc.colno) from None
    _json_value(body, "Data", doc)


def _json_value(parent: Element, name: str, value: Any) -> None:
    if isinstance(value, dict):
        elem = parent.add(name, type=FOLDER)
        for key, item in value.items():
            _json_value(elem, key, item)
    elif isinstance(value, list):
        elem = parent.add(name, type=JSON_ARRAY)
        for item in value:
            _json_value(elem, "Item", item)
    else:
        parent.add(name, value, type=FIELD)


def write_json(body: Element) -> bytes:
    data = body.child("Data")
    if data is None:
        return b""
    return json.dumps(_json_out(data), default=_json_default, ensure_ascii=False).encode("utf-8")


def _json_out(elem: Element) -> Any:
    if elem.type == JSON_ARRAY:
        return [_json_out(c) for c in elem.children()]
    if not elem.has_children():
        return elem.value
    out: dict[str, Any] = {}
    for child in elem.children():
        out[child.name] = _json_out(child)
    return out


def _json_default(value: Any) -> Any:
    if isinstance(value, Decimal):
        return float(value) if value != value.to_integral_value() else int(value)
    if isinstance(value, bytes):
        return value.hex().upper()
    return text_of(value)


def write_message(root: Element) -> bytes:
    """The bytes of a message tree's body, by the domain of its last child."""
    body = root.last_child
    if body is None or body.name == "Properties":
        return b""
    domain = body.name.upper()
    if domain in XML_DOMAINS:
        return write_xml(body)
    if domain == "JSON":
        return write_json(body)
    if domain == "BLOB":
        blob = body.child("BLOB")
        value = blob.value if blob is not None else None
        if isinstance(value, str):
            return value.encode("utf-8")
        return bytes(value or b"")
    return body.dump().encode("utf-8")


__all__ = ["ATTRIBUTE", "DocumentError", "read_message", "write_message", "write_xml", "write_json"]
