"""``bench seed004 --transport amqp-quorum|amqp-classic``: the Appendix B cases through RabbitMQ.

The execution groups run the same flow documents with their broker's transport URL set to
RabbitMQ. Everything this run makes there carries its own stamp, so runs sharing one RabbitMQ
never meet: the queues get a suffix (the flows' MQInput/MQOutput queue names are rewritten to
match), and publications go to a topic exchange of the run's own, deleted at the end. The
requesters are threads, each with a connection of its own through the runtime's RabbitMQ
transport, so a request carries its MQMD in AMQP properties exactly as a flow's put does.

The QM CPU columns of these rows are RabbitMQ's: the CPU of the local ``beam.smp`` over the
measurement window (the whole node, so whatever else uses it then counts too); empty when
RabbitMQ runs elsewhere.
"""

from __future__ import annotations

import argparse
import threading
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
        """Requesters in put-then-get loops (2 messages a round trip) and drainers, as threads."""
        from flowbroker_bench.flow import _cpu_seconds, _descriptor
        from flowbroker_bench.qm_vs_rabbitmq import rabbit_pid

        stop, drained_stop, measuring = threading.Event(), threading.Event(), threading.Event()
        lock = threading.Lock()
        counted, moved, puts_total, drained = [0], [0], [0], [0]
        responses: list[float] = []
        put_times: list[float] = []
        get_times: list[float] = []
        errors: list[str] = []
        in_queue, out_queue = self.define(case.in_queue), self.define(case.out_queue)

        def requester(index: int) -> None:
            try:
                conn = self.connect()
            except Exception as exc:
                errors.append(str(exc))
                return
            seq = 0
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
                    conn.put(in_queue, body, md)
                    put_done = time.perf_counter()
                    with lock:
                        puts_total[0] += 1
                    got = None
                    while got is None and not stop.is_set():
                        got = conn.get(out_queue, wait=1.0)
                    if got is None:
                        break
                    if measuring.is_set():
                        done = time.perf_counter()
                        with lock:
                            counted[0] += 2
                            moved[0] += len(body) + len(got.body)
                            put_times.append(put_done - started)
                            get_times.append(done - put_done)
                            responses.append(done - started)
            except Exception as exc:
                errors.append(str(exc))
            finally:
                conn.close()

        def drainer(queues: list[str]) -> None:
            conn = self.connect()
            try:
                while not drained_stop.is_set():
                    for queue in queues:
                        got = conn.get_many(queue, 512, wait=0.1)
                        with lock:
                            drained[0] += len(got)
            finally:
                conn.close()

        real_fanout = [self.define(q) for q in fanout_queues]
        drainers = [
            threading.Thread(target=drainer, args=(real_fanout[i::4],), daemon=True)
            for i in range(min(4, len(real_fanout)))
        ]
        requesters = [threading.Thread(target=requester, args=(i,), daemon=True) for i in range(args.clients)]
        for thread in [*drainers, *requesters]:
            thread.start()
        time.sleep(args.warmup)
        measuring.set()
        beam = rabbit_pid() if _local(self.url) else None
        beam0 = _cpu_seconds(beam) if beam else 0.0
        eg0 = sum(_cpu_seconds(p) for p in group_pids)
        drv0 = time.process_time()
        t0 = time.perf_counter()
        time.sleep(args.seconds)
        elapsed = time.perf_counter() - t0
        measuring.clear()
        eg_cpu = sum(_cpu_seconds(p) for p in group_pids) - eg0
        beam_cpu = _cpu_seconds(beam) - beam0 if beam else None
        drv = time.process_time() - drv0
        stop.set()
        for thread in requesters:
            thread.join(30)
        fanout = ""
        if drainers:
            expected = puts_total[0] * len(real_fanout)
            deadline = time.monotonic() + 15
            while drained[0] < expected and time.monotonic() < deadline:
                time.sleep(0.1)
            fanout = (
                f"ok: {drained[0]:,} copies drained"
                if drained[0] == expected
                else f"{drained[0]:,} of {expected:,} copies drained"
            )
            drained_stop.set()
            for thread in drainers:
                thread.join(30)
        if errors and not counted[0]:
            raise RuntimeError(f"the requesters failed: {errors[0]}")
        return {
            "count": counted[0],
            "bytes": moved[0],
            "elapsed": elapsed,
            "eg_cpu": eg_cpu,
            "qm_cpu": beam_cpu,
            "driver_cpu": drv,
            "response_ms": 1000 * median(responses) if responses else None,
            "get_ms": 1000 * median(get_times) if get_times else None,
            "put_ms": 1000 * median(put_times) if put_times else None,
            "fanout": fanout,
        }


def _local(url: str) -> bool:
    """Whether the RabbitMQ at ``url`` runs on this machine (its beam.smp's CPU can be read)."""
    from urllib.parse import urlsplit

    return (urlsplit(url).hostname or "localhost") in ("localhost", "127.0.0.1", "::1")


def _redact(url: str) -> str:
    from flowbroker.runtime.transports import redact

    return str(redact(url))
