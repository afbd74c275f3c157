"""TimeoutNotification: an input node that starts the flow every N seconds, or when a timeout set by a
TimeoutControl node falls due.

In automatic operation mode, as ACE's node: every timeout interval a message holding only a
Properties folder (and ``LocalEnvironment.TimeoutNotification``: Identifier, Count, Time) is
propagated in its own unit of work. When the flow is still busy as the next timeout falls due,
that timeout is not skipped: each missed one is propagated in turn once the flow is free. An
exception from ``out`` goes to ``catch`` when it is connected, else to ``failure``, else the
unit of work is backed out, the error logged and the same timeout retried after an interval.
However many additional instances the flow has, one flow thread propagates the timeouts.

In controlled mode the node fires the timeouts the TimeoutControl nodes with the same unique
identifier set (see :mod:`flowbroker_nodes.timeout_control`): each due record, which the flow thread
takes (see :class:`~flowbroker_nodes.schedule.Timers`), propagates the message stored with its
request, with ``LocalEnvironment.TimeoutRequest`` and ``LocalEnvironment.TimeoutNotification``, in
the unit of work that also schedules the series' next timeout, so a crash fires it again rather
than losing it. A failing one goes to ``catch``/``failure`` as above (then the series moves on);
with neither it is backed out and retried.
"""

from __future__ import annotations

import json
import threading
import time

from esql.tree import Element

from flowbroker_nodes import timeout_control
from flowbroker_nodes.base import (
    ArrivedDescriptor,
    ArrivedMessage,
    Assembly,
    DeployProblem,
    FlowServices,
    QueueMessage,
    describe_exception_list,
)
from flowbroker_nodes.base import Node as BaseNode
from flowbroker_nodes.schedule import Schedule, Timed, Timers
from flowbroker_nodes.spec import NodeSpec, Property, Terminal

SPEC = NodeSpec(
    type="TimeoutNotification",
    role="input",
    label="TimeoutNotification",
    category="input",
    icon="timer",
    description="Propagates a message holding only a Properties folder every timeout interval (automatic "
    "operation mode), each in its own unit of work.",
    outputs=(
        Terminal("out", "out", "Out"),
        Terminal("failure", "failure", "Failure"),
        Terminal("catch", "catch", "Catch"),
    ),
    properties=(
        Property(
            "uniqueIdentifier",
            "string",
            "Unique identifier",
            default="",
            description="Names the timeouts in LocalEnvironment.TimeoutNotification.Identifier; empty: the "
            "node's id. In controlled mode: the unique identifier of the TimeoutControl nodes whose timeouts "
            "this node fires.",
        ),
        Property(
            "operationMode",
            "enum",
            "Operation mode",
            default="automatic",
            enum=("automatic", "controlled"),
            description="automatic: a message every timeout interval; controlled: the timeouts TimeoutControl "
            "nodes set, each with the message stored with it.",
        ),
        Property(
            "timeoutInterval",
            "integer",
            "Timeout interval (s)",
            default=1,
            minimum=1,
            maximum=31_536_000,
            description="Seconds between two messages.",
        ),
    ),
)


class Node(BaseNode):
    """The timer loop; see the module docstring."""

    SPEC = SPEC

    def prepare(self) -> None:
        props = self.properties
        try:
            interval = int(props.get("timeoutInterval") or 1)
        except (TypeError, ValueError):
            raise DeployProblem(
                "the timeout interval must be an integer", property="timeoutInterval"
            ) from None
        if interval < 1:
            raise DeployProblem("the timeout interval must be at least 1 second", property="timeoutInterval")
        self.interval = float(interval)
        self.identifier = str(props.get("uniqueIdentifier") or "") or self.id
        self._timer = threading.Lock()
        self.controlled = props.get("operationMode") == "controlled"
        if self.controlled:
            self.identifier = timeout_control.check_identifier(props.get("uniqueIdentifier"))
            self.schedule = Schedule(timeout_control.TIMER_QUEUE, self.identifier)

    def evaluate(self, assembly: Assembly, terminal: str) -> None:
        # a message injected on this node (tests, the designer's "inject") starts the flow here
        self.propagate("out", assembly)

    def open_input(self, flow: FlowServices) -> Timers | _Ticks:
        if self.controlled:
            return Timers(
                self,
                flow,
                [self._controlled()],
                self._timer,
                prepare=lambda flow: flow.ensure_queue(timeout_control.INDEX_QUEUE),
            )
        return _Ticks(self, flow)

    def timeout_assembly(self, count: int) -> Assembly:
        """The message of the ``count``-th timeout (automatic mode)."""
        assembly = self._message()
        notice = assembly.local_environment.add("TimeoutNotification")
        notice.add("Identifier", self.identifier)
        notice.add("Count", count)
        notice.add("Time", time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
        return assembly

    def _message(self) -> Assembly:
        """An assembly whose Root holds only a Properties folder."""
        assembly = self.flow.build_assembly(
            ArrivedMessage(ArrivedDescriptor(format="        ")), {"domain": "BLOB"}
        )
        for kid in list(assembly.root.children()):
            if kid.name != "Properties":
                kid.detach()
        return assembly

    # -- controlled mode -----------------------------------------------------------------------

    def _controlled(self) -> Timed:
        return Timed(
            self.schedule,
            assemble=self._assemble_controlled,
            failure=self._failure_controlled,
            what="timeout",
        )

    def _assemble_controlled(self, record: QueueMessage) -> tuple[str, Assembly] | None:
        """The stored message of a due timeout, in the unit of work that took its record and
        schedules the series' next timeout; None when it was cancelled or replaced."""
        made = self._fired(record)
        if made is None:
            return None
        assembly, failed = made
        if failed is not None:
            raise failed  # the stored message no longer parses: to failure, as a failed flow
        return "out", assembly

    def _failure_controlled(self, record: QueueMessage, errors: Element) -> Assembly | None:
        """A due timeout whose flow failed, taken again for the failure terminal (the series still
        moves on with it)."""
        made = self._fired(record)
        if made is None:
            return None
        return made[0].replace(exception_list=errors)

    def _fired(self, record: QueueMessage) -> tuple[Assembly, Exception | None] | None:
        """The assembly of a taken timeout record (with the exception that kept its stored message
        from being parsed, then a message of only Properties), or None when it is cancelled."""
        flow = self.flow
        props = dict(getattr(record, "properties", None) or {})
        prop = timeout_control.PROP
        generation = str(props.get(prop + "gen") or "")
        cancelled = flow.get_message(
            timeout_control.INDEX_QUEUE,
            0,
            syncpoint=True,
            correl_id=timeout_control.tombstone_key(self.identifier, generation),
        )
        if cancelled is not None:
            return None  # cancelled or replaced: the record and its tombstone go with the commit
        request = timeout_control.Request(**json.loads(str(props[prop + "request"])))
        fired = int(props.get(prop + "fired") or 0) + 1
        flow.before_commit(lambda: self._schedule_next(flow, record, request, fired))
        md = record.md
        md.correl_id = bytes.fromhex(str(props.get(prop + "correlId") or "")).ljust(24, b"\x00")
        stored = ArrivedMessage(
            md,  # type: ignore[arg-type]
            {k: v for k, v in props.items() if not k.startswith("flowbroker.")},
            record.body,
        )
        failed: Exception | None = None
        try:
            assembly = flow.build_assembly(stored, {"domain": str(props.get(prop + "domain") or "BLOB")})
        except Exception as exc:
            assembly, failed = self._message(), exc
        assembly.local_environment.append(timeout_control.request_element(request))
        notice = assembly.local_environment.add("TimeoutNotification")
        notice.add("Identifier", self.identifier)
        notice.add("Count", fired)
        notice.add("Time", time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
        return assembly, failed

    def _schedule_next(
        self, flow: FlowServices, record: QueueMessage, request: timeout_control.Request, fired: int
    ) -> None:
        """Put the series' next timeout, in the unit of work that fired this one."""
        if 0 <= request.count <= fired:
            return
        due = request.start + fired * request.interval
        now = time.time()
        if request.ignore_missed and due < now - 1:
            skipped = int((now - due) // request.interval) + 1
            fired += skipped
            due += skipped * request.interval
            if 0 <= request.count <= fired:
                return
        props = dict(getattr(record, "properties", None) or {})
        props[timeout_control.PROP + "fired"] = fired
        self.schedule.put(flow, due, record.body, properties=props, md=record.md)


class _Ticks:
    """Automatic mode on one flow thread: the count of each timeout as it falls due, the same
    count again an interval after it failed. One flow thread of a node keeps the time."""

    transactional = True

    def __init__(self, node: Node, flow: FlowServices) -> None:
        self.node = node
        self.flow = flow
        self.keeper = node._timer.acquire(blocking=False)
        self.start = time.monotonic()
        self.count = 1
        self.failed = False

    def next(self) -> list[int]:
        flow = self.flow
        if not self.keeper:
            flow.stop.wait()  # another flow thread of this node keeps the time
            return []
        if self.failed:
            if flow.stop.wait(self.node.interval):
                return []
            self.failed = False
        else:
            due = self.start + self.count * self.node.interval
            if flow.stop.wait(max(0.0, due - time.monotonic())):
                return []
        return [self.count]

    def assembly(self, count: int) -> tuple[str, Assembly]:
        return "out", self.node.timeout_assembly(count)

    def failure_assembly(self, count: int, assembly: Assembly | None, errors: Element) -> Assembly:
        return (assembly or self.node.timeout_assembly(count)).replace(exception_list=errors)

    def unhandled(self, count: int, errors: Element, note: str) -> bool:
        self.flow.log(f"{self.node.name}: timeout backed out, retrying: {describe_exception_list(errors)}")
        self.failed = True
        return False

    def done(self, counts: list[int], complete: bool) -> None:
        if complete:
            self.count += 1

    def close(self) -> None:
        if self.keeper:
            self.node._timer.release()
            self.keeper = False
