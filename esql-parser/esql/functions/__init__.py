"""ESQL's built-in functions, registered in one environment the compiler and the designer both read."""

from __future__ import annotations

import datetime as _dt
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


class _Invocation:
    """The context of one node invocation (a class, not a generator: it is entered per message)."""

    __slots__ = ("_clock", "_instant", "_stop", "_stop_token")

    def __init__(self, stop: misc.StopSignal | None, instant: _dt.datetime | None) -> None:
        self._stop = stop
        self._instant = instant

    def __enter__(self) -> None:
        self._clock = datetimes.INVOCATION_INSTANT.set(datetimes.Moment(self._instant))
        self._stop_token = misc.STOP_SIGNAL.set(self._stop)

    def __exit__(self, *exc: object) -> None:
        misc.STOP_SIGNAL.reset(self._stop_token)
        datetimes.INVOCATION_INSTANT.reset(self._clock)


def invocation(stop: misc.StopSignal | None = None, instant: _dt.datetime | None = None) -> _Invocation:
    """Run one node invocation: CURRENT_… give one moment throughout, and INSTANCESTOPPING / SLEEP
    see the flow thread's stop request (``stop``, a threading.Event)."""
    return _Invocation(stop, instant)


def in_invocation() -> bool:
    """Whether the calling code runs inside :func:`invocation` (a node evaluation)."""
    return datetimes.INVOCATION_INSTANT.get() is not None
