"""ESQL field functions over message-tree references: FIELDNAME … ASBITSTREAM, LASTMOVE, SAMEFIELD."""

from __future__ import annotations

from typing import Any

from esql import domains
from esql.cast import cast
from esql.functions.registry import builtin
from esql.tree import Element
from esql.values import EsqlValueError, _show, type_name

#: IBM's bit-stream option constants (OPTIONS of ASBITSTREAM and PARSE).
ROOT_BITSTREAM = 0x00000000
EMBEDDED_BITSTREAM = 0x00000001
FOLDER_BITSTREAM = 0x00000002


def element_of(ref: Any, fn: str) -> Element | None:
    """The tree element a field-function argument stands for (a reference wrapper, an element, a list)."""
    if ref is None or isinstance(ref, Element):
        return ref
    # the runtime's reference variables wrap the element they point at
    inner = getattr(ref, "element", None)
    if isinstance(inner, Element) or (inner is None and hasattr(ref, "element")):
        return inner
    if isinstance(ref, list):
        return element_of(ref[0], fn) if ref else None
    raise EsqlValueError(f"{fn}: expected a field reference, not {type_name(ref)} {_show(ref)}")


@builtin("FIELDNAME", "field", "FIELDNAME(fieldref) → CHARACTER", 1, 1)
def fieldname(ref: Any) -> str | None:
    """The name of the referenced field (NULL when it does not exist)."""
    e = element_of(ref, "FIELDNAME")
    return None if e is None else e.name


@builtin("FIELDNAMESPACE", "field", "FIELDNAMESPACE(fieldref) → CHARACTER", 1, 1)
def fieldnamespace(ref: Any) -> str | None:
    """The namespace URI of the referenced field ('' when none; NULL when it does not exist)."""
    e = element_of(ref, "FIELDNAMESPACE")
    return None if e is None else e.namespace


@builtin("FIELDTYPE", "field", "FIELDTYPE(fieldref) → INTEGER", 1, 1)
def fieldtype(ref: Any) -> int | None:
    """The parser-specific field type of the referenced field (NULL when it does not exist)."""
    e = element_of(ref, "FIELDTYPE")
    return None if e is None else e.type


@builtin("FIELDVALUE", "field", "FIELDVALUE(fieldref) → scalar", 1, 1)
def fieldvalue(ref: Any) -> Any:
    """The scalar value of the referenced field (NULL for a folder or a missing field)."""
    e = element_of(ref, "FIELDVALUE")
    return None if e is None else e.value


@builtin("LASTMOVE", "field", "LASTMOVE(reference) → BOOLEAN", 1, 1)
def lastmove(ref: Any) -> bool:
    """TRUE when the reference's last MOVE reached its target (a reference never moved: TRUE)."""
    if ref is None:
        return False
    # the runtime's Reference keeps the last MOVE's outcome as ``lastmove``
    last = getattr(ref, "lastmove", getattr(ref, "last_move", None))
    if last is not None:
        return bool(last)
    if isinstance(ref, Element) or hasattr(ref, "element"):
        return True
    raise EsqlValueError(f"LASTMOVE: expected a REFERENCE variable, not {type_name(ref)} {_show(ref)}")


@builtin("SAMEFIELD", "field", "SAMEFIELD(ref1, ref2) → BOOLEAN", 2, 2)
def samefield(a: Any, b: Any) -> bool:
    """TRUE when both references point at the very same field."""
    ea, eb = element_of(a, "SAMEFIELD"), element_of(b, "SAMEFIELD")
    return ea is not None and ea is eb


def _domain_element(e: Element) -> Element | None:
    """The domain element (OutputRoot.XMLNSC …) above ``e``, or ``e`` itself if it is one."""
    node = e
    while node.parent is not None and node.parent.parent is not None:
        node = node.parent
    if node.parent is None:
        # a detached element: it is a domain element only if a parser is registered under its name
        return node if node.name.upper() in domains.known() else None
    return node


@builtin(
    "ASBITSTREAM",
    "field",
    "ASBITSTREAM(fieldref [OPTIONS o] [ENCODING e] [CCSID c] [SET s] [TYPE t] [FORMAT f]) → BLOB",
    1,
    7,
    aliases=("BITSTREAM",),
)
def asbitstream(
    ref: Any,
    encoding: Any = None,
    ccsid: Any = None,
    set_: Any = None,
    type_: Any = None,
    format_: Any = None,
    options: Any = None,
) -> bytes | None:
    """The bit stream of a subtree, written by its domain's parser (CCSID 1208 and encoding 546 by default)."""
    e = element_of(ref, "ASBITSTREAM")
    if e is None:
        return None
    owner = _domain_element(e)
    if owner is None:
        raise EsqlValueError(
            f"ASBITSTREAM: {e.path()} is not under a message domain (known: {', '.join(domains.known()) or 'none'})"
        )
    opts = 0 if options is None else int(cast(options, "INTEGER"))
    try:
        parser = domains.get(owner.name)
        return parser.serialize(
            e,
            ccsid=1208 if ccsid is None else int(cast(ccsid, "INTEGER")),
            encoding=546 if encoding is None else int(cast(encoding, "INTEGER")),
            options={
                "options": opts,
                "folder": e is not owner,
                "set": set_,
                "type": type_,
                "format": format_,
            },
        )
    except domains.DomainError as exc:
        raise EsqlValueError(f"ASBITSTREAM of {e.path()}: {exc}") from None
