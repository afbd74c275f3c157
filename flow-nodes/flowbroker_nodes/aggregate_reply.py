"""AggregateReply: collects the replies of an aggregation (ACE's node of the same name).

Wired after the input node that reads the reply queue. A reply is matched by its
``MQMD.CorrelId`` to the request it answers (the request's MsgId, recorded by an AggregateRequest
node); replies before the last are stored on the aggregation queues in the unit of work of the
reply's get. The last one propagates the combined message to ``out``: ``Root.Properties``, then
``Root.ComIbmAggregateReplyBody`` with one folder per request, named by its AggregateRequest's
folder name, each holding the reply's own trees (Properties, MQMD, its body), in the order the
requests were sent.

A reply that matches no request of this aggregate name (never sent, already answered, or its
aggregation closed by a timeout) goes to ``unknown`` (with an ``unknownMessageTimeout``, one whose
request is not there yet is first held on ``SYSTEM.BROKER.AGGR.UNKNOWN`` and matched again every
second until that timeout ends, for fan-outs that send their requests outside a unit of work); when that terminal is unconnected it is a
failure, so the input node backs it out and it ends on its backout or dead-letter queue, never
dropped. When an aggregation's timeout passes first, the replies received so far go to
``timeout`` in the same form (with none: an empty ComIbmAggregateReplyBody), and a later reply is
unknown. Timeouts and held replies are due records of this node's schedules (see
:class:`~flowbroker_nodes.schedule.Timers`): its own flow thread, which the execution group starts like
an input node's, takes each in a unit of work of its own, with the catch and failure terminals and
the retries of an input node; a timeout that fell due while the group was stopped fires once it
runs again. A held reply that fails once its time is up, and that the failure terminal does not
take, goes to the dead-letter queue.
"""

from __future__ import annotations

import threading
import time

from esql.tree import Element

from flowbroker_nodes import aggregation
from flowbroker_nodes.aggregate_control import check_name
from flowbroker_nodes.base import (
    Assembly,
    DeployProblem,
    FlowServices,
    NodeError,
    QueueMessage,
    field_value,
)
from flowbroker_nodes.base import Node as BaseNode
from flowbroker_nodes.schedule import Schedule, Timed, Timers
from flowbroker_nodes.spec import NodeSpec, Property, Terminal

SPEC = NodeSpec(
    type="AggregateReply",
    role="input",
    label="AggregateReply",
    category="routing",
    icon="fan-in",
    description="Collects the replies of the aggregation with the same aggregate name (matched by CorrelId to "
    "the requests' MsgIds) and propagates them together under ComIbmAggregateReplyBody once all arrived, or "
    "those received when its timeout passes; a reply that matches no request goes to unknown.",
    inputs=(Terminal("in", "in", "In"),),
    outputs=(
        Terminal("out", "out", "Out"),
        Terminal("unknown", "out", "Unknown"),
        Terminal("timeout", "out", "Timeout"),
        Terminal("failure", "failure", "Failure"),
        Terminal("catch", "catch", "Catch"),
    ),
    properties=(
        Property(
            "aggregateName",
            "string",
            "Aggregate name",
            required=True,
            description="The aggregate name of the AggregateControl node whose replies this node collects.",
        ),
        Property(
            "unknownMessageTimeout",
            "integer",
            "Unknown message timeout (s)",
            default=0,
            minimum=0,
            maximum=86_400,
            description="Seconds a reply that matches no request is held (and matched again every second, "
            "in case its request is still being committed) before it goes to unknown; 0: at once.",
        ),
    ),
)


_HELD = "flowbroker.aggregate.held."


class Node(BaseNode):
    """Matches replies to requests and keeps the timeouts; see the module docstring."""

    SPEC = SPEC

    def prepare(self) -> None:
        self.aggregate = check_name(self.properties.get("aggregateName"))
        self._timer = threading.Lock()
        self.schedule = Schedule(aggregation.TIMEOUT_QUEUE, self.aggregate)
        self.held = Schedule(aggregation.UNKNOWN_QUEUE, self.aggregate)
        try:
            self.hold_s = int(self.properties.get("unknownMessageTimeout") or 0)
        except (TypeError, ValueError):
            self.hold_s = -1
        if not 0 <= self.hold_s <= 86_400:
            raise DeployProblem(
                "the unknown message timeout must be 0 to 86400 seconds", property="unknownMessageTimeout"
            )

    # -- replies -------------------------------------------------------------------------------

    def evaluate(self, assembly: Assembly, terminal: str) -> None:
        aggregation.ensure_queues(self.flow)
        matched = self._match(assembly, hold_until=time.time() + self.hold_s if self.hold_s else 0.0)
        if matched is not None:
            self.propagate(*matched)

    def _match(self, assembly: Assembly, hold_until: float) -> tuple[str, Assembly] | None:
        """Aggregate the reply ``assembly``: the terminal and message it leads to (the combined
        message on out once it is the last; unknown), or None (stored, or held). One that matches
        no request is held until ``hold_until`` (epoch seconds; 0: not held) before it goes to
        unknown."""
        flow = self.flow
        correl = field_value(assembly.root, "MQMD", "CorrelId")
        key = bytes(correl).ljust(24, b"\x00")[:24] if isinstance(correl, bytes | bytearray) else b""
        request = None
        if key.strip(b"\x00"):
            request = flow.get_message(aggregation.REQUEST_QUEUE, 0, syncpoint=True, correl_id=key)
        if request is None:
            if hold_until > time.time():
                self._hold(assembly, hold_until)
                return None
            return self._unknown(assembly, "matches no request sent")
        ident, name, folder, index = aggregation.parse_request(request.body)
        if name != self.aggregate:
            # another aggregate's reply: its record goes back for the node that collects it
            flow.put_record(aggregation.REQUEST_QUEUE, request.body, correl_id=key, syncpoint=True)
            return self._unknown(assembly, f"answers a request of aggregate {name!r}")
        control = aggregation.take_control(flow, ident, aggregation.CONTROL_WAIT_MS)
        if control is None or control.done:
            return self._unknown(assembly, "belongs to an aggregation that has timed out or completed")
        reply = aggregation.reply_of(flow, assembly.root, folder, index, key)
        control.received.append(key.hex())
        if len(control.received) < len(control.requests):
            control.held.append(reply)
            return None
        answered = [*aggregation.stored_replies(flow, ident), *control.held, reply]
        combined = aggregation.close(flow, control, answered)
        combined.environment = assembly.environment
        return "out", combined

    def _hold(self, assembly: Assembly, until: float) -> None:
        """Keep an unmatched reply on the unknown queue, to be matched again next second."""
        flow = self.flow
        md, properties, body = flow.message_parts(assembly.root)
        last = assembly.root.last_child
        domain = (
            last.name if last is not None and last.name not in ("Properties", "MQMD", "MQRFH2") else "BLOB"
        )
        held = {
            **{k: v for k, v in properties.items() if not k.startswith("flowbroker.")},
            _HELD + "until": until,
            _HELD + "domain": domain,
            _HELD + "correlId": bytes(md.correl_id).hex(),
        }
        self.held.put(flow, time.time() + 1, body, properties=held, md=md)

    def _held_assembly(self, record: QueueMessage) -> Assembly:
        """A held reply as it was received."""
        props = dict(getattr(record, "properties", None) or {})
        md = record.md
        md.correl_id = bytes.fromhex(str(props.get(_HELD + "correlId") or "")).ljust(24, b"\x00")
        stored = aggregation.Stored(
            md, {k: v for k, v in props.items() if not k.startswith("flowbroker.")}, record.body
        )
        return self.flow.build_assembly(stored, {"domain": str(props.get(_HELD + "domain") or "BLOB")})

    def _match_held(self, record: QueueMessage) -> tuple[str, Assembly] | None:
        """Match a held reply again, in the unit of work that took its record."""
        props = dict(getattr(record, "properties", None) or {})
        return self._match(self._held_assembly(record), float(props.get(_HELD + "until") or 0))

    def _held_failed(self, record: QueueMessage, errors: Element) -> Assembly:
        return self._held_assembly(record).replace(exception_list=errors)

    @staticmethod
    def _held_expired(record: QueueMessage) -> bool:
        props = dict(getattr(record, "properties", None) or {})
        return not float(props.get(_HELD + "until") or 0) > time.time()

    def _unknown(self, assembly: Assembly, why: str) -> tuple[str, Assembly]:
        if self.is_connected("unknown"):
            return "unknown", assembly
        correl = field_value(assembly.root, "MQMD", "CorrelId")
        shown = bytes(correl).hex().upper() if isinstance(correl, bytes | bytearray) else "none"
        raise NodeError(
            f"the reply with CorrelId {shown} {why} of aggregate {self.aggregate!r}, and the unknown "
            "terminal is not connected",
            number=2230,
        )

    # -- timeouts ------------------------------------------------------------------------------

    def open_input(self, flow: FlowServices) -> Timers:
        """Fire the timeouts of this aggregate name, and match the held replies, as they fall due."""
        return Timers(
            self,
            flow,
            [
                Timed(self.schedule, self._timed_out, self._timeout_failed, what="a timeout"),
                Timed(
                    self.held,
                    self._match_held,
                    self._held_failed,
                    what="a held reply",
                    expired=self._held_expired,
                ),
            ],
            self._timer,
            prepare=aggregation.ensure_queues,
        )

    def _timed_out(self, record: QueueMessage) -> tuple[str, Assembly] | None:
        """The replies received so far of an aggregation whose timeout record fell due, for
        ``timeout``; None when it completed first (the record goes). With ``timeout`` unconnected
        they go to the dead-letter queue."""
        closed = self._close(record)
        if closed is None:
            return None
        partial, answered, expected = closed
        if not self.is_connected("timeout"):
            self.flow.log(
                f"{self.name}: aggregation {bytes(record.body).hex().upper()} of {self.aggregate!r} timed out "
                f"with {answered} of {expected} replies; the timeout terminal is not connected, so they go "
                "to the dead-letter queue"
            )
            self._dead_letter(partial)
            return None
        return "timeout", partial

    def _timeout_failed(self, record: QueueMessage, errors: Element) -> Assembly | None:
        """A timed out aggregation whose timeout path failed: its replies go to ``failure``, and
        the aggregation is closed."""
        closed = self._close(record)
        return None if closed is None else closed[0].replace(exception_list=errors)

    def _close(self, record: QueueMessage) -> tuple[Assembly, int, int] | None:
        """Close the aggregation of a timeout record: its replies so far, how many, of how many."""
        flow = self.flow
        ident = bytes(record.body)
        control = aggregation.take_control(flow, ident, aggregation.CONTROL_WAIT_MS)
        if control is None or control.done:
            return None
        answered = aggregation.stored_replies(flow, ident)
        return aggregation.close(flow, control, answered), len(answered), len(control.requests)

    def _dead_letter(self, partial: Assembly) -> None:
        flow = self.flow
        md, properties, body = flow.message_parts(partial.root)
        flow.dead_letter(
            aggregation.Stored(md, properties, body),
            f"aggregation of {self.aggregate!r} timed out and the timeout terminal is not connected",
            syncpoint=True,
            notes={"node": self.name},
        )
