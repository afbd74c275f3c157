"""The MQTT load generator: paced (open-loop) and closed-loop runs with a receiving process beside.

The sender runs in the calling process and the receiver in a forked child, both pinned to the
load core, so neither steals the engine's core. An open-loop step sends at a fixed rate through a
warm-up and a window, then stops and waits for the backlog to drain: the figures it returns are
what :mod:`flowbroker_bench.mst` judges.
"""

from __future__ import annotations

import multiprocessing
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

from flowbroker_bench.peers.mqttwire import MqttWire, parse_publish, publish_packet

#: Clock ticks per second for /proc/<pid>/stat's utime and stime.
_TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pids: Sequence[int]) -> float:
    """User + system CPU seconds consumed so far by ``pids`` (a vanished pid counts as 0)."""
    total = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat", "rb") as handle:
                stat = handle.read()
        except OSError:
            continue
        # The command name may hold spaces: fields are counted after its closing parenthesis.
        fields = stat[stat.rindex(b")") + 2 :].split()
        total += int(fields[11]) + int(fields[12])
    return total / _TICKS


def pin(cores: set[int]) -> None:
    """Pin this process to ``cores`` when the machine has them (a 1-core machine stays unpinned)."""
    available = os.sched_getaffinity(0)
    wanted = cores & set(range(os.cpu_count() or 1))
    if wanted and wanted != available:
        os.sched_setaffinity(0, wanted)


@dataclass
class StepMeasurement:
    """What one paced step saw: counts over the window, the backlog series and the drain."""

    rate: float
    window_s: float
    sent: int = 0
    received: int = 0
    window_sent: int = 0
    window_received: int = 0
    lost: int = 0
    last_arrival_after_stop_s: float = 0.0
    cpu_s: float = 0.0
    backlog: list[tuple[float, int]] = field(default_factory=list)
    sample: bytes = b""

    @property
    def delivered_rate(self) -> float:
        return self.window_received / self.window_s if self.window_s else 0.0

    @property
    def cpu_ms_per_msg(self) -> float | None:
        return 1000.0 * self.cpu_s / self.window_received if self.window_received and self.cpu_s else None


def _receiver(
    host: str, port: int, topic: str, core: int, shared: object, ready: object, stop: object, samples: object
) -> None:
    pin({core})
    wire = MqttWire(host, port)
    wire.subscribe(topic)
    ready.set()  # type: ignore[attr-defined]
    count = 0
    want_sample = True

    def keep(packet: bytes) -> None:
        nonlocal want_sample
        if want_sample:
            samples.put(parse_publish(packet)[1])  # type: ignore[attr-defined]
            want_sample = False

    while not stop.is_set():  # type: ignore[attr-defined]
        got = wire.receive(0.05, keep if want_sample else None)
        if got:
            count += got
            shared[0] = count  # type: ignore[index]
            shared[1] = time.monotonic()  # type: ignore[index]
    wire.close()


class Receiver:
    """A forked process counting PUBLISH packets on one topic (count and last-arrival time shared)."""

    def __init__(self, host: str, port: int, topic: str, core: int = 0) -> None:
        ctx = multiprocessing.get_context("fork")
        self.shared = ctx.Array("d", 2, lock=False)
        self._stop = ctx.Event()
        ready = ctx.Event()
        self._samples: multiprocessing.Queue[bytes] = ctx.Queue()
        self.process = ctx.Process(
            target=_receiver,
            args=(host, port, topic, core, self.shared, ready, self._stop, self._samples),
            daemon=True,
        )
        self.process.start()
        if not ready.wait(10):
            self.close()
            raise OSError(f"the receiving process could not subscribe to {topic!r} on {host}:{port}")

    @property
    def count(self) -> int:
        return int(self.shared[0])

    @property
    def last_arrival(self) -> float:
        return float(self.shared[1])

    def sample(self, timeout: float = 0.0) -> bytes:
        try:
            return self._samples.get(timeout=timeout) if timeout else self._samples.get_nowait()
        except Exception:
            return b""

    def close(self) -> None:
        self._stop.set()
        self.process.join(5)
        if self.process.is_alive():
            self.process.kill()
            self.process.join(5)


def paced_step(
    host: str,
    port: int,
    in_topic: str,
    out_topic: str,
    payloads: Sequence[bytes],
    rate: float,
    *,
    warmup_s: float,
    window_s: float,
    engine_pids: Sequence[int] = (),
    drain_timeout_s: float = 10.0,
    expect_per_message: int = 1,
    load_core: int = 0,
) -> StepMeasurement:
    """Send at ``rate`` msgs/s for warm-up + window, stop, wait for the drain, and measure."""
    if rate <= 0:
        raise ValueError(f"rate must be positive, got {rate}")
    packets = [publish_packet(in_topic, p) for p in payloads] or [publish_packet(in_topic, b"")]
    receiver = Receiver(host, port, out_topic, load_core)
    pin({load_core})
    sender = MqttWire(host, port)
    result = StepMeasurement(rate=rate, window_s=window_s)
    try:
        start = time.monotonic()
        window_start = start + warmup_s
        stop_at = window_start + window_s
        sent = 0
        cpu_start = 0.0
        in_window = False
        next_sample = window_start
        base_sent = base_received = 0
        n_packets = len(packets)
        while True:
            now = time.monotonic()
            if not in_window and now >= window_start:
                in_window = True
                cpu_start = cpu_seconds(engine_pids)
                base_sent, base_received = sent, receiver.count
            if now >= stop_at:
                break
            due = int((now - start) * rate)
            if due > sent:
                batch = min(due - sent, 5000)
                sender.send(b"".join(packets[(sent + i) % n_packets] for i in range(batch)))
                sent += batch
            if in_window and now >= next_sample:
                result.backlog.append((now - window_start, sent * expect_per_message - receiver.count))
                next_sample += 0.25
            time.sleep(0.002)
        stopped = time.monotonic()
        result.window_sent = sent - base_sent
        result.window_received = receiver.count - base_received
        result.cpu_s = cpu_seconds(engine_pids) - cpu_start if engine_pids else 0.0
        expected = sent * expect_per_message
        deadline = stopped + drain_timeout_s
        quiet_since = time.monotonic()
        last_seen = receiver.count
        while time.monotonic() < deadline and receiver.count < expected:
            time.sleep(0.02)
            if receiver.count != last_seen:
                last_seen, quiet_since = receiver.count, time.monotonic()
            elif time.monotonic() - quiet_since > 3.0:
                break
        result.sent = sent
        result.received = receiver.count
        result.lost = max(0, expected - result.received)
        result.last_arrival_after_stop_s = max(0.0, receiver.last_arrival - stopped)
        result.sample = receiver.sample(1.0)
    finally:
        sender.close()
        receiver.close()
    return result


@dataclass
class ClosedLoopMeasurement:
    in_flight: int
    window_s: float
    received: int
    cpu_s: float
    sample: bytes = b""

    @property
    def rate(self) -> float:
        return self.received / self.window_s if self.window_s else 0.0

    @property
    def cpu_ms_per_msg(self) -> float | None:
        return 1000.0 * self.cpu_s / self.received if self.received and self.cpu_s else None


def closed_loop(
    host: str,
    port: int,
    in_topic: str,
    out_topic: str,
    payloads: Sequence[bytes],
    in_flight: int,
    *,
    warmup_s: float,
    window_s: float,
    engine_pids: Sequence[int] = (),
    load_core: int = 0,
) -> ClosedLoopMeasurement:
    """Keep ``in_flight`` messages outstanding: each arrival releases the next send."""
    if in_flight < 1:
        raise ValueError(f"in_flight must be at least 1, got {in_flight}")
    packets = [publish_packet(in_topic, p) for p in payloads] or [publish_packet(in_topic, b"")]
    pin({load_core})
    receiver = MqttWire(host, port)
    receiver.subscribe(out_topic)
    sender = MqttWire(host, port)
    sample: list[bytes] = []

    def keep(packet: bytes) -> None:
        if not sample:
            sample.append(parse_publish(packet)[1])

    try:
        sent = 0
        n = len(packets)
        sender.send(b"".join(packets[i % n] for i in range(in_flight)))
        sent = in_flight
        start = time.monotonic()
        window_start = start + warmup_s
        stop_at = window_start + window_s
        received = 0
        base = None
        cpu_start = 0.0
        while True:
            now = time.monotonic()
            if base is None and now >= window_start:
                base = received
                cpu_start = cpu_seconds(engine_pids)
            if now >= stop_at:
                break
            got = receiver.receive(0.5, None if sample else keep)
            if got:
                received += got
                sender.send(b"".join(packets[(sent + i) % n] for i in range(got)))
                sent += got
        cpu = cpu_seconds(engine_pids) - cpu_start if engine_pids else 0.0
        return ClosedLoopMeasurement(
            in_flight, window_s, received - (base or 0), cpu, sample[0] if sample else b""
        )
    finally:
        sender.close()
        receiver.close()
