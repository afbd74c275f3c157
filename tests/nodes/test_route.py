"""Route: filter table rows of ESQL expressions, dynamic terminals, distribution first / all, default."""

from __future__ import annotations

import pytest
from esql.tree import Element
from flowbroker.runtime.compiler import FlowCompileError
from flowbroker.runtime.harness import FlowHarness, flow, get_all
from flowbroker.services import validation
from flowbroker_nodes.base import Unwinding

pytestmark = pytest.mark.timeout(60)

TABLE = [
    {"filterPattern": "Root.XMLNSC.order.total > 100", "routingOutputTerminal": "big"},
    {"filterPattern": "Root.XMLNSC.order.country = 'FR'", "routingOutputTerminal": "france"},
    {"filterPattern": "LocalEnvironment.Variables.urgent = TRUE", "routingOutputTerminal": "match"},
]


def route_flow(mode: str = "all", table: list | None = None) -> dict:
    return flow(
        {
            "in": ("MQInput", {"queueName": "UNUSED", "messageDomain": "XMLNSC"}),
            "r": ("Route", {"filterTable": TABLE if table is None else table, "distributionMode": mode}),
        },
        ["in.out -> r"],
    )


ORDER = b"<order><total>250</total><country>FR</country></order>"


def test_all_sends_to_every_matching_terminal_and_none_to_default() -> None:
    h = FlowHarness(route_flow("all"))
    h.inject("r", ORDER, domain="XMLNSC")
    h.inject("r", b"<order><total>5</total><country>DE</country></order>", domain="XMLNSC")
    assert len(h.seen("r", "big")) == 1
    assert len(h.seen("r", "france")) == 1
    assert len(h.seen("r", "match")) == 0
    assert len(h.seen("r", "default")) == 1
    # the unchanged message goes on
    assert h.seen("r", "default")[0].root.child("XMLNSC").child("order").child("country").value == "DE"


def test_first_stops_at_the_first_matching_row() -> None:
    h = FlowHarness(route_flow("first"))
    h.inject("r", ORDER, domain="XMLNSC")
    assert len(h.seen("r", "big")) == 1
    assert h.seen("r", "france") == []
    assert h.seen("r", "default") == []


def test_expressions_read_the_local_environment() -> None:
    h = FlowHarness(route_flow("all"))
    env = Element("LocalEnvironment")
    env.add("Variables").add("urgent", True)
    h.inject("r", b"<order><total>1</total></order>", domain="XMLNSC", local_environment=env)
    assert len(h.seen("r", "match")) == 1
    assert h.seen("r", "default") == []


def test_runtime_esql_error_goes_to_failure_and_routes_nothing() -> None:
    table = [
        {"filterPattern": "TRUE", "routingOutputTerminal": "first"},
        {"filterPattern": "CAST(Root.XMLNSC.order.total AS INTEGER) > 1", "routingOutputTerminal": "second"},
    ]
    h = FlowHarness(route_flow("all", table))
    failures = h.tap("r", "failure")
    h.inject("r", b"<order><total>not a number</total></order>", domain="XMLNSC")
    assert h.seen("r", "first") == [] and h.seen("r", "second") == []
    (failed,) = failures.seen
    entry = failed.exception_list.first_child
    assert entry.child("Type").value == "Route"
    assert "row 2" in entry.child("Text").value


def test_runtime_error_without_failure_terminal_unwinds_with_the_row() -> None:
    table = [{"filterPattern": "CAST('x' AS INTEGER) = 1", "routingOutputTerminal": "a"}]
    h = FlowHarness(route_flow("all", table))
    with pytest.raises(Unwinding) as info:
        h.inject("r", ORDER, domain="XMLNSC")
    assert "row 1" in str(info.value)


def test_compile_errors_name_the_row_line_and_column() -> None:
    table = [
        {"filterPattern": "Root.XMLNSC.a = 1", "routingOutputTerminal": "ok"},
        {"filterPattern": "Root.XMLNSC.a = = 2", "routingOutputTerminal": "bad"},
    ]
    with pytest.raises(FlowCompileError) as info:
        FlowHarness(route_flow("all", table))
    (problem,) = info.value.problems
    assert problem.node == "r" and problem.property == "filterTable"
    assert "row 2" in problem.message
    assert problem.line == 1 and problem.column > 0


@pytest.mark.parametrize(
    "row",
    [
        {"filterPattern": "TRUE", "routingOutputTerminal": "default"},
        {"filterPattern": "TRUE", "routingOutputTerminal": ""},
        {"filterPattern": "", "routingOutputTerminal": "x"},
        "TRUE",
    ],
)
def test_bad_rows_are_refused(row: object) -> None:
    with pytest.raises(FlowCompileError) as info:
        FlowHarness(route_flow("all", [row]))  # type: ignore[list-item]
    assert info.value.problems[0].property == "filterTable"


def test_connections_to_terminals_the_table_names_are_valid_others_not() -> None:
    doc = route_flow("all")
    doc["nodes"].append({"id": "t", "type": "Trace", "properties": {}})
    doc["connections"].append(
        {"from": {"node": "r", "terminal": "france"}, "to": {"node": "t", "terminal": "in"}}
    )
    assert validation.problems(doc) == []
    doc["connections"].append(
        {"from": {"node": "r", "terminal": "spain"}, "to": {"node": "t", "terminal": "in"}}
    )
    (problem,) = validation.problems(doc)
    assert problem["pointer"] == "/connections/2/from/terminal"
    assert "spain" in problem["message"]


def test_deployed_route_sends_to_queues_by_terminal(qm, queues, group) -> None:
    src, big, rest = queues("IN"), queues("BIG"), queues("REST")
    doc = flow(
        {
            "in": ("MQInput", {"queueName": src, "messageDomain": "XMLNSC"}),
            "r": ("Route", {"filterTable": TABLE[:1], "distributionMode": "first"}),
            "b": ("MQOutput", {"queueName": big}),
            "d": ("MQOutput", {"queueName": rest}),
        },
        ["in.out -> r", "r.big -> b", "r.default -> d"],
        name="RouteDeployed",
    )
    group.deploy(doc)
    qm.put(src, ORDER)
    qm.put(src, b"<order><total>3</total></order>")
    assert [m.body for m in get_all(qm, big, 1)] == [ORDER]
    assert len(get_all(qm, rest, 1)) == 1
