"""`flowbroker bench qm-vs-rabbitmq`: our queue manager and RabbitMQ side by side, driven the same way.

Both servers run pinned to one core (``--server-cpu``): our queue manager as a fresh child process
per row, RabbitMQ by pinning every thread of its ``beam.smp`` for its rows and restoring its
affinity afterwards, whatever happens. The load drivers run in this process on the other core
(``--client-cpu``). Each side gets the same number of publishing and consuming connections, the
same 1 KB bodies and the same in-flight window: a publisher writes only while its messages not yet
consumed (and, when persistent, not yet confirmed) stay within ``--window``; a consumer holds at
most ``--window`` messages unacknowledged and acknowledges every ``--unit``.

- transient: non-persistent messages; RabbitMQ's queue is not durable, there are no publisher
  confirms and the consumer runs without acks; our puts and gets run outside units of work.
- persistent: on RabbitMQ a durable queue, persistent messages, publisher confirms and consumer
  acks with ``multiple``; on ours persistent messages in units of work of ``--unit`` messages on
  both sides, whose commit replies play the confirms' part.

Rows: our side with the lean one-message-per-frame driver (:mod:`flowbroker_bench.qmwire`) and
with the batched frames our ``AsyncClient`` offers; RabbitMQ with the lean AMQP driver
(:mod:`flowbroker_bench.amqpwire`) and, for reference, aiormq. Every row says how busy the
driver's core was: above 90 % the figure may be the driver's, and the row's note says so.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import signal
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol
from urllib.parse import unquote, urlparse

from flowbroker_bench import amqpwire, qmwire
from flowbroker_bench._qmload import QueueManager, queue_manager
from flowbroker_bench.core import Row, Scenario
from flowbroker_bench.peers.loadgen import cpu_seconds

QUEUE = "BENCH.Q"
RABBIT_QUEUES = {False: "flowbroker_bench.transient", True: "flowbroker_bench.durable"}
#: A driver core busier than this may be what limits the figure.
DRIVER_BUSY = 90.0


# --- what every driver exposes ------------------------------------------------------------------
class Sender(Protocol):
    published: int
    error: str | None

    @property
    def unconfirmed(self) -> int: ...


class Receiver(Protocol):
    delivered: int
    error: str | None


class Flight:
    """The in-flight window every publisher obeys, on both sides alike.

    A publisher may send while the messages sent and not yet consumed stay within ``window`` per
    publishing connection and its own unconfirmed messages within ``window``; it sends in whole
    units, so a write never leaves a unit of work without its commit.
    """

    def __init__(self, window: int, unit: int) -> None:
        self.window = window
        self.unit = unit
        self.senders: list[Sender] = []
        self.receivers: list[Receiver] = []
        self.progress = asyncio.Event()
        self.stop = asyncio.Event()

    def wake(self) -> None:
        self.progress.set()

    @property
    def published(self) -> int:
        return sum(s.published for s in self.senders)

    @property
    def delivered(self) -> int:
        return sum(r.delivered for r in self.receivers)

    def room(self, sender: Sender) -> int:
        backlog = self.published - self.delivered
        room = min(self.window * len(self.senders) - backlog, self.window - sender.unconfirmed)
        return room // self.unit * self.unit

    async def wait(self) -> None:
        self.progress.clear()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.progress.wait(), 1.0)

    def errors(self) -> list[str]:
        parties: list[Sender | Receiver] = [*self.senders, *self.receivers]
        return [p.error for p in parties if p.error]


async def _pump(sender: Any, flight: Flight) -> None:
    """Write whatever the window allows in one go, then wait for confirms or deliveries to open it."""
    while not flight.stop.is_set() and sender.error is None:
        room = flight.room(sender)
        if room <= 0:
            await flight.wait()
            continue
        sender.write(room)
        await sender.drain()


# --- the drivers --------------------------------------------------------------------------------
@dataclass
class Side:
    """One row's connections, their tasks and how to close them."""

    flight: Flight
    label: str
    tasks: list[asyncio.Task[None]] = field(default_factory=list)
    closers: list[Callable[[], Awaitable[None]]] = field(default_factory=list)
    finish: Callable[[], None] = lambda: None  # acknowledge or commit what arrived so far


def _qm_address(qm: QueueManager) -> tuple[str, int, str, str]:
    from flowbroker.qm.client import resolve_address

    address, user, password = resolve_address(qm.url, str(qm.data_dir), None, None)
    assert isinstance(address, tuple)
    return address[0], address[1], user, password


async def _qm_lean(qm: QueueManager, opts: argparse.Namespace, persistent: bool, flight: Flight) -> Side:
    host, port, user, password = _qm_address(qm)
    body = b"x" * opts.size
    side = Side(flight, "lean driver, 1 msg/frame, pipelined")
    getters = []
    for _ in range(opts.consumers):
        g = await qmwire.Getter.open(
            host, port, user, password, QUEUE, syncpoint=persistent, unit=opts.unit, prefetch=opts.window
        )
        g.on_progress = flight.wake
        getters.append(g)
        flight.receivers.append(g)
        side.closers.append(g.close)
    for _ in range(opts.publishers):
        p = await qmwire.Putter.open(
            host,
            port,
            user,
            password,
            QUEUE,
            body,
            persistent=persistent,
            unit=opts.unit,
            max_batch=opts.window,
        )
        p.on_progress = flight.wake
        flight.senders.append(p)
        side.closers.append(p.close)
    side.tasks = [asyncio.create_task(_pump(p, flight)) for p in flight.senders]

    def finish() -> None:
        for g in getters:
            g.commit_now()

    side.finish = finish
    return side


class _BatchedPutter:
    """Our AsyncClient putting ``batch`` messages per frame; persistent frames committed per write."""

    def __init__(self, client: Any, body: bytes, batch: int, persistent: bool) -> None:
        from flowbroker.qm.protocol import MessageDescriptor

        self.client = client
        self.bodies = [body] * batch
        self.batch = batch
        self.persistent = persistent
        self.md = MessageDescriptor(persistence=1 if persistent else 0)
        self.published = 0
        self.confirmed = 0
        self.error: str | None = None

    @property
    def unconfirmed(self) -> int:
        return self.published - self.confirmed if self.persistent else 0

    async def run(self, flight: Flight) -> None:
        try:
            while not flight.stop.is_set():
                frames = flight.room(self) // self.batch
                if frames <= 0:
                    await flight.wait()
                    continue
                for _ in range(frames):
                    self.client.put_async(QUEUE, self.bodies, self.md, syncpoint=self.persistent)
                self.published += frames * self.batch
                if self.persistent:
                    await self.client.commit()
                else:
                    await self.client.flush()
                self.confirmed = self.published
        except Exception as exc:  # the row must say why its publisher stopped
            self.error = f"put failed: {exc}"


class _BatchedGetter:
    """Our AsyncClient getting up to ``batch`` messages per frame (get-wait), committed per frame when persistent."""

    def __init__(self, client: Any, batch: int, persistent: bool) -> None:
        self.client = client
        self.batch = batch
        self.persistent = persistent
        self.delivered = 0
        self.error: str | None = None
        self.done = False

    async def run(self, flight: Flight) -> None:
        try:
            while not self.done:
                raws = await self.client.get_raw_many(QUEUE, self.batch, wait=0.5, syncpoint=self.persistent)
                if raws and self.persistent:
                    await self.client.commit()
                self.delivered += len(raws)
                flight.wake()
        except Exception as exc:
            self.error = f"get failed: {exc}"


async def _qm_batched(qm: QueueManager, opts: argparse.Namespace, persistent: bool, flight: Flight) -> Side:
    from flowbroker.qm.client import AsyncClient

    label = f"AsyncClient, {opts.batch} msgs/frame"
    if persistent:
        label += f" (a unit of work per write: <= {opts.window} put, <= {opts.batch} got)"
    side = Side(flight, label)
    flight.unit = opts.batch
    getters: list[_BatchedGetter] = []
    for _ in range(opts.consumers):
        client = await AsyncClient.connect(qm.url, data_dir=str(qm.data_dir))
        getter = _BatchedGetter(client, opts.batch, persistent)
        getters.append(getter)
        flight.receivers.append(getter)
        side.closers.append(client.close)
    putters: list[_BatchedPutter] = []
    for _ in range(opts.publishers):
        client = await AsyncClient.connect(qm.url, data_dir=str(qm.data_dir))
        putter = _BatchedPutter(client, b"x" * opts.size, opts.batch, persistent)
        putters.append(putter)
        flight.senders.append(putter)
        side.closers.append(client.close)
    side.tasks = [asyncio.create_task(g.run(flight)) for g in getters]
    side.tasks += [asyncio.create_task(p.run(flight)) for p in putters]

    def finish() -> None:
        for g in getters:
            g.done = True

    side.finish = finish
    return side


def _amqp_address(url: str) -> dict[str, Any]:
    u = urlparse(url)
    vhost = unquote(u.path[1:]) if len(u.path) > 1 else "/"
    return {
        "host": u.hostname or "127.0.0.1",
        "port": u.port or 5672,
        "user": unquote(u.username or "guest"),
        "password": unquote(u.password or "guest"),
        "vhost": vhost,
    }


async def _rabbit_queue(opts: argparse.Namespace, persistent: bool) -> str:
    queue = RABBIT_QUEUES[persistent]
    admin = await amqpwire.Connection.open(**_amqp_address(opts.amqp_url))
    try:
        await admin.queue_declare(queue, durable=persistent)
        await admin.queue_purge(queue)
    finally:
        await admin.close()
    return queue


async def _rabbit_lean(opts: argparse.Namespace, persistent: bool, flight: Flight) -> Side:
    connect = _amqp_address(opts.amqp_url)
    queue = await _rabbit_queue(opts, persistent)
    side = Side(flight, "lean AMQP driver")
    consumers = []
    for _ in range(opts.consumers):
        c = await amqpwire.Consumer.open(
            queue, no_ack=not persistent, ack_every=opts.unit, prefetch=opts.window, **connect
        )
        c.on_progress = flight.wake
        consumers.append(c)
        flight.receivers.append(c)
        side.closers.append(c.close)
    for _ in range(opts.publishers):
        p = await amqpwire.Publisher.open(
            queue,
            b"x" * opts.size,
            persistent=persistent,
            confirms=persistent,
            max_batch=opts.window,
            **connect,
        )
        p.on_progress = flight.wake
        flight.senders.append(p)
        side.closers.append(p.close)
    side.tasks = [asyncio.create_task(_pump(p, flight)) for p in flight.senders]

    def finish() -> None:
        for c in consumers:
            c.ack_now()

    side.finish = finish
    return side


class _AiormqPublisher:
    """aiormq's basic_publish, one coroutine per message; with confirms each waits for its own."""

    def __init__(self, channel: Any, queue: str, body: bytes, persistent: bool) -> None:
        from pamqp.commands import Basic

        self.channel = channel
        self.queue = queue
        self.body = body
        self.persistent = persistent
        self.props = Basic.Properties(delivery_mode=2 if persistent else 1)
        self.published = 0
        self.confirmed = 0
        self.error: str | None = None

    @property
    def unconfirmed(self) -> int:
        return self.published - self.confirmed if self.persistent else 0

    async def run(self, flight: Flight) -> None:
        try:
            while not flight.stop.is_set():
                room = flight.room(self)
                if room <= 0:
                    await flight.wait()
                    continue
                sends = [
                    self.channel.basic_publish(self.body, routing_key=self.queue, properties=self.props)
                    for _ in range(room)
                ]
                self.published += room
                await asyncio.gather(*sends)
                self.confirmed += room
        except Exception as exc:
            self.error = f"aiormq publish failed: {exc}"


class _AiormqConsumer:
    def __init__(self, channel: Any, persistent: bool, unit: int, flight: Flight) -> None:
        self.channel = channel
        self.persistent = persistent
        self.unit = unit
        self.flight = flight
        self.delivered = 0
        self.last_tag = 0
        self.error: str | None = None

    async def on_message(self, message: Any) -> None:
        self.delivered += 1
        if self.persistent:
            self.last_tag = message.delivery.delivery_tag
            if self.delivered % self.unit == 0:
                await self.channel.basic_ack(self.last_tag, multiple=True)
        if self.delivered % self.unit == 0:
            self.flight.wake()

    def ack_now(self) -> None:
        if self.persistent and self.last_tag:
            asyncio.ensure_future(self.channel.basic_ack(self.last_tag, multiple=True))


async def _rabbit_aiormq(opts: argparse.Namespace, persistent: bool, flight: Flight) -> Side:
    import aiormq

    queue = await _rabbit_queue(opts, persistent)
    side = Side(flight, "aiormq (reference: the client limits it)")
    consumers: list[_AiormqConsumer] = []
    for _ in range(opts.consumers):
        conn = await aiormq.connect(opts.amqp_url)
        channel = await conn.channel()
        if persistent:
            await channel.basic_qos(prefetch_count=min(opts.window, 65535))
        consumer = _AiormqConsumer(channel, persistent, opts.unit, flight)
        await channel.basic_consume(queue, consumer.on_message, no_ack=not persistent)
        consumers.append(consumer)
        flight.receivers.append(consumer)
        side.closers.append(conn.close)
    publishers: list[_AiormqPublisher] = []
    for _ in range(opts.publishers):
        conn = await aiormq.connect(opts.amqp_url)
        channel = await conn.channel(publisher_confirms=persistent)
        publisher = _AiormqPublisher(channel, queue, b"x" * opts.size, persistent)
        publishers.append(publisher)
        flight.senders.append(publisher)
        side.closers.append(conn.close)
    side.tasks = [asyncio.create_task(p.run(flight)) for p in publishers]

    def finish() -> None:
        for c in consumers:
            c.ack_now()

    side.finish = finish
    return side


# --- measuring ----------------------------------------------------------------------------------
def _core_times(core: int) -> tuple[int, int]:
    """(busy, total) jiffies of one core from /proc/stat; (0, 0) when it is not listed."""
    with open("/proc/stat") as fh:
        for line in fh:
            if line.startswith(f"cpu{core} "):
                values = [int(v) for v in line.split()[1:]]
                idle = values[3] + (values[4] if len(values) > 4 else 0)
                return sum(values) - idle, sum(values)
    return 0, 0


@dataclass
class Measurement:
    moved: int
    seconds: float
    server_cpu: float
    driver_cpu: float
    driver_core_busy: float | None
    lost: int
    errors: list[str]


async def _measure(
    side: Side, opts: argparse.Namespace, server_pids: list[int], driver_core: int | None
) -> Measurement:
    flight = side.flight
    try:
        await asyncio.sleep(opts.warmup)
        core0 = _core_times(driver_core) if driver_core is not None else (0, 0)
        n0, t0, s0, d0 = flight.delivered, time.perf_counter(), cpu_seconds(server_pids), time.process_time()
        await asyncio.sleep(opts.seconds)
        n1, t1, s1, d1 = flight.delivered, time.perf_counter(), cpu_seconds(server_pids), time.process_time()
        core1 = _core_times(driver_core) if driver_core is not None else (0, 0)
        # Stop publishing; what was published must still arrive (and be confirmed).
        flight.stop.set()
        flight.wake()
        deadline = time.monotonic() + opts.drain_timeout
        while time.monotonic() < deadline and not flight.errors():
            if flight.delivered >= flight.published and all(s.unconfirmed <= 0 for s in flight.senders):
                break
            await asyncio.sleep(0.02)
        side.finish()
        lost = flight.published - flight.delivered
    finally:
        flight.stop.set()
        for task in side.tasks:
            task.cancel()
        await asyncio.gather(*side.tasks, return_exceptions=True)
        for close in side.closers:
            with contextlib.suppress(Exception):
                await close()
    busy = total = 0
    if core1[1] > core0[1]:
        busy, total = core1[0] - core0[0], core1[1] - core0[1]
    return Measurement(
        moved=n1 - n0,
        seconds=t1 - t0,
        server_cpu=s1 - s0,
        driver_cpu=d1 - d0,
        driver_core_busy=100.0 * busy / total if total else None,
        lost=lost,
        errors=flight.errors(),
    )


def _row(broker: str, persistent: bool, side: Side, m: Measurement, opts: argparse.Namespace) -> Row:
    rate = m.moved / m.seconds if m.seconds else 0.0
    notes: list[str] = []
    if m.driver_core_busy is not None and m.driver_core_busy > DRIVER_BUSY:
        notes.append(f"driver core {m.driver_core_busy:.0f}% busy: the figure may be the driver's")
    if m.lost > 0:
        notes.append(f"{m.lost} published but not delivered within {opts.drain_timeout:g} s")
    notes.extend(m.errors)
    return {
        "broker": broker,
        "messages": "persistent" if persistent else "transient",
        "driver": side.label,
        "msgs/s": rate,
        "server CPU-ms/msg": round(m.server_cpu * 1000 / m.moved, 4) if m.moved and m.server_cpu else None,
        "server CPU %": round(100 * m.server_cpu / m.seconds, 1) if m.seconds and m.server_cpu else None,
        "driver CPU %": round(100 * m.driver_cpu / m.seconds, 1) if m.seconds else None,
        "vs RabbitMQ best": None,
        "note": "; ".join(notes),
    }


# --- RabbitMQ's process -------------------------------------------------------------------------
def rabbit_pid(port: int = 5672) -> int | None:
    """The pid of the Erlang VM running the RabbitMQ that listens on ``port``.

    Other RabbitMQ nodes may run beside it (a multi-host test starts its own), so the one whose
    listening socket is ``port`` wins; where sockets cannot be read, the first ``beam`` process
    with ``rabbit`` in its command line.
    """
    import psutil

    candidates: list[int] = []
    fallback = None
    for proc in psutil.process_iter(["name", "cmdline"]):
        name = proc.info["name"] or ""
        if name.startswith("beam"):
            fallback = fallback or proc.pid
            if "rabbit" in " ".join(proc.info["cmdline"] or []):
                candidates.append(proc.pid)
    for pid in candidates:
        try:
            sockets = psutil.Process(pid).net_connections(kind="tcp")
        except (psutil.Error, OSError):
            continue
        if any(c.status == psutil.CONN_LISTEN and c.laddr and c.laddr.port == port for c in sockets):
            return pid
    return candidates[0] if candidates else fallback


def _threads(pid: int) -> list[int]:
    try:
        return [int(t) for t in os.listdir(f"/proc/{pid}/task")]
    except OSError:
        return []


@contextlib.contextmanager
def pinned_threads(pid: int, core: int) -> Iterator[str | None]:
    """Pin every thread of ``pid`` to ``core``; give each its own affinity back on the way out.

    Each thread keeps what it had: the Erlang VM binds its schedulers one to a core, and that
    binding must survive the run. A thread started meanwhile gets the process's affinity.
    Yields None when pinned, or why it could not pin (the rows then say so). SIGTERM is turned
    into an exception meanwhile, so an interrupted run still restores RabbitMQ's affinity.
    """
    try:
        process = os.sched_getaffinity(pid)
        before = {tid: _affinity(tid, process) for tid in _threads(pid)}
    except OSError as exc:
        yield f"RabbitMQ not pinned: {exc}"
        return
    previous = None
    with contextlib.suppress(ValueError):  # only the main thread may install handlers
        previous = signal.signal(signal.SIGTERM, _terminate)
    try:
        problem = None
        try:
            for tid in _threads(pid):
                os.sched_setaffinity(tid, {core})
        except OSError as exc:
            problem = f"RabbitMQ not pinned: {exc}"
        yield problem
    finally:
        for tid in _threads(pid):
            with contextlib.suppress(OSError):  # a thread may have ended meanwhile
                os.sched_setaffinity(tid, before.get(tid, process))
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


def _affinity(tid: int, default: set[int]) -> set[int]:
    try:
        return os.sched_getaffinity(tid)
    except OSError:  # it ended between the listing and the question
        return default


def _terminate(signum: int, frame: Any) -> None:
    raise SystemExit(128 + signum)


# --- the scenario -------------------------------------------------------------------------------
@contextlib.asynccontextmanager
async def _queue_manager(opts: argparse.Namespace) -> AsyncIterator[QueueManager]:
    from flowbroker.qm.client import AsyncClient

    core = opts.server_cpu if opts.server_cpu >= 0 else None
    with queue_manager(core) as qm:
        admin = await AsyncClient.connect(qm.url, data_dir=str(qm.data_dir))
        await admin.define_queue(QUEUE, replace=True, max_depth=10_000_000)
        await admin.close()
        yield qm


def _modes(opts: argparse.Namespace) -> list[bool]:
    return {"transient": [False], "persistent": [True], "both": [False, True]}[opts.persistence]


async def _rabbit_identity(opts: argparse.Namespace) -> tuple[str, int | None]:
    """RabbitMQ's name and version as it announces them, and its local pid (None when remote)."""
    connect = _amqp_address(opts.amqp_url)
    admin = await amqpwire.Connection.open(**connect)
    await admin.close()
    version = admin.server_properties.get("version")
    name = f"RabbitMQ {version}" if version else "RabbitMQ"
    local = connect["host"] in ("127.0.0.1", "localhost", "::1")
    return name, rabbit_pid(int(connect["port"])) if local else None


async def _run(opts: argparse.Namespace) -> list[Row]:
    driver_core = opts.client_cpu if opts.client_cpu >= 0 else None
    rabbit, pid = await _rabbit_identity(opts) if opts.rabbit_drivers else ("RabbitMQ", None)
    rows: list[Row] = []
    for persistent in _modes(opts):
        group: list[Row] = []
        for name, make in (("lean", _qm_lean), ("batched", _qm_batched)):
            if name not in opts.qm_drivers:
                continue
            async with _queue_manager(opts) as qm:
                flight = Flight(opts.window, opts.unit)
                side = await make(qm, opts, persistent, flight)
                m = await _measure(side, opts, [qm.pid], driver_core)
            group.append(_row("flowbroker qm", persistent, side, m, opts))
        for name, build in (("lean", _rabbit_lean), ("aiormq", _rabbit_aiormq)):
            if name not in opts.rabbit_drivers:
                continue
            with _pinned_rabbit(pid, opts.server_cpu) as problem:
                flight = Flight(opts.window, opts.unit)
                side = await build(opts, persistent, flight)
                m = await _measure(side, opts, [pid] if pid else [], driver_core)
            row = _row(rabbit, persistent, side, m, opts)
            if problem:
                row["note"] = "; ".join(filter(None, [problem, row["note"]]))
            group.append(row)
        best = max((r["msgs/s"] for r in group if r["broker"].startswith("RabbitMQ")), default=0.0)
        for r in group:
            r["vs RabbitMQ best"] = round(r["msgs/s"] / best, 2) if best else None
        rows.extend(group)
    await _delete_rabbit_queues(opts)
    return rows


@contextlib.contextmanager
def _pinned_rabbit(pid: int | None, core: int) -> Iterator[str | None]:
    if pid is None:
        yield "no local beam.smp: RabbitMQ neither pinned nor its CPU measured"
    elif core < 0:
        yield "RabbitMQ not pinned (--server-cpu -1)"
    else:
        with pinned_threads(pid, core) as problem:
            yield problem


async def _delete_rabbit_queues(opts: argparse.Namespace) -> None:
    if not opts.rabbit_drivers:
        return
    admin = await amqpwire.Connection.open(**_amqp_address(opts.amqp_url))
    try:
        for persistent in _modes(opts):
            await admin.queue_delete(RABBIT_QUEUES[persistent])
    finally:
        await admin.close()


def run(opts: argparse.Namespace) -> list[Row]:
    """Pin this process to the driver core for the run, then put its affinity back."""
    if opts.publishers < 1 or opts.consumers < 1:
        raise ValueError("--publishers and --consumers must each be at least 1")
    if opts.unit < 1 or opts.batch < 1 or opts.window < max(opts.unit, opts.batch):
        raise ValueError("--window must hold at least one --unit and one --batch (all at least 1)")
    before = os.sched_getaffinity(0)
    if opts.client_cpu >= 0 and opts.client_cpu < (os.cpu_count() or 1):
        os.sched_setaffinity(0, {opts.client_cpu})
    try:
        try:
            import uvloop

            return uvloop.run(_run(opts))
        except ImportError:
            return asyncio.run(_run(opts))
    finally:
        os.sched_setaffinity(0, before)


def _choices(value: str, allowed: set[str]) -> list[str]:
    chosen = [v for v in value.split(",") if v]
    unknown = set(chosen) - allowed
    if unknown:
        raise argparse.ArgumentTypeError(
            f"unknown driver(s) {', '.join(sorted(unknown))}; pick from {allowed}"
        )
    return chosen


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--warmup", type=float, default=5.0, help="seconds discarded before each window")
    p.add_argument("--seconds", type=float, default=10.0, help="measured seconds per row")
    p.add_argument("--size", type=int, default=1024, help="message body bytes")
    p.add_argument("--publishers", type=int, default=1, help="publishing connections on each side")
    p.add_argument("--consumers", type=int, default=1, help="consuming connections on each side")
    p.add_argument(
        "--window",
        type=int,
        default=1000,
        help="messages in flight per publishing connection (sent, not yet consumed or confirmed); "
        "also each consumer's prefetch",
    )
    p.add_argument(
        "--unit",
        type=int,
        default=100,
        help="messages per consumer ack / commit and per persistent unit of work",
    )
    p.add_argument("--batch", type=int, default=100, help="messages per frame for the AsyncClient rows")
    p.add_argument(
        "--persistence", choices=("transient", "persistent", "both"), default="both", help="which rows to run"
    )
    p.add_argument(
        "--qm-drivers",
        type=lambda v: _choices(v, {"lean", "batched"}),
        default=["lean", "batched"],
        help="our side's rows: lean (1 msg/frame), batched (AsyncClient); comma-separated, empty for none",
    )
    p.add_argument(
        "--rabbit-drivers",
        type=lambda v: _choices(v, {"lean", "aiormq"}),
        default=["lean", "aiormq"],
        help="RabbitMQ's rows: lean (AMQP driver), aiormq (reference); comma-separated, empty for none",
    )
    p.add_argument(
        "--drain-timeout", type=float, default=10.0, help="seconds allowed for the backlog after a window"
    )
    p.add_argument("--server-cpu", type=int, default=1, help="core both servers are pinned to (-1: none)")
    p.add_argument("--client-cpu", type=int, default=0, help="core the load drivers run on (-1: none)")
    p.add_argument(
        "--amqp-url",
        default="amqp://guest:guest@127.0.0.1:5672/",
        help="the RabbitMQ to compare with; only one on this machine is pinned and has its CPU measured",
    )


SCENARIOS = {
    "qm-vs-rabbitmq": Scenario(
        "qm-vs-rabbitmq",
        "our queue manager and RabbitMQ side by side, each pinned to one core, same connections, window "
        "and 1 KB messages; transient and persistent (units of work / durable + confirms + acks); our "
        "side 1 msg/frame (lean driver) and batched (AsyncClient), RabbitMQ via a lean AMQP driver and aiormq",
        run,
        add_arguments,
    ),
}
