"""The aggregation store shared by AggregateControl, AggregateRequest and AggregateReply.

An aggregation's state lives on the broker's own queues, put and got in the units of work of
the flows that change it, so it survives a restart of any execution group and moves with the
transport (embedded queue manager or RabbitMQ) the flows use:

- ``SYSTEM.BROKER.AGGR.CONTROL``: one record per open aggregation, correlated to its 24-byte
  aggregation id: its name, the MsgIds of its requests and those answered so far.
- ``SYSTEM.BROKER.AGGR.REQUEST``: one record per request sent, correlated to the request's MsgId
  (which the reply carries as its CorrelId): the aggregation it belongs to and its folder name.
- ``SYSTEM.BROKER.AGGR.REPLY``: each reply that arrived before the last one, correlated to the
  aggregation id, as it was received.
- ``SYSTEM.BROKER.AGGR.UNKNOWN``: replies that matched no request yet, held for the AggregateReply
  node's unknown message timeout and matched again every second.
- ``SYSTEM.BROKER.AGGR.TIMEOUT``: one record per aggregation with a timeout (its id), kept as a
  :class:`~flowbroker_nodes.schedule.Schedule` of its aggregate name.

Whoever gets an aggregation's control record under syncpoint owns the aggregation until its unit
of work ends: a reply and the timer racing for one aggregation never both complete it.
"""

from __future__ import annotations

import dataclasses
import json
import threading
from typing import Any

from esql.tree import Element

from flowbroker_nodes.base import Assembly, FlowServices, NodeError

CONTROL_QUEUE = "SYSTEM.BROKER.AGGR.CONTROL"
REQUEST_QUEUE = "SYSTEM.BROKER.AGGR.REQUEST"
REPLY_QUEUE = "SYSTEM.BROKER.AGGR.REPLY"
TIMEOUT_QUEUE = "SYSTEM.BROKER.AGGR.TIMEOUT"
UNKNOWN_QUEUE = "SYSTEM.BROKER.AGGR.UNKNOWN"
#: The folder of the combined message that holds one folder per reply (as ACE names it).
REPLY_BODY = "ComIbmAggregateReplyBody"
#: How long a reply waits for an aggregation's control record another thread holds (ms).
CONTROL_WAIT_MS = 5000
#: Largest number of requests one aggregation may send.
MAX_REQUESTS = 10_000

_PROP = "flowbroker.aggregate."


@dataclasses.dataclass
class Fanout:
    """An aggregation being sent: the requests the AggregateRequest nodes on its path recorded."""

    name: str
    ident: bytes
    requests: list[str] = dataclasses.field(default_factory=list)


_SENDING = threading.local()


def open_fanouts() -> dict[str, Fanout]:
    """The aggregations this thread is sending now, by hex id (nested AggregateControls nest)."""
    found: dict[str, Fanout] | None = getattr(_SENDING, "fanouts", None)
    if found is None:
        found = _SENDING.fanouts = {}
    return found


@dataclasses.dataclass
class Control:
    """The state of one open aggregation, as its control record holds it."""

    name: str
    ident: bytes
    requests: list[str]
    received: list[str]
    timeout: int
    started: float
    #: replies received in the unit of work that holds the record, put when it commits
    held: list[StoredReply] = dataclasses.field(default_factory=list)
    done: bool = False

    def to_bytes(self) -> bytes:
        return json.dumps(
            {
                "name": self.name,
                "requests": self.requests,
                "received": self.received,
                "timeout": self.timeout,
                "started": self.started,
            }
        ).encode()

    @classmethod
    def from_bytes(cls, ident: bytes, data: bytes) -> Control:
        raw = json.loads(data)
        return cls(
            str(raw["name"]),
            ident,
            [str(r) for r in raw["requests"]],
            [str(r) for r in raw["received"]],
            int(raw["timeout"]),
            float(raw["started"]),
        )


@dataclasses.dataclass
class StoredReply:
    """One reply of an aggregation: where it goes in the combined message and its bytes."""

    folder: str
    index: int
    correl_id: bytes
    domain: str
    md: Any
    properties: dict[str, Any]
    body: bytes


def ensure_queues(flow: FlowServices) -> None:
    """Define the aggregation queues the first time this connection finds one missing."""
    for queue in (CONTROL_QUEUE, REQUEST_QUEUE, REPLY_QUEUE, TIMEOUT_QUEUE, UNKNOWN_QUEUE):
        flow.ensure_queue(queue)


def request_record(fanout: Fanout, folder: str, index: int) -> bytes:
    return json.dumps(
        {"aggregation": fanout.ident.hex(), "name": fanout.name, "folder": folder, "index": index}
    ).encode()


def parse_request(data: bytes) -> tuple[bytes, str, str, int]:
    """(aggregation id, aggregate name, folder, index) of a request record."""
    raw = json.loads(data)
    return bytes.fromhex(raw["aggregation"]), str(raw["name"]), str(raw["folder"]), int(raw["index"])


def reply_of(flow: FlowServices, root: Element, folder: str, index: int, correl_id: bytes) -> StoredReply:
    """The reply ``root`` as it would be stored: its descriptor, properties and body bytes."""
    md, properties, body = flow.message_parts(root)
    body_element = root.last_child
    domain = body_element.name if body_element is not None else "BLOB"
    if domain in ("Properties", "MQMD", "MQRFH2"):
        domain = "BLOB"
    return StoredReply(folder, index, correl_id, domain, md, dict(properties), body)


def store_reply(flow: FlowServices, ident: bytes, reply: StoredReply) -> None:
    properties = {
        **{k: v for k, v in reply.properties.items() if not k.startswith("flowbroker.")},
        _PROP + "folder": reply.folder,
        _PROP + "index": reply.index,
        _PROP + "correlId": reply.correl_id.hex(),
        _PROP + "domain": reply.domain,
    }
    flow.put_record(
        REPLY_QUEUE, reply.body, correl_id=ident, properties=properties, syncpoint=True, md=reply.md
    )


def stored_replies(flow: FlowServices, ident: bytes) -> list[StoredReply]:
    """Get (under syncpoint) every reply stored for aggregation ``ident``."""
    found: list[StoredReply] = []
    while True:
        message = flow.get_message(REPLY_QUEUE, 0, syncpoint=True, correl_id=ident)
        if message is None:
            return found
        props = dict(getattr(message, "properties", None) or {})
        correl = bytes.fromhex(str(props.get(_PROP + "correlId") or ""))
        message.md.correl_id = correl
        found.append(
            StoredReply(
                str(props.get(_PROP + "folder") or "reply"),
                int(props.get(_PROP + "index") or 0),
                correl,
                str(props.get(_PROP + "domain") or "BLOB"),
                message.md,
                {k: v for k, v in props.items() if not k.startswith("flowbroker.")},
                message.body,
            )
        )


def take_control(flow: FlowServices, ident: bytes, wait_ms: int) -> Control | None:
    """The aggregation's control record, held by this unit of work (None: it is closed)."""
    held: dict[bytes, Control] = flow.unit_state.setdefault("aggregations", {})
    if ident in held:
        return held[ident]
    message = flow.get_message(CONTROL_QUEUE, wait_ms, syncpoint=True, correl_id=ident)
    if message is None:
        return None
    control = Control.from_bytes(ident, message.body)
    held[ident] = control
    # the record goes back with the replies received meanwhile when the unit of work commits,
    # unless the aggregation was completed or timed out in it
    flow.before_commit(lambda: _put_back(flow, control))
    return control


def _put_back(flow: FlowServices, control: Control) -> None:
    if control.done:
        return
    for reply in control.held:
        store_reply(flow, control.ident, reply)
    control.held = []
    flow.put_record(CONTROL_QUEUE, control.to_bytes(), correl_id=control.ident, syncpoint=True)


def close(flow: FlowServices, control: Control, answered: list[StoredReply]) -> Assembly:
    """Close the aggregation: remove what is left of it, and the combined message of ``answered``."""
    control.done = True
    for request in control.requests:
        if request not in control.received:
            # a reply arriving later finds no request and goes to unknown
            flow.get_message(REQUEST_QUEUE, 0, syncpoint=True, correl_id=bytes.fromhex(request))
    return combined(flow, sorted(answered, key=lambda r: r.index))


@dataclasses.dataclass
class Stored:
    md: Any
    properties: dict[str, Any]
    body: bytes


def combined(flow: FlowServices, replies: list[StoredReply]) -> Assembly:
    """ACE's combined reply: Root.Properties, then Root.ComIbmAggregateReplyBody.<folder> per reply,
    each holding the reply's own trees (Properties, MQMD, body)."""
    keep = getattr(flow, "input_properties", None)
    root = Element("Root")
    body = Element(REPLY_BODY)
    for reply in replies:
        try:
            built = flow.build_assembly(
                Stored(reply.md, reply.properties, reply.body), {"domain": reply.domain}
            )
        except Exception as exc:
            raise NodeError(
                f"the reply for folder {reply.folder!r} cannot be read again: {exc}", number=2230
            ) from exc
        if root.first_child is None:
            properties = built.root.child("Properties")
            if properties is not None:
                root.append(properties.copy())
        folder = body.add(reply.folder)
        for kid in list(built.root.children()):
            kid.detach()
            folder.append(kid)
    if root.first_child is None:
        root.add("Properties")
    root.append(body)
    if keep is not None:
        flow.input_properties = keep  # type: ignore[attr-defined]
    return Assembly(root)
