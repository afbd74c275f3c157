"""TimeoutControl: sets and cancels the timeouts a controlled TimeoutNotification node fires (ACE's pair).

Each message carries a timeout request (by default ``LocalEnvironment.TimeoutRequest``)::

    TimeoutRequest
      Action          SET | CANCEL
      Identifier      names the timeout among those of this unique identifier
      StartDate       TODAY (default) | yyyy-mm-dd      (UTC)
      StartTime       NOW (default) | hh:mm:ss          (UTC)
      Interval        seconds between two timeouts (default 0; needed when Count is not 1)
      Count           how many timeouts (default 1; -1: until cancelled)
      IgnoreMissed    TRUE (default): timeouts that fell due while the group was stopped are skipped
      AllowOverwrite  TRUE (default): a SET replaces a timeout of the same Identifier; FALSE: it fails

A SET stores the input message (its Root) with the request; the TimeoutNotification node with
the same unique identifier, in controlled mode, propagates that message at each timeout with
``LocalEnvironment.TimeoutRequest``. The message goes on to ``out`` unchanged; a request that is
missing or wrong goes to ``failure`` naming the field.

The timeouts are records on the broker's queue ``SYSTEM.BROKER.TIMEOUT.QUEUE`` (a
:class:`~flowbroker_nodes.schedule.Schedule` of the unique identifier), put in the unit of work
of the request, so they survive restarts. ``SYSTEM.BROKER.TIMEOUT.INDEX`` holds one record per
Identifier naming its current series, and a cancelled series' tombstone, which the timer finds
before it fires the series again. Two requests for the same Identifier in concurrent units of
work are not ordered against each other.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import hashlib
import json
import os
import re
import time
from typing import Any

from esql.tree import Element

from flowbroker_nodes.base import Assembly, DeployProblem, FlowServices, NodeError, field
from flowbroker_nodes.base import Node as BaseNode
from flowbroker_nodes.schedule import Schedule
from flowbroker_nodes.spec import NodeSpec, Property, Terminal

SPEC = NodeSpec(
    type="TimeoutControl",
    label="TimeoutControl",
    category="routing",
    icon="timer-control",
    description="Sets or cancels a timeout from the request in the message (LocalEnvironment.TimeoutRequest by "
    "default): the TimeoutNotification node with the same unique identifier, in controlled mode, propagates "
    "the stored message when it falls due. Timeouts survive restarts.",
    inputs=(Terminal("in", "in", "In"),),
    outputs=(Terminal("out", "out", "Out"), Terminal("failure", "failure", "Failure")),
    properties=(
        Property(
            "uniqueIdentifier",
            "string",
            "Unique identifier",
            required=True,
            description="The unique identifier of the controlled TimeoutNotification node that fires these timeouts.",
        ),
        Property(
            "requestLocation",
            "string",
            "Request location",
            default="InputLocalEnvironment.TimeoutRequest",
            description="Where the timeout request is: a path below InputLocalEnvironment or InputRoot (e.g. "
            "InputRoot.XMLNSC.TimeoutRequest).",
        ),
    ),
)

TIMER_QUEUE = "SYSTEM.BROKER.TIMEOUT.QUEUE"
INDEX_QUEUE = "SYSTEM.BROKER.TIMEOUT.INDEX"
PROP = "flowbroker.timer."
#: A tombstone outlives the next timeout of its series by this long (s).
_TOMBSTONE_MARGIN_S = 3600
_STEP = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]*$")
_TREES = {"InputLocalEnvironment": "local", "LocalEnvironment": "local", "InputRoot": "root", "Root": "root"}


def check_identifier(value: object) -> str:
    ident = str(value or "").strip()
    if not ident:
        raise DeployProblem("required: the unique identifier", property="uniqueIdentifier")
    if len(ident) > 256:
        raise DeployProblem(
            "the unique identifier is longer than 256 characters", property="uniqueIdentifier"
        )
    return ident


@dataclasses.dataclass
class Request:
    """One parsed timeout request."""

    action: str
    identifier: str
    start: float
    interval: int
    count: int
    ignore_missed: bool
    allow_overwrite: bool

    @property
    def end(self) -> float | None:
        """When the last timeout of the series falls due (None: never)."""
        return None if self.count < 0 else self.start + (self.count - 1) * self.interval


def _text(request: Element, name: str) -> str | None:
    found = request.child(name)
    if found is None or found.value is None:
        return None
    return str(found.value).strip()


def _flag(request: Element, name: str, default: bool) -> bool:
    value = _text(request, name)
    if value is None or value == "":
        return default
    if value.upper() in ("TRUE", "1", "YES"):
        return True
    if value.upper() in ("FALSE", "0", "NO"):
        return False
    raise NodeError(
        f"TimeoutRequest.{name} must be TRUE or FALSE, not {value!r}", number=4020, inserts=(name,)
    )


def _integer(request: Element, name: str, default: int) -> int:
    value = _text(request, name)
    if value is None or value == "":
        return default
    try:
        return int(value)
    except ValueError:
        raise NodeError(
            f"TimeoutRequest.{name} must be a whole number, not {value!r}", number=4020, inserts=(name,)
        ) from None


def parse_request(request: Element, now: float) -> Request:
    """The request in ``request``, or a NodeError naming the field that is wrong."""
    action = (_text(request, "Action") or "").upper()
    if action not in ("SET", "CANCEL"):
        raise NodeError(
            f"TimeoutRequest.Action must be SET or CANCEL, not {_text(request, 'Action')!r}",
            number=4020,
            inserts=("Action",),
        )
    identifier = _text(request, "Identifier") or ""
    if not identifier or len(identifier) > 256:
        raise NodeError(
            "TimeoutRequest.Identifier must hold 1 to 256 characters", number=4020, inserts=("Identifier",)
        )
    today = dt.datetime.fromtimestamp(now, dt.UTC)
    date_text = (_text(request, "StartDate") or "TODAY").upper()
    time_text = (_text(request, "StartTime") or "NOW").upper()
    try:
        day = today.date() if date_text == "TODAY" else dt.date.fromisoformat(date_text)
    except ValueError:
        raise NodeError(
            f"TimeoutRequest.StartDate must be TODAY or yyyy-mm-dd, not {date_text!r}",
            number=4020,
            inserts=("StartDate",),
        ) from None
    try:
        clock = today.time() if time_text == "NOW" else dt.time.fromisoformat(time_text)
    except ValueError:
        raise NodeError(
            f"TimeoutRequest.StartTime must be NOW or hh:mm:ss, not {time_text!r}",
            number=4020,
            inserts=("StartTime",),
        ) from None
    start = dt.datetime.combine(day, clock.replace(tzinfo=dt.UTC)).timestamp()
    interval = _integer(request, "Interval", 0)
    count = _integer(request, "Count", 1)
    if not 0 <= interval <= 31_536_000:
        raise NodeError(
            "TimeoutRequest.Interval must be 0 to 31536000 seconds", number=4020, inserts=("Interval",)
        )
    if count == 0 or count < -1:
        raise NodeError("TimeoutRequest.Count must be -1 or at least 1", number=4020, inserts=("Count",))
    if count != 1 and interval == 0:
        raise NodeError(
            "TimeoutRequest.Interval must be at least 1 second when Count is not 1",
            number=4020,
            inserts=("Interval",),
        )
    return Request(
        action,
        identifier,
        start,
        interval,
        count,
        _flag(request, "IgnoreMissed", True),
        _flag(request, "AllowOverwrite", True),
    )


def index_key(unique: str, identifier: str) -> bytes:
    return b"FBTI" + hashlib.sha256(f"{unique}\0{identifier}".encode()).digest()[:20]


def tombstone_key(unique: str, generation: str) -> bytes:
    return b"FBTX" + hashlib.sha256(f"{unique}\0{generation}".encode()).digest()[:20]


def request_element(request: Request) -> Element:
    """LocalEnvironment.TimeoutRequest as the notification carries it."""
    element = Element("TimeoutRequest")
    element.add("Action", request.action)
    element.add("Identifier", request.identifier)
    start = dt.datetime.fromtimestamp(request.start, dt.UTC)
    element.add("StartDate", start.date().isoformat())
    element.add("StartTime", start.time().replace(microsecond=0).isoformat())
    element.add("Interval", request.interval)
    element.add("Count", request.count)
    element.add("IgnoreMissed", "TRUE" if request.ignore_missed else "FALSE")
    element.add("AllowOverwrite", "TRUE" if request.allow_overwrite else "FALSE")
    return element


def put_tombstone(flow: FlowServices, unique: str, current: dict[str, Any]) -> None:
    """Mark series ``current`` cancelled; the timer drops its next record when it finds this."""
    life = int(current.get("interval") or 0) + _TOMBSTONE_MARGIN_S
    due = current.get("next")
    if isinstance(due, int | float):
        life += max(0, int(due - time.time()))
    flow.put_record(
        INDEX_QUEUE,
        b"cancelled",
        correl_id=tombstone_key(unique, str(current["gen"])),
        syncpoint=True,
        expiry_s=life,
    )


class Node(BaseNode):
    """Sets and cancels timeouts; see the module docstring."""

    SPEC = SPEC

    def prepare(self) -> None:
        self.unique = check_identifier(self.properties.get("uniqueIdentifier"))
        location = str(
            self.properties.get("requestLocation") or "InputLocalEnvironment.TimeoutRequest"
        ).strip()
        parts = location.lstrip("$").replace("/", ".").split(".")
        if parts[0] not in _TREES or len(parts) < 2 or not all(_STEP.match(p) for p in parts[1:]):
            raise DeployProblem(
                f"request location {location!r} must be a path of field names below InputLocalEnvironment or InputRoot",
                property="requestLocation",
            )
        self.tree = _TREES[parts[0]]
        self.path = parts[1:]
        self.schedule = Schedule(TIMER_QUEUE, self.unique)

    def evaluate(self, assembly: Assembly, terminal: str) -> None:
        flow = self.flow
        start = assembly.local_environment if self.tree == "local" else assembly.root
        element = field(start, *self.path)
        where = ("InputLocalEnvironment." if self.tree == "local" else "InputRoot.") + ".".join(self.path)
        if element is None:
            raise NodeError(f"{self.name}: no timeout request at {where}", number=4020, inserts=(where,))
        now = time.time()
        request = parse_request(element, now)
        flow.ensure_queue(TIMER_QUEUE)
        flow.ensure_queue(INDEX_QUEUE)
        key = index_key(self.unique, request.identifier)
        pending: dict[bytes, dict[str, Any] | None] = flow.unit_state.setdefault(f"timers:{self.unique}", {})
        if key in pending:
            current = pending[key]
        else:
            found = flow.get_message(INDEX_QUEUE, 0, syncpoint=True, correl_id=key)
            current = json.loads(found.body) if found is not None else None
            if current is not None and current.get("end") is not None and float(current["end"]) < now:
                current = None  # its series is over
            pending[key] = current
            flow.before_commit(lambda: self._store_index(flow, key, pending))
        if request.action == "CANCEL":
            if current is not None:
                put_tombstone(flow, self.unique, current)
            pending[key] = None
            self.propagate("out", assembly)
            return
        if current is not None:
            if not request.allow_overwrite:
                raise NodeError(
                    f"a timeout {request.identifier!r} is set already and TimeoutRequest.AllowOverwrite is FALSE",
                    number=4021,
                    inserts=(request.identifier,),
                )
            put_tombstone(flow, self.unique, current)
        generation = os.urandom(12).hex()
        due = max(request.start, now)
        pending[key] = {"gen": generation, "end": request.end, "interval": request.interval, "next": due}
        md, properties, body = flow.message_parts(assembly.root)
        last = assembly.root.last_child
        domain = (
            last.name if last is not None and last.name not in ("Properties", "MQMD", "MQRFH2") else "BLOB"
        )
        self.schedule.put(
            flow, due, body, properties=store_properties(request, generation, domain, md, properties), md=md
        )
        self.propagate("out", assembly)

    @staticmethod
    def _store_index(flow: FlowServices, key: bytes, pending: dict[bytes, dict[str, Any] | None]) -> None:
        current = pending.get(key)
        if current is None:
            return
        end = current.get("end")
        life = int(end - time.time()) + _TOMBSTONE_MARGIN_S if isinstance(end, int | float) else 0
        flow.put_record(
            INDEX_QUEUE, json.dumps(current).encode(), correl_id=key, syncpoint=True, expiry_s=max(life, 0)
        )


def store_properties(
    request: Request, generation: str, domain: str, md: Any, properties: dict[str, Any]
) -> dict[str, Any]:
    """The properties of a timer record: the stored message's own, then the series' state."""
    correl = bytes(getattr(md, "correl_id", b"") or b"")
    return {
        **{k: v for k, v in properties.items() if not k.startswith("flowbroker.")},
        PROP + "request": json.dumps(dataclasses.asdict(request)),
        PROP + "gen": generation,
        PROP + "domain": domain,
        PROP + "correlId": correl.hex(),
        PROP + "fired": 0,
    }
