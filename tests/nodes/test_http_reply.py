"""HTTPReply: answers the request named by LocalEnvironment.Destination.HTTP.RequestIdentifier, once."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

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
    # the flow thread goes on after the client has its answer: wait for it to count the error
    stats = _nodes_once(group, "ReplyTwice", lambda n: n["again"]["errors"] >= 1)
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
    stats = _nodes_once(group, "ReplyTolerant", lambda n: n["t"]["messages_in"] >= 1)
    assert stats["again"]["errors"] == 0 and stats["t"]["messages_in"] == 1


def _nodes_once(group: Any, name: str, ready: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
    """The flow's node statistics once ``ready`` holds (at most 10 s), else as they are then."""
    deadline = time.monotonic() + 10
    while True:
        nodes: dict[str, Any] = group.statistics()[name]["nodes"]
        if ready(nodes) or time.monotonic() > deadline:
            return nodes
        time.sleep(0.05)


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
