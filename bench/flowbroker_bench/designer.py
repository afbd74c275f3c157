"""`flowbroker bench designer`: a 300-node flow opened and dragged in headless Chromium, and the initial JS size."""

from __future__ import annotations

import argparse
import gzip
import json
import os
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from flowbroker_bench.core import Row, Scenario

ROOT = Path(__file__).resolve().parents[2]
FRONTEND = ROOT / "frontend"
OPEN_AND_DRAG_LIMIT_MS = 1500
INITIAL_JS_LIMIT_KB = 400


def initial_js_gzip_bytes(dist: Path) -> tuple[int, list[str]]:
    """Gzipped bytes of the JavaScript index.html loads before any lazy import (entry + modulepreloads)."""
    html = (dist / "index.html").read_text()
    refs = re.findall(r'<script[^>]+type="module"[^>]+src="([^"]+)"', html)
    refs += re.findall(r'<link[^>]+rel="modulepreload"[^>]+href="([^"]+)"', html)
    total = 0
    for ref in refs:
        data = (dist / ref.lstrip("/")).read_bytes()
        total += len(gzip.compress(data, compresslevel=9))
    return total, refs


def flow_document(nodes: int) -> dict[str, Any]:
    """MQInput → (nodes - 2) Passthrough → MQOutput, in a grid, every node wired to the next."""
    docs: list[dict[str, Any]] = []
    for i in range(nodes):
        if i == 0:
            node: dict[str, Any] = {"type": "MQInput", "properties": {"queueName": "BENCH.IN"}}
        elif i == nodes - 1:
            node = {"type": "MQOutput", "properties": {"queueName": "BENCH.OUT"}}
        else:
            node = {"type": "Passthrough", "properties": {}}
        node.update(id=f"n{i}", name=f"N{i}", position={"x": (i % 20) * 220, "y": (i // 20) * 140})
        docs.append(node)
    connections = [
        {"from": {"node": f"n{i}", "terminal": "out"}, "to": {"node": f"n{i + 1}", "terminal": "in"}}
        for i in range(nodes - 1)
    ]
    return {"name": f"Bench{nodes}", "nodes": docs, "connections": connections}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--nodes", type=int, default=300, help="nodes in the flow (default 300)")
    parser.add_argument("--repeats", type=int, default=5, help="open-and-drag rounds (default 5)")
    parser.add_argument("--chromium", default="/usr/bin/chromium", help="the Chromium executable")


def run(args: argparse.Namespace) -> list[Row]:
    import httpx
    from flowbroker.commands import CommandError

    dist = FRONTEND / "dist"
    if not (dist / "index.html").is_file():
        raise CommandError("the frontend is not built: run `make frontend` (or `npm run build` in frontend/)")
    if not Path(args.chromium).is_file():
        raise CommandError(f"no Chromium at {args.chromium} (apt-get install chromium)")
    if shutil.which("node") is None:
        raise CommandError("node is not on PATH")
    if args.nodes < 2 or args.repeats < 1:
        raise CommandError("--nodes must be at least 2 and --repeats at least 1")
    js_bytes, refs = initial_js_gzip_bytes(dist)

    password = "bench-Designer-9"
    port, qm_port = _free_port(), _free_port()
    with tempfile.TemporaryDirectory(prefix="fb-bench-designer-") as data:
        env = {**os.environ, "FLOWBROKER_ADMIN_PASSWORD": password, "FLOWBROKER_FRONTEND_DIST": str(dist)}
        proc = subprocess.Popen(
            [sys.executable, "-m", "flowbroker.cli", "up", "--data", data, "--port", str(port)]
            + ["--qm-port", str(qm_port)],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        url = f"http://127.0.0.1:{port}"
        try:
            deadline = time.monotonic() + 60
            while True:
                try:
                    if httpx.get(url + "/api/health", timeout=1).status_code == 200:
                        break
                except httpx.HTTPError:
                    pass
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise CommandError("flowbroker up did not come up for the benchmark")
                time.sleep(0.2)
            # `up` may answer /api/health a moment before it has created the first admin.
            login_deadline = time.monotonic() + 30
            while True:
                login = httpx.post(
                    url + "/api/auth/login", json={"username": "admin", "password": password}, timeout=10
                )
                if login.status_code != 401 or time.monotonic() > login_deadline:
                    break
                time.sleep(0.3)
            if login.status_code != 200:
                raise CommandError(f"cannot log in for the benchmark: {login.status_code} {login.text[:200]}")
            token = login.json()["accessToken"]
            created = httpx.post(
                url + "/api/flows",
                json=flow_document(args.nodes),
                headers={"Authorization": f"Bearer {token}"},
                timeout=60,
            )
            if created.status_code != 201:
                raise CommandError(
                    f"cannot save the benchmark flow: {created.status_code} {created.text[:200]}"
                )
            result = subprocess.run(
                ["node", "e2e/bench-designer.mjs"],
                cwd=FRONTEND,
                env={
                    **os.environ,
                    "FLOWBROKER_URL": url,
                    "FLOWBROKER_PASSWORD": password,
                    "FLOW_ID": str(created.json()["id"]),
                    "FLOW_NODES": str(args.nodes),
                    "REPEATS": str(args.repeats),
                    "CHROMIUM_PATH": args.chromium,
                },
                capture_output=True,
                text=True,
                timeout=600,
            )
        finally:
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
    lines = [line for line in result.stdout.splitlines() if line.startswith("{")]
    if result.returncode != 0 or not lines:
        raise CommandError(f"the browser run failed: {(result.stderr or result.stdout).strip()[-400:]}")
    timings = json.loads(lines[-1])
    open_ms, drag_ms = timings["openMs"], timings["dragMs"]
    both = [o + d for o, d in zip(open_ms, drag_ms, strict=True)]
    return [
        {
            "metric": f"open {args.nodes}-node flow (median of {len(open_ms)})",
            "value": f"{statistics.median(open_ms):.0f} ms",
            "range": f"{min(open_ms)}-{max(open_ms)} ms",
            "limit": "",
            "ok": "",
        },
        {
            "metric": "drag a node until painted (median)",
            "value": f"{statistics.median(drag_ms):.0f} ms",
            "range": f"{min(drag_ms)}-{max(drag_ms)} ms",
            "limit": "",
            "ok": "",
        },
        {
            "metric": "open + drag (median)",
            "value": f"{statistics.median(both):.0f} ms",
            "range": f"{min(both)}-{max(both)} ms",
            "limit": f"{OPEN_AND_DRAG_LIMIT_MS} ms",
            "ok": "yes" if statistics.median(both) <= OPEN_AND_DRAG_LIMIT_MS else "NO",
        },
        {
            "metric": f"initial JS, gzip -9 ({len(refs)} files)",
            "value": f"{js_bytes / 1024:.1f} KB",
            "range": "",
            "limit": f"{INITIAL_JS_LIMIT_KB} KB",
            "ok": "yes" if js_bytes <= INITIAL_JS_LIMIT_KB * 1024 else "NO",
        },
    ]


SCENARIOS = {
    "designer": Scenario(
        "designer",
        "a 300-node flow opens and answers a drag in headless Chromium; the initial JS gzipped",
        run,
        _add_arguments,
        tags=("frontend",),
    )
}
