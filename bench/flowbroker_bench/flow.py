"""Seed 004's flow measurements: the Appendix B cases (:mod:`~flowbroker_bench.appendix_b`) in real execution groups.

Method (seed 004 §2.0, §3–4): N requesters (45 in the seed), each putting a request on the
flow's input queue and then getting the flow's output before putting the next; every put and
every get counts as one message. A queue manager process, execution-group worker processes and
(for the database flow) PostgreSQL or SQLite run beside the driver. Each cell of a case's seed
table (message size × persistence) is one row with Appendix B's columns: Msgs/Sec, Response,
Get and Put (medians, in ms), CPU of the execution group(s) and of the queue manager, and
Mbits/Sec; ``--compare-seed`` adds the seed's figure and the ratio. The CPU milliseconds per
message survive a busy machine better than msgs/s.

Before a cell is measured one request makes a round trip and its reply is checked; a flow that
cannot answer (it needs something this build cannot deploy, say) gives a row that says why
instead of a figure.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import tempfile
import time
import uuid
from collections.abc import Coroutine
from pathlib import Path
from statistics import median
from typing import Any

from flowbroker_bench import appendix_b, bodies, native, seed004_amqp
from flowbroker_bench.appendix_b import CASES, Case
from flowbroker_bench.core import Row, Scenario

#: Seconds a measuring window in which no request was answered yet may run past its length.
EMPTY_WINDOW_LIMIT_S = 30.0

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "flows"
_TICK = os.sysconf("SC_CLK_TCK")
DEAD_LETTER_QUEUE = "SYSTEM.DEAD.LETTER.QUEUE"
#: Where the database rows go unless --db-url says otherwise (falls back to SQLite when unreachable).
DEFAULT_POSTGRES = "postgresql+psycopg://127.0.0.1:5432/test"
#: A request that fails this often goes to the dead-letter queue instead of looping.
BACKOUT_THRESHOLD = 3

_rfh2 = bodies.rfh2  # the name the runtime's example-flow tests use

__all__ = ["CASES", "EXAMPLES", "Bench", "Case", "run_cases"]


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


def _pin(pid: int, core: int | None) -> None:
    """Every thread of ``pid`` on ``core`` (threads a process starts later inherit it)."""
    if core is None or core >= (os.cpu_count() or 1):
        return
    subprocess.run(["taskset", "-a", "-p", "-c", str(core), str(pid)], capture_output=True, check=False)


class Bench:
    """A data directory with a repository, a queue manager, execution groups and a database."""

    def __init__(self, args: argparse.Namespace, *, database: bool = True, transport: str = "qm") -> None:
        self.args = args
        self.transport = transport
        self.transport_label = seed004_amqp.TRANSPORTS[transport][0]
        #: RabbitMQ when the groups' transport is amqp: the requests and queues go there
        self.rabbit: seed004_amqp.RabbitSide | None = None
        self.with_database = database
        self._tmp = tempfile.TemporaryDirectory(prefix="fb-bench-flow-")
        self.data = Path(self._tmp.name)
        self.workers: dict[str, Any] = {}
        self.qm: Any = None
        #: (group, flow name) → what is deployed there: the document and overrides, as JSON
        self.deployed: dict[tuple[str, str], tuple[str, int]] = {}
        self.traces: dict[str, tuple[str, str]] = {}
        self.subscriptions: tuple[int, str | None] = (0, None)
        self.subscription_names: list[str] = []
        self.fanout_queues: list[str] = []
        self.db_url = ""
        self.db_kind = ""
        self._schema = ""
        #: (deployment id, recording id, its directory) of the recording running for a row
        self.recording: tuple[int, str, Path] = (0, "", Path())

    # -- set up and tear down ------------------------------------------------------------------

    def __enter__(self) -> Bench:
        try:
            return self._start()
        except BaseException:  # what started before the failure is stopped, and the error stands
            self.__exit__()
            raise

    def _start(self) -> Bench:
        from flowbroker.commands.platform import prepare_repository
        from flowbroker.qm.harness import QueueManagerProcess
        from flowbroker.settings import Settings

        os.environ["FLOWBROKER_DATA"] = str(self.data)
        self.settings = Settings(data=self.data, admin_password="bench-password-1234")
        prepare_repository(self.settings)
        core = getattr(self.args, "engine_core", None)
        cpu = core if core is not None and core < (os.cpu_count() or 1) else None
        self.qm = QueueManagerProcess(self.data, fsync=not self.args.no_fsync, cpu=cpu).start()
        with self.qm.client() as qm:
            for case in CASES:
                qm.define_queue(
                    case.in_queue, replace=True, max_depth=1_000_000, backout_threshold=BACKOUT_THRESHOLD
                )
                qm.define_queue(case.out_queue, replace=True, max_depth=1_000_000)
        kind = seed004_amqp.TRANSPORTS[self.transport][1]
        if kind is not None:
            self._use_rabbitmq(kind)
        if self.with_database:
            self._prepare_database()
        return self

    def _use_rabbitmq(self, kind: str) -> None:
        """The default broker's transport becomes RabbitMQ: its groups read and write queues there."""
        from flowbroker.repository import db
        from flowbroker.services import brokers

        url = str(getattr(self.args, "amqp_url", "") or seed004_amqp.DEFAULT_URL)
        self.rabbit = seed004_amqp.RabbitSide(url, kind)
        repo = db.engine_from_settings(self.settings)
        with db.session_scope(db.session_factory(repo)) as session:
            brokers.update(session, "bench", brokers.by_name(session, "default").id, {"qm_url": url})
        repo.dispose()

    def _prepare_database(self) -> None:
        import sqlalchemy as sa
        from flowbroker.repository import db
        from flowbroker.services import datasources

        self.db_url, self.db_kind = self._database_url()
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

    def _database_url(self) -> tuple[str, str]:
        """The data source of the database flows: --db-url, else PostgreSQL here, else SQLite."""
        import sqlalchemy as sa

        wanted = str(getattr(self.args, "db_url", "") or "auto")
        if wanted == "sqlite":
            return f"sqlite:///{self.data / 'perf.db'}", "sqlite"
        if wanted != "auto":
            return wanted, sa.engine.make_url(wanted).get_backend_name()
        # a private schema, so that runs sharing the database never meet in one table
        schema = f"fb_bench_{uuid.uuid4().hex[:10]}"
        try:
            engine = sa.create_engine(DEFAULT_POSTGRES, connect_args={"connect_timeout": 3})
            with engine.begin() as conn:
                conn.execute(sa.text(f'CREATE SCHEMA "{schema}"'))
            engine.dispose()
        except Exception:  # no PostgreSQL here: the flows still run against a real database file
            return f"sqlite:///{self.data / 'perf.db'}", "sqlite (PostgreSQL at 127.0.0.1:5432 unreachable)"
        self._schema = schema
        return f"{DEFAULT_POSTGRES}?options=-csearch_path%3D{schema}", "postgresql"

    def __exit__(self, *exc: object) -> None:
        for worker in self.workers.values():
            worker.stop(timeout=20)
        if self.qm is not None:
            self.qm.stop()
        if self.rabbit is not None:
            self.rabbit.close()
        self._drop_database()
        self._tmp.cleanup()

    def _drop_database(self) -> None:
        import sqlalchemy as sa

        try:
            if self._schema:
                engine = sa.create_engine(DEFAULT_POSTGRES)
                with engine.begin() as conn:
                    conn.execute(sa.text(f'DROP SCHEMA IF EXISTS "{self._schema}" CASCADE'))
            elif self.db_url and not self.db_url.startswith("sqlite"):
                engine = sa.create_engine(self.db_url)
                sa.Table("PERF_ROWS", sa.MetaData()).drop(engine, checkfirst=True)
            else:
                return
            engine.dispose()
        except Exception:  # tearing down must not hide the figures already printed
            pass

    # -- execution groups and deployments ----------------------------------------------------------

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
                except Exception:  # it exists from an earlier case
                    session.rollback()
            repo.dispose()
        env = {"FLOWBROKER_STATS_INTERVAL": "5", **(self.rabbit.env() if self.rabbit is not None else {})}
        worker = WorkerProcess(self.data, group=group, env=env).start()
        _pin(worker.pid, getattr(self.args, "engine_core", None))
        self.workers[group] = worker
        return worker

    def stop_group(self, group: str) -> None:
        worker = self.workers.pop(group, None)
        if worker is not None:
            worker.stop(timeout=20)
        # a group started again resumes what it ran: deploy what the next case needs over it
        self.deployed = {k: v for k, v in self.deployed.items() if k[0] != group}

    def deploy(
        self,
        document: dict[str, Any],
        group: str = "default",
        overrides: dict[str, Any] | None = None,
        timeout: float = 60.0,
    ) -> int:
        """Deploy through the configuration manager's service and wait until the group runs it."""
        from flowbroker.repository import db
        from flowbroker.services import deploy

        repo = db.engine_from_settings(self.settings)
        factory = db.session_factory(repo)
        with db.session_scope(factory) as session:
            row = deploy.create(
                session, "bench", document=document, group=group, overrides=overrides, data=self.data
            )
            deployment_id = row.id
            status = row.status
            diagnostics = row.diagnostics
        deadline = time.monotonic() + timeout
        while status in ("pending", "compiling") and time.monotonic() < deadline:
            time.sleep(0.1)
            with db.session_scope(factory) as session:
                found = deploy.get(session, deployment_id)
                status, diagnostics = found.status, found.diagnostics
        repo.dispose()
        if status != "running":
            problem = (diagnostics or [{}])[0].get("message", "")
            raise RuntimeError(f"deploying {document.get('name')} to {group}: {status} {problem}".rstrip())
        return int(deployment_id)

    def apply(self, case: Case, size: int, *, again: bool = False) -> int:
        """Make the groups run the case's flow as the case wants it; the default group's deployment id.

        ``again`` deploys it even when it runs already: the group takes control tasks one at a
        time in order, so a deployment seen running shows every earlier task was carried out.
        """
        document = json.loads((EXAMPLES / case.flow_file).read_text())
        document["properties"] = {**(document.get("properties") or {}), **case.flow_properties}
        overrides = case.overrides(size) if case.overrides is not None else {}
        if self.rabbit is not None:
            self.rabbit.rename_queues(document)
        wanted = json.dumps([document, overrides], sort_keys=True)
        groups = ["default"] + [f"eg{n}" for n in range(2, case.groups + 1)]
        for group in [g for g in self.workers if g not in groups]:
            self.stop_group(group)
        if case.message_set is not None:
            self.store_message_set(*case.message_set())
        for group in groups:
            if group not in self.workers:
                self.start_group(group)
            key = (group, str(document["name"]))
            current = self.deployed.get(key)
            if current is None or current[0] != wanted or again:
                self.deployed[key] = (wanted, self.deploy(document, group, overrides))
        return self.deployed[("default", str(document["name"]))][1]

    def store_message_set(self, name: str, document: dict[str, Any]) -> None:
        """Keep the set in the repository, where a deployment takes the sets its flow parses with."""
        from flowbroker.repository import db
        from flowbroker.services import messagesets

        repo = db.engine_from_settings(self.settings)
        with db.session_scope(db.session_factory(repo)) as session:
            messagesets.upsert(session, "bench", name, document, "seed 004 §2.6 conversions")
        repo.dispose()

    def set_trace(self, deployment_id: int, level: str, mode: str) -> None:
        from flowbroker.repository import db
        from flowbroker.services import deploy

        repo = db.engine_from_settings(self.settings)
        with db.session_scope(db.session_factory(repo)) as session:
            deploy.set_trace(session, "bench", deployment_id, level, mode, data=self.data)
        repo.dispose()

    def start_recording(self, deployment_id: int, timeout: float = 30.0) -> str:
        """Start a flow exerciser recording as an operator would, bounded only by the run; its id once it records."""
        from flowbroker.repository import db
        from flowbroker.services import deploy, recordings
        from flowbroker.settings import Settings

        # a recording row records every message of its window: bounds of the run, not an operator's
        settings = Settings(
            data=self.data,
            admin_password="bench-password-1234",
            recording_max_messages=100_000,
            recording_max_seconds=3600,
            recording_max_bytes=4 * 1024**3,
        )
        repo = db.engine_from_settings(settings)
        with db.session_scope(db.session_factory(repo)) as session:
            started = recordings.start(
                session,
                "bench",
                deployment_id,
                settings,
                max_messages=settings.recording_max_messages,
                seconds=settings.recording_max_seconds,
            )
            deployment = deploy.get(session, deployment_id)
            where = recordings.directory(self.data, deployment)
        repo.dispose()
        deadline = time.monotonic() + timeout
        while recordings.describe(where, started["id"])["status"] == "requested":
            if time.monotonic() > deadline:
                raise RuntimeError("the execution group did not start the recording")
            time.sleep(0.05)
        self.recording = (deployment_id, started["id"], where)
        return str(started["id"])

    def stop_recording(self) -> dict[str, Any]:
        """End the recording the last :meth:`start_recording` started; its state as the group left it."""
        from flowbroker.repository import db
        from flowbroker.services import recordings
        from flowbroker.settings import Settings

        deployment_id, recording_id, where = self.recording
        during = recordings.describe(where, recording_id)
        settings = Settings(data=self.data, admin_password="bench-password-1234")
        repo = db.engine_from_settings(settings)
        with db.session_scope(db.session_factory(repo)) as session:
            recordings.stop(session, "bench", deployment_id, recording_id, settings)
        repo.dispose()
        deadline = time.monotonic() + 30
        while (
            recordings.describe(where, recording_id)["status"] == "recording" and time.monotonic() < deadline
        ):
            time.sleep(0.1)
        final = recordings.describe(where, recording_id)
        final["stillRecordingAtEnd"] = during["status"] == "recording"
        return final

    def trace_path(self, flow_name: str, group: str = "default") -> Path:
        return self.data / "trace" / "default" / group / f"{flow_name}.trace"

    # -- subscriptions -----------------------------------------------------------------------------

    def subscribe(self, case: Case) -> None:
        """The case's subscriptions on the publication topic: the first to its output queue."""
        wanted = (case.subscribers, case.subscription_filter)
        if wanted == self.subscriptions:
            return
        if self.rabbit is not None:
            self._subscribe_rabbitmq(case)
            self.subscriptions = wanted
            return
        with self.qm.client() as qm:
            for name in self.subscription_names:
                qm.unsubscribe(name)
            for queue in self.fanout_queues:
                qm.delete_queue(queue, purge=True)
            self.subscription_names, self.fanout_queues = [], []
            for n in range(case.subscribers):
                queue = case.out_queue if n == 0 else f"{case.out_queue}.{n + 1}"
                if n:
                    qm.define_queue(queue, replace=True, max_depth=1_000_000)
                    self.fanout_queues.append(queue)
                name = f"bench-subscriber-{n + 1}"
                qm.subscribe(bodies.TOPIC, queue, name=name, filter=case.subscription_filter)
                self.subscription_names.append(name)
        self.subscriptions = wanted

    def _subscribe_rabbitmq(self, case: Case) -> None:
        """Bindings on the run's topic exchange; a content filter has no RabbitMQ equivalent."""
        assert self.rabbit is not None
        if case.subscription_filter:
            raise RuntimeError("content-filtered subscriptions are applied by the queue manager only")
        self.rabbit.unsubscribe_all()
        for queue in self.fanout_queues:
            self.rabbit.delete(queue)
        self.fanout_queues = []
        for n in range(case.subscribers):
            queue = case.out_queue if n == 0 else f"{case.out_queue}.{n + 1}"
            if n:
                self.fanout_queues.append(queue)
            self.rabbit.subscribe(bodies.TOPIC, queue)

    def purge(self, *queues: str) -> None:
        if self.rabbit is not None:
            self.rabbit.purge(*queues)
            return
        with self.qm.client() as qm:
            for queue in queues:
                qm.purge(queue)

    def settle(self, case: Case, timeout: float = 30.0) -> None:
        """Wait until the flow has taken every request and its output stops growing, then purge.

        Requests still in flight when the requesters stop would otherwise reach the output queue
        after a purge and be taken for replies in the next row.
        """
        deadline = time.monotonic() + timeout
        last = -1
        if self.rabbit is not None:
            while time.monotonic() < deadline:
                depth = self.rabbit.depth(case.out_queue)
                if not self.rabbit.depth(case.in_queue) and depth == last:
                    break
                last = depth
                time.sleep(0.2)
            self.purge(case.in_queue, case.out_queue, *self.fanout_queues)
            return
        with self.qm.client() as qm:
            while time.monotonic() < deadline:
                waiting = qm.inquire_queue(case.in_queue)
                depth = int(qm.inquire_queue(case.out_queue).get("current_depth") or 0)
                if not waiting.get("current_depth") and not waiting.get("uncommitted") and depth == last:
                    break
                last = depth
                time.sleep(0.2)
        self.purge(case.in_queue, case.out_queue, DEAD_LETTER_QUEUE, *self.fanout_queues)


# -- one cell: check a round trip, then measure -------------------------------------------------


def _descriptor(persistent: bool, fields: dict[str, Any]) -> Any:
    from flowbroker.qm.protocol import MessageDescriptor

    return MessageDescriptor(persistence=1 if persistent else 0, **fields)


def _round_trip(bench: Bench, case: Case, persistent: bool, size: int, wait: float) -> str | None:
    """One request through the flow; None when its reply came back right, else why not.

    The reply is told from a late one of an earlier row by its correlation id, which every flow
    here keeps from its input.
    """
    if bench.rabbit is not None:
        return bench.rabbit.round_trip(case, persistent, size, wait)
    body, fields = case.body(size, 0)
    correl_id = uuid.uuid4().bytes + b"PREFLGHT"
    with bench.qm.client() as qm:
        qm.put(case.in_queue, body, _descriptor(persistent, {**fields, "correl_id": correl_id}))
        deadline = time.monotonic() + wait
        reply = None
        while reply is None:
            reply = qm.get(case.out_queue, wait=0.5, correl_id=correl_id)
            dead = qm.get(DEAD_LETTER_QUEUE, correl_id=correl_id) if reply is None else None
            if dead is not None:
                reason = str((dead.properties or {}).get("flowbroker.reason", ""))
                return (
                    reason or f"the request went to the dead-letter queue after {BACKOUT_THRESHOLD} backouts"
                )
            if reply is None and time.monotonic() > deadline:
                return f"no reply on {case.out_queue} within {wait:.0f}s"
    if case.check is not None:
        try:
            case.check(body, reply.body, size)
        except ValueError as exc:
            return f"wrong reply: {exc}"
    return None


async def _drive(
    bench: Bench, case: Case, persistent: bool, size: int, args: argparse.Namespace
) -> dict[str, Any]:
    """Requesters in put-then-get loops (2 messages per round trip), and drainers of the other subscribers."""
    from flowbroker.qm.client import AsyncClient

    stop = asyncio.Event()
    drained_stop = asyncio.Event()
    measuring = [False]
    counted = [0]
    moved = [0]
    puts_total = [0]
    drained = [0]
    responses: list[float] = []
    put_times: list[float] = []
    get_times: list[float] = []
    # a non-persistent request is put asynchronously unless --sync-puts (see the option)
    asynchronous = not persistent and not getattr(args, "sync_puts", False)

    async def requester(index: int) -> None:
        conn = await AsyncClient.connect(bench.qm.url, data_dir=str(bench.data))
        seq = 0
        # one descriptor per distinct set of fields: the client gives every put its own msgId
        descriptors: dict[tuple[tuple[str, Any], ...], Any] = {}
        try:
            while not stop.is_set():
                seq += 1
                body, fields = case.body(size, index * 10_000_000 + seq)
                key = tuple(fields.items())
                md = descriptors.get(key)
                if md is None:
                    md = descriptors[key] = _descriptor(persistent, fields)
                started = time.perf_counter()
                put_done = started

                def put_answered() -> None:
                    nonlocal put_done
                    put_done = time.perf_counter()
                    puts_total[0] += 1

                # the requester's MQPUT then its MQGET with wait, sent in one write
                got = await conn.put_then_get(
                    case.in_queue,
                    body,
                    case.out_queue,
                    md,
                    wait=1.0,
                    on_put=put_answered,
                    asynchronous=asynchronous,
                )
                while got is None and not stop.is_set():
                    got = await conn.get(case.out_queue, wait=1.0)
                if got is None:
                    break
                if measuring[0]:
                    done = time.perf_counter()
                    counted[0] += 2
                    moved[0] += len(body) + len(got.body)
                    # an asynchronous put's time is its call's: sent, no answer waited for
                    put_times.append(put_done - started)
                    get_times.append(done - put_done)
                    responses.append(done - started)
        finally:
            await conn.close()

    async def drainer(conn: Any, queue: str) -> None:
        # §2.11: "a background program consuming all but one of the published messages"
        while not drained_stop.is_set():
            got = await conn.get_raw_many(queue, 512, wait=0.5)
            drained[0] += len(got)  # read the total after the await: other drainers add meanwhile

    drain_conns = []
    for _ in range(min(4, len(bench.fanout_queues))):
        drain_conns.append(await AsyncClient.connect(bench.qm.url, data_dir=str(bench.data)))
    drainers = [
        asyncio.create_task(drainer(drain_conns[i % len(drain_conns)], q))
        for i, q in enumerate(bench.fanout_queues)
    ]
    tasks = [asyncio.create_task(requester(i)) for i in range(args.clients)]
    pids = {"eg": [w.pid for w in bench.workers.values()], "qm": [bench.qm.pid]}
    await asyncio.sleep(args.warmup)
    measuring[0] = True
    cpu0 = {k: sum(_cpu_seconds(p) for p in v) for k, v in pids.items()}
    drv0 = time.process_time()
    t0 = time.perf_counter()
    await asyncio.sleep(args.seconds)
    # a window in which no request was answered measures nothing (a slow case on a busy host,
    # a short window): it goes on until one is, at most EMPTY_WINDOW_LIMIT_S more
    limit = time.perf_counter() + EMPTY_WINDOW_LIMIT_S
    while not responses and time.perf_counter() < limit:
        await asyncio.sleep(0.02)
    elapsed = time.perf_counter() - t0
    measuring[0] = False
    cpu1 = {k: sum(_cpu_seconds(p) for p in v) for k, v in pids.items()}
    drv = time.process_time() - drv0
    stop.set()
    await asyncio.gather(*tasks, return_exceptions=True)
    fanout = ""
    if drainers:
        expected = puts_total[0] * len(bench.fanout_queues)
        deadline = time.monotonic() + 15
        while drained[0] < expected and time.monotonic() < deadline:
            await asyncio.sleep(0.1)
        fanout = (
            f"ok: {drained[0]:,} copies drained"
            if drained[0] == expected
            else f"{drained[0]:,} of {expected:,} copies drained"
        )
        drained_stop.set()
        await asyncio.gather(*drainers, return_exceptions=True)
    for conn in drain_conns:
        await conn.close()
    return {
        "count": counted[0],
        "bytes": moved[0],
        "elapsed": elapsed,
        "eg_cpu": cpu1["eg"] - cpu0["eg"],
        "qm_cpu": cpu1["qm"] - cpu0["qm"],
        "driver_cpu": drv,
        "response_ms": 1000 * median(responses) if responses else None,
        "get_ms": 1000 * median(get_times) if get_times else None,
        "put_ms": 1000 * median(put_times) if put_times else None,
        "fanout": fanout,
        "requesters": "Python",
    }


def _drive_native(
    bench: Bench, case: Case, persistent: bool, size: int, args: argparse.Namespace
) -> dict[str, Any]:
    """:func:`_drive` with the requesters in C (:mod:`flowbroker_bench.native`): same loop, same figures."""
    from flowbroker.qm.client import resolve_address

    asynchronous = not persistent and not getattr(args, "sync_puts", False)
    descriptors: dict[tuple[tuple[str, Any], ...], Any] = {}

    def request(index: int, k: int) -> tuple[bytes, Any]:
        body, fields = case.body(size, index * 10_000_000 + k + 1)
        key = tuple(fields.items())
        md = descriptors.get(key)
        if md is None:
            md = descriptors[key] = _descriptor(persistent, fields)
        return body, md

    address, user, password = resolve_address(bench.qm.url, str(bench.data), None, None)
    plan = native.plan(
        address=address,
        user=user,
        password=password,
        in_queue=case.in_queue,
        out_queue=case.out_queue,
        requests=request,
        clients=args.clients,
        warmup=args.warmup,
        seconds=args.seconds,
        empty_limit=EMPTY_WINDOW_LIMIT_S,
        asynchronous=asynchronous,
    )
    pids = {"eg": [w.pid for w in bench.workers.values()], "qm": [bench.qm.pid]}
    cpu: list[dict[str, float]] = []

    def sample() -> None:
        cpu.append({k: sum(_cpu_seconds(p) for p in v) for k, v in pids.items()})

    result = native.run(
        plan,
        on_measuring=sample,
        on_stopped=sample,
        timeout=args.warmup + args.seconds + EMPTY_WINDOW_LIMIT_S + 60,
    )
    if len(cpu) != 2:
        raise native.NativeDriverError("the requesters ended without a measuring window")
    return {
        **result,
        "eg_cpu": cpu[1]["eg"] - cpu[0]["eg"],
        "qm_cpu": cpu[1]["qm"] - cpu[0]["qm"],
        "fanout": "",
        "requesters": "C",
    }


def _native_driver(args: argparse.Namespace, bench: Bench, case: Case) -> bool:
    """Whether this cell's requesters run in C: ``--driver`` (auto: when it can be built), and not
    for drained subscribers (the Python driver drains them) or RabbitMQ."""
    choice = getattr(args, "driver", "python")
    if choice == "python" or bench.rabbit is not None or bench.fanout_queues:
        return False
    return choice == "c" or native.available()


def _run_driver(driver: Coroutine[Any, Any, dict[str, Any]]) -> dict[str, Any]:
    """The requesters on uvloop when it is there: the driver must cost less than what it drives."""
    try:
        import uvloop
    except ImportError:
        return asyncio.run(driver)
    return uvloop.run(driver)


def _ms(value: float | None) -> float | None:
    return round(value, 3) if value is not None else None


def _row(
    case: Case,
    persistent: bool,
    size: int,
    result: dict[str, Any] | None,
    note: str,
    recording: str | None = None,
    transport: str = "embedded queue manager",
) -> Row:
    """Appendix B's columns for one cell; ``result`` None for a cell that could not be measured."""
    row: Row = {
        "case": case.key,
        "flow": case.label,
        "transport": transport,
        "table": case.table or "—",
        "persistence": "p" if persistent else "np",
        "message_size": size,
    }
    if recording is not None:
        row["recording"] = recording
    if case.table.startswith("7.8-"):
        row["execution_groups"] = case.groups
    if case.table.startswith("7.11-"):
        row["subscribers"] = case.subscribers
    if result is None:
        row.update({"Msgs/Sec": None, "seed": case.seed_key(persistent, size), "figure": "Msgs/Sec"})
        row["note"] = note
        return row
    count, elapsed = result["count"], result["elapsed"]
    rate = count / elapsed if elapsed else 0.0
    msgs = max(count, 1)
    qm_cpu = result["qm_cpu"]  # RabbitMQ: its local beam.smp; None when it runs elsewhere
    row.update(
        {
            "Msgs/Sec": round(rate, 1),
            "Response": _ms(result["response_ms"]),
            "Get": _ms(result["get_ms"]),
            "Put": _ms(result["put_ms"]),
            "EG CPU (%)": round(100 * result["eg_cpu"] / elapsed, 1) if elapsed else None,
            "QM CPU (%)": round(100 * qm_cpu / elapsed, 1) if elapsed and qm_cpu is not None else None,
            # the seed's Mbits are 2**20 bits (1511 msgs/s of 1 KB = 11.8 Mbits/Sec)
            "Mbits/Sec": round(result["bytes"] * 8 / elapsed / 2**20, 2) if elapsed else None,
            "EG CPU-ms/msg": round(result["eg_cpu"] * 1000 / msgs, 3),
            "QM CPU-ms/msg": round(qm_cpu * 1000 / msgs, 3) if qm_cpu is not None else None,
            "driver CPU (%)": round(100 * result["driver_cpu"] / elapsed, 1) if elapsed else None,
            "driver CPU-ms/msg": round(result["driver_cpu"] * 1000 / msgs, 3),
        }
    )
    if result.get("requesters"):
        row["requesters"] = result["requesters"]
    if case.subscribers > 1:
        row["Deliveries/Sec"] = round(rate / 2 * case.subscribers, 1)
        row["fan-out"] = result["fanout"]
    row["seed"] = case.seed_key(persistent, size)
    row["figure"] = "Msgs/Sec"
    # replies that were wrong, lost or unexpected (the RabbitMQ requesters check every one)
    note = "; ".join(filter(None, [note, result.get("problems") or ""]))
    if note:
        row["note"] = note
    return row


def _cells(case: Case, args: argparse.Namespace) -> list[tuple[bool, int]]:
    wanted = {"np": [False], "p": [True], "both": [False, True]}[args.persistence]
    cells = [c for c in case.cells() if c[0] in wanted]
    sizes = str(args.sizes).strip().lower()
    if sizes == "all":
        return cells
    if sizes == "first":
        return [next(c for c in cells if c[0] == p) for p in wanted if any(c[0] == p for c in cells)]
    try:
        allowed = {int(v) for v in sizes.split(",") if v.strip()}
    except ValueError:
        raise ValueError(
            f"--sizes: expected all, first or comma-separated integers, got {args.sizes!r}"
        ) from None
    return [c for c in cells if c[1] in allowed]


def _note(case: Case, bench: Bench) -> str:
    parts = [case.note] if case.note else []
    if case.flow_file == "database_insert_delete.json":
        parts.append(f"data source: {bench.db_kind}")
    if case.trace is not None:
        parts.append(f"user trace {case.trace[0]}, {case.trace[1]} mode")
    return "; ".join(parts)


def run_cases(cases: list[Case], args: argparse.Namespace) -> list[Row]:
    """Every selected cell of every case on every selected transport, one set of processes per transport."""
    plan = [(case, _cells(case, args)) for case in cases]
    if not any(cells for _, cells in plan):
        raise ValueError("no cell of the selected cases has the selected sizes and persistence")
    if getattr(args, "load_core", None) is not None and args.load_core < (os.cpu_count() or 1):
        os.sched_setaffinity(0, {args.load_core})
    if getattr(args, "driver", "python") == "c":
        native.binary()  # built (or said why not) before any process is started
    rows: list[Row] = []
    for transport in list(dict.fromkeys(getattr(args, "transport", None) or ["qm"])):
        rows.extend(_run_transport(plan, args, transport))
    return rows


def _measure(
    bench: Bench, case: Case, persistent: bool, size: int, args: argparse.Namespace
) -> dict[str, Any]:
    if _native_driver(args, bench, case):
        return _drive_native(bench, case, persistent, size, args)
    if bench.rabbit is None:
        return _run_driver(_drive(bench, case, persistent, size, args))
    pids = [w.pid for w in bench.workers.values()]
    return bench.rabbit.drive(case, persistent, size, args, bench.fanout_queues, pids)


def _run_transport(
    plan: list[tuple[Case, list[tuple[bool, int]]]], args: argparse.Namespace, transport: str
) -> list[Row]:
    rows: list[Row] = []
    with Bench(args, transport=transport) as bench:
        label = bench.transport_label
        try:
            bench.start_group("default")
        except RuntimeError as exc:
            raise OSError(f"the execution group did not start: {exc}") from None
        for case, cells in plan:
            unmeasured = ""
            for persistent, size in cells:
                note = _note(case, bench)
                if unmeasured:
                    rows.append(_row(case, persistent, size, None, unmeasured, transport=label))
                    continue
                try:
                    bench.apply(case, size)
                    bench.subscribe(case)
                    problem = _prepare_trace(bench, case, persistent, size)
                except RuntimeError as exc:  # a flow that cannot be deployed is a row saying so
                    problem = str(exc)
                if problem is None:
                    problem = _round_trip(bench, case, persistent, size, args.preflight_timeout)
                bench.settle(case)
                if problem is not None:
                    unmeasured = f"not measured: {problem}"
                    rows.append(_row(case, persistent, size, None, unmeasured, transport=label))
                    continue
                for mode in _record_modes(args):
                    if mode == "off":
                        result = _measure(bench, case, persistent, size, args)
                        column = _recording_column(args, mode)
                        rows.append(_row(case, persistent, size, result, note, column, transport=label))
                    else:
                        bench.start_recording(bench.apply(case, size))
                        result = _measure(bench, case, persistent, size, args)
                        state = bench.stop_recording()
                        said = "; ".join(filter(None, [note, _recording_note(state)]))
                        rows.append(_row(case, persistent, size, result, said, mode, transport=label))
                    bench.settle(case)
        time.sleep(1.0)
        deployed = sorted({name for _, name in bench.deployed})
        rows.append(
            {
                "case": "idle group RSS",
                "flow": f"default group with {len(deployed)} flows deployed",
                "transport": label,
                "Msgs/Sec": None,
                "note": f"{_rss(bench.workers['default'].pid) / 1e6:.0f} MB (limit 150 MB)",
            }
        )
    return rows


def _record_modes(args: argparse.Namespace) -> list[str]:
    return {"off": ["off"], "on": ["on"], "both": ["off", "on"]}[getattr(args, "record", "off")]


def _recording_column(args: argparse.Namespace, mode: str) -> str | None:
    """The row's recording column: only when the run asked about recordings at all."""
    return mode if getattr(args, "record", "off") != "off" else None


def _recording_note(state: dict[str, Any]) -> str:
    """What the recording held, and whether it covered the whole window (else the figure is not all recorded)."""
    said = (
        f"recorded {state.get('messages', 0):,} messages, {state.get('crossings', 0):,} crossings, "
        f"{int(state.get('bytes') or 0) / 2**20:.0f} MiB"
    )
    if not state.get("stillRecordingAtEnd"):
        said += f"; the recording ended before the window did: {state.get('reason')}"
    return said


def _prepare_trace(bench: Bench, case: Case, persistent: bool, size: int) -> str | None:
    """Switch the flow's user trace to what the case wants, and check that records appear or stop.

    The trace file is removed first: once the switch is done a round trip must create it when
    the trace is on (fast mode opens it at the first record, safe mode also writes it through)
    and must not when it is off.
    """
    wanted = case.trace or ("none", "fast")
    name = str(json.loads((EXAMPLES / case.flow_file).read_text())["name"])
    if bench.traces.get(name, ("none", "fast")) == wanted:
        return None
    path = bench.trace_path(name)
    path.unlink(missing_ok=True)
    bench.set_trace(bench.apply(case, size), *wanted)
    bench.apply(case, size, again=True)
    bench.traces[name] = wanted
    problem = _round_trip(bench, case, persistent, size, bench.args.preflight_timeout)
    if problem is not None:
        return problem
    on = wanted[0] != "none"
    if path.exists() != on or (wanted[1] == "safe" and on and not path.stat().st_size):
        return f"user trace {wanted[0]} ({wanted[1]}) did not take effect: trace file {path}"
    return None


# -- the scenarios ------------------------------------------------------------------------------

LEGACY_CASES = ["7.1", "7.2", "7.3", "7.4", "7.5"]


def run_flows(args: argparse.Namespace) -> list[Row]:
    """``bench flow``: the §2.1–2.5 flows at their headline size (``--groups``: also 7.8's two groups)."""
    selectors = list(args.case) or list(LEGACY_CASES)
    if not args.case and args.groups:
        selectors.append("groups-2")
    if args.list:
        return list_cases(appendix_b.select(selectors))
    return run_cases(appendix_b.select(selectors), args)


def list_cases(cases: list[Case]) -> list[Row]:
    """What each case deploys and measures, without running it."""
    rows = []
    for case in cases:
        cells = ", ".join(f"{'p' if p else 'np'}-{s}" for p, s in case.cells())
        rows.append(
            {
                "case": case.key,
                "table": case.table or f"— (cells of {case.sizes_from})",
                "flow": case.label,
                "flow file": case.flow_file,
                "cells": cells,
                "groups": case.groups,
                "subscribers": case.subscribers or None,
                "note": case.note,
            }
        )
    for table, why in appendix_b.NOT_REPRODUCED.items():
        rows.append({"case": "", "table": table, "flow": "not reproduced", "note": why})
    return rows


def add_arguments(p: argparse.ArgumentParser, *, sizes: str = "all", persistence: str = "both") -> None:
    p.add_argument(
        "--case",
        action="append",
        default=[],
        help="run only this case (repeatable): a key, a seed table id (7.11-sub10) or a table prefix (7.11); "
        "--list prints them",
    )
    p.add_argument("--list", action="store_true", help="print the cases and their seed cells, run nothing")
    p.add_argument(
        "--sizes",
        default=sizes,
        help="message sizes: all (every size of the seed table), first (the table's first per "
        f"persistence) or a comma list such as 1024,4096 (default {sizes})",
    )
    p.add_argument("--persistence", choices=("np", "p", "both"), default=persistence)
    p.add_argument("--clients", type=int, default=45, help="requesters (seed 004 used 45 threads)")
    p.add_argument(
        "--sync-puts",
        action="store_true",
        help="requesters wait for the reply of every put; by default a non-persistent request is put "
        "asynchronously (MQPMO_ASYNC_RESPONSE: only a refusal is answered, raised at the get), and "
        "its Put is the time to send it",
    )
    p.add_argument(
        "--driver",
        choices=("auto", "c", "python"),
        default="auto",
        help="the requesters' program: c (built with the machine's C compiler on first use, as "
        "seed 004's requesters were a C program), python (asyncio), or auto (c when a compiler is "
        "there; python for cases with drained subscribers and on RabbitMQ)",
    )
    p.add_argument("--seconds", type=float, default=10.0, help="measurement window per row")
    p.add_argument("--warmup", type=float, default=3.0)
    p.add_argument(
        "--preflight-timeout",
        type=float,
        default=20.0,
        help="seconds the checked round trip before each row may take",
    )
    p.add_argument(
        "--no-fsync", action="store_true", help="queue manager without fsync (persistent rows optimistic)"
    )
    p.add_argument(
        "--db-url",
        default="auto",
        help="data source of the database flows: a SQLAlchemy URL, sqlite, or auto (PostgreSQL at "
        "127.0.0.1:5432/test in a private schema, else SQLite)",
    )
    p.add_argument(
        "--engine-core", type=int, default=None, help="pin the queue manager and groups to this CPU"
    )
    p.add_argument("--load-core", type=int, default=None, help="pin the driver to this CPU")
    p.add_argument(
        "--record",
        choices=("off", "on", "both"),
        default="off",
        help="flow exerciser recording during each row: off (never started), on (every message of the "
        "window recorded at every connection), or both (each cell measured off, then on)",
    )
    p.add_argument(
        "--transport",
        choices=tuple(seed004_amqp.TRANSPORTS),
        action="append",
        help="the groups' transport (repeatable, in order): qm, the embedded queue manager (default); "
        "amqp-quorum or amqp-classic, RabbitMQ at --amqp-url with that queue type",
    )
    p.add_argument("--amqp-url", default=seed004_amqp.DEFAULT_URL, help="RabbitMQ of the amqp-* transports")
    p.add_argument(
        "--reply-timeout",
        type=float,
        default=seed004_amqp.REPLY_TIMEOUT,
        help="amqp-* transports: seconds a requester waits for the reply to its request before it counts "
        f"the request lost and puts its next one (default {seed004_amqp.REPLY_TIMEOUT:g})",
    )


def _flow_arguments(p: argparse.ArgumentParser) -> None:
    add_arguments(p, sizes="first", persistence="np")
    p.add_argument("--groups", action="store_true", help="add the very complex flow in two execution groups")


SCENARIOS = {
    "flow": Scenario(
        "flow",
        "seed 004 §2.1–2.5 flows (passthrough, computes, database, filter, publication) at their first "
        "message size in one execution group; the Appendix B tables are `bench seed004`",
        run_flows,
        _flow_arguments,
    )
}
