"""`flowbroker bench qm-vs-rabbitmq`: the shared window, RabbitMQ's pinning, and short real runs (behaviour, not speed)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from types import SimpleNamespace

import pytest
from flowbroker.cli import main
from flowbroker_bench import qm_vs_rabbitmq
from flowbroker_bench.core import scenarios


def test_the_scenario_is_discovered_once_under_its_name() -> None:
    assert scenarios()["qm-vs-rabbitmq"].run is qm_vs_rabbitmq.run


async def test_a_publisher_sends_whole_units_within_the_backlog_and_its_own_unconfirmed() -> None:
    flight = qm_vs_rabbitmq.Flight(window=1000, unit=100)
    a = SimpleNamespace(published=0, unconfirmed=0, error=None)
    b = SimpleNamespace(published=0, unconfirmed=0, error=None)
    consumer = SimpleNamespace(delivered=0, error=None)
    flight.senders += [a, b]
    flight.receivers.append(consumer)
    assert flight.room(a) == 1000  # its own window, not the two publishers' total
    a.published, a.unconfirmed = 1000, 1000
    assert flight.room(a) == 0
    a.unconfirmed = 350  # confirms arrived, nothing consumed yet: the backlog allows 1000 more
    assert flight.room(a) == 600  # rounded down to whole units
    b.published = 950
    consumer.delivered = 0
    assert flight.room(b) == 0  # 1950 of the 2000 in flight: less than a unit left
    consumer.delivered = 1900
    assert flight.room(b) == 1000
    a.error = "put refused: 2053 queue full"
    assert flight.errors() == ["put refused: 2053 queue full"]


def _thread_affinities(pid: int) -> list[set[int]]:
    return [os.sched_getaffinity(int(tid)) for tid in os.listdir(f"/proc/{pid}/task")]


@pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="pinning to one core needs a machine with two")
def test_pinning_every_thread_is_undone_even_when_the_run_fails() -> None:
    # one thread binds itself to core 0, as the Erlang VM binds its schedulers one to a core
    script = (
        "import os, threading, time\n"
        "def bound():\n    os.sched_setaffinity(0, {0})\n    time.sleep(60)\n"
        "threading.Thread(target=bound, daemon=True).start()\n"
        "for _ in range(2): threading.Thread(target=time.sleep, args=(60,), daemon=True).start()\n"
        "time.sleep(60)"
    )
    child = subprocess.Popen([sys.executable, "-c", script])
    try:
        deadline = time.monotonic() + 10
        while len(os.listdir(f"/proc/{child.pid}/task")) < 4 and time.monotonic() < deadline:
            time.sleep(0.02)
        deadline = time.monotonic() + 10
        while {0} not in _thread_affinities(child.pid) and time.monotonic() < deadline:
            time.sleep(0.02)
        before = _thread_affinities(child.pid)
        assert len(before) == 4 and {0} in before
        with pytest.raises(RuntimeError, match="the run failed"):
            with qm_vs_rabbitmq.pinned_threads(child.pid, 1) as problem:
                assert problem is None
                assert _thread_affinities(child.pid) == [{1}] * 4
                raise RuntimeError("the run failed")
        assert _thread_affinities(child.pid) == before
    finally:
        child.kill()
        child.wait()


def _run(capsys: pytest.CaptureFixture[str], *options: str) -> list[dict[str, object]]:
    argv = ["bench", "qm-vs-rabbitmq", "--warmup", "0.5", "--seconds", "1", "--format", "json", *options]
    assert main(argv) == 0
    return json.loads(capsys.readouterr().out)  # type: ignore[no-any-return]


@pytest.mark.rabbitmq
@pytest.mark.timeout(240)
def test_every_row_moves_messages_and_loses_none(
    rabbitmq_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    rabbit = qm_vs_rabbitmq.rabbit_pid()
    assert rabbit is not None
    rabbit_before = _thread_affinities(rabbit)
    driver_before = os.sched_getaffinity(0)
    rows = _run(capsys, "--amqp-url", rabbitmq_url)
    assert [(r["broker"], r["messages"], str(r["driver"]).split(",")[0].split(" (")[0]) for r in rows] == [
        (broker, mode, driver)
        for mode in ("transient", "persistent")
        for broker, driver in (
            ("flowbroker qm", "lean driver"),
            ("flowbroker qm", "AsyncClient"),
            (rows[2]["broker"], "lean AMQP driver"),
            (rows[2]["broker"], "aiormq"),
        )
    ]
    assert str(rows[2]["broker"]).startswith("RabbitMQ ")  # with the version it announces
    for row in rows:
        assert row["msgs/s"] > 0, row  # type: ignore[operator]
        assert row["server CPU-ms/msg"] and row["driver CPU %"], row
        assert "not delivered" not in str(row["note"]) and "refused" not in str(row["note"]), row
    for mode in ("transient", "persistent"):
        group = [r for r in rows if r["messages"] == mode]
        best = max(r["msgs/s"] for r in group if str(r["broker"]).startswith("RabbitMQ"))  # type: ignore[type-var]
        for r in group:
            assert r["vs RabbitMQ best"] == pytest.approx(r["msgs/s"] / best, abs=0.006)  # type: ignore[operator]
    # RabbitMQ's threads and this process are back where they were
    assert {frozenset(a) for a in _thread_affinities(rabbit)} == {frozenset(a) for a in rabbit_before}
    assert os.sched_getaffinity(0) == driver_before


@pytest.mark.rabbitmq
@pytest.mark.timeout(120)
def test_several_connections_on_each_side(rabbitmq_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    rows = _run(
        capsys,
        "--amqp-url",
        rabbitmq_url,
        "--persistence",
        "persistent",
        "--qm-drivers",
        "lean",
        "--rabbit-drivers",
        "lean",
        "--publishers",
        "2",
        "--consumers",
        "2",
    )
    assert [(r["broker"] == "flowbroker qm", r["vs RabbitMQ best"]) for r in rows][1] == (False, 1.0)
    for row in rows:
        assert row["msgs/s"] > 0, row  # type: ignore[operator]
        assert "not delivered" not in str(row["note"]) and "refused" not in str(row["note"]), row
