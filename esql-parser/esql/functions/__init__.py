"""ESQL's built-in functions, registered in one environment the compiler and the designer both read."""

from __future__ import annotations

import datetime as _dt
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from esql.functions import datetimes, fields, lists, misc, numeric, strings  # noqa: F401  (they register)
from esql.functions.registry import CATEGORIES, ENVIRONMENT, FunctionDef

__all__ = ["CATEGORIES", "ENVIRONMENT", "FunctionDef", "describe", "in_invocation", "invocation", "lookup"]


def lookup(name: str) -> FunctionDef | None:
    """The built-in called ``name`` (any case), or None."""
    return ENVIRONMENT.get(name.upper())


def describe() -> list[dict[str, Any]]:
    """JSON-able metadata of every built-in, sorted by name, for the designer's completion."""
    return [
        {
            "name": f.name,
            "category": f.category,
            "signature": f.signature,
            "minArgs": f.min_args,
            "maxArgs": f.max_args,
            "doc": f.doc,
        }
        for f in sorted(ENVIRONMENT.values(), key=lambda f: f.name)
    ]


@contextmanager
def invocation(stop: misc.StopSignal | None = None, instant: _dt.datetime | None = None) -> Iterator[None]:
    """Run one node invocation: CURRENT_… give one moment throughout, and INSTANCESTOPPING / SLEEP
    see the flow thread's stop request (``stop``, a threading.Event)."""
    moment = instant or _dt.datetime.now(_dt.UTC).replace(tzinfo=None)
    clock_token = datetimes.INVOCATION_INSTANT.set(moment)
    stop_token = misc.STOP_SIGNAL.set(stop)
    try:
        yield
    finally:
        misc.STOP_SIGNAL.reset(stop_token)
        datetimes.INVOCATION_INSTANT.reset(clock_token)


def in_invocation() -> bool:
    """Whether the calling code runs inside :func:`invocation` (a node evaluation)."""
    return datetimes.INVOCATION_INSTANT.get() is not None
