"""A broker's transport URL decides where its groups' flows get messages; one that cannot work says why."""

from __future__ import annotations

import time

import pytest
from flowbroker.repository import db
from flowbroker.repository.models import Broker
from flowbroker.runtime.harness import flow
from flowbroker.settings import Settings
from flowbroker.worker.harness import WorkerProcess
from sqlalchemy import select

pytestmark = pytest.mark.timeout(180)


def _broker(platform, url: str) -> str:
    name = f"b{int(time.time() * 1000) % 10_000_000}"
    created = platform.request("POST", "/api/brokers", json={"name": name, "qmUrl": url})
    assert created.status_code == 201, created.text
    group = platform.request("POST", f"/api/brokers/{created.json()['id']}/groups", json={"name": "eg"})
    assert group.status_code == 201, group.text
    return name


def _document(name: str) -> dict:
    return flow(
        {"in": ("MQInput", {"queueName": "T.IN"}), "out": ("MQOutput", {"queueName": "T.OUT"})},
        ["in.out -> out"],
        name=name,
    )


def test_an_unreachable_rabbitmq_leaves_the_deployment_waiting_with_the_reason(platform) -> None:
    broker = _broker(platform, "amqp://guest:guest@127.0.0.1:1/")
    with WorkerProcess(platform.data, broker, "eg", env={"FLOWBROKER_STATS_INTERVAL": "1"}):
        created = platform.deploy(_document("Unreachable"), broker=broker, group="eg")
        waiting = platform.wait_status(created["id"], {"waiting", "failed"}, timeout=60)
        assert waiting["status"] == "waiting", waiting
        assert waiting["detail"].startswith(
            "waiting: cannot connect to the transport: cannot reach RabbitMQ at 127.0.0.1:1"
        ), waiting


def test_an_unknown_transport_scheme_fails_the_deployment_with_the_reason(platform) -> None:
    broker = _broker(platform, "")
    # written behind the API's back (the API refuses it): as an older repository could hold it
    factory = db.session_factory(db.engine_from_settings(Settings(data=platform.data)))
    with db.session_scope(factory) as session:
        row = session.scalars(select(Broker).where(Broker.name == broker)).one()
        row.qm_url = "mqtt://127.0.0.1:1883"
    with WorkerProcess(platform.data, broker, "eg"):
        created = platform.deploy(_document("UnknownScheme"), broker=broker, group="eg")
        failed = platform.wait_status(created["id"], {"failed", "running", "waiting"}, timeout=60)
        assert failed["status"] == "failed", failed
        (problem,) = failed["diagnostics"]
        assert problem["property"] == "qm_url"
        assert "unknown scheme 'mqtt'" in problem["message"], problem
