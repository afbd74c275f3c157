"""ESQL miscellaneous functions: COALESCE, NULLIF, UUIDASCHAR, UUIDASBLOB, SLEEP, INSTANCESTOPPING."""

from __future__ import annotations

import time
import uuid
from contextvars import ContextVar
from typing import Any, Protocol

from esql.cast import cast
from esql.functions.registry import builtin
from esql.values import EsqlValueError, _show, eq, type_name

#: SLEEP is bounded so a typo cannot park a flow thread for days.
MAX_SLEEP_MS = 3_600_000


class StopSignal(Protocol):
    def is_set(self) -> bool: ...

    def wait(self, timeout: float | None = None) -> bool: ...


#: The stop request of the flow thread running the current node (a threading.Event); set by
#: :func:`esql.functions.invocation` so INSTANCESTOPPING and SLEEP can honour it.
STOP_SIGNAL: ContextVar[StopSignal | None] = ContextVar("esql_stop_signal", default=None)


@builtin("COALESCE", "misc", "COALESCE(value, …) → first non-NULL value", 1, None)
def coalesce(*values: Any) -> Any:
    """The first argument that is not NULL (NULL when all are)."""
    for v in values:
        if v is not None:
            return v
    return None


@builtin("NULLIF", "misc", "NULLIF(a, b) → a or NULL", 2, 2)
def nullif(a: Any, b: Any) -> Any:
    """NULL when the two arguments are equal, else the first."""
    return None if eq(a, b) is True else a


@builtin("UUIDASCHAR", "misc", "UUIDASCHAR[(blob)] → CHARACTER", 0, 1)
def uuidaschar(source: Any = None) -> str | None:
    """A new universally unique id as text, or the text form of a 16-byte BLOB id."""
    if source is None:
        return str(uuid.uuid4())
    if isinstance(source, bytes | bytearray):
        if len(source) != 16:
            raise EsqlValueError(f"UUIDASCHAR: a UUID BLOB has 16 bytes, not {len(source)}")
        return str(uuid.UUID(bytes=bytes(source)))
    raise EsqlValueError(f"UUIDASCHAR: argument must be BLOB, not {type_name(source)} {_show(source)}")


@builtin("UUIDASBLOB", "misc", "UUIDASBLOB[(character)] → BLOB", 0, 1)
def uuidasblob(source: Any = None) -> bytes | None:
    """A new universally unique id as 16 bytes, or the bytes of a UUID written as text."""
    if source is None:
        return uuid.uuid4().bytes
    if isinstance(source, str):
        try:
            return uuid.UUID(source.strip()).bytes
        except ValueError:
            raise EsqlValueError(f"UUIDASBLOB: {_show(source)} is not a UUID") from None
    raise EsqlValueError(f"UUIDASBLOB: argument must be CHARACTER, not {type_name(source)} {_show(source)}")


@builtin("SLEEP", "misc", "SLEEP(milliseconds) → BOOLEAN", 1, 1)
def sleep(milliseconds: Any) -> bool | None:
    """Pause the flow thread for the given milliseconds; TRUE when done."""
    if milliseconds is None:
        return None
    ms = int(cast(milliseconds, "INTEGER"))
    if ms < 0 or ms > MAX_SLEEP_MS:
        raise EsqlValueError(f"SLEEP: milliseconds must be 0 to {MAX_SLEEP_MS}, got {ms}")
    stop = STOP_SIGNAL.get()
    if stop is None:
        time.sleep(ms / 1000)
        return True
    # a stop request ends the pause early, so a stopping flow is not held up by SLEEP
    return not stop.wait(ms / 1000)


@builtin("INSTANCESTOPPING", "misc", "INSTANCESTOPPING() → BOOLEAN", 0, 0)
def instancestopping() -> bool:
    """TRUE when the flow instance running this node has been asked to stop."""
    stop = STOP_SIGNAL.get()
    return bool(stop is not None and stop.is_set())
