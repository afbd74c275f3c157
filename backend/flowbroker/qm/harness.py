"""Starts and stops a real queue manager child process: for tests, benchmarks and supervisors."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import TracebackType

from flowbroker.qm.client import Client


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class QueueManagerProcess:
    """``flowbroker qm`` as a child process on a free loopback port, with its data directory."""

    def __init__(
        self,
        data_dir: Path | str,
        port: int | None = None,
        *,
        fsync: bool = True,
        cpu: int | None = None,
        checkpoint_mb: float | None = None,
        expiry_interval: float | None = None,
        options: Sequence[str] = (),
        env: Mapping[str, str] | None = None,
    ) -> None:
        #: Further `flowbroker qm` options, and variables added to the inherited environment.
        self.options = list(options)
        self.env = dict(env or {})
        self.checkpoint_mb = checkpoint_mb
        self.expiry_interval = expiry_interval
        self.data_dir = Path(data_dir)
        self.port = port or free_port()
        self.fsync = fsync
        self.cpu = cpu
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"fbqm://127.0.0.1:{self.port}"

    def start(self, timeout: float = 20.0) -> QueueManagerProcess:
        cmd = [
            sys.executable,
            "-m",
            "flowbroker.cli",
            "qm",
            "--data",
            str(self.data_dir),
            "--port",
            str(self.port),
        ]
        cmd += ["--parent-pid", str(os.getpid())]
        if not self.fsync:
            cmd.append("--no-fsync")
        if self.checkpoint_mb is not None:
            cmd += ["--checkpoint-mb", str(self.checkpoint_mb)]
        if self.expiry_interval is not None:
            cmd += ["--expiry-interval", str(self.expiry_interval)]
        cmd += self.options
        if self.cpu is not None:
            cmd = ["taskset", "-c", str(self.cpu), *cmd]
        self.data_dir.mkdir(parents=True, exist_ok=True)
        # A file, not a pipe: an unread pipe would stall a server that logs a lot.
        log_path = self.data_dir / "qm.stderr.log"
        with open(log_path, "ab") as log:
            self.proc = subprocess.Popen(
                cmd,
                stdout=subprocess.DEVNULL,
                stderr=log,
                env={**os.environ, **self.env} if self.env else None,
            )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                err = log_path.read_text(errors="replace").strip().splitlines()
                raise RuntimeError(
                    f"queue manager exited with {self.proc.returncode}: {err[-1] if err else ''}"
                )
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.5):
                    if (self.data_dir / "qm.json").exists():
                        return self
            except OSError:
                pass
            time.sleep(0.05)
        self.kill()
        raise RuntimeError(f"queue manager did not accept connections on port {self.port} within {timeout}s")

    def client(self) -> Client:
        return Client.connect(self.url, data_dir=str(self.data_dir))

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def kill(self) -> None:
        """SIGKILL: the crash the recovery log must survive."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait()

    def stop(self, timeout: float = 10.0) -> int | None:
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.kill()
        return self.proc.returncode

    def __enter__(self) -> QueueManagerProcess:
        return self.start()

    def __exit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()
