"""TimeoutControl with a controlled TimeoutNotification: set, repeat, cancel, overwrite, bad requests."""

from __future__ import annotations

import datetime as dt
import itertools
import time

import pytest
from flowbroker.qm.protocol import MessageDescriptor
from flowbroker.runtime.compiler import FlowCompileError, compile_flow
from flowbroker.runtime.harness import flow, get_all

pytestmark = pytest.mark.timeout(60)
_n = itertools.count(1)

FIRED = """CREATE COMPUTE MODULE Fired
  CREATE FUNCTION Main() RETURNS BOOLEAN
  BEGIN
    SET OutputRoot.XMLNSC.fired.id = InputLocalEnvironment.TimeoutRequest.Identifier;
    SET OutputRoot.XMLNSC.fired.count = InputLocalEnvironment.TimeoutNotification.Count;
    SET OutputRoot.XMLNSC.fired.order = InputRoot.XMLNSC.TimeoutRequest.order;
    RETURN TRUE;
  END;
END MODULE;"""


def pair(unique: str, src: str, dst: str, failures: str, name: str) -> list[dict]:
    control = flow(
        {
            "in": (
                "MQInput",
                {"queueName": src, "messageDomain": "XMLNSC", "transactionMode": "yes", "readAhead": 8},
            ),
            "tc": (
                "TimeoutControl",
                {"uniqueIdentifier": unique, "requestLocation": "InputRoot.XMLNSC.TimeoutRequest"},
            ),
            "f": ("MQOutput", {"queueName": failures}),
        },
        ["in.out -> tc", "tc.failure -> f"],
        name=f"{name}Control",
    )
    notify = flow(
        {
            "tn": ("TimeoutNotification", {"uniqueIdentifier": unique, "operationMode": "controlled"}),
            "c": ("Compute", {"esql": FIRED}),
            "o": ("MQOutput", {"queueName": dst}),
        },
        ["tn.out -> c", "c.out -> o"],
        name=f"{name}Notify",
        additionalInstances=1,
    )
    return [control, notify]


def request(action: str, ident: str, **fields: object) -> bytes:
    extra = "".join(f"<{k}>{v}</{k}>" for k, v in fields.items())
    return f"<TimeoutRequest><Action>{action}</Action><Identifier>{ident}</Identifier>{extra}</TimeoutRequest>".encode()


@pytest.fixture
def timers(qm, queues, group):
    n = next(_n)
    unique = f"timers-{n}-{time.time_ns()}"
    src, dst, failures = queues(f"TC{n}.IN"), queues(f"TC{n}.OUT"), queues(f"TC{n}.FAIL")
    for doc in pair(unique, src, dst, failures, f"Timers{n}"):
        group.deploy(doc)
    return src, dst, failures


def put(qm, queue: str, body: bytes) -> None:
    qm.put(queue, body, MessageDescriptor(persistence=1))


def test_a_set_timeout_propagates_the_stored_message_once(qm, timers) -> None:
    src, dst, _ = timers
    put(qm, src, request("SET", "once", order="A-1"))
    (fired,) = get_all(qm, dst, 1, wait=10)
    assert fired.body == b"<fired><id>once</id><count>1</count><order>A-1</order></fired>"
    time.sleep(2.5)
    assert qm.get(dst) is None


def test_a_repeating_timeout_fires_count_times(qm, timers) -> None:
    src, dst, _ = timers
    put(qm, src, request("SET", "thrice", Interval=1, Count=3, order="B"))
    got = get_all(qm, dst, 3, wait=15)
    assert [m.body for m in got] == [
        f"<fired><id>thrice</id><count>{i}</count><order>B</order></fired>".encode() for i in (1, 2, 3)
    ]
    time.sleep(2.5)
    assert qm.get(dst) is None


def test_cancel_stops_a_series_and_a_set_replaces_one(qm, timers) -> None:
    src, dst, _ = timers
    later = (dt.datetime.now(dt.UTC) + dt.timedelta(seconds=3)).strftime("%H:%M:%S")
    put(qm, src, request("SET", "never", StartTime=later, order="C"))
    put(qm, src, request("CANCEL", "never"))
    put(qm, src, request("SET", "replaced", StartTime=later, order="old"))
    put(qm, src, request("SET", "replaced", order="new"))
    got = get_all(qm, dst, 1, wait=10)
    assert [m.body for m in got] == [b"<fired><id>replaced</id><count>1</count><order>new</order></fired>"]
    time.sleep(5)
    assert qm.get(dst) is None


def test_overwrite_refused_and_bad_requests_go_to_failure_naming_the_field(qm, timers) -> None:
    src, dst, failures = timers
    later = (dt.datetime.now(dt.UTC) + dt.timedelta(seconds=30)).strftime("%H:%M:%S")
    put(qm, src, request("SET", "kept", StartTime=later))
    bad = [
        request("SET", "kept", AllowOverwrite="FALSE"),
        request("PAUSE", "x"),
        request("SET", "x", Count=0),
        request("SET", "x", Count=5),
        request("SET", "x", StartDate="tomorrow"),
        request("SET", "x", IgnoreMissed="maybe"),
        b"<notARequest/>",
    ]
    for body in bad:
        put(qm, src, body)
    got = get_all(qm, failures, len(bad), wait=20)
    assert sorted(m.body for m in got) == sorted(bad)
    assert qm.get(dst) is None


def test_controlled_mode_needs_a_unique_identifier_and_the_request_location_a_path() -> None:
    doc = flow({"tn": ("TimeoutNotification", {"operationMode": "controlled"})}, [])
    with pytest.raises(FlowCompileError) as refused:
        compile_flow(doc)
    assert refused.value.problems[0].property == "uniqueIdentifier"
    doc = flow(
        {
            "in": ("MQInput", {"queueName": "Q"}),
            "tc": ("TimeoutControl", {"uniqueIdentifier": "u", "requestLocation": "Elsewhere.x"}),
        },
        ["in.out -> tc"],
    )
    with pytest.raises(FlowCompileError) as refused:
        compile_flow(doc)
    assert refused.value.problems[0].property == "requestLocation"


def _failing_notify(unique: str, dst: str, failures: str | None, name: str) -> dict:
    nodes = {
        "tn": ("TimeoutNotification", {"uniqueIdentifier": unique, "operationMode": "controlled"}),
        "c": ("Compute", {"esql": FIRED}),
        "o": ("MQOutput", {"queueName": dst}),
        "x": ("Throw", {"messageText": "the fired flow fails"}),
    }
    wires = ["tn.out -> c", "c.out -> o", "o.out -> x"]
    if failures:
        nodes["f"] = ("MQOutput", {"queueName": failures})
        wires.append("tn.failure -> f")
    return flow(nodes, wires, name=name)


def test_a_failing_timeout_goes_to_failure_once_and_its_series_moves_on(qm, queues, group) -> None:
    n = next(_n)
    unique = f"failing-{n}-{time.time_ns()}"
    src, dst, failures, refused = (queues(f"TCF{n}.{k}") for k in ("IN", "OUT", "FAIL", "REFUSED"))
    control, _ = pair(unique, src, dst, refused, f"TimersF{n}")
    group.deploy(control)
    deployed = group.deploy(_failing_notify(unique, dst, failures, f"TimersF{n}Notify"))
    put(qm, src, request("SET", "twice", Interval=1, Count=2, order="F"))
    got = get_all(qm, failures, 2, wait=15)
    # the stored message, as the flow got it; its output was backed out with the failed attempt
    assert [m.body for m in got] == [request("SET", "twice", Interval=1, Count=2, order="F")] * 2
    time.sleep(2.5)
    assert qm.get(failures) is None and qm.get(dst) is None
    stats = deployed.compiled.nodes["tn"].stats
    assert stats.messages_in == 2 and stats.errors == 2  # each unwound to it; failure took each


def test_a_failing_timeout_nothing_takes_is_backed_out_and_fired_again(qm, queues, group) -> None:
    n = next(_n)
    unique = f"retried-{n}-{time.time_ns()}"
    src, dst, refused = (queues(f"TCR{n}.{k}") for k in ("IN", "OUT", "REFUSED"))
    control, _ = pair(unique, src, dst, refused, f"TimersR{n}")
    group.deploy(control)
    deployed = group.deploy(_failing_notify(unique, dst, None, f"TimersR{n}Notify"))
    put(qm, src, request("SET", "again", order="R"))
    thrower = deployed.compiled.nodes["x"]
    deadline = time.monotonic() + 15
    while thrower.stats.messages_in < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert thrower.stats.messages_in >= 2  # the same timeout, fired again next tick
    assert deployed.compiled.nodes["tn"].stats.backouts == 0
    assert get_all(qm, dst, 1, wait=0.5) == []  # each attempt's output was backed out
