"""TimeoutNotification (automatic): a message every interval, each its own unit of work, failures retried."""

from __future__ import annotations

import time

import pytest
from flowbroker.runtime.compiler import FlowCompileError
from flowbroker.runtime.harness import FlowHarness, flow, get_all

pytestmark = pytest.mark.timeout(60)

TICK = """CREATE COMPUTE MODULE Tick
  CREATE FUNCTION Main() RETURNS BOOLEAN
  BEGIN
    SET OutputRoot.Properties = InputRoot.Properties;
    SET OutputRoot.XMLNSC.tick.count = InputLocalEnvironment.TimeoutNotification.Count;
    SET OutputRoot.XMLNSC.tick.id = InputLocalEnvironment.TimeoutNotification.Identifier;
    SET OutputRoot.XMLNSC.tick.headers = CARDINALITY(InputRoot.*[]);
    RETURN TRUE;
  END;
END MODULE;"""


def ticking(dst: str, name: str) -> dict:
    return flow(
        {
            "t": ("TimeoutNotification", {"timeoutInterval": 1, "uniqueIdentifier": "every-second"}),
            "c": ("Compute", {"esql": TICK}),
            "o": ("MQOutput", {"queueName": dst}),
        },
        ["t.out -> c", "c.out -> o"],
        name=name,
        additionalInstances=2,
    )


def test_a_message_every_interval_with_only_properties(qm, queues, group) -> None:
    dst = queues("TICKS")
    group.deploy(ticking(dst, "Ticker"))
    got = get_all(qm, dst, 2, wait=15)
    assert [m.body for m in got] == [
        b"<tick><count>1</count><id>every-second</id><headers>1</headers></tick>",
        b"<tick><count>2</count><id>every-second</id><headers>1</headers></tick>",
    ]


def test_a_failing_timeout_is_backed_out_and_retried(qm, queues, group) -> None:
    side = queues("SIDE")
    # the first attempt puts to side, then fails: its put is backed out; the retry fails again
    doc = flow(
        {
            "t": ("TimeoutNotification", {"timeoutInterval": 1}),
            "c": ("Compute", {"esql": TICK}),
            "s": ("MQOutput", {"queueName": side}),
            "x": ("Throw", {"messageText": "not yet"}),
        },
        ["t.out -> c", "c.out -> s", "s.out -> x"],
        name="TickerFails",
    )
    deployed = group.deploy(doc)
    thrower = deployed.compiled.nodes["x"]
    deadline = time.monotonic() + 15
    while thrower.stats.messages_in < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert thrower.stats.messages_in >= 2  # the same timeout, retried
    assert get_all(qm, side, 1, wait=0.5) == []


def test_the_failure_terminal_takes_a_failed_timeout(qm, queues, group) -> None:
    errors = queues("ERRORS")
    doc = flow(
        {
            "t": ("TimeoutNotification", {"timeoutInterval": 1}),
            "x": ("Throw", {"messageText": "always"}),
            "e": ("MQOutput", {"queueName": errors}),
        },
        ["t.out -> x", "t.failure -> e"],
        name="TickerFailure",
    )
    group.deploy(doc)
    assert len(get_all(qm, errors, 2, wait=15)) == 2


def test_injected_message_goes_out_and_interval_is_checked() -> None:
    h = FlowHarness(
        flow({"t": ("TimeoutNotification", {"timeoutInterval": 5}), "p": ("Passthrough", {})}, ["t.out -> p"])
    )
    h.inject("t", b"x")
    assert len(h.seen("t", "out")) == 1
    with pytest.raises(FlowCompileError):
        FlowHarness(flow({"t": ("TimeoutNotification", {"timeoutInterval": 0})}, []))
