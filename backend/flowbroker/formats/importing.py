"""Importing record layouts into message sets: one entry point for the CLI and the REST route."""

from __future__ import annotations

import copy
from typing import Any

from flowbroker.formats.cheader import import_c_header
from flowbroker.formats.copybook import ImportFault, Library, import_copybook
from flowbroker.formats.mrm.model import compile_set

KINDS = ("copybook", "c-header")


def import_layout(
    text: str, kind: str, set_name: str, type_name: str | None, source: str, library: Library | None = None
) -> dict[str, Any]:
    """The import as a message set fragment ``{"set", "type", "types", "warnings"}``; raises ImportFault.

    ``library`` finds the members a copybook's COPY statements name.
    """
    if kind == "copybook":
        result = import_copybook(text, type_name, source, library)
    elif kind == "c-header":
        result = import_c_header(text, type_name, source)
    else:
        raise ImportFault(f"unknown layout kind '{kind}' (copybook or c-header)", 1, 1, source)
    compile_set({"name": set_name, "types": result["types"]}, set_name)  # the result must be a usable set
    return {
        "set": set_name,
        "type": result["message"],
        "types": result["types"],
        "warnings": result.get("warnings", []),
    }


def merge(document: dict[str, Any] | None, fragment: dict[str, Any]) -> dict[str, Any]:
    """A set document with the fragment's types added (same-named types are replaced)."""
    merged = copy.deepcopy(document) if document else {}
    merged.setdefault("name", fragment["set"])
    types = merged.setdefault("types", {})
    types.update(copy.deepcopy(fragment["types"]))
    messages = merged.setdefault("messages", [])
    if fragment["type"] not in messages:
        messages.append(fragment["type"])
    compile_set(merged, fragment["set"])
    return merged
