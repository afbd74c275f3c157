"""The tests of a C module beside its Python code: the module is built by ``make setup`` on every
machine the project supports, so under CI its absence fails the test that needs it; elsewhere, or
with ``FLOWBROKER_PURE_PYTHON`` set, the test is skipped with the reason."""

from __future__ import annotations

import os
from typing import TypeVar

import pytest
from esql.native import pure_python

T = TypeVar("T")


def require_compiled(implementation: T | None, module: str) -> T:
    """``implementation`` (what ``module`` gave), failing or skipping the test when it is None."""
    if implementation is None:
        if os.environ.get("CI") == "true" and not pure_python():
            pytest.fail(f"{module} was not built (make setup builds it)")
        pytest.skip(f"{module} is not built, or FLOWBROKER_PURE_PYTHON is set")
    return implementation
