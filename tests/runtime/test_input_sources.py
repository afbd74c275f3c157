"""The flow thread's loop over an input node's own source: the node supplies the arrivals and the
assembly of each; the flow thread counts, propagates, commits, backs out and takes failures."""

from __future__ import annotations

from typing import Any

from esql.tree import Element
from flowbroker.runtime.engine import FlowThread
from flowbroker.runtime.harness import FlowHarness, flow
from flowbroker_nodes.base import ArrivedMessage, Assembly, FlowServices, describe_exception_list

FAIL_ON_BAD = """CREATE COMPUTE MODULE T CREATE FUNCTION Main() RETURNS BOOLEAN BEGIN
  IF InputRoot.BLOB.BLOB = X'626164' THEN THROW USER EXCEPTION VALUES('bad record'); END IF;
  SET OutputRoot = InputRoot;
  RETURN TRUE;
END; END MODULE;"""


class Listed:
    """An input source handing out fixed batches of bodies, then stopping the flow."""

    transactional = True

    def __init__(self, flow: FlowServices, batches: list[list[bytes]]) -> None:
        self.flow = flow
        self.batches = batches
        self.ended: list[tuple[list[bytes], bool]] = []
        self.unhandled_seen: list[tuple[bytes, str]] = []
        self.closed = 0

    def next(self) -> list[bytes]:
        if not self.batches:
            self.flow.stop.set()
            return []
        return self.batches.pop(0)

    def assembly(self, body: bytes) -> tuple[str, Assembly]:
        return "out", self.flow.build_assembly(ArrivedMessage(body=body), {"domain": "BLOB"})  # type: ignore[arg-type]

    def failure_assembly(self, body: bytes, assembly: Assembly | None, errors: Element) -> Assembly:
        assert assembly is not None
        return assembly.replace(exception_list=errors)

    def unhandled(self, body: bytes, errors: Element, note: str) -> bool:
        self.unhandled_seen.append((body, note))
        return False

    def done(self, arrivals: list[bytes], complete: bool) -> None:
        self.ended.append((list(arrivals), complete))

    def close(self) -> None:
        self.closed += 1


def _run(batches: list[list[bytes]], failure: bool) -> tuple[FlowHarness, Listed]:
    doc = flow(
        {"in": ("TimeoutNotification", {}), "c": ("Compute", {"esql": FAIL_ON_BAD, "module": "T"})},
        ["in.out -> c"],
    )
    harness = FlowHarness(doc)
    if failure:
        harness.tap("in", "failure")
    node = harness.compiled.nodes["in"]
    sources: list[Listed] = []

    def open_input(services: Any) -> Listed:
        sources.append(Listed(services, batches))
        return sources[-1]

    node.open_input = open_input  # type: ignore[method-assign]
    thread = FlowThread(harness.deployed, node, 0)
    thread.run()  # on this thread: until the source has no batch left and stops the flow
    assert len(sources) == 1 and sources[0].closed == 1
    return harness, sources[0]


def _bodies(seen: list[Assembly]) -> list[bytes]:
    found = []
    for assembly in seen:
        blob = assembly.root.child("BLOB")
        value = blob.child("BLOB").value if blob is not None and blob.child("BLOB") is not None else None
        found.append(bytes(value or b""))
    return found


def test_a_failure_nothing_takes_ends_the_batch_and_the_source_says_what_happens() -> None:
    harness, source = _run([[b"a", b"bad", b"c"], [b"d"]], failure=False)
    assert _bodies(harness.seen("c", "out")) == [b"a", b"d"]  # c of the failed batch never ran
    assert source.ended == [([b"a", b"bad", b"c"], False), ([b"d"], True)]
    assert [body for body, _ in source.unhandled_seen] == [b"bad"]
    assert "bad record" in source.unhandled_seen[0][1]
    stats = harness.compiled.nodes["in"].stats
    assert stats.messages_in == 3 and stats.messages_out == 3


def test_the_failure_terminal_takes_a_failed_arrival_and_the_batch_goes_on() -> None:
    harness, source = _run([[b"a", b"bad", b"c"]], failure=True)
    assert _bodies(harness.seen("c", "out")) == [b"a", b"c"]
    failed = harness.seen("in", "failure")
    assert _bodies(failed) == [b"bad"]
    assert "bad record" in describe_exception_list(failed[0].exception_list)
    assert source.ended == [([b"a", b"bad", b"c"], True)] and source.unhandled_seen == []
    assert harness.compiled.nodes["in"].stats.messages_in == 3


class Gone(Listed):
    """A source whose failed arrivals' work ended meanwhile (a timed record taken by another)."""

    def failure_assembly(self, body: bytes, assembly: Assembly | None, errors: Element) -> None:
        return None


def test_a_failed_arrival_with_nothing_left_for_the_failure_terminal_is_committed_and_the_batch_goes_on() -> (
    None
):
    doc = flow(
        {"in": ("TimeoutNotification", {}), "c": ("Compute", {"esql": FAIL_ON_BAD, "module": "T"})},
        ["in.out -> c"],
    )
    harness = FlowHarness(doc)
    harness.tap("in", "failure")
    node = harness.compiled.nodes["in"]
    sources: list[Gone] = []

    def open_input(services: Any) -> Gone:
        sources.append(Gone(services, [[b"a", b"bad", b"c"]]))
        return sources[-1]

    node.open_input = open_input  # type: ignore[method-assign]
    FlowThread(harness.deployed, node, 0).run()
    (source,) = sources
    assert _bodies(harness.seen("c", "out")) == [b"a", b"c"]
    assert harness.seen("in", "failure") == []
    assert source.ended == [([b"a", b"bad", b"c"], True)] and source.unhandled_seen == []


class Unmade(Listed):
    """A source that cannot make the failure terminal's message of a failed arrival."""

    def failure_assembly(self, body: bytes, assembly: Assembly | None, errors: Element) -> Assembly:
        raise ValueError("the record is gone from under the failure path")


def test_a_failure_message_that_cannot_be_made_leaves_the_failed_arrival_to_the_source() -> None:
    doc = flow(
        {"in": ("TimeoutNotification", {}), "c": ("Compute", {"esql": FAIL_ON_BAD, "module": "T"})},
        ["in.out -> c"],
    )
    harness = FlowHarness(doc)
    harness.tap("in", "failure")
    node = harness.compiled.nodes["in"]
    sources: list[Unmade] = []

    def open_input(services: Any) -> Unmade:
        sources.append(Unmade(services, [[b"a", b"bad", b"c"], [b"d"]]))
        return sources[-1]

    node.open_input = open_input  # type: ignore[method-assign]
    FlowThread(harness.deployed, node, 0).run()
    (source,) = sources
    assert harness.seen("in", "failure") == []
    assert _bodies(harness.seen("c", "out")) == [b"a", b"d"]
    ((body, note),) = source.unhandled_seen
    assert body == b"bad"
    assert "bad record" in note
    assert "the failure path failed too" in note and "the record is gone from under the failure path" in note
    assert source.ended == [([b"a", b"bad", b"c"], False), ([b"d"], True)]
