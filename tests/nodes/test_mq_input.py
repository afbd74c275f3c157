"""MQInput: gets from its queue, runs the flow in a unit of work by transaction mode, backs out failures."""

from __future__ import annotations

import json
import logging
import sys
import time

import pytest
from flowbroker.qm.protocol import MessageDescriptor
from flowbroker.runtime.harness import flow, get_all

pytestmark = pytest.mark.timeout(60)


def _passthrough(src: str, dst: str, **input_props: object) -> dict:
    return flow(
        {"in": ("MQInput", {"queueName": src, **input_props}), "out": ("MQOutput", {"queueName": dst})},
        ["in.out -> out"],
        name=f"Pass{src.replace('.', '')}",
    )


def _xml_reader(src: str, dst: str, **input_props: object) -> dict:
    """Reads a field of the XMLNSC body (a parse), then puts the message on ``dst``."""
    return flow(
        {
            "in": ("MQInput", {"queueName": src, "messageDomain": "XMLNSC", **input_props}),
            "t": ("Trace", {"destination": "none", "pattern": "${Root.XMLNSC.a}"}),
            "read": ("Trace", {"destination": "log", "pattern": "${Root.XMLNSC.a}"}),
            "out": ("MQOutput", {"queueName": dst}),
        },
        ["in.out -> read", "read.out -> out"],
        name=f"Xml{src.replace('.', '')}",
    )


def test_messages_flow_from_input_to_output_unchanged(qm, queues, group) -> None:
    src, dst = queues("IN"), queues("OUT")
    group.deploy(_passthrough(src, dst))
    bodies = [f"message {i}".encode() * 20 for i in range(20)]
    for body in bodies:
        qm.put(src, body)
    got = get_all(qm, dst, len(bodies))
    assert sorted(m.body for m in got) == sorted(bodies)
    stats = group.statistics()[f"Pass{src.replace('.', '')}"]
    assert stats["messages_in"] == 20 and stats["errors"] == 0


def test_poison_message_reaches_the_backout_queue_while_others_flow(qm, queues, group, tmp_path) -> None:
    boq = queues("BO")
    src, dst = queues("IN", backout_threshold=3, backout_requeue_q=boq), queues("OUT")
    group.deploy(_xml_reader(src, dst))
    persistent = MessageDescriptor(persistence=1)
    qm.put(src, b"<a>1</a>", persistent)
    qm.put(src, b"<a>not closed", persistent)
    for i in range(2, 6):
        qm.put(src, f"<a>{i}</a>".encode(), persistent)
    got = get_all(qm, dst, 5)
    assert sorted(m.body for m in got) == [f"<a>{i}</a>".encode() for i in range(1, 6)]
    poisoned = get_all(qm, boq, 1)
    assert [m.body for m in poisoned] == [b"<a>not closed"]
    assert poisoned[0].md.backout_count >= 3
    # each backout is counted to the node where the exception began, and to the flow
    flow_stats = group.statistics()[f"Xml{src.replace('.', '')}"]
    assert flow_stats["nodes"]["read"]["backouts"] == 3
    assert flow_stats["nodes"]["out"]["backouts"] == 0 and flow_stats["nodes"]["in"]["backouts"] == 0
    assert flow_stats["backouts"] == 3
    # as the statistics payload and Prometheus metrics serve them
    from flowbroker.services import stats

    record = {"broker": "b", "group": "g", "time": time.time(), "flows": group.statistics()}
    (tmp_path / "stats" / "b").mkdir(parents=True)
    (tmp_path / "stats" / "b" / "g.json").write_text(json.dumps(record))
    (row,) = [r for r in stats.flows(tmp_path) if r["flow"] == f"Xml{src.replace('.', '')}"]
    assert row["backouts"] == 3
    metrics = stats.prometheus(tmp_path).splitlines()
    flow_label = f'flowbroker_node_backouts_total{{broker="b",group="g",flow="{row["flow"]}"'
    assert f'{flow_label},node="read"}} 3' in metrics
    assert f'{flow_label},node="out"}} 0' in metrics


def test_non_transactional_failure_goes_to_the_dead_letter_queue_with_a_reason(qm, queues, group) -> None:
    src, dst = queues("IN"), queues("OUT")
    qm.purge("SYSTEM.DEAD.LETTER.QUEUE")
    group.deploy(_xml_reader(src, dst, transactionMode="no"))
    qm.put(src, b"<a>broken")
    dead = get_all(qm, "SYSTEM.DEAD.LETTER.QUEUE", 1)
    assert [m.body for m in dead] == [b"<a>broken"]
    reason = dead[0].properties["flowbroker.reason"]
    assert reason.startswith("RecoverableException in read: ")
    assert reason.endswith(
        "; caused by ParserException in read: XMLNSC: malformed XML at line 1, column 10 "
        "(byte offset 9): Premature end of data in tag a line 1, line 1, column 10"
    ), reason
    assert dead[0].properties["flowbroker.flow"] == f"Xml{src.replace('.', '')}"


def test_catch_terminal_receives_the_exception_list_and_commits(qm, queues, group) -> None:
    src, errors = queues("IN"), queues("ERR")
    doc = flow(
        {
            "in": ("MQInput", {"queueName": src}),
            "boom": ("Throw", {"messageText": "rejected", "messageNumber": 3105}),
            "report": ("Compute", {"esql": CATCH_REPORT}),
            "err": ("MQOutput", {"queueName": errors}),
        },
        ["in.out -> boom", "in.catch -> report", "report.out -> err"],
        name="CatchFlow",
    )
    group.deploy(doc)
    qm.put(src, b"payload", MessageDescriptor(persistence=1))
    (reported,) = get_all(qm, errors, 1)
    assert reported.body == (
        b"<caught><kind>UserException</kind><number>3105</number><text>rejected</text>"
        b"<node>boom</node><type>Throw</type><insert>rejected</insert><original>payload</original></caught>"
    )
    assert qm.get(src) is None


CATCH_REPORT = """CREATE COMPUTE MODULE Report
  CREATE FUNCTION Main() RETURNS BOOLEAN
  BEGIN
    DECLARE e REFERENCE TO InputExceptionList.*[1];
    SET OutputRoot.MQMD = InputRoot.MQMD;
    SET OutputRoot.XMLNSC.caught.kind = FIELDNAME(e);
    SET OutputRoot.XMLNSC.caught.number = e.Number;
    SET OutputRoot.XMLNSC.caught.text = e.Text;
    SET OutputRoot.XMLNSC.caught.node = e.Label;
    SET OutputRoot.XMLNSC.caught.type = e.Type;
    SET OutputRoot.XMLNSC.caught.insert = e.Insert.Text;
    SET OutputRoot.XMLNSC.caught.original = CAST(InputRoot.BLOB.BLOB AS CHARACTER CCSID 1208);
    RETURN TRUE;
  END;
END MODULE;
"""


def test_failure_terminal_takes_the_message_past_the_threshold(qm, queues, group) -> None:
    src, failed = queues("IN"), queues("FAILED")
    doc = flow(
        {
            "in": ("MQInput", {"queueName": src, "backoutThreshold": 2}),
            "boom": ("Throw", {}),
            "f": ("MQOutput", {"queueName": failed}),
        },
        ["in.out -> boom", "in.failure -> f"],
        name="FailureFlow",
    )
    group.deploy(doc)
    qm.put(src, b"always fails", MessageDescriptor(persistence=1))
    got = get_all(qm, failed, 1)
    assert [m.body for m in got] == [b"always fails"]
    assert group.statistics()["FailureFlow"]["backouts"] >= 2


def test_output_puts_are_backed_out_with_the_input(qm, queues, group) -> None:
    """A put before the failure is part of the unit of work: it never becomes visible."""
    boq = queues("BO")
    src, dst = queues("IN", backout_threshold=1, backout_requeue_q=boq), queues("OUT")
    doc = flow(
        {
            "in": ("MQInput", {"queueName": src}),
            "out": ("MQOutput", {"queueName": dst}),
            "boom": ("Throw", {}),
        },
        ["in.out -> out", "out.out -> boom"],
        name="PutThenFail",
    )
    group.deploy(doc)
    qm.put(src, b"x", MessageDescriptor(persistence=1))
    assert [m.body for m in get_all(qm, boq, 1)] == [b"x"]
    assert qm.get(dst) is None


def test_automatic_non_persistent_failure_gets_the_non_transactional_handling(qm, queues, group) -> None:
    """Seed 004 §2.0: automatic mode runs a non-persistent message outside a unit of work, so a failing
    one is not retried to the backout threshold: it goes to the dead-letter queue, the others flow."""
    src, dst = queues("IN", backout_threshold=5, backout_requeue_q="NEVER.USED"), queues("OUT")
    qm.purge("SYSTEM.DEAD.LETTER.QUEUE")
    for body in (b"<a>1</a>", b"<a>broken", b"<a>3</a>"):
        qm.put(src, body, MessageDescriptor(persistence=0))
    group.deploy(_xml_reader(src, dst, transactionMode="automatic"))
    assert sorted(m.body for m in get_all(qm, dst, 2)) == [b"<a>1</a>", b"<a>3</a>"]
    dead = get_all(qm, "SYSTEM.DEAD.LETTER.QUEUE", 1)
    assert [m.body for m in dead] == [b"<a>broken"]
    assert dead[0].md.backout_count <= 1


def test_flow_commit_count_sets_the_read_ahead_unless_the_node_does() -> None:
    from flowbroker.runtime.compiler import compile_flow

    doc = flow(
        {"a": ("MQInput", {"queueName": "A"}), "b": ("MQInput", {"queueName": "B", "readAhead": 7})},
        [],
        name="Counted",
        commitCount=3,
    )
    nodes = compile_flow(doc).nodes
    assert (nodes["a"].read_ahead, nodes["b"].read_ahead) == (3, 7)


def test_stopping_under_load_processes_the_batch_already_got(qm, queues, group) -> None:
    """The next batch comes back with each commit: a stop must process it, not back it out."""
    src, dst = queues("IN"), queues("OUT")
    total = 3000
    qm.put_many(src, [f"m{i}".encode() for i in range(total)], MessageDescriptor(persistence=1))
    deployed = group.deploy(_passthrough(src, dst, readAhead=16))
    while qm.inquire_queue(dst)["current_depth"] < 200:
        pass
    assert deployed.stop(timeout=20)
    left = [qm.get(src) for _ in range(qm.inquire_queue(src)["current_depth"])]
    done = [qm.get(dst) for _ in range(qm.inquire_queue(dst)["current_depth"])]
    assert all(m is not None and m.md.backout_count == 0 for m in left)
    bodies = sorted(m.body for m in left + done if m is not None)
    assert bodies == sorted(f"m{i}".encode() for i in range(total))


def test_properties_transactional_says_whether_the_flow_runs_in_a_unit_of_work(qm, queues, group) -> None:
    report = """CREATE COMPUTE MODULE Report
      CREATE FUNCTION Main() RETURNS BOOLEAN
      BEGIN
        SET OutputRoot.XMLNSC.t = InputRoot.Properties.Transactional;
        RETURN TRUE;
      END;
    END MODULE;"""
    cases = [("yes", 0, b"<t>true</t>"), ("no", 1, b"<t>false</t>"), ("automatic", 1, b"<t>true</t>")]
    for mode, persistence, expected in cases:
        src, dst = queues("IN"), queues("OUT")
        doc = flow(
            {
                "in": ("MQInput", {"queueName": src, "transactionMode": mode}),
                "c": ("Compute", {"esql": report}),
                "out": ("MQOutput", {"queueName": dst}),
            },
            ["in.out -> c", "c.out -> out"],
            name=f"Tx{mode}",
        )
        group.deploy(doc)
        qm.put(src, b"x", MessageDescriptor(persistence=persistence))
        assert [m.body for m in get_all(qm, dst, 1)] == [expected], mode


def _dead_from(qm, src: str, count: int) -> list:
    """The messages on the dead-letter queue that came from ``src`` (others' are left behind)."""
    found: list = []
    deadline = time.monotonic() + 30
    while len(found) < count and time.monotonic() < deadline:
        message = qm.get("SYSTEM.DEAD.LETTER.QUEUE", wait=0.2)
        if message is not None and message.properties.get("flowbroker.queue") == src:
            found.append(message)
    return found


def test_a_poison_message_never_loops_with_default_settings(qm, queues, group, tmp_path) -> None:
    """No threshold on the node or the queue: the group's default (3) sends the message to the
    dead-letter queue with why, the node where it failed and the exception, and the statistics
    count its retries as backouts, not as messages processed."""
    src, dst = queues("IN"), queues("OUT")
    name = f"Xml{src.replace('.', '')}"
    group.deploy(_xml_reader(src, dst))
    persistent = MessageDescriptor(persistence=1)
    qm.put(src, b"<a>1</a>", persistent)
    qm.put(src, b"<a>not closed", persistent)
    qm.put(src, b"<a>3</a>", persistent)
    assert sorted(m.body for m in get_all(qm, dst, 2)) == [b"<a>1</a>", b"<a>3</a>"]
    (dead,) = _dead_from(qm, src, 1)
    assert dead.body == b"<a>not closed" and dead.md.backout_count == 3
    props = dead.properties
    assert props["flowbroker.reason"] == "backout count 3 reached the backout threshold 3"
    assert props["flowbroker.node"] == "read" and props["flowbroker.flow"] == name
    assert (
        "ParserException in read: XMLNSC: malformed XML at line 1, column 14" in props["flowbroker.exception"]
    )
    assert qm.get(src) is None
    stats = group.statistics()[name]
    assert (stats["backouts"], stats["failures"], stats["messages_in"]) == (3, 1, 3)
    # as the statistics rows and Prometheus metrics serve them
    from flowbroker.services import stats as served

    record = {"broker": "b", "group": "g", "time": time.time(), "flows": {name: stats}}
    (tmp_path / "stats" / "b").mkdir(parents=True)
    (tmp_path / "stats" / "b" / "g.json").write_text(json.dumps(record))
    (row,) = served.flows(tmp_path)
    assert (row["backouts"], row["failures"]) == (3, 1)
    assert f'flowbroker_flow_failures_total{{broker="b",group="g",flow="{name}"}} 1' in served.prometheus(
        tmp_path
    )


def test_the_default_threshold_is_a_setting(qm, queues, group, monkeypatch) -> None:
    monkeypatch.setenv("FLOWBROKER_BACKOUT_THRESHOLD", "2")
    src, dst = queues("IN"), queues("OUT")
    group.deploy(_xml_reader(src, dst))
    qm.put(src, b"<a>broken", MessageDescriptor(persistence=1))
    (dead,) = _dead_from(qm, src, 1)
    assert dead.md.backout_count == 2
    assert dead.properties["flowbroker.reason"] == "backout count 2 reached the backout threshold 2"


def test_the_queue_managers_move_past_the_queue_threshold_names_node_and_exception(qm, queues, group) -> None:
    boq = queues("BO")
    src, dst = queues("IN", backout_threshold=2, backout_requeue_q=boq), queues("OUT")
    group.deploy(_xml_reader(src, dst))
    qm.put(src, b"<a>broken", MessageDescriptor(persistence=1))
    (moved,) = get_all(qm, boq, 1)
    props = moved.properties
    assert props["flowbroker.queue"] == src and props["flowbroker.node"] == "read"
    assert props["flowbroker.reason"] == f"backout count 2 reached the backout threshold 2 of {src}"
    assert "ParserException in read" in props["flowbroker.exception"]
    assert group.statistics()[f"Xml{src.replace('.', '')}"]["failures"] == 1


def test_retries_of_the_same_message_wait_longer_each_time(qm, queues, group, monkeypatch) -> None:
    monkeypatch.setenv("FLOWBROKER_BACKOUT_DELAY_MS", "300")
    src, dst = queues("IN"), queues("OUT")
    group.deploy(_xml_reader(src, dst))
    started = time.monotonic()
    qm.put(src, b"<a>broken", MessageDescriptor(persistence=1))
    assert len(_dead_from(qm, src, 1)) == 1
    # three backouts: waits of 300 and 600 ms before the second and third tries, 1.2 s before the give-up
    assert time.monotonic() - started >= 2.1


def test_the_retry_delay_grows_and_is_bounded(monkeypatch) -> None:
    from flowbroker.runtime.backout import retry_delay

    monkeypatch.setenv("FLOWBROKER_BACKOUT_DELAY_MS", "100")
    monkeypatch.setenv("FLOWBROKER_BACKOUT_DELAY_MAX_MS", "1000")
    assert [retry_delay(n) for n in range(6)] == [0.0, 0.1, 0.2, 0.4, 0.8, 1.0]
    monkeypatch.setenv("FLOWBROKER_BACKOUT_DELAY_MS", "0")
    assert retry_delay(5) == 0.0


def test_a_repeated_error_is_logged_once_with_a_count(qm, queues, group, caplog, monkeypatch) -> None:
    monkeypatch.setenv("FLOWBROKER_BACKOUT_DELAY_MS", "0")
    caplog.set_level(logging.INFO, logger="flowbroker.runtime")
    src, dst = queues("IN"), queues("OUT")
    group.deploy(_xml_reader(src, dst, backoutThreshold=6))
    qm.put(src, b"<a>broken", MessageDescriptor(persistence=1))
    _dead_from(qm, src, 1)
    name = f"Xml{src.replace('.', '')}"
    assert group.statistics()[name]["backouts"] == 6
    mine = [r.getMessage() for r in caplog.records if name in r.getMessage()]
    assert sum("backing out the unit of work" in text for text in mine) == 1, mine
    # a different error ends the run of repeats and reports its count
    qm.put(src, b"<a>broken too", MessageDescriptor(persistence=1))
    _dead_from(qm, src, 1)
    mine = [r.getMessage() for r in caplog.records if name in r.getMessage()]
    assert any("the previous error was repeated 5 more times" in text for text in mine), mine


def test_each_flow_thread_processes_only_the_messages_its_unit_of_work_got(
    qm, queues, group, monkeypatch
) -> None:
    """Additional instances share the MQInput node: the batch one thread gets with its commit is
    that thread's, so no other thread processes (and commits) it under its own unit of work."""
    from flowbroker.runtime.engine import FlowThread

    got_by: dict[bytes, str] = {}
    processed_by: dict[bytes, str] = {}
    get_batch, commit_and_get, build = (
        FlowThread.get_batch,
        FlowThread.commit_and_get,
        FlowThread.build_assembly,
    )

    def noting(method):
        def wrapper(self, *args):
            got = method(self, *args)
            for message in got:
                got_by[message.md.msg_id] = self.name
            return got

        return wrapper

    def building(self, message, template):
        processed_by[message.md.msg_id] = self.name
        return build(self, message, template)

    monkeypatch.setattr(FlowThread, "get_batch", noting(get_batch))
    monkeypatch.setattr(FlowThread, "commit_and_get", noting(commit_and_get))
    monkeypatch.setattr(FlowThread, "build_assembly", building)
    # threads switch as often as the interpreter can, so any sharing between them shows
    previous = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        _run_instances(qm, queues, group)
    finally:
        sys.setswitchinterval(previous)
    strays = {k: (got_by.get(k), v) for k, v in processed_by.items() if got_by.get(k) != v}
    assert not strays, f"{len(strays)} messages processed by another thread than the one that got them"


def _run_instances(qm, queues, group) -> None:
    src, dst = queues("IN"), queues("OUT")
    total = 3000
    qm.put_many(src, [f"m{i}".encode() for i in range(total)], MessageDescriptor(persistence=1))
    group.deploy(_passthrough(src, dst, readAhead=4), additional_instances=2)
    assert len(get_all(qm, dst, total, wait=20)) == total
