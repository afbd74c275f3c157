"""The configuration manager as a real process, for the tests that drive it from outside."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path


@contextlib.contextmanager
def running_api(data: Path, password: str) -> Iterator[tuple[str, str]]:
    """The configuration manager as a real process (`flowbroker api`) on a prepared repository in
    ``data``: its URL and an admin token."""
    import subprocess
    import sys
    import time

    import httpx
    from flowbroker.commands.platform import prepare_repository
    from flowbroker.qm.harness import free_port
    from flowbroker.settings import Settings

    prepare_repository(Settings(data=data, admin_password=password))
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "flowbroker.cli", "api", "--data", str(data), "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={**os.environ, "FLOWBROKER_DATA": str(data)},
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        token = ""
        while time.monotonic() < deadline and not token:
            try:
                login = httpx.post(url + "/api/auth/login", json={"username": "admin", "password": password})
                token = login.json().get("accessToken", "")
            except httpx.HTTPError:
                time.sleep(0.2)
        assert token, "the API process did not start"
        yield url, token
    finally:
        process.terminate()
        process.wait(30)
