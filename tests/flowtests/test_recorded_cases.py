"""Cases made from recordings in a real execution group, replayed by the test engine.

The engine `flowbroker test` starts is the group here: a flow is deployed to it, one message is
recorded as an operator records one (through the recordings service), the recording becomes a
case (the service the designer calls), and the engine runs the case against the flow as recorded
and as changed afterwards. Inputs from a queue (with its message properties), a file and an HTTP
request are covered, and outputs per node where two nodes put to one queue, an output node inside
a subflow, and the files a FileOutput node writes.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest
from flowbroker.flowtests import cases
from flowbroker.flowtests.engine import TestEngine
from flowbroker.qm.protocol import MessageDescriptor
from flowbroker.runtime.harness import flow
from flowbroker.services import recorded_cases, recordings
from flowbroker.services.errors import Invalid

pytestmark = pytest.mark.timeout(240)


@pytest.fixture(scope="module")
def engine() -> Iterator[TestEngine]:
    with TestEngine() as running:
        yield running


def _compute(module: str, statement: str) -> dict[str, Any]:
    esql = (
        f"CREATE COMPUTE MODULE {module}\n  CREATE FUNCTION Main() RETURNS BOOLEAN\n  BEGIN\n"
        f"    SET OutputRoot = InputRoot;\n    {statement}\n    RETURN TRUE;\n  END;\nEND MODULE;\n"
    )
    return {"esql": esql}


def _record(
    engine: TestEngine,
    document: dict[str, Any],
    drive: Callable[[], None],
    ignore: list[str] | None = None,
) -> dict[str, Any]:
    """Deploy ``document``, record the one message ``drive`` sends, make a case of it, undeploy."""
    deployment_id = engine._deploy(document)
    try:
        with engine._session() as session:
            started = recordings.start(
                session, "tester", deployment_id, engine.settings, max_messages=1, seconds=60
            )
            from flowbroker.services import deploy

            where = recordings.directory(engine.data, deploy.get(session, deployment_id))
        deadline = time.monotonic() + 30
        while recordings.describe(where, started["id"])["status"] == "requested":
            assert time.monotonic() < deadline, "the group did not start the recording"
            time.sleep(0.05)
        drive()
        while recordings.describe(where, started["id"])["status"] == "recording":
            assert time.monotonic() < deadline, "the recording did not complete"
            time.sleep(0.05)
        with engine._session() as session:
            _, case = recorded_cases.create(
                session,
                "tester",
                deployment_id,
                started["id"],
                engine.settings,
                name="recorded",
                ignore=ignore,
            )
    finally:
        engine._undeploy(deployment_id)
    return case


def _run(engine: TestEngine, document: dict[str, Any], case: dict[str, Any]) -> list[str]:
    """Run ``case`` against ``document``: the lines of what went wrong (none: it passed)."""
    suite = cases.parse({"cases": [case]}, document, "recorded")
    (result,) = engine.run_suite(document, suite)
    lines = result.report_lines()
    assert result.passed == (not lines)
    return lines


def test_a_queue_message_with_properties_replays_and_each_output_node_has_its_own_messages(
    engine: TestEngine,
) -> None:
    document = flow(
        {
            "in": ("MQInput", {"queueName": "REC.Q.IN", "messageDomain": "XMLNSC"}),
            "a": (
                "Compute",
                _compute("Twice", "SET OutputRoot.XMLNSC.order.qty = InputRoot.XMLNSC.order.qty * 2;"),
            ),
            "b": (
                "Compute",
                _compute("More", "SET OutputRoot.XMLNSC.order.qty = InputRoot.XMLNSC.order.qty + 100;"),
            ),
            "outA": ("MQOutput", {"queueName": "REC.Q.OUT"}),
            "outB": ("MQOutput", {"queueName": "REC.Q.OUT"}),
        },
        ["in.out -> a", "in.out -> b", "a.out -> outA", "b.out -> outB"],
        name="RecordedQueue",
    )

    def drive() -> None:
        with engine.qm.client() as qm:
            qm.put(
                "REC.Q.IN",
                b"<order><qty>3</qty></order>",
                MessageDescriptor(format="MQSTR   ", priority=7),
                properties={"channel": "web", "retries": 2},
            )

    case = _record(engine, document, drive)
    assert case["input"]["node"] == "in"
    assert case["input"]["properties"] == {"channel": "web", "retries": 2}
    assert case["input"]["mqmd"]["Priority"] == 7
    assert [e["node"] for e in case["expect"]] == ["outA", "outB"]
    (to_a,), (to_b,) = (e["messages"] for e in case["expect"])
    assert "<qty>6</qty>" in to_a["body"] and "<qty>103</qty>" in to_b["body"]
    assert to_a["properties"] == {"channel": "web", "retries": 2}

    assert _run(engine, document, case) == []

    # the messages of both nodes arrive on one queue: a wrong one is named by the node it was expected from
    changed = copy.deepcopy(document)
    b = next(n for n in changed["nodes"] if n["id"] == "b")
    b["properties"] = _compute("More", "SET OutputRoot.XMLNSC.order.qty = InputRoot.XMLNSC.order.qty + 1;")
    assert _run(engine, changed, case) == [
        "node outB (queue REC.Q.OUT) message 1: XMLNSC.order.qty: expected '103', got '4'"
    ]

    # the input's properties are replayed and the outputs' compared; they can be ignored
    other = copy.deepcopy(case)
    other["input"]["properties"]["channel"] = "phone"
    assert _run(engine, document, other) == [
        "node outA (queue REC.Q.OUT) message 1: (properties).channel: expected 'web', got 'phone'",
        "node outB (queue REC.Q.OUT) message 1: (properties).channel: expected 'web', got 'phone'",
    ]
    other["ignore"].append("(properties).channel")
    assert _run(engine, document, other) == []


def test_a_recorded_file_becomes_a_case_whose_file_is_written_again(engine: TestEngine) -> None:
    document = flow(
        {
            "in": (
                "FileInput",
                {"directory": "recorded/orders", "filePattern": "*.xml", "messageDomain": "XMLNSC"},
            ),
            "c": ("Compute", _compute("Stamp", "SET OutputRoot.XMLNSC.order.seen = 'yes';")),
            "out": ("MQOutput", {"queueName": "REC.FILE.OUT"}),
        },
        ["in.out -> c", "c.out -> out"],
        name="RecordedFile",
    )

    def drive() -> None:
        engine._write_file("recorded/orders", "order-17.xml", b"<order><id>17</id></order>")

    case = _record(engine, document, drive)
    assert case["input"]["file"] == "order-17.xml"
    assert "<id>17</id>" in case["input"]["body"]
    assert "mqmd" not in case["input"] and "properties" not in case["input"]
    ((expected,),) = (e["messages"] for e in case["expect"])
    assert "<seen>yes</seen>" in expected["body"]

    assert _run(engine, document, case) == []
    changed = copy.deepcopy(document)
    c = next(n for n in changed["nodes"] if n["id"] == "c")
    c["properties"] = _compute("Stamp", "SET OutputRoot.XMLNSC.order.seen = 'no';")
    assert _run(engine, changed, case) == [
        "node out (queue REC.FILE.OUT) message 1: XMLNSC.order.seen: expected 'yes', got 'no'"
    ]


def test_a_recorded_http_request_becomes_a_case_that_sends_it_and_expects_the_reply(
    engine: TestEngine,
) -> None:
    document = flow(
        {
            "in": ("HTTPInput", {"path": "/recorded/price", "messageDomain": "JSON"}),
            "c": (
                "Compute",
                {
                    **_compute(
                        "Price",
                        "SET OutputRoot.JSON.Data.total = InputRoot.JSON.Data.qty * 5;\n"
                        '    SET OutputRoot.HTTPReplyHeader."X-Priced-By" = InputRoot.HTTPInputHeader."X-Channel";\n'
                        "    SET OutputLocalEnvironment = InputLocalEnvironment;\n"
                        "    SET OutputLocalEnvironment.Destination.HTTP.ReplyStatusCode = 201;",
                    ),
                    "computeMode": "LocalEnvironmentAndMessage",
                },
            ),
            "reply": ("HTTPReply", {}),
        },
        ["in.out -> c", "c.out -> reply"],
        name="RecordedHttp",
    )

    def drive() -> None:
        answer = httpx.post(
            f"http://127.0.0.1:{engine.http_port}/recorded/price?rush=1",
            content=b'{"qty": 4}',
            headers={"Content-Type": "application/json", "X-Channel": "web"},
            timeout=30,
        )
        assert answer.status_code == 201, answer.text

    case = _record(engine, document, drive)
    assert case["input"]["method"] == "POST"
    assert case["input"]["path"] == "/recorded/price?rush=1"
    assert case["input"]["headers"]["X-Channel"] == "web"
    assert "Host" not in case["input"]["headers"] and "mqmd" not in case["input"]
    assert case["expect"] == []
    assert case["reply"]["status"] == 201
    assert case["reply"]["headers"] == {"X-Priced-By": "web"}
    assert '"total": 20' in case["reply"]["body"]

    assert _run(engine, document, case) == []
    changed = copy.deepcopy(document)
    c = next(n for n in changed["nodes"] if n["id"] == "c")
    c["properties"]["esql"] = c["properties"]["esql"].replace("* 5", "* 6")
    assert _run(engine, changed, case) == ["HTTP reply message 1: JSON.Data.total: expected '20', got '24'"]


def test_a_recording_without_the_answer_or_the_file_name_is_refused_with_the_reason() -> None:
    document = flow(
        {
            "in": ("HTTPInput", {"path": "/x", "messageDomain": "JSON"}),
            "out": ("MQOutput", {"queueName": "X.OUT"}),
        },
        ["in.out -> out"],
        name="NoReply",
    )
    view = {"trees": [], "body": {"format": "json", "text": "{}", "domain": "JSON"}, "truncated": False}
    entries = [{"message": 1, "connection": "in.out->out.in", "from": {"node": "in"}, "to": {"node": "out"}}]
    with pytest.raises(Invalid, match="reached no HTTPReply node"):
        recorded_cases.case_from_recording("x", document, entries, lambda entry: view)
    file_flow = flow(
        {
            "in": ("FileInput", {"directory": "in", "messageDomain": "JSON"}),
            "out": ("MQOutput", {"queueName": "X.OUT"}),
        },
        ["in.out -> out"],
        name="NoName",
    )
    with pytest.raises(Invalid, match=r"no LocalEnvironment\.File\.Name"):
        recorded_cases.case_from_recording("x", file_flow, entries, lambda entry: view)


def test_an_output_node_inside_a_subflow_is_expected_by_its_canvas_name(engine: TestEngine) -> None:
    inner = flow(
        {
            "i": ("Input", {"terminalName": "in"}),
            "c": (
                "Compute",
                _compute("SubTwice", "SET OutputRoot.XMLNSC.order.qty = InputRoot.XMLNSC.order.qty * 2;"),
            ),
            "out": ("MQOutput", {"queueName": "REC.SUB.OUT"}),
        },
        ["i.out -> c", "c.out -> out"],
        name="Doubler",
    )
    document = flow(
        {
            "in": ("MQInput", {"queueName": "REC.SUB.IN", "messageDomain": "XMLNSC"}),
            "s": ("Subflow", {"flow": inner}),
            "top": ("MQOutput", {"queueName": "REC.SUB.TOP"}),
        },
        ["in.out -> s.in", "in.out -> top"],
        name="RecordedSubflow",
    )

    def drive() -> None:
        with engine.qm.client() as qm:
            qm.put("REC.SUB.IN", b"<order><qty>3</qty></order>", MessageDescriptor(format="MQSTR   "))

    case = _record(engine, document, drive)
    assert [e["node"] for e in case["expect"]] == ["s/out", "top"]
    assert "<qty>6</qty>" in case["expect"][0]["messages"][0]["body"]

    assert _run(engine, document, case) == []
    changed = copy.deepcopy(document)
    sub = next(n for n in changed["nodes"] if n["id"] == "s")
    c = next(n for n in sub["properties"]["flow"]["nodes"] if n["id"] == "c")
    c["properties"]["esql"] = c["properties"]["esql"].replace("* 2", "+ 4")
    assert _run(engine, changed, case) == [
        "node s/out (queue REC.SUB.OUT) message 1: XMLNSC.order.qty: expected '6', got '7'"
    ]


def test_a_file_output_s_file_is_expected_by_name_and_content_with_ignorable_parts(
    engine: TestEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    document = flow(
        {
            "in": (
                "FileInput",
                {
                    "directory": "recorded/filein",
                    "filePattern": "*.xml",
                    "messageDomain": "XMLNSC",
                    "pollingInterval": 200,
                },
            ),
            "c": (
                "Compute",
                _compute(
                    "StampFile",
                    "SET OutputRoot.XMLNSC.order.seen = 'yes';\n"
                    "    SET OutputRoot.XMLNSC.order.stamp = CAST(CURRENT_TIMESTAMP AS CHARACTER);",
                ),
            ),
            "fo": ("FileOutput", {"directory": "recorded/fileout", "fileName": "*.out"}),
        },
        ["in.out -> c", "c.out -> fo"],
        name="RecordedFileOut",
    )

    def drive() -> None:
        engine._write_file("recorded/filein", "order-9.xml", b"<order><id>9</id></order>")

    case = _record(engine, document, drive, ignore=["XMLNSC.order.stamp"])
    ((written,),) = (e["files"] for e in case["expect"])
    assert case["expect"][0]["node"] == "fo"
    assert written["name"] == "order-9.out" and written["domain"] == "XMLNSC"
    assert "<seen>yes</seen>" in written["body"] and "<id>9</id>" in written["body"]

    # the time stamp differs on every run: ignored, the file compares equal
    assert _run(engine, document, case) == []
    strict = copy.deepcopy(case)
    strict["ignore"].remove("XMLNSC.order.stamp")
    (line,) = _run(engine, document, strict)
    assert line.startswith("node fo file order-9.out: XMLNSC.order.stamp: expected ")

    changed = copy.deepcopy(document)
    c = next(n for n in changed["nodes"] if n["id"] == "c")
    c["properties"]["esql"] = c["properties"]["esql"].replace("'yes'", "'no'")
    assert _run(engine, changed, case) == [
        "node fo file order-9.out: XMLNSC.order.seen: expected 'yes', got 'no'"
    ]

    # a file under another name: the expected one is missing, the written one not expected
    monkeypatch.setenv("FLOWBROKER_TEST_CASE_TIMEOUT", "2")
    renamed = copy.deepcopy(document)
    fo = next(n for n in renamed["nodes"] if n["id"] == "fo")
    fo["properties"]["fileName"] = "*.txt"
    assert _run(engine, renamed, case) == [
        "node fo file order-9.txt: written, but no expected file names it",
        "node fo file order-9.out: no file was written within 2s",
    ]

    # a file too big to compare is reported, not read
    from flowbroker.flowtests import engine as engine_module

    monkeypatch.setattr(engine_module, "MAX_FILE_BYTES", 10)
    (line,) = _run(engine, document, case)
    assert line.startswith("node fo file order-9.out: the file is ") and line.endswith("at most 10")


def test_records_appended_to_a_file_are_expected_as_the_file_the_finish_terminal_completes() -> None:
    from flowbroker.runtime.message_view import hex_dump

    document = flow(
        {
            "in": ("MQInput", {"queueName": "APPEND.IN"}),
            "fo": (
                "FileOutput",
                {"directory": "batch", "fileName": "day.dat", "recordDefinition": "unmodifiedData"},
            ),
        },
        ["in.out -> fo", "in.out -> fo.finish"],
        name="Appender",
    )

    def view(data: bytes) -> dict[str, Any]:
        text = hex_dump(data)
        return {"trees": [], "body": {"format": "hex", "text": text, "domain": "BLOB"}, "truncated": False}

    def entry(terminal: str, data: bytes) -> dict[str, Any]:
        return {
            "message": 1,
            "connection": f"in.out->fo.{terminal}",
            "from": {"node": "in", "terminal": "out"},
            "to": {"node": "fo", "terminal": terminal},
            "data": data,
        }

    entries = [entry("in", b"first\n"), entry("in", b"second\n"), entry("finish", b"")]
    case = recorded_cases.case_from_recording("x", document, entries, lambda e: view(e["data"]))
    assert case["expect"] == [
        {"node": "fo", "files": [{"name": "day.dat", "bodyHex": b"first\nsecond\n".hex(), "domain": "BLOB"}]}
    ]
    # without the finish the file was never put in place: nothing is expected of the node
    unfinished = recorded_cases.case_from_recording("x", document, entries[:2], lambda e: view(e["data"]))
    assert unfinished["expect"] == [{"node": "fo", "files": []}]


def test_a_file_written_to_a_directory_the_message_names_is_refused_with_the_reason() -> None:
    document = flow(
        {
            "in": ("MQInput", {"queueName": "ELSEWHERE.IN"}),
            "fo": ("FileOutput", {"directory": "out", "fileName": "a.dat"}),
        },
        ["in.out -> fo"],
        name="Elsewhere",
    )
    local = {
        "name": "LocalEnvironment",
        "children": [
            {
                "name": "Destination",
                "children": [{"name": "File", "children": [{"name": "Directory", "value": "/srv/x"}]}],
            }
        ],
    }
    view = {"trees": [local], "body": {"format": "hex", "text": "", "domain": "BLOB"}, "truncated": False}
    entries = [
        {
            "message": 1,
            "connection": "in.out->fo.in",
            "from": {"node": "in", "terminal": "out"},
            "to": {"node": "fo", "terminal": "in"},
        }
    ]
    with pytest.raises(Invalid, match=r"names its own directory '/srv/x'"):
        recorded_cases.case_from_recording("x", document, entries, lambda entry: view)
