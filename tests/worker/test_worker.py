"""Execution groups as real processes: deploy over REST, run, redeploy under load, crash and resume."""

from __future__ import annotations

import itertools
import threading
import time

import pytest
from flowbroker.qm.protocol import MessageDescriptor
from flowbroker.runtime.harness import flow, get_all
from flowbroker.worker.harness import WorkerProcess

pytestmark = pytest.mark.timeout(180)
_ids = itertools.count(1)


def _queues(platform, *bases: str, **attrs) -> list[str]:
    names = []
    with platform.qm.client() as qm:
        for base in bases:
            name = f"{base}.{next(_ids)}"
            qm.define_queue(name, replace=True, **attrs)
            names.append(name)
    return names


def _passthrough(name: str, src: str, dst: str, mode: str = "yes") -> dict:
    return flow(
        {
            "in": ("MQInput", {"queueName": src, "transactionMode": mode}),
            "out": ("MQOutput", {"queueName": dst}),
        },
        ["in.out -> out"],
        name=name,
    )


@pytest.fixture(scope="module")
def worker(platform):
    with WorkerProcess(platform.data) as process:
        yield process


def test_deploy_over_rest_runs_the_flow_in_the_worker(platform, worker) -> None:
    src, dst = _queues(platform, "IN", "OUT")
    created = platform.deploy(_passthrough("RestPass", src, dst))
    running = platform.wait_status(created["id"], {"running", "failed"})
    assert running["status"] == "running", running
    with platform.qm.client() as qm:
        for i in range(10):
            qm.put(src, f"m{i}".encode())
        assert sorted(m.body for m in get_all(qm, dst, 10)) == sorted(f"m{i}".encode() for i in range(10))
    flows = platform.request("GET", f"/api/groups/{running['groupId']}/flows").json()
    assert "RestPass" in [f["flow"] for f in flows]
    # the group publishes statistics the API serves, as JSON and as Prometheus metrics
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        rows = platform.request("GET", "/api/stats/flows").json()
        mine = [r for r in rows if r["flow"] == "RestPass"]
        if mine and mine[0]["messages_in"] >= 10:
            break
        time.sleep(0.5)
    assert mine and mine[0]["messages_in"] >= 10
    metrics = platform.request("GET", "/metrics").text
    assert 'flowbroker_flow_messages_total{broker="default",group="default",flow="RestPass"}' in metrics
    # undeploy stops it: messages stay on the input queue
    platform.request("DELETE", f"/api/deployments/{created['id']}")
    platform.wait_status(created["id"], {"undeployed"})
    with platform.qm.client() as qm:
        qm.put(src, b"after undeploy")
        time.sleep(1.0)
        assert qm.get(dst) is None
        assert qm.get(src).body == b"after undeploy"


READ_A = """CREATE COMPUTE MODULE ReadA
  CREATE FUNCTION Main() RETURNS BOOLEAN
  BEGIN
    SET OutputRoot = InputRoot;
    SET OutputRoot.XMLNSC.a = InputRoot.XMLNSC.a || '!';
    RETURN TRUE;
  END;
END MODULE;"""


def test_a_poison_message_reaches_the_backout_queue_in_a_worker_while_others_flow(platform, worker) -> None:
    (boq,) = _queues(platform, "BOQ")
    (src,) = _queues(platform, "POISON.IN", backout_threshold=3, backout_requeue_q=boq)
    (dst,) = _queues(platform, "POISON.OUT")
    doc = flow(
        {
            "in": ("MQInput", {"queueName": src, "messageDomain": "XMLNSC"}),
            "read": ("Compute", {"esql": READ_A}),
            "out": ("MQOutput", {"queueName": dst}),
        },
        ["in.out -> read", "read.out -> out"],
        name="PoisonInWorker",
    )
    created = platform.deploy(doc)
    assert platform.wait_status(created["id"], {"running", "failed"})["status"] == "running"
    persistent = MessageDescriptor(persistence=1)
    with platform.qm.client() as qm:
        qm.put(src, b"<a>1</a>", persistent)
        qm.put(src, b"<a>poison", persistent)
        for i in range(2, 8):
            qm.put(src, f"<a>{i}</a>".encode(), persistent)
        got = get_all(qm, dst, 7, wait=60)
        assert sorted(m.body for m in got) == [f"<a>{i}!</a>".encode() for i in range(1, 8)]
        (poisoned,) = get_all(qm, boq, 1, wait=30)
        assert poisoned.body == b"<a>poison" and poisoned.md.backout_count >= 3
        assert qm.get(src) is None and qm.get(dst) is None
    # the worker's statistics count the backouts to the node where the exception began
    deadline = time.monotonic() + 30
    nodes: dict = {}
    while time.monotonic() < deadline:
        groups = platform.request("GET", "/api/stats/groups").json()
        default = next(g for g in groups if g["group"] == "default")
        nodes = (default["flows"].get("PoisonInWorker") or {}).get("nodes") or {}
        if nodes.get("read", {}).get("backouts") == 3:
            break
        time.sleep(0.5)
    assert nodes["read"]["backouts"] == 3 and nodes["out"]["backouts"] == 0


def test_bad_flow_fails_with_every_diagnostic_and_the_running_version_keeps_running(platform, worker) -> None:
    src, dst = _queues(platform, "IN", "OUT")
    good = platform.deploy(_passthrough("KeepRunning", src, dst))
    platform.wait_status(good["id"], {"running"})
    bad_doc = flow(
        {
            "in": ("MQInput", {"queueName": src}),
            "c": (
                "Compute",
                {
                    "esql": "CREATE COMPUTE MODULE X\nCREATE FUNCTION Main() RETURNS BOOLEAN\nBEGIN\n  SET OutputRoot = ;\nEND;\nEND MODULE;"
                },
            ),
            "o": ("MQOutput", {}),
        },
        ["in.out -> c", "c.out -> o"],
        name="KeepRunning",
    )
    # saving the document runs the deploy's checks: refused before anything is sent to the group
    bad = platform.request("POST", "/api/deployments", json={"document": bad_doc})
    assert bad.status_code == 422, bad.text
    diagnostics = bad.json()["detail"]
    places = {(d["node"], d["property"]) for d in diagnostics}
    assert ("c", "esql") in places and ("o", "queueName") in places
    esql_problem = next(d for d in diagnostics if d["node"] == "c")
    assert esql_problem["line"] == 4 and esql_problem["column"] > 0
    with platform.qm.client() as qm:
        qm.put(src, b"still flowing")
        assert [m.body for m in get_all(qm, dst, 1)] == [b"still flowing"]
    assert platform.request("GET", f"/api/deployments/{good['id']}").json()["status"] == "running"


def test_unreachable_group_fails_within_the_pickup_timeout(platform, monkeypatch) -> None:
    monkeypatch.setenv("FLOWBROKER_DEPLOY_TIMEOUT", "1")
    brokers = platform.request("GET", "/api/brokers").json()
    default = next(b for b in brokers if b["name"] == "default")
    response = platform.request("POST", f"/api/brokers/{default['id']}/groups", json={"name": "ghost"})
    assert response.status_code == 201, response.text
    src, dst = _queues(platform, "IN", "OUT")
    created = platform.deploy(_passthrough("Ghostly", src, dst), group="ghost")
    failed = platform.wait_status(created["id"], {"failed"}, timeout=15)
    assert "did not respond within 1s" in failed["diagnostics"][0]["message"]


def test_redeploy_under_load_loses_and_duplicates_nothing(platform, worker) -> None:
    src, dst = _queues(platform, "IN", "OUT")
    first = platform.deploy(_passthrough("Redeploy", src, dst))
    platform.wait_status(first["id"], {"running"})
    total = 400
    persistent = MessageDescriptor(persistence=1)

    def produce() -> None:
        with platform.qm.client() as qm:
            for i in range(total):
                qm.put(src, f"{i:05d}".encode(), persistent)

    producer = threading.Thread(target=produce)
    producer.start()
    for round_ in range(3):
        time.sleep(0.3)
        again = platform.deploy(_passthrough("Redeploy", src, dst), additionalInstances=round_ % 2)
        platform.wait_status(again["id"], {"running"})
    producer.join()
    with platform.qm.client() as qm:
        got = get_all(qm, dst, total, wait=60)
        time.sleep(0.5)
        extra = qm.get(dst)
    assert extra is None
    assert sorted(m.body for m in got) == [f"{i:05d}".encode() for i in range(total)]
    assert platform.request("GET", f"/api/deployments/{first['id']}").json()["status"] == "replaced"


def test_sigkill_mid_traffic_then_restart_processes_every_message_exactly_once(platform) -> None:
    src, dst = _queues(platform, "IN", "OUT")
    total = 2000
    _group(platform, "crash")
    with WorkerProcess(platform.data, group="crash") as crashing:
        created = platform.deploy(_passthrough("Crashy", src, dst), group="crash")
        platform.wait_status(created["id"], {"running"})

        def produce() -> None:
            with platform.qm.client() as producer:
                for i in range(total):
                    producer.put(src, f"{i:05d}".encode(), MessageDescriptor(persistence=1))

        # the traffic goes on while the group dies: kill it once some messages are through
        putting = threading.Thread(target=produce)
        putting.start()
        with platform.qm.client() as qm:
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline and qm.inquire_queue(dst)["current_depth"] < 50:
                time.sleep(0.005)
        crashing.kill()
        with platform.qm.client() as qm:
            done_before = qm.inquire_queue(dst)["current_depth"]
        putting.join()
        assert 0 < done_before < total
        # the restarted group resumes the flow from the repository and finishes the rest
        crashing.start()
        with platform.qm.client() as qm:
            got = get_all(qm, dst, total, wait=90)
            time.sleep(0.5)
            assert qm.get(dst) is None
    assert sorted(m.body for m in got) == [f"{i:05d}".encode() for i in range(total)]


def test_instances_sharing_an_input_with_poison_messages_and_a_sigkill_commit_each_message_once(
    platform,
) -> None:
    """Three flow threads share one MQInput node instance: the batch each gets with its commit is
    its own unit of work's, so backouts, a SIGKILL and the restart lose and duplicate nothing."""
    (boq,) = _queues(platform, "SHARED.BOQ")
    (src,) = _queues(platform, "SHARED.IN", backout_threshold=3, backout_requeue_q=boq)
    (dst,) = _queues(platform, "SHARED.OUT")
    total, poisons = 3000, {300, 1100, 1900, 2600}
    doc = flow(
        {
            "in": ("MQInput", {"queueName": src, "messageDomain": "XMLNSC", "readAhead": 8}),
            "read": ("Compute", {"esql": READ_A}),
            "out": ("MQOutput", {"queueName": dst}),
        },
        ["in.out -> read", "read.out -> out"],
        name="SharedInput",
    )
    _group(platform, "shared")
    with WorkerProcess(platform.data, group="shared") as crashing:
        created = platform.deploy(doc, group="shared", additionalInstances=2)
        platform.wait_status(created["id"], {"running"})

        def produce() -> None:
            with platform.qm.client() as producer:
                for i in range(total):
                    body = b"<a>poison" if i in poisons else f"<a>{i:05d}</a>".encode()
                    producer.put(src, body, MessageDescriptor(persistence=1))

        putting = threading.Thread(target=produce)
        putting.start()
        with platform.qm.client() as qm:
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline and qm.inquire_queue(dst)["current_depth"] < 1300:
                time.sleep(0.005)
        crashing.kill()
        putting.join()
        crashing.start()
        with platform.qm.client() as qm:
            got = get_all(qm, dst, total - len(poisons), wait=120)
            moved = get_all(qm, boq, len(poisons), wait=30)
            time.sleep(1.0)
            assert qm.get(dst) is None and qm.get(boq) is None and qm.get(src) is None
    assert sorted(m.body for m in got) == [
        f"<a>{i:05d}!</a>".encode() for i in range(total) if i not in poisons
    ]
    assert [m.body for m in moved] == [b"<a>poison"] * len(poisons)


def _group(platform, name: str) -> None:
    brokers = platform.request("GET", "/api/brokers").json()
    default = next(b for b in brokers if b["name"] == "default")
    response = platform.request("POST", f"/api/brokers/{default['id']}/groups", json={"name": name})
    assert response.status_code in (201, 409), response.text


def test_user_trace_switched_on_over_rest_records_each_node(platform, worker) -> None:
    src, dst = _queues(platform, "IN", "OUT")
    created = platform.deploy(_passthrough("Traced", src, dst))
    platform.wait_status(created["id"], {"running"})
    response = platform.request(
        "PUT", f"/api/deployments/{created['id']}/trace", json={"level": "normal", "mode": "safe"}
    )
    assert response.status_code == 202, response.text
    bad = platform.request(
        "PUT", f"/api/deployments/{created['id']}/trace", json={"level": "loud", "mode": "safe"}
    )
    assert bad.status_code == 422 and "/level" in bad.text
    deadline = time.monotonic() + 30
    text = ""
    with platform.qm.client() as qm:
        while time.monotonic() < deadline and "MQOutput node 'out'" not in text:
            qm.put(src, b"trace me")
            get_all(qm, dst, 1)
            text = platform.request("GET", f"/api/deployments/{created['id']}/trace").text
    assert "MQOutput node 'out' received a message on terminal 'in'" in text


def test_fast_user_trace_is_readable_over_rest_from_a_quiet_flow(platform, worker) -> None:
    src, dst = _queues(platform, "IN", "OUT")
    created = platform.deploy(_passthrough("TracedFast", src, dst))
    platform.wait_status(created["id"], {"running"})
    response = platform.request(
        "PUT", f"/api/deployments/{created['id']}/trace", json={"level": "normal", "mode": "fast"}
    )
    assert response.status_code == 202, response.text
    text = ""
    with platform.qm.client() as qm:
        # the control task switching the trace on may still be on its way: until a record shows,
        # send one message at a time; then send nothing more, the buffered records must surface
        deadline = time.monotonic() + 60
        sent = 0
        while time.monotonic() < deadline and "MQOutput node 'out'" not in text:
            qm.put(src, f"fast {sent}".encode())
            sent += 1
            get_all(qm, dst, 1)
            for _ in range(10):
                text = platform.request("GET", f"/api/deployments/{created['id']}/trace").text
                if "MQOutput node 'out'" in text:
                    break
                time.sleep(0.3)
    assert "MQOutput node 'out' received a message on terminal 'in'" in text


@pytest.mark.rabbitmq
def test_control_tasks_over_rabbitmq(platform, rabbitmq_url, monkeypatch) -> None:
    """Scale-out: the control queue lives in RabbitMQ instead of the file-backed spool."""
    monkeypatch.setenv("FLOWBROKER_CELERY_BROKER", rabbitmq_url)
    _group(platform, "rabbit")
    src, dst = _queues(platform, "IN", "OUT")
    with WorkerProcess(platform.data, group="rabbit", celery_broker=rabbitmq_url):
        created = platform.deploy(_passthrough("OverRabbit", src, dst), group="rabbit")
        assert platform.wait_status(created["id"], {"running", "failed"})["status"] == "running"
        with platform.qm.client() as qm:
            qm.put(src, b"via amqp control")
            assert [m.body for m in get_all(qm, dst, 1)] == [b"via amqp control"]


def test_endless_esql_loop_stalls_neither_another_group_nor_its_undeploy(platform, worker) -> None:
    _group(platform, "loopy")
    spin_in, spin_out, src, dst = _queues(platform, "SPIN.IN", "SPIN.OUT", "IN", "OUT")
    endless = "CREATE COMPUTE MODULE Spin\nCREATE FUNCTION Main() RETURNS BOOLEAN\nBEGIN\n  DECLARE i INTEGER 0;\n  WHILE TRUE DO\n    SET i = i + 1;\n  END WHILE;\n  RETURN TRUE;\nEND;\nEND MODULE;"
    spin_doc = flow(
        {
            "in": ("MQInput", {"queueName": spin_in, "transactionMode": "no"}),
            "c": ("Compute", {"esql": endless}),
            "o": ("MQOutput", {"queueName": spin_out}),
        },
        ["in.out -> c", "c.out -> o"],
        name="Spinner",
    )
    with WorkerProcess(platform.data, group="loopy"):
        spinning = platform.deploy(spin_doc, group="loopy")
        platform.wait_status(spinning["id"], {"running"})
        with platform.qm.client() as qm:
            qm.put(spin_in, b"spin forever")
            time.sleep(0.5)
            steady = platform.deploy(_passthrough("Steady", src, dst))
            platform.wait_status(steady["id"], {"running"})
            for i in range(5):
                qm.put(src, f"s{i}".encode())
            assert len(get_all(qm, dst, 5)) == 5
        platform.request("DELETE", f"/api/deployments/{spinning['id']}")
        assert platform.wait_status(spinning["id"], {"undeployed"}, timeout=30)["status"] == "undeployed"


def test_flowbroker_deploy_command_against_the_api_process(platform, worker, tmp_path) -> None:
    import json
    import os
    import subprocess
    import sys

    import httpx
    from flowbroker.qm.harness import free_port

    port = free_port()
    env = {**os.environ, "FLOWBROKER_DATA": str(platform.data)}
    api = subprocess.Popen(
        [sys.executable, "-m", "flowbroker.cli", "api", "--data", str(platform.data), "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=env,
    )
    try:
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                if httpx.get(url + "/api/health", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.1)
        token = platform.client.post(
            "/api/auth/login", json={"username": "admin", "password": "correct-horse-battery"}
        ).json()["accessToken"]
        src, dst = _queues(platform, "IN", "OUT")
        good = tmp_path / "good.json"
        good.write_text(json.dumps(_passthrough("FromCli", src, dst)))
        cli_env = {**env, "FLOWBROKER_TOKEN": token, "FLOWBROKER_API": url}
        run = subprocess.run(
            [
                sys.executable,
                "-m",
                "flowbroker.cli",
                "deploy",
                str(good),
                "--group",
                "default",
                "--instances",
                "1",
            ],
            capture_output=True,
            text=True,
            env=cli_env,
            timeout=90,
        )
        assert run.returncode == 0, run.stderr
        assert "FromCli" in run.stdout and ": running" in run.stdout
        with platform.qm.client() as qm:
            qm.put(src, b"cli")
            assert [m.body for m in get_all(qm, dst, 1)] == [b"cli"]
        bad = tmp_path / "bad.json"
        bad.write_text(
            json.dumps(
                flow(
                    {"in": ("MQInput", {"queueName": src}), "o": ("MQOutput", {})},
                    ["in.out -> o"],
                    name="FromCli",
                )
            )
        )
        run = subprocess.run(
            [sys.executable, "-m", "flowbroker.cli", "deploy", str(bad), "--group", "default"],
            capture_output=True,
            text=True,
            env=cli_env,
            timeout=90,
        )
        assert run.returncode == 1
        assert f"{bad}: o.queueName: error:" in run.stderr
        assert "Traceback" not in run.stderr
    finally:
        api.terminate()
        api.wait(10)


def test_deployment_api_refuses_bad_requests_precisely(platform) -> None:
    missing = platform.request("POST", "/api/deployments", json={"flowName": "NoSuchFlow"})
    assert missing.status_code == 404 and "NoSuchFlow" in missing.text
    unknown_field = platform.request("POST", "/api/deployments", json={"flowNam": "x"})
    assert unknown_field.status_code == 422 and "flowNam" in unknown_field.text
    bad_group = platform.request(
        "POST", "/api/deployments", json={"document": _passthrough("Nowhere", "A", "B"), "group": "nope"}
    )
    assert bad_group.status_code == 404 and "nope" in bad_group.text
    assert platform.request("GET", "/api/deployments/999999").status_code == 404
    bad_override = platform.request(
        "POST",
        "/api/deployments",
        json={"document": _passthrough("Overridden", "A", "B"), "overrides": {"ghost.queueName": "X"}},
    )
    assert bad_override.status_code == 422 and "/overrides/ghost.queueName" in bad_override.text


def test_statistics_stream_as_server_sent_events(platform, worker) -> None:
    with platform.client.stream(
        "GET", "/api/stats/stream?interval=0.5", headers=platform.headers
    ) as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        lines = []
        for line in response.iter_lines():
            lines.append(line)
            if line.startswith("data:"):
                break
    assert lines[0] == "event: stats"
    import json

    groups = json.loads(lines[1][len("data: ") :])
    default = next(g for g in groups if g["group"] == "default")
    assert default["rss_bytes"] > 0 and default["threads"] >= 1 and "flows" in default


def test_worker_command_bad_input_is_one_line(platform) -> None:
    import subprocess
    import sys

    bad_name = subprocess.run(
        [
            sys.executable,
            "-m",
            "flowbroker.cli",
            "worker",
            "--group",
            "bad name!",
            "--data",
            str(platform.data),
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert bad_name.returncode == 1
    assert (
        bad_name.stderr.strip() == "flowbroker: error: --group 'bad name!': use 1-64 letters, digits, . _ -"
    )
    unknown = subprocess.run(
        [
            sys.executable,
            "-m",
            "flowbroker.cli",
            "worker",
            "--group",
            "undefined",
            "--data",
            str(platform.data),
            "--startup-timeout",
            "0",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert unknown.returncode == 1
    assert unknown.stderr.startswith("flowbroker: error: execution group default/undefined:")
    assert len(unknown.stderr.strip().splitlines()) == 1


def test_group_stop_and_start_over_rest(platform, worker) -> None:
    """A stopped group runs none of its flows; started again, each flow resumes in its own state."""
    src, dst = _queues(platform, "IN", "OUT")
    created = platform.deploy(_passthrough("StopStart", src, dst))
    running = platform.wait_status(created["id"], {"running"})
    stopped = platform.request("POST", f"/api/groups/{running['groupId']}/stop")
    assert stopped.status_code == 202, stopped.text
    assert stopped.json()["desiredState"] == "stopped"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        flows = platform.request("GET", "/api/stats/flows").json()
        if [f["state"] for f in flows if f["flow"] == "StopStart"] == ["stopped"]:
            break
        time.sleep(0.2)
    with platform.qm.client() as qm:
        qm.put(src, b"while stopped")
        time.sleep(1.0)
        assert qm.get(dst) is None
        # the flow's own state is kept: it was running, and runs again with its group
        assert platform.request("GET", f"/api/deployments/{created['id']}").json()["status"] == "running"
        platform.request("POST", f"/api/groups/{running['groupId']}/start")
        assert [m.body for m in get_all(qm, dst, 1)] == [b"while stopped"]


def test_a_worker_restarted_while_its_group_is_stopped_runs_nothing_until_started(platform) -> None:
    src, dst = _queues(platform, "IN", "OUT")
    _group(platform, "dormant")
    with WorkerProcess(platform.data, group="dormant") as process:
        created = platform.deploy(_passthrough("Dormant", src, dst), group="dormant")
        running = platform.wait_status(created["id"], {"running"})
        assert platform.request("POST", f"/api/groups/{running['groupId']}/stop").status_code == 202
        process.kill()
        process.start()  # comes back while the group is stopped: loads the flow, runs none
        with platform.qm.client() as qm:
            qm.put(src, b"waits for the group")
            time.sleep(2.0)
            assert qm.get(dst) is None
            assert platform.request("GET", f"/api/deployments/{created['id']}").json()["status"] == "running"
            platform.request("POST", f"/api/groups/{running['groupId']}/start")
            assert [m.body for m in get_all(qm, dst, 1, wait=30)] == [b"waits for the group"]


@pytest.mark.postgres
def test_database_flow_in_the_worker_with_a_data_source_defined_over_rest(
    platform, worker, postgres_url
) -> None:
    import uuid

    import sqlalchemy as sa

    table = f"eg_orders_{uuid.uuid4().hex[:8]}"
    engine = sa.create_engine(postgres_url)
    with engine.begin() as conn:
        conn.execute(sa.text(f"CREATE TABLE {table} (id INTEGER PRIMARY KEY, body VARCHAR(40))"))
    try:
        name = f"PG{uuid.uuid4().hex[:6]}"
        response = platform.request("POST", "/api/datasources", json={"name": name, "url": postgres_url})
        assert response.status_code == 201, response.text
        src, dst = _queues(platform, "IN", "OUT")
        esql = f"INSERT INTO Database.{table} (id, body) VALUES (CAST(Root.XMLNSC.o.id AS INTEGER), Root.XMLNSC.o.body);"
        doc = flow(
            {
                "in": ("MQInput", {"queueName": src, "messageDomain": "XMLNSC"}),
                "db": ("Database", {"esql": esql, "dataSource": name}),
                "out": ("MQOutput", {"queueName": dst}),
            },
            ["in.out -> db", "db.out -> out"],
            name="StoreOrders",
            coordinatedTransaction=True,
        )
        created = platform.deploy(doc)
        assert platform.wait_status(created["id"], {"running", "failed"})["status"] == "running"
        with platform.qm.client() as qm:
            for i in range(5):
                qm.put(
                    src,
                    f"<o><id>{i}</id><body>order {i}</body></o>".encode(),
                    MessageDescriptor(persistence=1),
                )
            assert len(get_all(qm, dst, 5)) == 5
        with engine.connect() as conn:
            rows = conn.execute(sa.text(f"SELECT id, body FROM {table} ORDER BY id")).all()
        assert [tuple(r) for r in rows] == [(i, f"order {i}") for i in range(5)]
    finally:
        with engine.begin() as conn:
            conn.execute(sa.text(f"DROP TABLE IF EXISTS {table}"))
        engine.dispose()
