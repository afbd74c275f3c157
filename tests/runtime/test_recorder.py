"""Recordings of the flow exerciser in-process: every connection crossed, bounds, plain wires when off."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

from flowbroker.runtime.harness import FlowHarness, flow
from flowbroker.runtime.message_view import Limits
from flowbroker.runtime.recorder import RecordingSpec, Tap

ESQL = """CREATE COMPUTE MODULE Double
  CREATE FUNCTION Main() RETURNS BOOLEAN
  BEGIN
    SET OutputRoot = InputRoot;
    SET OutputRoot.XMLNSC.order.qty = CAST(InputRoot.XMLNSC.order.qty AS INTEGER) * 2;
    RETURN TRUE;
  END;
END MODULE;
"""


def _harness() -> FlowHarness:
    return FlowHarness(
        flow(
            {
                "in": ("MQInput", {"queueName": "UNUSED", "messageDomain": "XMLNSC"}),
                "c": ("Compute", {"esql": ESQL}),
                "f": (
                    "Filter",
                    {
                        "esql": "CREATE FILTER MODULE F CREATE FUNCTION Main() RETURNS BOOLEAN BEGIN RETURN Root.XMLNSC.order.qty > 5; END; END MODULE;"
                    },
                ),
            },
            ["in.out -> c", "c.out -> f"],
        )
    )


def _spec(**changes: object) -> RecordingSpec:
    values: dict[str, object] = {
        "id": uuid.uuid4().hex,
        "max_messages": 2,
        "seconds": 60.0,
        "max_bytes": 1 << 20,
    }
    values.update(changes)
    return RecordingSpec(**values)  # type: ignore[arg-type]


def _lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_each_connection_crossed_is_recorded_with_the_message_as_it_was_there(tmp_path: Path) -> None:
    h = _harness()
    spec = _spec()
    recording = h.deployed.start_recording(tmp_path, spec)
    h.inject("in", b"<order><qty>3</qty></order>", domain="XMLNSC")
    crossings = _lines(tmp_path / f"{spec.id}.jsonl")
    connections = [c["connection"] for c in crossings if not c["to"]["node"].startswith("tap:")]
    assert connections == ["in.out->c.in", "c.out->f.in"]
    by_connection = {c["connection"]: c for c in crossings}
    before = by_connection["in.out->c.in"]["view"]["body"]["text"]
    after = by_connection["c.out->f.in"]["view"]["body"]["text"]
    assert "<qty>3</qty>" in before and "<qty>6</qty>" in after
    index = _lines(tmp_path / f"{spec.id}.index.jsonl")
    assert [i["seq"] for i in index] == list(range(1, len(crossings) + 1))
    first = index[0]
    raw = (tmp_path / f"{spec.id}.jsonl").read_bytes()[first["offset"] : first["offset"] + first["length"]]
    assert json.loads(raw)["connection"] == first["connection"]
    assert recording.active
    # the second message is the last one allowed: the recording completes and the wires are plain again
    h.inject("in", b"<order><qty>4</qty></order>", domain="XMLNSC")
    assert not recording.active
    state = json.loads((tmp_path / f"{spec.id}.json").read_text())
    assert state["status"] == "complete" and state["reason"] == "2 messages recorded"
    assert state["messages"] == 2
    assert not any(
        isinstance(t, Tap) for n in h.compiled.nodes.values() for w in n.wires.values() for t, _ in w
    )
    h.inject("in", b"<order><qty>5</qty></order>", domain="XMLNSC")
    assert len(_lines(tmp_path / f"{spec.id}.jsonl")) == len(crossings) * 2


def test_a_recording_that_would_pass_its_size_stops_with_the_reason(tmp_path: Path) -> None:
    h = _harness()
    spec = _spec(max_messages=50, max_bytes=6000, limits=Limits(max_body_bytes=1000))
    recording = h.deployed.start_recording(tmp_path, spec)
    for _ in range(10):
        h.inject("in", b"<order><qty>3</qty><pad>" + b"x" * 900 + b"</pad></order>", domain="XMLNSC")
    assert (tmp_path / f"{spec.id}.jsonl").stat().st_size <= 6000
    # the stop finishes on its own thread, after the crossing that passed the size
    assert recording.finished.wait(30)
    state = json.loads((tmp_path / f"{spec.id}.json").read_text())
    assert state["reason"] == "the recording reached its size limit of 6,000 bytes"


def test_ten_megabyte_message_is_recorded_truncated(tmp_path: Path) -> None:
    h = FlowHarness(
        flow(
            {"in": ("MQInput", {"queueName": "UNUSED", "messageDomain": "BLOB"}), "p": ("Passthrough", {})},
            ["in.out -> p"],
        )
    )
    spec = _spec(max_messages=1, max_bytes=4 << 20)
    h.deployed.start_recording(tmp_path, spec)
    h.inject("in", b"\x01" * (10 * 1024 * 1024), domain="BLOB")
    (crossing,) = [c for c in _lines(tmp_path / f"{spec.id}.jsonl") if c["to"]["node"] == "p"]
    view = crossing["view"]
    assert view["truncated"] is True
    assert view["body"]["bytes"] == 10 * 1024 * 1024
    assert "the body is 10,485,760 bytes: only the first 262,144 are shown" in view["notices"]
    assert (tmp_path / f"{spec.id}.jsonl").stat().st_size < 4 << 20


def test_recordings_expire_and_a_lost_one_says_so(tmp_path: Path) -> None:
    import time

    from flowbroker.runtime.recorder import write_json
    from flowbroker.services import recordings

    old, fresh, lost = (uuid.uuid4().hex for _ in range(3))
    now = time.time()
    write_json(
        tmp_path / f"{old}.json", {"id": old, "status": "complete", "requestedAt": now - 7200, "seconds": 60}
    )
    (tmp_path / f"{old}.jsonl").write_text("{}\n")
    (tmp_path / f"{old}.index.jsonl").write_text("{}\n")
    write_json(
        tmp_path / f"{fresh}.json",
        {"id": fresh, "status": "complete", "requestedAt": now - 10, "seconds": 60},
    )
    write_json(
        tmp_path / f"{lost}.json",
        {"id": lost, "status": "recording", "requestedAt": now - 600, "seconds": 60},
    )
    assert recordings.expire(tmp_path, ttl=3600) == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([f"{fresh}.json", f"{lost}.json"])
    gone = recordings.describe(tmp_path, lost)
    assert (gone["status"], gone["reason"]) == (
        "failed",
        "the execution group stopped before the recording ended",
    )
    assert recordings.describe(tmp_path, fresh)["status"] == "complete"


def test_connections_into_and_out_of_a_subflow_are_named_as_its_canvas_draws_them(tmp_path: Path) -> None:
    inner = flow(
        {
            "i": ("Input", {"terminalName": "in"}),
            "p": ("Passthrough", {}),
            "o": ("Output", {"terminalName": "done"}),
        },
        ["i.out -> p", "p.out -> o"],
        name="Inner",
    )
    h = FlowHarness(
        flow(
            {
                "in": ("MQInput", {"queueName": "UNUSED"}),
                "s": ("Subflow", {"flow": inner}),
                "after": ("Passthrough", {}),
            },
            ["in.out -> s.in", "s.done -> after"],
        )
    )
    spec = _spec(max_messages=1)
    h.deployed.start_recording(tmp_path, spec)
    h.inject("in", b"x")
    crossed = [
        c["connection"]
        for c in _lines(tmp_path / f"{spec.id}.jsonl")
        if not c["to"]["node"].startswith("tap:")
    ]
    assert crossed == ["in.out->s.in", "s/i.out->s/p.in", "s/p.out->s/o.in", "s.done->after.in"]
