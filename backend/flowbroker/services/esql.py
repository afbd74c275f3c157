"""ESQL for the designer's editor: the diagnostics a deploy would report, and the names to complete."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from esql import compiler, functions, parser
from esql.codegen import CORRELATION


@dataclass(frozen=True)
class Diagnostic:
    line: int
    column: int
    severity: str
    message: str


def check(source: str, filename: str = "main.esql") -> list[Diagnostic]:
    """Every diagnostic the deploy-time compile reports for one module: syntax, then semantic checks."""
    found, _generator = compiler.check_sources({filename: source}, strict=True)
    return [Diagnostic(d.line, d.column, d.severity, d.message) for d in found]


def environment() -> dict[str, Any]:
    """The grammar's keywords, the built-in functions and the correlation names, as the compiler knows them."""
    details = [
        {
            "name": str(f["name"]),
            "category": str(f.get("category") or ""),
            "signature": str(f.get("signature") or ""),
            "doc": str(f.get("doc") or ""),
        }
        for f in functions.describe()
    ]
    return {
        "keywords": sorted(parser.grammar().keywords),
        "functions": [f["name"] for f in details],
        "function_details": details,
        "correlation_names": list(CORRELATION),
    }
