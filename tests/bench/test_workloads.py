"""Scenario A and B messages and the checks that keep a wrong output out of the tables."""

from __future__ import annotations

import json

from flowbroker_bench.peers import nodered, workloads
from lxml import etree


def test_scenario_a_message_is_one_kilobyte_json() -> None:
    body = workloads.json_message(42)
    assert abs(len(body) - 1024) <= 2
    doc = json.loads(body)
    assert doc["status"] == "new"
    doc["status"] = "processed"
    assert workloads.check_json_output(json.dumps(doc).encode()) == ""
    assert "status is 'new'" in workloads.check_json_output(body)
    assert workloads.check_json_output(b"{").startswith("output is not JSON")


def test_scenario_b_order_is_about_two_kilobytes_with_twenty_items() -> None:
    order = workloads.xml_order(7)
    assert 1800 <= len(order) <= 2600
    assert len(etree.fromstring(order).findall(".//item")) == 20


def _invoice(order: bytes, wrong_line: int | None = None) -> bytes:
    root = etree.fromstring(order)
    invoice = etree.Element("invoice", orderId=root.get("id"))
    total = 0
    for index, item in enumerate(root.iter("item")):
        qty, price = int(item.findtext("quantity")), float(item.findtext("price"))
        amount = round(qty * price, 2) + (1 if index == wrong_line else 0)
        total += amount
        line = etree.SubElement(invoice, "line")
        for name, value in (
            ("sku", item.findtext("sku")),
            ("quantity", qty),
            ("price", f"{price:.2f}"),
            ("amount", f"{amount:.2f}"),
        ):
            etree.SubElement(line, name).text = str(value)
    etree.SubElement(invoice, "total").text = f"{total:.2f}"
    return etree.tostring(invoice)


def test_invoice_check_accepts_right_and_names_the_wrong_line() -> None:
    order = workloads.xml_order(3)
    assert workloads.check_invoice(order, _invoice(order)) == ""
    assert workloads.check_invoice(order, _invoice(order, wrong_line=4)).startswith("line 5: amount")
    assert "not XML" in workloads.check_invoice(order, b"<invoice>")
    assert "0 lines" in workloads.check_invoice(order, b"<invoice/>")


def test_node_red_flows_wire_what_the_scenarios_say() -> None:
    a = {n["type"] for n in nodered.flow("A", 1883, "i", "o")}
    assert {"mqtt in", "change", "mqtt out", "mqtt-broker"} <= a
    b = [n["type"] for n in nodered.flow("B", 1883, "i", "o")]
    assert b.count("xml") == 2 and "function" in b
    ids = {n["id"] for n in nodered.flow("B", 1883, "i", "o")}
    values = {
        v
        for n in nodered.flow("B", 1883, "i", "o")
        for k, v in n.items()
        if k not in {"id", "z", "broker"} and isinstance(v, str)
    }
    assert not ids & values  # Node-RED would take such a value for a config-node reference


def test_engine_invoice_esql_turns_each_order_into_its_invoice() -> None:
    # scenario B's Compute ESQL (one product per line, reused for the line and the total, as the
    # Node-RED function does) run on orders of every quantity and price pattern, checked line by
    # line and against the total the order implies
    import types
    from decimal import Decimal

    from esql.compiler import compile_program
    from esql.runtime import ExecutionContext
    from esql.tree import Element
    from flowbroker.formats import assembly
    from flowbroker_bench.peers import engine_host

    routine = compile_program(engine_host.INVOICE).main_module("Invoice")
    descriptor = types.SimpleNamespace(format="MQSTR", encoding=546, coded_char_set_id=1208)
    for n in range(14):
        order = workloads.xml_order(n)
        out = Element("Root")
        ctx = ExecutionContext(
            input_root=assembly.build_root(descriptor, order, assembly.Template(domain="XMLNSC")),
            output_root=out,
        )
        assert routine.run(ctx) is True
        payload = assembly.to_body(out)
        assert workloads.check_invoice(order, payload) == ""
        items = etree.fromstring(order).findall(".//item")
        lines = etree.fromstring(payload).findall("line")
        total = Decimal(0)
        for item, line in zip(items, lines, strict=True):
            amount = Decimal(item.findtext("quantity") or "") * Decimal(item.findtext("price") or "")
            assert line.findtext("amount") == str(amount)
            total += amount
        assert etree.fromstring(payload).findtext("total") == str(total)
