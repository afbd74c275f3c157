"""Every format test runs with all domain parsers registered."""

from __future__ import annotations

import pytest
from flowbroker.formats import load_all


@pytest.fixture(scope="session", autouse=True)
def _parsers() -> None:
    load_all()
