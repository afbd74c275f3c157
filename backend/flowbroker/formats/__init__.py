"""Format converters: the domain parsers (XMLNSC, XMLNS, XML, JSON, BLOB, MRM) and the MQ headers."""

from __future__ import annotations

import esql.domains

_LOADED = False


def ensure_loaded() -> None:
    """Register every domain parser once; costs a flag test afterwards (on every message's path)."""
    if not _LOADED:
        load_all()


def load_all() -> list[str]:
    """Import and register every domain parser (safe to call any number of times); the domain names."""
    global _LOADED
    if not _LOADED:
        from flowbroker.formats import blob, json, mrm, xml, xmlns, xmlnsc

        for module in (xmlnsc, xmlns, xml, json, blob, mrm):
            esql.domains.register(module.PARSER)
        _LOADED = True
    return esql.domains.known()
