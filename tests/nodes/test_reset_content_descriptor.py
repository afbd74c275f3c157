"""ResetContentDescriptor: the same bytes, parsed afresh under a new domain."""

from __future__ import annotations

from flowbroker.runtime.harness import FlowHarness, flow


def test_blob_becomes_xmlnsc() -> None:
    h = FlowHarness(
        flow(
            {
                "in": ("MQInput", {"queueName": "UNUSED"}),
                "r": ("ResetContentDescriptor", {"messageDomain": "XMLNSC"}),
            },
            ["in.out -> r"],
        )
    )
    sent = h.inject("in", b"<a><b>5</b></a>")
    (out,) = h.seen("r", "out")
    assert out.root.child("XMLNSC").child("a").child("b").value == "5"
    assert sent.root.child("BLOB") is not None  # the input assembly is not changed


def test_xmlnsc_to_blob_keeps_the_bytes() -> None:
    h = FlowHarness(
        flow(
            {
                "in": ("MQInput", {"queueName": "UNUSED", "messageDomain": "XMLNSC"}),
                "r": ("ResetContentDescriptor", {}),
            },
            ["in.out -> r"],
        )
    )
    h.inject("in", b"<a>1</a>", domain="XMLNSC")
    assert h.seen("r", "out")[0].root.child("BLOB").child("BLOB").value == b"<a>1</a>"
