"""`flowbroker bench xml-attributes`: parse time of one element with very many attributes, per XML domain.

A document of N attributes on one element must parse in time linear in N. The rows give the
time with the attribute limit lifted (how the parser scales) and the outcome with the
configured limits (FLOWBROKER_XML_MAX_ATTRIBUTES: the message is refused early).
"""

from __future__ import annotations

import argparse
import os
import time
from typing import Any

from flowbroker_bench.core import Row, Scenario

DOMAINS = ("XMLNSC", "XMLNS", "XML")


def document(attributes: int) -> bytes:
    return ("<doc " + " ".join(f'a{i}="v{i}"' for i in range(attributes)) + "/>").encode()


def parse_once(domain: str, data: bytes) -> tuple[float, str]:
    """Seconds to parse ``data`` as ``domain`` (attach, then read every field) and what came of it."""
    import esql.domains
    from esql.tree import Element
    from flowbroker.formats import load_all

    load_all()
    body = Element(domain)
    started = time.perf_counter()
    try:
        esql.domains.get(domain).attach(body, data, ccsid=1208, encoding=546, options={})
        count = sum(1 for _ in body.walk())
    except Exception as exc:  # the refusal is the outcome being measured
        return time.perf_counter() - started, f"{type(exc).__name__}: {exc}"
    return time.perf_counter() - started, f"parsed: {count} fields"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--attributes", type=int, default=200_000, help="attributes on the one element")
    parser.add_argument("--domain", choices=DOMAINS, action="append", help="domains to parse (default: all)")


def run(args: argparse.Namespace) -> list[Row]:
    from flowbroker.formats import xmlcore

    data = document(args.attributes)
    rows: list[Row] = []
    for domain in args.domain or DOMAINS:
        for label, lifted in (("limit lifted", True), ("configured limits", False)):
            saved = os.environ.get("FLOWBROKER_XML_MAX_ATTRIBUTES")
            if lifted:
                os.environ["FLOWBROKER_XML_MAX_ATTRIBUTES"] = "0"
            _reload(xmlcore)
            try:
                seconds, outcome = parse_once(domain, data)
            finally:
                if saved is None:
                    os.environ.pop("FLOWBROKER_XML_MAX_ATTRIBUTES", None)
                else:
                    os.environ["FLOWBROKER_XML_MAX_ATTRIBUTES"] = saved
                _reload(xmlcore)
            rows.append(
                {
                    "domain": domain,
                    "attributes": args.attributes,
                    "bytes": len(data),
                    "limits": label,
                    "seconds": round(seconds, 3),
                    "outcome": outcome[:120],
                }
            )
    return rows


def _reload(xmlcore: Any) -> None:
    clear = getattr(getattr(xmlcore, "limits", None), "cache_clear", None)
    if clear is not None:
        clear()


SCENARIOS = {
    "xml-attributes": Scenario(
        "xml-attributes",
        "parse time of one XML element with many attributes (default 200,000), per XML domain",
        run,
        add_arguments,
        tags=("formats",),
    )
}
