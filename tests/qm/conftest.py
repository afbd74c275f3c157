"""Fixtures of the queue manager suite: a real `flowbroker qm` process on a free port."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from flowbroker.qm.client import Client
from flowbroker.qm.harness import QueueManagerProcess


@pytest.fixture(scope="module")
def qm_process(tmp_path_factory: pytest.TempPathFactory) -> Iterator[QueueManagerProcess]:
    with QueueManagerProcess(tmp_path_factory.mktemp("qm")) as qm:
        yield qm


@pytest.fixture
def client(qm_process: QueueManagerProcess) -> Iterator[Client]:
    with qm_process.client() as c:
        yield c


@pytest.fixture
def qname(request: pytest.FixtureRequest, client: Client) -> str:
    """A fresh queue named after the test."""
    name = "T." + request.node.name.upper().replace("[", ".").replace("]", "").replace("-", ".")[:40]
    client.define_queue(name, replace=True)
    client.purge(name)
    return name


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    return tmp_path / "data"
