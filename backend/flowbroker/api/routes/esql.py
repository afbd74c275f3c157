"""ESQL for the designer's editor: diagnostics as you type and the names the editor completes."""

from __future__ import annotations

import importlib
from typing import Any

from fastapi import APIRouter
from pydantic import Field

from flowbroker.api.deps import Viewer
from flowbroker.api.errors import ApiError
from flowbroker.api.schemas import Body, Out

router = APIRouter(prefix="/api/esql", tags=["esql"])

#: The correlation names a Compute, Filter or Database module may use (seed 004 §2.3; ACE's names).
CORRELATION_NAMES = (
    "InputRoot",
    "InputBody",
    "InputProperties",
    "InputLocalEnvironment",
    "InputDestinationList",
    "InputExceptionList",
    "Environment",
    "OutputRoot",
    "OutputLocalEnvironment",
    "OutputDestinationList",
    "OutputExceptionList",
    "LocalEnvironment",
    "DestinationList",
    "ExceptionList",
    "Root",
    "Body",
    "Properties",
)


class CheckIn(Body):
    source: str = Field(max_length=1_000_000, description="the ESQL module text")
    filename: str = Field(default="main.esql", max_length=200)


class EsqlDiagnostic(Out):
    line: int
    column: int
    severity: str
    message: str


class CheckOut(Out):
    valid: bool
    diagnostics: list[EsqlDiagnostic]


class FunctionInfo(Out):
    name: str
    category: str = ""
    signature: str = ""
    doc: str = ""


class EnvironmentOut(Out):
    keywords: list[str]
    functions: list[str]
    function_details: list[FunctionInfo]
    correlation_names: list[str]


def _parser() -> Any:
    try:
        return importlib.import_module("esql.parser")
    except ImportError as exc:
        raise ApiError(503, "unavailable", f"the ESQL compiler is not installed: {exc}") from None


def _diagnostics(source: str, filename: str) -> list[Any]:
    """Every diagnostic the deploy-time compile would report: syntax, then the semantic checks."""
    try:
        compiler = importlib.import_module("esql.compiler")
    except ImportError:
        compiler = None
    check_sources = getattr(compiler, "check_sources", None)
    if callable(check_sources):
        found, _generator = check_sources({filename: source}, strict=True)
        return list(found)
    # An `esql` without the code generator still gives exact syntax diagnostics.
    return list(_parser().parse(source, filename=filename).diagnostics)


@router.post("/check", response_model=CheckOut)
def check_source(body: CheckIn, _: Viewer) -> Any:
    """Compile-check ESQL text as a deploy would; every diagnostic carries its line and column."""
    _parser()
    out = [
        EsqlDiagnostic(line=d.line, column=d.column, severity=d.severity, message=d.message)
        for d in _diagnostics(body.source, body.filename)
    ]
    return CheckOut(valid=not any(d.severity == "error" for d in out), diagnostics=out)


def _function_details() -> list[FunctionInfo]:
    """The built-in functions of the ESQL environment, as the `esql` package describes them."""
    try:
        functions = importlib.import_module("esql.functions")
    except ImportError:
        return []
    describe = getattr(functions, "describe", None)
    if not callable(describe):
        return []
    return [
        FunctionInfo(
            name=str(f.get("name", "")),
            category=str(f.get("category") or ""),
            signature=str(f.get("signature") or ""),
            doc=str(f.get("doc") or ""),
        )
        for f in describe()
        if f.get("name")
    ]


@router.get("/environment", response_model=EnvironmentOut)
def environment(_: Viewer) -> Any:
    """Keywords of the grammar, the built-in functions and the correlation names, for completion."""
    parser = _parser()
    keywords = sorted(parser.grammar().keywords)
    details = _function_details()
    return EnvironmentOut(
        keywords=keywords,
        functions=[f.name for f in details],
        function_details=details,
        correlation_names=list(CORRELATION_NAMES),
    )
