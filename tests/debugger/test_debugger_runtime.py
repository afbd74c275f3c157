"""The step debugger in a running execution group: a real queue manager, real flow threads."""

from __future__ import annotations

import queue
import time
from typing import Any

import pytest
from flowbroker.qm.protocol import MessageDescriptor
from flowbroker.runtime.debugger import Breakpoints, DebugError, Pause, _Probe
from flowbroker.runtime.harness import flow, get_all

pytestmark = pytest.mark.timeout(60)

ADD_ONE = """CREATE COMPUTE MODULE AddOne
  CREATE FUNCTION Main() RETURNS BOOLEAN
  BEGIN
    DECLARE n INTEGER CAST(InputRoot.XMLNSC.r.a AS INTEGER);
    DECLARE label CHARACTER 'sum';
    SET OutputRoot = InputRoot;
    SET OutputRoot.XMLNSC.r.a = n + 1;
    SET OutputRoot.XMLNSC.r.b = label;
    RETURN TRUE;
  END;
END MODULE;"""


class Listener:
    def __init__(self) -> None:
        self.hits: queue.Queue[Pause] = queue.Queue()
        self.edits: list[int] = []
        self.gone: list[str] = []

    def paused(self, pause: Pause) -> None:
        self.hits.put(pause)

    def changed(self, pause: Pause) -> None:
        self.edits.append(pause.revision)

    def resumed(self, pause: Pause) -> None:
        self.gone.append(pause.id)

    def next(self, timeout: float = 10.0) -> Pause:
        return self.hits.get(timeout=timeout)


def _doc(name: str, src: str, dst: str) -> dict[str, Any]:
    return flow(
        {
            "in": ("MQInput", {"queueName": src, "messageDomain": "XMLNSC"}),
            "calc": ("Compute", {"esql": ADD_ONE}),
            "out": ("MQOutput", {"queueName": dst}),
        },
        ["in.out -> calc", "calc.out -> out"],
        name=name,
    )


def _field(view: dict[str, Any], *names: str) -> dict[str, Any]:
    """The field of a message view reached by child names from its Root."""
    tree = next(t for t in view["trees"] if t["name"] == "Root")
    node = tree
    for name in names:
        node = next(c for c in node["children"] if c["name"] == name)
    return node


def _probes(deployed: Any) -> int:
    return sum(
        isinstance(target, _Probe)
        for node in deployed.compiled.nodes.values()
        for wires in node.wires.values()
        for target, _ in wires
    )


def test_a_connection_breakpoint_pauses_the_message_which_is_edited_and_resumed(group, qm, queues) -> None:
    src, dst = queues("IN"), queues("OUT")
    deployed = group.deploy(_doc("DebugEdit", src, dst))
    listener = Listener()
    group.set_breakpoints("DebugEdit", Breakpoints(frozenset({"in.out->calc.in"})), listener)
    assert _probes(deployed) == 2
    qm.put(src, b"<r><a>41</a></r>", MessageDescriptor(persistence=1))
    pause = listener.next()
    assert (pause.kind, pause.connection, pause.node) == ("connection", "in.out->calc.in", "calc")
    view = pause.view()
    field = _field(view["message"], "XMLNSC", "r", "a")
    assert field["value"] == "41"
    # nothing goes out while the message is held
    time.sleep(0.3)
    assert qm.get(dst) is None
    debugger = deployed.debugger
    with pytest.raises(DebugError, match="not a valid INTEGER"):
        debugger.command(
            pause.id, "", [{"tree": "Root", "ref": field["ref"], "value": "x", "type": "INTEGER"}]
        )
    debugger.command(
        pause.id, "", [{"tree": "Root", "ref": field["ref"], "value": "99", "type": "CHARACTER"}]
    )
    assert listener.edits == [1]
    assert _field(pause.view()["message"], "XMLNSC", "r", "a")["value"] == "99"
    debugger.command(pause.id, "resume")
    (out,) = get_all(qm, dst, 1)
    assert out.body == b"<r><a>100</a><b>sum</b></r>"
    assert listener.gone == [pause.id] and debugger.paused == {}
    # the breakpoint holds every message that crosses, each on its own
    qm.put(src, b"<r><a>1</a></r>", MessageDescriptor(persistence=1))
    again = listener.next()
    assert again.id != pause.id
    with pytest.raises(DebugError, match="has no pause .* may have resumed"):
        debugger.command(pause.id, "resume")
    # clearing the breakpoints lets the held message go and takes every probe out
    group.set_breakpoints("DebugEdit", Breakpoints())
    assert b"<r><a>2</a>" in get_all(qm, dst, 1)[0].body
    assert _probes(deployed) == 0


def test_step_pauses_at_the_next_connection_then_abort_backs_the_unit_of_work_out(group, qm, queues) -> None:
    src, dst = queues("IN"), queues("OUT")
    deployed = group.deploy(_doc("DebugStep", src, dst))
    listener = Listener()
    group.set_breakpoints("DebugStep", Breakpoints(frozenset({"in.out->calc.in"})), listener)
    qm.put(src, b"<r><a>5</a></r>", MessageDescriptor(persistence=1))
    first = listener.next()
    deployed.debugger.command(first.id, "step")
    second = listener.next()
    # the next node's output: the Compute node has run
    assert second.connection == "calc.out->out.in"
    assert _field(second.view()["message"], "XMLNSC", "r", "a")["value"] == "6"
    deployed.debugger.command(second.id, "abort")
    # rolled back: back on its input queue with its backout count raised, and held there again
    third = listener.next()
    assert third.connection == "in.out->calc.in"
    md = _field(third.view()["message"], "MQMD", "BackoutCount")
    assert md["value"] == "1"
    assert qm.get(dst) is None
    deployed.debugger.command(third.id, "resume")
    assert b"<r><a>6</a>" in get_all(qm, dst, 1)[0].body


def test_a_pause_resumes_by_itself_after_the_timeout(group, qm, queues, monkeypatch) -> None:
    monkeypatch.setenv("FLOWBROKER_DEBUG_PAUSE_SECONDS", "1")
    src, dst = queues("IN"), queues("OUT")
    group.deploy(_doc("DebugTimeout", src, dst))
    listener = Listener()
    group.set_breakpoints("DebugTimeout", Breakpoints(frozenset({"calc.out->out.in"})), listener)
    qm.put(src, b"<r><a>7</a></r>")
    pause = listener.next()
    assert pause.timeout == 1.0
    started = time.monotonic()
    (out,) = get_all(qm, dst, 1, wait=10)
    assert b"<r><a>8</a>" in out.body and time.monotonic() - started < 5
    assert pause.action == "resume"


def test_an_esql_breakpoint_shows_the_variables_in_scope(group, qm, queues) -> None:
    src, dst = queues("IN"), queues("OUT")
    deployed = group.deploy(_doc("DebugEsql", src, dst))
    listener = Listener()
    # line 7: SET OutputRoot.XMLNSC.r.a = n + 1 (n and label are declared, OutputRoot is a copy)
    group.set_breakpoints("DebugEsql", Breakpoints(esql=frozenset({("calc", 7)})), listener)
    qm.put(src, b"<r><a>20</a></r>")
    pause = listener.next()
    assert (pause.kind, pause.node, pause.line) == ("esql", "calc", 7)
    found = {v["name"]: (v["type"], v["value"]) for v in pause.variables}
    assert found == {"n": ("INTEGER", "20"), "label": ("CHARACTER", "sum")}
    # the output tree the Compute node builds is what is shown and edited
    b = _field(pause.view()["message"], "XMLNSC", "r", "a")
    assert b["value"] == "20"
    # step goes to the next ESQL line
    deployed.debugger.command(pause.id, "step")
    nxt = listener.next()
    assert (nxt.kind, nxt.line) == ("esql", 8)
    assert _field(nxt.view()["message"], "XMLNSC", "r", "a")["value"] == "21"
    deployed.debugger.command(nxt.id, "resume")
    assert b"<r><a>21</a><b>sum</b></r>" in get_all(qm, dst, 1)[0].body


def test_breakpoints_the_flow_does_not_have_are_refused(group, queues) -> None:
    src, dst = queues("IN"), queues("OUT")
    group.deploy(_doc("DebugBad", src, dst))
    with pytest.raises(DebugError, match="no connection in.out->out.in"):
        group.set_breakpoints("DebugBad", Breakpoints(frozenset({"in.out->out.in"})))
    with pytest.raises(DebugError, match="no ESQL node out"):
        group.set_breakpoints("DebugBad", Breakpoints(esql=frozenset({("out", 3)})))


def test_the_debugger_bench_measures_each_variant_without_pausing() -> None:
    import argparse

    from flowbroker_bench.core import scenarios

    rows = scenarios()["debugger"].run(argparse.Namespace(messages=20, rounds=1))
    assert [r["variant"] for r in rows] == [
        "never debugged",
        "breakpoints cleared",
        "breakpoint elsewhere",
        "ESQL breakpoint not reached",
    ]
    assert all(r["messages"] == 20 and r["msgs/s"] > 0 for r in rows)


def test_breakpoints_a_compiled_flow_cannot_stop_at_are_left_out_and_the_others_kept(group, queues) -> None:
    from flowbroker.runtime.debugger import runnable

    src, dst = queues("IN"), queues("OUT")
    deployed = group.deploy(_doc("DebugRunnable", src, dst))
    asked = Breakpoints(
        frozenset({"in.out->calc.in", "in.out->sub1.in"}), frozenset({("calc", 4), ("out", 2)})
    )
    kept, dropped = runnable(asked, deployed.compiled.nodes)
    assert kept == Breakpoints(frozenset({"in.out->calc.in"}), frozenset({("calc", 4)}))
    assert dropped == ["no connection in.out->sub1.in", "no ESQL line 2 of node out"]


def test_abort_at_an_esql_line_backs_the_message_out(group, qm, queues) -> None:
    import sys

    src, dst = queues("IN"), queues("OUT")
    deployed = group.deploy(_doc("DebugEsqlAbort", src, dst))
    listener = Listener()
    group.set_breakpoints("DebugEsqlAbort", Breakpoints(esql=frozenset({("calc", 8)})), listener)
    qm.put(src, b"<r><a>3</a></r>", MessageDescriptor(persistence=1))
    pause = listener.next()
    assert (pause.kind, pause.line) == ("esql", 8)
    deployed.debugger.command(pause.id, "abort")
    again = listener.next()
    assert again.line == 8 and qm.get(dst) is None
    # clearing the breakpoints lets it through; the flow thread runs untraced again
    group.set_breakpoints("DebugEsqlAbort", Breakpoints())
    assert get_all(qm, dst, 1)[0].body == b"<r><a>4</a><b>sum</b></r>"
    assert "run_routine" not in vars(deployed.compiled.nodes["calc"])
    assert sys.gettrace() is None


def test_probes_come_back_after_someone_else_put_back_saved_wires(group, queues) -> None:
    src, dst = queues("IN"), queues("OUT")
    deployed = group.deploy(_doc("DebugReinstall", src, dst))
    debugger = group.set_breakpoints("DebugReinstall", Breakpoints(frozenset({"in.out->calc.in"})))
    nodes = deployed.compiled.nodes
    saved = {
        node_id: {t: [(getattr(w, "target", w), tt) for w, tt in ws] for t, ws in n.wires.items()}
        for node_id, n in nodes.items()
    }
    for node_id, node in nodes.items():
        node.wires = saved[node_id]  # as a tap that saved the plain wires puts them back
    assert _probes(deployed) == 0
    debugger.reinstall()
    debugger.reinstall()  # idempotent: one probe per wire
    assert _probes(deployed) == 2
    assert sorted(debugger.connections()) == ["calc.out->out.in", "in.out->calc.in"]


MODULE_LEVEL = """BROKER SCHEMA shop
DECLARE currency CONSTANT CHARACTER 'EUR';
DECLARE rate EXTERNAL DECIMAL 1.5;
CREATE COMPUTE MODULE Price
  DECLARE calls SHARED INTEGER 0;
  DECLARE note CHARACTER 'module note';
  DECLARE total INTEGER 7;
  CREATE FUNCTION Main() RETURNS BOOLEAN
  BEGIN
    DECLARE total INTEGER 1;
    SET calls = calls + 1;
    SET OutputRoot = InputRoot;
    SET OutputRoot.XMLNSC.r.c = currency || note;
    RETURN TRUE;
  END;
END MODULE;"""


def test_an_esql_pause_shows_the_module_and_schema_level_variables_the_routine_sees(
    group, qm, queues
) -> None:
    src, dst = queues("IN"), queues("OUT")
    doc = flow(
        {
            "in": ("MQInput", {"queueName": src, "messageDomain": "XMLNSC"}),
            "calc": ("Compute", {"esql": MODULE_LEVEL}),
            "out": ("MQOutput", {"queueName": dst}),
        },
        ["in.out -> calc", "calc.out -> out"],
        name="DebugModuleVars",
    )
    group.deploy(doc)
    listener = Listener()
    # line 13: SET OutputRoot.XMLNSC.r.c = ... (calls was counted on line 11)
    group.set_breakpoints("DebugModuleVars", Breakpoints(esql=frozenset({("calc", 13)})), listener)
    qm.put(src, b"<r/>")
    pause = listener.next()
    assert (pause.kind, pause.line) == ("esql", 13)
    found = {v["name"]: (v["scope"], v["type"], v["value"]) for v in pause.variables}
    assert found["calls"] == ("module", "INTEGER", "1")
    assert found["note"] == ("module", "CHARACTER", "module note")
    assert found["currency"] == ("schema", "CHARACTER", "EUR")
    assert found["rate"][0] == "schema" and found["rate"][2] == "1.5"
    # the routine's own total hides the module's
    assert found["total"] == ("local", "INTEGER", "1")
    assert sum(v["name"] == "total" for v in pause.variables) == 1
    group.set_breakpoints("DebugModuleVars", Breakpoints())
    assert b"EURmodule note" in get_all(qm, dst, 1)[0].body


def test_breakpoints_on_the_connections_into_and_out_of_a_subflow_pause_there(group, qm, queues) -> None:
    src, dst = queues("IN"), queues("OUT")
    inner = flow(
        {
            "i": ("Input", {"terminalName": "in"}),
            "p": ("Passthrough", {}),
            "o": ("Output", {"terminalName": "done"}),
        },
        ["i.out -> p", "p.out -> o"],
        name="DebugInner",
    )
    doc = flow(
        {
            "in": ("MQInput", {"queueName": src, "messageDomain": "XMLNSC"}),
            "s": ("Subflow", {"flow": inner}),
            "out": ("MQOutput", {"queueName": dst}),
        },
        ["in.out -> s.in", "s.done -> out"],
        name="DebugSubflow",
    )
    deployed = group.deploy(doc)
    connections = set(deployed.debugger.connections()) if deployed.debugger else set()
    listener = Listener()
    entering, leaving = "in.out->s.in", "s.done->out.in"
    group.set_breakpoints("DebugSubflow", Breakpoints(frozenset({entering, leaving})), listener)
    connections = set(deployed.debugger.connections())
    assert {entering, leaving, "s/i.out->s/p.in", "s/p.out->s/o.in"} <= connections
    qm.put(src, b"<r>1</r>")
    first = listener.next()
    assert (first.kind, first.connection, first.node) == ("connection", entering, "s")
    deployed.debugger.command(first.id, "resume")
    second = listener.next()
    assert (second.connection, second.node) == (leaving, "out")
    # the inner connections have no breakpoint: the message went through them without a pause
    deployed.debugger.command(second.id, "step")
    assert get_all(qm, dst, 1)[0].body == b"<r>1</r>"
    # the compiled names of those boundary connections are not breakpoints the flow has
    with pytest.raises(DebugError, match="has no connection"):
        group.set_breakpoints("DebugSubflow", Breakpoints(frozenset({"in.out->s/i.in"})), listener)
