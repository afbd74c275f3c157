"""XSLTransform: inline and file stylesheets, parameters, output domains, and hostile stylesheets and inputs."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from esql.tree import Element
from flowbroker.runtime.compiler import FlowCompileError
from flowbroker.runtime.harness import FlowHarness, flow

pytestmark = pytest.mark.timeout(60)

XSL = '<xsl:stylesheet version="1.0" xmlns:xsl="http://www.w3.org/1999/XSL/Transform">{}</xsl:stylesheet>'

RENAME = XSL.format(
    '<xsl:param name="currency" select="\'EUR\'"/>'
    '<xsl:template match="/order"><invoice currency="{$currency}"><xsl:value-of select="sum(item/@price)"/>'
    "</invoice></xsl:template>"
)
ORDER = b'<order><item price="2"/><item price="3.5"/></order>'


@pytest.fixture
def roots(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "files"
    root.mkdir()
    monkeypatch.setenv("FLOWBROKER_FILE_ROOTS", str(root))
    return root


def harness(**props: object) -> FlowHarness:
    return FlowHarness(
        flow({"in": ("MQInput", {"queueName": "UNUSED"}), "x": ("XSLTransform", props)}, ["in.out -> x"])
    )


def run(h: FlowHarness, body: bytes, local_environment: Element | None = None) -> tuple[list, list]:
    failures = h.tap("x", "failure")
    h.inject("x", body, domain="XMLNSC", local_environment=local_environment)
    return h.seen("x", "out"), failures.seen


def failure_text(failed) -> str:
    return failed.exception_list.first_child.child("Text").value


def test_inline_stylesheet_result_becomes_the_xmlnsc_body_with_parameters(roots: Path) -> None:
    h = harness(stylesheet=RENAME, parameters={"currency": "USD"})
    (out,), _ = run(h, ORDER)
    body = out.root.last_child
    assert body.name == "XMLNSC"
    invoice = body.child("invoice")
    assert invoice.child("currency").value == "USD"
    assert invoice.value == "5.5"
    # LocalEnvironment.XSLT.Parameters overrides the node's parameter
    env = Element("LocalEnvironment")
    env.add("XSLT").add("Parameters").add("currency", "GBP")
    (_, second), _ = run(h, ORDER, env)
    assert second.root.last_child.child("invoice").child("currency").value == "GBP"


def test_text_output_is_a_blob_body(roots: Path) -> None:
    text = XSL.format(
        '<xsl:output method="text"/><xsl:template match="/">total=<xsl:value-of select="count(//item)"/></xsl:template>'
    )
    (out,), _ = run(harness(stylesheet=text), ORDER)
    assert out.root.last_child.name == "BLOB"
    assert out.root.last_child.child("BLOB").value == b"total=2"


def test_stylesheet_file_below_the_roots_is_recompiled_when_it_changes(roots: Path) -> None:
    (roots / "xsl").mkdir()
    sheet = roots / "xsl" / "count.xsl"
    sheet.write_text(XSL.format('<xsl:output method="text"/><xsl:template match="/">one</xsl:template>'))
    h = harness(stylesheetName="xsl/count.xsl")
    (first,), _ = run(h, ORDER)
    assert first.root.last_child.child("BLOB").value == b"one"
    sheet.write_text(XSL.format('<xsl:output method="text"/><xsl:template match="/">two!</xsl:template>'))
    os.utime(sheet, ns=(time.time_ns() + 10**9, time.time_ns() + 10**9))
    (_, second), _ = run(h, ORDER)
    assert second.root.last_child.child("BLOB").value == b"two!"


def test_local_environment_names_the_stylesheet_file(roots: Path) -> None:
    (roots / "other.xsl").write_text(
        XSL.format('<xsl:output method="text"/><xsl:template match="/">other</xsl:template>')
    )
    env = Element("LocalEnvironment")
    env.add("ComIbmXslXmltStylesheetname", "other.xsl")
    (out,), _ = run(harness(stylesheet=RENAME), ORDER, env)
    assert out.root.last_child.child("BLOB").value == b"other"


@pytest.mark.parametrize("name", ["../outside.xsl", "/etc/passwd", "missing.xsl"])
def test_stylesheet_files_outside_the_roots_or_missing_go_to_failure(roots: Path, name: str) -> None:
    (roots.parent / "outside.xsl").write_text(RENAME)
    outs, (failed,) = run(harness(stylesheetName=name), ORDER)
    assert outs == []
    assert name in failure_text(failed)
    assert "outside the file roots" in failure_text(failed) or "does not exist" in failure_text(failed)


def test_a_broken_stylesheet_is_refused_at_deploy_with_its_position(roots: Path) -> None:
    broken = XSL.format('<xsl:template match="/">\n<xsl:value-of select="1 div"/></xsl:template>')
    with pytest.raises(FlowCompileError) as refused:
        harness(stylesheet=broken)
    (problem,) = refused.value.problems
    assert problem.property == "stylesheet" and "1 div" in problem.message
    with pytest.raises(FlowCompileError) as unclosed:
        harness(
            stylesheet="<xsl:stylesheet version='1.0'\n  xmlns:xsl='http://www.w3.org/1999/XSL/Transform'>\n<oops>"
        )
    (problem,) = unclosed.value.problems
    assert problem.line == 3 and "not well-formed" in problem.message


def test_entities_and_includes_are_refused_at_deploy(roots: Path) -> None:
    secret = roots / "secret.txt"
    secret.write_text("TOP SECRET")
    entity = f'<!DOCTYPE x [<!ENTITY e SYSTEM "file://{secret}">]>' + XSL.format(
        '<xsl:template match="/">&e;</xsl:template>'
    )
    include = XSL.format(f'<xsl:include href="{secret}"/><xsl:template match="/"><x/></xsl:template>')
    for hostile, words in ((entity, "DOCTYPE"), (include, "not allowed")):
        with pytest.raises(FlowCompileError) as refused:
            harness(stylesheet=hostile)
        assert words in refused.value.problems[0].message


def test_hostile_stylesheets_read_and_write_no_file_and_no_url(roots: Path, tmp_path: Path) -> None:
    secret = roots / "secret.txt"
    secret.write_text("<s>TOP SECRET</s>")
    written = tmp_path / "written.xml"
    reads = XSL.format(
        f'<xsl:template match="/"><x><xsl:copy-of select="document(\'{secret}\')"/></x></xsl:template>'
    )
    network = XSL.format(
        '<xsl:template match="/"><x><xsl:copy-of select="document(\'http://127.0.0.1:9/x\')"/></x></xsl:template>'
    )
    writes = (
        '<xsl:stylesheet version="1.0" xmlns:xsl="http://www.w3.org/1999/XSL/Transform" '
        'xmlns:exsl="http://exslt.org/common" extension-element-prefixes="exsl">'
        f'<xsl:template match="/"><exsl:document href="{written}"><y/></exsl:document><x/></xsl:template>'
        "</xsl:stylesheet>"
    )
    for hostile in (reads, network, writes):
        outs, (failed,) = run(harness(stylesheet=hostile), ORDER)
        assert outs == []
        assert "denied" in failure_text(failed) or "refused" in failure_text(failed)
        assert "TOP SECRET" not in failure_text(failed)
    assert not written.exists()


def test_an_input_with_entities_or_not_xml_goes_to_failure(roots: Path) -> None:
    h = harness(stylesheet=RENAME)
    _, (failed,) = run(h, b"not xml at all")
    assert "not well-formed" in failure_text(failed)
    h = harness(stylesheet=RENAME)
    failures = h.tap("x", "failure")
    h.inject("x", b'<!DOCTYPE order [<!ENTITY a "aaaa">]><order>&a;</order>', domain="BLOB")
    assert "DOCTYPE" in failure_text(failures.seen[0])


def test_a_stylesheet_running_past_the_time_limit_is_stopped_and_the_next_one_runs(
    roots: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FLOWBROKER_XSLT_TIME_LIMIT_MS", "300")
    slow = XSL.format(
        '<xsl:output method="text"/><xsl:template match="/">'
        '<xsl:for-each select="//i"><xsl:for-each select="//i"><xsl:for-each select="//i">'
        '<xsl:if test="false()">x</xsl:if></xsl:for-each></xsl:for-each></xsl:for-each>done</xsl:template>'
    )
    many = b"<r>" + b"<i/>" * 3000 + b"</r>"
    started = time.monotonic()
    outs, (failed,) = run(harness(stylesheet=slow), many)
    assert outs == [] and "ran longer than the limit of 300 ms" in failure_text(failed)
    assert time.monotonic() - started < 10
    (out,), _ = run(harness(stylesheet=RENAME), ORDER)
    assert out.root.last_child.child("invoice") is not None


def test_a_result_past_the_output_limit_and_runaway_recursion_go_to_failure(
    roots: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FLOWBROKER_XSLT_MAX_OUTPUT_BYTES", "2048")
    big = XSL.format(
        '<xsl:output method="text"/><xsl:template match="/"><xsl:for-each select="//i">'
        "0123456789</xsl:for-each></xsl:template>"
    )
    _, (failed,) = run(harness(stylesheet=big), b"<r>" + b"<i/>" * 500 + b"</r>")
    assert "more than the limit of 2048" in failure_text(failed)
    forever = XSL.format(
        '<xsl:template match="/"><xsl:call-template name="again"/></xsl:template>'
        '<xsl:template name="again"><xsl:call-template name="again"/></xsl:template>'
    )
    _, (failed,) = run(harness(stylesheet=forever), ORDER)
    assert "transformation failed" in failure_text(failed)


def test_bad_properties_are_refused_at_deploy() -> None:
    with pytest.raises(FlowCompileError) as refused:
        harness(stylesheet=RENAME, parameters={"not a name": "x"})
    assert refused.value.problems[0].property == "parameters"


def test_a_stylesheet_past_the_memory_limit_fails_and_the_next_one_runs(
    roots: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FLOWBROKER_XSLT_MEMORY_LIMIT_BYTES", str(128 * 1024 * 1024))
    doubling = XSL.format(
        '<xsl:output method="text"/>'
        '<xsl:template match="/"><xsl:call-template name="double"><xsl:with-param name="s" select="\'0123456789\'"/>'
        '<xsl:with-param name="n" select="30"/></xsl:call-template></xsl:template>'
        '<xsl:template name="double"><xsl:param name="s"/><xsl:param name="n"/>'
        '<xsl:choose><xsl:when test="$n = 0"><xsl:value-of select="string-length($s)"/></xsl:when>'
        '<xsl:otherwise><xsl:call-template name="double"><xsl:with-param name="s" select="concat($s, $s)"/>'
        '<xsl:with-param name="n" select="$n - 1"/></xsl:call-template></xsl:otherwise></xsl:choose>'
        "</xsl:template>"
    )
    outs, (failed,) = run(harness(stylesheet=doubling), ORDER)
    assert outs == []
    assert "memory" in failure_text(failed)
    (out,), _ = run(harness(stylesheet=RENAME), ORDER)
    assert out.root.last_child.child("invoice") is not None


SANDBOX_FROM_A_LARGE_PROCESS = """
import sys
from flowbroker_nodes import xslt_sandbox

ballast = bytearray(200 * 1024 * 1024)
for i in range(0, len(ballast), 4096):
    ballast[i] = 1
stylesheet = sys.argv[1].encode()
try:
    xslt_sandbox.transform(
        "k", stylesheet, b"<r/>", {}, time_limit_ms=5000, memory_limit=128 * 1024 * 1024, max_output=1 << 20
    )
except xslt_sandbox.XsltError as exc:
    print(exc.text)
"""


def test_a_sandbox_started_by_a_large_process_reports_its_own_failure_not_memory() -> None:
    # Linux keeps the peak resident size across exec: the sandbox must judge its own peak only
    recursion = XSL.format(
        '<xsl:template match="/"><xsl:call-template name="again"/></xsl:template>'
        '<xsl:template name="again"><xsl:call-template name="again"/></xsl:template>'
    )
    done = subprocess.run(
        [sys.executable, "-c", SANDBOX_FROM_A_LARGE_PROCESS, recursion],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert "transformation failed" in done.stdout and "memory" not in done.stdout, done.stdout
