"""`flowbroker test` starts its own engine, runs each flow's cases, reports a diff and writes JUnit XML."""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.timeout(180)


def _flow(name: str, queue: str, esql: str) -> dict[str, Any]:
    return {
        "name": name,
        "nodes": [
            {
                "id": "in",
                "type": "MQInput",
                "properties": {"queueName": f"{queue}.IN", "messageDomain": "XMLNSC"},
            },
            {"id": "calc", "type": "Compute", "properties": {"esql": esql}},
            {"id": "out", "type": "MQOutput", "properties": {"queueName": f"{queue}.OUT"}},
        ],
        "connections": [
            {"from": {"node": "in", "terminal": "out"}, "to": {"node": "calc", "terminal": "in"}},
            {"from": {"node": "calc", "terminal": "out"}, "to": {"node": "out", "terminal": "in"}},
        ],
    }


PRICE = "SET OutputRoot = InputRoot;\nSET OutputRoot.XMLNSC.Order.Total = InputRoot.XMLNSC.Order.Qty * 3;\n"
TESTS = {
    "cases": [
        {
            "name": "the total is three per item",
            "input": {"body": "<Order><Qty>4</Qty></Order>", "mqmd": {"Format": "MQSTR"}},
            "expect": [
                {
                    "node": "out",
                    "messages": [
                        {
                            "body": "<Order>\n  <Qty>4</Qty>\n  <Total>12</Total>\n</Order>",
                            "mqmd": {"Format": "MQSTR"},
                        }
                    ],
                }
            ],
            "ignore": ["MQMD.MsgId"],
        }
    ]
}


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "flowbroker.cli", "test", *args], capture_output=True, text=True, timeout=170
    )


def test_a_passing_flow_and_a_changed_one_on_one_engine(tmp_path: Path) -> None:
    queue = f"FT{uuid.uuid4().hex[:8].upper()}"
    (tmp_path / "pricing.json").write_text(json.dumps(_flow("Pricing", queue, PRICE)))
    (tmp_path / "pricing.tests.json").write_text(json.dumps(TESTS))
    # the same tests against the flow after someone changed its price
    changed = _flow("PricingChanged", f"{queue}X", PRICE.replace("* 3", "* 4"))
    (tmp_path / "pricing_changed.json").write_text(json.dumps({**changed, "tests": TESTS["cases"]}))
    (tmp_path / "untested.json").write_text(json.dumps(_flow("Untested", f"{queue}U", PRICE)))
    junit = tmp_path / "results.xml"

    run = _run(str(tmp_path), "--junit", str(junit))

    assert run.returncode == 1, run.stdout + run.stderr
    assert "Traceback" not in run.stderr
    lines = run.stdout.splitlines()
    assert any(line.startswith("PASS ") and "pricing.json" in line for line in lines), run.stdout
    assert any(line.startswith("FAIL ") and "pricing_changed.json" in line for line in lines), run.stdout
    assert (
        f"    node out (queue {queue}X.OUT) message 1: XMLNSC.Order.Total: expected '12', got '16'" in lines
    )
    assert any(line.endswith("untested.json: no tests") for line in lines)
    assert "1 passed, 1 failed, 2 flows" in run.stdout
    report = ET.parse(junit).getroot()
    assert (report.get("tests"), report.get("failures"), report.get("errors")) == ("2", "1", "0")
    failed = report.find("testsuite[@name='PricingChanged']/testcase/failure")
    assert failed is not None and "expected '12', got '16'" in (failed.text or "")
    assert report.find("testsuite[@name='Pricing']/testcase/failure") is None


def test_a_flow_that_does_not_deploy_is_an_error_of_each_case(tmp_path: Path) -> None:
    flow = _flow("Unstartable", "FTBAD", PRICE)
    flow["nodes"][1]["properties"]["esql"] = "SET OutputRoot = ;"
    (tmp_path / "bad.json").write_text(json.dumps({**flow, "tests": TESTS["cases"]}))
    run = _run(str(tmp_path / "bad.json"), "--junit", str(tmp_path / "r.xml"))
    assert run.returncode == 1 and "Traceback" not in run.stderr
    assert "ERROR " in run.stdout and "the flow was refused" in run.stdout, run.stdout
    assert ET.parse(tmp_path / "r.xml").getroot().get("errors") == "1"


def test_a_malformed_test_file_is_one_line_naming_file_and_field(tmp_path: Path) -> None:
    (tmp_path / "pricing.json").write_text(json.dumps(_flow("Pricing", "FTMAL", PRICE)))
    broken = json.loads(json.dumps(TESTS))
    broken["cases"][0]["expect"][0]["node"] = "calc"
    (tmp_path / "pricing.tests.json").write_text(json.dumps(broken))
    run = _run(str(tmp_path))
    assert run.returncode == 1 and run.stdout == ""
    assert run.stderr.strip() == (
        f"flowbroker: error: {tmp_path / 'pricing.tests.json'}: /cases/0/expect/0/node: "
        "node 'calc' is not an MQOutput node with a queue name, nor a FileOutput"
    )


EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "flows"


def test_file_and_http_inputs_are_driven_and_a_changed_reply_is_a_named_failure(tmp_path: Path) -> None:
    import shutil

    for name in ("file_order_batch.json", "file_order_batch.tests.json", "http_customer_lookup.json"):
        shutil.copy(EXAMPLES / name, tmp_path / name)
    shutil.copytree(EXAMPLES / "msgsets", tmp_path / "msgsets")
    http_tests = json.loads((EXAMPLES / "http_customer_lookup.tests.json").read_text())
    unknown = next(case for case in http_tests["cases"] if "unknown customer" in case["name"])
    unknown["reply"]["status"] = 200  # as if the service answered a missing customer with 200
    (tmp_path / "http_customer_lookup.tests.json").write_text(json.dumps(http_tests))

    run = _run(str(tmp_path))

    assert run.returncode == 1, run.stdout + run.stderr
    assert "Traceback" not in run.stderr
    lines = run.stdout.splitlines()
    assert "    HTTP reply message 1: HTTP.StatusCode: expected '200', got '404'" in lines, run.stdout
    passed = [line for line in lines if line.startswith("PASS ")]
    assert sum("file_order_batch.json" in line for line in passed) == 2, run.stdout
    assert sum("http_customer_lookup.json" in line for line in passed) == len(http_tests["cases"]) - 1
    assert f"{len(http_tests['cases']) + 1} passed, 1 failed, 2 flows" in run.stdout
    # the batch files were written below the engine's own file root, none into the examples
    assert not (EXAMPLES / "orders").exists()


def _archiver(name: str, queue: str, esql: str) -> dict[str, Any]:
    """A flow whose subflow computes, puts the result to a queue and writes it as a file."""
    inner = {
        "name": "PriceAndArchive",
        "nodes": [
            {"id": "i", "type": "Input", "properties": {"terminalName": "in"}},
            {"id": "calc", "type": "Compute", "properties": {"esql": esql}},
            {"id": "out", "type": "MQOutput", "properties": {"queueName": f"{queue}.OUT"}},
            {
                "id": "fo",
                "type": "FileOutput",
                "properties": {"directory": f"{queue}/out", "fileName": "order.xml"},
            },
        ],
        "connections": [
            {"from": {"node": "i", "terminal": "out"}, "to": {"node": "calc", "terminal": "in"}},
            {"from": {"node": "calc", "terminal": "out"}, "to": {"node": "out", "terminal": "in"}},
            {"from": {"node": "calc", "terminal": "out"}, "to": {"node": "fo", "terminal": "in"}},
        ],
    }
    return {
        "name": name,
        "nodes": [
            {
                "id": "in",
                "type": "MQInput",
                "properties": {"queueName": f"{queue}.IN", "messageDomain": "XMLNSC"},
            },
            {"id": "s", "type": "Subflow", "properties": {"flow": inner}},
        ],
        "connections": [{"from": {"node": "in", "terminal": "out"}, "to": {"node": "s", "terminal": "in"}}],
    }


ARCHIVED = "<Order><Qty>4</Qty><Total>12</Total></Order>"
ARCHIVE_TESTS = [
    {
        "name": "the priced order is put and archived",
        "input": {"body": "<Order><Qty>4</Qty></Order>"},
        "expect": [
            {"node": "s/out", "messages": [{"body": ARCHIVED}]},
            {"node": "s/fo", "files": [{"name": "order.xml", "body": ARCHIVED, "domain": "XMLNSC"}]},
        ],
    }
]


def test_outputs_inside_a_subflow_and_written_files_are_compared(tmp_path: Path) -> None:
    queue = f"FA{uuid.uuid4().hex[:8].upper()}"
    (tmp_path / "archiver.json").write_text(
        json.dumps({**_archiver("Archiver", queue, PRICE), "tests": ARCHIVE_TESTS})
    )
    changed = _archiver("ArchiverChanged", f"{queue}X", PRICE.replace("* 3", "* 4"))
    (tmp_path / "archiver_changed.json").write_text(json.dumps({**changed, "tests": ARCHIVE_TESTS}))

    run = _run(str(tmp_path))

    assert run.returncode == 1, run.stdout + run.stderr
    assert "Traceback" not in run.stderr
    lines = run.stdout.splitlines()
    assert any(line.startswith("PASS ") and "archiver.json" in line for line in lines), run.stdout
    assert (
        f"    node s/out (queue {queue}X.OUT) message 1: XMLNSC.Order.Total: expected '12', got '16'" in lines
    ), run.stdout
    assert "    node s/fo file order.xml: XMLNSC.Order.Total: expected '12', got '16'" in lines, run.stdout
    assert "1 passed, 1 failed, 2 flows" in run.stdout
