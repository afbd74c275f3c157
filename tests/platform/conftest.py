"""Fixtures of the platform suite: `flowbroker up` run as a real process on free ports."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import psutil
import pytest


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class Up:
    """One `flowbroker up` process with its output collected line by line."""

    def __init__(self, data: Path, env: dict[str, str] | None = None) -> None:
        self.data = data
        self.port = free_port()
        self.qm_port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.lines: list[str] = []
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "flowbroker.cli",
                "up",
                "--data",
                str(data),
                "--port",
                str(self.port),
                "--qm-port",
                str(self.qm_port),
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env={**os.environ, **(env or {})},
        )
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.append(line.rstrip("\n"))

    def wait_for_line(self, fragment: str, timeout: float = 60.0) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for line in list(self.lines):
                if fragment in line:
                    return line
            if self.process.poll() is not None and not self._reader.is_alive():
                break
            time.sleep(0.05)
        raise AssertionError(f"no line with {fragment!r}; output: {self.lines}")

    def health(self) -> dict[str, Any]:
        response = httpx.get(self.url + "/api/health", timeout=5.0)
        assert response.status_code == 200
        return dict(response.json())

    def descendants(self) -> list[psutil.Process]:
        try:
            return psutil.Process(self.process.pid).children(recursive=True)
        except psutil.NoSuchProcess:
            return []

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 60.0) -> int:
        if self.process.poll() is None:
            self.process.send_signal(sig)
        code = self.process.wait(timeout=timeout)
        self._reader.join(timeout=5)
        return code


def kill_tree(pids: list[int]) -> None:
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


@pytest.fixture
def start_up(tmp_path: Path) -> Iterator[Any]:
    """Start `flowbroker up` (any number of times); whatever is left running is killed afterwards."""
    started: list[Up] = []

    def start(data: Path | None = None, env: dict[str, str] | None = None) -> Up:
        env = {"FLOWBROKER_CONFIG_DIR": str(tmp_path / "config"), **(env or {})}
        up = Up(data or tmp_path / "data", env)
        started.append(up)
        return up

    yield start
    for up in started:
        leftovers = [p.pid for p in up.descendants()]
        if up.process.poll() is None:
            up.process.kill()
            up.process.wait(timeout=30)
        kill_tree(leftovers)
