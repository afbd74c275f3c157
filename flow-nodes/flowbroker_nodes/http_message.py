"""What the HTTP nodes share: a Root built from HTTP headers and a body, and a Root's headers and body for HTTP."""

from __future__ import annotations

from typing import Any

from esql import domains
from esql.tree import NAME, Element

DOMAINS = ("BLOB", "JSON", "XMLNSC", "XMLNS", "XML", "MRM")
#: The Content-Type a reply or request gets from its body's domain when the flow sets none.
CONTENT_TYPES = {
    "JSON": "application/json",
    "XMLNSC": "application/xml",
    "XMLNS": "application/xml",
    "XML": "application/xml",
    "BLOB": "application/octet-stream",
    "MRM": "application/octet-stream",
}
_CHARSETS = {"utf-8": 1208, "utf8": 1208, "iso-8859-1": 819, "latin-1": 819, "us-ascii": 1208, "utf-16": 1200}
_CCSID_NAMES = {1208: "utf-8", 819: "iso-8859-1", 1200: "utf-16"}


def ccsid_of(headers: list[tuple[str, str]]) -> int:
    """The CCSID the Content-Type's charset names (UTF-8 when it names none or one unknown here)."""
    for name, value in headers:
        if name.lower() == "content-type":
            for part in value.split(";")[1:]:
                key, _, charset = part.strip().partition("=")
                if key.strip().lower() == "charset":
                    return _CHARSETS.get(charset.strip().strip('"').lower(), 1208)
    return 1208


def build_root(
    header_name: str,
    headers: list[tuple[str, str]],
    body: bytes,
    template: dict[str, str],
    *,
    first_headers: list[tuple[str, Any]] = (),  # type: ignore[assignment]
    transactional: bool = False,
    reply_identifier: bytes = b"",
) -> Element:
    """Root = Properties, the HTTP header folder, and the body attached to its domain, parsed on first read."""
    ccsid = ccsid_of(headers)
    root = Element("Root", type=NAME)
    properties = root.add("Properties", type=NAME)
    for name, value in (
        ("MessageSet", template.get("set", "")),
        ("MessageType", template.get("type", "")),
        ("MessageFormat", template.get("format", "")),
        ("Encoding", 546),
        ("CodedCharSetId", ccsid),
        ("Transactional", transactional),
        ("Persistence", False),
        ("Priority", 0),
        ("ReplyIdentifier", reply_identifier),
    ):
        properties.add(name, value)
    folder = root.add(header_name, type=NAME)
    for name, value in first_headers:
        folder.add(name, value)
    for name, value in headers:
        folder.add(name, value)
    domain = (template.get("domain") or "BLOB").upper()
    element = root.add(domain, type=NAME)
    domains.get(domain).attach(
        element,
        body,
        ccsid=ccsid,
        encoding=546,
        options={k: template.get(k, "") for k in ("set", "type", "format")},
    )
    return root


def header_fields(root: Element, folder_name: str) -> list[tuple[str, str]]:
    """The simple fields of ``Root.<folder_name>`` as HTTP headers (ACE's X-Original-* ones left out)."""
    folder = root.child(folder_name)
    if folder is None:
        return []
    found: list[tuple[str, str]] = []
    for kid in folder.children():
        if kid.first_child is not None or kid.value is None or kid.name.startswith("X-Original-HTTP"):
            continue
        found.append((kid.name, str(kid.value)))
    return found


def body_domain(root: Element) -> str:
    """The domain of Root's body element ('' when Root has none)."""
    node = root.last_child
    while node is not None:
        try:
            domains.get(node.name)
            return node.name.upper()
        except Exception:
            node = node.prev_sibling
    return ""


def default_content_type(root: Element) -> str:
    domain = body_domain(root)
    kind = CONTENT_TYPES.get(domain, "application/octet-stream")
    if domain in ("JSON", "XMLNSC", "XMLNS", "XML"):
        properties = root.child("Properties")
        ccsid = properties.child("CodedCharSetId") if properties is not None else None
        try:
            number = int(ccsid.value) if ccsid is not None and ccsid.value is not None else 1208
        except (TypeError, ValueError):
            number = 1208
        kind += f"; charset={_CCSID_NAMES.get(number, 'utf-8')}"
    return kind


def with_default_headers(headers: list[tuple[str, str]], root: Element) -> list[tuple[str, str]]:
    """``headers`` plus a Content-Type from the body's domain when they have none."""
    if body_domain(root) and not any(name.lower() == "content-type" for name, _ in headers):
        return [*headers, ("Content-Type", default_content_type(root))]
    return headers


def destination_value(local_environment: Element, *path: str) -> Any:
    """``LocalEnvironment.Destination.HTTP.<path>`` or None."""
    node: Element | None = local_environment.child("Destination")
    for name in ("HTTP", *path):
        if node is None:
            return None
        node = node.child(name)
    return node.value if node is not None else None
