"""An execution group on another host: it shares only the repository, RabbitMQ and the queue manager's address.

Its data directory is its own, so what the configuration manager learns of it (statistics,
liveness, the host it runs on) must come through the repository.
"""

from __future__ import annotations

import json
import socket
import time
from pathlib import Path

import pytest
from flowbroker.runtime.harness import get_all
from flowbroker.worker.harness import WorkerProcess
from test_worker import _group, _passthrough, _queues

pytestmark = pytest.mark.timeout(180)


def _remote_env(platform) -> dict[str, str]:
    info = json.loads((Path(platform.data) / "qm.json").read_text())
    return {
        "FLOWBROKER_DATABASE_URL": f"sqlite:///{(Path(platform.data) / 'config.db').resolve()}",
        "FLOWBROKER_QM": f"fbqm://{info['user']}:{info['password']}@{info['host']}:{info['port']}",
        "FLOWBROKER_STATS_INTERVAL": "0.5",
    }


def _until(probe, timeout: float = 30.0):
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        last = probe()
        if last:
            return last
        time.sleep(0.2)
    raise AssertionError(f"not within {timeout}s; last: {last}")


def test_a_worker_with_its_own_data_directory_reports_host_statistics_and_liveness(
    platform, rabbitmq_url, monkeypatch, tmp_path
) -> None:
    monkeypatch.setenv("FLOWBROKER_CELERY_BROKER", rabbitmq_url)
    _group(platform, "elsewhere")
    src, dst = _queues(platform, "IN", "OUT")
    with WorkerProcess(
        tmp_path / "other-host", group="elsewhere", celery_broker=rabbitmq_url, env=_remote_env(platform)
    ) as worker:
        created = platform.deploy(_passthrough("FarAway", src, dst), group="elsewhere")
        assert platform.wait_status(created["id"], {"running", "failed"})["status"] == "running"
        with platform.qm.client() as qm:
            for i in range(3):
                qm.put(src, f"far {i}".encode())
            assert sorted(m.body for m in get_all(qm, dst, 3)) == [b"far 0", b"far 1", b"far 2"]

        def published():
            rows = platform.request("GET", "/api/stats/groups").json()
            mine = [r for r in rows if r["group"] == "elsewhere"]
            if mine and mine[0]["flows"].get("FarAway", {}).get("messages_in") == 3:
                return mine[0]
            return None

        record = _until(published)
        assert record["host"] == socket.gethostname() and record["pid"] == worker.pid
        assert record["reporting"] is True
        one = platform.request("GET", "/api/stats/groups/default/elsewhere").json()
        assert one["host"] == socket.gethostname()
        flows = platform.request("GET", "/api/stats/flows").json()
        assert any(f["group"] == "elsewhere" and f["messages_in"] == 3 for f in flows)
        metrics = platform.request("GET", "/metrics").text
        assert (
            'flowbroker_flow_messages_total{broker="default",group="elsewhere",flow="FarAway"} 3' in metrics
        )

        groups = next(b for b in platform.request("GET", "/api/brokers").json() if b["name"] == "default")
        group = next(g for g in groups["groups"] if g["name"] == "elsewhere")
        assert (group["state"], group["pid"], group["host"]) == ("running", worker.pid, socket.gethostname())
        topology = platform.request("GET", "/api/topology/graph").json()
        assert any(g["name"] == "elsewhere" and g["host"] == socket.gethostname() for g in topology["groups"])
        undeployed = platform.request("DELETE", f"/api/deployments/{created['id']}")
        assert undeployed.status_code in (200, 202), undeployed.text
        platform.wait_status(created["id"], {"undeployed"})
