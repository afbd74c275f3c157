"""Seed 000's publish/subscribe measurements: subscribers vs elapsed time, dummy subscriptions, shared vs per-subscriber queues, the bank scenario.

Elapsed times are what the seed measured: from a publication until its subscriber(s) retrieved
it, by correlation id from a shared queue unless the scenario asks for a queue per subscriber.

The bank scenario (five queue managers joined by channels in the seed) runs on one queue
manager here: the broker is the publication flow in an execution group and its stream queue
that flow's input queue; the rate rises until that queue's depth no longer stays bounded (the
seed stopped at a QDepthHi event on the broker's stream queue). The two-broker loopback test
has no counterpart: there are no channels between queue managers to loop through.
"""

from __future__ import annotations

import argparse
import threading
import time
from dataclasses import replace
from statistics import median
from typing import Any

from flowbroker_bench.core import Row, Scenario

TOPIC = "seed000/news"


def _ints(text: str) -> list[int]:
    try:
        values = [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise ValueError(f"expected comma-separated integers, got {text!r}") from None
    if not values or any(v < 0 for v in values):
        raise ValueError(f"expected non-negative integers, got {text!r}")
    return values


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--repeats", type=int, default=30, help="publications timed per row (median quoted)")
    parser.add_argument("--engine-core", type=int, default=1)
    parser.add_argument("--load-core", type=int, default=0)


def _correl(i: int) -> bytes:
    return b"SEED000-SUB" + i.to_bytes(13, "big")


def _subscribe(client: Any, topic: str, queue: str, count: int, prefix: str, start: int = 0) -> list[str]:
    names = []
    for i in range(start, start + count):
        name = f"{prefix}.{i}"
        client.subscribe(topic, queue, name=name, correl_id=_correl(i), durable=False)
        names.append(name)
    return names


def _timed_round(client: Any, body: bytes, md: Any, queue: str, expected: int) -> float:
    """Publish once and take every copy off the shared queue: elapsed ms until the last arrives."""
    started = time.perf_counter()
    deliveries = client.publish(TOPIC, body, md)
    if deliveries != expected:
        raise ValueError(f"publication reached {deliveries} subscribers, expected {expected}")
    got = 0
    while got < expected:
        batch = client.get_many(queue, expected - got, wait=5.0)
        if not batch:
            raise ValueError(f"only {got} of {expected} publications arrived within 5 s")
        got += len(batch)
    return (time.perf_counter() - started) * 1000


def run_subscribers(args: argparse.Namespace) -> list[Row]:
    from flowbroker_bench import _qmload

    _qmload.pin({args.load_core})
    rows: list[Row] = []
    persistence = ["np", "p"] if args.persistence == "both" else [args.persistence]
    with _qmload.queue_manager(args.engine_core) as qm:
        client = qm.client()
        client.define_queue("SEED000.SUBQ", replace=True, max_depth=1_000_000)
        for size in _ints(args.sizes):
            body = b"s" * size
            for n in _ints(args.subscribers):
                names = _subscribe(client, TOPIC, "SEED000.SUBQ", n, "s000")
                for pers in persistence:
                    md = _qmload.md(pers == "p")
                    _timed_round(client, body, md, "SEED000.SUBQ", n)  # warm-up
                    times = [_timed_round(client, body, md, "SEED000.SUBQ", n) for _ in range(args.repeats)]
                    elapsed = median(times)
                    column = "persistent_broker_ms" if pers == "p" else "nonpersistent_broker_ms"
                    rows.append(
                        {
                            "message_size": size,
                            "subscribers": n,
                            "persistence": pers,
                            "elapsed_ms": round(elapsed, 3),
                            "msgs_per_sec": round(n * 1000 / elapsed),
                            "figure": "elapsed_ms",
                            "seed": f"000/subscribers/{size}-{n}#{column}",
                        }
                    )
                for name in names:
                    client.unsubscribe(name)
        client.close()
    return rows


def run_dummies(args: argparse.Namespace) -> list[Row]:
    from flowbroker_bench import _qmload

    _qmload.pin({args.load_core})
    rows: list[Row] = []
    body = b"d" * 10
    md = _qmload.md(False)
    layouts = ["single", "multiple"] if args.layout == "both" else [args.layout]
    with _qmload.queue_manager(args.engine_core) as qm:
        client = qm.client()
        client.define_queue("SEED000.SUBQ", replace=True, max_depth=1_000_000)
        client.define_queue("SEED000.DUMMYQ", replace=True, max_depth=1_000_000)
        for layout in layouts:
            for dummies in _ints(args.dummies):
                dummy_names = []
                for i in range(dummies):
                    topic = "seed000/dummy" if layout == "single" else f"seed000/dummy/{i}"
                    name = f"dummy.{i}"
                    client.subscribe(topic, "SEED000.DUMMYQ", name=name, durable=False)
                    dummy_names.append(name)
                for genuine in _ints(args.genuine):
                    names = _subscribe(client, TOPIC, "SEED000.SUBQ", genuine, "g000")
                    _timed_round(client, body, md, "SEED000.SUBQ", genuine)
                    elapsed = median(
                        _timed_round(client, body, md, "SEED000.SUBQ", genuine) for _ in range(args.repeats)
                    )
                    column = "single_topic_ms" if layout == "single" else "multiple_topics_ms"
                    rows.append(
                        {
                            "layout": layout,
                            "genuine_subscribers": genuine,
                            "dummy_subscribers": dummies,
                            "elapsed_ms": round(elapsed, 3),
                            "figure": "elapsed_ms",
                            "seed": f"000/dummy-subscriptions/{genuine}-{dummies}#{column}",
                        }
                    )
                    for name in names:
                        client.unsubscribe(name)
                for name in dummy_names:
                    client.unsubscribe(name)
        client.close()
    return rows


def run_queues(args: argparse.Namespace) -> list[Row]:
    """15 publications, then the time until subscriber 0 has all 15 (seed 000's method)."""
    from flowbroker_bench import _qmload

    _qmload.pin({args.load_core})
    rows: list[Row] = []
    md = _qmload.md(False)
    modes = ["single", "multiple"] if args.mode == "both" else [args.mode]
    with _qmload.queue_manager(args.engine_core) as qm:
        client = qm.client()
        for size in _ints(args.sizes):
            body = b"q" * size
            for mode in modes:
                for n in _ints(args.subscribers):
                    queues = ["SEED000.SHARED"] if mode == "single" else [f"SEED000.SQ.{i}" for i in range(n)]
                    for q in queues:
                        client.define_queue(q, replace=True, max_depth=1_000_000)
                    names = []
                    for i in range(n):
                        queue = queues[0] if mode == "single" else queues[i]
                        names += _subscribe(client, TOPIC, queue, 1, f"q000.{mode}", start=i)
                    times = []
                    for _ in range(max(1, args.repeats // 5)):
                        started = time.perf_counter()
                        for _ in range(15):
                            client.publish(TOPIC, body, md)
                        got = 0
                        while got < 15:
                            batch = client.get_many(queues[0], 15 - got, wait=5.0, correl_id=_correl(0))
                            if not batch:
                                raise ValueError("publications did not reach subscriber 0 within 5 s")
                            got += len(batch)
                        times.append((time.perf_counter() - started) * 1000)
                        for q in queues:
                            client.purge(q)
                    for name in names:
                        client.unsubscribe(name)
                    for q in queues:
                        client.delete_queue(q, purge=True)
                    column = "single_queue_ms" if mode == "single" else "multiple_queues_ms"
                    rows.append(
                        {
                            "mode": mode,
                            "message_size": size,
                            "subscribers": n,
                            "elapsed_ms": round(median(times), 3),
                            "figure": "elapsed_ms",
                            "seed": f"000/subscriber-queues/{size}-{n}#{column}",
                        }
                    )
        client.close()
    return rows


BANK_SUBSCRIBERS = 3


def run_bank(args: argparse.Namespace) -> list[Row]:
    """Persistent publications paced through the publication flow to three subscribers; the MST per size."""
    from flowbroker.qm.protocol import MessageDescriptor

    from flowbroker_bench import _qmload, bodies, mst
    from flowbroker_bench.appendix_b import select
    from flowbroker_bench.flow import Bench

    if args.load_core is not None:
        _qmload.pin({args.load_core})
    (case,) = select(["publication"])
    rows: list[Row] = []
    with Bench(args, database=False) as bench:
        bench.start_group("default")
        bench.apply(case, 1024)
        queues = [case.out_queue] + [f"{case.out_queue}.{n}" for n in range(2, BANK_SUBSCRIBERS + 1)]
        with bench.qm.client() as admin:
            for n, queue in enumerate(queues, 1):
                if n > 1:
                    admin.define_queue(queue, replace=True, max_depth=1_000_000)
                admin.subscribe(bodies.TOPIC, queue, name=f"bank-subscriber-{n}")
        pids = [bench.qm.pid] + [w.pid for w in bench.workers.values()]
        for size in _ints(args.sizes):
            steps: list[Row] = []

            def step(rate: float, size: int = size, steps: list[Row] = steps) -> mst.Verdict:
                bench.purge(case.in_queue, *queues)
                body, fields = bodies.publication(size, 0)
                md = MessageDescriptor(persistence=1, **fields)
                counter = _qmload.Counter()
                stop = threading.Event()
                getters = [
                    _qmload.getter(bench.qm, q, counter, stop, syncpoint=True, batch=20) for q in queues
                ]
                depth: list[tuple[float, int]] = []
                cpu0, sent, deepest = 0.0, 0, 0
                sent0 = got0 = 0
                client = bench.qm.client()
                start = time.monotonic()
                try:
                    next_sample = args.warmup
                    while (elapsed := time.monotonic() - start) < args.warmup + args.window:
                        due = min(int(elapsed * rate) - sent, 500)
                        if due > 0:
                            client.put_many(case.in_queue, [body] * due, md)
                            sent += due
                        if not cpu0 and elapsed >= args.warmup:
                            cpu0, sent0, got0 = _qmload.engine_cpu(pids), sent, counter.value
                        if elapsed >= next_sample:
                            # the broker's stream queue: what the seed watched for QDepthHi
                            now = int(client.inquire_queue(case.in_queue).get("current_depth") or 0)
                            depth.append((elapsed - args.warmup, now))
                            deepest = max(deepest, now)
                            next_sample += 0.25
                        time.sleep(0.002)
                finally:
                    client.close()
                stopped = time.monotonic()
                window_sent, window_got = sent - sent0, counter.value - got0
                cpu = _qmload.engine_cpu(pids) - cpu0
                expected = sent * len(queues)
                while counter.value < expected and time.monotonic() < stopped + 10:
                    time.sleep(0.02)
                stop.set()
                for t in getters:
                    t.join(5)
                verdict = mst.judge(
                    rate,
                    window_sent / args.window,
                    depth,
                    max(0, expected - counter.value),
                    max(0.0, counter.last - stopped),
                    sent_rate=window_sent / args.window,
                )
                if deepest >= args.qdepth_hi:
                    reason = f"QDepthHi: stream queue depth reached {deepest:,}"
                    verdict = replace(verdict, sustainable=False, reasons=(*verdict.reasons, reason))
                steps.append(
                    {
                        "scenario": "bank",
                        "step": "ramp",
                        "message_size": size,
                        "offered_rate": round(rate),
                        "msgs_per_sec": round(window_sent / args.window),
                        "deliveries_per_sec": round(window_got / args.window),
                        "max_stream_depth": deepest,
                        "cpu_ms_per_msg": round(1000 * cpu / window_sent, 3) if window_sent else None,
                        "lost": verdict.lost,
                        "sustainable": "yes" if verdict.sustainable else "no: " + "; ".join(verdict.reasons),
                    }
                )
                return verdict

            ramp = mst.run_ramp(
                mst.ramp_rates(args.start_rate, args.factor, args.max_rate), step, refine=args.refine
            )
            rows += steps if args.steps else []
            rows.append(
                {
                    "scenario": "bank",
                    "step": "MST",
                    "engine": "flowbroker qm + publication flow",
                    "message_size": size,
                    "persistence": "p",
                    "subscriptions": len(queues),
                    "msgs_per_sec": round(ramp.mst),
                    "figure": "msgs_per_sec",
                    "seed": f"000/bank/{size}",
                    "note": "one queue manager, no channels: the broker's stream queue is the flow's input queue",
                }
            )
    return rows


def _args_bank(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--sizes", default="10,100,1000,3000,6000,10000")
    parser.add_argument("--warmup", type=float, default=3.0)
    parser.add_argument("--window", type=float, default=20.0)
    parser.add_argument("--start-rate", type=float, default=20.0)
    parser.add_argument("--factor", type=float, default=1.5)
    parser.add_argument("--max-rate", type=float, default=20_000.0)
    parser.add_argument("--refine", type=int, default=2)
    parser.add_argument(
        "--qdepth-hi",
        type=int,
        default=4000,
        help="stream queue depth that ends a step (MQ's default QDEPTHHI: 80%% of MAXDEPTH 5000)",
    )
    parser.add_argument("--steps", action="store_true", help="print every ramp step")
    parser.add_argument("--no-fsync", action="store_true", help="queue manager without fsync (optimistic)")
    parser.add_argument("--engine-core", type=int, default=None)
    parser.add_argument("--load-core", type=int, default=None)


def _args_subscribers(parser: argparse.ArgumentParser) -> None:
    _common(parser)
    parser.add_argument("--sizes", default="10,100,1000")
    parser.add_argument("--subscribers", default="1,2,4,8,16,32,64,128")
    parser.add_argument("--persistence", choices=("np", "p", "both"), default="both")


def _args_dummies(parser: argparse.ArgumentParser) -> None:
    _common(parser)
    parser.add_argument("--genuine", default="1,2,4,8,16,32,64,128")
    parser.add_argument("--dummies", default="0,10,100,1000,10000")
    parser.add_argument("--layout", choices=("single", "multiple", "both"), default="both")


def _args_queues(parser: argparse.ArgumentParser) -> None:
    _common(parser)
    parser.add_argument("--sizes", default="10,1000")
    parser.add_argument("--subscribers", default="1,5,10,20,40,80,120,160,200,240")
    parser.add_argument("--mode", choices=("single", "multiple", "both"), default="both")


SCENARIOS = {
    "seed000-subscribers": Scenario(
        "seed000-subscribers",
        "seed 000: elapsed time to deliver one publication to 1-128 subscribers",
        run_subscribers,
        _args_subscribers,
        tags=("seed000",),
    ),
    "seed000-dummy-subscriptions": Scenario(
        "seed000-dummy-subscriptions",
        "seed 000: elapsed time with up to 10,000 dummy subscriptions on one or many topics",
        run_dummies,
        _args_dummies,
        tags=("seed000",),
    ),
    "seed000-bank": Scenario(
        "seed000-bank",
        "seed 000: the bank scenario's highest persistent publication rate to 3 subscribers before the "
        "broker's stream queue backs up, through the publication flow",
        run_bank,
        _args_bank,
        tags=("seed000", "mst"),
    ),
    "seed000-subscriber-queues": Scenario(
        "seed000-subscriber-queues",
        "seed 000: one shared subscriber queue vs a queue per subscriber (15 publications)",
        run_queues,
        _args_queues,
        tags=("seed000",),
    ),
}
