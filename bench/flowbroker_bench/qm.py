"""The queue manager's measurements (`flowbroker bench qm-…`): throughput, request/reply, pub/sub, deep queues.

The side-by-side with RabbitMQ (`qm-vs-rabbitmq`) lives in :mod:`flowbroker_bench.qm_vs_rabbitmq`.

Each scenario starts its own `flowbroker qm` child process pinned to one core (``--server-cpu``)
while this process drives it from the other, as BENCHMARKING.md asks; figures are closed-loop
(a bounded number of messages in flight per connection) and labelled so. Alongside msgs/s every
row gives the server's CPU-ms per message from /proc, which survives a noisy machine better.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import tempfile
import time
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

from flowbroker_bench.core import Row, Scenario

_TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def _cpu_seconds(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as fh:
        fields = fh.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / _TICK


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--seconds", type=float, default=10.0, help="measurement window (after warm-up)")
    p.add_argument("--warmup", type=float, default=3.0)
    p.add_argument("--size", type=int, default=1024, help="message body bytes")
    p.add_argument("--batch", type=int, default=100, help="messages per frame / per unit of work")
    p.add_argument("--server-cpu", type=int, default=1, help="core the queue manager is pinned to (-1: none)")
    p.add_argument("--client-cpu", type=int, default=0, help="core this driver is pinned to (-1: none)")


def _pin(cpu: int) -> None:
    if cpu >= 0 and hasattr(os, "sched_setaffinity"):
        try:
            os.sched_setaffinity(0, {cpu})
        except OSError:
            pass


class _Server:
    """A queue manager child for one scenario, in a temporary data directory."""

    def __init__(self, args: argparse.Namespace) -> None:
        from flowbroker.qm.harness import QueueManagerProcess

        self._tmp = tempfile.TemporaryDirectory(prefix="fbqm-bench-")
        cpu = args.server_cpu if args.server_cpu >= 0 else None
        self.qm = QueueManagerProcess(Path(self._tmp.name), cpu=cpu)

    def __enter__(self) -> _Server:
        self.qm.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.qm.stop()
        self._tmp.cleanup()

    async def client(self) -> Any:
        from flowbroker.qm.client import AsyncClient

        return await AsyncClient.connect(self.qm.url, data_dir=str(self.qm.data_dir))

    def cpu(self) -> float:
        return _cpu_seconds(self.qm.pid)


async def _window(
    server: _Server, warmup: float, seconds: float, counter: list[int], stop: asyncio.Event
) -> tuple[int, float, float]:
    """Count what ``counter[0]`` gains over the window; returns (count, seconds, server CPU s)."""
    await asyncio.sleep(warmup)
    c0, t0, cpu0 = counter[0], time.perf_counter(), server.cpu()
    await asyncio.sleep(seconds)
    c1, t1, cpu1 = counter[0], time.perf_counter(), server.cpu()
    stop.set()
    return c1 - c0, t1 - t0, cpu1 - cpu0


def _row(name: str, count: int, elapsed: float, cpu: float, **extra: Any) -> Row:
    row: Row = {"scenario": name, "msgs/s": count / elapsed if elapsed else 0.0}
    row["server CPU-ms/msg"] = round(cpu * 1000 / count, 4) if count else None
    row.update(extra)
    return row


async def _put_get(
    server: _Server, args: argparse.Namespace, *, putters: int, getters: int, persistent: bool
) -> tuple[int, float, float]:
    from flowbroker.qm.protocol import MessageDescriptor

    setup = await server.client()
    await setup.define_queue("BENCH.Q", replace=True, max_depth=5_000_000)
    await setup.close()
    body = b"x" * args.size
    md = MessageDescriptor(persistence=1 if persistent else 0)
    stop = asyncio.Event()
    moved = [0]
    uow = persistent

    async def put_loop() -> None:
        c = await server.client()
        bodies = [body] * args.batch
        try:
            while not stop.is_set():
                # Two frames in flight per connection: the next batch travels while one is served.
                c.put_async("BENCH.Q", bodies, md, syncpoint=uow)
                c.put_async("BENCH.Q", bodies, md, syncpoint=uow)
                if uow:
                    await c.commit()
                else:
                    await c.flush()
        finally:
            await c.close()

    async def get_loop() -> None:
        c = await server.client()
        try:
            while not stop.is_set():
                raws = await c.get_raw_many("BENCH.Q", args.batch * 2, wait=0.2, syncpoint=uow)
                if uow and raws:
                    await c.commit()
                moved[0] += len(raws)
        finally:
            await c.close()

    async def throttle() -> None:
        # Closed loop: keep the backlog bounded so the figure is what getters sustain.
        c = await server.client()
        try:
            while not stop.is_set():
                depth = (await c.inquire_queue("BENCH.Q"))["available"]
                await asyncio.sleep(0.05 if depth < 50_000 else 0.2)
        finally:
            await c.close()

    tasks = [asyncio.create_task(put_loop()) for _ in range(putters)]
    tasks += [asyncio.create_task(get_loop()) for _ in range(getters)]
    tasks.append(asyncio.create_task(throttle()))
    result = await _window(server, args.warmup, args.seconds, moved, stop)
    await asyncio.gather(*tasks, return_exceptions=True)
    return result


def _run_async(args: argparse.Namespace, body: Callable[[], Coroutine[Any, Any, list[Row]]]) -> list[Row]:
    _pin(args.client_cpu)
    try:
        import uvloop

        uvloop.install()
    except ImportError:
        pass
    return asyncio.run(body())


def _throughput(args: argparse.Namespace, persistent: bool, name: str) -> list[Row]:
    async def body() -> list[Row]:
        with _Server(args) as server:
            count, elapsed, cpu = await _put_get(
                server, args, putters=args.putters, getters=args.getters, persistent=persistent
            )
        return [
            _row(
                name,
                count,
                elapsed,
                cpu,
                connections=f"{args.putters}+{args.getters}",
                persistence="persistent, units of work" if persistent else "non-persistent",
                batch=args.batch,
                loop="closed",
            )
        ]

    return _run_async(args, body)


def _np(args: argparse.Namespace) -> list[Row]:
    return _throughput(args, False, "qm-nonpersistent")


def _pers(args: argparse.Namespace) -> list[Row]:
    return _throughput(args, True, "qm-persistent")


def _conn_args(p: argparse.ArgumentParser) -> None:
    _common(p)
    p.add_argument("--putters", type=int, default=4)
    p.add_argument("--getters", type=int, default=4)


# --- request/reply ------------------------------------------------------------------------------
def _reqreply(args: argparse.Namespace) -> list[Row]:
    """Blocking client: each request and its reply travel in one round trip (Client.request)."""
    _pin(args.client_cpu)
    with _Server(args) as server:
        c = server.qm.client()
        c.define_queue("BENCH.REPLY", replace=True)
        payload = b"r" * args.size
        rows: list[Row] = []
        for label, pipelined in (("request() - put and get in one write", True), ("put, then get", False)):
            deadline = time.perf_counter() + args.warmup
            trips = 0
            started = False
            t0 = cpu0 = 0.0
            while True:
                now = time.perf_counter()
                if not started and now >= deadline:
                    started, trips, t0, cpu0 = True, 0, now, server.cpu()
                    deadline = now + args.seconds
                elif started and now >= deadline:
                    break
                if pipelined:
                    reply = c.request("SYSTEM.BROKER.ECHO", payload, "BENCH.REPLY", wait=5)
                else:
                    from flowbroker.qm.protocol import MessageDescriptor

                    mid = c.put("SYSTEM.BROKER.ECHO", payload, MessageDescriptor(reply_to_q="BENCH.REPLY"))
                    reply = c.get("BENCH.REPLY", correl_id=mid, wait=5)
                if reply is None:
                    raise RuntimeError("no reply within 5 s")
                trips += 1
            elapsed = time.perf_counter() - t0
            cpu = server.cpu() - cpu0
            row = _row("qm-reqreply", trips, elapsed, cpu, connections=1, mode=label)
            row["round trips/s"] = row.pop("msgs/s")
            row["msgs/s (request + reply = 2)"] = 2 * trips / elapsed
            row["server CPU-ms/msg"] = round(cpu * 1000 / (2 * trips), 4) if trips else None
            rows.append(row)
        c.close()
    return rows


# --- pub/sub ------------------------------------------------------------------------------------
async def _publish_rate(
    server: _Server, args: argparse.Namespace, topic: str
) -> tuple[int, float, float, int]:
    c = await server.client()
    stop = asyncio.Event()
    count = [0]
    deliveries = [0]
    payload = b"p" * args.size

    async def loop() -> None:
        while not stop.is_set():
            futs = [c.publish(topic, payload) for _ in range(args.window)]
            for n in await asyncio.gather(*futs):
                deliveries[0] += n
            count[0] += args.window

    task = asyncio.create_task(loop())
    d0 = deliveries[0]
    n, elapsed, cpu = await _window(server, args.warmup, args.seconds, count, stop)
    await task
    await c.close()
    return n, elapsed, cpu, deliveries[0] - d0


async def _drain_forever(server: _Server, queues: list[str], stop: asyncio.Event) -> None:
    c = await server.client()
    try:
        while not stop.is_set():
            idle = True
            for q in queues:
                if await c.purge(q):
                    idle = False
            if idle:
                await asyncio.sleep(0.05)
    finally:
        await c.close()


def _pubsub(args: argparse.Namespace) -> list[Row]:
    async def body() -> list[Row]:
        rows: list[Row] = []
        with _Server(args) as server:
            admin = await server.client()
            await admin.define_queue("BENCH.SUB", max_depth=10_000_000)
            # Alternate none / 10,000 non-matching rounds and keep each side's median round.
            none_runs: list[tuple[int, float, float]] = []
            many_runs: list[tuple[int, float, float]] = []
            for _ in range(args.repeat):
                n, el, cpu, _ = await _publish_rate(server, args, "bench/nomatch/x")
                none_runs.append((n, el, cpu))
                for i in range(args.nonmatching):
                    await admin.subscribe(f"other/{i}/+", "BENCH.SUB", name=f"nm{i}")
                n, el, cpu, _ = await _publish_rate(server, args, "bench/nomatch/x")
                many_runs.append((n, el, cpu))
                for i in range(args.nonmatching):
                    await admin.unsubscribe(f"nm{i}")
            none_runs.sort(key=lambda r: r[0] / r[1])
            many_runs.sort(key=lambda r: r[0] / r[1])
            n, el, cpu = none_runs[len(none_runs) // 2]
            base = n / el
            rows.append(_row("publish, 0 subscriptions", n, el, cpu, subscriptions=0, deliveries=0))
            n, el, cpu = many_runs[len(many_runs) // 2]
            rows.append(
                _row(
                    f"publish, {args.nonmatching} non-matching",
                    n,
                    el,
                    cpu,
                    subscriptions=args.nonmatching,
                    deliveries=0,
                    **{"vs none": round(n / el / base, 3)},
                )
            )
            for fan in args.fanout:
                names = [f"FAN.{fan}.{i}" for i in range(fan)]
                for i, qn in enumerate(names):
                    await admin.define_queue(qn, replace=True, max_depth=10_000_000)
                    await admin.subscribe(f"fan/{fan}/#", qn, name=f"fan{fan}-{i}")
                stop = asyncio.Event()
                drainer = asyncio.create_task(_drain_forever(server, names, stop))
                n, el, cpu, delivered = await _publish_rate(server, args, f"fan/{fan}/t")
                stop.set()
                await drainer
                row = _row(f"fan-out to {fan}", n, el, cpu, subscriptions=fan, deliveries=delivered)
                row["deliveries/s"] = delivered / el
                row["server CPU-ms/delivery"] = round(cpu * 1000 / delivered, 4) if delivered else None
                rows.append(row)
                for qn in names:
                    await admin.delete_queue(qn, purge=True)
            await admin.close()
        return rows

    return _run_async(args, body)


def _pubsub_args(p: argparse.ArgumentParser) -> None:
    _common(p)
    p.add_argument("--nonmatching", type=int, default=10_000)
    p.add_argument("--fanout", type=int, nargs="*", default=[1, 10, 100, 1000])
    p.add_argument("--window", type=int, default=32, help="publications in flight")
    p.add_argument("--repeat", type=int, default=3, help="alternating rounds with and without subscriptions")


# --- deep queue ---------------------------------------------------------------------------------
def _deep(args: argparse.Namespace) -> list[Row]:
    async def body() -> list[Row]:
        import psutil

        rows: list[Row] = []
        with _Server(args) as server:
            c = await server.client()
            buffer = args.buffer_mb * 1024 * 1024
            await c.define_queue("BENCH.DEEP", max_depth=args.depth + 10, memory_buffer=buffer)
            payload = b"d" * args.size

            async def drain(n: int) -> tuple[int, float, float]:
                got = 0
                t0, cpu0 = time.perf_counter(), server.cpu()
                while got < n:
                    raws = await c.get_raw_many("BENCH.DEEP", args.batch)
                    if not raws:
                        break
                    got += len(raws)
                return got, time.perf_counter() - t0, server.cpu() - cpu0

            # Empty-queue rate: fill a little, drain it, repeat (the queue stays shallow).
            shallow = 0
            el_sum = cpu_sum = 0.0
            for _ in range(max(1, args.shallow // 10_000)):
                for _ in range(10_000 // args.batch):
                    c.put_async("BENCH.DEEP", [payload] * args.batch)
                await c.flush()
                n, el, cpu = await drain(10_000)
                shallow += n
                el_sum += el
                cpu_sum += cpu
            rows.append(_row("drain, shallow queue", shallow, el_sum, cpu_sum, depth=10_000))
            t0 = time.perf_counter()
            for i in range(args.depth // args.batch):
                c.put_async("BENCH.DEEP", [payload] * args.batch)
                if i % 20 == 0:
                    await c.flush()
            await c.flush()
            fill = time.perf_counter() - t0
            info = await c.inquire_queue("BENCH.DEEP")
            rss = psutil.Process(server.qm.pid).memory_info().rss
            n, el, cpu = await drain(args.depth)
            peak = (await c.inquire_queue("BENCH.DEEP"))["memory_bytes"]
            row = _row(f"drain, {args.depth:,}-deep queue", n, el, cpu, depth=args.depth)
            row["vs shallow"] = round((n / el) / (shallow / el_sum), 3) if el and el_sum else None
            row["queue memory MB"] = round(info["memory_bytes"] / 2**20, 1)
            row["buffer MB"] = args.buffer_mb
            row["spilled"] = info["spilled_messages"]
            row["server RSS MB at depth"] = round(rss / 2**20, 1)
            row["fill s"] = round(fill, 1)
            row["memory after drain MB"] = round(peak / 2**20, 1)
            rows.append(row)
            await c.close()
        return rows

    return _run_async(args, body)


def _deep_args(p: argparse.ArgumentParser) -> None:
    _common(p)
    p.add_argument("--depth", type=int, default=1_000_000)
    p.add_argument("--shallow", type=int, default=100_000, help="messages drained for the shallow rate")
    p.add_argument("--buffer-mb", type=int, default=64)


SCENARIOS = {
    "qm-nonpersistent": Scenario(
        "qm-nonpersistent",
        "non-persistent 1 KB put + get, 4 putting and 4 getting connections: messages moved per second",
        _np,
        _conn_args,
    ),
    "qm-persistent": Scenario(
        "qm-persistent",
        "persistent 1 KB put + get in units of work (group commit): messages moved per second",
        _pers,
        _conn_args,
    ),
    "qm-reqreply": Scenario(
        "qm-reqreply",
        "synchronous request/reply through the server-side echo queue, one connection",
        _reqreply,
        _common,
    ),
    "qm-pubsub": Scenario(
        "qm-pubsub",
        "publish rate with 0 and 10,000 non-matching subscriptions; fan-out to 1/10/100/1000 subscribers",
        _pubsub,
        _pubsub_args,
    ),
    "qm-deep-queue": Scenario(
        "qm-deep-queue",
        "drain rate of a 1,000,000-message queue (spilled to disk) against a shallow queue, memory bound",
        _deep,
        _deep_args,
    ),
}
