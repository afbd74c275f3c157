"""The supervisor on its own: process groups are stopped whole, dead components come back with backoff."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import psutil
import pytest
from flowbroker.supervisor import Component, Supervisor

# A component that starts a grandchild in its own process group, then waits.
PARENT_OF_GRANDCHILD = (
    "import subprocess, sys, time\n"
    "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)'])\n"
    "print(child.pid, flush=True)\n"
    "time.sleep(600)\n"
)


def _alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def _wait(predicate: object, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():  # type: ignore[operator]
            return
        time.sleep(0.05)
    raise AssertionError("condition not met in time")


@pytest.mark.timeout(60)
def test_stop_all_ends_grandchildren_too(tmp_path: Path) -> None:
    log = tmp_path / "c.log"
    component = Component("tree", [sys.executable, "-c", PARENT_OF_GRANDCHILD], log_path=log)
    supervisor = Supervisor([component], tmp_path / "state.json", stop_timeout=5)
    supervisor.start()
    try:
        _wait(lambda: log.exists() and log.read_text().strip().isdigit())
        grandchild = int(log.read_text().strip())
        leader = component.pid
        assert leader is not None and _alive(grandchild)
    finally:
        supervisor.stop_all()
    _wait(lambda: not _alive(grandchild))
    assert not _alive(leader)
    state = json.loads((tmp_path / "state.json").read_text())
    assert state["components"][0]["state"] == "stopped"


@pytest.mark.timeout(60)
def test_a_dead_component_is_restarted_with_growing_backoff(tmp_path: Path) -> None:
    component = Component("flaky", [sys.executable, "-c", "import sys; sys.exit(3)"])
    supervisor = Supervisor([component], tmp_path / "state.json", initial_backoff=0.05, max_backoff=0.2)
    supervisor.start()
    try:
        backoffs = []
        deadline = time.monotonic() + 30
        while component.restarts < 3 and time.monotonic() < deadline:
            supervisor.tick()
            if component.state == "restarting" and (not backoffs or backoffs[-1] != component.backoff):
                backoffs.append(component.backoff)
            time.sleep(0.01)
        assert component.restarts >= 3
        assert component.last_exit == 3
        assert backoffs[:3] == [0.05, 0.1, 0.2]
        state = json.loads((tmp_path / "state.json").read_text())
        assert state["components"][0]["restarts"] >= 3
    finally:
        supervisor.stop_all()


@pytest.mark.timeout(60)
def test_a_component_that_cannot_start_is_reported(tmp_path: Path) -> None:
    component = Component("missing", [str(tmp_path / "no-such-program")])
    supervisor = Supervisor([component], tmp_path / "state.json", initial_backoff=0.05)
    supervisor.start()
    try:
        assert component.state == "failed"
        assert component.detail.startswith("cannot start:")
    finally:
        supervisor.stop_all()


def _sleeper(name: str, desired: str = "running") -> Component:
    return Component(name, [sys.executable, "-c", "import time; time.sleep(600)"], desired=desired)


@pytest.mark.timeout(60)
def test_reconcile_adds_stops_starts_and_removes_components(tmp_path: Path) -> None:
    fixed = _sleeper("fixed")
    removed: list[str] = []
    supervisor = Supervisor(
        [fixed], tmp_path / "state.json", stop_timeout=5, on_removed=lambda c: removed.append(c.name)
    )
    supervisor.start()
    try:
        # New names join and start; the fixed component is not touched by the family's reconcile.
        supervisor.reconcile("g:", {"g:a": _sleeper("g:a"), "g:b": _sleeper("g:b", "stopped")})
        a, b = supervisor.component("g:a"), supervisor.component("g:b")
        assert a is not None and b is not None
        assert a.state == "running" and a.pid is not None and _alive(a.pid)
        assert b.state == "stopped" and b.pid is None
        first = a.pid

        # A desired stop is asked for without blocking, then seen through by tick.
        supervisor.reconcile("g:", {"g:a": _sleeper("g:a", "stopped"), "g:b": _sleeper("g:b", "stopped")})
        assert a.state == "stopping"
        _wait(lambda: (supervisor.tick(), a.state == "stopped")[1])
        assert not _alive(first) and a.restarts == 0 and a.pid is None

        # Started again, it gets a new process; a name no longer wanted is stopped, then removed.
        supervisor.reconcile("g:", {"g:a": _sleeper("g:a")})
        assert a.state == "running" and a.pid not in (None, first)
        second = a.pid
        assert supervisor.component("g:b") is None and removed == ["g:b"]
        supervisor.reconcile("g:", {})
        _wait(
            lambda: (supervisor.tick(), supervisor.reconcile("g:", {}), supervisor.component("g:a") is None)[
                2
            ]
        )
        assert removed == ["g:b", "g:a"] and not _alive(second)
        assert fixed.state == "running" and fixed.pid is not None and _alive(fixed.pid)
        state = json.loads((tmp_path / "state.json").read_text())
        assert [c["name"] for c in state["components"]] == ["fixed"]
    finally:
        supervisor.stop_all()


@pytest.mark.timeout(60)
def test_a_component_that_ignores_sigterm_is_killed_after_the_stop_timeout(tmp_path: Path) -> None:
    stubborn = Component(
        "g:stubborn",
        [
            sys.executable,
            "-c",
            "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(600)",
        ],
    )
    supervisor = Supervisor([], tmp_path / "state.json", stop_timeout=0.5, log=lambda _line: None)
    supervisor.reconcile("g:", {"g:stubborn": stubborn})
    try:
        pid = stubborn.pid
        assert pid is not None
        time.sleep(0.3)  # let the child install its handler
        supervisor.reconcile("g:", {"g:stubborn": Component("g:stubborn", stubborn.argv, desired="stopped")})
        _wait(lambda: (supervisor.tick(), stubborn.state == "stopped")[1])
        assert not _alive(pid) and stubborn.last_exit == -9
    finally:
        supervisor.stop_all()
