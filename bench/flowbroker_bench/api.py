"""Configuration manager benchmarks: flow save + load requests/s through the API, and `up` time to health."""

from __future__ import annotations

import argparse
import http.client
import json
import multiprocessing
import os
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

PASSWORD = "bench-admin-password"

ESQL = """CREATE COMPUTE MODULE Route_Compute
  CREATE FUNCTION Main() RETURNS BOOLEAN
  BEGIN
    SET OutputRoot = InputRoot;
    SET OutputRoot.XMLNSC.Order.Total = InputRoot.XMLNSC.Order.Qty * InputRoot.XMLNSC.Order.Price;
    RETURN TRUE;
  END;
END MODULE;
"""


def bench_flow(name: str) -> dict[str, Any]:
    """A four-node flow of the size the designer saves: input, compute, filter, output."""
    return {
        "name": name,
        "properties": {"coordinatedTransaction": False, "additionalInstances": 0},
        "nodes": [
            {
                "id": "in1",
                "type": "MQInput",
                "name": "ORDERS.IN",
                "properties": {
                    "queueName": "ORDERS.IN",
                    "transactionMode": "automatic",
                    "messageDomain": "XMLNSC",
                },
                "position": {"x": 40, "y": 80},
            },
            {"id": "c1", "type": "Compute", "properties": {"esql": ESQL}, "position": {"x": 200, "y": 80}},
            {
                "id": "f1",
                "type": "Filter",
                "properties": {
                    "esql": "CREATE FILTER MODULE F CREATE FUNCTION Main() RETURNS BOOLEAN BEGIN RETURN TRUE; END; END MODULE;"
                },
                "position": {"x": 360, "y": 80},
            },
            {
                "id": "out1",
                "type": "MQOutput",
                "properties": {"queueName": "ORDERS.OUT"},
                "position": {"x": 520, "y": 80},
            },
        ],
        "connections": [
            {"from": {"node": "in1", "terminal": "out"}, "to": {"node": "c1", "terminal": "in"}},
            {"from": {"node": "c1", "terminal": "out"}, "to": {"node": "f1", "terminal": "in"}},
            {"from": {"node": "f1", "terminal": "true"}, "to": {"node": "out1", "terminal": "in"}},
        ],
    }


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _pinned(argv: list[str], core: int) -> list[str]:
    if (os.cpu_count() or 1) >= 2 and shutil.which("taskset"):
        return ["taskset", "-c", str(core), *argv]
    return argv


def _request(
    conn: http.client.HTTPConnection, method: str, path: str, body: Any, headers: dict[str, str]
) -> tuple[int, bytes]:
    payload = json.dumps(body).encode() if body is not None else None
    conn.request(method, path, body=payload, headers=headers)
    response = conn.getresponse()
    return response.status, response.read()


def _wait_health(port: int, timeout: float) -> float:
    start = time.monotonic()
    while time.monotonic() - start < timeout:
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=1)
            status, _ = _request(conn, "GET", "/api/health", None, {})
            conn.close()
            if status == 200:
                return time.monotonic() - start
        except OSError:
            pass
        time.sleep(0.01)
    raise OSError(f"the API on port {port} did not answer /api/health within {timeout:.0f}s")


def _client(port: int, token: str, flow_id: int, name: str, warmup: float, window: float, queue: Any) -> None:
    if (os.cpu_count() or 1) >= 2:
        os.sched_setaffinity(0, {0})
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    document = bench_flow(name)
    saves = loads = errors = 0
    latencies: list[float] = []
    start = time.monotonic()
    measure_from = start + warmup
    end = measure_from + window
    while True:
        now = time.monotonic()
        if now >= end:
            break
        for method, path, body in (
            ("PUT", f"/api/flows/{flow_id}", document),
            ("GET", f"/api/flows/{flow_id}", None),
        ):
            t0 = time.monotonic()
            status, _ = _request(conn, method, path, body, headers)
            t1 = time.monotonic()
            if t0 >= measure_from and t1 <= end:
                latencies.append(t1 - t0)
                if status >= 400:
                    errors += 1
                elif method == "PUT":
                    saves += 1
                else:
                    loads += 1
    conn.close()
    queue.put({"saves": saves, "loads": loads, "errors": errors, "latencies": latencies})


def _cpu_seconds(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def run_flow_requests(args: argparse.Namespace) -> list[Row]:
    """Start `flowbroker api` on a fresh SQLite repository and drive save + load requests at it."""
    from flowbroker.commands.platform import prepare_repository
    from flowbroker.settings import Settings

    rows: list[Row] = []
    data = Path(tempfile.mkdtemp(prefix="fb-bench-api-"))
    try:
        settings = Settings(data=data, admin_password=PASSWORD)
        prepare_repository(settings)
        port = _free_port()
        env = {**os.environ, "FLOWBROKER_DATA": str(data), "FLOWBROKER_ADMIN_PASSWORD": PASSWORD}
        server = subprocess.Popen(
            _pinned(
                [sys.executable, "-m", "flowbroker.cli", "api", "--data", str(data), "--port", str(port)], 1
            ),
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        try:
            _wait_health(port, 30)
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            status, raw = _request(
                conn,
                "POST",
                "/api/auth/login",
                {"username": "admin", "password": PASSWORD},
                {"Content-Type": "application/json"},
            )
            if status != 200:
                raise OSError(f"login failed: {status} {raw[:200]!r}")
            token = json.loads(raw)["accessToken"]
            headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
            conn.close()
            for clients in args.clients:
                # A fresh connection: the server closes idle keep-alive connections between runs.
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
                flow_ids = []
                for index in range(clients):
                    name = f"Bench{clients}_{index}"
                    status, raw = _request(conn, "POST", "/api/flows", bench_flow(name), headers)
                    if status != 201:
                        raise OSError(f"creating the bench flow failed: {status} {raw[:300]!r}")
                    flow_ids.append((json.loads(raw)["id"], name))
                conn.close()
                rows.append(_drive(port, token, flow_ids, server.pid, args))
        finally:
            os.killpg(server.pid, signal.SIGTERM)
            server.wait(timeout=30)
    finally:
        shutil.rmtree(data, ignore_errors=True)
    return rows


def _drive(
    port: int, token: str, flow_ids: list[tuple[int, str]], server_pid: int, args: argparse.Namespace
) -> Row:
    context = multiprocessing.get_context("fork")
    queue = context.Queue()
    workers = [
        context.Process(target=_client, args=(port, token, flow_id, name, args.warmup, args.window, queue))
        for flow_id, name in flow_ids
    ]
    for worker in workers:
        worker.start()
    time.sleep(args.warmup)
    cpu_before = _cpu_seconds(server_pid)
    time.sleep(args.window)
    cpu_after = _cpu_seconds(server_pid)
    results = [queue.get(timeout=args.window + 60) for _ in workers]
    for worker in workers:
        worker.join(timeout=30)
    saves = sum(r["saves"] for r in results)
    loads = sum(r["loads"] for r in results)
    latencies = sorted(latency for r in results for latency in r["latencies"])
    total = saves + loads
    return {
        "scenario": "flow save+load (SQLite)",
        "clients": len(flow_ids),
        "requests/s": total / args.window,
        "saves/s": saves / args.window,
        "loads/s": loads / args.window,
        "errors": sum(r["errors"] for r in results),
        "p50 ms": statistics.median(latencies) * 1000 if latencies else None,
        "p99 ms": latencies[int(len(latencies) * 0.99) - 1] * 1000 if latencies else None,
        "server CPU-ms/req": (cpu_after - cpu_before) * 1000 / total if total else None,
        "target": ">= 500 req/s",
    }


def _flow_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--clients", type=int, nargs="+", default=[1, 4], help="concurrent clients per run")
    parser.add_argument("--warmup", type=float, default=3.0, help="seconds discarded before the window")
    parser.add_argument("--window", type=float, default=10.0, help="seconds measured")


def run_up_time(args: argparse.Namespace) -> list[Row]:
    """Time from starting `flowbroker up` (data directory already set up) to a 200 from /api/health."""
    data = Path(tempfile.mkdtemp(prefix="fb-bench-up-"))
    env = {**os.environ, "FLOWBROKER_ADMIN_PASSWORD": PASSWORD}
    times: list[float] = []
    try:
        for attempt in range(args.repeat + 1):
            port, qm_port = _free_port(), _free_port()
            start = time.monotonic()
            process = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "flowbroker.cli",
                    "up",
                    "--data",
                    str(data),
                    "--port",
                    str(port),
                    "--qm-port",
                    str(qm_port),
                ],
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            try:
                _wait_health(port, 60)
                elapsed = time.monotonic() - start
            finally:
                process.send_signal(signal.SIGTERM)
                process.wait(timeout=60)
            if attempt > 0:  # the first start sets the data directory up; it is not what is measured
                times.append(elapsed)
    finally:
        shutil.rmtree(data, ignore_errors=True)
    return [
        {
            "scenario": "flowbroker up -> /api/health 200",
            "runs": len(times),
            "median s": statistics.median(times),
            "min s": min(times),
            "max s": max(times),
            "target": "<= 3 s",
        }
    ]


def _up_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--repeat", type=int, default=5, help="measured starts (after one set-up start)")


SCENARIOS = {
    "api-flows": Scenario(
        "api-flows",
        "flow save (PUT, a new version) + load (GET) requests/s through the REST API on SQLite",
        run_flow_requests,
        _flow_args,
    ),
    "api-up": Scenario(
        "api-up",
        "seconds from starting `flowbroker up` on a set-up data directory to a 200 from /api/health",
        run_up_time,
        _up_args,
    ),
}
