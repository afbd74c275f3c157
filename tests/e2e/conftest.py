"""Fixtures of the browser suite: a whole `flowbroker up` on free ports for a real Chromium to drive."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

ROOT = Path(__file__).resolve().parents[2]
FRONTEND = ROOT / "frontend"
CHROMIUM = Path(os.environ.get("CHROMIUM_PATH", "/usr/bin/chromium"))
IN_CI = os.environ.get("CI", "").lower() == "true"
PASSWORD = "e2e-Admin-pass-7"


def _need(condition: bool, reason: str) -> None:
    if not condition:
        if IN_CI:
            pytest.fail(f"{reason} (CI=true requires it)")
        pytest.skip(reason)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def admin_password() -> str:
    """The password of the admin that `broker` creates."""
    return PASSWORD


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[str]:
    """A whole embedded system on free ports; stopped with its children afterwards."""
    _need(CHROMIUM.is_file(), f"Chromium is not installed at {CHROMIUM}")
    _need(shutil.which("node") is not None, "node is not on PATH")
    _need((FRONTEND / "dist" / "index.html").is_file(), "the frontend is not built (make frontend)")
    _need(
        (FRONTEND / "node_modules" / "playwright-core").is_dir(), "frontend/node_modules is missing (npm ci)"
    )
    port, qm_port = _free_port(), _free_port()
    env = {
        **os.environ,
        "FLOWBROKER_ADMIN_PASSWORD": PASSWORD,
        "FLOWBROKER_FRONTEND_DIST": str(FRONTEND / "dist"),
        # groups publish statistics each second, so the monitoring history fills within the test
        "FLOWBROKER_STATS_INTERVAL": "1",
    }
    log = (tmp_path / "up.log").open("wb")
    proc = subprocess.Popen(
        [sys.executable, "-m", "flowbroker.cli", "up", "--data", str(tmp_path / "data"), "--port", str(port)]
        + ["--qm-port", str(qm_port)],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            if proc.poll() is not None:
                pytest.fail(
                    f"flowbroker up exited with {proc.returncode}: {(tmp_path / 'up.log').read_text()}"
                )
            try:
                if httpx.get(url + "/api/health", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                pytest.fail("flowbroker up did not answer /api/health within 60 s")
            time.sleep(0.2)
        # health answers 200 only once `up` has created the first admin: no retry needed.
        login = httpx.post(
            url + "/api/auth/login", json={"username": "admin", "password": PASSWORD}, timeout=10
        )
        assert login.status_code == 200, login.text
        yield url
    finally:
        # The supervisor stops its components on SIGTERM; the group kill catches any left behind.
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            pass
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait(timeout=10)
        log.close()


def run_script(script: str, env: dict[str, str], *, timeout: float, steps: int) -> dict[str, Any]:
    """Run the browser script ``frontend/e2e/<script>`` with ``env``; every one of its ``steps``
    steps must pass. Returns its report (the last JSON line it printed)."""
    result = subprocess.run(
        ["node", f"e2e/{script}"], cwd=FRONTEND, env=env, capture_output=True, text=True, timeout=timeout
    )
    lines = [line for line in result.stdout.splitlines() if line.startswith("{")]
    assert lines, f"the browser script printed no result:\n{result.stdout}\n{result.stderr}"
    report: dict[str, Any] = json.loads(lines[-1])
    not_passed = [s for s in report["steps"] if s["status"] != "passed"]
    assert not not_passed and result.returncode == 0, json.dumps(not_passed, indent=1) + result.stderr
    assert len(report["steps"]) == steps, [s["name"] for s in report["steps"]]
    return report
