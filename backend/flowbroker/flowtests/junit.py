"""Flow-test results as JUnit XML, the report CI servers read: one testsuite per flow, one testcase per case."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

from flowbroker.flowtests.engine import CaseResult


def to_xml(results: list[CaseResult]) -> bytes:
    root = ET.Element("testsuites", name="flowbroker flow tests")
    by_flow: dict[str, list[CaseResult]] = {}
    for result in results:
        by_flow.setdefault(result.flow, []).append(result)
    total = failures = errors = 0
    for flow, cases in by_flow.items():
        suite = ET.SubElement(root, "testsuite", name=flow)
        flow_failures = sum(1 for c in cases if not c.passed and not c.error)
        flow_errors = sum(1 for c in cases if c.error)
        suite.set("tests", str(len(cases)))
        suite.set("failures", str(flow_failures))
        suite.set("errors", str(flow_errors))
        suite.set("time", f"{sum(c.seconds for c in cases):.3f}")
        for case in cases:
            element = ET.SubElement(
                suite, "testcase", classname=flow, name=case.case, time=f"{case.seconds:.3f}"
            )
            lines = case.report_lines()
            if case.error:
                ET.SubElement(element, "error", message=case.error).text = "\n".join(lines)
            elif lines:
                ET.SubElement(element, "failure", message=lines[0]).text = "\n".join(lines)
        total += len(cases)
        failures += flow_failures
        errors += flow_errors
    root.set("tests", str(total))
    root.set("failures", str(failures))
    root.set("errors", str(errors))
    ET.indent(root)
    return ET.tostring(root, encoding="utf-8", xml_declaration=True) + b"\n"


def write(path: Path, results: list[CaseResult]) -> None:
    path.write_bytes(to_xml(results))
