"""ESQL for the designer's editor: diagnostics as you type and the names the editor completes."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from pydantic import Field

from flowbroker.api.deps import Reader
from flowbroker.api.errors import AUTHENTICATED, responses
from flowbroker.api.schemas import Body, Out
from flowbroker.services import esql

router = APIRouter(prefix="/api/esql", tags=["esql"], responses=responses(*AUTHENTICATED))


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


@router.post("/check", response_model=CheckOut)
def check_source(body: CheckIn, _: Reader) -> Any:
    """Compile-check ESQL text as a deploy would; every diagnostic carries its line and column."""
    found = [
        EsqlDiagnostic.model_validate(d, from_attributes=True) for d in esql.check(body.source, body.filename)
    ]
    return CheckOut(valid=not any(d.severity == "error" for d in found), diagnostics=found)


@router.get("/environment", response_model=EnvironmentOut)
def environment(_: Reader) -> Any:
    """Keywords of the grammar, the built-in functions and the correlation names, for completion."""
    return esql.environment()
