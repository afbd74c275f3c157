"""`flowbroker bench http`: HTTPInput → Compute (ESQL) → HTTPReply with 1 KB JSON, keep-alive clients.

The execution group's runtime runs in a child process pinned to the engine core (``--engine-core``),
serving the flow on its HTTP listener exactly as a worker does; the load generator, in this process
on the load core, keeps ``--clients`` keep-alive connections each with one request in flight
(closed loop). Each reply is checked (scenario A of the peers: ``status`` set to ``processed``) so
a figure from wrong answers never reaches the table. The rows give requests per second over the
window, the engine's CPU milliseconds per request and the latency percentiles. ``--nodered`` adds
Node-RED 4's ``http in → change → http response`` under the same load, pinned the same way.
"""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys
import tempfile
import threading
import time
from functools import partial
from pathlib import Path
from typing import Any

from flowbroker_bench.core import Row, Scenario

SET_STATUS = """CREATE COMPUTE MODULE SetStatus
CREATE FUNCTION Main() RETURNS BOOLEAN
BEGIN
  SET OutputRoot = InputRoot;
  SET OutputRoot.JSON.Data.status = 'processed';
  RETURN TRUE;
END;
END MODULE;"""


def document(instances: int) -> dict[str, Any]:
    return {
        "name": "BenchHttp",
        "properties": {"additionalInstances": instances - 1},
        "nodes": [
            {
                "id": "in",
                "type": "HTTPInput",
                "properties": {"path": "/bench", "method": "POST", "messageDomain": "JSON"},
            },
            {"id": "compute", "type": "Compute", "properties": {"esql": SET_STATUS, "module": "SetStatus"}},
            {"id": "reply", "type": "HTTPReply", "properties": {}},
        ],
        "connections": [
            {"from": {"node": "in", "terminal": "out"}, "to": {"node": "compute", "terminal": "in"}},
            {"from": {"node": "compute", "terminal": "out"}, "to": {"node": "reply", "terminal": "in"}},
        ],
    }


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--clients", type=int, default=8, help="keep-alive connections, one request each in flight"
    )
    parser.add_argument("--instances", type=int, action="append", help="flow threads (default: 1 and 4)")
    parser.add_argument("--warmup", type=float, default=3.0, help="seconds discarded before the window")
    parser.add_argument("--window", type=float, default=10.0, help="measured seconds")
    parser.add_argument("--size", type=int, default=1024, help="request body bytes")
    parser.add_argument("--engine-core", type=int, default=1)
    parser.add_argument("--load-core", type=int, default=0)
    parser.add_argument(
        "--nodered",
        action="store_true",
        help="also run Node-RED 4's http in -> change -> http response (installed with npm into --scratch)",
    )
    parser.add_argument("--scratch", default="/tmp/flowbroker-peers", help="where node-red@4 is installed")


def run(args: argparse.Namespace) -> list[Row]:
    from flowbroker_bench.peers.loadgen import pin
    from flowbroker_bench.peers.workloads import json_message

    if args.clients < 1 or args.window <= 0:
        raise ValueError("--clients must be at least 1 and --window positive")
    pin({args.load_core})
    body = json_message(1, args.size)
    rows: list[Row] = []
    with tempfile.TemporaryDirectory(prefix="flowbroker-bench-http-") as scratch:
        workdir = Path(scratch)
        for instances in args.instances or [1, 4]:
            rows.append(
                _measure(
                    "HTTPInput -> Compute -> HTTPReply",
                    instances,
                    partial(_our_engine, instances, args.engine_core, workdir),
                    body,
                    args,
                )
            )
        if args.nodered:
            from flowbroker_bench.peers.nodered import install

            red, version = install(Path(args.scratch))
            rows.append(
                _measure(
                    f"Node-RED {version}: http in -> change -> http response",
                    1,
                    partial(_nodered_engine, red, args.engine_core, workdir),
                    body,
                    args,
                )
            )
    return rows


def _our_engine(instances: int, core: int, workdir: Path, port: int) -> Any:
    from flowbroker_bench.peers.processes import Child, taskset_prefix

    argv = [
        *taskset_prefix(core),
        sys.executable,
        "-m",
        "flowbroker_bench.http_flow",
        "--port",
        str(port),
        "--instances",
        str(instances),
    ]
    return Child(argv, workdir, workdir / f"engine-{instances}-{port}.log")


def nodered_flow() -> list[dict[str, Any]]:
    """Node-RED's side: the same route, the same field set, the reply from the same message."""
    return [
        {"id": "fb.tab", "type": "tab", "label": "bench http"},
        {
            "id": "fb.in",
            "type": "http in",
            "z": "fb.tab",
            "url": "/bench",
            "method": "post",
            "upload": False,
            "swaggerDoc": "",
            "wires": [["fb.set"]],
        },
        {
            "id": "fb.set",
            "type": "change",
            "z": "fb.tab",
            "name": "set status",
            "rules": [{"t": "set", "p": "payload.status", "pt": "msg", "to": "processed", "tot": "str"}],
            "wires": [["fb.out"]],
        },
        {
            "id": "fb.out",
            "type": "http response",
            "z": "fb.tab",
            "statusCode": "",
            "headers": {},
            "wires": [],
        },
    ]


def _nodered_engine(red: Path, core: int, workdir: Path, port: int) -> Any:
    import json
    import shutil

    from flowbroker_bench.peers.processes import Child, taskset_prefix

    userdir = workdir / f"nodered-http-{port}"
    userdir.mkdir(parents=True)
    (userdir / "flows.json").write_text(json.dumps(nodered_flow()))
    (userdir / "settings.js").write_text(
        "module.exports = {\n"
        f"  uiPort: {port}, uiHost: '127.0.0.1', httpAdminRoot: false, httpNodeRoot: '/',\n"
        "  flowFile: 'flows.json', credentialSecret: false, contextStorage: {},\n"
        "  logging: {console: {level: 'warn', metrics: false, audit: false}},\n"
        "  externalModules: {autoInstall: false}, telemetry: {enabled: false}\n"
        "};\n"
    )
    node = shutil.which("node") or "node"
    argv = [
        *taskset_prefix(core),
        node,
        str(red),
        "--settings",
        str(userdir / "settings.js"),
        "--userDir",
        str(userdir),
    ]
    return Child(argv, userdir, userdir / "node-red.log")


def _measure(label: str, instances: int, start: Any, body: bytes, args: argparse.Namespace) -> Row:
    """Start an engine on a free port, load it for the window, stop it; one row."""
    from flowbroker_bench.peers.loadgen import cpu_seconds
    from flowbroker_bench.peers.processes import free_port, wait_port

    port = free_port()
    child = start(port)
    try:
        wait_port("127.0.0.1", port, 60, child.process)
        _wait_served(port, body, child)
        requests, seconds, cpu_s, latencies, wrong = asyncio.run(
            _load(port, body, args.clients, args.warmup, args.window, partial(cpu_seconds, [child.pid]))
        )
    except OSError as exc:
        raise OSError(f"{exc}; engine log: {child.tail()}") from None
    finally:
        child.stop()
    latencies.sort()
    return {
        "flow": label,
        "body_bytes": len(body),
        "clients": args.clients,
        "instances": instances,
        "requests": requests,
        "msgs_per_s": round(requests / seconds, 1),
        "cpu_ms_per_req": round(1000 * cpu_s / requests, 3) if requests else None,
        "p50_ms": round(1000 * latencies[len(latencies) // 2], 2) if latencies else None,
        "p99_ms": round(1000 * latencies[int(len(latencies) * 0.99)], 2) if latencies else None,
        "wrong": wrong,
    }


def _wait_served(port: int, body: bytes, child: Any, timeout: float = 60.0) -> None:
    """Until the flow answers (the port opens when the listener does, the route a moment later)."""
    import httpx

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if child.process.poll() is not None:
            raise OSError(f"the engine exited with status {child.process.returncode}")
        try:
            answer = httpx.post(
                f"http://127.0.0.1:{port}/bench",
                content=body,
                headers={"Content-Type": "application/json"},
                timeout=5,
            )
            if answer.status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.05)
    raise OSError(f"the flow did not answer on port {port} within {timeout:g} s")


async def _load(
    port: int, body: bytes, clients: int, warmup: float, window: float, engine_cpu: Any
) -> tuple[int, float, float, list[float], int]:
    """Closed loop over ``clients`` keep-alive connections; counts what completes in the window."""
    from flowbroker_bench.peers.workloads import check_json_output

    request = (
        f"POST /bench HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    ).encode() + body
    state = {"measuring": False, "stop": False, "count": 0, "wrong": 0}
    latencies: list[float] = []

    async def client() -> None:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        checked = 0
        try:
            while not state["stop"]:
                started = time.perf_counter()
                writer.write(request)
                head = await reader.readuntil(b"\r\n\r\n")
                length = 0
                for line in head.split(b"\r\n"):
                    if line.lower().startswith(b"content-length:"):
                        length = int(line.split(b":", 1)[1])
                payload = await reader.readexactly(length)
                elapsed = time.perf_counter() - started
                # every client checks its first replies and one in a hundred after
                if (checked < 3 or state["count"] % 100 == 0) and (
                    not head.startswith(b"HTTP/1.1 200") or check_json_output(payload)
                ):
                    state["wrong"] += 1
                checked += 1
                if state["measuring"]:
                    state["count"] += 1
                    latencies.append(elapsed)
        finally:
            writer.close()

    tasks = [asyncio.ensure_future(client()) for _ in range(clients)]
    await asyncio.sleep(warmup)
    cpu_before = engine_cpu()
    state["measuring"] = True
    began = time.perf_counter()
    await asyncio.sleep(window)
    state["measuring"] = False
    seconds = time.perf_counter() - began
    cpu_s = engine_cpu() - cpu_before
    state["stop"] = True
    done, _ = await asyncio.wait(tasks, timeout=30)
    for task in done:
        if task.exception() is not None:
            raise OSError(f"a client failed: {task.exception()}")
    return int(state["count"]), seconds, cpu_s, latencies, int(state["wrong"])


def main(argv: list[str] | None = None) -> int:
    """The engine process: the runtime of an execution group serving the flow until SIGTERM."""
    parser = argparse.ArgumentParser(prog="http_flow")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--instances", type=int, default=1)
    args = parser.parse_args(argv)

    from flowbroker.runtime.engine import ExecutionGroupRuntime
    from flowbroker.runtime.http_listener import HTTPListener

    def no_transport() -> Any:
        return None  # the flow puts no message: no transport connection

    runtime = ExecutionGroupRuntime(
        no_transport,
        trace_dir=Path(tempfile.gettempdir()),
        http=HTTPListener("127.0.0.1", args.port),
    )
    done = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: done.set())
    signal.signal(signal.SIGINT, lambda *_: done.set())
    runtime.deploy(document(args.instances))
    print("ready", flush=True)
    done.wait()
    stats = runtime.statistics()["BenchHttp"]
    runtime.shutdown(timeout=10)
    print(f"messages_in={stats['messages_in']} errors={stats['errors']} {stats['last_errors']}", flush=True)
    return 0


SCENARIOS = {
    "http": Scenario(
        "http",
        "HTTPInput -> Compute (ESQL sets a JSON field) -> HTTPReply, 1 KB JSON over keep-alive connections",
        run,
        add_arguments,
        tags=("http",),
    ),
}

if __name__ == "__main__":
    sys.exit(main())
