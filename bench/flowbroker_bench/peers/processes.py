"""Child processes of a peer run: a private Mosquitto and Node-RED, pinned, started and always stopped."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def taskset_prefix(core: int | None) -> list[str]:
    """``taskset -c CORE`` when there is such a core and taskset is installed, else nothing."""
    if core is None or core >= (os.cpu_count() or 1) or shutil.which("taskset") is None:
        return []
    return ["taskset", "-c", str(core)]


def wait_port(host: str, port: int, timeout: float, process: subprocess.Popen[bytes] | None = None) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            raise OSError(
                f"process {process.args!r} exited with status {process.returncode} before listening"
            )
        try:
            with socket.create_connection((host, port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.05)
    raise OSError(f"nothing listens on {host}:{port} after {timeout} s")


class Child:
    """A started process in its own process group, stopped (TERM, then KILL) on :meth:`stop`."""

    def __init__(self, argv: list[str], cwd: Path, log: Path) -> None:
        self.log_path = log
        self._log = log.open("wb")
        self.process = subprocess.Popen(
            argv, cwd=cwd, stdout=self._log, stderr=subprocess.STDOUT, start_new_session=True
        )

    @property
    def pid(self) -> int:
        return self.process.pid

    def stop(self) -> None:
        if self.process.poll() is None:
            try:
                os.killpg(self.process.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
            try:
                self.process.wait(5)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(5)
        self._log.close()

    def tail(self, lines: int = 5) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""


def start_mosquitto(workdir: Path, core: int | None = 0) -> tuple[Child, int]:
    """A private Mosquitto on a free loopback port, so other users of :1883 add no noise."""
    binary = shutil.which("mosquitto") or "/usr/sbin/mosquitto"
    if not Path(binary).exists():
        raise OSError("mosquitto is not installed (needed for the MQTT peer runs)")
    port = free_port()
    conf = workdir / f"mosquitto-{port}.conf"
    conf.write_text(
        f"listener {port} 127.0.0.1\nallow_anonymous true\npersistence false\nlog_dest stderr\n"
        "log_type error\nmax_queued_messages 0\nmax_inflight_messages 0\n"
    )
    child = Child(
        [*taskset_prefix(core), binary, "-c", str(conf)], workdir, workdir / f"mosquitto-{port}.log"
    )
    try:
        wait_port("127.0.0.1", port, 10, child.process)
    except OSError:
        child.stop()
        raise
    return child, port
