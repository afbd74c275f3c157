"""Test-case files are checked field by field, and messages are compared as parsed trees."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from flowbroker.flowtests import cases
from flowbroker.flowtests.cases import CaseError, TestMessage
from flowbroker.flowtests.compare import UnparsableMessage, compare, ignored
from flowbroker.qm.protocol import Message, MessageDescriptor

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "flows"


def _flow(domain: str = "XMLNSC") -> dict[str, Any]:
    return {
        "name": "Orders",
        "nodes": [
            {
                "id": "in",
                "type": "MQInput",
                "properties": {"queueName": "ORDERS.IN", "messageDomain": domain},
            },
            {"id": "out", "type": "MQOutput", "properties": {"queueName": "ORDERS.OUT"}},
            {
                "id": "listed",
                "type": "MQOutput",
                "properties": {"queueName": "ORDERS.OUT", "destinationMode": "destinationList"},
            },
            {"id": "calc", "type": "Compute", "properties": {"esql": "RETURN TRUE;"}},
            {"id": "bare", "type": "MQInput", "properties": {}},
            {
                "id": "files",
                "type": "FileInput",
                "properties": {"directory": "orders/in", "filePattern": "*.dat"},
            },
            {"id": "outside", "type": "FileInput", "properties": {"directory": "../elsewhere"}},
            {"id": "web", "type": "HTTPInput", "properties": {"path": "/orders", "messageDomain": "JSON"}},
            {"id": "any", "type": "HTTPInput", "properties": {"path": "/orders/{id}"}},
        ],
    }


def _case(**changes: Any) -> dict[str, Any]:
    case: dict[str, Any] = {
        "name": "one order",
        "input": {"node": "in", "body": "<Order><Id>1</Id></Order>"},
        "expect": [{"node": "out", "messages": [{"body": "<Order><Id>1</Id></Order>"}]}],
    }
    case.update(changes)
    return case


def _error(data: Any, flow: dict[str, Any] | None = None) -> CaseError:
    with pytest.raises(CaseError) as caught:
        cases.parse(data, flow or _flow(), "orders.tests.json")
    return caught.value


def test_a_good_case_resolves_the_output_node_to_its_queue_and_the_domain_from_the_input() -> None:
    suite = cases.parse({"cases": [_case(ignore=["Root.MQMD.MsgId"])]}, _flow(), "f")
    (case,) = suite.cases
    assert case.input_node == "in" and case.input.domain == "XMLNSC"
    assert case.expect[0].queue == "ORDERS.OUT" and case.expect[0].node == "out"
    assert case.ignore == ("MQMD.MsgId",)


@pytest.mark.parametrize(
    ("change", "pointer", "words"),
    [
        ({"name": ""}, "/cases/0/name", "non-empty string"),
        (
            {"input": {"node": "calc", "body": "x"}},
            "/cases/0/input/node",
            "node 'calc' is a Compute, not an MQInput, FileInput or HTTPInput",
        ),
        ({"input": {"node": "nope"}}, "/cases/0/input/node", "no node 'nope'"),
        ({"input": {"node": "bare"}}, "/cases/0/input/node", "no queue name"),
        (
            {"input": {"body": "x"}},
            "/cases/0/input/node",
            "the flow has 6 input nodes (MQInput, FileInput, HTTPInput)",
        ),
        ({"input": {"node": "in", "body": 5}}, "/cases/0/input/body", "text, or a JSON object"),
        ({"input": {"node": "in", "bodyHex": "zz"}}, "/cases/0/input/bodyHex", "not valid hex"),
        ({"input": {"node": "in", "body": "a", "bodyHex": "00"}}, "/cases/0/input/bodyHex", "give one of"),
        ({"input": {"node": "in", "mqmd": {"Priority": "high"}}}, "/cases/0/input/mqmd/Priority", "integer"),
        ({"input": {"node": "in", "mqmd": {"MsgSeq": 1}}}, "/cases/0/input/mqmd/MsgSeq", "not an MQMD field"),
        (
            {"input": {"node": "in", "mqmd": {"CorrelId": "x" * 25}}},
            "/cases/0/input/mqmd/CorrelId",
            "at most 24",
        ),
        ({"input": {"node": "in", "domain": "YAML"}}, "/cases/0/input/domain", "unknown message domain"),
        ({"expect": [{"node": "calc", "messages": []}]}, "/cases/0/expect/0/node", "not an MQOutput"),
        # its queueName is not where it puts: the destination list in the message says that
        ({"expect": [{"node": "listed", "messages": []}]}, "/cases/0/expect/0/node", "not an MQOutput"),
        ({"expect": [{"messages": []}]}, "/cases/0/expect/0", "queue or node"),
        ({"expect": []}, "/cases/0/expect", "at least one"),
        (
            {"expect": [{"queue": "Q", "messages": [{"colour": 1}]}]},
            "/cases/0/expect/0/messages/0/colour",
            "unknown",
        ),
        ({"input": {"node": "files", "body": "x"}}, "/cases/0/input/file", "non-empty string"),
        ({"input": {"node": "files", "file": "a.txt"}}, "/cases/0/input/file", "file pattern '*.dat'"),
        ({"input": {"node": "files", "file": "../a.dat"}}, "/cases/0/input/file", "not a plain file name"),
        ({"input": {"node": "outside", "file": "a"}}, "/cases/0/input/node", "relative directory"),
        ({"input": {"node": "in", "file": "a.dat"}}, "/cases/0/input/file", "not a FileInput"),
        ({"input": {"node": "web", "body": {}}}, "/cases/0/reply", "required for an HTTPInput case"),
        ({"input": {"node": "web"}, "reply": {"status": 99}}, "/cases/0/reply/status", "100-599"),
        ({"input": {"node": "any"}, "reply": {"status": 200}}, "/cases/0/input/path", "give a path"),
        (
            {"input": {"node": "web", "path": "orders"}, "reply": {"status": 200}},
            "/cases/0/input/path",
            "'/'",
        ),
        (
            {"input": {"node": "web", "headers": {"X-A": "1\r\nX-B: 2"}}, "reply": {"status": 200}},
            "/cases/0/input/headers/X-A",
            "one-line",
        ),
        (
            {"input": {"node": "web", "mqmd": {}}, "reply": {"status": 200}},
            "/cases/0/input/mqmd",
            "no MQ fields",
        ),
        ({"reply": {"status": 200}}, "/cases/0/reply", "not an HTTPInput"),
        ({"ignore": ["MQMD..MsgId"]}, "/cases/0/ignore/0", "not a tree path"),
        ({"ignore": "MQMD.MsgId"}, "/cases/0/ignore", "a list"),
    ],
)
def test_a_malformed_case_is_named_by_its_field(change: dict[str, Any], pointer: str, words: str) -> None:
    problem = _error({"cases": [_case(**change)]})
    assert problem.pointer == pointer and words in problem.message
    assert str(problem).startswith(f"orders.tests.json: {pointer}: ")


def test_file_and_http_inputs_resolve_their_request_and_reply() -> None:
    file_case = _case(input={"node": "files", "file": "monday.dat", "body": "A1"})
    http_case = _case(
        name="lookup",
        input={"node": "web", "body": {"id": 7}, "headers": {"X-Client": "t"}},
        reply={"status": 404, "body": {"error": "none"}, "headers": {"Content-Type": "application/json"}},
        expect=[],
    )
    suite = cases.parse({"cases": [file_case, http_case]}, _flow(), "f")
    by_file, by_http = suite.cases
    assert (by_file.input_file, by_file.input.body, by_file.request) == ("monday.dat", b"A1", None)
    assert by_http.request == cases.HTTPCall("POST", "/orders", (("X-Client", "t"),))
    assert by_http.input.domain == "JSON" and json.loads(by_http.input.body) == {"id": 7}
    assert by_http.reply is not None and by_http.reply.status == 404
    assert by_http.reply.message is not None and by_http.reply.message.domain == "JSON"


def test_a_message_set_copybook_is_read_beside_the_test_file_only(tmp_path: Path) -> None:
    (tmp_path / "sets").mkdir()
    (tmp_path / "sets" / "REC.cpy").write_text("       01  REC.\n           05  A  PIC X(2).\n")
    good = {"cases": [_case()], "setup": {"messageSets": {"RECS": {"copybook": "sets/REC.cpy"}}}}
    tests = tmp_path / "orders.tests.json"
    tests.write_text(json.dumps(good))
    (message_set,) = cases.load_file(tests, _flow()).message_sets
    assert message_set.name == "RECS" and message_set.copybook == tmp_path / "sets" / "REC.cpy"
    assert _error(good).pointer == "/setup/messageSets/RECS/copybook"  # no test file: no base directory
    tests.write_text(json.dumps({**good, "setup": {"messageSets": {"RECS": {"copybook": "nope.cpy"}}}}))
    with pytest.raises(CaseError) as caught:
        cases.load_file(tests, _flow())
    assert "no file 'nope.cpy'" in caught.value.message


def test_file_level_problems_name_the_file_and_line(tmp_path: Path) -> None:
    broken = tmp_path / "orders.tests.json"
    broken.write_text('{"cases": [\n  {"name": "x",}\n]}')
    with pytest.raises(CaseError) as caught:
        cases.load_file(broken, _flow())
    assert caught.value.source == str(broken) and "line 2" in caught.value.message
    assert _error({"flow": "Other", "cases": []}).pointer == "/flow"
    assert _error({"cases": [_case(), _case()]}).pointer == "/cases/1/name"
    assert _error({"cases": [], "setup": {"dataSources": {"DB": {"statements": [""]}}}}).pointer == (
        "/setup/dataSources/DB/statements/0"
    )


def test_every_example_flow_has_a_test_file_that_parses() -> None:
    flows = sorted(p for p in EXAMPLES.glob("*.json") if not p.name.endswith(".tests.json"))
    assert flows
    for flow_file in flows:
        document = json.loads(flow_file.read_text())
        suite = cases.load_file(cases.tests_file(flow_file), document)
        assert suite.cases, flow_file


def _out(body: bytes, **md: Any) -> tuple[MessageDescriptor, bytes]:
    return MessageDescriptor(**md), body


def test_trees_compare_equal_across_layout_and_name_each_difference_by_path() -> None:
    expected = TestMessage(
        b'<Order>\n  <Id>1</Id>\n  <Item sku="a">2</Item>\n  <Item sku="b">3</Item>\n</Order>',
        domain="XMLNSC",
    )
    same = b'<Order><Id>1</Id><Item sku="a">2</Item><Item sku="b">3</Item></Order>'
    assert compare(expected, *_out(same), ()) == []
    changed = b'<Order><Id>1</Id><Item sku="a">2</Item><Item sku="c">4</Item><Note/></Order>'
    found = [d.describe() for d in compare(expected, *_out(changed), ())]
    assert found == [
        "XMLNSC.Order.Item[2]: expected '3', got '4'",
        "XMLNSC.Order.Item[2].sku: expected 'b', got 'c'",
        "XMLNSC.Order.Note: not expected (got '')",
    ]
    assert compare(expected, *_out(changed), ("XMLNSC.Order.Item[2]", "XMLNSC.Order.Note")) == []


def test_json_and_mqmd_fields_named_by_the_expectation_are_compared() -> None:
    expected = TestMessage(b'{"a": 1, "b": [true, "x"]}', mqmd={"Priority": 5}, domain="JSON")
    assert compare(expected, *_out(b'{ "b": [true, "x"], "a": 1 }', priority=5), ()) == []
    found = compare(expected, *_out(b'{"a": 2, "b": [true, "x"]}', priority=1), ())
    assert [(d.path, d.expected, d.actual) for d in found] == [
        ("MQMD.Priority", "5", "1"),
        ("JSON.Data.a", "1", "2"),
    ]


def test_an_output_that_does_not_parse_says_so_with_the_parser_error() -> None:
    with pytest.raises(UnparsableMessage) as caught:
        compare(TestMessage(b"<a/>", domain="XMLNSC"), *_out(b"<a><b></a>"), ())
    assert "the output message does not parse as XMLNSC" in str(caught.value)


def test_ignore_patterns_cover_subtrees_names_and_indexes() -> None:
    assert ignored("MQMD.MsgId", ["MQMD.MsgId"])
    assert ignored("XMLNSC.Order.Item[2].Price", ["XMLNSC.Order.Item"])
    assert ignored("XMLNSC.Order.Item[2].Price", ["XMLNSC.*.Item[*].Price"])
    assert not ignored("XMLNSC.Order.Item[2].Price", ["XMLNSC.Order.Item[1]"])
    assert not ignored("MQMD.CorrelId", ["MQMD.MsgId"])


def test_a_case_made_from_messages_seen_runs_as_a_case() -> None:
    sent = Message(MessageDescriptor(format="MQSTR", priority=3), {}, b"<Order><Id>1</Id></Order>")
    out = Message(
        MessageDescriptor(format="MQSTR", msg_id=b"x" * 24), {"k": "v"}, b"<Order><Id>2</Id></Order>"
    )
    made = cases.case_from_messages(
        "seen", sent, {"ORDERS.OUT": [out]}, input_node="in", ignore=["MQMD.CorrelId"]
    )
    assert made["input"] == {
        "mqmd": {"Format": "MQSTR", "Priority": 3},
        "body": "<Order><Id>1</Id></Order>",
        "node": "in",
    }
    (case,) = cases.parse([made], _flow(), "made").cases
    (wanted,) = case.expect[0].messages
    assert "MsgId" not in wanted.mqmd and wanted.properties == {"k": "v"}
    assert compare(wanted, out.md, out.body, case.ignore, out.properties) == []
    other = compare(wanted, out.md, b"<Order><Id>3</Id></Order>", case.ignore, {})
    assert [d.path for d in other] == ["XMLNSC.Order.Id", "(properties).k"]


def test_an_attribute_is_not_an_element_of_the_same_value() -> None:
    differences = compare(TestMessage(b'<a x="1"/>', domain="XMLNSC"), *_out(b"<a><x>1</x></a>"), ())
    (found,) = [d for d in differences if d.path == "XMLNSC.a.x"]
    assert found.path == "XMLNSC.a.x" and found.expected != found.actual
    assert found.expected is not None and found.expected.startswith("field type 0x")


def _outputs_flow() -> dict[str, Any]:
    """A flow with a FileOutput, and an inline subflow holding an MQOutput and a FileOutput."""
    inner = {
        "name": "Inner",
        "nodes": [
            {"id": "i", "type": "Input", "properties": {"terminalName": "in"}},
            {"id": "out", "type": "MQOutput", "properties": {"queueName": "SUB.OUT"}},
            {"id": "fo", "type": "FileOutput", "properties": {"directory": "sub/out", "fileName": "a.xml"}},
        ],
    }
    flow = _flow()
    flow["nodes"] += [
        {"id": "fo", "type": "FileOutput", "properties": {"directory": "orders/out", "fileName": "*"}},
        {"id": "abs", "type": "FileOutput", "properties": {"directory": "/var/out", "fileName": "x"}},
        {"id": "s", "type": "Subflow", "properties": {"flow": inner}},
        {"id": "named", "type": "Subflow", "properties": {"flow": {"name": "Elsewhere"}}},
    ]
    return flow


def test_outputs_inside_a_subflow_and_files_of_a_file_output_are_expectations() -> None:
    case = _case(
        expect=[
            {"node": "s/out", "messages": [{"body": "<a/>"}]},
            {"node": "s/fo", "files": [{"name": "a.xml", "body": "<a/>", "domain": "XMLNSC"}]},
            {"node": "fo", "files": [{"name": "order-*.dat", "bodyHex": "0102"}]},
        ]
    )
    (parsed,) = cases.parse({"cases": [case]}, _outputs_flow(), "f").cases
    sub_queue, sub_file, top_file = parsed.expect
    assert (sub_queue.queue, sub_queue.node, sub_queue.writes_files) == ("SUB.OUT", "s/out", False)
    assert (sub_file.directory, sub_file.node) == ("sub/out", "s/fo")
    assert sub_file.files[0].name == "a.xml" and sub_file.files[0].content.domain == "XMLNSC"
    assert top_file.files[0].content.body == b"\x01\x02" and top_file.directory == "orders/out"


@pytest.mark.parametrize(
    ("expect", "pointer", "words"),
    [
        ({"node": "s/nope", "messages": []}, "/cases/0/expect/0/node", "the flow has no node 's/nope'"),
        (
            {"node": "named/out", "messages": []},
            "/cases/0/expect/0/node",
            "no node 'named/out' (its subflow is the saved flow 'Elsewhere'; "
            "a flow test looks only into subflows inline in the flow)",
        ),
        ({"node": "fo", "messages": []}, "/cases/0/expect/0/messages", "is a FileOutput: give the files"),
        ({"node": "fo", "queue": "Q", "files": []}, "/cases/0/expect/0/queue", "is a FileOutput"),
        ({"node": "fo"}, "/cases/0/expect/0/files", "required: a list"),
        ({"node": "fo", "files": {}}, "/cases/0/expect/0/files", "required: a list"),
        ({"node": "fo", "files": ["x"]}, "/cases/0/expect/0/files/0", "must be an object"),
        ({"node": "fo", "files": [{"body": "x"}]}, "/cases/0/expect/0/files/0/name", "non-empty string"),
        (
            {"node": "fo", "files": [{"name": "../etc/passwd", "body": "x"}]},
            "/cases/0/expect/0/files/0/name",
            "not a plain file name or pattern",
        ),
        (
            {"node": "fo", "files": [{"name": ".hidden", "body": "x"}]},
            "/cases/0/expect/0/files/0/name",
            "not hidden",
        ),
        (
            {"node": "fo", "files": [{"name": "a", "mqmd": {}}]},
            "/cases/0/expect/0/files/0/mqmd",
            "unknown field",
        ),
        (
            {"node": "fo", "files": [{"name": "a", "bodyHex": "zz"}]},
            "/cases/0/expect/0/files/0/bodyHex",
            "not valid hex",
        ),
        (
            {"node": "fo", "files": [{"name": "a", "body": "x", "domain": "NOPE"}]},
            "/cases/0/expect/0/files/0/domain",
            "unknown message domain 'NOPE'",
        ),
        (
            {"node": "abs", "files": []},
            "/cases/0/expect/0/node",
            "a test reads files only from a relative directory",
        ),
        ({"node": "out", "messages": [], "files": []}, "/cases/0/expect/0/files", "only a FileOutput"),
    ],
)
def test_a_malformed_output_expectation_is_refused_naming_the_field(
    expect: dict[str, Any], pointer: str, words: str
) -> None:
    error = _error({"cases": [_case(expect=[expect])]}, _outputs_flow())
    assert error.pointer == pointer
    assert words in error.message


def test_one_file_output_named_twice_is_refused_at_the_second() -> None:
    twice = [{"node": "fo", "files": []}, {"node": "fo", "files": []}]
    error = _error({"cases": [_case(expect=twice)]}, _outputs_flow())
    assert error.pointer == "/cases/0/expect/1/node"
    assert "named twice" in error.message


def test_a_named_subflow_is_looked_into_when_a_resolver_finds_it() -> None:
    inner = {
        "name": "Elsewhere",
        "nodes": [{"id": "o", "type": "MQOutput", "properties": {"queueName": "E"}}],
    }
    case = _case(expect=[{"node": "named/o", "messages": []}])
    found = cases.parse(
        [case], _outputs_flow(), "f", resolve=lambda ref: inner if ref["name"] == "Elsewhere" else None
    )
    assert found.cases[0].expect[0].queue == "E"
