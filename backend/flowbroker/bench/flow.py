"""Seed 004's flow measurements (`flowbroker bench flow`): the example flows in a real execution group.

Method (seed 004 §2.0): N client connections, each putting a request on the flow's input queue
and getting the flow's output before putting the next; every put and every get counts as one
message. The queue manager and one execution group (a `flowbroker worker` process with one
instance of the flow) run on this machine beside the driver. Each row prints the seed's
Appendix B figure, the ratio to it, and the CPU milliseconds per message of the execution group
and of the queue manager (from /proc), which survive a busy machine better than msgs/s.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import tempfile
import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from flowbroker.bench.core import Row, Scenario

EXAMPLES = Path(__file__).resolve().parents[3] / "examples" / "flows"
_TICK = os.sysconf("SC_CLK_TCK")


@dataclass
class Case:
    """One row of seed 004's Appendix B reproduced with an example flow."""

    key: str
    label: str
    flow_file: str
    in_queue: str
    out_queue: str
    size: int
    persistent: bool
    seed: float  # Appendix B msgs/s
    seed_table: str
    body: Callable[[int, int], tuple[bytes, dict[str, Any]]]


def _xml_body(size: int, ident: int) -> tuple[bytes, dict[str, Any]]:
    head = f"<Message><Id>{ident}</Id><Field>value</Field><Pad>"
    tail = "</Pad></Message>"
    pad = "x" * max(0, size - len(head) - len(tail))
    return (head + pad + tail).encode(), {"format": "MQSTR"}


def _csim_body(size: int, ident: int) -> tuple[bytes, dict[str, Any]]:
    """Appendix C's input: a CSIM test case whose stack lists processing path elements."""
    element = "<Element><COMPONENT>Component{n}</COMPONENT><QUEUE>QUEUE.{n}</QUEUE></Element>"
    parts = [f"<CSIM><TestCase><Id>{ident}</Id><Stack><ProcessingPath>"]
    n = 0
    while sum(map(len, parts)) + 60 < size - 64:
        n += 1
        parts.append(element.format(n=n))
        if n >= 10:
            break
    parts.append("</ProcessingPath></Stack><Data>")
    used = sum(map(len, parts)) + len("</Data></TestCase></CSIM>")
    parts.append("d" * max(0, size - used))
    parts.append("</Data></TestCase></CSIM>")
    return "".join(parts).encode(), {"format": "MQSTR"}


def _rfh2(folders: dict[str, dict[str, str]], body: bytes) -> bytes:
    from esql.tree import Element

    from flowbroker.formats import rfh2

    header = Element("MQRFH2")
    header.add("Format", "MQSTR   ")
    for name, fields in folders.items():
        folder = header.add(name, type=0x01000000)
        for key, value in fields.items():
            folder.add(key, value)
    return rfh2.serialize(header, encoding=546, ccsid=1208) + body


def _filter_body(size: int, ident: int) -> tuple[bytes, dict[str, Any]]:
    raw = _rfh2({"usr": {"Route": "yes", "Region": "north"}}, b"")
    return raw + b"f" * max(0, size - len(raw)), {"format": "MQHRF2"}


def _publication_body(size: int, ident: int) -> tuple[bytes, dict[str, Any]]:
    raw = _rfh2({"psc": {"Command": "Publish", "Topic": "seed004/prices"}}, b"")
    return raw + b"p" * max(0, size - len(raw)), {"format": "MQHRF2"}


def _blob_body(size: int, ident: int) -> tuple[bytes, dict[str, Any]]:
    return b"b" * size, {}


CASES = [
    Case(
        "passthrough",
        "MQInput/MQOutput 1 KB",
        "passthrough.json",
        "PASSTHROUGH.IN",
        "PASSTHROUGH.OUT",
        1024,
        False,
        1511,
        "7.1",
        _blob_body,
    ),
    Case(
        "passthrough-persistent",
        "MQInput/MQOutput 1 KB persistent",
        "passthrough.json",
        "PASSTHROUGH.IN",
        "PASSTHROUGH.OUT",
        1024,
        True,
        52.2,
        "7.1",
        _blob_body,
    ),
    Case(
        "filter",
        "Filter on an MQRFH2 tag 1 KB",
        "filter_rfh2.json",
        "FILTER.IN",
        "FILTER.OUT",
        1024,
        False,
        1079,
        "7.4",
        _filter_body,
    ),
    Case(
        "simple-compute",
        "Simple compute 1 KB",
        "simple_compute.json",
        "SIMPLE.IN",
        "SIMPLE.OUT",
        1024,
        False,
        438,
        "7.2.1",
        _xml_body,
    ),
    Case(
        "complex-compute",
        "Complex compute 4 KB",
        "complex_compute.json",
        "COMPLEX.IN",
        "COMPLEX.OUT",
        4096,
        False,
        75.3,
        "7.2.2",
        _csim_body,
    ),
    Case(
        "five-complex",
        "Five chained complex computes 4 KB",
        "five_complex_computes.json",
        "CHAINED.IN",
        "CHAINED.OUT",
        4096,
        False,
        23.9,
        "7.2.3",
        _csim_body,
    ),
    Case(
        "very-complex",
        "Very complex compute 4 KB",
        "very_complex_compute.json",
        "VERYCOMPLEX.IN",
        "VERYCOMPLEX.OUT",
        4096,
        False,
        36.2,
        "7.2.4",
        _csim_body,
    ),
    Case(
        "database",
        "Database insert/delete 1 KB",
        "database_insert_delete.json",
        "DATABASE.IN",
        "DATABASE.OUT",
        1024,
        False,
        94.4,
        "7.3",
        _xml_body,
    ),
    Case(
        "publication",
        "Publication, one subscriber 1 KB",
        "publication.json",
        "PUBLISH.IN",
        "PUBLISH.SUB",
        1024,
        False,
        645,
        "7.5",
        _publication_body,
    ),
]

#: Seed 004 §7.8: the very complex flow in one and in two execution groups (4 KB non-persistent).
SEED_TWO_GROUPS = 73.1


def _cpu_seconds(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as fh:
        fields = fh.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / _TICK


def _rss(pid: int) -> int:
    with open(f"/proc/{pid}/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


class Bench:
    """A data directory with a repository, a queue manager and execution-group processes."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self._tmp = tempfile.TemporaryDirectory(prefix="fb-bench-flow-")
        self.data = Path(self._tmp.name)
        self.workers: dict[str, Any] = {}
        self.qm: Any = None
        self.deployments: list[int] = []

    def __enter__(self) -> Bench:
        from flowbroker.commands.platform import prepare_repository
        from flowbroker.qm.harness import QueueManagerProcess
        from flowbroker.settings import Settings

        os.environ["FLOWBROKER_DATA"] = str(self.data)
        self.settings = Settings(data=self.data, admin_password="bench-password-1234")
        prepare_repository(self.settings)
        self.qm = QueueManagerProcess(self.data, fsync=not self.args.no_fsync).start()
        with self.qm.client() as qm:
            for case in CASES:
                for queue in (case.in_queue, case.out_queue):
                    qm.define_queue(queue, replace=True, max_depth=1_000_000)
            qm.subscribe("seed004/prices", "PUBLISH.SUB", name="bench-subscriber")
        db_path = self.data / "perf.db"
        self.db_url = self.args.db_url or f"sqlite:///{db_path}"
        self._prepare_database()
        return self

    def _prepare_database(self) -> None:
        import sqlalchemy as sa

        from flowbroker.repository import db
        from flowbroker.services import datasources

        # created through SQLAlchemy so the names are quoted as ESQL's database statements quote them
        # (PostgreSQL folds unquoted names to lower case)
        engine = sa.create_engine(self.db_url)
        table = sa.Table(
            "PERF_ROWS", sa.MetaData(), sa.Column("ID", sa.Integer), sa.Column("PAYLOAD", sa.String(64))
        )
        table.drop(engine, checkfirst=True)
        table.create(engine)
        engine.dispose()
        repo = db.engine_from_settings(self.settings)
        with db.session_scope(db.session_factory(repo)) as session:
            datasources.create(session, "bench", "PERFDB", self.db_url, "seed 004 §2.3 table")
        repo.dispose()

    def start_group(self, group: str) -> Any:
        from flowbroker.repository import db
        from flowbroker.services import brokers
        from flowbroker.worker.harness import WorkerProcess

        if group != "default":
            repo = db.engine_from_settings(self.settings)
            with db.session_scope(db.session_factory(repo)) as session:
                default = brokers.by_name(session, "default")
                try:
                    brokers.create_group(session, "bench", default.id, group, "")
                except Exception:
                    session.rollback()
            repo.dispose()
        worker = WorkerProcess(self.data, group=group, env={"FLOWBROKER_STATS_INTERVAL": "5"}).start()
        self.workers[group] = worker
        return worker

    def deploy(self, flow_file: str, group: str = "default", timeout: float = 60.0) -> None:
        from flowbroker.repository import db
        from flowbroker.services import deploy

        document = json.loads((EXAMPLES / flow_file).read_text())
        repo = db.engine_from_settings(self.settings)
        factory = db.session_factory(repo)
        with db.session_scope(factory) as session:
            row = deploy.create(session, "bench", document=document, group=group, data=self.data)
            deployment_id = row.id
            status = row.status
        deadline = time.monotonic() + timeout
        while status in ("pending", "compiling") and time.monotonic() < deadline:
            time.sleep(0.1)
            with db.session_scope(factory) as session:
                status = deploy.get(session, deployment_id).status
        repo.dispose()
        if status != "running":
            raise RuntimeError(f"deploying {flow_file} to {group}: {status}")

    def __exit__(self, *exc: object) -> None:
        for worker in self.workers.values():
            worker.stop(timeout=20)
        if self.qm is not None:
            self.qm.stop()
        if self.args.db_url:
            import sqlalchemy as sa

            engine = sa.create_engine(self.args.db_url)
            sa.Table("PERF_ROWS", sa.MetaData()).drop(engine, checkfirst=True)
            engine.dispose()
        self._tmp.cleanup()


async def _drive(bench: Bench, case: Case, args: argparse.Namespace) -> dict[str, Any]:
    """N connections in a put-request / get-output loop; counts 2 per round trip over the window."""
    from flowbroker.qm.client import AsyncClient
    from flowbroker.qm.protocol import MessageDescriptor

    stop = asyncio.Event()
    counted = [0]
    latencies: list[float] = []
    measuring = [False]

    async def client(index: int) -> None:
        conn = await AsyncClient.connect(bench.qm.url, data_dir=str(bench.data))
        seq = 0
        try:
            while not stop.is_set():
                seq += 1
                body, md_fields = case.body(case.size, index * 10_000_000 + seq)
                md = MessageDescriptor(persistence=1 if case.persistent else 0, **md_fields)
                started = time.perf_counter()
                # the requester's MQPUT then MQGET-with-wait, sent in one write
                got = await conn.put_then_get(case.in_queue, body, case.out_queue, md, wait=1.0)
                while got is None and not stop.is_set():
                    got = await conn.get(case.out_queue, wait=1.0)
                if got is None:
                    break
                if measuring[0]:
                    counted[0] += 2
                    latencies.append(time.perf_counter() - started)
        finally:
            await conn.close()

    tasks = [asyncio.create_task(client(i)) for i in range(args.clients)]
    pids = {"eg": [w.pid for w in bench.workers.values()], "qm": [bench.qm.pid]}
    await asyncio.sleep(args.warmup)
    measuring[0] = True
    cpu0 = {k: sum(_cpu_seconds(p) for p in v) for k, v in pids.items()}
    drv0 = time.process_time()
    t0 = time.perf_counter()
    await asyncio.sleep(args.seconds)
    elapsed = time.perf_counter() - t0
    measuring[0] = False
    cpu1 = {k: sum(_cpu_seconds(p) for p in v) for k, v in pids.items()}
    drv = time.process_time() - drv0
    stop.set()
    await asyncio.gather(*tasks, return_exceptions=True)
    count = counted[0]
    eg_cpu = cpu1["eg"] - cpu0["eg"]
    qm_cpu = cpu1["qm"] - cpu0["qm"]
    latencies.sort()
    return {
        "count": count,
        "elapsed": elapsed,
        "eg_cpu": eg_cpu,
        "qm_cpu": qm_cpu,
        "driver_cpu": drv,
        "response_ms": 1000 * latencies[len(latencies) // 2] if latencies else None,
    }


def _run_driver(driver: Coroutine[Any, Any, dict[str, Any]]) -> dict[str, Any]:
    """The requesters on uvloop when it is there: the driver must cost less than what it drives."""
    try:
        import uvloop
    except ImportError:
        return asyncio.run(driver)
    return uvloop.run(driver)


def _row(case_label: str, seed: float, table: str, result: dict[str, Any], groups: int = 1) -> Row:
    count, elapsed = result["count"], result["elapsed"]
    rate = count / elapsed if elapsed else 0.0
    msgs = max(count, 1)
    return {
        "flow": case_label,
        "groups": groups,
        "msgs/s": round(rate, 1),
        "seed msgs/s": seed,
        "seed table": table,
        "ratio": f"{rate / seed:.1f}x",
        "20x target": round(seed * 20),
        "median response ms": round(result["response_ms"], 2) if result["response_ms"] is not None else None,
        "EG CPU-ms/msg": round(result["eg_cpu"] * 1000 / msgs, 3),
        "QM CPU-ms/msg": round(result["qm_cpu"] * 1000 / msgs, 3),
        "EG CPU %": round(100 * result["eg_cpu"] / elapsed, 1) if elapsed else None,
        "driver CPU %": round(100 * result["driver_cpu"] / elapsed, 1) if elapsed else None,
    }


def _drain(bench: Bench, queue: str) -> None:
    with bench.qm.client() as qm:
        qm.purge(queue)


def run_flows(args: argparse.Namespace) -> list[Row]:
    selected = [c for c in CASES if not args.case or c.key in args.case]
    if args.case and not selected:
        known = ", ".join(c.key for c in CASES)
        raise SystemExit(f"flowbroker bench flow: unknown --case; known: {known}")
    rows: list[Row] = []
    with Bench(args) as bench:
        bench.start_group("default")
        for flow_file in sorted({c.flow_file for c in CASES}):
            bench.deploy(flow_file)
        time.sleep(2.0)
        idle_rss = _rss(bench.workers["default"].pid)
        for case in selected:
            result = _run_driver(_drive(bench, case, args))
            rows.append(_row(case.label, case.seed, case.seed_table, result))
            _drain(bench, case.in_queue)
            _drain(bench, case.out_queue)
        if args.groups:
            very = next(c for c in CASES if c.key == "very-complex")
            bench.start_group("second")
            bench.deploy(very.flow_file, group="second")
            result = _run_driver(_drive(bench, very, args))
            rows.append(_row(very.label, SEED_TWO_GROUPS, "7.8", result, groups=2))
        rows.append(
            {
                "flow": f"idle group RSS with all {len({c.flow_file for c in CASES})} example flows deployed",
                "groups": 1,
                "msgs/s": None,
                "seed msgs/s": None,
                "ratio": f"{idle_rss / 1e6:.0f} MB (limit 150 MB)",
            }
        )
    return rows


def _arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--case",
        action="append",
        default=[],
        help="run only this case (repeatable): " + ", ".join(c.key for c in CASES),
    )
    p.add_argument("--clients", type=int, default=8, help="client connections (seed 004 used 45 threads)")
    p.add_argument("--seconds", type=float, default=10.0, help="measurement window per row")
    p.add_argument("--warmup", type=float, default=3.0)
    p.add_argument("--groups", action="store_true", help="add the very complex flow in two execution groups")
    p.add_argument(
        "--no-fsync", action="store_true", help="queue manager without fsync (persistent rows optimistic)"
    )
    p.add_argument(
        "--db-url",
        default="",
        help="data source of the database row (default: SQLite in the bench directory)",
    )


SCENARIOS = {
    "flow": Scenario(
        "flow",
        "seed 004 §2 flows (passthrough, filter, computes, database, publication) in one execution group, "
        "with Appendix B's figures beside each row",
        run_flows,
        _arguments,
    )
}
