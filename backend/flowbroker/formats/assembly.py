"""The message assembly's Root built from a queue manager message, and a Root turned back into one.

Root holds ``Properties``, ``MQMD``, an optional ``MQRFH2`` and one body-domain element, in that
order. The body's template (domain, set, type, format) comes from the MQRFH2 ``<mcd>`` folder when
there is one, else from the input node's default message template.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import esql.domains
from esql.domains import DomainError
from esql.tree import Element, LazyContent

from flowbroker.formats import load_all, mqmd, rfh2

FOLDER = 0x01000000
#: Header folders: never the body, wherever a flow put them in Root.
HEADER_NAMES = frozenset(
    {
        "Properties",
        "MQMD",
        "MQRFH2",
        "HTTPInputHeader",
        "HTTPReplyHeader",
        "HTTPRequestHeader",
        "HTTPResponseHeader",
    }
)
_TEXT_DOMAINS = frozenset({"XMLNSC", "XMLNS", "XML", "JSON"})


@dataclass
class Template:
    """The message template of seed 004 §1.3: domain, set, type, format."""

    domain: str = "BLOB"
    set: str = ""
    type: str = ""
    format: str = ""


class _PropertiesOfMessage:
    """Fills the Properties folder the first time something reads it: most flows never do, and
    the output side reads the few values it needs straight from the unfilled folder."""

    def fill(self, element: Element, content: LazyContent) -> None:
        for name, value in content.options["values"].items():
            element.append_new(Element(name, value))


_PROPERTIES = _PropertiesOfMessage()


def parser_options(template: Template) -> dict[str, Any]:
    return {"set": template.set, "type": template.type, "format": template.format}


def build_root(
    descriptor: Any,
    body: bytes,
    default: Template | None = None,
    *,
    transactional: bool = True,
    options: dict[str, Any] | None = None,
) -> Element:
    """Root for a message: headers parsed now, the body attached to parse on first read.

    ``transactional`` is whether the flow processes it inside a unit of work (Properties.Transactional);
    ``options`` are further parser options for the body (e.g. XMLNSC's ``retainComments``).
    """
    load_all()
    template = default or Template()
    encoding = int(getattr(descriptor, "encoding", 546))
    ccsid = int(getattr(descriptor, "coded_char_set_id", 1208))
    fmt = str(getattr(descriptor, "format", "") or "")
    root = Element("Root", type=FOLDER)
    # Root and its folders are new: linked without append's detach and parse checks
    properties = root.append_new(Element("Properties", type=FOLDER))
    root.append_new(mqmd.build(descriptor))
    body_encoding, body_ccsid = encoding, ccsid
    header: Element | None = None
    if fmt.strip() == mqmd.FORMAT_RFH2.strip():
        header, body, chosen, (body_encoding, body_ccsid) = rfh2.attach(body, encoding=encoding, ccsid=ccsid)
        root.append(header)
        template = Template(
            domain=chosen.get("domain", template.domain),
            set=chosen.get("set", template.set if "domain" not in chosen else ""),
            type=chosen.get("type", template.type if "domain" not in chosen else ""),
            format=chosen.get("format", template.format if "domain" not in chosen else ""),
        )
    domain = template.domain.upper() or "BLOB"
    if header is not None:
        rfh2.note_effective_template(
            header,
            {"domain": domain.lower(), "set": template.set, "type": template.type, "format": template.format},
        )
    values = {
        "MessageSet": template.set,
        "MessageType": template.type,
        "MessageFormat": template.format,
        "Encoding": body_encoding,
        "CodedCharSetId": body_ccsid,
        "Transactional": transactional,
        "Persistence": getattr(descriptor, "persistence", 0) == 1,
        "Priority": getattr(descriptor, "priority", 0),
        "ReplyIdentifier": getattr(descriptor, "correl_id", b""),
    }
    properties.set_lazy(LazyContent(_PROPERTIES, b"", options={"values": values}))
    parser = esql.domains.get(domain)
    body_element = root.append_new(Element(domain, type=FOLDER))
    parser.attach(
        body_element,
        body,
        ccsid=body_ccsid,
        encoding=body_encoding,
        options={**(options or {}), **parser_options(template)},
    )
    return root


def _property(properties: Element | None, name: str, default: Any) -> Any:
    if properties is None:
        return default
    lazy = properties.lazy
    if lazy is not None and lazy.parser is _PROPERTIES:
        value = lazy.options["values"].get(name)
        return default if value is None else value
    kid = properties.child(name)
    return default if kid is None or kid.value is None else kid.value


def body_element(root: Element) -> Element | None:
    """The body-domain element: the last child of Root that is not a header."""
    node = root.last_child
    while node is not None and node.name in HEADER_NAMES:
        node = node.prev_sibling
    return node


def to_message(root: Element) -> tuple[dict[str, Any], bytes]:
    """(descriptor fields, body bytes) for an output Root; the output template comes from Properties."""
    load_all()
    properties = root.child("Properties")
    fields = mqmd.fields(root.child("MQMD"))
    body_node = body_element(root)
    domain = body_node.name if body_node is not None else "BLOB"
    template = Template(
        domain=domain,
        set=str(_property(properties, "MessageSet", "") or ""),
        type=str(_property(properties, "MessageType", "") or ""),
        format=str(_property(properties, "MessageFormat", "") or ""),
    )
    encoding = int(_property(properties, "Encoding", fields.get("encoding", 546)))
    ccsid = int(_property(properties, "CodedCharSetId", fields.get("coded_char_set_id", 1208)))
    body = b""
    if body_node is not None:
        try:
            parser = esql.domains.get(domain)
        except DomainError:
            raise DomainError(
                f"the last child of Root is '{domain}', which is not a message domain",
                domain=domain,
                path=body_node.path(),
            ) from None
        body = parser.serialize(body_node, ccsid=ccsid, encoding=encoding, options=parser_options(template))
    header = root.child("MQRFH2")
    if header is not None:
        md_encoding = int(fields.get("encoding", 546))
        md_ccsid = int(fields.get("coded_char_set_id", 1208))
        wanted = {
            "domain": domain.lower(),
            "set": template.set,
            "type": template.type,
            "format": template.format,
        }
        untouched = rfh2.original_bytes(header, wanted, (encoding, ccsid), (md_encoding, md_ccsid))
        if untouched is not None and not (domain in _TEXT_DOMAINS and not rfh2.inner_format(header).strip()):
            fields["format"] = mqmd.FORMAT_RFH2
            return fields, untouched + body
        body_lazy = body_node.lazy if body_node is not None else None
        if body_lazy is None or body_lazy.options != parser_options(template):
            # the body is written anew or under another template: <mcd> must say which
            rfh2.set_template(header, domain, template.set, template.type, template.format)
        _set(header, "Encoding", encoding)
        _set(header, "CodedCharSetId", ccsid)
        inner = header.child("Format")
        if domain in _TEXT_DOMAINS and (inner is None or not str(inner.value or "").strip()):
            _set(header, "Format", mqmd.FORMAT_STRING)  # the body after the header is character data
        body = rfh2.serialize(header, encoding=md_encoding, ccsid=md_ccsid) + body
        fields["format"] = mqmd.FORMAT_RFH2
    else:
        fields["encoding"] = encoding
        fields["coded_char_set_id"] = ccsid
        if domain in _TEXT_DOMAINS:
            fields["format"] = mqmd.FORMAT_STRING
    return fields, body


def to_body(root: Element) -> bytes:
    """The body bytes :func:`to_message` gives for ``root``, without building a descriptor.

    For transports that carry no MQMD (MQTT, HTTP, files): only the body's template, encoding and
    CCSID are read. A Root with an MQRFH2 header is written by :func:`to_message`, header included.
    """
    load_all()
    properties: Element | None = None
    md: Element | None = None
    body_node: Element | None = None
    node = root.first_child
    while node is not None:
        name = node.name
        if name == "MQRFH2":
            return to_message(root)[1]
        if name == "Properties":
            if properties is None:
                properties = node
        elif name == "MQMD":
            if md is None:
                md = node
        elif name not in HEADER_NAMES:
            body_node = node
        node = node.next_sibling
    if body_node is None:
        return b""
    domain = body_node.name
    values: dict[str, Any] | None = None
    if properties is not None:
        lazy = properties.lazy
        if lazy is not None and lazy.parser is _PROPERTIES:
            values = lazy.options["values"]  # never read: the input's values, in one dictionary
    if values is not None:
        encoding = values.get("Encoding")
        ccsid = values.get("CodedCharSetId")
        options = {
            "set": str(values.get("MessageSet") or ""),
            "type": str(values.get("MessageType") or ""),
            "format": str(values.get("MessageFormat") or ""),
        }
    else:
        encoding = _property(properties, "Encoding", None)
        ccsid = _property(properties, "CodedCharSetId", None)
        options = {
            "set": str(_property(properties, "MessageSet", "") or ""),
            "type": str(_property(properties, "MessageType", "") or ""),
            "format": str(_property(properties, "MessageFormat", "") or ""),
        }
    if encoding is None or ccsid is None:
        fields = mqmd.fields(md)
        if encoding is None:
            encoding = fields.get("encoding", 546)
        if ccsid is None:
            ccsid = fields.get("coded_char_set_id", 1208)
    try:
        parser = esql.domains.get(domain)
    except DomainError:
        raise DomainError(
            f"the last child of Root is '{domain}', which is not a message domain",
            domain=domain,
            path=body_node.path(),
        ) from None
    return parser.serialize(body_node, ccsid=int(ccsid), encoding=int(encoding), options=options)


def _set(folder: Element, name: str, value: Any) -> None:
    kid = folder.child(name)
    if kid is None:
        folder.prepend(Element(name, value))
    else:
        kid.value = value
