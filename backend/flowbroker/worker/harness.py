"""An execution group as a child process (``flowbroker worker``), for tests and benchmarks."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from flowbroker.worker.bootsteps import liveness_path


class WorkerProcess:
    """``flowbroker worker --broker B --group G --data D`` with its log in ``D/logs``."""

    def __init__(
        self,
        data: Path,
        broker: str = "default",
        group: str = "default",
        *,
        celery_broker: str | None = None,
        env: dict[str, str] | None = None,
    ) -> None:
        self.data = Path(data)
        self.broker = broker
        self.group = group
        self.celery_broker = celery_broker
        self.env = env or {}
        self.proc: subprocess.Popen[bytes] | None = None
        self.log_path = self.data / "logs" / f"worker-{broker}-{group}.log"

    def start(self, timeout: float = 30.0) -> WorkerProcess:
        cmd = [
            sys.executable,
            "-m",
            "flowbroker.cli",
            "worker",
            "--broker",
            self.broker,
            "--group",
            self.group,
        ]
        cmd += ["--data", str(self.data)]
        if self.celery_broker:
            cmd += ["--celery-broker", self.celery_broker]
        env = {**os.environ, "FLOWBROKER_DATA": str(self.data), "PYTHONUNBUFFERED": "1", **self.env}
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        alive = liveness_path(self.data, self.broker, self.group)
        alive.unlink(missing_ok=True)
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"worker exited with {self.proc.returncode}: {self.log_tail()}")
            if alive.exists():
                return self
            time.sleep(0.05)
        self.kill()
        raise RuntimeError(f"worker did not start within {timeout}s: {self.log_tail()}")

    def log_tail(self, size: int = 3000) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-size:]
        except FileNotFoundError:
            return ""

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def kill(self) -> None:
        """SIGKILL: the crash a unit of work must survive."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait()

    def stop(self, timeout: float = 30.0) -> int | None:
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.kill()
        return self.proc.returncode

    def __enter__(self) -> WorkerProcess:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
