"""`flowbroker bench xslt`: what XSLTransform's sandbox process costs per message.

Three rows for the same stylesheet and a ~1 KB order document: the transformation in this process
with lxml (the floor), the same through a warm sandbox process (the pipe round trip added), and the
XSLTransform node in a flow (the body serialized, transformed in the sandbox, the result parsed as
XMLNSC and read). CPU is this process's only: the sandbox child's is not counted.
"""

from __future__ import annotations

import argparse
import hashlib
import time

from flowbroker_bench.core import Row, Scenario

STYLESHEET = b"""<xsl:stylesheet version="1.0" xmlns:xsl="http://www.w3.org/1999/XSL/Transform">
  <xsl:template match="/order">
    <invoice id="{@id}">
      <total><xsl:value-of select="sum(item/@price)"/></total>
      <xsl:for-each select="item"><line sku="{@sku}"><xsl:value-of select="@price"/></line></xsl:for-each>
    </invoice>
  </xsl:template>
</xsl:stylesheet>"""


def order(items: int = 20) -> bytes:
    lines = "".join(f'<item sku="SKU-{i:05d}" price="{i}.25" note="bench line {i}"/>' for i in range(items))
    return f'<order id="A-1">{lines}</order>'.encode()


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--messages", type=int, default=2000, help="transformations per row")


def _row(mode: str, count: int, size: int, wall: float, cpu: float) -> Row:
    return {
        "mode": mode,
        "messages": count,
        "bytes_in": size,
        "msgs_per_s": round(count / wall) if wall else 0,
        "wall_ms_per_msg": round(wall * 1000 / count, 3),
        "cpu_ms_per_msg": round(cpu * 1000 / count, 3),
    }


def run(args: argparse.Namespace) -> list[Row]:
    from flowbroker.runtime.harness import FlowHarness, flow
    from flowbroker_nodes import xslt_sandbox
    from lxml import etree

    count = max(1, int(args.messages))
    data = order()
    rows: list[Row] = []

    xslt, _method, _ccsid = xslt_sandbox.compile_stylesheet(STYLESHEET)
    wall, cpu = time.perf_counter(), time.process_time()
    for _ in range(count):
        bytes(xslt(etree.fromstring(data)))
    rows.append(
        _row("lxml in process", count, len(data), time.perf_counter() - wall, time.process_time() - cpu)
    )

    key = hashlib.sha256(STYLESHEET).hexdigest()
    limits = {"time_limit_ms": 5000, "memory_limit": 512 * 1024 * 1024, "max_output": 1 << 26}
    xslt_sandbox.transform(key, STYLESHEET, data, {}, **limits)  # start and warm one sandbox process
    wall, cpu = time.perf_counter(), time.process_time()
    for _ in range(count):
        xslt_sandbox.transform(key, STYLESHEET, data, {}, **limits)
    rows.append(
        _row("sandbox process", count, len(data), time.perf_counter() - wall, time.process_time() - cpu)
    )

    harness = FlowHarness(
        flow(
            {
                "in": ("MQInput", {"queueName": "UNUSED"}),
                "x": ("XSLTransform", {"stylesheet": STYLESHEET.decode()}),
            },
            ["in.out -> x"],
        )
    )
    wall, cpu = time.perf_counter(), time.process_time()
    for _ in range(count):
        assembly = harness.inject("x", data, domain="XMLNSC")
        del assembly
    out = harness.seen("x", "out")
    body = out[-1].root.last_child if out else None
    total = len(list(body.walk())) if body is not None else 0
    rows.append(
        _row(
            f"XSLTransform node ({total} result fields)",
            count,
            len(data),
            time.perf_counter() - wall,
            time.process_time() - cpu,
        )
    )
    harness.close()
    return rows


SCENARIOS = {
    "xslt": Scenario(
        "xslt",
        "XSLTransform per-message cost: lxml in process, through the sandbox process, and the node in a flow",
        run,
        add_arguments,
        tags=("nodes",),
    )
}
