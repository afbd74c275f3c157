"""Converting a Toolkit workspace: nodes, terminals, properties, subflows, ESQL by broker schema, MQSC."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from ace_flows import flow_using
from flowbroker.importers.ace import Workspace, import_workspace, mqsc, xmi
from flowbroker.importers.ace.esql import EsqlIndex, split

FIXTURES = Path(__file__).parent / "ace"
WORKSPACE = FIXTURES / "workspace"
BROKEN = FIXTURES / "broken"


@pytest.fixture(scope="module")
def converted() -> Any:
    return import_workspace(Workspace.from_dirs([WORKSPACE]))


def _doc(converted: Any, name: str) -> dict[str, Any]:
    return next(d for d in converted.documents if d["name"] == name)


def _node(document: dict[str, Any], name: str) -> dict[str, Any]:
    return next(n for n in document["nodes"] if n["name"] == name)


def _flow_report(converted: Any, name: str) -> Any:
    return next(f for f in converted.report.flows if f.name == name)


def test_nodes_terminals_names_and_positions_come_across(converted: Any) -> None:
    router = _doc(converted, "orders.OrderRouter")
    assert [(n["type"], n["name"]) for n in router["nodes"]] == [
        ("MQInput", "Orders in"),
        ("Compute", "Enrich"),
        ("Subflow", "Stamp"),
        ("MQOutput", "Orders out"),
        ("Unsupported", "Check stock"),
        ("Trace", "Log failure"),
    ]
    # spread out: the designer's boxes are wider than the Toolkit's icons
    assert _node(router, "Orders in")["position"] == {"x": 64, "y": 192}
    ends = {
        (c["from"]["node"], c["from"]["terminal"], c["to"]["node"], c["to"]["terminal"])
        for c in router["connections"]
    }
    assert ends == {
        ("FCMComposite_1_1", "out", "FCMComposite_1_2", "in"),
        ("FCMComposite_1_2", "out", "FCMComposite_1_3", "Input"),
        ("FCMComposite_1_3", "Output", "FCMComposite_1_4", "in"),
        ("FCMComposite_1_2", "out1", "FCMComposite_1_5", "in"),
        ("FCMComposite_1_1", "catch", "FCMComposite_1_6", "in"),
    }


def test_properties_map_and_ace_defaults_fill_what_the_xmi_omits(converted: Any) -> None:
    router = _doc(converted, "orders.OrderRouter")
    assert _node(router, "Orders in")["properties"] == {
        "queueName": "ACEIMP.ORDERS.IN",
        "messageDomain": "XMLNSC",
        "transactionMode": "automatic",
        "orderMode": "default",
    }
    # ACE's MQOutput asks for no new MsgId unless told; flowbroker's own default differs
    assert _node(router, "Orders out")["properties"] == {
        "queueName": "ACEIMP.ORDERS.OUT",
        "destinationMode": "queueName",
        "transactionMode": "automatic",
        "persistenceMode": "persistent",
        "newMsgId": False,
        "newCorrelId": False,
    }
    enrich = _node(router, "Enrich")["properties"]
    assert enrich["computeMode"] == "LocalEnvironmentAndMessage"
    assert enrich["module"] == "OrderRouter_Enrich"
    assert _node(router, "Log failure")["properties"] == {
        "destination": "log",
        "pattern": "failed: ${ExceptionList}",
    }
    # node-level additional instances become the flow's
    assert router["properties"] == {"additionalInstances": 2}
    dropped = {
        (d["node"], d["property"]) for d in _flow_report(converted, "orders.OrderRouter").dropped_properties
    }
    assert dropped == {
        ("Orders in", "additionalInstances"),
        ("Orders in", "browse"),
        ("Orders in", "queueName"),
        ("(flow)", "AUDIT_LEVEL"),
    }
    # the input queue the Toolkit named is an alias of the MQSC script: the node reads its target
    (alias,) = [
        d
        for d in _flow_report(converted, "orders.OrderRouter").dropped_properties
        if d["property"] == "queueName"
    ]
    assert alias == {
        "node": "Orders in",
        "property": "queueName",
        "value": "ACEIMP.ORDERS.ALIAS",
        "reason": "names the alias queue defined at OrderApp/queues.mqsc:7; there are no alias queues, so the "
        "node names its target ACEIMP.ORDERS.IN",
    }


def test_flow_properties_reach_the_nodes_they_were_promoted_from_and_esql_externals(converted: Any) -> None:
    router = _doc(converted, "orders.OrderRouter")
    # outQueue is promoted from the MQOutput's queueName: its default is the node's queue
    assert _node(router, "Orders out")["properties"]["queueName"] == "ACEIMP.ORDERS.OUT"
    # a user-defined property is the value of the EXTERNAL variable the module declares
    assert _node(router, "Enrich")["properties"]["externals"] == {"SHOP_REGION": "west"}
    report = _flow_report(converted, "orders.OrderRouter")
    (audit,) = [d for d in report.dropped_properties if d["property"] == "AUDIT_LEVEL"]
    assert audit["reason"] == "a user-defined property no ESQL node of the flow declares EXTERNAL"


def test_a_subflow_instance_names_the_subflow_flow_whose_input_and_output_are_terminals(
    converted: Any,
) -> None:
    router = _doc(converted, "orders.OrderRouter")
    assert _node(router, "Stamp")["properties"] == {"flow": {"name": "common.Stamp"}}
    # the designer draws a subflow node named by reference with the terminals remembered here
    assert _node(router, "Stamp")["ui"] == {"terminals": {"inputs": ["Input"], "outputs": ["Output"]}}
    stamp = _doc(converted, "common.Stamp")
    assert [(n["type"], n["properties"].get("terminalName")) for n in stamp["nodes"]] == [
        ("Input", "Input"),
        ("Compute", None),
        ("Output", "Output"),
    ]
    assert _flow_report(converted, "common.Stamp").kind == "subflow"


def test_an_unsupported_node_is_kept_in_place_with_its_attributes_and_connections(converted: Any) -> None:
    router = _doc(converted, "orders.OrderRouter")
    check = _node(router, "Check stock")
    assert check == {
        "type": "Unsupported",
        "name": "Check stock",
        "id": "FCMComposite_1_5",
        "position": {"x": 576, "y": 384},
        "properties": {
            "originalType": "ComIbmJavaCompute",
            "originalAttributes": {"javaClass": "orders.CheckStock"},
            "inputTerminals": [{"name": "in"}],
            "outputTerminals": [],
        },
    }
    report = _flow_report(converted, "orders.OrderRouter")
    assert report.outcome == "partial"
    assert (report.nodes_total, report.nodes_mapped) == (6, 5)
    assert report.unsupported_nodes == [
        {
            "node": "Check stock",
            "id": "FCMComposite_1_5",
            "type": "JavaCompute",
            "reason": "no flowbroker node type yet",
            "line": 41,
        }
    ]
    assert report.dropped_connections == []
    assert (
        "Unsupported nodes to replace before deploying: Check stock (JavaCompute)." in router["description"]
    )
    # the flow saves (the import stores it) but would not deploy until the node is replaced
    assert [p["message"] for p in report.problems] == [
        "node 'Check stock' is an unsupported ACE node (ComIbmJavaCompute): replace it before deploying"
    ]
    assert converted.report.summary()["unsupportedNodeTypes"] == {"JavaCompute": 1}


def test_esql_comes_from_the_modules_schema_other_files_and_path_libraries(converted: Any) -> None:
    esql = _node(_doc(converted, "orders.OrderRouter"), "Enrich")["properties"]["esql"]
    assert "BROKER SCHEMA orders" in esql
    assert "CREATE COMPUTE MODULE OrderRouter_Enrich" in esql
    assert "DECLARE SHOP_NAME CONSTANT CHARACTER 'north';" in esql  # same schema, another file
    assert "CREATE FUNCTION Priority(IN qty INTEGER)" in esql  # a library's schema on the PATH
    # a routine of a schema not on the PATH, called by its qualified name, with the routine it calls in
    # turn from its own schema: one source holds them all, so the call names the routine alone
    assert "CREATE PROCEDURE Mark(IN order REFERENCE)" in esql
    assert "CREATE FUNCTION Verdict()" in esql
    assert "CALL Mark(OutputRoot.XMLNSC.Order);" in esql
    for unused in ("OrderRouter_Unused", "UNUSED_LIMIT", "NotCalled"):
        assert unused not in esql
    report = _flow_report(converted, "orders.OrderRouter")
    assert report.esql_resolved == [
        {
            "node": "Enrich",
            "module": "orders.OrderRouter_Enrich",
            "source": "OrderApp/orders/OrderRouter.esql:5",
            "uses": ["orders.SHOP_NAME", "audit.Mark", "audit.Verdict", "common.Priority"],
        }
    ]
    # the assembled module compiles: only the unsupported node stops the flow deploying
    assert [p["node"] for p in report.problems] == ["FCMComposite_1_5"]


def test_a_missing_module_and_unmappable_values_are_reported() -> None:
    result = import_workspace(Workspace.from_dirs([BROKEN]))
    (invoices,) = result.report.flows
    assert invoices.esql_missing == [
        {
            "node": "Large?",
            "module": "esql://routine/billing#IsLarge.Main",
            "reason": "module IsLarge not found in broker schema 'billing'",
        }
    ]
    reasons = {(d["property"], d["value"]): d["reason"] for d in invoices.dropped_properties}
    assert reasons[("messageDomainProperty", "DFDL")].startswith("value 'DFDL' is not supported")
    assert "queue manager" in reasons[("queueManagerName", "REMOTE.QM")]
    assert ("persistenceMode", "asQueueDef") in reasons
    assert [c["reason"] for c in invoices.dropped_connections] == [
        "Filter has no terminal 'maybe' (has: true, false, unknown, failure)"
    ]
    document = result.documents[0]
    rcd = next(n for n in document["nodes"] if n["type"] == "ResetContentDescriptor")
    assert rcd["properties"] == {
        "messageDomain": "BLOB",
        "resetMessageDomain": False,
        "resetMessageSet": False,
        "resetMessageType": False,
        "resetMessageFormat": False,
    }
    reply = next(n for n in document["nodes"] if n["type"] == "MQOutput")
    assert reply["properties"]["destinationMode"] == "replyToQueue"
    # a Filter without its module cannot be saved: the report says so
    assert {p["message"] for p in invoices.problems} == {"required property of Filter"}


def test_malformed_xmi_is_a_hard_error_naming_file_line_and_column() -> None:
    result = import_workspace(Workspace.from_dirs([BROKEN]), check=False)
    errors = {e["file"]: e for e in result.report.errors}
    truncated = errors["Billing/billing/Truncated.msgflow"]
    assert (truncated["line"], truncated["column"]) == (10, 19)
    assert truncated["message"].startswith(
        "Billing/billing/Truncated.msgflow:10:19: malformed XML: Opening and ending tag mismatch"
    )
    entities = errors["Billing/billing/Entities.msgflow"]
    assert (
        entities["message"] == "Billing/billing/Entities.msgflow:3:1: DTD entity declarations are not allowed"
    )
    assert [f.name for f in result.report.flows] == ["billing.Invoices"]  # the rest still imports


def test_external_entities_are_never_resolved(tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("TOPSECRET")
    # no ENTITY declaration to refuse up front: the parser itself must not load the DTD
    data = (
        f'<?xml version="1.0"?><!DOCTYPE x SYSTEM "{secret.as_uri()}">'
        '<ecore:EPackage xmlns:ecore="http://www.eclipse.org/emf/2002/Ecore" '
        'xmlns:xmi="http://www.omg.org/XMI" nsURI="x.msgflow">'
        '<eClassifiers xmi:type="eflow:FCMComposite"><shortDescription string="s"/></eClassifiers>'
        "</ecore:EPackage>"
    ).encode()
    flow = xmi.parse(data, "x.msgflow")
    assert flow.description == "s"
    with pytest.raises(xmi.XmiError, match=r"x.msgflow:1:1: not a message flow: the root element is <html>"):
        xmi.parse(b"<html/>", "x.msgflow")


def test_mqsc_local_queues_become_definitions_and_the_rest_is_reported() -> None:
    script = mqsc.parse(
        "* a comment\n"
        "DEFINE QLOCAL('Mixed.Case') MAXDEPTH(10) -\n"
        "   DEFPSIST(YES) DESCR('it''s here') REPLACE\n"
        "def ql(lower.case) bothresh(3) boqname(lower.backout) put(disabled) SCOPE(QMGR)\n"
        "DEFINE QREMOTE(FAR.AWAY) RNAME(X) RQMNAME(QM2)\n"
        "ALTER QLOCAL(LOWER.CASE) MAXMSGL(100)\n"
        "SET AUTHREC PROFILE(X) OBJTYPE(QUEUE)\n",
        "q.mqsc",
    )
    assert [(q.name, q.kind, q.attributes, q.problem) for q in script.queues] == [
        ("Mixed.Case", "QLOCAL", {"max_depth": 10, "default_persistence": 1, "description": "it's here"}, ""),
        (
            "LOWER.CASE",
            "QLOCAL",
            {
                "backout_threshold": 3,
                "backout_requeue_q": "LOWER.BACKOUT",
                "put_inhibited": True,
                "max_msg_length": 100,
            },
            "",
        ),
        (
            "FAR.AWAY",
            "QREMOTE",
            {},
            "QREMOTE is not supported: messages do not travel to other queue managers (RNAME X at RQMNAME QM2)",
        ),
    ]
    assert script.queues[0].source == "q.mqsc:2"
    assert script.queues[1].dropped == [
        {"attribute": "SCOPE", "value": "QMGR", "reason": "no such queue attribute here"}
    ]
    assert script.unsupported == [{"source": "q.mqsc:7", "command": "SET AUTHREC PROFILE(X) OBJTYPE(QUEUE)"}]


def test_mqsc_topics_and_subscriptions_become_durable_subscriptions_and_aliases_name_targets() -> None:
    script = mqsc.parse(
        "DEFINE TOPIC(SALES) TOPICSTR('shop/sales') CLUSTER(C1) DEFPSIST(YES)\n"
        "DEFINE SUB(ALL.SALES) TOPICOBJ(SALES) TOPICSTR('#') DEST(SALES.LOG) DESTCORL(0A1B) EXPIRY(100)\n"
        "DEFINE SUB('plain') TOPICSTR('shop/+/eu') DEST(EU.Q) DESTCLAS(PROVIDED) WSCHEMA(TOPIC)\n"
        "DEFINE SUB(NO.OBJ) TOPICOBJ(MISSING) DEST(Q)\n"
        "DEFINE SUB(FAR) TOPICSTR('a') DEST(Q) DESTQMGR(QM2)\n"
        "DEFINE SUB(CHARS) TOPICSTR('a*') DEST(Q) WSCHEMA(CHAR)\n"
        "DEFINE SUB(BAD.WILD) TOPICSTR('a/#/b') DEST(Q)\n"
        "DEFINE SUB(NO.DEST) TOPICSTR('a')\n"
        "DEFINE QALIAS(TO.TOPIC) TARGET(SALES) TARGTYPE(TOPIC)\n"
        "DEFINE QALIAS(TO.QUEUE) TARGQ(REAL.Q)\n"
        "DEFINE QMODEL(DYN)\n",
        "ps.mqsc",
    )
    (topic,) = script.topics
    assert (topic.name, topic.topic_string, topic.problem) == ("SALES", "shop/sales", "")
    assert [d["attribute"] for d in topic.dropped] == ["CLUSTER", "DEFPSIST"]
    subs = {s.name: s for s in script.subscriptions}
    # MQ joins the topic object's string and the subscription's own
    assert (subs["ALL.SALES"].topic, subs["ALL.SALES"].queue, subs["ALL.SALES"].correl_id) == (
        "shop/sales/#",
        "SALES.LOG",
        "0A1B",
    )
    assert subs["ALL.SALES"].dropped == [
        {"attribute": "EXPIRY", "value": "100", "reason": "no such subscription attribute here"}
    ]
    assert (subs["plain"].topic, subs["plain"].problem, subs["plain"].dropped) == ("shop/+/eu", "", [])
    assert {name: s.problem for name, s in subs.items() if s.problem} == {
        "NO.OBJ": "TOPICOBJ(MISSING) is not defined with a TOPICSTR in the scripts",
        "FAR": "DESTQMGR(QM2): publications are delivered only to queues of this queue manager",
        "CHARS": "WSCHEMA(CHAR): character wildcards (WSCHEMA(CHAR)) are not supported: topic-level wildcards "
        "# and + only",
        "BAD.WILD": "topic 'a/#/b': '#' must be the last level (level 2)",
        "NO.DEST": "a subscription needs DEST, the queue publications are put to",
    }
    assert [(q.name, q.problem) for q in script.queues] == [
        (
            "TO.TOPIC",
            "QALIAS of the topic SALES is not supported: an MQOutput node naming it would publish; use a "
            "Publication node",
        ),
        (
            "TO.QUEUE",
            "QALIAS is not supported: the queue manager has no alias queues; flow nodes naming TO.QUEUE are "
            "given its target REAL.Q",
        ),
        (
            "DYN",
            "QMODEL is not supported: there are no dynamic queues; define the queues the flows use as QLOCAL",
        ),
    ]
    assert script.unsupported == []


def test_esql_files_split_into_items_whatever_the_nesting() -> None:
    schema, paths, items = split(
        "BROKER SCHEMA a.b\nPATH c.d, e;\n"
        "DECLARE K CONSTANT CHARACTER 'END;';\n"
        "CREATE PROCEDURE P() BEGIN\n"
        "  DECLARE EXIT HANDLER FOR SQLSTATE LIKE '%' BEGIN END;\n"
        "  -- END; in a comment\n"
        "  WHILE TRUE DO CASE WHEN 1 = 1 THEN LEAVE; END CASE; END WHILE;\n"
        "  SET x = CASE y WHEN 1 THEN 'a' END;\n"
        "  MOVE r NEXTSIBLING REPEAT TYPE NAME;\n"
        "  FOR f AS r.*[] DO IF f = 1 THEN RETURN; END IF; END FOR;\n"
        "END;\n"
        "CREATE FUNCTION F() RETURNS INTEGER RETURN Q(1);\n"
        "CREATE FILTER MODULE M CREATE FUNCTION Main() RETURNS BOOLEAN BEGIN RETURN F() = 1; END; END MODULE;\n"
    )
    assert (schema, paths) == ("a.b", ["c.d", "e"])
    assert [(i.kind, i.name, i.line) for i in items] == [
        ("schema", "", 1),
        ("path", "", 2),
        ("declare", "K", 3),
        ("routine", "P", 4),
        ("routine", "F", 12),
        ("module", "M", 13),
    ]
    assert items[3].text.endswith("END FOR;\nEND;")
    index = EsqlIndex()
    index.add(
        "P", "m.esql", "BROKER SCHEMA a.b\nCREATE FUNCTION F() RETURNS INTEGER RETURN 1;\n" + items[5].text
    )
    resolved = index.resolve("esql://routine/a.b#M.Main")
    assert resolved.uses == ["a.b.F"]
    assert (
        index.resolve("esql://routine/#M.Main").problem == "module M not found in the default broker schema"
    )
    assert index.resolve("routine M").problem == "not an ESQL routine reference: 'routine M'"


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "flowbroker.cli", "import", "ace", *args],
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_the_command_writes_flows_and_the_report_with_out(tmp_path: Path) -> None:
    result = _cli(str(WORKSPACE), "--out", str(tmp_path))
    assert result.returncode == 0, result.stderr
    assert sorted(p.name for p in (tmp_path / "flows").iterdir()) == [
        "common.Stamp.json",
        "orders.OrderRouter.json",
    ]
    assert (tmp_path / "report.json").is_file() and (tmp_path / "queues.json").is_file()
    assert "unsupported node 'Check stock' (JavaCompute): no flowbroker node type yet" in result.stdout
    assert "2 flows (1 complete), 8/9 nodes mapped (88.9%)" in result.stdout


def test_the_report_option_imports_each_directory_apart_and_prints_the_figures() -> None:
    result = _cli(str(WORKSPACE), str(BROKEN), "--report")
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        # the router lacks a node; its subflow is complete and compiles
        "workspace: 2 flow files, 2 imported (100.0%), 1 of mapped nodes only (1 validate), nodes 8/9 mapped "
        "(88.9%), 0 connections dropped, queues 4 definable / 2 not, subscriptions 1 / 1 not, models 0/0 "
        "imported, 0 unreadable files",
        # two files cannot be read; the third names a module that is missing
        "broken: 3 flow files, 1 imported (33.3%), 1 of mapped nodes only (0 validate), nodes 4/4 mapped "
        "(100.0%), 1 connections dropped, queues 0 definable / 0 not, subscriptions 0 / 0 not, models 0/0 "
        "imported, 2 unreadable files",
        "total (2 workspaces): 5 flow files, 3 imported (60.0%), 2 of mapped nodes only (1 validate), nodes "
        "12/13 mapped (92.3%), 1 connections dropped, queues 4 definable / 2 not, subscriptions 1 / 1 not, "
        "models 0/0 imported, 2 unreadable files",
        "most frequent unmapped node types: JavaCompute 1",
    ]


def test_the_command_exits_non_zero_only_on_hard_errors(tmp_path: Path) -> None:
    result = _cli(str(BROKEN), "--out", str(tmp_path))
    assert result.returncode == 1
    assert "error: Billing/billing/Truncated.msgflow:10:19: malformed XML" in result.stdout
    assert (tmp_path / "flows" / "billing.Invoices.json").is_file()
    missing = _cli(str(tmp_path / "nowhere"), "--out", str(tmp_path))
    assert missing.returncode == 1
    assert missing.stderr.strip() == f"flowbroker: error: {tmp_path / 'nowhere'}: not a directory"
    assert "Traceback" not in missing.stderr


def test_one_project_alone_reports_the_library_subflow_it_lacks() -> None:
    result = import_workspace(Workspace.from_dirs([WORKSPACE / "OrderApp"]), check=False)
    assert result.report.projects == ["OrderApp"]
    (router,) = result.report.flows
    stamp = next(n for n in router.unsupported_nodes if n["node"] == "Stamp")
    assert stamp["reason"] == "subflow common/Stamp.subflow is not in the workspace"
    esql = result.report.flows[0].esql_resolved[0]
    assert esql["uses"] == ["orders.SHOP_NAME"]  # Priority lives in the library, not given


def test_a_folder_without_project_files_is_one_project(tmp_path: Path) -> None:
    flows = tmp_path / "loose" / "flows"
    flows.mkdir(parents=True)
    (flows / "Echo.msgflow").write_bytes((WORKSPACE / "CommonLib" / "common" / "Stamp.subflow").read_bytes())
    result = import_workspace(Workspace.from_dirs([tmp_path / "loose"]), check=False)
    assert result.report.projects == ["loose"]
    assert [f.name for f in result.report.flows] == ["flows.Echo"]


def test_a_zip_of_one_projects_folders_keeps_the_broker_schema_in_the_names() -> None:
    import io
    import zipfile

    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.write(WORKSPACE / "CommonLib" / "common" / "Stamp.subflow", "common/Stamp.subflow")
        archive.write(WORKSPACE / "CommonLib" / "common" / "Stamp.esql", "common/Stamp.esql")
    result = import_workspace(Workspace.from_zip(buffer.getvalue()), check=False)
    assert result.report.projects == ["workspace"]
    assert [f.name for f in result.report.flows] == ["common.Stamp"]
    assert result.report.flows[0].esql_resolved[0]["source"] == "workspace/common/Stamp.esql:3"


def test_a_cycle_of_subflows_is_a_positioned_error_and_none_of_it_is_converted(tmp_path: Path) -> None:
    app = tmp_path / "Loop" / "loop"
    app.mkdir(parents=True)
    (app / "A.subflow").write_text(flow_using(["loop/B.subflow"], "loop/A.subflow"))
    (app / "B.subflow").write_text(flow_using(["loop/A.subflow"], "loop/B.subflow"))
    (app / "Main.msgflow").write_text(flow_using(["loop/A.subflow"], "loop/Main.msgflow"))
    (app / "Alone.subflow").write_text(flow_using([], "loop/Alone.subflow"))
    result = import_workspace(Workspace.from_dirs([tmp_path / "Loop"]))
    assert result.report.errors == [
        {
            "file": "Loop/loop/A.subflow",
            "line": 5,
            "column": 7,
            "message": "Loop/loop/A.subflow:5:7: subflow cycle: loop.A uses loop.B uses loop.A; "
            "a flow cannot contain itself",
        }
    ]
    # nothing of the cycle, nor the flow using it, is converted; the unrelated subflow is
    assert [d["name"] for d in result.documents] == ["loop.Alone"]
    outcomes = {f.name: (f.outcome, [p["message"] for p in f.problems]) for f in result.report.flows}
    assert outcomes["loop.B"] == ("refused", ["takes part in a cycle of subflow references (see errors)"])
    assert outcomes["loop.Main"] == (
        "refused",
        ["node 'use loop/A.subflow' uses subflow loop.A, which is not imported"],
    )


def test_a_flow_whose_subflow_cannot_be_read_is_not_converted(tmp_path: Path) -> None:
    app = tmp_path / "App" / "app"
    app.mkdir(parents=True)
    (app / "Main.msgflow").write_text(flow_using(["app/Sub.subflow"], "app/Main.msgflow"))
    (app / "Sub.subflow").write_text("<ecore:EPackage")  # a later file that fails
    result = import_workspace(Workspace.from_dirs([tmp_path / "App"]))
    assert [e["file"] for e in result.report.errors] == ["App/app/Sub.subflow"]
    assert result.documents == []
    (main,) = result.report.flows
    assert (main.outcome, main.problems) == (
        "refused",
        [
            {
                "pointer": "",
                "message": "node 'use app/Sub.subflow' uses subflow app.Sub, which is not imported",
            }
        ],
    )


def test_an_esql_file_that_ends_inside_a_module_is_read_to_its_end() -> None:
    from flowbroker.importers.ace.esql import split

    schema, _, items = split(
        "BROKER SCHEMA a.b\nCREATE COMPUTE MODULE Cut\n  CREATE FUNCTION Main() RETURNS BOOLEAN"
    )
    assert schema == "a.b"
    assert [(i.kind, i.name) for i in items] == [("schema", ""), ("module", "Cut")]
    assert items[-1].text.endswith("RETURNS BOOLEAN")


def test_qualified_calls_of_two_routines_of_one_name_are_left_as_written() -> None:
    from flowbroker.importers.ace.esql import EsqlIndex

    index = EsqlIndex()
    index.add("Lib", "a/Log.esql", "BROKER SCHEMA a\nCREATE PROCEDURE Log() BEGIN END;\n")
    index.add("Lib", "b/Log.esql", "BROKER SCHEMA b\nCREATE PROCEDURE Log() BEGIN END;\n")
    index.add(
        "App",
        "m/M.esql",
        "BROKER SCHEMA m\nCREATE COMPUTE MODULE M CREATE FUNCTION Main() RETURNS BOOLEAN BEGIN\n"
        "CALL a.Log(); CALL b.Log(); RETURN TRUE; END; END MODULE;\n",
    )
    found = index.resolve("esql://routine/m#M.Main")
    assert found.uses == ["a.Log", "b.Log"]
    assert found.esql is not None and "CALL a.Log(); CALL b.Log();" in found.esql
