"""A node's statistics: elapsed time of every message, CPU time sampled and scaled by elapsed."""

from __future__ import annotations

import time

from flowbroker.runtime.harness import FlowHarness, with_input
from flowbroker_nodes.base import CPU_SAMPLE_EVERY, NodeStats


def _burn(ms: float) -> None:
    until = time.thread_time() + ms / 1000
    while time.thread_time() < until:
        pass


def test_the_first_message_and_every_nth_after_read_the_cpu_clock() -> None:
    stats = NodeStats()
    sampled = [stats.cpu_clock() >= 0 for _ in range(2 * CPU_SAMPLE_EVERY + 1)]
    assert [i for i, yes in enumerate(sampled) if yes] == [0, CPU_SAMPLE_EVERY, 2 * CPU_SAMPLE_EVERY]


def test_cpu_time_is_exact_for_one_message_and_scaled_by_elapsed_after() -> None:
    stats = NodeStats()
    started, cpu = time.perf_counter_ns(), stats.cpu_clock()
    _burn(2)
    stats.add_time(started, cpu)
    assert stats.cpu_ns == stats.sampled_cpu_ns >= 2_000_000
    for _ in range(CPU_SAMPLE_EVERY - 1):  # not sampled: elapsed only
        started, cpu = time.perf_counter_ns(), stats.cpu_clock()
        assert cpu == -1
        _burn(2)
        stats.add_time(started, cpu)
    assert stats.sampled_cpu_ns < 4_000_000  # only the first message was timed on the CPU clock
    assert stats.cpu_ns == stats.sampled_cpu_ns * stats.elapsed_ns // stats.sampled_elapsed_ns
    assert stats.snapshot()["cpu_us"] == stats.cpu_ns // 1000 > 0


def test_a_flow_counts_cpu_for_its_nodes() -> None:
    h = FlowHarness(with_input({"p": ("Passthrough", {})}, [], first="p"))
    for _ in range(CPU_SAMPLE_EVERY + 2):
        h.inject("in", b"x")
    stats = h.compiled.nodes["p"].stats
    assert stats.messages_in == CPU_SAMPLE_EVERY + 2
    assert stats.sampled_cpu_ns > 0 and stats.cpu_ns >= stats.sampled_cpu_ns
