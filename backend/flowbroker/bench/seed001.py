"""Seed 001's streaming queues: duplicating every put to a second queue (BESTEF, MUSTDUP, batched drain) vs pub/sub, scaling putters.

Persistent 2 KB messages as in the seed. Putters put one message at a time outside a unit of
work (closed loop); two getters drain every queue, the duplicates' drainers in batches of 10
for the "drain batch=10" variant. The figure is the applications' put rate (App1 in the seed);
the total rate adds the duplicates the queue manager put itself.
"""

from __future__ import annotations

import argparse
import threading
from typing import Any

from flowbroker.bench.core import Row, Scenario

VARIANTS = {
    "baseline": "baseline",
    "bestef": "1-duplicate-streaming-queues-bestef",
    "mustdup": "1-duplicate-streaming-queues-mustdup",
    "bestef-batch": "1-duplicate-streaming-queues-bestef-drain-batch-10",
    "pubsub": "1-duplicate-pub-sub",
}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--putters", default="1,4,8")
    parser.add_argument("--variants", default=",".join(VARIANTS), help=f"any of {', '.join(VARIANTS)}")
    parser.add_argument("--persistence", choices=("np", "p"), default="p")
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--warmup", type=float, default=3.0)
    parser.add_argument("--engine-core", type=int, default=1)
    parser.add_argument("--load-core", type=int, default=0)


def _setup(admin: Any, variant: str) -> tuple[str, list[tuple[str, int]], bool]:
    """(where putters put, [(queue to drain, batch)], publish instead of put)."""
    admin.define_queue("SEED001.APP", replace=True, max_depth=10_000_000)
    admin.define_queue("SEED001.DUP", replace=True, max_depth=10_000_000)
    if variant == "baseline":
        return "SEED001.APP", [("SEED001.APP", 1)], False
    if variant in {"bestef", "mustdup", "bestef-batch"}:
        qos = "MUSTDUP" if variant == "mustdup" else "BESTEF"
        admin.alter_queue("SEED001.APP", stream_queue="SEED001.DUP", stream_qos=qos)
        return (
            "SEED001.APP",
            [("SEED001.APP", 1), ("SEED001.DUP", 10 if variant == "bestef-batch" else 1)],
            False,
        )
    if variant == "pubsub":
        admin.subscribe("seed001/app", "SEED001.APP", name="s001.app", durable=False)
        admin.subscribe("seed001/app", "SEED001.DUP", name="s001.dup", durable=False)
        return "seed001/app", [("SEED001.APP", 1), ("SEED001.DUP", 1)], True
    raise ValueError(f"unknown variant {variant!r}; known: {', '.join(VARIANTS)}")


def run(args: argparse.Namespace) -> list[Row]:
    from flowbroker.bench import _qmload
    from flowbroker.bench.seed002 import _measure

    variants = [v.strip() for v in args.variants.split(",") if v.strip()]
    for v in variants:
        if v not in VARIANTS:
            raise ValueError(f"unknown variant {v!r}; known: {', '.join(VARIANTS)}")
    _qmload.pin({args.load_core})
    body = b"s" * 2048
    persistent = args.persistence == "p"
    rows: list[Row] = []
    with _qmload.queue_manager(args.engine_core) as qm:
        admin = qm.client()
        for variant in variants:
            for putters in [int(p) for p in args.putters.split(",")]:
                target, drains, publish = _setup(admin, variant)

                def putter(
                    stop: threading.Event,
                    counts: list[int],
                    i: int,
                    target: str = target,
                    publish: bool = publish,
                ) -> None:
                    client = qm.client()
                    md = _qmload.md(persistent)
                    try:
                        while not stop.is_set():
                            if publish:
                                client.publish(target, body, md)
                            else:
                                client.put(target, body, md)
                            counts[i] += 1
                    finally:
                        client.close()

                def drainer(stop: threading.Event, counts: list[int], i: int, queue: str, batch: int) -> None:
                    client = qm.client()
                    try:
                        while not stop.is_set():
                            counts[i] += len(client.get_many(queue, batch, wait=0.2))
                    finally:
                        client.close()

                workers: list[Any] = [
                    (lambda stop, counts, i=i: putter(stop, counts, i)) for i in range(putters)
                ]
                slot = putters
                for queue, batch in drains:
                    for _ in range(2):
                        workers.append(
                            lambda stop, counts, i=slot, q=queue, b=batch: drainer(stop, counts, i, q, b)
                        )
                        slot += 1
                window, elapsed, cpu, driver = _measure(qm, args, workers)
                put = sum(window[:putters])
                got = sum(window[putters:])
                mode = "persistent" if persistent else "nonpersistent"
                rows.append(
                    {
                        "variant": variant,
                        "persistence": args.persistence,
                        "putters": putters,
                        "app1_put_rate": round(put / elapsed),
                        "total_rate": round(got / elapsed),
                        "qm_cpu_ms_per_put": round(1000 * cpu / put, 4) if put else None,
                        "driver_cpu_pct": round(100 * driver),
                        "figure": "app1_put_rate",
                        "seed": f"001/peak-{mode}/{VARIANTS[variant]}#app1_put_rate",
                    }
                )
                if variant == "pubsub":
                    admin.unsubscribe("s001.app")
                    admin.unsubscribe("s001.dup")
                admin.delete_queue("SEED001.APP", purge=True)
                admin.delete_queue("SEED001.DUP", purge=True)
        admin.close()
    return rows


SCENARIOS = {
    "seed001-streaming": Scenario(
        "seed001-streaming",
        "seed 001: streaming queue duplicates (BESTEF, MUSTDUP, batched drain) vs pub/sub, scaling putters",
        run,
        add_arguments,
        tags=("seed001",),
    )
}
