"""Between queue messages and message assemblies, through the format converters (``flowbroker.formats``).

The converters own the layout of Root (Properties, MQMD, MQRFH2, the body domain) and parse the
body only when something reads it; this module adapts them to the runtime's terms: a queue
message in, a descriptor and body bytes out, and the ResetContentDescriptor step.
"""

from __future__ import annotations

from typing import Any

from esql import domains
from esql.tree import Element
from flowbroker_nodes.base import describe_causes_with

from flowbroker.formats import assembly as formats_assembly
from flowbroker.formats import errors, load_all

body_element = formats_assembly.body_element
relay_of = formats_assembly.relay_of
rewritten = formats_assembly.rewritten
# a parser error below a node is recorded as ACE's positioned ParserException
describe_causes_with(errors.cause_entry)


def ensure_domains() -> None:
    """Register the format converters' domain parsers (idempotent)."""
    load_all()


_TEMPLATES: dict[tuple[str, str, str, str], formats_assembly.Template] = {}


def template_of(template: dict[str, str]) -> formats_assembly.Template:
    key = (
        template.get("domain") or "BLOB",
        template.get("set") or "",
        template.get("type") or "",
        template.get("format") or "",
    )
    found = _TEMPLATES.get(key)
    if found is None:
        # an input node's template is the same for all its messages: made once, never changed
        found = formats_assembly.Template(*key)
        if len(_TEMPLATES) < 1024:
            _TEMPLATES[key] = found
    return found


def build_root(message: Any, template: dict[str, str], *, transactional: bool = True) -> Element:
    """Root for a queue message: headers parsed now, the body attached to parse on first read."""
    return formats_assembly.build_root(
        message.md,
        message.body,
        template_of(template),
        transactional=transactional,
        relay=message if getattr(message, "md", None) is not None else None,
    )


def to_message(root: Element) -> tuple[dict[str, Any], bytes]:
    """(descriptor fields, body bytes) of an output Root; an untouched body is its original bytes."""
    return formats_assembly.to_message(root)


#: The body bytes of an output Root, as :func:`to_message` gives them, with no descriptor built
#: (the converters' own function: an output of a transport with no descriptor calls it a message).
to_body = formats_assembly.to_body


def reset_body(root: Element, template: dict[str, str]) -> None:
    """Write the body out and attach its bytes again under the template's domain, set, type, format."""
    load_all()
    body = body_element(root)
    data = b""
    properties = root.child("Properties") or root.prepend(Element("Properties"))
    ccsid = _int(_value(properties, "CodedCharSetId")) or 1208
    encoding = _int(_value(properties, "Encoding")) or 546
    if body is not None:
        lazy = body.lazy
        if lazy is not None:
            data = lazy.data
        else:
            options = {
                "set": _value(properties, "MessageSet") or "",
                "type": _value(properties, "MessageType") or "",
                "format": _value(properties, "MessageFormat") or "",
            }
            data = domains.get(body.name).serialize(body, ccsid=ccsid, encoding=encoding, options=options)
        body.detach()
    for key, name in (("set", "MessageSet"), ("type", "MessageType"), ("format", "MessageFormat")):
        if key in template:
            element = properties.child(name) or properties.add(name)
            element.value = template[key]
    domain = (template.get("domain") or (body.name if body is not None else "BLOB")).upper()
    element = root.add(domain, type=0x01000000)
    domains.get(domain).attach(
        element,
        data,
        ccsid=ccsid,
        encoding=encoding,
        options={
            "set": _value(properties, "MessageSet") or "",
            "type": _value(properties, "MessageType") or "",
            "format": _value(properties, "MessageFormat") or "",
        },
    )


def _value(folder: Element, name: str) -> Any:
    node = folder.child(name)
    return node.value if node is not None else None


def _int(value: Any) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return 0
