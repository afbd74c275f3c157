"""Publication: publishes through the queue manager; noMatch when nobody subscribes."""

from __future__ import annotations

import itertools

import pytest
from flowbroker.runtime.harness import FlowHarness, flow, get_all

pytestmark = pytest.mark.timeout(60)
_topics = itertools.count(1)


def test_subscribers_receive_and_out_is_taken(qm_process, qm, queues) -> None:
    topic = f"test/prices/{next(_topics)}"
    sub_queue = queues("SUB")
    qm.subscribe(topic, sub_queue, name=f"s{sub_queue}")
    doc = flow(
        {"in": ("MQInput", {"queueName": "UNUSED"}), "p": ("Publication", {"topic": topic})}, ["in.out -> p"]
    )
    h = FlowHarness(doc, connect=qm_process.client)
    h.inject("p", b"price=10")
    h.close()
    assert [m.body for m in get_all(qm, sub_queue, 1)] == [b"price=10"]
    assert len(h.seen("p", "out")) == 1 and h.seen("p", "noMatch") == []


def test_no_subscriber_takes_no_match(qm_process) -> None:
    doc = flow(
        {
            "in": ("MQInput", {"queueName": "UNUSED"}),
            "p": ("Publication", {"topic": f"nobody/{next(_topics)}"}),
        },
        ["in.out -> p"],
    )
    h = FlowHarness(doc, connect=qm_process.client)
    h.inject("p", b"x")
    h.close()
    assert len(h.seen("p", "noMatch")) == 1


def test_no_topic_anywhere_is_an_error(qm_process) -> None:
    from flowbroker_nodes.base import Unwinding

    h = FlowHarness(
        flow({"in": ("MQInput", {"queueName": "UNUSED"}), "p": ("Publication", {})}, ["in.out -> p"]),
        connect=qm_process.client,
    )
    with pytest.raises(Unwinding) as info:
        h.inject("p", b"x")
    h.close()
    assert "no topic" in str(info.value)
