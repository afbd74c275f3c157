"""What the step debugger costs a flow: nothing without breakpoints, the probes with one elsewhere.

One flow thread, in process: MQInput → Compute (copies the message and sets a field) →
Passthrough, messages injected on the input node's terminal. Measured in rounds that alternate
the variants, the best round of each kept: never debugged; breakpoints set and cleared again
(the probes taken out); a breakpoint on a connection no message crosses (every connection has a
probe); an ESQL breakpoint on a line no message reaches (the Compute node runs under the line
tracer). No variant pauses.
"""

from __future__ import annotations

import argparse
import time
from typing import Any

from flowbroker_bench.core import Row, Scenario

ESQL = """CREATE COMPUTE MODULE Stamp
  CREATE FUNCTION Main() RETURNS BOOLEAN
  BEGIN
    SET OutputRoot = InputRoot;
    SET OutputRoot.XMLNSC.order.seen = 'yes';
    IF InputRoot.XMLNSC.order.id = 'never' THEN
      SET OutputRoot.XMLNSC.order.seen = 'no';
    END IF;
    RETURN TRUE;
  END;
END MODULE;"""
BODY = b"<order><id>42</id><item>widget</item><qty>3</qty></order>"


def _document() -> dict[str, Any]:
    from flowbroker.runtime.harness import flow

    return flow(
        {
            "in": ("MQInput", {"queueName": "BENCH.IN", "messageDomain": "XMLNSC"}),
            "calc": ("Compute", {"esql": ESQL}),
            "pass": ("Passthrough", {}),
            "caught": ("Passthrough", {}),
        },
        ["in.out -> calc", "calc.out -> pass", "calc.failure -> caught"],
        name="DebuggerBench",
    )


def _variant(name: str) -> Any:
    from flowbroker.runtime.debugger import Breakpoints
    from flowbroker.runtime.harness import FlowHarness

    harness = FlowHarness(_document())
    if name == "breakpoints cleared":
        harness.deployed.set_breakpoints(
            Breakpoints(frozenset({"in.out->calc.in"}), frozenset({("calc", 5)}))
        )
        harness.deployed.set_breakpoints(Breakpoints())
    elif name == "breakpoint elsewhere":
        harness.deployed.set_breakpoints(Breakpoints(frozenset({"calc.failure->caught.in"})))
    elif name == "ESQL breakpoint not reached":
        harness.deployed.set_breakpoints(Breakpoints(esql=frozenset({("calc", 7)})))
    return harness


def _round(harness: Any, messages: int) -> tuple[float, float]:
    """Seconds and CPU seconds for ``messages`` injected messages."""
    started, cpu = time.perf_counter(), time.thread_time()
    for _ in range(messages):
        harness.inject("in", BODY, domain="XMLNSC")
    elapsed, used = time.perf_counter() - started, time.thread_time() - cpu
    for tap in harness.taps.values():
        tap.seen.clear()
    return elapsed, used


VARIANTS = ("never debugged", "breakpoints cleared", "breakpoint elsewhere", "ESQL breakpoint not reached")


def run(options: argparse.Namespace) -> list[Row]:
    harnesses = {name: _variant(name) for name in VARIANTS}
    best: dict[str, tuple[float, float]] = {}
    for harness in harnesses.values():
        _round(harness, 200)  # warm up
    for _ in range(options.rounds):
        for name, harness in harnesses.items():
            elapsed, used = _round(harness, options.messages)
            if name not in best or used < best[name][1]:
                best[name] = (elapsed, used)
    for harness in harnesses.values():
        harness.close()
    base = best["never debugged"][1]
    return [
        {
            "variant": name,
            "messages": options.messages,
            "msgs/s": round(options.messages / elapsed),
            "CPU µs/msg": round(used / options.messages * 1e6, 1),
            "vs never debugged": f"{(used / base - 1) * 100:+.1f} %",
        }
        for name, (elapsed, used) in best.items()
    ]


def _arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--messages", type=int, default=1000, help="messages per round and variant")
    parser.add_argument("--rounds", type=int, default=15, help="rounds; the best of each variant is kept")


SCENARIOS = {
    "debugger": Scenario(
        "debugger",
        "step debugger cost on MQInput -> Compute -> Passthrough in one flow thread: never debugged, "
        "breakpoints cleared, a breakpoint elsewhere (probes), an ESQL breakpoint not reached (tracer)",
        run,
        _arguments,
    )
}
