"""A straight run: input → Compute that edits a JSON body → output, a message as one step.

The most common JSON flow is an input node, a Compute node whose Main copies the message and
sets a few fields of its body (:func:`esql.edits.message_edits`), and an output node. Run node by
node, each message builds a Root, an ExecutionContext and an output Root, and writes the output
tree back to bytes; most of its cost is that machinery, not the edit. A flow thread whose flow is
that straight line edits each parsed body instead
(:func:`flowbroker.formats.json.document_editor`), has the output node's own writer put or
publish it, and gives every node the counts and times it would have had:

- an input with a source of its own (MQTTSubscribe → … → MQTTPublish at QoS 0) runs a turn of
  arrivals so (:meth:`StraightRun.run`);
- a queue input (MQInput → … → MQOutput to a named queue) runs each message so, in the unit of
  work and batch the flow thread runs it in (:meth:`StraightRun.queued`); the message is put as
  its own encoded bytes with the new body, as the nodes put a Root that changed only its body.

It gives the bytes the nodes would give, in the same order, or it steps aside: a body the editor
declines (not JSON, not an object, a field that is an object or array, …) or a message the writer
cannot take (an MQRFH2, another CCSID, a transport without encoded puts, one past its backout
threshold) goes through the nodes, in its place, and fails or succeeds there as always. Whole
turns and batches go through the nodes while the flow's user trace is on, and while the step
debugger or a recording taps a wire (they wrap a wire's target). A flow whose output node is
wired on (out or failure), or whose input catches, always runs node by node.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from flowbroker_nodes.base import Node, NodeError, exception_entry, exception_list_with

from flowbroker.formats.json import document_editor


def straight_domain(template: dict[str, str]) -> str:
    """The domain an input node's template parses every body in, "" when it names a message set."""
    return "" if template.get("set") or template.get("type") else template.get("domain") or ""


def _only_target(node: Node, terminal: str) -> Node | None:
    """The one node ``terminal`` of ``node`` is wired to, on its ``in`` terminal, else None."""
    wires = node.wires.get(terminal)
    if not wires or len(wires) != 1:
        return None
    target, target_terminal = wires[0]
    return target if target_terminal == "in" else None


def _edited(edit: Callable[[bytes], bytes | None], body: bytes) -> bytes | None:
    try:
        return edit(body)
    except Exception:
        return None


_NOTHING_HELD = (0, 0, 0, 0, 0, 0)


class StraightRun:
    """The straight line of one flow thread's input node, when its flow is one (see :meth:`of`)."""

    __slots__ = ("_held", "compute", "edit", "input", "output", "runs", "write", "writer_of")

    def __init__(
        self,
        input_node: Node,
        compute: Node,
        output: Node,
        edit: Callable[[bytes], bytes | None],
        writer_of: Callable[[Any], Callable[[Any, bytes], bool] | None],
    ) -> None:
        self.input = input_node
        self.compute = compute
        self.output = output
        self.edit = edit
        #: The output node's ``straight_writer``: given the flow thread, a function putting an
        #: arrival's new body (True; False when it cannot, and did nothing), or None.
        self.writer_of = writer_of
        #: The writer of a queue input's messages, asked for once (its output's is fixed).
        self.write: Callable[[Any, bytes], bool] | None = None
        #: Messages this run has written itself (the others went through the nodes).
        self.runs = 0
        self._held = list(_NOTHING_HELD)

    @classmethod
    def of(cls, node: Node, domain: str) -> StraightRun | None:
        """The straight run of ``node``'s messages, whose bodies are parsed in ``domain``, or None
        when the flow is not input → Compute (edits of that domain) → output with a writer."""
        if not domain or node.wires.get("catch"):
            return None
        compute = _only_target(node, "out")
        edits = getattr(compute, "message_edits", None)
        if compute is None or edits is None or edits.domain != domain or not edits.edits:
            return None
        output = _only_target(compute, "out")
        writer_of = getattr(output, "straight_writer", None)
        if output is None or writer_of is None or output.wires.get("out") or output.wires.get("failure"):
            return None
        return cls(node, compute, output, document_editor(edits.edits), writer_of)

    def ready(self, thread: Any) -> bool:
        """Whether this turn may run straight: no user trace, no tap on the line's wires."""
        return (
            not thread.deployed.trace.enabled
            and _only_target(self.input, "out") is self.compute
            and _only_target(self.compute, "out") is self.output
        )

    def writer(self, thread: Any) -> Callable[[Any, bytes], bool] | None:
        """The output's writer for this turn of a source's arrivals, when it may run straight
        (:meth:`ready`, and the output can take it); else None and the nodes run it."""
        return self.writer_of(thread) if self.ready(thread) else None

    def run(self, thread: Any, source: Any, arrivals: list[Any], write: Callable[[Any, bytes], bool]) -> bool:
        """Run a turn of a source's arrivals (outside a unit of work) with :meth:`writer`'s
        ``write``; False when the turn ended early (as ``FlowThread._run_arrival`` says)."""
        clock, cpu_clock = time.perf_counter_ns, time.thread_time_ns
        started, cpu = clock(), cpu_clock()
        edit = self.edit
        try:
            bodies = [edit(arrival.body) for arrival in arrivals]
        except Exception:  # the editor declines what it cannot edit; anything else goes to the nodes too
            bodies = [_edited(edit, arrival.body) for arrival in arrivals]
        edited, edited_cpu = clock(), cpu_clock()
        aside = aside_cpu = 0  # the time of the messages that went through the nodes
        written = 0
        complete = True
        for arrival, body in zip(arrivals, bodies, strict=True):
            if body is not None:
                try:
                    if write(arrival, body):
                        written += 1
                        continue
                except NodeError as exc:  # what evaluate raises, and the flow thread then does
                    self.output.stats.errors += 1
                    self.input.stats.errors += 1
                    errors = exception_list_with(exception_entry(self.output, exc))
                    if not thread._arrival_failed(source, arrival, None, errors):
                        complete = False
                        break
                    continue
            before, before_cpu = clock(), cpu_clock()
            went = thread._run_arrival(source, arrival)
            aside += clock() - before
            aside_cpu += cpu_clock() - before_cpu
            if not went:
                complete = False
                break
        ended, ended_cpu = clock(), cpu_clock()
        self.runs += written
        self._count(
            written, ended - started - aside, ended_cpu - cpu - aside_cpu, edited - started, edited_cpu - cpu
        )
        return complete

    def queued(self, thread: Any, message: Any, transactional: bool, pipeline: bool) -> bool:
        """Put one message got from the input queue straight, in the unit of work the flow thread
        runs it in; False when it must go through the nodes instead (nothing was done: a body the
        editor declines, a message the output cannot put so, or a put that failed, which the
        nodes then make again and fail or succeed as they do)."""
        write = self.write
        if write is None:
            write = self.write = self.writer_of(thread)
            if write is None:
                return False
        stats = self.input.stats
        clock = time.perf_counter_ns
        started = clock()
        cpu = stats.cpu_clock()
        body = _edited(self.edit, message.body)
        if body is None:
            return False
        thread.begin(transactional, pipeline)
        putting = clock()
        try:
            if not write(message, body):
                return False
        except Exception:
            return False
        ended = clock()
        # counted once a batch (:meth:`flush`): messages, elapsed, of it editing, and the same
        # for the messages whose CPU time was sampled, with that CPU time
        held = self._held
        held[0] += 1
        held[1] += ended - started
        held[2] += putting - started
        if cpu >= 0:
            held[3] += ended - started
            held[4] += putting - started
            held[5] += time.thread_time_ns() - cpu
        self.runs += 1
        return True

    def flush(self) -> None:
        """Give the nodes the counts and times of what :meth:`queued` put since the last flush (the
        flow thread flushes at the end of every batch)."""
        held = self._held
        messages, elapsed, editing, sampled, sampled_editing, cpu = held
        if not messages:
            return
        held[:] = _NOTHING_HELD
        for stats in (self.input.stats, self.compute.stats):
            stats.messages_in += messages
            stats.messages_out += messages
            stats.add_span(elapsed, cpu, sampled)
        putting = sampled - sampled_editing
        self.output.stats.messages_in += messages
        self.output.stats.add_span(elapsed - editing, cpu * putting // max(sampled, 1), putting)

    def _count(self, written: int, elapsed: int, cpu: int, editing: int, editing_cpu: int) -> None:
        """What the nodes' statistics would hold for ``written`` messages: each node's time holds
        the nodes after it, as a node's receive does (``cpu`` -1: not sampled)."""
        if not written:
            return
        for stats in (self.input.stats, self.compute.stats):
            stats.messages_in += written
            stats.messages_out += written
            stats.add_span(elapsed, cpu)
        self.output.stats.messages_in += written
        self.output.stats.add_span(max(elapsed - editing, 0), max(cpu - editing_cpu, 0) if cpu >= 0 else -1)
