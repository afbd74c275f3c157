"""MQReply: the reply goes to the request's ReplyToQ carrying the request's MsgId as CorrelId."""

from __future__ import annotations

import pytest
from flowbroker.qm.protocol import MessageDescriptor
from flowbroker.runtime.harness import flow, get_all

pytestmark = pytest.mark.timeout(60)


def test_reply_is_correlated_to_the_request(qm, queues, group) -> None:
    src, replies = queues("REQ"), queues("REPLY")
    group.deploy(
        flow({"in": ("MQInput", {"queueName": src}), "r": ("MQReply", {})}, ["in.out -> r"], name="Replier")
    )
    request_ids = [qm.put(src, f"req {i}".encode(), MessageDescriptor(reply_to_q=replies)) for i in range(5)]
    got = get_all(qm, replies, 5)
    assert sorted(m.md.correl_id for m in got) == sorted(request_ids)
    by_correl = {m.md.correl_id: m.body for m in got}
    assert by_correl[request_ids[3]] == b"req 3"


def test_request_without_reply_to_queue_is_backed_out_to_the_backout_queue(qm, queues, group) -> None:
    boq = queues("BO")
    src = queues("REQ", backout_threshold=1, backout_requeue_q=boq)
    group.deploy(
        flow({"in": ("MQInput", {"queueName": src}), "r": ("MQReply", {})}, ["in.out -> r"], name="NoReplyTo")
    )
    qm.put(src, b"orphan", MessageDescriptor(persistence=1))
    assert [m.body for m in get_all(qm, boq, 1)] == [b"orphan"]
