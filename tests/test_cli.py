"""The `flowbroker` command's contract: subcommands exist and user errors are one line."""

from __future__ import annotations

import subprocess
import sys


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "flowbroker.cli", *args], capture_output=True, text=True, timeout=60
    )


def test_no_subcommand_is_a_usage_error() -> None:
    result = run()
    assert result.returncode == 2
    assert "usage: flowbroker" in result.stderr
    assert "Traceback" not in result.stderr


def test_unknown_subcommand_is_a_usage_error() -> None:
    result = run("frobnicate")
    assert result.returncode == 2
    assert "invalid choice: 'frobnicate'" in result.stderr
