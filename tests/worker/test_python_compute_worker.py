"""A PythonCompute flow in a real worker process: it runs where an admin allowed code nodes, a failing
message goes to the failure path while the group goes on, and a group no longer allowed refuses it."""

from __future__ import annotations

import time

import pytest
from flowbroker.repository import db
from flowbroker.repository.models import ExecutionGroup
from flowbroker.runtime.harness import flow, get_all
from flowbroker.settings import Settings
from flowbroker.worker.harness import WorkerProcess

pytestmark = pytest.mark.timeout(180)

CODE = """\
import os

WORKER = os.getpid()


def main(ctx):
    body = ctx.input_root.last_child.child("order")
    kind = body.child("kind").value
    if kind == "exit":
        raise SystemExit(1)
    if kind == "bad":
        raise ValueError("no such kind")
    ctx.copy_message()
    ctx.output_root.last_child.child("order").add("worker", WORKER)
    ctx.propagate("out1")
    return False
"""


def _code_nodes(platform, allowed: bool) -> None:
    (broker,) = [b for b in platform.request("GET", "/api/brokers").json() if b["name"] == "default"]
    (group,) = [g for g in broker["groups"] if g["name"] == "default"]
    changed = platform.request(
        "PATCH", f"/api/brokers/{broker['id']}/groups/{group['id']}", json={"codeNodes": allowed}
    )
    assert changed.status_code == 200, changed.text


def test_python_compute_runs_in_a_worker_of_an_enabled_group(platform) -> None:
    stamp = int(time.time() * 1000) % 1000000
    src, dst, failed = (f"PY.{part}.{stamp}" for part in ("IN", "OUT", "FAILED"))
    with platform.qm.client() as qm:
        for queue in (src, dst, failed):
            qm.define_queue(queue)
    document = flow(
        {
            "in": ("MQInput", {"queueName": src, "messageDomain": "XMLNSC"}),
            "py": ("PythonCompute", {"code": CODE}),
            "out": ("MQOutput", {"queueName": dst}),
            "fail": ("MQOutput", {"queueName": failed}),
        },
        ["in.out -> py", "py.out1 -> out", "py.failure -> fail"],
        name=f"PythonWorker{stamp}",
    )
    _code_nodes(platform, True)
    with WorkerProcess(platform.data) as worker:
        created = platform.deploy(document)
        running = platform.wait_status(created["id"], {"running", "failed"})
        assert running["status"] == "running", running
        with platform.qm.client() as qm:
            for kind in ("ok", "exit", "bad", "ok"):
                qm.put(src, f"<order><kind>{kind}</kind></order>".encode())
            got = get_all(qm, dst, 2, wait=60)
            failures = get_all(qm, failed, 2, wait=30)
        # the code ran in the worker process, not in the configuration manager (this process)
        assert [m.body for m in got] == [
            f"<order><kind>ok</kind><worker>{worker.proc.pid}</worker></order>".encode()  # type: ignore[union-attr]
        ] * 2
        assert sorted(m.body for m in failures) == [
            b"<order><kind>bad</kind></order>",
            b"<order><kind>exit</kind></order>",
        ]
        # SystemExit in the code failed one message; the worker is still the same process
        assert worker.proc is not None and worker.proc.poll() is None

    # the API does not withdraw code nodes from under the deployed flow
    (broker,) = [b for b in platform.request("GET", "/api/brokers").json() if b["name"] == "default"]
    (group,) = [g for g in broker["groups"] if g["name"] == "default"]
    path = f"/api/brokers/{broker['id']}/groups/{group['id']}"
    withdrawn = platform.request("PATCH", path, json={"codeNodes": False})
    assert withdrawn.status_code == 409, withdrawn.text
    # a repository changed behind the API's back: the worker itself refuses to load the flow again
    engine = db.engine_from_settings(Settings(data=platform.data))
    try:
        with db.session_scope(db.session_factory(engine)) as session:
            row = session.get(ExecutionGroup, group["id"])
            assert row is not None
            row.code_nodes = False
    finally:
        engine.dispose()
    with WorkerProcess(platform.data):
        refused = platform.wait_status(created["id"], {"failed"}, timeout=60)
    assert [(d["node"], d["message"]) for d in refused["diagnostics"]] == [
        ("py", "PythonCompute node 'py': this execution group does not run code nodes")
    ]
