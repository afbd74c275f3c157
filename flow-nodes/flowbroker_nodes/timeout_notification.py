"""TimeoutNotification (automatic mode): an input node that starts the flow every N seconds.

As ACE's node in automatic operation mode: every timeout interval a message holding only a
Properties folder (and ``LocalEnvironment.TimeoutNotification``: Identifier, Count, Time) is
propagated in its own unit of work. When the flow is still busy as the next timeout falls due,
that timeout is not skipped: each missed one is propagated in turn once the flow is free. An
exception from ``out`` goes to ``catch`` when it is connected, else to ``failure``, else the
unit of work is backed out, the error logged and the same timeout retried after an interval.
However many additional instances the flow has, one flow thread propagates the timeouts.
"""

from __future__ import annotations

import threading
import time

from esql.tree import Element

from flowbroker_nodes.base import (
    ArrivedDescriptor,
    ArrivedMessage,
    Assembly,
    DeployProblem,
    Unwinding,
    describe_exception_list,
    exception_entry,
    exception_list_with,
)
from flowbroker_nodes.base import Node as BaseNode
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
            "node's id.",
        ),
        Property(
            "operationMode",
            "enum",
            "Operation mode",
            default="automatic",
            enum=("automatic",),
            description="automatic: a message every timeout interval.",
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

    def evaluate(self, assembly: Assembly, terminal: str) -> None:
        # a message injected on this node (tests, the designer's "inject") starts the flow here
        self.propagate("out", assembly)

    def run(self) -> None:
        """Until the flow stops: wait for the next timeout and propagate it (retrying a failed one)."""
        flow = self.flow
        if not self._timer.acquire(blocking=False):
            flow.stop.wait()  # another flow thread of this node keeps the time
            return
        try:
            start = time.monotonic()
            count = 1
            while not flow.stop.is_set():
                due = start + count * self.interval
                if flow.stop.wait(max(0.0, due - time.monotonic())):
                    break
                while not self.propagate_timeout(count):
                    if flow.stop.wait(self.interval):
                        return
                count += 1
        finally:
            self._timer.release()

    def propagate_timeout(self, count: int) -> bool:
        """One timeout in its own unit of work; False when it must be retried."""
        flow = self.flow
        flow.begin(True)
        stats = self.stats
        stats.messages_in += 1
        started = time.perf_counter_ns()
        cpu = time.thread_time_ns()
        try:
            assembly = self._message()
            notice = assembly.local_environment.add("TimeoutNotification")
            notice.add("Identifier", self.identifier)
            notice.add("Count", count)
            notice.add("Time", time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
            try:
                try:
                    self.propagate("out", assembly)
                except Unwinding as unwound:
                    stats.errors += 1
                    caught = assembly.replace(exception_list=unwound.exception_list)
                    if not self.propagate("catch", caught):
                        raise
            except Unwinding as failed:
                return self._failed(assembly, failed.exception_list)
            except Exception as exc:
                stats.errors += 1
                return self._failed(assembly, exception_list_with(exception_entry(self, exc)))
            flow.commit()
            return True
        finally:
            stats.elapsed_ns += time.perf_counter_ns() - started
            stats.cpu_ns += time.thread_time_ns() - cpu

    def _message(self) -> Assembly:
        """An assembly whose Root holds only a Properties folder."""
        assembly = self.flow.build_assembly(
            ArrivedMessage(ArrivedDescriptor(format="        ")), {"domain": "BLOB"}
        )
        for kid in list(assembly.root.children()):
            if kid.name != "Properties":
                kid.detach()
        return assembly

    def _failed(self, assembly: Assembly, errors: Element) -> bool:
        flow = self.flow
        flow.backout()
        if self.is_connected("failure"):
            flow.begin(True)
            try:
                self.propagate("failure", assembly.replace(exception_list=errors))
                flow.commit()
                return True
            except Unwinding as again:
                flow.backout()
                errors = again.exception_list
        flow.log(f"{self.name}: timeout backed out, retrying: {describe_exception_list(errors)}")
        return False
