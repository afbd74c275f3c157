"""Runs the MQTT peer measurements: private broker, engine under test, ramp or closed loop, rows."""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from flowbroker_bench import mst
from flowbroker_bench.core import Row
from flowbroker_bench.peers import loadgen, nodered, workloads
from flowbroker_bench.peers.mqttwire import MqttWire, publish_packet
from flowbroker_bench.peers.processes import Child, start_mosquitto, taskset_prefix

IN_TOPIC = "bench/in"
OUT_TOPIC = "bench/out"


def payloads_for(scenario: str, count: int = 64) -> list[bytes]:
    if scenario == "A":
        return [workloads.json_message(n) for n in range(count)]
    if scenario == "B":
        return [workloads.xml_order(n) for n in range(count)]
    if scenario == "transport":
        return [workloads.json_message(n) for n in range(count)]
    raise ValueError(f"unknown scenario {scenario!r}")


def check_sample(scenario: str, sample: bytes) -> str:
    if not sample:
        return "no output message was received"
    if scenario == "A":
        return workloads.check_json_output(sample)
    if scenario == "B":
        return workloads.check_invoice(None, sample)
    return ""


def _step_row(engine: str, scenario: str, m: loadgen.StepMeasurement, v: mst.Verdict) -> Row:
    return {
        "engine": engine,
        "scenario": scenario,
        "step": "ramp",
        "offered_rate": round(m.rate),
        "msgs_per_sec": round(m.delivered_rate),
        "cpu_ms_per_msg": m.cpu_ms_per_msg,
        "backlog_end": v.backlog_end,
        "lost": v.lost,
        "drain_s": round(v.drain_s, 2),
        "sustainable": "yes" if v.sustainable else "no: " + "; ".join(v.reasons),
    }


def ramp(
    engine: str,
    scenario: str,
    args: argparse.Namespace,
    port: int,
    pids: Callable[[], Sequence[int]],
    restart: Callable[[], None] | None,
    idle: Callable[[], None] | None,
    in_topic: str = IN_TOPIC,
    out_topic: str = OUT_TOPIC,
) -> list[Row]:
    """The open-loop ramp for one engine and scenario: one row per step and the MST row."""
    payloads = payloads_for(scenario)
    measured: dict[float, tuple[loadgen.StepMeasurement, mst.Verdict]] = {}
    rows: list[Row] = []
    problems: list[str] = []

    def step(rate: float) -> mst.Verdict:
        m = loadgen.paced_step(
            "127.0.0.1",
            port,
            in_topic,
            out_topic,
            payloads,
            rate,
            warmup_s=args.warmup,
            window_s=args.window,
            engine_pids=pids(),
            load_core=args.load_core,
        )
        v = mst.judge(
            rate,
            m.delivered_rate,
            m.backlog,
            m.lost,
            m.last_arrival_after_stop_s,
            sent_rate=m.window_sent / m.window_s,
        )
        problem = check_sample(scenario, m.sample)
        if problem:
            problems.append(problem)
            v = mst.Verdict(
                rate,
                v.delivered_rate,
                False,
                v.backlog_slope,
                v.backlog_end,
                v.lost,
                v.drain_s,
                (*v.reasons, f"wrong output: {problem}"),
            )
        measured[rate] = (m, v)
        rows.append(_step_row(engine, scenario, m, v))
        if not v.sustainable and restart is not None:
            restart()  # an overloaded instance stays slower: the next step gets a fresh one
        elif idle is not None:
            idle()
        return v

    result = mst.run_ramp(
        mst.ramp_rates(args.start_rate, args.factor, args.max_rate), step, refine=args.refine
    )
    best = result.mst
    summary: Row = {"engine": engine, "scenario": scenario, "step": "MST", "offered_rate": round(best)}
    if best and best in measured:
        m, _ = measured[best]
        summary.update(
            msgs_per_sec=round(m.delivered_rate),
            cpu_ms_per_msg=m.cpu_ms_per_msg,
            backlog_end=measured[best][1].backlog_end,
            lost=0,
            sustainable="yes",
        )
    else:
        summary.update(
            msgs_per_sec=0, sustainable="no step was sustainable" + (f" ({problems[0]})" if problems else "")
        )
    return [*(rows if args.steps else []), summary]


def closed(
    engine: str,
    scenario: str,
    args: argparse.Namespace,
    port: int,
    pids: Sequence[int],
    out_topic: str = OUT_TOPIC,
) -> list[Row]:
    m = loadgen.closed_loop(
        "127.0.0.1",
        port,
        IN_TOPIC,
        out_topic,
        payloads_for(scenario),
        args.closed_loop,
        warmup_s=args.warmup,
        window_s=args.window,
        engine_pids=pids,
        load_core=args.load_core,
    )
    problem = check_sample(scenario, m.sample)
    return [
        {
            "engine": engine,
            "scenario": scenario,
            "step": f"closed loop, {args.closed_loop} in flight",
            "msgs_per_sec": round(m.rate),
            "cpu_ms_per_msg": m.cpu_ms_per_msg,
            "sustainable": "n/a (closed loop)" if not problem else f"wrong output: {problem}",
        }
    ]


def transport_rows(args: argparse.Namespace) -> list[Row]:
    """Mosquitto alone: the in-topic is the out-topic, so the driver's own ceiling shows."""
    with tempfile.TemporaryDirectory(prefix="fb-peers-") as tmp:
        broker, port = start_mosquitto(Path(tmp), args.load_core)
        try:
            engine = "mosquitto alone"
            if args.closed_loop:
                rows = closed(engine, "transport", args, port, [broker.pid], out_topic=IN_TOPIC)
            else:
                rows = ramp(
                    engine, "transport", args, port, lambda: [broker.pid], None, None, IN_TOPIC, IN_TOPIC
                )
            for row in rows:
                row["note"] = "CPU is the broker's; driver and broker share the load core"
            return rows
        finally:
            broker.stop()


class _NodeRedSession:
    """The current Node-RED instance of one scenario; replaced by a fresh one after an overload."""

    def __init__(self, red: Path, scenario: str, port: int, work: Path, core: int) -> None:
        self.red, self.scenario, self.port, self.work, self.core = red, scenario, port, work, core
        self.instance: nodered.NodeRed | None = None

    def start(self) -> None:
        self.stop()
        self.instance = nodered.NodeRed(
            self.red, self.scenario, self.port, IN_TOPIC, OUT_TOPIC, self.work, self.core
        )
        self.instance.wait_ready(payloads_for(self.scenario, 1)[0])
        self.instance.wait_idle()

    def pids(self) -> list[int]:
        return [self.instance.pid] if self.instance is not None else []

    def idle(self) -> None:
        if self.instance is not None:
            self.instance.wait_idle()

    def stop(self) -> None:
        if self.instance is not None:
            self.instance.stop()
            self.instance = None


class _OurSession:
    """Our engine (the flow runtime in its own pinned process) on one scenario; replaceable like Node-RED."""

    def __init__(self, scenario: str, port: int, work: Path, core: int, instances: int) -> None:
        self.scenario, self.port, self.work, self.core, self.instances = scenario, port, work, core, instances
        self.child: Child | None = None

    def start(self) -> None:
        self.stop()
        argv = [
            *taskset_prefix(self.core),
            sys.executable,
            "-m",
            "flowbroker_bench.peers.engine_host",
            "--scenario",
            self.scenario,
            "--port",
            str(self.port),
            "--instances",
            str(self.instances),
        ]
        self.child = Child(
            argv, self.work, self.work / f"flowbroker-{self.scenario}-{time.monotonic_ns()}.log"
        )
        wait_answer(self.port, payloads_for(self.scenario, 1)[0], self.child)
        self.idle()

    def pids(self) -> list[int]:
        return [self.child.pid] if self.child is not None else []

    def idle(self) -> None:
        if self.child is not None:
            wait_idle([self.child.pid])

    def stop(self) -> None:
        if self.child is not None:
            self.child.stop()
            self.child = None


def wait_answer(port: int, probe: bytes, child: Child, timeout: float = 60.0) -> None:
    """Publish ``probe`` until the engine answers on the out-topic (its flow is live end to end)."""
    listener = MqttWire("127.0.0.1", port)
    sender = MqttWire("127.0.0.1", port)
    try:
        listener.subscribe(OUT_TOPIC)
        packet = publish_packet(IN_TOPIC, probe)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if child.process.poll() is not None:
                raise OSError(f"the engine exited with status {child.process.returncode}: {child.tail()}")
            sender.send(packet)
            if listener.receive(0.5):
                return
        raise OSError(f"the engine did not answer within {timeout} s: {child.tail()}")
    finally:
        listener.close()
        sender.close()


def wait_idle(pids: Sequence[int], timeout: float = 60.0) -> None:
    """Wait until the engine has drained what it had queued: its CPU time stops moving."""
    deadline = time.monotonic() + timeout
    last = loadgen.cpu_seconds(pids)
    while time.monotonic() < deadline:
        time.sleep(0.5)
        now = loadgen.cpu_seconds(pids)
        if now - last < 0.05:
            return
        last = now


def flowbroker_rows(args: argparse.Namespace) -> list[Row]:
    """Our side of scenarios A and B through the same private Mosquitto, measured like Node-RED."""
    engine = "flowbroker (MQTTSubscribe -> Compute -> MQTTPublish)"
    scenarios = ["A", "B"] if args.workload == "both" else [args.workload]
    rows: list[Row] = []
    with tempfile.TemporaryDirectory(prefix="fb-peers-") as tmp:
        work = Path(tmp)
        broker, port = start_mosquitto(work, args.load_core)
        try:
            for scenario in scenarios:
                session = _OurSession(scenario, port, work, args.engine_core, args.instances)
                session.start()
                try:
                    if args.closed_loop:
                        rows += closed(engine, scenario, args, port, session.pids())
                    else:
                        rows += ramp(engine, scenario, args, port, session.pids, session.start, session.idle)
                finally:
                    session.stop()
        finally:
            broker.stop()
    for row in rows:
        row["pinning"] = f"engine core {args.engine_core}, load+broker core {args.load_core}"
        row["instances"] = args.instances
    return rows


def nodered_rows(args: argparse.Namespace) -> list[Row]:
    red, version = nodered.install(Path(args.scratch))
    engine = f"node-red {version}"
    scenarios = ["A", "B"] if args.workload == "both" else [args.workload]
    rows: list[Row] = []
    with tempfile.TemporaryDirectory(prefix="fb-peers-") as tmp:
        work = Path(tmp)
        broker, port = start_mosquitto(work, args.load_core)
        try:
            for scenario in scenarios:
                session = _NodeRedSession(red, scenario, port, work, args.engine_core)
                session.start()
                try:
                    if args.closed_loop:
                        rows += closed(engine, scenario, args, port, session.pids())
                    else:
                        rows += ramp(engine, scenario, args, port, session.pids, session.start, session.idle)
                finally:
                    session.stop()
        finally:
            broker.stop()
    pinned = (os.cpu_count() or 1) > 1
    for row in rows:
        row["pinning"] = (
            f"engine core {args.engine_core}, load+broker core {args.load_core}"
            if pinned
            else "unpinned (1 core)"
        )
    return rows


def wait(seconds: float) -> None:
    time.sleep(seconds)
