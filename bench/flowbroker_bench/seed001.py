"""Seed 001's streaming queues: duplicating every put to a second queue (BESTEF, MUSTDUP, batched drain) vs pub/sub, scaling putters.

Persistent 2 KB messages as in the seed. Putters put one message at a time outside a unit of
work (closed loop); two getters drain every queue, the duplicates' drainers in batches of 10
for the "drain batch=10" variant. The figure is the applications' put rate (App1 in the seed);
the total rate adds the duplicates the queue manager put itself.

Six duplicates (§6.3) stream to a topic with six subscriptions, or publish to a topic with
seven. A row per putter count is keyed to the seed's Table 1 or 2 cell for that count; a last
row per variant, its peak over the counts, to Table 3 or 4 (§6.4).
"""

from __future__ import annotations

import argparse
import threading
from typing import Any

from flowbroker_bench.core import Row, Scenario

VARIANTS = {
    "baseline": "baseline",
    "bestef": "1-duplicate-streaming-queues-bestef",
    "mustdup": "1-duplicate-streaming-queues-mustdup",
    "bestef-batch": "1-duplicate-streaming-queues-bestef-drain-batch-10",
    "pubsub": "1-duplicate-pub-sub",
    "bestef-pubsub6": "6-duplicates-streaming-queues-bestef-with-pub-sub",
    "pubsub6": "6-duplicates-pub-sub",
}
SIX = ("bestef-pubsub6", "pubsub6")
DUPLICATES = 6


def seed_putters(variant: str) -> list[int]:
    """The putter counts the seed measured the variant with (Table 1 or Table 2)."""
    from flowbroker_bench import seeds

    table = "multiple-duplicates" if variant in SIX else "single-duplicate"
    prefix = f"{VARIANTS[variant]}/"
    return [int(r["putters"]) for r in seeds.table("001", table)["rows"] if str(r["key"]).startswith(prefix)]


def _cell_key(variant: str, putters: int, persistent: bool) -> str | None:
    if not persistent or putters not in seed_putters(variant):
        return None  # Tables 1 and 2 hold persistent runs at the seed's own counts only
    table = "multiple-duplicates" if variant in SIX else "single-duplicate"
    return f"001/{table}/{VARIANTS[variant]}/{putters}#app1_put_rate"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--putters",
        default="seed",
        help="putter counts: seed (each variant's counts in the seed's tables) or a comma list",
    )
    parser.add_argument("--variants", default=",".join(VARIANTS), help=f"any of {', '.join(VARIANTS)}")
    parser.add_argument("--persistence", choices=("np", "p"), default="p")
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--warmup", type=float, default=3.0)
    parser.add_argument("--engine-core", type=int, default=1)
    parser.add_argument("--load-core", type=int, default=0)


def _dup_queues(variant: str) -> list[str]:
    return [f"SEED001.DUP.{i}" for i in range(1, DUPLICATES + 1)] if variant in SIX else ["SEED001.DUP"]


def _setup(admin: Any, variant: str) -> tuple[str, list[tuple[str, int]], bool]:
    """(where putters put, [(queue to drain, batch)], publish instead of put)."""
    admin.define_queue("SEED001.APP", replace=True, max_depth=10_000_000)
    for queue in _dup_queues(variant):
        admin.define_queue(queue, replace=True, max_depth=10_000_000)
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
    if variant == "bestef-pubsub6":
        # §6.3: STREAMQ names a topic with six subscriptions
        for i, queue in enumerate(_dup_queues(variant), 1):
            admin.subscribe("seed001/dup", queue, name=f"s001.dup.{i}", durable=False)
        admin.alter_queue("SEED001.APP", stream_queue="topic:seed001/dup", stream_qos="BESTEF")
        return "SEED001.APP", [("SEED001.APP", 1)] + [(q, 1) for q in _dup_queues(variant)], False
    if variant == "pubsub6":
        # §6.3: the application queue is a topic alias with seven subscriptions
        admin.subscribe("seed001/app", "SEED001.APP", name="s001.app", durable=False)
        for i, queue in enumerate(_dup_queues(variant), 1):
            admin.subscribe("seed001/app", queue, name=f"s001.dup.{i}", durable=False)
        return "seed001/app", [("SEED001.APP", 1)] + [(q, 1) for q in _dup_queues(variant)], True
    raise ValueError(f"unknown variant {variant!r}; known: {', '.join(VARIANTS)}")


def run(args: argparse.Namespace) -> list[Row]:
    from flowbroker_bench import _qmload
    from flowbroker_bench.seed002 import _measure

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
            counts = seed_putters(variant) if args.putters == "seed" else _counts(args.putters)
            measured: list[Row] = []
            for putters in counts:
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
                measured.append(
                    {
                        "variant": variant,
                        "persistence": args.persistence,
                        "putters": putters,
                        "app1_put_rate": round(put / elapsed),
                        "total_rate": round(got / elapsed),
                        "qm_cpu_ms_per_put": round(1000 * cpu / put, 4) if put else None,
                        "driver_cpu_pct": round(100 * driver),
                        "figure": "app1_put_rate",
                        "seed": _cell_key(variant, putters, persistent),
                    }
                )
                if variant in ("pubsub", "pubsub6"):
                    admin.unsubscribe("s001.app")
                if variant in ("pubsub", "bestef-pubsub6", "pubsub6"):
                    for i in range(1, len(_dup_queues(variant)) + 1):
                        admin.unsubscribe("s001.dup" if variant == "pubsub" else f"s001.dup.{i}")
                admin.delete_queue("SEED001.APP", purge=True)
                for queue in _dup_queues(variant):
                    admin.delete_queue(queue, purge=True)
            rows += measured
            rows.append(_peak(variant, measured, persistent))
        admin.close()
    return rows


def _counts(text: str) -> list[int]:
    try:
        counts = [int(p) for p in text.split(",") if p.strip()]
    except ValueError:
        raise ValueError(f"--putters: expected seed or comma-separated integers, got {text!r}") from None
    if not counts or min(counts) < 1:
        raise ValueError(f"--putters: expected positive counts, got {text!r}")
    return counts


def _peak(variant: str, measured: list[Row], persistent: bool) -> Row:
    """§6.4: the variant's highest App1 rate over the putter counts run."""
    best = max(measured, key=lambda r: r["app1_put_rate"])
    mode = "persistent" if persistent else "nonpersistent"
    return {
        "variant": variant,
        "persistence": best["persistence"],
        "putters": f"peak (at {best['putters']})",
        "app1_put_rate": best["app1_put_rate"],
        "total_rate": best["total_rate"],
        "figure": "app1_put_rate",
        "seed": f"001/peak-{mode}/{VARIANTS[variant]}#app1_put_rate",
    }


SCENARIOS = {
    "seed001-streaming": Scenario(
        "seed001-streaming",
        "seed 001: streaming queue duplicates (BESTEF, MUSTDUP, batched drain) vs pub/sub, scaling putters",
        run,
        add_arguments,
        tags=("seed001",),
    )
}
