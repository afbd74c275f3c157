"""The one environment of ESQL built-in functions: FunctionDef records and the decorator that fills it."""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

CATEGORIES = ("string", "numeric", "datetime", "field", "list", "misc")


@dataclass(frozen=True, slots=True)
class FunctionDef:
    """A built-in: ``impl(*args)`` takes and returns ESQL run-time values."""

    name: str
    impl: Callable[..., Any]
    min_args: int
    max_args: int | None  # None: any number
    category: str
    signature: str
    doc: str


ENVIRONMENT: dict[str, FunctionDef] = {}


def builtin(
    name: str,
    category: str,
    signature: str,
    min_args: int,
    max_args: int | None,
    *,
    aliases: tuple[str, ...] = (),
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Register ``impl`` under ``name`` (and aliases); the docstring's first line becomes the doc."""
    if category not in CATEGORIES:
        raise ValueError(f"unknown function category {category!r}")

    def register(impl: Callable[..., Any]) -> Callable[..., Any]:
        doc = (impl.__doc__ or "").strip().splitlines()[0] if impl.__doc__ else ""
        guarded = _guard(name, impl)
        for each in (name, *aliases):
            if each in ENVIRONMENT:
                raise ValueError(f"built-in {each} registered twice")
            sig = signature if each == name else signature.replace(name, each, 1)
            ENVIRONMENT[each] = FunctionDef(each, guarded, min_args, max_args, category, sig, doc)
        return impl

    return register


def _guard(name: str, impl: Callable[..., Any]) -> Callable[..., Any]:
    """``impl`` with Python's arithmetic and conversion faults reported as EsqlValueError."""
    from esql.values import _FAULTS, EsqlValueError, _reason

    @functools.wraps(impl)
    def call(*args: Any) -> Any:
        try:
            return impl(*args)
        except _FAULTS as exc:
            raise EsqlValueError(f"{name}: {_reason(exc)}") from None

    return call
