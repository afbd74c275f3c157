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
unknown. Timeouts are kept by this node's own flow thread, which the execution group starts like
an input node's; a timeout that fell due while the group was stopped fires once it runs again.
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
    Unwinding,
    describe_exception_list,
    exception_entry,
    exception_list_with,
    field_value,
)
from flowbroker_nodes.base import Node as BaseNode
from flowbroker_nodes.schedule import Schedule, Timers
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
        self._match(assembly, hold_until=time.time() + self.hold_s if self.hold_s else 0.0)

    def _match(self, assembly: Assembly, hold_until: float) -> None:
        """Aggregate the reply ``assembly``; one that matches no request is held until ``hold_until``
        (epoch seconds; 0: not held) before it goes to unknown."""
        flow = self.flow
        correl = field_value(assembly.root, "MQMD", "CorrelId")
        key = bytes(correl).ljust(24, b"\x00")[:24] if isinstance(correl, bytes | bytearray) else b""
        request = None
        if key.strip(b"\x00"):
            request = flow.get_message(aggregation.REQUEST_QUEUE, 0, syncpoint=True, correl_id=key)
        if request is None:
            if hold_until > time.time():
                self._hold(assembly, hold_until)
                return
            self._unknown(assembly, "matches no request sent")
            return
        ident, name, folder, index = aggregation.parse_request(request.body)
        if name != self.aggregate:
            # another aggregate's reply: its record goes back for the node that collects it
            flow.put_record(aggregation.REQUEST_QUEUE, request.body, correl_id=key, syncpoint=True)
            self._unknown(assembly, f"answers a request of aggregate {name!r}")
            return
        control = aggregation.take_control(flow, ident, aggregation.CONTROL_WAIT_MS)
        if control is None or control.done:
            self._unknown(assembly, "belongs to an aggregation that has timed out or completed")
            return
        reply = aggregation.reply_of(flow, assembly.root, folder, index, key)
        control.received.append(key.hex())
        if len(control.received) < len(control.requests):
            control.held.append(reply)
            return
        answered = [*aggregation.stored_replies(flow, ident), *control.held, reply]
        combined = aggregation.close(flow, control, answered)
        combined.environment = assembly.environment
        self.propagate("out", combined)

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

    def _match_held(self, second: int) -> bool | None:
        """Match one held reply of ``second``'s bucket again, in its own unit of work."""
        flow = self.flow
        flow.begin(True)
        record = self.held.take(flow, second)
        if record is None:
            flow.commit()
            return None
        props = dict(getattr(record, "properties", None) or {})
        md = record.md
        md.correl_id = bytes.fromhex(str(props.get(_HELD + "correlId") or "")).ljust(24, b"\x00")
        stored = aggregation.Stored(
            md, {k: v for k, v in props.items() if not k.startswith("flowbroker.")}, record.body
        )
        try:
            assembly = flow.build_assembly(stored, {"domain": str(props.get(_HELD + "domain") or "BLOB")})
            self._match(assembly, float(props.get(_HELD + "until") or 0))
        except Unwinding as failed:
            flow.backout()
            flow.log(
                f"{self.name}: a held reply backed out, retrying: {describe_exception_list(failed.exception_list)}"
            )
            return False
        except Exception as exc:
            flow.backout()
            if float(props.get(_HELD + "until") or 0) > time.time():
                flow.log(f"{self.name}: a held reply backed out, retrying: {exc}")
                return False
            # its time is up and it cannot go to unknown: to the dead-letter queue, not lost
            flow.begin(True)
            again = self.held.take(flow, second, bytes(record.md.msg_id))
            if again is not None:
                flow.dead_letter(again, str(exc)[:500], syncpoint=True, notes={"node": self.name})
            flow.commit()
            return True
        flow.commit()
        return True

    def _unknown(self, assembly: Assembly, why: str) -> None:
        if self.propagate("unknown", assembly):
            return
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
            flow,
            [(self.schedule, self._fire_one), (self.held, self._match_held)],
            self._timer,
            prepare=aggregation.ensure_queues,
        )

    def _fire_one(
        self, second: int, errors: Element | None = None, msg_id: bytes | None = None
    ) -> bool | None:
        """Fire one due timeout of ``second``'s bucket in its own unit of work: None when there is
        none, False when it failed and must be tried again. With ``errors`` (its last attempt's
        ExceptionList) the replies go to ``failure`` instead, and the aggregation is closed."""
        flow = self.flow
        flow.begin(True)
        record = self.schedule.take(flow, second, msg_id)
        if record is None:
            flow.commit()
            return None
        taken = bytes(record.md.msg_id)
        ident = bytes(record.body)
        control = aggregation.take_control(flow, ident, aggregation.CONTROL_WAIT_MS)
        if control is None or control.done:
            flow.commit()  # completed before its timeout: the record goes
            return True
        if errors is None:
            self.stats.messages_in += 1
        try:
            answered = aggregation.stored_replies(flow, ident)
            partial = aggregation.close(flow, control, answered)
        except Exception as exc:
            flow.backout()
            flow.log(f"{self.name}: the timeout of an aggregation cannot be fired, retrying: {exc}")
            return False
        try:
            try:
                if errors is not None:
                    self.propagate("failure", partial.replace(exception_list=errors))
                elif not self.propagate("timeout", partial):
                    flow.log(
                        f"{self.name}: aggregation {ident.hex().upper()} of {self.aggregate!r} timed out with "
                        f"{len(answered)} of {len(control.requests)} replies; the timeout terminal is not "
                        "connected, so they go to the dead-letter queue"
                    )
                    self._dead_letter(partial)
            except Unwinding as unwound:
                self.stats.errors += 1
                if errors is not None or not self.propagate(
                    "catch", partial.replace(exception_list=unwound.exception_list)
                ):
                    raise
        except Unwinding as failed:
            return self._failed(second, errors, failed.exception_list, taken)
        except Exception as exc:
            self.stats.errors += 1
            return self._failed(second, errors, exception_list_with(exception_entry(self, exc)), taken)
        flow.commit()
        return True

    def _failed(self, second: int, tried: Element | None, errors: Element, msg_id: bytes) -> bool:
        flow = self.flow
        flow.backout()
        if tried is None and self.is_connected("failure"):
            return self._fire_one(second, errors, msg_id) is not False
        flow.log(f"{self.name}: a timeout backed out, retrying: {describe_exception_list(errors)}")
        return False

    def _dead_letter(self, partial: Assembly) -> None:
        flow = self.flow
        md, properties, body = flow.message_parts(partial.root)
        flow.dead_letter(
            aggregation.Stored(md, properties, body),
            f"aggregation of {self.aggregate!r} timed out and the timeout terminal is not connected",
            syncpoint=True,
            notes={"node": self.name},
        )
