"""Filter: TRUE, FALSE and UNKNOWN route the unchanged message to true, false and unknown."""

from __future__ import annotations

from esql.tree import Element
from flowbroker.runtime.harness import FlowHarness, flow

ESQL = """CREATE FILTER MODULE ByColour
  CREATE FUNCTION Main() RETURNS BOOLEAN
  BEGIN
    RETURN Root.XMLNSC.item.colour = 'red';
  END;
END MODULE;"""


def test_three_valued_routing() -> None:
    h = FlowHarness(
        flow(
            {
                "in": ("MQInput", {"queueName": "UNUSED", "messageDomain": "XMLNSC"}),
                "f": ("Filter", {"esql": ESQL}),
            },
            ["in.out -> f"],
        )
    )
    red = h.inject("in", b"<item><colour>red</colour></item>", domain="XMLNSC")
    h.inject("in", b"<item><colour>blue</colour></item>", domain="XMLNSC")
    h.inject("in", b"<item/>", domain="XMLNSC")
    assert [a.root for a in h.seen("f", "true")] == [red.root]
    assert len(h.seen("f", "false")) == 1
    assert len(h.seen("f", "unknown")) == 1


def test_filter_on_an_rfh2_usr_tag() -> None:
    esql = "CREATE FILTER MODULE Tag CREATE FUNCTION Main() RETURNS BOOLEAN BEGIN RETURN Root.MQRFH2.usr.route = 'A'; END; END MODULE;"
    h = FlowHarness(
        flow({"in": ("MQInput", {"queueName": "UNUSED"}), "f": ("Filter", {"esql": esql})}, ["in.out -> f"])
    )
    root = h.root_for(b"x", "BLOB")
    rfh2 = Element("MQRFH2")
    rfh2.add("usr").add("route", "A")
    root.child("MQMD").insert_after(rfh2)
    h.inject("in", root)
    assert len(h.seen("f", "true")) == 1
