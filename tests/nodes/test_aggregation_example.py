"""The fan-out/fan-in example flow (examples/flows/aggregation_quote.json) runs and combines its replies."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from flowbroker.qm.protocol import MessageDescriptor
from flowbroker.runtime.harness import get_all

pytestmark = pytest.mark.timeout(60)
EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "flows" / "aggregation_quote.json"
QUEUES = ("QUOTE.REQUEST", "QUOTE.PRICE", "QUOTE.STOCK", "QUOTE.REPLIES", "QUOTE.OUT", "QUOTE.UNKNOWN")


def test_the_quote_example_combines_price_and_stock_and_sends_strays_to_unknown(qm, group) -> None:
    for queue in QUEUES:
        qm.define_queue(queue, replace=True)
        qm.purge(queue)
    group.deploy(json.loads(EXAMPLE.read_text()))
    persistent = MessageDescriptor(persistence=1)
    qm.put("QUOTE.REQUEST", b"<quoteRequest><item>widget</item></quoteRequest>", persistent)
    qm.put("QUOTE.REQUEST", b"<quoteRequest><item>gadget</item></quoteRequest>", persistent)
    got = get_all(qm, "QUOTE.OUT", 2, wait=30)
    assert sorted(m.body for m in got) == [
        b"<quote><item>gadget</item><price>12.50</price><onHand>7</onHand><complete>true</complete></quote>",
        b"<quote><item>widget</item><price>12.50</price><onHand>7</onHand><complete>true</complete></quote>",
    ]
    qm.put("QUOTE.REPLIES", b"<price><amount>1</amount></price>", MessageDescriptor(correl_id=b"S" * 24))
    (stray,) = get_all(qm, "QUOTE.UNKNOWN", 1, wait=20)
    assert stray.body == b"<price><amount>1</amount></price>"
