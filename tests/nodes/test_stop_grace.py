"""Stopping a flow lets the message in progress finish within the stop grace, then interrupts it."""

from __future__ import annotations

import time

import pytest
from flowbroker.qm.protocol import MessageDescriptor
from flowbroker.runtime.harness import flow, get_all

pytestmark = pytest.mark.timeout(120)

COUNTING = """CREATE COMPUTE MODULE Counting
  CREATE FUNCTION Main() RETURNS BOOLEAN
  BEGIN
    DECLARE i INTEGER 0;
    DECLARE n INTEGER CAST(InputRoot.XMLNSC.m AS INTEGER);
    IF n < 0 THEN
      WHILE TRUE DO SET i = i + 1; END WHILE;
    END IF;
    WHILE i < n DO SET i = i + 1; END WHILE;
    SET OutputRoot = InputRoot;
    SET OutputRoot.XMLNSC.m.counted = i;
    RETURN TRUE;
  END;
END MODULE;
"""


def _doc(src: str, dst: str, failed: str, name: str) -> dict:
    return flow(
        {
            "in": ("MQInput", {"queueName": src, "messageDomain": "XMLNSC", "readAhead": 1}),
            "count": ("Compute", {"esql": COUNTING}),
            "out": ("MQOutput", {"queueName": dst}),
            "f": ("MQOutput", {"queueName": failed}),
        },
        ["in.out -> count", "count.out -> out", "in.failure -> f"],
        name=name,
        esqlCpuLimitMs=0,
    )


def _in_progress(deployed, node: str = "count") -> None:
    """Wait until ``node`` has taken a message and not yet passed it on."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        stats = deployed.statistics()["nodes"][node]
        if stats["messages_in"] >= 1:
            assert stats["messages_out"] == 0, "the message ended before the stop: make it count longer"
            return
        time.sleep(0.005)
    raise AssertionError("the Compute node never took the message")


def test_a_stop_lets_the_message_in_progress_finish(qm, queues, group, monkeypatch) -> None:
    monkeypatch.setenv("FLOWBROKER_STOP_GRACE_MS", "60000")
    src, dst, failed = queues("IN"), queues("OUT"), queues("FAILED")
    deployed = group.deploy(_doc(src, dst, failed, "GracefulStop"))
    qm.put(src, b"<m>3000000</m>", MessageDescriptor(persistence=1))
    _in_progress(deployed)
    assert deployed.stop(timeout=60)
    [out] = get_all(qm, dst, 1)
    assert out.body == b"<m>3000000<counted>3000000</counted></m>"
    stats = deployed.statistics()
    assert stats["errors"] == 0 and stats["backouts"] == 0
    assert qm.get(failed) is None and qm.get(src) is None


def test_past_the_grace_a_runaway_loop_is_interrupted_and_its_message_kept(
    qm, queues, group, monkeypatch
) -> None:
    monkeypatch.setenv("FLOWBROKER_STOP_GRACE_MS", "200")
    src, dst, failed = queues("IN"), queues("OUT"), queues("FAILED")
    deployed = group.deploy(_doc(src, dst, failed, "InterruptedStop"))
    qm.put(src, b"<m>-1</m>", MessageDescriptor(persistence=1))
    _in_progress(deployed)
    assert deployed.stop(timeout=30)
    assert qm.get(dst) is None and qm.get(failed) is None
    kept = qm.get(src)  # backed out by the interruption: still on its queue, for the next start
    assert kept is not None and kept.body == b"<m>-1</m>"
