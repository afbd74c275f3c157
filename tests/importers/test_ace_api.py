"""POST /api/imports/ace: a zipped workspace becomes flows in the repository, by role."""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from api_process import running_api

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from fastapi.testclient import TestClient

from ace_flows import flow_using
from flowbroker.api.app import create_app
from flowbroker.importers.ace.workspace import zip_dirs
from flowbroker.repository import db
from flowbroker.services import users
from flowbroker.settings import Settings

PASSWORD = "correct-horse-battery"
FIXTURES = Path(__file__).parent / "ace"
ZIP = {"Content-Type": "application/zip"}


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[TestClient, dict[str, dict[str, str]]]]:
    data: Path = tmp_path_factory.mktemp("ace-import-api")
    app = create_app(Settings(data=data, database_url=f"sqlite:///{data / 'config.db'}"))  # type: ignore[call-arg]
    with db.session_scope(app.state.session_factory) as session:
        users.ensure_admin(session, PASSWORD)
        users.create(session, "admin", "dev", PASSWORD, "developer")
        users.create(session, "admin", "watcher", PASSWORD, "viewer")
    client = TestClient(app)
    headers = {}
    for name in ("admin", "dev", "watcher"):
        token = client.post("/api/auth/login", json={"username": name, "password": PASSWORD}).json()
        headers[name] = {"Authorization": f"Bearer {token['accessToken']}"}
    yield client, headers
    client.close()
    app.state.engine.dispose()


def _post(api: Any, user: str, data: bytes, query: str = "") -> Any:
    client, headers = api
    return client.post(f"/api/imports/ace{query}", content=data, headers={**headers[user], **ZIP})


def test_a_developer_imports_flows_and_subflows_once(api: Any) -> None:
    client, headers = api
    data = zip_dirs([FIXTURES / "workspace"])
    first = _post(api, "dev", data)
    assert first.status_code == 200, first.text
    body = first.json()
    assert {(f["name"], f["outcome"], f["version"]) for f in body["flows"]} == {
        ("common.Stamp", "created", 1),
        ("orders.OrderRouter", "created", 1),
    }
    # a developer may not define queues: the report says so instead of failing the import
    assert {q["name"]: q.get("outcome") or q["problem"] for q in body["queues"]} == {
        "ACEIMP.ORDERS.IN": "not defined: defining queues needs the operator role",
        "ACEIMP.ORDERS.OUT": "not defined: defining queues needs the operator role",
        "ACEIMP.ORDERS.BACKOUT": "not defined: defining queues needs the operator role",
        "ACEIMP.ORDERS.AUDIT": "not defined: defining queues needs the operator role",
        "ACEIMP.ORDERS.ALIAS": "QALIAS is not supported: the queue manager has no alias queues; flow nodes "
        "naming ACEIMP.ORDERS.ALIAS are given its target ACEIMP.ORDERS.IN",
        "ACEIMP.ORDERS.FAR": "QREMOTE is not supported: messages do not travel to other queue managers "
        "(RNAME ORDERS.IN at RQMNAME QM2)",
    }
    assert {s["name"]: s.get("outcome") or s["problem"] for s in body["subscriptions"]} == {
        "ACEIMP.ORDERS.AUDIT": "not defined: defining subscriptions needs the operator role",
        "ACEIMP.ORDERS.BIG": "SELECTOR(Qty > 10): SELECTOR is an SQL92 message selector; subscriptions here "
        "filter with ESQL expressions (define the subscription with a filter by hand)",
    }
    assert body["summary"]["unsupportedNodeTypes"] == {"JavaCompute": 1}
    flows = {f["name"]: f for f in client.get("/api/flows", headers=headers["dev"]).json()}
    stored = client.get(f"/api/flows/{flows['orders.OrderRouter']['id']}", headers=headers["dev"]).json()
    assert [n["type"] for n in stored["document"]["nodes"]] == [
        "MQInput",
        "Compute",
        "Subflow",
        "MQOutput",
        "Unsupported",
        "Trace",
    ]
    again = _post(api, "dev", data).json()
    assert {f["outcome"] for f in again["flows"]} == {"unchanged"}


def test_a_flow_that_cannot_be_saved_is_refused_and_unreadable_files_are_errors(api: Any) -> None:
    body = _post(api, "admin", zip_dirs([FIXTURES / "broken"]), "?queues=false").json()
    (invoices,) = body["flows"]
    assert invoices["outcome"] == "refused"
    assert invoices["problems"] == [
        {"pointer": "/nodes/1/properties/esql", "message": "required property of Filter"}
    ]
    assert sorted((e["file"], e["line"]) for e in body["errors"]) == [
        ("Billing/billing/Entities.msgflow", 3),
        ("Billing/billing/Truncated.msgflow", 10),
    ]


def test_a_cwf_message_set_is_stored_once_and_the_others_are_reported(api: Any) -> None:
    client, headers = api
    data = zip_dirs([FIXTURES / "msgsets" / "Bank"])
    body = _post(api, "dev", data).json()
    models = {m["file"]: m for m in body["models"]}
    bankset = models["Bank/cwfset/messageSet.mset"]
    assert (bankset["outcome"], bankset["version"]) == ("created", 1)
    assert "document" not in bankset  # the report names the set; the document is in the repository
    assert models["Bank/xmlset/messageSet.mset"]["outcome"] == "not imported"
    assert body["summary"]["modelsImported"] == 1
    sets = {s["name"]: s for s in client.get("/api/message-sets", headers=headers["dev"]).json()}
    assert set(sets) >= {"BANKSET"} and "XMLSET" not in sets
    stored = client.get(f"/api/message-sets/{sets['BANKSET']['id']}", headers=headers["dev"]).json()
    assert stored["document"]["messages"] == ["Account", "Header"]
    again = _post(api, "dev", data).json()
    assert {m["file"]: m for m in again["models"]}["Bank/cwfset/messageSet.mset"]["outcome"] == "unchanged"


def test_a_path_outside_the_archive_is_refused(api: Any) -> None:
    import io
    import zipfile

    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("App/../../escape.msgflow", b"<x/>")
    refused = _post(api, "admin", buffer.getvalue())
    assert refused.status_code == 400
    assert refused.json()["message"] == "App/../../escape.msgflow: a path outside the archive"


def test_a_viewer_may_not_import_and_garbage_is_a_bad_request(api: Any) -> None:
    assert _post(api, "watcher", zip_dirs([FIXTURES / "workspace"])).status_code == 403
    bad = _post(api, "admin", b"not a zip at all")
    assert bad.status_code == 400
    assert bad.json()["code"] == "bad_workspace"
    assert bad.json()["message"] == "not a zip archive: File is not a zip file"


def _zip(files: dict[str, bytes]) -> bytes:
    import io
    import zipfile

    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, content in files.items():
            archive.writestr(name, content)
    return buffer.getvalue()


@pytest.fixture(scope="module")
def small_api(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[TestClient, dict[str, dict[str, str]]]]:
    """The API with bounds on what an uploaded workspace may expand to: 64 KiB and 8 files."""
    data: Path = tmp_path_factory.mktemp("ace-import-bounds")
    app = create_app(
        Settings(  # type: ignore[call-arg]
            data=data,
            database_url=f"sqlite:///{data / 'config.db'}",
            ace_import_max_bytes=64 * 1024,
            ace_import_max_files=8,
        )
    )
    with db.session_scope(app.state.session_factory) as session:
        users.ensure_admin(session, PASSWORD)
    client = TestClient(app)
    token = client.post("/api/auth/login", json={"username": "admin", "password": PASSWORD}).json()
    yield client, {"admin": {"Authorization": f"Bearer {token['accessToken']}"}}
    client.close()
    app.state.engine.dispose()


def _flow_names(api: Any) -> list[str]:
    client, headers = api
    return sorted(f["name"] for f in client.get("/api/flows", headers=headers["admin"]).json())


def test_a_zip_bomb_is_refused_before_anything_is_written(small_api: Any) -> None:
    real = (FIXTURES / "nodes" / "Shipping" / "shipping" / "Heartbeat.msgflow").read_bytes()
    # a few KiB on the wire, 16 MiB once expanded: refused as the member is expanded
    bomb = _zip(
        {"App/shipping/Heartbeat.msgflow": real, "App/shipping/Zeros.esql": b"\0" * (16 * 1024 * 1024)}
    )
    assert len(bomb) < 64 * 1024
    refused = _post(small_api, "admin", bomb, "?queues=false")
    assert refused.status_code == 413, refused.text
    assert refused.json()["code"] == "workspace_too_large"
    assert refused.json()["message"] == (
        "App/shipping/Zeros.esql: the archive expands to more than 65536 bytes of sources; at most that many "
        "are read (FLOWBROKER_ACE_IMPORT_MAX_BYTES)"
    )
    many = _zip({f"App/f{i}.esql": b"" for i in range(9)})
    refused = _post(small_api, "admin", many, "?queues=false")
    assert refused.status_code == 413
    assert refused.json()["message"] == (
        "the archive holds 9 files; at most 8 are read (FLOWBROKER_ACE_IMPORT_MAX_FILES)"
    )
    assert _flow_names(small_api) == []
    # within the bounds the same flow is imported
    fine = _post(small_api, "admin", _zip({"App/shipping/Heartbeat.msgflow": real}), "?queues=false")
    assert fine.status_code == 200, fine.text
    assert _flow_names(small_api) == ["App.shipping.Heartbeat"]


def test_flows_are_stored_all_or_nothing_each_with_the_subflows_they_use(api: Any) -> None:
    """A flow is stored only with every subflow it uses; the rest of the workspace still is."""
    files = {
        "Loop/.project": b"<projectDescription><name>Loop</name></projectDescription>",
        "Loop/loop/A.subflow": flow_using(["loop/B.subflow"], "loop/A.subflow").encode(),
        "Loop/loop/B.subflow": flow_using(["loop/A.subflow"], "loop/B.subflow").encode(),
        "Loop/loop/UsesLoop.msgflow": flow_using(["loop/A.subflow"], "loop/UsesLoop.msgflow").encode(),
        "Loop/loop/Main.msgflow": flow_using(["loop/Sub.subflow"], "loop/Main.msgflow").encode(),
        "Loop/loop/Sub.subflow": flow_using(["loop/Leaf.subflow"], "loop/Sub.subflow").encode(),
        # a subflow two levels down that cannot be saved (a Filter node without its module)
        "Loop/loop/Leaf.subflow": flow_using([], "loop/Leaf.subflow")
        .replace(
            "<composition>",
            '<composition><nodes xmlns:f="ComIbmFilter.msgnode" xmi:type="f:FCMComposite_1" xmi:id="F1"/>',
        )
        .encode(),
        "Loop/loop/Alone.subflow": flow_using([], "loop/Alone.subflow").encode(),
    }
    before = _flow_names(api)
    body = _post(api, "admin", _zip(files), "?queues=false").json()
    assert [(e["file"], e["line"]) for e in body["errors"]] == [("Loop/loop/A.subflow", 5)]
    outcomes = {f["name"]: f["outcome"] for f in body["flows"]}
    assert outcomes == {
        "loop.A": "refused",
        "loop.B": "refused",
        "loop.UsesLoop": "refused",
        "loop.Leaf": "refused",
        "loop.Sub": "refused",
        "loop.Main": "refused",
        "loop.Alone": "created",
    }
    main = next(f for f in body["flows"] if f["name"] == "loop.Main")
    assert main["problems"][-1] == {
        "pointer": "",
        "message": "node 'use loop/Sub.subflow' uses subflow loop.Sub, which is not imported",
    }
    assert _flow_names(api) == sorted([*before, "loop.Alone"])


@pytest.fixture(scope="module")
def api_process(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    """The configuration manager as a real process (`flowbroker api`): its URL and an admin token."""
    with running_api(tmp_path_factory.mktemp("ace-import-cli"), PASSWORD) as api:
        yield api


@pytest.mark.timeout(180)
def test_the_command_stores_the_workspace_through_the_api(
    api_process: tuple[str, str], tmp_path: Path
) -> None:
    import os
    import subprocess
    import sys

    url, token = api_process
    command = [sys.executable, "-m", "flowbroker.cli", "import", "ace", str(FIXTURES / "workspace")]
    command += ["--api", url, "--no-queues"]
    env = {**os.environ, "FLOWBROKER_TOKEN": token, "FLOWBROKER_CONFIG_DIR": str(tmp_path / "config")}
    done = subprocess.run(command, capture_output=True, text=True, timeout=60, env=env)
    assert done.returncode == 0, done.stderr
    assert (
        "flow orders.OrderRouter v1 (OrderApp/orders/OrderRouter.msgflow): created, 5/6 nodes mapped"
        in done.stdout
    )
    assert (
        "subflow common.Stamp v1 (CommonLib/common/Stamp.subflow): created, 3/3 nodes mapped" in done.stdout
    )
    again = subprocess.run(command, capture_output=True, text=True, timeout=60, env=env)
    assert "flow orders.OrderRouter v1 (OrderApp/orders/OrderRouter.msgflow): unchanged" in again.stdout
    anonymous = {k: v for k, v in env.items() if k != "FLOWBROKER_TOKEN"}
    refused = subprocess.run(command, capture_output=True, text=True, timeout=60, env=anonymous)
    assert refused.returncode == 1 and "Traceback" not in refused.stderr
    assert refused.stderr.startswith("flowbroker: error: POST /api/imports/ace?queues=false: 401:")
    # --broker names the broker the queues are for; an unknown one is refused before anything is stored
    unknown = subprocess.run(
        [*command, "--broker", "no such"], capture_output=True, text=True, timeout=60, env=env
    )
    assert unknown.returncode == 1 and "Traceback" not in unknown.stderr
    assert unknown.stderr.startswith(
        "flowbroker: error: POST /api/imports/ace?queues=false&broker=no+such: 404:"
    )
    assert "no broker named 'no such'" in unknown.stderr


def _rabbit_workspace(tmp_path: Path, stem: str) -> Path:
    """A project with an MQSC script of queues named ``stem.…`` and a flow reading ``stem.IN``."""
    project = tmp_path / "RabbitApp"
    project.mkdir()
    (project / ".project").write_text("<projectDescription><name>RabbitApp</name></projectDescription>")
    (project / "queues.mqsc").write_text(
        f"DEFINE QLOCAL('{stem}.IN') MAXDEPTH(2) BOTHRESH(3) BOQNAME('{stem}.BACKOUT') +\n"
        "       DESCR('arrivals') DEFPSIST(YES) REPLACE\n"
        f"DEFINE QLOCAL('{stem}.BACKOUT')\n"
        f"DEFINE QLOCAL('{stem}.AUDIT')\n"
        f"DEFINE SUB('{stem}.SUB') TOPICSTR('{stem.lower()}/orders/#') DEST('{stem}.AUDIT')\n"
    )
    (project / "Reader.msgflow").write_text(
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        '<ecore:EPackage xmi:version="2.0" xmlns:xmi="http://www.omg.org/XMI"'
        ' xmlns:ecore="http://www.eclipse.org/emf/2002/Ecore" xmlns:eflow="http://www.ibm.com/wbi/2005/eflow"'
        ' xmlns:ComIbmMQInput.msgnode="ComIbmMQInput.msgnode" xmlns:ComIbmMQOutput.msgnode="ComIbmMQOutput.msgnode"'
        ' nsURI="Reader.msgflow">\n'
        '  <eClassifiers xmi:type="eflow:FCMComposite" name="FCMComposite_1"><composition>\n'
        '    <nodes xmi:type="ComIbmMQInput.msgnode:FCMComposite_1" xmi:id="In" location="20,20"'
        f' queueName="{stem}.IN"/>\n'
        '    <nodes xmi:type="ComIbmMQOutput.msgnode:FCMComposite_1" xmi:id="Out" location="120,20"'
        f' queueName="{stem}.AUDIT"/>\n'
        '  <connections xmi:type="eflow:FCMConnection" xmi:id="C1" targetNode="Out" sourceNode="In"'
        ' sourceTerminalName="OutTerminal.out" targetTerminalName="InTerminal.in"/>\n'
        "  </composition></eClassifiers>\n</ecore:EPackage>\n"
    )
    return project


def test_queues_for_a_rabbitmq_broker_are_defined_on_rabbitmq(
    api: Any, rabbitmq_url: str, tmp_path: Path
) -> None:
    import uuid

    import pika
    import pika.exceptions

    client, headers = api
    stem = f"ACEIMP{uuid.uuid4().hex[:8].upper()}"
    made = client.post(
        "/api/brokers", json={"name": f"rabbit-{stem}", "qmUrl": rabbitmq_url}, headers=headers["admin"]
    )
    assert made.status_code in (200, 201), made.text
    data = zip_dirs([_rabbit_workspace(tmp_path, stem)])
    connection = pika.BlockingConnection(pika.URLParameters(rabbitmq_url))
    channel = connection.channel()
    try:
        # an unknown broker is refused before anything is written
        unknown = _post(api, "admin", data, "?broker=no-such-broker")
        assert unknown.status_code == 404
        assert all(f["name"] != "Reader" for f in client.get("/api/flows", headers=headers["admin"]).json())

        body = _post(api, "admin", data, f"?broker=rabbit-{stem}").json()
        queues = {q["name"]: q for q in body["queues"]}
        assert queues[f"{stem}.IN"]["outcome"] == "defined on RabbitMQ (quorum queue)"
        assert {d["attribute"]: d["reason"] for d in queues[f"{stem}.IN"]["dropped"]} == {
            "DESCR": "RabbitMQ queues hold no description",
            "DEFPSIST": "persistence is per message on RabbitMQ; the queues defined here are durable",
        }
        # RabbitMQ queues have no backout settings: the MQInput node reading the queue takes them
        assert queues[f"{stem}.IN"]["notes"][0] == (
            "BOTHRESH, BOQNAME given to the MQInput nodes reading the queue: Reader/In"
        )
        (reader,) = [f for f in body["flows"] if f["name"] == "Reader"]
        flows = {f["name"]: f for f in client.get("/api/flows", headers=headers["admin"]).json()}
        stored = client.get(f"/api/flows/{flows['Reader']['id']}", headers=headers["admin"]).json()
        (mq_input,) = [n for n in stored["document"]["nodes"] if n["type"] == "MQInput"]
        assert (mq_input["properties"]["backoutThreshold"], mq_input["properties"]["backoutQueue"]) == (
            3,
            f"{stem}.BACKOUT",
        )
        assert reader["outcome"] == "created"
        assert queues[f"{stem}.IN"]["notes"][1].startswith(
            "MAXDEPTH(2) is x-max-length with publishes refused once the queue is full"
        )
        # the bound holds: puts past it are refused and the oldest message is not dropped
        channel.confirm_delivery()
        refused = 0
        for n in range(4):
            try:
                channel.basic_publish("", f"{stem}.IN", f"m{n}".encode(), mandatory=True)
            except pika.exceptions.NackError:
                refused += 1
        assert refused >= 1
        assert channel.queue_declare(f"{stem}.IN", passive=True).method.message_count == 4 - refused
        _method, _props, first = channel.basic_get(f"{stem}.IN", auto_ack=True)
        assert first == b"m0"
        # the subscription is a binding to the topic exchange: a publication reaches its queue
        (sub,) = body["subscriptions"]
        assert sub["outcome"].startswith(f"defined on RabbitMQ (a binding of {stem}.AUDIT to the exchange ")
        channel.basic_publish("flowbroker.topics", f"{stem.lower()}.orders.new", b"pub", mandatory=True)
        assert channel.queue_declare(f"{stem}.AUDIT", passive=True).method.message_count == 1

        again = _post(api, "admin", data, f"?broker=rabbit-{stem}").json()
        assert {q["name"]: q["outcome"] for q in again["queues"]}[f"{stem}.IN"] == (
            "exists on RabbitMQ (left as it is)"
        )
    finally:
        for suffix in ("IN", "BACKOUT", "AUDIT"):
            channel = channel if channel.is_open else connection.channel()
            try:
                channel.queue_delete(f"{stem}.{suffix}")
            except pika.exceptions.ChannelClosedByBroker:
                pass
        connection.close()
