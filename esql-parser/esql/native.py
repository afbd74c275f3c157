"""The C modules ``make setup`` compiles beside the Python code, and the one switch that turns
them all off: ``FLOWBROKER_PURE_PYTHON`` (any value but empty or ``0``)."""

from __future__ import annotations

import importlib
import os
from types import ModuleType


def pure_python() -> bool:
    """Whether the pure-Python code is asked for in place of every C module."""
    return os.environ.get("FLOWBROKER_PURE_PYTHON", "") not in ("", "0")


def compiled(name: str) -> ModuleType | None:
    """The C module ``name`` (dotted) when it was built and pure Python is not asked for, else None."""
    if pure_python():
        return None
    try:
        return importlib.import_module(name)
    except ImportError:
        return None
