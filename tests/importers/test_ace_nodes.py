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


def test_timeout_notification_automatic_maps_and_controlled_is_unsupported(converted: Any) -> None:
    heartbeat = _doc(converted, "shipping.Heartbeat")
    assert _props(heartbeat, "Every minute") == {
        "uniqueIdentifier": "Beat",
        "operationMode": "automatic",
        "timeoutInterval": 60,
    }
    retry = next(n for n in heartbeat["nodes"] if n["name"] == "Retry timer")
    assert retry["type"] == "Unsupported"
    assert retry["properties"]["originalAttributes"] == {
        "uniqueIdentifier": "Retry",
        "operationMode": "controlled",
    }
    (unsupported,) = _report(converted, "shipping.Heartbeat").unsupported_nodes
    assert unsupported["reason"].startswith("controlled operation mode")


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
