"""A scaled-out execution group: two worker processes of the same group on the real RabbitMQ
Celery broker. Every control task reaches both replicas (the group's fanout exchange), and a
replica that was away catches up from the repository when it comes back."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from flowbroker.runtime.harness import get_all
from flowbroker.worker.group import stats_path
from flowbroker.worker.harness import WorkerProcess
from test_remote_worker import _remote_env
from test_worker import _group, _passthrough, _queues

pytestmark = pytest.mark.timeout(240)

#: One name per test process: the Celery broker (the shared RabbitMQ) routes control tasks by
#: broker and group name, so tests on other xdist workers (each with its own repository, whose
#: deployment ids start at 1 too) must not share the group's fanout exchange.
GROUP = f"replicated{os.getpid()}"


def _flows(data: Path) -> dict[str, Any]:
    """The flows a replica reports in its own data directory (its statistics file)."""
    path = stats_path(data, "default", GROUP)
    try:
        return dict(json.loads(path.read_text())["flows"])
    except (OSError, ValueError, KeyError):
        return {}


def _until(probe: Any, what: str, timeout: float = 60.0) -> Any:
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        last = probe()
        if last:
            return last
        time.sleep(0.2)
    raise AssertionError(f"{what}: not within {timeout}s; last: {last}")


def _state(data: Path, flow: str) -> str | None:
    found = _flows(data).get(flow)
    return None if found is None else str(found["state"])


def test_control_tasks_reach_every_replica_and_a_returning_one_catches_up(
    platform: Any, rabbitmq_url: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("FLOWBROKER_CELERY_BROKER", rabbitmq_url)
    _group(platform, GROUP)
    src, dst = _queues(platform, "REP.IN", "REP.OUT")
    one, two = tmp_path / "host-one", tmp_path / "host-two"
    env = _remote_env(platform)
    kwargs = {"group": GROUP, "celery_broker": rabbitmq_url, "env": env}
    with WorkerProcess(one, **kwargs) as first, WorkerProcess(two, **kwargs) as second:
        # both replicas are connected before anything is sent: each has written its statistics
        _until(lambda: stats_path(one, "default", GROUP).exists(), "replica one to report")
        _until(lambda: stats_path(two, "default", GROUP).exists(), "replica two to report")
        time.sleep(1.0)  # their broadcast queues are bound once their consumers run
        created = platform.deploy(_passthrough("Replicated", src, dst), group=GROUP)
        ran = platform.wait_status(created["id"], {"running", "failed"})
        assert ran["status"] == "running", ran["detail"]
        for data in (one, two):
            _until(lambda data=data: _state(data, "Replicated") == "running", f"{data.name} to run the flow")
        with platform.qm.client() as qm:
            for i in range(20):
                qm.put(src, f"m{i}".encode())
            assert sorted(m.body for m in get_all(qm, dst, 20)) == sorted(f"m{i}".encode() for i in range(20))

        # a stop reaches both replicas, not whichever took it off a shared queue
        stopped = platform.request("POST", f"/api/deployments/{created['id']}/stop")
        assert stopped.status_code == 202, stopped.text
        for data in (one, two):
            _until(lambda data=data: _state(data, "Replicated") == "stopped", f"{data.name} to stop the flow")
        with platform.qm.client() as qm:
            qm.put(src, b"held")
            time.sleep(1.0)
            assert qm.get_many(dst, 1, wait=0) == []  # no replica consumes while stopped

        # replica two goes away; the flow is started while it is gone, then it comes back
        second.stop()
        started = platform.request("POST", f"/api/deployments/{created['id']}/start")
        assert started.status_code == 202, started.text
        _until(lambda: _state(one, "Replicated") == "running", "replica one to start the flow")
        with platform.qm.client() as qm:
            assert [m.body for m in get_all(qm, dst, 1)] == [b"held"]
        with WorkerProcess(two, **kwargs):
            _until(lambda: _state(two, "Replicated") == "running", "the returning replica to run the flow")

            # an undeploy reaches both
            gone = platform.request("DELETE", f"/api/deployments/{created['id']}")
            assert gone.status_code == 202, gone.text
            platform.wait_status(created["id"], {"undeployed"})
            for data in (one, two):
                _until(lambda data=data: "Replicated" not in _flows(data), f"{data.name} to drop the flow")
        assert first.proc is not None and first.proc.poll() is None, first.log_tail()


def _close_rabbit_connections(pid: int) -> int:
    """Close, from RabbitMQ's side, every AMQP connection of process ``pid``; how many."""
    import psutil

    ports = {
        c.laddr.port for c in psutil.Process(pid).net_connections("tcp") if c.raddr and c.raddr.port == 5672
    }
    listed = subprocess.run(
        ["rabbitmqctl", "-q", "--no-table-headers", "list_connections", "pid", "peer_port"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    closed = 0
    for line in listed.stdout.splitlines():
        connection, _, port = line.rpartition("\t")
        if port.strip().isdigit() and int(port) in ports:
            done = subprocess.run(
                ["rabbitmqctl", "-q", "close_connection", connection, "replica cut off by the test"],
                capture_output=True,
                timeout=30,
            )
            closed += done.returncode == 0
    return closed


def test_a_replica_whose_connection_was_lost_re_reads_its_deployments(
    platform: Any, rabbitmq_url: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    if shutil.which("rabbitmqctl") is None or os.geteuid() != 0:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail("rabbitmqctl (as root) is needed to cut a replica's connection")
        pytest.skip("rabbitmqctl (as root) is needed to cut a replica's connection")
    from flowbroker.repository import db
    from flowbroker.services import audit

    monkeypatch.setenv("FLOWBROKER_CELERY_BROKER", rabbitmq_url)
    _group(platform, GROUP)
    src, dst = _queues(platform, "CUT.IN", "CUT.OUT")
    one, two = tmp_path / "host-one", tmp_path / "host-two"
    kwargs = {"group": GROUP, "celery_broker": rabbitmq_url, "env": _remote_env(platform)}
    with WorkerProcess(one, **kwargs), WorkerProcess(two, **kwargs) as second:
        _until(lambda: stats_path(one, "default", GROUP).exists(), "replica one to report")
        _until(lambda: stats_path(two, "default", GROUP).exists(), "replica two to report")
        time.sleep(1.0)
        created = platform.deploy(_passthrough("CutOff", src, dst), group=GROUP)
        platform.wait_status(created["id"], {"running"})
        for data in (one, two):
            _until(lambda data=data: _state(data, "CutOff") == "running", f"{data.name} to run the flow")
        # a stop no replica heard (broadcast while they were cut off): only the repository has it,
        # as the operator's command in the audit log (what POST .../stop records before it sends)
        with db.session_scope(platform.client.app.state.session_factory) as session:
            audit.record(session, "admin", "deployment.stop", f"deployment:{created['id']}", {})
            session.commit()
        assert _close_rabbit_connections(second.pid) >= 1
        _until(lambda: _state(two, "CutOff") == "stopped", "the reconnected replica to catch up")
        assert platform.wait_status(created["id"], {"stopped"})["status"] == "stopped"  # and says so
        assert _state(one, "CutOff") == "running"  # the other replica never lost its connection
        assert "caught up: stopped" in _until(
            lambda: "caught up" in second.log_tail(20000) and second.log_tail(20000), "the log line"
        )
        # and the broadcasts reach it again on its new connection
        started = platform.request("POST", f"/api/deployments/{created['id']}/start")
        assert started.status_code == 202, started.text
        _until(lambda: _state(two, "CutOff") == "running", "the start to reach the reconnected replica")


def _recording_state(data: Path, flow: str, recording_id: str) -> dict[str, Any]:
    """A replica's own state file of a recording (empty while it has none)."""
    from flowbroker.runtime.recorder import recordings_dir

    path = recordings_dir(data, "default", GROUP) / flow / f"{recording_id}.json"
    try:
        return dict(json.loads(path.read_text()))
    except (OSError, ValueError):
        return {}


def test_a_returning_replica_catches_up_on_trace_and_recordings(
    platform: Any, rabbitmq_url: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A trace switch and a recording requested while a replica was away reach it when it comes
    back: both are in the repository (their audit entries), as starts and stops are."""
    monkeypatch.setenv("FLOWBROKER_CELERY_BROKER", rabbitmq_url)
    _group(platform, GROUP)
    src, dst = _queues(platform, "TRC.IN", "TRC.OUT")
    one, two = tmp_path / "host-one", tmp_path / "host-two"
    kwargs = {"group": GROUP, "celery_broker": rabbitmq_url, "env": _remote_env(platform)}
    with WorkerProcess(one, **kwargs) as first, WorkerProcess(two, **kwargs) as second:
        _until(lambda: stats_path(one, "default", GROUP).exists(), "replica one to report")
        _until(lambda: stats_path(two, "default", GROUP).exists(), "replica two to report")
        time.sleep(1.0)
        created = platform.deploy(_passthrough("Traced", src, dst), group=GROUP)
        platform.wait_status(created["id"], {"running"})
        for data in (one, two):
            _until(lambda data=data: _state(data, "Traced") == "running", f"{data.name} to run the flow")

        second.stop()
        traced = platform.request(
            "PUT", f"/api/deployments/{created['id']}/trace", json={"level": "normal", "mode": "safe"}
        )
        assert traced.status_code == 202, traced.text
        recorded = platform.request(
            "POST", f"/api/deployments/{created['id']}/recordings", json={"maxMessages": 3, "seconds": 180}
        )
        assert recorded.status_code == 202, recorded.text
        recording_id = recorded.json()["id"]
        _until(
            lambda: _recording_state(one, "Traced", recording_id).get("status") == "recording",
            "replica one to record",
        )

        with WorkerProcess(two, **kwargs) as back:
            log = _until(
                lambda: "caught up" in back.log_tail(20000) and back.log_tail(20000), "the catch-up log line"
            )
            assert "trace normal safe" in log and f"recording {recording_id}" in log, log
            assert _recording_state(two, "Traced", recording_id)["status"] == "recording"
            # only the returning replica consumes now: what it records and traces is its own
            first.stop()
            with platform.qm.client() as qm:
                for i in range(3):
                    qm.put(src, f"t{i}".encode())
                assert len(get_all(qm, dst, 3)) == 3
            done = _until(
                lambda: (
                    _recording_state(two, "Traced", recording_id).get("status") == "complete"
                    and _recording_state(two, "Traced", recording_id)
                ),
                "the returning replica's recording to end",
            )
            assert done["messages"] == 3, done
            trace = two / "trace" / "default" / GROUP / "Traced.trace"
            _until(lambda: trace.exists() and trace.stat().st_size > 0, "the returning replica's user trace")
            assert back.proc is not None and back.proc.poll() is None, back.log_tail()
