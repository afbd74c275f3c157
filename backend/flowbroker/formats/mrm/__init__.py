"""The MRM domain: messages predefined by a message set, read and written as CWF records or MRM XML.

Message sets reach the parser through :data:`CATALOG` (deploy installs the sets a flow uses) or
directly as ``options["messageSetDocument"]``; ``options`` also carry ``set``, ``type`` and
``format`` (``CWF`` or ``XML``) from the message template.
"""

from __future__ import annotations

import threading
from typing import Any

from esql.domains import DomainError
from esql.tree import Element, LazyContent

from flowbroker.formats.mrm import cwf, xmlformat
from flowbroker.formats.mrm.model import MessageSet, compile_set


class Catalog:
    """The message sets known to this process, compiled once per document."""

    def __init__(self) -> None:
        self._sets: dict[str, MessageSet] = {}
        self._lock = threading.Lock()

    def install(self, name: str, document: dict[str, Any]) -> MessageSet:
        compiled = compile_set(document, name)
        with self._lock:
            self._sets[name] = compiled
        return compiled

    def remove(self, name: str) -> None:
        with self._lock:
            self._sets.pop(name, None)

    def get(self, name: str) -> MessageSet:
        found = self._sets.get(name)
        if found is None:
            known = ", ".join(sorted(self._sets)) or "none deployed"
            raise DomainError(f"message set '{name}' is not deployed here (known: {known})", domain="MRM")
        return found

    def names(self) -> list[str]:
        return sorted(self._sets)


CATALOG = Catalog()
_DOCUMENT_CACHE: dict[int, tuple[Any, MessageSet]] = {}


def resolve(options: dict[str, Any]) -> tuple[MessageSet, str, str]:
    """The message set, type and format (CWF or XML) named by parser options."""
    document = options.get("messageSetDocument")
    if document is not None:
        cached = _DOCUMENT_CACHE.get(id(document))
        if cached is None or cached[0] is not document:
            cached = (document, compile_set(document, str(options.get("set", ""))))
            _DOCUMENT_CACHE[id(document)] = cached
        mset = cached[1]
    else:
        name = options.get("set")
        if not name:
            raise DomainError("MRM: no message set given (set the message template's Set)", domain="MRM")
        mset = CATALOG.get(str(name))
    mtype = options.get("type")
    if not mtype:
        raise DomainError("MRM: no message type given (set the message template's Type)", domain="MRM")
    fmt = str(options.get("format") or "CWF")
    upper = fmt.upper()
    if upper.startswith("CWF"):
        kind = "CWF"
    elif upper.startswith("XML"):
        kind = "XML"
    else:
        raise DomainError(f"MRM: unsupported physical format '{fmt}' (CWF or XML)", domain="MRM")
    return mset, str(mtype), kind


class MrmParser:
    """Parses on first read against the message set; untouched, it writes the original bytes."""

    domains: tuple[str, ...] = ("MRM",)

    def attach(
        self, element: Element, data: bytes, *, ccsid: int, encoding: int, options: dict[str, Any]
    ) -> None:
        element.set_lazy(
            LazyContent(self, bytes(data), ccsid=ccsid, encoding=encoding, options=dict(options))
        )

    def fill(self, element: Element, content: LazyContent) -> None:
        mset, tname, kind = resolve(content.options)
        mtype = mset.message_type(tname)
        if kind == "CWF":
            cwf.Reader(
                content.data, ccsid=content.ccsid, encoding=content.encoding, base_path=element.path()
            ).record(mtype, element)
        else:
            xmlformat.read(content.data, mtype, element, ccsid=content.ccsid, base_path=element.path())

    def serialize(self, element: Element, *, ccsid: int, encoding: int, options: dict[str, Any]) -> bytes:
        lazy = element.lazy
        if (
            lazy is not None
            and lazy.ccsid == ccsid
            and lazy.encoding == encoding
            and _same(lazy.options, options)
        ):
            return lazy.data
        mset, tname, kind = resolve(options)
        mtype = mset.message_type(tname)
        if kind == "CWF":
            return cwf.Writer(ccsid=ccsid, encoding=encoding, base_path=element.path()).record(mtype, element)
        return xmlformat.write(mtype, element, ccsid=ccsid, base_path=element.path())


def _same(a: dict[str, Any], b: dict[str, Any]) -> bool:
    return all(a.get(key) == b.get(key) for key in ("set", "type", "format")) or not any(
        b.get(key) for key in ("set", "type", "format")
    )


PARSER = MrmParser()
