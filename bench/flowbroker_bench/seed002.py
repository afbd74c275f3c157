"""Seed 002's point-to-point and pub/sub runs: 4-queue PutGet, N:N triplets at a fixed rate, pub/sub 1:N and N:N, client features.

The client features (Tables 12–15) are async put, read-ahead, read-ahead buffer size (in
messages of 2 KB here: our read-ahead counts messages, not bytes) and shared conversations:
ShareCnv 1 gives each application its own connection, ShareCnv 20 lets the six applications of
three triplets share one connection, as MQ lets up to 20 conversations share a socket.

2 KB text messages as the seed used. The driver's own CPU share is printed beside each row: when
it is near 100 % of its core the figure is the driver's, not the queue manager's (Python threads
share one interpreter lock).
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import os
import threading
import time
from collections.abc import Callable
from typing import Any

from flowbroker_bench.core import Row, Scenario

SIZE = 2048


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--seconds", type=float, default=10.0, help="measured window")
    parser.add_argument("--warmup", type=float, default=3.0)
    parser.add_argument("--persistence", choices=("np", "p"), default="np")
    parser.add_argument("--engine-core", type=int, default=1)
    parser.add_argument("--load-core", type=int, default=0)


def _measure(
    qm: Any, args: argparse.Namespace, workers: list[Callable[[threading.Event, list[int]], None]]
) -> tuple[list[int], float, float, float]:
    """Run ``workers`` (each counts into its own slot) through warm-up and window; counts, secs, cpu."""
    from flowbroker_bench import _qmload

    counts = [0] * len(workers)
    stop = threading.Event()
    threads = [threading.Thread(target=w, args=(stop, counts), daemon=True) for w in workers]
    for t in threads:
        t.start()
    time.sleep(args.warmup)
    base = list(counts)
    cpu0, own0, t0 = _qmload.engine_cpu([qm.pid]), os.times(), time.monotonic()
    time.sleep(args.seconds)
    window = [c - b for c, b in zip(counts, base, strict=True)]
    elapsed = time.monotonic() - t0
    cpu, own = _qmload.engine_cpu([qm.pid]) - cpu0, os.times()
    stop.set()
    for t in threads:
        t.join(10)
    driver = (own.user + own.system - own0.user - own0.system) / elapsed
    return window, elapsed, cpu, driver


def _indexed(
    fn: Callable[[threading.Event, list[int], int], None], i: int, stop: threading.Event, counts: list[int]
) -> None:
    fn(stop, counts, i)


def run_4q(args: argparse.Namespace) -> list[Row]:
    from flowbroker_bench import _qmload

    _qmload.pin({args.load_core})
    rows: list[Row] = []
    body = b"x" * SIZE
    persistent = args.persistence == "p"
    with _qmload.queue_manager(args.engine_core) as qm:
        admin = qm.client()
        for i in range(4):
            admin.define_queue(f"SEED002.Q{i}", replace=True)
        for threads in [int(t) for t in args.threads.split(",")]:

            def worker(index: int) -> Callable[[threading.Event, list[int]], None]:
                def loop(stop: threading.Event, counts: list[int]) -> None:
                    client = qm.client()
                    queue = f"SEED002.Q{index % 4}"
                    md = _qmload.md(persistent)
                    try:
                        while not stop.is_set():
                            client.put(queue, body, md)
                            if client.get(queue, wait=1.0) is not None:
                                counts[index] += 1
                    finally:
                        client.close()

                return loop

            window, elapsed, cpu, driver = _measure(qm, args, [worker(i) for i in range(threads)])
            total = sum(window)
            rows.append(
                {
                    "scenario": "p2p 4-queue PutGet",
                    "persistence": args.persistence,
                    "threads": threads,
                    "roundtrips_per_sec": round(total / elapsed),
                    "qm_cpu_ms_per_roundtrip": round(1000 * cpu / total, 4) if total else None,
                    "driver_cpu_pct": round(100 * driver),
                    "figure": "roundtrips_per_sec",
                    "seed": f"002/p2p-4q-binding/{args.persistence}",
                }
            )
        admin.close()
    return rows


def run_nn(args: argparse.Namespace) -> list[Row]:
    from flowbroker_bench import _qmload

    _qmload.pin({args.load_core})
    rows: list[Row] = []
    body = b"x" * SIZE
    persistent = args.persistence == "p"
    with _qmload.queue_manager(args.engine_core) as qm:
        admin = qm.client()
        for triplets in [int(t) for t in args.triplets.split(",")]:
            for i in range(triplets):
                admin.define_queue(f"SEED002.T{i}", replace=True, max_depth=10_000_000)
            workers: list[Callable[[threading.Event, list[int]], None]] = []
            for i in range(triplets):

                def producer(stop: threading.Event, counts: list[int], i: int = i) -> None:
                    client = qm.client()
                    md = _qmload.md(persistent)
                    start, sent = time.monotonic(), 0
                    try:
                        while not stop.is_set():
                            due = int((time.monotonic() - start) * args.rate) - sent
                            if due > 0:
                                n = min(due, 200)
                                client.put_many(f"SEED002.T{i}", [body] * n, md)
                                sent += n
                                counts[2 * i] += n
                            time.sleep(0.002)
                    finally:
                        client.close()

                def consumer(stop: threading.Event, counts: list[int], i: int = i) -> None:
                    client = qm.client()
                    try:
                        while not stop.is_set():
                            counts[2 * i + 1] += len(client.get_many(f"SEED002.T{i}", 200, wait=0.2))
                    finally:
                        client.close()

                workers += [producer, consumer]
            window, elapsed, cpu, driver = _measure(qm, args, workers)
            sent, received = sum(window[0::2]), sum(window[1::2])
            mode = "np" if not persistent else "p"
            rows.append(
                {
                    "scenario": "p2p N:N",
                    "persistence": args.persistence,
                    "triplets": triplets,
                    "rate_per_producer": args.rate,
                    "sender_rate": round(sent / elapsed),
                    "receiver_rate": round(received / elapsed),
                    "msgs_per_sec": round((sent + received) / elapsed),
                    "expected_rate": 2 * triplets * args.rate,
                    "qm_cpu_ms_per_msg": round(1000 * cpu / (sent + received), 4)
                    if sent + received
                    else None,
                    "driver_cpu_pct": round(100 * driver),
                    "seed": f"002/p2p-nn-{mode}/binding#total_rate",
                }
            )
            for i in range(triplets):
                admin.delete_queue(f"SEED002.T{i}", purge=True)
        admin.close()
    return rows


def run_pubsub(args: argparse.Namespace) -> list[Row]:
    from flowbroker_bench import _qmload

    _qmload.pin({args.load_core})
    rows: list[Row] = []
    body = b"x" * SIZE
    persistent = args.persistence == "p"
    with _qmload.queue_manager(args.engine_core) as qm:
        admin = qm.client()
        for subscribers in [int(s) for s in args.subscribers.split(",")]:
            names = []
            for i in range(subscribers):
                admin.define_queue(f"SEED002.S{i}", replace=True, max_depth=10_000_000)
                admin.subscribe("seed002/prices", f"SEED002.S{i}", name=f"s002.{i}", durable=False)
                names.append(f"s002.{i}")

            def publisher(stop: threading.Event, counts: list[int]) -> None:
                client = qm.client()
                md = _qmload.md(persistent)
                try:
                    while not stop.is_set():
                        client.publish("seed002/prices", body, md)
                        counts[0] += 1
                finally:
                    client.close()

            def subscriber(stop: threading.Event, counts: list[int], i: int) -> None:
                client = qm.client()
                try:
                    while not stop.is_set():
                        counts[i + 1] += len(client.get_many(f"SEED002.S{i}", 200, wait=0.2))
                finally:
                    client.close()

            workers: list[Callable[[threading.Event, list[int]], None]] = [publisher]
            workers += [functools.partial(_indexed, subscriber, i) for i in range(subscribers)]
            window, elapsed, cpu, driver = _measure(qm, args, workers)
            published, received = window[0], sum(window[1:])
            rows.append(
                {
                    "scenario": "pub/sub 1:N",
                    "persistence": args.persistence,
                    "subscribers": subscribers,
                    "publish_rate": round(published / elapsed),
                    "subscribe_rate": round(received / elapsed),
                    "msgs_per_sec": round((published + received) / elapsed),
                    "qm_cpu_ms_per_msg": round(1000 * cpu / (published + received), 4)
                    if published + received
                    else None,
                    "driver_cpu_pct": round(100 * driver),
                    "seed": f"002/pubsub-1n-binding/{args.persistence}#total_rate",
                }
            )
            for name in names:
                admin.unsubscribe(name)
            for i in range(subscribers):
                admin.delete_queue(f"SEED002.S{i}", purge=True)
        admin.close()
    return rows


def run_pubsub_nn(args: argparse.Namespace) -> list[Row]:
    """N publisher/topic/subscriber triplets, each publisher at a fixed rate (seed 002 Tables 10–11)."""
    from flowbroker_bench import _qmload

    _qmload.pin({args.load_core})
    rows: list[Row] = []
    body = b"x" * SIZE
    persistent = args.persistence == "p"
    rate = args.rate or (800 if persistent else 1600)
    with _qmload.queue_manager(args.engine_core) as qm:
        admin = qm.client()
        for triplets in [int(t) for t in args.triplets.split(",")]:
            for i in range(triplets):
                admin.define_queue(f"SEED002.P{i}", replace=True, max_depth=10_000_000)
                admin.subscribe(f"seed002/nn/{i}", f"SEED002.P{i}", name=f"s002.nn.{i}", durable=False)
            workers: list[Callable[[threading.Event, list[int]], None]] = []
            for i in range(triplets):

                def publisher(stop: threading.Event, counts: list[int], i: int = i) -> None:
                    client = qm.client()
                    md = _qmload.md(persistent)
                    start, sent = time.monotonic(), 0
                    try:
                        while not stop.is_set():
                            due = int((time.monotonic() - start) * rate) - sent
                            for _ in range(min(due, 200)):
                                client.publish(f"seed002/nn/{i}", body, md)
                                sent += 1
                                counts[2 * i] += 1
                            time.sleep(0.002)
                    finally:
                        client.close()

                def subscriber(stop: threading.Event, counts: list[int], i: int = i) -> None:
                    client = qm.client()
                    try:
                        while not stop.is_set():
                            counts[2 * i + 1] += len(client.get_many(f"SEED002.P{i}", 200, wait=0.2))
                    finally:
                        client.close()

                workers += [publisher, subscriber]
            window, elapsed, cpu, driver = _measure(qm, args, workers)
            published, received = sum(window[0::2]), sum(window[1::2])
            rows.append(
                {
                    "scenario": "pub/sub N:N",
                    "persistence": args.persistence,
                    "triplets": triplets,
                    "rate_per_publisher": rate,
                    "publish_rate": round(published / elapsed),
                    "subscribe_rate": round(received / elapsed),
                    "msgs_per_sec": round((published + received) / elapsed),
                    "expected_rate": 2 * triplets * rate,
                    "qm_cpu_ms_per_msg": round(1000 * cpu / (published + received), 4)
                    if published + received
                    else None,
                    "driver_cpu_pct": round(100 * driver),
                    "seed": f"002/pubsub-nn-{args.persistence}/binding#total_rate",
                }
            )
            for i in range(triplets):
                admin.unsubscribe(f"s002.nn.{i}")
                admin.delete_queue(f"SEED002.P{i}", purge=True)
        admin.close()
    return rows


#: Client features of seed 002 Tables 12–15: (async put, read-ahead messages, one shared
#: connection, triplets or 0 for --triplets-async, seed key).
FEATURES = (
    (True, 0, False, 0, "async-put/async-put-on"),
    (False, 0, False, 0, "async-put/async-put-off"),
    (True, 100, False, 0, "read-ahead/read-ahead-on"),
    (True, 0, False, 0, "read-ahead/read-ahead-off"),
    (False, 0, False, 3, "sharecnv/sharecnv-1"),
    (False, 0, True, 3, "sharecnv/sharecnv-20"),
    (True, 10 * 1024 * 1024 // SIZE, False, 4, "read-ahead-size/buffer-10mb"),
    (True, 10 * 1024 // SIZE, False, 4, "read-ahead-size/buffer-10kb"),
)


def run_async(args: argparse.Namespace) -> list[Row]:
    """N:N closed loop with the asyncio client: async put, read-ahead and its size, shared connections (Tables 12–15)."""
    from flowbroker_bench import _qmload

    _qmload.pin({args.load_core})
    body = b"x" * SIZE
    rows: list[Row] = []

    async def measure(
        qm: Any, async_put: bool, read_ahead: int, shared: bool, triplets: int
    ) -> tuple[float, float]:
        from flowbroker.qm.client import AsyncClient

        stop = asyncio.Event()
        counts = [0, 0]
        common = await AsyncClient.connect(qm.url, data_dir=str(qm.data_dir)) if shared else None

        async def connect() -> Any:
            return common or await AsyncClient.connect(qm.url, data_dir=str(qm.data_dir))

        async def release(client: Any) -> None:
            if client is not common:
                await client.close()

        async def producer(i: int) -> None:
            client = await connect()
            md = _qmload.md(False)
            try:
                while not stop.is_set():
                    if async_put:
                        for _ in range(50):
                            client.put_async(f"SEED002.A{i}", body, md)
                        await client.flush()
                        counts[0] += 50
                    else:
                        await client.put(f"SEED002.A{i}", body, md)
                        counts[0] += 1
            finally:
                await release(client)

        async def consumer(i: int) -> None:
            client = await connect()
            try:
                while not stop.is_set():
                    if await client.get(f"SEED002.A{i}", wait=0.2, read_ahead=read_ahead) is not None:
                        counts[1] += 1
            finally:
                await release(client)

        tasks = [asyncio.create_task(f(i)) for i in range(triplets) for f in (producer, consumer)]
        await asyncio.sleep(args.warmup)
        base, cpu0, t0 = list(counts), _qmload.engine_cpu([qm.pid]), time.monotonic()
        await asyncio.sleep(args.seconds)
        got = counts[1] - base[1]
        elapsed = time.monotonic() - t0
        cpu = _qmload.engine_cpu([qm.pid]) - cpu0
        stop.set()
        await asyncio.gather(*tasks, return_exceptions=True)
        if common is not None:
            await common.close()
        return got / elapsed, (1000 * cpu / got if got else 0.0)

    with _qmload.queue_manager(args.engine_core) as qm:
        admin = qm.client()
        most = max([args.triplets_async] + [f[3] for f in FEATURES])
        for i in range(most):
            admin.define_queue(f"SEED002.A{i}", replace=True, max_depth=10_000_000)
        for async_put, read_ahead, shared, fixed, key in FEATURES:
            triplets = fixed or args.triplets_async
            for i in range(most):
                admin.purge(f"SEED002.A{i}")
            rate, cpu_ms = asyncio.run(measure(qm, async_put, read_ahead, shared, triplets))
            rows.append(
                {
                    "scenario": "p2p N:N asyncio",
                    "triplets": triplets,
                    "async_put": async_put,
                    "read_ahead": read_ahead,
                    "connections": 1 if shared else 2 * triplets,
                    "msgs_per_sec": round(rate),
                    "qm_cpu_ms_per_msg": round(cpu_ms, 4),
                    "seed": f"002/{key}#rate",
                    "note": "received msgs/s (the seed's rate column)",
                }
            )
        admin.close()
    return rows


def _args_4q(p: argparse.ArgumentParser) -> None:
    _common(p)
    p.add_argument("--threads", default="4,8,12,16")


def _args_nn(p: argparse.ArgumentParser) -> None:
    _common(p)
    p.add_argument("--triplets", default="1,2,4,6,8")
    p.add_argument(
        "--rate", type=int, default=3200, help="messages/s per producer thread (seed: constant rate)"
    )


def _args_pubsub(p: argparse.ArgumentParser) -> None:
    _common(p)
    p.add_argument("--subscribers", default="1,2,4,8")


def _args_pubsub_nn(p: argparse.ArgumentParser) -> None:
    _common(p)
    p.add_argument("--triplets", default="1,2,4,6,8,10")
    p.add_argument(
        "--rate",
        type=int,
        default=0,
        help="publications/s per publisher (default the seed's: 1600 non-persistent, 800 persistent)",
    )


def _args_async(p: argparse.ArgumentParser) -> None:
    _common(p)
    p.add_argument("--triplets-async", type=int, default=5)


SCENARIOS = {
    "seed002-p2p-4q": Scenario(
        "seed002-p2p-4q",
        "seed 002: PutGet threads over four queues, 2 KB (closed loop)",
        run_4q,
        _args_4q,
        tags=("seed002",),
    ),
    "seed002-p2p-nn": Scenario(
        "seed002-p2p-nn",
        "seed 002: N:N producer/consumer/queue triplets at a fixed rate per producer",
        run_nn,
        _args_nn,
        tags=("seed002",),
    ),
    "seed002-pubsub-1n": Scenario(
        "seed002-pubsub-1n",
        "seed 002: one publisher, one topic, N subscribers (closed loop)",
        run_pubsub,
        _args_pubsub,
        tags=("seed002",),
    ),
    "seed002-pubsub-nn": Scenario(
        "seed002-pubsub-nn",
        "seed 002: N publisher/topic/subscriber triplets, each publisher at a fixed rate",
        run_pubsub_nn,
        _args_pubsub_nn,
        tags=("seed002",),
    ),
    "seed002-async": Scenario(
        "seed002-async",
        "seed 002: async put, read-ahead and its buffer size, shared connections (ShareCnv) with the asyncio client",
        run_async,
        _args_async,
        tags=("seed002",),
    ),
}
