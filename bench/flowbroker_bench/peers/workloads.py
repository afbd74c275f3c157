"""The peer scenarios' messages and their checks: (A) 1 KB JSON copy-and-set, (B) 2 KB XML order → invoice.

Both engines get the same bytes and their output is checked the same way, so a figure from an
engine that produced the wrong message never reaches a table.
"""

from __future__ import annotations

import json
from decimal import Decimal

from lxml import etree


def json_message(n: int, size: int = 1024) -> bytes:
    """Scenario A's input: a JSON order summary padded to ``size`` bytes."""
    doc = {
        "id": n,
        "customer": f"C{n % 9973:05d}",
        "status": "new",
        "currency": "EUR",
        "items": [{"sku": f"SKU-{(n + i) % 1000:04d}", "qty": 1 + (n + i) % 5} for i in range(8)],
        "note": "",
    }
    base = len(json.dumps(doc, separators=(",", ":")).encode())
    doc["note"] = "x" * max(0, size - base)
    return json.dumps(doc, separators=(",", ":")).encode()


def check_json_output(payload: bytes) -> str:
    """'' when ``payload`` is scenario A's correct output, else what is wrong with it."""
    try:
        doc = json.loads(payload)
    except ValueError as exc:
        return f"output is not JSON: {exc}"
    if not isinstance(doc, dict):
        return "output is not a JSON object"
    if doc.get("status") != "processed":
        return f"status is {doc.get('status')!r}, expected 'processed'"
    if not isinstance(doc.get("items"), list) or len(doc["items"]) != 8:
        return "items were not copied"
    return ""


def xml_order(n: int, items: int = 20) -> bytes:
    """Scenario B's input: an order of ``items`` lines, about 2 KB."""
    lines = "".join(
        f"<item><sku>SKU-{(n + i) % 1000:04d}</sku><description>Part {i:02d}</description>"
        f"<quantity>{1 + (n + i) % 7}</quantity><price>{(n * 7 + i * 13) % 5000 / 100 + 1:.2f}</price></item>"
        for i in range(items)
    )
    return (
        f'<?xml version="1.0" encoding="UTF-8"?><order id="O{n:08d}"><customer>C{n % 9973:05d}</customer>'
        f"<items>{lines}</items></order>"
    ).encode()


def check_invoice(order: bytes | None, payload: bytes, items: int = 20) -> str:
    """'' when ``payload`` is a correct invoice (of ``order`` when given), else what is wrong."""
    try:
        invoice = etree.fromstring(payload)
    except etree.XMLSyntaxError as exc:
        return f"output is not XML: {exc}"
    lines = invoice.findall(".//line")
    if len(lines) != items:
        return f"invoice has {len(lines)} lines, expected {items}"
    total = Decimal(0)
    for index, line in enumerate(lines, 1):
        try:
            qty = Decimal(line.findtext("quantity") or "")
            price = Decimal(line.findtext("price") or "")
            amount = Decimal(line.findtext("amount") or "")
        except ArithmeticError:
            return f"line {index} has a non-numeric quantity, price or amount"
        if abs(qty * price - amount) > Decimal("0.005"):
            return f"line {index}: amount {amount} is not {qty} x {price}"
        total += amount
    try:
        stated = Decimal(invoice.findtext(".//total") or "")
    except ArithmeticError:
        return "invoice total is missing or not a number"
    if abs(stated - total) > Decimal("0.005") * items:
        return f"total {stated} is not the sum of the lines {total}"
    if order is not None:
        skus = [e.text for e in etree.fromstring(order).iter("sku")]
        if skus != [line.findtext("sku") for line in lines]:
            return "invoice lines do not follow the order's items"
    return ""
