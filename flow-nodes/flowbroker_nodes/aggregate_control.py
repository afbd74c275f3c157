"""AggregateControl: starts a fan-out (ACE's node of the same name).

Each message arriving opens an aggregation: the requests the flow sends on ``out`` (MQOutput
nodes each followed by an AggregateRequest) are recorded, and when the propagation returns the
aggregation's control record, and its timeout record when a timeout is set, are put on the
broker's aggregation queues in the same unit of work as the requests, so the requests, the state
and the input message are committed or backed out together. The AggregateReply node of the same
aggregate name collects the replies. ``LocalEnvironment.ComIbmAggregateControlNode`` names the
aggregation (AggregateName, AggregateId) for the nodes on the path. A flow may set the timeout
of one aggregation in ``LocalEnvironment.Aggregation.Timeout`` (seconds), as in ACE.
"""

from __future__ import annotations

import os
import time

from flowbroker_nodes import aggregation
from flowbroker_nodes.base import Assembly, DeployProblem, NodeError, field_value
from flowbroker_nodes.base import Node as BaseNode
from flowbroker_nodes.schedule import Schedule
from flowbroker_nodes.spec import NodeSpec, Property, Terminal

SPEC = NodeSpec(
    type="AggregateControl",
    label="AggregateControl",
    category="routing",
    icon="fan-out",
    description="Starts an aggregation: the requests sent on out (each MQOutput followed by an AggregateRequest) "
    "are collected by the AggregateReply node of the same aggregate name; the state is kept on the broker's "
    "aggregation queues in the flow's unit of work.",
    inputs=(Terminal("in", "in", "In"),),
    outputs=(Terminal("out", "out", "Out"), Terminal("failure", "failure", "Failure")),
    properties=(
        Property(
            "aggregateName",
            "string",
            "Aggregate name",
            required=True,
            description="Names the aggregation; the AggregateReply node with the same name collects its replies.",
        ),
        Property(
            "timeout",
            "integer",
            "Timeout (s)",
            default=0,
            minimum=0,
            maximum=31_536_000,
            description="Seconds to wait for all replies before the AggregateReply node propagates those "
            "received to its timeout terminal; 0 waits for ever.",
        ),
    ),
)


def check_name(value: object) -> str:
    name = str(value or "").strip()
    if not name:
        raise DeployProblem("required: the aggregate name", property="aggregateName")
    if len(name) > 256:
        raise DeployProblem("the aggregate name is longer than 256 characters", property="aggregateName")
    return name


class Node(BaseNode):
    """Opens one aggregation per message; see the module docstring."""

    SPEC = SPEC

    def prepare(self) -> None:
        self.aggregate = check_name(self.properties.get("aggregateName"))
        try:
            self.timeout = int(self.properties.get("timeout") or 0)
        except (TypeError, ValueError):
            raise DeployProblem("the timeout must be a whole number of seconds", property="timeout") from None
        if not 0 <= self.timeout <= 31_536_000:
            raise DeployProblem("the timeout must be between 0 and 31536000 seconds", property="timeout")

    def evaluate(self, assembly: Assembly, terminal: str) -> None:
        flow = self.flow
        timeout = self._timeout(assembly)  # checked before any request is sent
        fanout = aggregation.Fanout(self.aggregate, os.urandom(24))
        local_environment = assembly.local_environment.copy()
        old = local_environment.child("ComIbmAggregateControlNode")
        if old is not None:
            old.detach()
        marker = local_environment.add("ComIbmAggregateControlNode")
        marker.add("AggregateName", self.aggregate)
        marker.add("AggregateId", fanout.ident.hex().upper())
        sending = aggregation.open_fanouts()
        key = fanout.ident.hex()
        sending[key] = fanout
        try:
            self.propagate("out", assembly.replace(local_environment=local_environment))
        finally:
            del sending[key]
        if not fanout.requests:
            return  # nothing was sent: there is nothing to wait for
        started = time.time()
        control = aggregation.Control(self.aggregate, fanout.ident, fanout.requests, [], timeout, started)
        flow.put_record(aggregation.CONTROL_QUEUE, control.to_bytes(), correl_id=fanout.ident, syncpoint=True)
        if timeout:
            Schedule(aggregation.TIMEOUT_QUEUE, self.aggregate).put(flow, started + timeout, fanout.ident)

    def _timeout(self, assembly: Assembly) -> int:
        """The node's timeout, or LocalEnvironment.Aggregation.Timeout's when the flow set one (as ACE)."""
        given = field_value(assembly.local_environment, "Aggregation", "Timeout")
        if given is None:
            return self.timeout
        try:
            seconds = int(str(given).strip())
        except ValueError:
            seconds = -1
        if not 0 <= seconds <= 31_536_000:
            raise NodeError(
                f"LocalEnvironment.Aggregation.Timeout must be 0 to 31536000 seconds, not {given!r}",
                number=2230,
                inserts=("Timeout",),
            )
        return seconds
