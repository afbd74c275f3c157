"""Every format test runs with all domain parsers registered."""

from __future__ import annotations

import pytest
from flowbroker.formats import load_all, xmlcore
from formats_support import native_writer


@pytest.fixture(scope="session", autouse=True)
def _parsers() -> None:
    load_all()


@pytest.fixture(params=["native", "python"])
def xml_writer(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Runs a test with each way of writing a plain XML subtree (a module opts in with
    ``pytestmark = pytest.mark.usefixtures("xml_writer")``)."""
    write = native_writer() if request.param == "native" else None
    monkeypatch.setattr(xmlcore, "_write_native", write)
    return str(request.param)
