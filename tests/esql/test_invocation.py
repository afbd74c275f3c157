"""One node invocation: CURRENT_… give one moment; SLEEP and INSTANCESTOPPING see the flow's stop request.

IBM documents that every CURRENT_… value is fixed for one invocation of a node, and a stop
request is no ESQL error: handlers cannot catch it.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from esql.compiler import compile_program
from esql.runtime import ExecutionContext, StopRequested

MOMENTS = """
CREATE COMPUTE MODULE Moments
  CREATE FUNCTION Main() RETURNS BOOLEAN
  BEGIN
    SET OutputRoot.XMLNSC.t.ts1 = CURRENT_TIMESTAMP;
    SET OutputRoot.XMLNSC.t.gmt1 = CURRENT_GMTTIMESTAMP;
    SET OutputRoot.XMLNSC.t.time1 = CURRENT_TIME;
    SET OutputRoot.XMLNSC.t.slept = SLEEP(30);
    SET OutputRoot.XMLNSC.t.ts2 = CURRENT_TIMESTAMP;
    SET OutputRoot.XMLNSC.t.gmt2 = CURRENT_GMTTIMESTAMP;
    SET OutputRoot.XMLNSC.t.time2 = CURRENT_TIME;
    SET OutputRoot.XMLNSC.t.stopping = INSTANCESTOPPING();
    RETURN TRUE;
  END;
END MODULE;
"""


def test_current_values_are_one_moment_in_a_run() -> None:
    program = compile_program(MOMENTS, "moments.esql")
    first = ExecutionContext()
    program.main_module().run(first)
    t = first.output_root.child("XMLNSC").child("t")
    assert t.child("ts1").value == t.child("ts2").value
    assert t.child("gmt1").value == t.child("gmt2").value
    assert t.child("time1").value == t.child("time2").value
    assert t.child("slept").value is True
    assert t.child("stopping").value is False
    time.sleep(0.01)
    second = ExecutionContext()
    program.main_module().run(second)
    # a new run is a new invocation, with its own moment
    assert second.output_root.child("XMLNSC").child("t").child("ts1").value != t.child("ts1").value


def test_sleep_wakes_on_a_stop_request_and_instancestopping_reports_it() -> None:
    source = """
SET OutputRoot.XMLNSC.t.slept = SLEEP(600000);
SET OutputRoot.XMLNSC.t.stopping = INSTANCESTOPPING();
"""
    program = compile_program(source, "sleep.esql")
    stop = threading.Event()
    timer = threading.Timer(0.2, stop.set)
    timer.start()
    started = time.monotonic()
    ctx = ExecutionContext(stop=stop)
    program.main_module().run(ctx)
    timer.join()
    assert time.monotonic() - started < 30
    t = ctx.output_root.child("XMLNSC").child("t")
    assert t.child("slept").value is False
    assert t.child("stopping").value is True


def test_a_stop_request_cannot_be_caught_by_a_handler() -> None:
    source = """
DECLARE n INTEGER 0;
BEGIN
  DECLARE CONTINUE HANDLER FOR SQLSTATE LIKE '%' SET OutputRoot.XMLNSC.t.caught = SQLSTATE;
  WHILE TRUE DO
    SET n = n + 1;
  END WHILE;
END;
SET OutputRoot.XMLNSC.t.after = 'stop was swallowed';
"""
    program = compile_program(source, "stop.esql")
    stop = threading.Event()
    stop.set()
    ctx = ExecutionContext(stop=stop)
    with pytest.raises(StopRequested):
        program.main_module().run(ctx)
    assert ctx.output_root.child("XMLNSC") is None


NODE_MOMENTS = """
CREATE {kind} MODULE Moments
  CREATE FUNCTION Main() RETURNS BOOLEAN
  BEGIN
    SET Environment.Variables.{node}.ts1 = CURRENT_TIMESTAMP;
    SET Environment.Variables.{node}.slept = SLEEP(20);
    SET Environment.Variables.{node}.ts2 = CURRENT_TIMESTAMP;
    SET Environment.Variables.{node}.gmt = CURRENT_GMTTIMESTAMP;
    SET Environment.Variables.{node}.stopping = INSTANCESTOPPING();
    RETURN TRUE;
  END;
END MODULE;
"""


def test_compute_filter_and_database_nodes_run_one_invocation_each(tmp_path: Path) -> None:
    from flowbroker.runtime.harness import FlowHarness, flow

    doc = flow(
        {
            "in": ("MQInput", {"queueName": "UNUSED", "messageDomain": "XMLNSC"}),
            "c": ("Compute", {"esql": NODE_MOMENTS.format(kind="COMPUTE", node="c")}),
            "f": ("Filter", {"esql": NODE_MOMENTS.format(kind="FILTER", node="f")}),
            "d": ("Database", {"esql": NODE_MOMENTS.format(kind="DATABASE", node="d"), "dataSource": "db"}),
        },
        ["in.out -> c", "c.out -> f", "f.true -> d"],
    )
    h = FlowHarness(doc, data_sources={"db": f"sqlite:///{tmp_path / 'inv.db'}"})
    try:
        h.inject("in", b"<m/>", domain="XMLNSC")
        (out,) = h.seen("d", "out")
        variables = out.environment.child("Variables")
        moments = []
        for node in ("c", "f", "d"):
            v = variables.child(node)
            assert v.child("ts1").value == v.child("ts2").value, node
            assert v.child("slept").value is True
            assert v.child("stopping").value is False
            moments.append(v.child("gmt").value)
        # each node invocation has its own moment, later than the one before it
        assert moments[0] < moments[1] < moments[2]
    finally:
        h.close()


def test_nodes_see_the_flow_threads_stop_request(tmp_path: Path) -> None:
    from flowbroker.runtime.harness import FlowHarness, flow

    doc = flow(
        {
            "in": ("MQInput", {"queueName": "UNUSED", "messageDomain": "XMLNSC"}),
            "c": ("Compute", {"esql": NODE_MOMENTS.format(kind="COMPUTE", node="c")}),
        },
        ["in.out -> c"],
    )
    h = FlowHarness(doc)
    try:
        h.thread.stop.set()
        h.inject("in", b"<m/>", domain="XMLNSC")
        (out,) = h.seen("c", "out")
        v = out.environment.child("Variables").child("c")
        assert v.child("stopping").value is True
        assert v.child("slept").value is False
    finally:
        h.close()


def test_run_invocation_is_one_invocation_like_the_context_manager_and_restores_on_error() -> None:
    from esql import functions
    from esql.functions import datetimes, misc

    program = compile_program(MOMENTS, "moments.esql")
    routine = program.main_module()
    stop = threading.Event()
    ctx = ExecutionContext(stop=stop)
    assert routine.run_invocation(ctx, stop) is True
    t = ctx.output_root.child("XMLNSC").child("t")
    assert t.child("ts1").value == t.child("ts2").value
    assert t.child("gmt1").value == t.child("gmt2").value
    assert t.child("stopping").value is False
    # nothing of the invocation is left behind: outside it, no moment and no stop request
    assert not functions.in_invocation()
    assert misc.STOP_SIGNAL.get() is None and datetimes.INVOCATION_INSTANT.get() is None
    stop.set()
    stopped = ExecutionContext(stop=stop)
    assert routine.run_invocation(stopped, stop) is True
    assert stopped.output_root.child("XMLNSC").child("t").child("stopping").value is True
    failing = compile_program("SET OutputRoot.XMLNSC.a = 1 / 0;", "fail.esql").main_module()
    with pytest.raises(Exception, match="(?i)divi"):
        failing.run_invocation(ExecutionContext(), None)
    assert misc.STOP_SIGNAL.get() is None and datetimes.INVOCATION_INSTANT.get() is None
