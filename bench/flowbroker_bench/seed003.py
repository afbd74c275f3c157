"""Seed 003's open-loop runs: ramp the send rate and find the maximum sustainable throughput (MST).

Four qualities of service as the CSIRO study names them: NPNT (non-persistent, no transaction),
PNT (persistent, no transaction), PLT (persistent, each get in a local unit of work) and PGT
(persistent, the unit of work also updates a PostgreSQL row). Our PGT is one-phase — the database
commits, then the queue manager — not XA two-phase commit; the rows say so. With ``--via-flow``
the messages pass through a passthrough flow (MQInput → MQOutput) run by the flow runtime before
the receivers get them, which is the MST the harness issue asks for.
"""

from __future__ import annotations

import argparse
import sys
import threading
import time
from typing import Any

from flowbroker_bench.core import Row, Scenario

QOS = ("NPNT", "PNT", "PLT", "PGT")
IN_QUEUE, OUT_QUEUE = "SEED003.IN", "SEED003.OUT"


def seed_key(qos: str, receivers: int, size: int) -> str:
    if qos == "NPNT":
        return f"003/npnt/{receivers}-{size}"
    if qos == "PNT":
        return f"003/pnt/{receivers}-{size}-tuned"
    if qos == "PLT":
        return f"003/plt/{receivers}-{size}-tuned"
    return f"003/pgt/{receivers}-{size}"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--qos", choices=(*QOS, "all"), default="NPNT")
    parser.add_argument("--size", type=int, default=1024, help="message body bytes (seed: 64, 1024, 4096)")
    parser.add_argument("--receivers", type=int, default=1, help="receiving threads (seed: 1, 5, 15, 20)")
    parser.add_argument("--via-flow", action="store_true", help="pass through an MQInput -> MQOutput flow")
    parser.add_argument(
        "--flow-transaction-mode",
        choices=("yes", "no", "automatic"),
        default=None,
        help="with --via-flow: the MQInput's transaction mode (default: no for NPNT, yes otherwise); "
        "automatic runs non-persistent messages outside a unit of work but gets and puts each batch "
        "of them in one round trip",
    )
    parser.add_argument("--warmup", type=float, default=5.0)
    parser.add_argument("--window", type=float, default=20.0)
    parser.add_argument("--start-rate", type=float, default=500.0)
    parser.add_argument("--factor", type=float, default=1.5)
    parser.add_argument("--max-rate", type=float, default=100_000.0)
    parser.add_argument("--refine", type=int, default=2)
    parser.add_argument("--steps", action="store_true", help="print every ramp step")
    parser.add_argument("--engine-core", type=int, default=1)
    parser.add_argument("--load-core", type=int, default=0)
    parser.add_argument(
        "--postgres", default="postgresql://postgres@127.0.0.1:5432/test", help="PGT's database"
    )


def _pgt_unit(dsn: str) -> Any:
    """Per-thread: update one counter row in PostgreSQL and commit it (the 'global' part of PGT)."""
    import psycopg

    local = threading.local()

    def unit(count: int) -> None:
        conn = getattr(local, "conn", None)
        if conn is None:
            conn = local.conn = psycopg.connect(dsn, autocommit=False)
        with conn.cursor() as cur:
            cur.execute("UPDATE seed003_pgt SET processed = processed + %s WHERE id = 1", (count,))
        conn.commit()

    return unit


def _prepare_pgt(dsn: str) -> None:
    import psycopg

    try:
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute(
                "CREATE TABLE IF NOT EXISTS seed003_pgt (id integer PRIMARY KEY, processed bigint NOT NULL)"
            )
            conn.execute("INSERT INTO seed003_pgt VALUES (1, 0) ON CONFLICT (id) DO NOTHING")
    except psycopg.Error as exc:
        raise OSError(f"PGT needs PostgreSQL at {dsn}: {exc}") from exc


def _start_flow(qm: Any, args: argparse.Namespace, persistent: bool, work: Any) -> Any:
    from flowbroker_bench.peers.processes import Child, taskset_prefix

    argv = [
        *taskset_prefix(args.engine_core),
        sys.executable,
        "-m",
        "flowbroker_bench.peers.engine_host",
        "--flow",
        "passthrough",
        "--qm-url",
        qm.url,
        "--qm-data",
        str(qm.data_dir),
        "--in-queue",
        IN_QUEUE,
        "--out-queue",
        OUT_QUEUE,
        "--transaction-mode",
        args.flow_transaction_mode or ("yes" if persistent else "no"),
    ]
    return Child(argv, qm.data_dir, qm.data_dir / f"flow-{time.monotonic_ns()}.log")


def run_qos(args: argparse.Namespace, qos: str) -> list[Row]:
    from flowbroker_bench import _qmload, mst
    from flowbroker_bench.peers.loadgen import pin

    persistent = qos != "NPNT"
    syncpoint = qos in {"PLT", "PGT"}
    on_unit = None
    if qos == "PGT":
        _prepare_pgt(args.postgres)
        on_unit = _pgt_unit(args.postgres)
    body = b"m" * args.size
    rows: list[Row] = []
    engine = "flowbroker qm" + (" + passthrough flow" if args.via_flow else "")
    if args.via_flow and args.flow_transaction_mode:
        engine += f" (transactionMode {args.flow_transaction_mode})"
    pin({args.load_core})
    with _qmload.queue_manager(args.engine_core) as qm:
        admin = qm.client()
        for name in (IN_QUEUE, OUT_QUEUE):
            admin.define_queue(name, replace=True, max_depth=50_000_000)
        flow = _start_flow(qm, args, persistent, None) if args.via_flow else None
        target = OUT_QUEUE if args.via_flow else IN_QUEUE
        pids = [qm.pid] + ([flow.pid] if flow is not None else [])
        try:

            def step(rate: float) -> mst.Verdict:
                admin.purge(IN_QUEUE)
                admin.purge(OUT_QUEUE)
                counter = _qmload.Counter()
                stop = threading.Event()
                threads = [
                    _qmload.getter(
                        qm,
                        target,
                        counter,
                        stop,
                        syncpoint=syncpoint,
                        batch=1 if syncpoint else 50,
                        on_unit=on_unit,
                    )
                    for _ in range(args.receivers)
                ]
                backlog: list[tuple[float, int]] = []
                marks: dict[str, float] = {}
                next_sample = [args.warmup]

                def tick(elapsed: float, sent: int) -> None:
                    if "cpu0" not in marks and elapsed >= args.warmup:
                        marks["cpu0"] = _qmload.engine_cpu(pids)
                        marks["sent0"], marks["got0"] = sent, counter.value
                    if elapsed >= next_sample[0]:
                        backlog.append((elapsed - args.warmup, sent - counter.value))
                        next_sample[0] += 0.25

                try:
                    sent = _qmload.paced_put(
                        qm,
                        IN_QUEUE,
                        body,
                        rate,
                        args.warmup + args.window,
                        persistent=persistent,
                        on_tick=tick,
                    )
                except Exception as exc:  # a refused put ends the step as unsustainable, with its reason
                    counter.errors.append(f"put failed: {type(exc).__name__}: {exc}")
                    sent = int(marks.get("sent0", 0))
                stopped = time.monotonic()
                window_sent = sent - marks.get("sent0", 0)
                window_got = counter.value - marks.get("got0", 0)
                cpu = _qmload.engine_cpu(pids) - marks.get("cpu0", 0.0)
                deadline = stopped + 10
                while counter.value < sent and time.monotonic() < deadline and not counter.errors:
                    time.sleep(0.02)
                stop.set()
                for t in threads:
                    t.join(5)
                drain = max(0.0, counter.last - stopped)
                verdict = mst.judge(
                    rate,
                    window_got / args.window,
                    backlog,
                    max(0, sent - counter.value),
                    drain,
                    sent_rate=window_sent / args.window,
                )
                if counter.errors:
                    verdict = mst.Verdict(
                        rate,
                        verdict.delivered_rate,
                        False,
                        verdict.backlog_slope,
                        verdict.backlog_end,
                        verdict.lost,
                        verdict.drain_s,
                        (*verdict.reasons, counter.errors[0]),
                    )
                rows.append(
                    {
                        "qos": qos,
                        "step": "ramp",
                        "engine": engine,
                        "offered_rate": round(rate),
                        "msgs_per_sec": round(window_got / args.window),
                        "cpu_ms_per_msg": round(1000 * cpu / window_got, 4) if window_got else None,
                        "backlog_end": verdict.backlog_end,
                        "lost": verdict.lost,
                        "drain_s": round(drain, 2),
                        "sustainable": "yes" if verdict.sustainable else "no: " + "; ".join(verdict.reasons),
                    }
                )
                return verdict

            ramp = mst.run_ramp(
                mst.ramp_rates(args.start_rate, args.factor, args.max_rate), step, refine=args.refine
            )
        finally:
            if flow is not None:
                flow.stop()
            admin.close()
    best = next((r for r in rows if r["offered_rate"] == round(ramp.mst) and r["sustainable"] == "yes"), None)
    summary: Row = {
        "qos": qos,
        "step": "MST",
        "engine": engine,
        "message_size": args.size,
        "receivers": args.receivers,
        "msgs_per_sec": round(ramp.mst),
        "cpu_ms_per_msg": best["cpu_ms_per_msg"] if best else None,
        "seed": seed_key(qos, args.receivers, args.size),
        "note": "one-phase: PostgreSQL commit then queue-manager commit (no XA)" if qos == "PGT" else "",
    }
    return [*(rows if args.steps else []), summary]


def run(args: argparse.Namespace) -> list[Row]:
    if args.size <= 0 or args.receivers <= 0:
        raise ValueError("--size and --receivers must be positive")
    rows: list[Row] = []
    for qos in QOS if args.qos == "all" else (args.qos,):
        rows += run_qos(args, qos)
    return rows


SCENARIOS = {
    "seed003-mst": Scenario(
        "seed003-mst",
        "seed 003: maximum sustainable throughput by open-loop ramp, NPNT/PNT/PLT/PGT, optionally through a flow",
        run,
        add_arguments,
        tags=("seed003", "mst"),
    )
}
