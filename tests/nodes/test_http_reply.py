"""HTTPReply: answers the request named by LocalEnvironment.Destination.HTTP.RequestIdentifier, once."""

from __future__ import annotations

import httpx
import pytest
from flowbroker.runtime.harness import FlowHarness, flow
from flowbroker_nodes.base import Unwinding

pytestmark = pytest.mark.timeout(60)


def _base(group) -> str:
    host, port = group.http.address
    return f"http://{host}:{port}"


def test_a_second_reply_is_a_failure_unless_transport_failures_are_ignored(group) -> None:
    doc = flow(
        {
            "in": ("HTTPInput", {"path": "/twice", "messageDomain": "JSON"}),
            "first": ("HTTPReply", {}),
            "again": ("HTTPReply", {"ignoreTransportFailures": False}),
            "t": ("Trace", {"destination": "none", "pattern": "after"}),
        },
        ["in.out -> first", "first.out -> again", "again.out -> t"],
        name="ReplyTwice",
    )
    group.deploy(doc)
    response = httpx.post(f"{_base(group)}/twice", json={"n": 1}, timeout=10)
    # the first reply reached the client; the second found nobody waiting and failed the flow
    assert response.status_code == 200 and response.json() == {"n": 1}
    stats = group.statistics()["ReplyTwice"]["nodes"]
    assert stats["again"]["errors"] == 1 and stats["t"]["messages_in"] == 0


def test_the_default_ignores_a_client_that_is_no_longer_waiting(group) -> None:
    doc = flow(
        {
            "in": ("HTTPInput", {"path": "/tolerant"}),
            "first": ("HTTPReply", {}),
            "again": ("HTTPReply", {}),
            "t": ("Trace", {"destination": "none", "pattern": "after"}),
        },
        ["in.out -> first", "first.out -> again", "again.out -> t"],
        name="ReplyTolerant",
    )
    group.deploy(doc)
    assert httpx.post(f"{_base(group)}/tolerant", content=b"hi", timeout=10).text == "hi"
    stats = group.statistics()["ReplyTolerant"]["nodes"]
    assert stats["again"]["errors"] == 0 and stats["t"]["messages_in"] == 1


def test_a_message_from_no_http_request_cannot_be_replied_to() -> None:
    doc = flow(
        {"in": ("MQInput", {"queueName": "UNUSED"}), "reply": ("HTTPReply", {})},
        ["in.out -> reply"],
    )
    h = FlowHarness(doc)
    with pytest.raises(Unwinding) as raised:
        h.inject("in", b"x")
    assert "reply: no LocalEnvironment.Destination.HTTP.RequestIdentifier to reply to" in str(raised.value)
    h.close()
