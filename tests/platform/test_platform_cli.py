"""`flowbroker user` and `flowbroker login` as a user runs them: one-line errors, saved tokens."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest


def run(*args: str, stdin: str = "", env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "flowbroker.cli", *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, **(env or {})},
    )


def test_user_add_list_passwd(tmp_path: Path) -> None:
    data = str(tmp_path / "data")
    added = run(
        "user",
        "add",
        "dana",
        "--role",
        "developer",
        "--password-stdin",
        "--data",
        data,
        stdin="dana-password\n",
    )
    assert added.returncode == 0, added.stderr
    again = run(
        "user",
        "add",
        "dana",
        "--role",
        "developer",
        "--password-stdin",
        "--data",
        data,
        stdin="dana-password\n",
    )
    assert again.returncode == 1
    assert again.stderr == "flowbroker: error: a user named 'dana' already exists\n"
    short = run("user", "add", "eve", "--role", "viewer", "--password-stdin", "--data", data, stdin="short\n")
    assert short.stderr == "flowbroker: error: a password needs at least 8 characters\n"
    listed = run("user", "list", "--data", data)
    assert listed.stdout.splitlines() == ["dana\tdeveloper\tactive"]
    missing = run("user", "passwd", "nobody", "--password-stdin", "--data", data, stdin="whatever-long\n")
    assert missing.returncode == 1 and missing.stderr == "flowbroker: error: no user named 'nobody'\n"
    changed = run("user", "passwd", "dana", "--password-stdin", "--data", data, stdin="another-password\n")
    assert changed.returncode == 0
    bad_role = run("user", "add", "x", "--role", "god", "--data", data)
    assert bad_role.returncode == 2 and "invalid choice: 'god'" in bad_role.stderr


@pytest.mark.timeout(180)
def test_login_saves_a_token_other_commands_use(start_up: Any, tmp_path: Path) -> None:
    up = start_up(env={"FLOWBROKER_ADMIN_PASSWORD": "first-admin-pass"})
    up.wait_for_line("flowbroker is up at")
    env = {"FLOWBROKER_CONFIG_DIR": str(tmp_path / "config")}
    wrong = run("login", "--api", up.url, "--password-stdin", stdin="not-the-password\n", env=env)
    assert (
        wrong.returncode == 1
        and wrong.stderr == "flowbroker: error: login refused: wrong username or password\n"
    )
    ok = run("login", "--api", up.url, "--password-stdin", stdin="first-admin-pass\n", env=env)
    assert ok.returncode == 0, ok.stderr
    assert ok.stdout.strip() == f"logged in to {up.url} as admin (admin)"
    saved = tmp_path / "config" / "credentials.json"
    assert oct(saved.stat().st_mode & 0o777) == "0o600"
    token = json.loads(saved.read_text())[up.url]["token"]

    os.environ["FLOWBROKER_CONFIG_DIR"] = str(tmp_path / "config")
    try:
        from flowbroker.commands import CommandError
        from flowbroker.commands.platform import api_request, api_token

        assert api_token(up.url) == token
        assert api_request("GET", "/api/auth/me", api=up.url)["username"] == "admin"
        with pytest.raises(CommandError, match=r"GET /api/flows/999: 404: no flow with id 999"):
            api_request("GET", "/api/flows/999", api=up.url)
    finally:
        del os.environ["FLOWBROKER_CONFIG_DIR"]
    unreachable = run("login", "--api", "http://127.0.0.1:9", "--password-stdin", stdin="x\n", env=env)
    assert unreachable.returncode == 1 and unreachable.stderr.startswith(
        "flowbroker: error: cannot reach the API"
    )
    assert up.stop() == 0
