"""Fixtures of tests that run flows in this process: a real queue manager process, clients of it,
fresh queues and an execution group runtime. A conftest imports the ones it wants by name."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from flowbroker.qm.client import Client
from flowbroker.qm.harness import QueueManagerProcess
from flowbroker.runtime.connection import QueueConnection
from flowbroker.runtime.engine import ExecutionGroupRuntime

_names = itertools.count(1)


@pytest.fixture(scope="session")
def qm_process(tmp_path_factory: pytest.TempPathFactory) -> Iterator[QueueManagerProcess]:
    with QueueManagerProcess(tmp_path_factory.mktemp("qm"), fsync=False) as qm:
        yield qm


@pytest.fixture
def qm(qm_process: QueueManagerProcess) -> Iterator[Client]:
    with qm_process.client() as client:
        yield client


@pytest.fixture
def queues(qm: Client) -> Callable[..., str]:
    """Define a fresh, empty queue: ``queues("IN", backout_threshold=2)`` → its unique name."""

    def define(base: str, **attrs: object) -> str:
        name = f"{base}.{next(_names)}"
        qm.define_queue(name, replace=True, **attrs)
        qm.purge(name)
        return name

    return define


@pytest.fixture
def group(qm_process: QueueManagerProcess, tmp_path: Path) -> Iterator[ExecutionGroupRuntime]:
    def connect() -> QueueConnection:
        return QueueConnection.open(qm_process.url, data_dir=str(qm_process.data_dir))

    runtime = ExecutionGroupRuntime(connect, trace_dir=tmp_path / "trace")
    yield runtime
    runtime.shutdown(timeout=10)
