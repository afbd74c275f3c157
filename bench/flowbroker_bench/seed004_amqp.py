"""``bench seed004 --transport amqp-quorum|amqp-classic``: the Appendix B cases through RabbitMQ.

The execution groups run the same flow documents with their broker's transport URL set to
RabbitMQ. Everything this run makes there carries its own stamp, so runs sharing one RabbitMQ
never meet: the queues get a suffix (the flows' MQInput/MQOutput queue names are rewritten to
match), and publications go to a topic exchange of the run's own, deleted at the end. The
requesters (:mod:`flowbroker_bench.amqp_requesters`) share one connection on the lean AMQP codec;
a request carries its MQMD in AMQP properties exactly as a flow's put does, and each requester
waits for the reply to its own request (matched by correlation id) before it puts the next.

The QM CPU columns of these rows are RabbitMQ's: the CPU of the local ``beam.smp`` over the
measurement window (the whole node, so whatever else uses it then counts too); empty when
RabbitMQ runs elsewhere.
"""

from __future__ import annotations

import argparse
import time
import uuid
from statistics import median
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from flowbroker_bench.appendix_b import Case

#: ``--transport`` choices: the row's label and the RabbitMQ queue type (None: the queue manager).
TRANSPORTS: dict[str, tuple[str, str | None]] = {
    "qm": ("embedded queue manager", None),
    "amqp-quorum": ("RabbitMQ quorum queues", "quorum"),
    "amqp-classic": ("RabbitMQ classic queues", "classic"),
}
DEFAULT_URL = "amqp://guest:guest@127.0.0.1:5672/"
#: Request bodies built per requester before the window and sent in turn.
BODIES_PER_REQUESTER = 8
#: Seconds a requester waits for its reply before it counts the request lost (``--reply-timeout``).
REPLY_TIMEOUT = 30.0


class RabbitSide:
    """The run's queues, exchange and bindings on RabbitMQ, and its requesters."""

    def __init__(self, url: str, kind: str) -> None:
        import pika

        stamp = f"{time.time_ns():x}.{uuid.uuid4().hex[:6]}"
        self.url, self.kind = url, kind
        self.suffix = f".{kind}.{stamp}"
        self.exchange = f"flowbroker.bench.{stamp}"
        try:
            self._conn = pika.BlockingConnection(pika.URLParameters(url))
        except Exception as exc:
            raise OSError(f"--amqp-url: RabbitMQ at {_redact(url)} is not reachable ({exc!r})") from None
        self._channel = self._conn.channel()
        self._channel.exchange_declare(self.exchange, "topic", durable=True)
        self._made: list[str] = []
        self._bound: list[tuple[str, str]] = []

    # -- what the groups and the flows are given -------------------------------------------------

    def env(self) -> dict[str, str]:
        """The execution groups' settings: the queue type they define and the run's exchange."""
        return {"FLOWBROKER_AMQP_QUEUE_TYPE": self.kind, "FLOWBROKER_AMQP_TOPIC_EXCHANGE": self.exchange}

    def queue(self, name: str) -> str:
        return f"{name}{self.suffix}"

    def rename_queues(self, document: dict[str, Any]) -> None:
        """Point the flow's MQInput/MQOutput nodes at the run's queues, defining them."""
        for node in document.get("nodes") or []:
            props = node.get("properties") or {}
            if node.get("type") in ("MQInput", "MQOutput") and props.get("queueName"):
                props["queueName"] = self.define(str(props["queueName"]))

    # -- administration --------------------------------------------------------------------------

    def define(self, name: str) -> str:
        real = self.queue(name)
        if real not in self._made:
            self._channel.queue_declare(real, durable=True, arguments={"x-queue-type": self.kind})
            self._made.append(real)
        return real

    def delete(self, name: str) -> None:
        real = self.queue(name)
        if real in self._made:
            self._channel.queue_delete(real)
            self._made.remove(real)

    def depth(self, name: str) -> int:
        """Messages ready on the queue (those a consumer holds unacknowledged are not counted)."""
        return int(self._channel.queue_declare(self.define(name), passive=True).method.message_count)

    def purge(self, *names: str) -> None:
        for name in names:
            self._channel.queue_purge(self.define(name))

    def subscribe(self, topic: str, queue: str) -> None:
        from flowbroker.runtime.transports.amqp import routing_key

        binding = (self.define(queue), routing_key(topic))
        self._channel.queue_bind(binding[0], self.exchange, binding[1])
        self._bound.append(binding)

    def unsubscribe_all(self) -> None:
        for queue, key in self._bound:
            self._channel.queue_unbind(queue, self.exchange, key)
        self._bound = []

    def idle(self) -> None:
        """Answer RabbitMQ's heartbeats while the measurement runs on other connections."""
        self._conn.process_data_events(time_limit=0)

    def close(self) -> None:
        try:
            for real in self._made:
                self._channel.queue_delete(real)
            self._channel.exchange_delete(self.exchange)
            self._conn.close()
        except Exception:  # tearing down must not hide the figures already printed
            pass

    # -- requests --------------------------------------------------------------------------------

    def connect(self) -> Any:
        from flowbroker.runtime.transports.amqp import AmqpTransport

        return AmqpTransport.open(self.url)

    def round_trip(self, case: Case, persistent: bool, size: int, wait: float) -> str | None:
        """One request through the flow; None when its reply came back right, else why not."""
        from flowbroker_bench.flow import _descriptor

        body, fields = case.body(size, 0)
        correl_id = uuid.uuid4().bytes + b"PREFLGHT"
        self.define(case.in_queue)
        self.define(case.out_queue)
        conn = self.connect()
        try:
            conn.put(
                self.queue(case.in_queue), body, _descriptor(persistent, {**fields, "correl_id": correl_id})
            )
            deadline = time.monotonic() + wait
            reply = None
            while reply is None:
                reply = conn.get(self.queue(case.out_queue), wait=0.5, correl_id=correl_id)
                if reply is None and time.monotonic() > deadline:
                    return f"no reply on {self.queue(case.out_queue)} within {wait:.0f}s"
        finally:
            conn.close()
        if case.check is not None:
            try:
                case.check(body, reply.body, size)
            except ValueError as exc:
                return f"wrong reply: {exc}"
        return None

    def drive(
        self,
        case: Case,
        persistent: bool,
        size: int,
        args: argparse.Namespace,
        fanout_queues: list[str],
        group_pids: list[int],
    ) -> dict[str, Any]:
        """The requesters (:mod:`flowbroker_bench.amqp_requesters`) and the drainers of the other
        subscribers, on uvloop when it is there: the driver must cost less than what it drives."""
        from flowbroker_bench.flow import _run_driver

        return _run_driver(self._drive(case, persistent, size, args, fanout_queues, group_pids))

    async def _drive(
        self,
        case: Case,
        persistent: bool,
        size: int,
        args: argparse.Namespace,
        fanout_queues: list[str],
        group_pids: list[int],
    ) -> dict[str, Any]:
        import asyncio

        from flowbroker_bench.amqp_requesters import Drainers, Requesters, prepare
        from flowbroker_bench.flow import _cpu_seconds
        from flowbroker_bench.qm_vs_rabbitmq import rabbit_pid

        requests = [
            [prepare(*case.body(size, index * 10_000_000 + n + 1)) for n in range(BODIES_PER_REQUESTER)]
            for index in range(args.clients)
        ]
        check = case.check
        reply_timeout = float(getattr(args, "reply_timeout", REPLY_TIMEOUT))
        if not reply_timeout > 0:
            raise ValueError(f"--reply-timeout: expected seconds above 0, got {reply_timeout}")
        real_fanout = [self.define(q) for q in fanout_queues]
        drainers = await Drainers.open(self.url, real_fanout) if real_fanout else None
        requesters = await Requesters.open(
            self.url,
            self.define(case.in_queue),
            self.define(case.out_queue),
            requests,
            persistent=persistent,
            check=None if check is None else (lambda request, reply: check(request, reply, size)),
            reply_timeout=reply_timeout,
        )
        try:
            requesters.start()
            await asyncio.sleep(args.warmup)
            requesters.measuring = True
            beam = rabbit_pid() if _local(self.url) else None
            beam0 = _cpu_seconds(beam) if beam else 0.0
            eg0 = sum(_cpu_seconds(p) for p in group_pids)
            drv0 = time.process_time()
            t0 = time.perf_counter()
            await asyncio.sleep(args.seconds)
            elapsed = time.perf_counter() - t0
            requesters.measuring = False
            eg_cpu = sum(_cpu_seconds(p) for p in group_pids) - eg0
            beam_cpu = _cpu_seconds(beam) - beam0 if beam else None
            drv = time.process_time() - drv0
            await requesters.finish(min(reply_timeout, 30.0))
        finally:
            await requesters.close()
        tally = requesters.tally
        fanout = ""
        if drainers is not None:
            expected = tally.puts * len(real_fanout)
            deadline = time.monotonic() + 15
            while drainers.drained < expected and time.monotonic() < deadline:
                await asyncio.sleep(0.1)
            fanout = (
                f"ok: {drainers.drained:,} copies drained"
                if drainers.drained == expected
                else f"{drainers.drained:,} of {expected:,} copies drained"
            )
            await drainers.close()
        if requesters.error is not None and not tally.counted:
            raise RuntimeError(f"the requesters failed: {requesters.error}")
        problems = "; ".join(filter(None, [tally.problems(), requesters.error or ""]))
        return {
            "count": tally.counted,
            "bytes": tally.moved,
            "elapsed": elapsed,
            "eg_cpu": eg_cpu,
            "qm_cpu": beam_cpu,
            "driver_cpu": drv,
            "response_ms": 1000 * median(tally.responses) if tally.responses else None,
            "get_ms": 1000 * median(tally.get_times) if tally.get_times else None,
            "put_ms": 1000 * median(tally.put_times) if tally.put_times else None,
            "fanout": fanout,
            "problems": problems,
        }


def _local(url: str) -> bool:
    """Whether the RabbitMQ at ``url`` runs on this machine (its beam.smp's CPU can be read)."""
    from urllib.parse import urlsplit

    return (urlsplit(url).hostname or "localhost") in ("localhost", "127.0.0.1", "::1")


def _redact(url: str) -> str:
    from flowbroker.runtime.transports import redact

    return str(redact(url))
