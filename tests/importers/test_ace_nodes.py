"""The mapping of ACE's Route, MQGet, File, TimeoutNotification and HTTP nodes; XPath filters."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from flowbroker.importers.ace import Workspace, import_workspace
from flowbroker.importers.ace.nodes import Unconvertible, trace_pattern
from flowbroker.importers.ace.xpath import to_esql
from flowbroker.services import validation

NODES = Path(__file__).parent / "ace" / "nodes"


@pytest.fixture(scope="module")
def converted() -> Any:
    return import_workspace(Workspace.from_dirs([NODES]))


def _doc(converted: Any, name: str) -> dict[str, Any]:
    return next(d for d in converted.documents if d["name"] == name)


def _props(document: dict[str, Any], name: str) -> dict[str, Any]:
    return next(n for n in document["nodes"] if n["name"] == name)["properties"]


def _report(converted: Any, name: str) -> Any:
    return next(f for f in converted.report.flows if f.name == name)


def _dropped(converted: Any, flow: str) -> dict[str, str]:
    return {f"{d['node']}.{d['property']}": d["reason"] for d in _report(converted, flow).dropped_properties}


def test_route_filter_xpath_becomes_esql_rows_and_the_rest_is_reported(converted: Any) -> None:
    dispatch = _doc(converted, "shipping.Dispatch")
    assert _props(dispatch, "By service") == {
        "distributionMode": "first",
        "filterTable": [
            {
                "filterPattern": "Root.XMLNSC.order.service = 'express' AND LocalEnvironment.File.Name <> 'test.xml'",
                "routingOutputTerminal": "Express",
            },
            {
                "filterPattern": "STARTSWITH(Root.XMLNSC.order.service, 'bulk') OR EXISTS(Environment.Forced[])",
                "routingOutputTerminal": "Bulk",
            },
        ],
    }
    dropped = _dropped(converted, "shipping.Dispatch")
    assert dropped["By service.filterTable[3]"] == (
        "XPath step 'line[2]' (an axis, predicate, attribute or prefix) is not rewritten"
    )
    # the dynamic terminals the rows name carry their connections; the dropped row's does not
    ends = {(c["from"]["node"], c["from"]["terminal"]) for c in dispatch["connections"]}
    assert {("FCMComposite_1_2", "Express"), ("FCMComposite_1_2", "Bulk")} <= ends
    (lost,) = _report(converted, "shipping.Dispatch").dropped_connections
    assert lost["from"] == "FCMComposite_1_2.Odd"


def test_mqget_and_file_nodes_take_ace_names_units_and_defaults(converted: Any) -> None:
    dispatch = _doc(converted, "shipping.Dispatch")
    assert _props(dispatch, "Order files") == {
        "directory": "orders/in",
        "filePattern": "*.xml",
        "actionOnSuccess": "archive",
        "recordDetection": "wholeFile",
        "pollingInterval": 30000,  # ACE gives seconds
        "messageDomain": "XMLNSC",
    }
    assert _props(dispatch, "Stock reply") == {
        "queueName": "SHIP.STOCK.REPLY",
        "waitInterval": 5000,
        "getByCorrelId": True,
        "getByMessageId": False,
        "transactionMode": "automatic",
        "outputDataLocation": "OutputRoot.XMLNSC.order.stock",
        "messageDomain": "XMLNSC",
    }
    assert _props(dispatch, "Express file") == {
        "directory": "orders/out",
        "fileName": "express.xml",
        "outputFileAction": "archive",
        "recordDefinition": "wholeFile",
    }
    assert _props(dispatch, "Bulk file")["recordDefinition"] == "unmodifiedData"
    dropped = _dropped(converted, "shipping.Dispatch")
    assert dropped["Stock reply.browse"] == "MQGet cannot browse: it always gets the message destructively"
    assert dropped["Express file.remoteTransferType"].startswith("no remote (FTP/SFTP) transfer")
    # ACE's End of Data terminal is EOD; FileOutput's Finish File input is EOD too
    ends = {(c["from"]["terminal"], c["to"]["node"], c["to"]["terminal"]) for c in dispatch["connections"]}
    assert ("alternate", "FCMComposite_1_6", "finish") in ends


def test_the_mapped_flows_validate_but_for_the_unsupported_node(converted: Any) -> None:
    for document in converted.documents:
        assert validation.problems(document) == []
    assert [p["message"] for p in _report(converted, "shipping.Dispatch").problems] == [
        "node 'Bulk rates' is an unsupported ACE node (ComIbmJavaCompute): replace it before deploying"
    ]


def test_timeout_notification_maps_in_both_operation_modes(converted: Any) -> None:
    heartbeat = _doc(converted, "shipping.Heartbeat")
    assert _props(heartbeat, "Every minute") == {
        "uniqueIdentifier": "Beat",
        "operationMode": "automatic",
        "timeoutInterval": 60,
    }
    assert _props(heartbeat, "Retry timer") == {
        "uniqueIdentifier": "Retry",
        "operationMode": "controlled",
        "timeoutInterval": 1,
    }
    assert _report(converted, "shipping.Heartbeat").unsupported_nodes == []


FANOUT = """<?xml version="1.0" encoding="UTF-8"?>
<ecore:EPackage xmi:version="2.0" xmlns:xmi="http://www.omg.org/XMI"
    xmlns:ComIbmMQInput.msgnode="ComIbmMQInput.msgnode" xmlns:ComIbmMQOutput.msgnode="ComIbmMQOutput.msgnode"
    xmlns:ComIbmAggregateControl.msgnode="ComIbmAggregateControl.msgnode"
    xmlns:ComIbmAggregateRequest.msgnode="ComIbmAggregateRequest.msgnode"
    xmlns:ComIbmAggregateReply.msgnode="ComIbmAggregateReply.msgnode"
    xmlns:ComIbmTimeoutControl.msgnode="ComIbmTimeoutControl.msgnode"
    xmlns:ComIbmXslMqsi.msgnode="ComIbmXslMqsi.msgnode"
    xmlns:ecore="http://www.eclipse.org/emf/2002/Ecore" xmlns:eflow="http://www.ibm.com/wbi/2005/eflow"
    xmlns:utility="http://www.ibm.com/wbi/2005/eflow_utility" nsURI="quotes/Fan.msgflow" nsPrefix="quotes_Fan.msgflow">
  <eClassifiers xmi:type="eflow:FCMComposite" name="FCMComposite_1">
    <eSuperTypes href="http://www.ibm.com/wbi/2005/eflow#//FCMBlock"/>
    <composition>
      <nodes xmi:type="ComIbmMQInput.msgnode:FCMComposite_1" xmi:id="N1" location="0,0" queueName="Q.IN">
        <translation xmi:type="utility:ConstantString" string="In"/></nodes>
      <nodes xmi:type="ComIbmAggregateControl.msgnode:FCMComposite_1" xmi:id="N2" location="1,0" aggregateName="Quote"
          timeoutInterval="30" timeoutLocation="$LocalEnvironment/Aggregation/Timeout">
        <translation xmi:type="utility:ConstantString" string="Fan out"/></nodes>
      <nodes xmi:type="ComIbmMQOutput.msgnode:FCMComposite_1" xmi:id="N3" location="2,0" queueName="Q.PRICE">
        <translation xmi:type="utility:ConstantString" string="Price"/></nodes>
      <nodes xmi:type="ComIbmAggregateRequest.msgnode:FCMComposite_1" xmi:id="N4" location="3,0" folderName="price">
        <translation xmi:type="utility:ConstantString" string="Price request"/></nodes>
      <nodes xmi:type="ComIbmMQInput.msgnode:FCMComposite_1" xmi:id="N5" location="0,1" queueName="Q.REPLIES">
        <translation xmi:type="utility:ConstantString" string="Replies"/></nodes>
      <nodes xmi:type="ComIbmAggregateReply.msgnode:FCMComposite_1" xmi:id="N6" location="1,1" aggregateName="Quote"
          unknownMessageTimeout="5">
        <translation xmi:type="utility:ConstantString" string="Fan in"/></nodes>
      <nodes xmi:type="ComIbmTimeoutControl.msgnode:FCMComposite_1" xmi:id="N7" location="2,1" uniqueIdentifier="Late"
          requestLocation="$InputRoot/XMLNSC/TimeoutRequest">
        <translation xmi:type="utility:ConstantString" string="Chase"/></nodes>
      <nodes xmi:type="ComIbmXslMqsi.msgnode:FCMComposite_1" xmi:id="N8" location="2,2" stylesheetName="xsl/quote.xsl"
          messageDomainProperty="XMLNSC">
        <translation xmi:type="utility:ConstantString" string="Restyle"/></nodes>
      <connections xmi:type="eflow:FCMConnection" xmi:id="C1" targetNode="N2" sourceNode="N1" sourceTerminalName="OutTerminal.out" targetTerminalName="InTerminal.in"/>
      <connections xmi:type="eflow:FCMConnection" xmi:id="C2" targetNode="N3" sourceNode="N2" sourceTerminalName="OutTerminal.out" targetTerminalName="InTerminal.in"/>
      <connections xmi:type="eflow:FCMConnection" xmi:id="C3" targetNode="N4" sourceNode="N3" sourceTerminalName="OutTerminal.out" targetTerminalName="InTerminal.in"/>
      <connections xmi:type="eflow:FCMConnection" xmi:id="C4" targetNode="N6" sourceNode="N5" sourceTerminalName="OutTerminal.out" targetTerminalName="InTerminal.in"/>
      <connections xmi:type="eflow:FCMConnection" xmi:id="C5" targetNode="N7" sourceNode="N6" sourceTerminalName="OutTerminal.timeout" targetTerminalName="InTerminal.in"/>
    </composition>
  </eClassifiers>
</ecore:EPackage>
"""


def test_aggregation_and_timeout_control_nodes_map(tmp_path: Path) -> None:
    flows = tmp_path / "Quotes" / "quotes"
    flows.mkdir(parents=True)
    (flows / "Fan.msgflow").write_text(FANOUT, encoding="utf-8")
    result = import_workspace(Workspace.from_dirs([tmp_path / "Quotes"]))
    document = _doc(result, "quotes.Fan")
    assert validation.problems(document) == []
    assert _props(document, "Fan out") == {"aggregateName": "Quote", "timeout": 30}
    assert _props(document, "Price request") == {"folderName": "price"}
    assert _props(document, "Fan in") == {"aggregateName": "Quote", "unknownMessageTimeout": 5}
    assert _props(document, "Chase") == {
        "uniqueIdentifier": "Late",
        "requestLocation": "InputRoot.XMLNSC.TimeoutRequest",
    }
    assert _props(document, "Restyle") == {"stylesheetName": "xsl/quote.xsl", "outputDomain": "XMLNSC"}
    assert {(c["from"]["terminal"], c["to"]["node"]) for c in document["connections"]} >= {("timeout", "N7")}
    assert _report(result, "quotes.Fan").unsupported_nodes == []


def test_http_input_request_and_reply_map_to_ours_with_ace_defaults(converted: Any) -> None:
    quotes = _doc(converted, "shipping.Quotes")
    assert _props(quotes, "Quote request") == {
        "path": "/quotes/*",  # ACE's path suffix may omit the leading slash
        "method": "ANY",  # ACE's HTTPInput serves every method
        "messageDomain": "JSON",
        "maxClientWaitTime": 30,
    }
    assert quotes["properties"] == {"additionalInstances": 3}
    assert _props(quotes, "Ask carrier") == {
        "webServiceURL": "https://rates.example/quote",
        "httpMethod": "GET",
        "messageDomain": "JSON",
        "requestTimeout": 15,
        "followRedirects": True,
        "generateDefaultHttpHeaders": True,
    }
    # a node left at ACE's defaults gets them, not ours
    assert _props(quotes, "Ask backup") == {
        "httpMethod": "POST",
        "messageDomain": "BLOB",
        "requestTimeout": 120,
        "followRedirects": False,
        "generateDefaultHttpHeaders": True,
    }
    assert _props(quotes, "Answer") == {"ignoreTransportFailures": False, "generateDefaultHttpHeaders": True}
    dropped = _dropped(converted, "shipping.Quotes")
    assert dropped["Quote request.useHTTPS"].startswith(
        "the execution group's HTTP listener serves plain HTTP"
    )
    assert dropped["Quote request.faultFormat"].startswith("a failure no path handles is answered")
    assert dropped["Ask carrier.httpProxyLocation"].startswith("HTTPRequest connects to the server directly")
    assert (
        dropped["Ask backup.URLSpecifier"]
        == "the URL must begin with http:// or https://, got 'carrier/backup'"
    )
    assert "Quote request.parseQueryString" not in dropped  # ours always parses it
    # ACE's terminals are ours: error of the request, timeout of the input
    ends = {(c["from"]["node"], c["from"]["terminal"]) for c in quotes["connections"]}
    assert {("FCMComposite_1_2", "error"), ("FCMComposite_1_1", "timeout")} <= ends
    report = _report(converted, "shipping.Quotes")
    assert report.dropped_connections == []
    # the asynchronous pair has no counterpart yet
    assert [(n["node"], n["type"]) for n in report.unsupported_nodes] == [("Audit", "HTTPAsyncRequest")]


def test_a_trace_pattern_naming_body_reads_the_last_child_of_root() -> None:
    from flowbroker_nodes import trace

    pattern = trace_pattern("in: ${Body} id ${ Body.Order.Id } ${Bodyguard.x} ${Root.Properties}")
    assert pattern == "in: ${Root.*[<]} id ${Root.*[<].Order.Id } ${Bodyguard.x} ${Root.Properties}"
    node = trace.Node("t", "t", {"pattern": pattern.replace("${Bodyguard.x} ", ""), "destination": "none"})
    node.prepare()  # ACE's ${Body} alone is refused by our Trace


@pytest.mark.parametrize(
    ("xpath", "esql"),
    [
        ("$Root/XMLNSC/a/b='x'", "Root.XMLNSC.a.b = 'x'"),
        ('$Body/Data/event/type = "it\'s"', "Body.Data.event.type = 'it''s'"),
        ("$Root/HTTPInputHeader/Content-Type != 'a'", "Root.HTTPInputHeader.\"Content-Type\" <> 'a'"),
        ("$Root", "EXISTS(Root.*[])"),
        (
            "not($Environment/x) and ($Root/n >= 10 or contains($Root/s, 'q'))",
            "NOT (EXISTS(Environment.x[])) AND (Root.n >= 10 OR CONTAINS(Root.s, 'q'))",
        ),
    ],
)
def test_xpath_that_has_an_esql_meaning_is_rewritten(xpath: str, esql: str) -> None:
    assert to_esql(xpath) == esql


@pytest.mark.parametrize(
    "xpath",
    ["$Root//x = 1", "$Root/a/@id = 1", "$Root/ns:a = 1", "count($Root/a) > 1", "$Foo/a", "$Root/a = ", ""],
)
def test_xpath_without_an_esql_counterpart_is_unconvertible(xpath: str) -> None:
    with pytest.raises(Unconvertible):
        to_esql(xpath)


def test_file_input_fixed_length_records_keep_their_length(converted: Any) -> None:
    batch = _doc(converted, "shipping.Batch")
    assert _props(batch, "Order lines") == {
        "directory": "orders/batch",
        "filePattern": "*.dat",
        "actionOnSuccess": "delete",
        "recordDetection": "fixedLength",
        "recordLength": 35,
        "pollingInterval": 5000,
        "messageDomain": "MRM",
        "messageSet": "ORDERS",
        "messageType": "ORDER-LINE",
        "messageFormat": "CWF",
    }
    assert _dropped(converted, "shipping.Batch") == {}


def test_a_rest_apis_path_with_a_trailing_star_serves_everything_below_it(tmp_path: Path) -> None:
    flow = tmp_path / "Api" / "gen" / "Sum.msgflow"
    flow.parent.mkdir(parents=True)
    flow.write_text(
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        '<ecore:EPackage xmi:version="2.0" xmlns:xmi="http://www.omg.org/XMI"'
        ' xmlns:ecore="http://www.eclipse.org/emf/2002/Ecore" xmlns:eflow="http://www.ibm.com/wbi/2005/eflow"'
        ' xmlns:ComIbmWSInput.msgnode="ComIbmWSInput.msgnode" nsURI="gen/Sum.msgflow">\n'
        '  <eClassifiers xmi:type="eflow:FCMComposite" name="FCMComposite_1"><composition>\n'
        '    <nodes xmi:type="ComIbmWSInput.msgnode:FCMComposite_1" xmi:id="FCMComposite_1_1" location="20,20"'
        ' URLSpecifier="/sum_api/v1*"/>\n'
        "  </composition></eClassifiers>\n</ecore:EPackage>\n"
    )
    converted = import_workspace(Workspace.from_dirs([tmp_path / "Api"]), check=False)
    (document,) = converted.documents
    assert document["nodes"][0]["properties"]["path"] == "/sum_api/v1/*"
    (note,) = converted.report.flows[0].dropped_properties
    assert note["reason"].startswith("served as /sum_api/v1/*: ACE's * after a segment also matches")
