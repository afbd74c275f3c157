"""Results files: one JSON document per scenario run, with the machine, versions and date, for the report."""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import subprocess
from collections.abc import Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

from flowbroker_bench.core import Row


def machine() -> dict[str, Any]:
    """What the figures were measured on: CPU model, cores, memory, kernel and versions."""
    model = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    memory_gb = 0.0
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                memory_gb = round(int(line.split()[1]) / 1024 / 1024, 1)
    except OSError:
        pass
    versions: dict[str, str] = {"python": platform.python_version()}
    for dist in ("flowbroker", "flowbroker-nodes", "esql", "paho-mqtt", "pika", "lxml", "orjson"):
        try:
            versions[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            continue
    for name, argv in (("node", ["node", "--version"]), ("mosquitto", ["mosquitto", "-h"])):
        versions[name] = _first_line(argv)
    return {
        "cpu": model,
        "cores": os.cpu_count(),
        "memory_gb": memory_gb,
        "kernel": platform.release(),
        "load_average": os.getloadavg() if hasattr(os, "getloadavg") else None,
        "versions": versions,
    }


def _first_line(argv: list[str]) -> str:
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=5)
    except (OSError, subprocess.TimeoutExpired):
        return "not installed"
    for line in (done.stdout + done.stderr).splitlines():
        if line.strip():
            return line.strip()
    return "?"


def save(path: str | os.PathLike[str], scenario: str, args: argparse.Namespace, rows: Sequence[Row]) -> Path:
    options = {k: v for k, v in vars(args).items() if k not in {"func", "bench"} and _plain(v)}
    document = {
        "scenario": scenario,
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "options": options,
        "machine": machine(),
        "rows": list(rows),
    }
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps(document, indent=1, default=str) + "\n")
    return target


def _plain(value: object) -> bool:
    return value is None or isinstance(value, str | int | float | bool | list | tuple)


def load(path: str | os.PathLike[str]) -> dict[str, Any]:
    """One results file, checked for the keys the report needs (ValueError names the file and key)."""
    target = Path(path)
    try:
        document = json.loads(target.read_text())
    except json.JSONDecodeError as exc:
        raise ValueError(f"{target}:{exc.lineno}:{exc.colno}: not a results file: {exc.msg}") from exc
    if not isinstance(document, dict):
        raise ValueError(f"{target}: not a results file: top level is not an object")
    for key in ("scenario", "rows"):
        if key not in document:
            raise ValueError(f"{target}: not a results file: no {key!r}")
    if not isinstance(document["rows"], list):
        raise ValueError(f"{target}: 'rows' is not a list")
    return document
