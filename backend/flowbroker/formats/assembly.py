"""The message assembly's Root built from a queue manager message, and a Root turned back into one.

Root holds ``Properties``, ``MQMD``, an optional ``MQRFH2`` and one body-domain element, in that
order. The body's template (domain, set, type, format) comes from the MQRFH2 ``<mcd>`` folder when
there is one, else from the input node's default message template.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import esql.domains
from esql.domains import DomainError
from esql.native import compiled
from esql.tree import Element, LazyContent

import flowbroker.formats
from flowbroker.formats import ensure_loaded, mqmd, rfh2

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
_RFH2_FORMAT = mqmd.FORMAT_RFH2.strip()


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


class Relay:
    """What an untouched Root needs to be put again as the message it was built from.

    Kept in the options of the MQMD folder's unparsed content, so a copy of an unread MQMD (a
    Compute node's ``SET OutputRoot = InputRoot``) carries it; the other parts are recognised
    by the identity of their unparsed content, which only copies that were never read share.
    """

    __slots__ = ("body", "domain", "format", "header", "message", "properties", "template")

    #: the unparsed content of the message's MQRFH2 folder (None: the message has none)
    header: LazyContent | None

    def __init__(
        self,
        message: Any,
        properties: LazyContent,
        body: LazyContent | None,
        domain: str,
        header: LazyContent | None,
        template: Template,
        format: str | None,
    ) -> None:
        #: the MQMD Format :func:`to_message` writes for this Root (None: the message's own)
        self.format = format
        self.message = message
        self.properties = properties
        self.body = body
        self.domain = domain
        self.header = header
        self.template = template


def parser_options(template: Template) -> dict[str, Any]:
    return {"set": template.set, "type": template.type, "format": template.format}


#: What :func:`build_root` works out from a template once: (the template, the body domain, the
#: body parser's options, the MQMD Format a relayed message is put with). Keyed by the template's
#: identity: an input node's template is made once and never changed (``runtime.assembly.template_of``).
_PLANS: dict[int, tuple[Template, str, dict[str, Any], str | None]] = {}


def _plan(template: Template) -> tuple[Template, str, dict[str, Any], str | None]:
    found = _PLANS.get(id(template))
    if found is None or found[0] is not template:
        domain = template.domain.upper() or "BLOB"
        out_format = mqmd.FORMAT_STRING if domain in _TEXT_DOMAINS else None
        # the options are shared by every body attached under this template: never changed
        found = (template, domain, parser_options(template), out_format)
        if len(_PLANS) >= 256:
            _PLANS.clear()
        _PLANS[id(template)] = found
    return found


def build_root(
    descriptor: Any,
    body: bytes,
    default: Template | None = None,
    *,
    transactional: bool = True,
    options: dict[str, Any] | None = None,
    relay: Any = None,
) -> Element:
    """Root for a message: headers parsed now, the body attached to parse on first read.

    ``transactional`` is whether the flow processes it inside a unit of work (Properties.Transactional);
    ``options`` are further parser options for the body (e.g. XMLNSC's ``retainComments``);
    ``relay`` is the message itself when it can be put again as its bytes (:func:`relay_of`).
    """
    fmt = getattr(descriptor, "format", "")
    if default is not None and options is None and type(fmt) is str and _RFH2_FORMAT not in fmt:
        if _native_plain_root is not None:
            root = _native_plain_root(descriptor, body, default, transactional, relay)
            if root is not None:
                return root
        return _plain_root(descriptor, body, default, transactional, relay)
    ensure_loaded()
    template = default or Template()
    encoding = int(getattr(descriptor, "encoding", 546))
    ccsid = int(getattr(descriptor, "coded_char_set_id", 1208))
    fmt = str(getattr(descriptor, "format", "") or "")
    root = Element("Root", type=FOLDER)
    # Root and its folders are new: linked without append's detach and parse checks
    properties = root.append_new(Element("Properties", type=FOLDER))
    md_folder = mqmd.build(descriptor)
    root.append_new(md_folder)
    body_encoding, body_ccsid = encoding, ccsid
    header: Element | None = None
    if fmt.strip() == _RFH2_FORMAT:
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
    template_options = parser_options(template)
    # "written": what to_body reads of these values while the folder is unread (they never change
    # then), worked out here once instead of from the values each time the body is written
    properties_content = LazyContent(
        _PROPERTIES, b"", options={"values": values, "written": (body_encoding, body_ccsid, template_options)}
    )
    properties.set_lazy(properties_content)
    parser = esql.domains.get(domain)
    body_element = root.append_new(Element(domain, type=FOLDER))
    parser.attach(
        body_element,
        body,
        ccsid=body_ccsid,
        encoding=body_encoding,
        options={**options, **template_options} if options else template_options,
    )
    if header is not None and domain in _TEXT_DOMAINS and not rfh2.inner_format(header).strip():
        relay = None  # written out, its header then says the body after it is character data
    if relay is not None:
        content = md_folder.lazy
        if content is not None:
            if header is not None:
                out_format: str | None = mqmd.FORMAT_RFH2
            else:
                out_format = mqmd.FORMAT_STRING if domain in _TEXT_DOMAINS else None
            content.options["relay"] = Relay(
                relay,
                properties_content,
                body_element.lazy,
                domain,
                header.lazy if header is not None else None,
                template,
                out_format,
            )
    return root


def _plain_root(descriptor: Any, body: bytes, template: Template, transactional: bool, relay: Any) -> Element:
    """:func:`build_root` of a message with no MQRFH2 under an input node's template: the same
    Root, with what the template decides worked out once (every message of the node's is one)."""
    ensure_loaded()
    _, domain, template_options, out_format = _plan(template)
    encoding = int(getattr(descriptor, "encoding", 546))
    ccsid = int(getattr(descriptor, "coded_char_set_id", 1208))
    parser = esql.domains.get(domain)
    root = Element("Root", type=FOLDER)
    # Root and its folders are new: linked without append's detach and parse checks, their
    # unparsed content set directly (a new element has no children to drop)
    properties = root.append_new(Element("Properties", type=FOLDER))
    values = {
        "MessageSet": template.set,
        "MessageType": template.type,
        "MessageFormat": template.format,
        "Encoding": encoding,
        "CodedCharSetId": ccsid,
        "Transactional": transactional,
        "Persistence": getattr(descriptor, "persistence", 0) == 1,
        "Priority": getattr(descriptor, "priority", 0),
        "ReplyIdentifier": getattr(descriptor, "correl_id", b""),
    }
    properties_content = LazyContent(
        _PROPERTIES, b"", options={"values": values, "written": (encoding, ccsid, template_options)}
    )
    properties._lazy = properties_content
    md_folder = root.append_new(mqmd.build(descriptor))
    body_element = root.append_new(Element(domain, type=FOLDER))
    parser.attach(body_element, body, ccsid=ccsid, encoding=encoding, options=template_options)
    if relay is not None:
        content = md_folder._lazy
        if content is not None:
            content.options["relay"] = Relay(
                relay, properties_content, body_element._lazy, domain, None, template, out_format
            )
    return root


def _plain_root_native() -> Callable[[Any, bytes, Template, bool, Any], Element | None] | None:
    """:func:`_plain_root` in C (``_assembly_native.c``), when that module was built: the same Root,
    or None for a message it does not take whole (then :func:`_plain_root` builds it, and raises
    what it raises). It finds each message's parser in the domain registry, so a parser registered
    again is the one used, and makes the body's content itself only for a parser whose ``attach`` is
    ``esql.domains.attach_unparsed``."""
    _assembly_native = compiled("flowbroker.formats._assembly_native")
    if _assembly_native is None:
        return None
    try:
        _assembly_native.configure(
            Element,
            LazyContent,
            Relay,
            FOLDER,
            _PROPERTIES,
            mqmd._FILLER,
            esql.domains._PARSERS,
            esql.domains.attach_unparsed,
            _plan,
            vars(flowbroker.formats),
        )
    except TypeError:  # a class whose slots are not plain object slots: the Python code builds it
        return None
    plain: Callable[[Any, bytes, Template, bool, Any], Element | None] = _assembly_native.plain_root
    return plain


_native_plain_root = _plain_root_native()


def _own_headers(root: Element) -> tuple[Relay, LazyContent, Element] | None:
    """(the :class:`Relay`, the MQMD's unparsed content, the MQMD folder) of a Root that begins with
    the unread Properties and MQMD of the message it was built from; else None."""
    kid = root.first_child
    if kid is None or kid.name != "Properties" or kid.value is not None:
        return None
    properties_content = kid.lazy
    kid = kid.next_sibling
    if kid is None or kid.name != "MQMD" or kid.value is not None:
        return None
    content = kid.lazy
    if content is None or properties_content is None:
        return None
    relay = content.options.get("relay")
    if relay is None or relay.properties is not properties_content:
        return None
    return relay, content, kid


def relay_of(root: Element) -> Relay | None:
    """The :class:`Relay` of an output Root that is still exactly the message it was built from:
    Properties, MQMD and body unread (or, for an MQRFH2, read but unchanged) and nothing added,
    removed or renamed in Root; else None. Such a Root written by :func:`to_message` gives the
    message's own descriptor fields, properties and bytes, so it can be put as they are."""
    headers = _own_headers(root)
    if headers is None:
        return None
    relay, content, md_folder = headers
    kid = md_folder.next_sibling
    header_content = relay.header
    if header_content is not None:
        if kid is None or kid.name != "MQRFH2" or kid.value is not None:
            return None
        header = kid
        kid = kid.next_sibling
    if (
        kid is None
        or kid.next_sibling is not None
        or kid.name != relay.domain
        or kid.value is not None
        or kid.namespace
        or kid.lazy is None
        or kid.lazy is not relay.body
    ):
        return None
    if header_content is not None:
        # the message's own header (not one put in its place), unread or as parsed: its bytes are
        # what writing it out keeps, since the template, encoding and CCSID it was read with are
        # those of the unread Properties and body (build_root refused a relay whose header
        # writing out would change)
        descriptor = content.options["descriptor"]
        md = (int(getattr(descriptor, "encoding", 546)), int(getattr(descriptor, "coded_char_set_id", 1208)))
        if not rfh2.is_as_read(header, header_content, md):
            return None
    return relay


def rewritten(root: Element) -> tuple[Relay, str | None, bytes] | None:
    """For an output Root whose Properties and MQMD are still exactly those of the message it was
    built from (unread, the message with no MQRFH2) and whose only other child is a body, read or
    changed: (its :class:`Relay`, the MQMD Format and the body bytes :func:`to_message` writes);
    else None. Such a Root written out is the message's own descriptor fields with that Format
    (None: the message's own) and that body, so it can be put as the message's bytes with the
    body in its place. A body :func:`to_message` cannot write raises what it raises."""
    headers = _own_headers(root)
    if headers is None or headers[0].header is not None:
        return None
    relay, content, md_folder = headers
    properties_content = relay.properties
    body_node = md_folder.next_sibling
    if body_node is None or body_node.next_sibling is not None or body_node.name in HEADER_NAMES:
        return None
    # what build_root worked out the body is written with while Properties is unread; the
    # descriptor's own encoding and CCSID (to_message writes those into the MQMD)
    written = properties_content.options.get("written")
    descriptor = getattr(relay.message, "md", None)
    if written is None or descriptor is None or content.options["descriptor"] is not descriptor:
        return None
    encoding, ccsid, options = written
    if encoding != descriptor.encoding or ccsid != descriptor.coded_char_set_id:
        return None
    ensure_loaded()
    domain = body_node.name
    parser = _body_parser(domain, body_node)
    body = parser.serialize(body_node, ccsid=int(ccsid), encoding=int(encoding), options=options)
    return relay, mqmd.FORMAT_STRING if domain in _TEXT_DOMAINS else None, body


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


def _body_parser(domain: str, body_node: Element) -> Any:
    """The parser that writes the body folder ``body_node`` (named ``domain``), or a DomainError."""
    try:
        return esql.domains.get(domain)
    except DomainError:
        raise DomainError(
            f"the last child of Root is '{domain}', which is not a message domain",
            domain=domain,
            path=body_node.path(),
        ) from None


def to_message(root: Element) -> tuple[dict[str, Any], bytes]:
    """(descriptor fields, body bytes) for an output Root; the output template comes from Properties."""
    ensure_loaded()
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
        parser = _body_parser(domain, body_node)
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
    ensure_loaded()
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
    written: tuple[int, int, dict[str, Any]] | None = None
    if properties is not None:
        lazy = properties.lazy
        if lazy is not None and lazy.parser is _PROPERTIES:
            # never read: the input's values, and what they make here, as build_root left them
            written = lazy.options.get("written")
            if written is None:  # values of another maker: read as they are
                values = lazy.options["values"]
                written = (
                    values.get("Encoding"),
                    values.get("CodedCharSetId"),
                    {
                        "set": str(values.get("MessageSet") or ""),
                        "type": str(values.get("MessageType") or ""),
                        "format": str(values.get("MessageFormat") or ""),
                    },
                )
    if written is not None:
        encoding, ccsid, options = written
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
    parser = _body_parser(domain, body_node)
    return parser.serialize(body_node, ccsid=int(ccsid), encoding=int(encoding), options=options)


def _set(folder: Element, name: str, value: Any) -> None:
    kid = folder.child(name)
    if kid is None:
        folder.prepend(Element(name, value))
    else:
        kid.value = value
