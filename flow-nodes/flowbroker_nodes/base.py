"""The runtime contract every node type implements: the message assembly, propagation, failures.

A flow runs depth first and synchronously on the thread of its input node: ``propagate`` calls
the next node's ``receive`` directly, and the assembly's trees are passed by reference, never
copied per node. An exception a node raises itself goes to that node's failure terminal when it
is connected; otherwise it becomes an :class:`Unwinding` that passes every node on the way back
up unchanged until a TryCatch or the input node catches it.

An input node (spec role ``input``) runs no loop of its own: the flow thread gets, propagates,
commits and backs out. A node fed by a queue of the flow's transport describes it with
``queue_input()`` (a :class:`QueueInput`); any other opens its own source for each flow thread
with ``open_input(flow)`` (an :class:`InputSource`).
"""

from __future__ import annotations

import dataclasses
import logging
import threading
import time
import traceback
from collections.abc import Callable, Iterable, Mapping
from typing import Any, ClassVar, Protocol

from esql.tree import Element

from flowbroker_nodes.spec import NodeSpec

log = logging.getLogger(__name__)


class Assembly:
    """The message assembly of ACE: Root, LocalEnvironment, Environment and ExceptionList."""

    __slots__ = ("environment", "exception_list", "local_environment", "root")

    def __init__(
        self,
        root: Element,
        local_environment: Element | None = None,
        environment: Element | None = None,
        exception_list: Element | None = None,
    ) -> None:
        self.root = root
        self.local_environment = (
            local_environment if local_environment is not None else Element("LocalEnvironment")
        )
        self.environment = environment if environment is not None else Element("Environment")
        self.exception_list = exception_list if exception_list is not None else Element("ExceptionList")

    def replace(
        self,
        *,
        root: Element | None = None,
        local_environment: Element | None = None,
        exception_list: Element | None = None,
    ) -> Assembly:
        """A new assembly sharing this one's trees except those given (Environment is always shared)."""
        return Assembly(
            root if root is not None else self.root,
            local_environment if local_environment is not None else self.local_environment,
            self.environment,
            exception_list if exception_list is not None else self.exception_list,
        )


class NodeError(Exception):
    """A failure a node reports itself; it becomes an ExceptionList entry.

    ``kind`` is the ExceptionList element name: RecoverableException, UserException,
    ParserException, DatabaseException, ConversionException.
    """

    def __init__(
        self,
        text: str,
        *,
        number: int = 2230,
        inserts: tuple[Any, ...] = (),
        kind: str = "RecoverableException",
    ) -> None:
        super().__init__(text)
        self.text = text
        self.number = number
        self.inserts = inserts
        self.kind = kind


class Unwinding(Exception):
    """An exception on its way back to the nearest TryCatch or input node, with its ExceptionList.

    ``node`` is where the unwinding began: the node whose failure no failure terminal took, to
    which a backout it causes is counted.
    """

    def __init__(
        self, exception_list: Element, cause: BaseException | None = None, node: Node | None = None
    ) -> None:
        super().__init__(describe_exception_list(exception_list))
        self.exception_list = exception_list
        self.cause = cause
        self.node = node


class DeployProblem(Exception):
    """A problem found while preparing a node for deployment (property, line, column).

    ``more`` holds further problems of the same node, so a deployment reports every one.
    """

    def __init__(
        self,
        message: str,
        *,
        property: str = "",
        line: int = 0,
        column: int = 0,
        more: list[DeployProblem] | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.property = property
        self.line = line
        self.column = column
        self.more = more or []

    def all(self) -> list[DeployProblem]:
        return [self, *self.more]


class QueueMessage(Protocol):
    """What an input node gets from a transport and an output node hands to one."""

    md: Any
    properties: dict[str, Any]
    body: bytes


@dataclasses.dataclass
class ArrivedDescriptor:
    """The descriptor of a message that came from no queue (MQTT, a file, a timer): only what an
    MQMD can say about it."""

    put_time: float = dataclasses.field(default_factory=time.time)
    persistence: int = 0
    format: str = "MQSTR   "
    encoding: int = 546
    coded_char_set_id: int = 1208


@dataclasses.dataclass
class ArrivedMessage:
    """A message that came from no queue, as the runtime builds its assembly from one."""

    md: ArrivedDescriptor = dataclasses.field(default_factory=ArrivedDescriptor)
    properties: dict[str, Any] = dataclasses.field(default_factory=dict)
    body: bytes = b""


@dataclasses.dataclass(frozen=True)
class QueueInput:
    """What an input node fed by a queue of the flow's transport tells the flow thread that gets
    its messages: the flow thread runs the get → propagate → commit loop, the unit of work
    (batches, transaction mode) and the backouts past the threshold itself."""

    queue: str
    #: The domain, set, type and format a body is parsed in when the message names none.
    template: dict[str, str]
    #: yes: the flow runs in a unit of work; no: it does not; automatic: when the message is persistent.
    transaction_mode: str = "yes"
    #: How long one get waits before the thread looks for a stop.
    wait_ms: int = 1000
    #: At most this many waiting messages got and committed together (1: byQueueOrder).
    read_ahead: int = 1
    #: 0: the queue's own BOTHRESH, else the execution group's default (never infinite).
    backout_threshold: int = 0
    #: "" takes the queue's BOQNAME, then the dead-letter queue.
    backout_queue: str = ""


class InputSource(Protocol):
    """One flow thread's own source of an input node that is fed by no queue (MQTT, HTTP, files,
    timers): the node supplies the next arrivals and the assembly of each; the flow thread runs
    each arrival in a unit of work of its own, counts it, catches what unwinds, backs out and
    sends a failure to the node's failure terminal."""

    #: Whether the arrivals run in a unit of work (puts under syncpoint as the flow's).
    transactional: bool

    def next(self) -> list[Any]:
        """The next arrivals, waiting at most a wait interval; [] when none came."""
        ...

    def assembly(self, arrival: Any) -> tuple[str, Assembly] | None:
        """The terminal an arrival is propagated on and its assembly; None: nothing to propagate
        (the unit of work, which may have taken records, is committed)."""
        ...

    def failure_assembly(self, arrival: Any, assembly: Assembly | None, errors: Element) -> Assembly | None:
        """What the failure terminal gets when ``arrival`` failed with ``errors``, made in the unit
        of work the failure terminal runs in (after the failed one was backed out); None: nothing
        (the arrival's work ended meanwhile), that unit of work is committed."""
        ...

    def unhandled(self, arrival: Any, errors: Element, note: str) -> bool:
        """A failure no failure terminal took (``errors``: the last ExceptionList, ``note``: what
        else failed), after the backout, in a unit of work of its own (to give the arrival up, say);
        False ends the batch of ``arrival``."""
        ...

    def done(self, arrivals: list[Any], complete: bool) -> None:
        """A batch ended: ``complete`` when every arrival was processed."""
        ...

    def close(self) -> None: ...


class FlowServices(Protocol):
    """What the runtime offers the nodes of one flow thread (see flowbroker.runtime.engine)."""

    flow_name: str
    #: Set when the flow stops: take no new message, finish the one in progress.
    stop: threading.Event
    #: Set when a stopping flow's grace is over: ESQL and other long work end at once.
    interrupt: threading.Event

    # queue manager work, inside the thread's unit of work when ``syncpoint`` says so
    # a get in the middle of a flow (MQGet), by MsgId and/or CorrelId when given
    def get_message(
        self,
        queue: str,
        wait_ms: int,
        *,
        syncpoint: bool | None,
        msg_id: bytes | None = None,
        correl_id: bytes | None = None,
    ) -> QueueMessage | None: ...
    def put(
        self,
        queue: str,
        root: Element,
        *,
        syncpoint: bool | None,
        persistence: str = "asMessage",
        new_msg_id: bool = True,
        new_correl_id: bool = False,
        correl_id: bytes | None = None,
    ) -> bytes: ...
    # a persistent record of the broker's own state (aggregations, timers) on a system queue,
    # which is defined the first time it is missing
    def put_record(
        self,
        queue: str,
        body: bytes,
        *,
        correl_id: bytes,
        properties: dict[str, Any] | None = None,
        syncpoint: bool | None = None,
        md: Any = None,
        expiry_s: int = 0,
    ) -> None: ...
    def ensure_queue(self, queue: str) -> None: ...
    def put_raw(
        self,
        queue: str,
        message: QueueMessage,
        *,
        syncpoint: bool,
        reason: str = "",
        notes: dict[str, str] | None = None,
    ) -> None: ...
    # the value of a field of the message's MQRFH2 header (None: missing), read without filling
    # the header while it is unread
    def header_field(self, root: Element, folder: str, name: str) -> Any: ...
    def publish(
        self, topic: str, root: Element, *, syncpoint: bool | None, need_deliveries: bool = True
    ) -> int: ...
    def dead_letter(
        self, message: QueueMessage, reason: str, *, syncpoint: bool, notes: dict[str, str] | None = None
    ) -> None: ...

    # what nodes remember until the unit of work ends, and work they hand to its commit (run
    # first, inside the unit of work; a backout drops both)
    unit_state: dict[str, Any]

    def before_commit(self, work: Callable[[], None]) -> None: ...
    # work run once the flow thread has processed the arrivals its input took together, before
    # it waits for more (an output's coalesced write), at most once per ``key`` a turn
    def after_batch(self, key: object, work: Callable[[], None]) -> None: ...
    def begin(self, transactional: bool, pipeline: bool = False) -> None: ...
    def commit(self) -> None: ...
    def backout(self) -> None: ...
    def in_transaction(self) -> bool: ...
    # the message assembly
    def build_assembly(self, message: QueueMessage, template: dict[str, str]) -> Assembly: ...
    def reset_body(self, root: Element, template: dict[str, str]) -> None: ...
    # descriptor fields, message properties and body bytes of an output Root
    def message_parts(self, root: Element) -> tuple[Any, dict[str, Any], bytes]: ...
    # the absolute directories file nodes may read and write below
    def file_roots(self) -> tuple[str, ...]: ...
    # XSLTransform's bounds: time (ms), sandbox memory, stylesheet and result size (bytes)
    def xslt_limits(self) -> tuple[int, int, int, int]: ...
    # databases, labels, trace
    def data_source(self, name: str) -> Any: ...
    def database_done(self, name: str, node_commits: bool) -> None: ...
    def label(self, name: str) -> Node | None: ...
    def externals(self, node: Node) -> dict[str, object]: ...
    def esql_limits(self) -> tuple[int, int]:
        """CPU time (ms) and largest value (bytes) one node invocation's ESQL may use; 0: unlimited."""
        ...

    def broker_attributes(self) -> Mapping[str, object]: ...
    # the execution group's HTTP listener (flowbroker.runtime.http_listener.HTTPListener)
    def http_listener(self) -> Any: ...
    def user_trace(self, text: str) -> None: ...
    def log(self, text: str) -> None: ...


_CURRENT = threading.local()


def bind_thread(services: FlowServices | None) -> None:
    """Make ``services`` what the nodes see on this thread (each flow thread calls this once)."""
    _CURRENT.services = services
    _CURRENT.trace = None


def trace_nodes(writer: Any) -> None:
    """Turn this thread's per-node user trace records on (a ``write(text)`` callable) or off (None)."""
    _CURRENT.trace = writer


#: One wire: the target node and the input terminal it arrives on.
Wire = tuple["Node", str]


class Node:
    """A node instance in a compiled flow; subclasses implement :meth:`evaluate`.

    Subclasses keep per-message state off ``self`` (several flow threads share one instance)
    and read their configuration in :meth:`prepare`, once per deployment.
    """

    SPEC: ClassVar[NodeSpec]

    def __init__(self, node_id: str, name: str, properties: dict[str, Any]) -> None:
        self.id = node_id
        self.name = name or node_id
        spec_props = {p.name: p.default for p in self.SPEC.properties}
        spec_props.update(properties)
        self.properties = spec_props
        self.wires: dict[str, list[Wire]] = {}
        self.stats = NodeStats()

    # -- deployment ----------------------------------------------------------------------------

    def prepare(self) -> None:
        """Check and compile the configuration; raise :class:`DeployProblem` on a bad one."""

    def release(self) -> None:
        """Give back what the node holds outside the process's memory (connections, pools, child
        processes): called once no flow thread runs the node any more (the flow was undeployed,
        deployed over, its group stopped, or its deployment failed after :meth:`prepare`).

        A node whose ``prepare`` failed half way is released too: an override reads its attributes
        with a default. It may be called more than once, and a node used again afterwards acquires
        afresh on first use. What it raises is logged by :func:`release_nodes`, never passed on.
        """

    def connect(self, terminal: str, target: Node, target_terminal: str) -> None:
        self.wires.setdefault(terminal, []).append((target, target_terminal))

    def is_connected(self, terminal: str) -> bool:
        return bool(self.wires.get(terminal))

    # -- an input node: what it supplies to the flow threads that run it -----------------------

    def queue_input(self) -> QueueInput | None:
        """The queue of the flow's transport this input node is fed by; None when it has a
        source of its own (see :meth:`open_input`)."""
        return None

    def open_input(self, flow: FlowServices) -> InputSource:
        """A new source of arrivals for one flow thread of this input node (closed by that thread)."""
        raise NodeError(f"{self.SPEC.type} node {self.name} does not start flow invocations")

    # -- running -------------------------------------------------------------------------------

    @property
    def flow(self) -> FlowServices:
        """The services of the flow thread running now (set per thread by the runtime)."""
        services: FlowServices | None = getattr(_CURRENT, "services", None)
        if services is None:
            raise NodeError(f"node {self.name} runs outside a flow thread")
        return services

    def receive(self, terminal: str, assembly: Assembly) -> None:
        """A message arrives on an input terminal: evaluate it, routing own failures to failure."""
        stats = self.stats
        stats.messages_in += 1
        trace = getattr(_CURRENT, "trace", None)
        if trace is not None:
            trace(f"{self.SPEC.type} node '{self.name}' received a message on terminal '{terminal}'")
        started = time.perf_counter_ns()
        cpu = stats.cpu_clock()
        try:
            self.evaluate(assembly, terminal)
        except Unwinding:
            raise
        except Exception as exc:
            stats.errors += 1
            entry = exception_entry(self, exc)
            failed = assembly.replace(exception_list=exception_list_with(entry))
            if trace is not None:
                trace(f"{self.SPEC.type} node '{self.name}' raised: {entry.child('Text').value}")  # type: ignore[union-attr]
            if self.is_connected("failure"):
                for target, target_terminal in self.wires["failure"]:
                    target.receive(target_terminal, failed)
            else:
                raise Unwinding(failed.exception_list, exc, self) from exc
        finally:
            stats.add_time(started, cpu)

    def evaluate(self, assembly: Assembly, terminal: str) -> None:
        """Process one message that arrived on ``terminal``."""
        raise NotImplementedError

    def propagate_failure(self, assembly: Assembly) -> None:
        """Send an assembly carrying an ExceptionList to failure, or unwind when it is unconnected."""
        if not self.propagate("failure", assembly):
            raise Unwinding(assembly.exception_list, node=self)

    def propagate(self, terminal: str, assembly: Assembly) -> bool:
        """Send ``assembly`` down ``terminal``; an unconnected terminal discards it (returns False)."""
        wires = self.wires.get(terminal)
        if not wires:
            return False
        self.stats.messages_out += 1
        for target, target_terminal in wires:
            target.receive(target_terminal, assembly)
        return True


def release_nodes(nodes: Iterable[Node], flow_name: str = "") -> None:
    """Call each node's :meth:`Node.release`; a failure is logged and the other nodes are released."""
    for node in nodes:
        try:
            node.release()
        except Exception:
            log.warning(
                "flow %s: node %s (%s) did not release cleanly",
                flow_name or "?",
                node.name,
                type(node).__module__,
                exc_info=True,
            )


#: A node reads the thread's CPU clock on its first message and on every this many after: the
#: clock is a system call on some hosts (0.5 µs and more a read, four reads a message per node
#: pair), while the elapsed-time clock is not.
CPU_SAMPLE_EVERY = 16


class NodeStats:
    """Counters of one node, summed over its flow threads (single writes are atomic enough).

    ``backouts`` counts the units of work backed out because of an exception that began
    unwinding at this node. ``cpu_ns`` is the CPU time of the sampled messages scaled by the
    elapsed time of all of them (exact while only one message has been sampled).
    """

    __slots__ = (
        "_turn",
        "backouts",
        "elapsed_ns",
        "errors",
        "messages_in",
        "messages_out",
        "sampled_cpu_ns",
        "sampled_elapsed_ns",
    )

    def __init__(self) -> None:
        self.messages_in = 0
        self.messages_out = 0
        self.errors = 0
        self.backouts = 0
        self.elapsed_ns = 0
        self.sampled_cpu_ns = 0
        self.sampled_elapsed_ns = 0
        self._turn = 1

    def cpu_clock(self) -> int:
        """The thread's CPU clock (ns) when this message is one to sample, else -1."""
        self._turn -= 1
        if self._turn > 0:
            return -1
        self._turn = CPU_SAMPLE_EVERY
        return time.thread_time_ns()

    def add_time(self, started_ns: int, cpu_clock: int) -> None:
        """Count a message that began at ``started_ns`` (perf counter) and ``cpu_clock``."""
        elapsed = time.perf_counter_ns() - started_ns
        self.elapsed_ns += elapsed
        if cpu_clock >= 0:
            self.sampled_cpu_ns += time.thread_time_ns() - cpu_clock
            self.sampled_elapsed_ns += elapsed

    def add_span(self, elapsed_ns: int, cpu_ns: int, sampled_ns: int | None = None) -> None:
        """Count the time of messages measured together (a straight run's): ``elapsed_ns`` in all,
        ``cpu_ns`` of the CPU clock over ``sampled_ns`` of it (all of it when not given; none when
        ``cpu_ns`` is -1)."""
        self.elapsed_ns += elapsed_ns
        if cpu_ns >= 0:
            self.sampled_cpu_ns += cpu_ns
            self.sampled_elapsed_ns += elapsed_ns if sampled_ns is None else sampled_ns

    @property
    def cpu_ns(self) -> int:
        if not self.sampled_elapsed_ns:
            return self.sampled_cpu_ns
        return self.sampled_cpu_ns * self.elapsed_ns // self.sampled_elapsed_ns

    def snapshot(self) -> dict[str, int]:
        return {
            "messages_in": self.messages_in,
            "messages_out": self.messages_out,
            "errors": self.errors,
            "backouts": self.backouts,
            "cpu_us": self.cpu_ns // 1000,
            "elapsed_us": self.elapsed_ns // 1000,
        }


# -- the ExceptionList -------------------------------------------------------------------------

#: Builds the precise ExceptionList entry of a cause this package cannot describe itself, or
#: None when it does not know the cause. The runtime registers the format converters' one, so
#: a parser error becomes ACE's positioned ParserException without the nodes importing them.
CauseDescriber = Callable[[BaseException, str], "Element | None"]
_DESCRIBERS: list[CauseDescriber] = []
_MAX_CAUSES = 8


def describe_causes_with(describer: CauseDescriber) -> None:
    """Register ``describer`` for the causes nested below a node's ExceptionList entry."""
    if describer not in _DESCRIBERS:
        _DESCRIBERS.append(describer)


def _described(exc: BaseException, label: str) -> Element | None:
    for describer in _DESCRIBERS:
        found = describer(exc, label)
        if found is not None:
            return found
    return None


def exception_entry(node: Node, exc: BaseException) -> Element:
    """One ExceptionList entry for ``exc`` raised in ``node``, its causes nested inside it.

    As in ACE, the entry of the node is the outermost and the original failure the innermost:
    an ESQL statement that read a malformed body gives a RecoverableException of the node
    holding the ParserException that says where the bytes went wrong. A cause is nested when a
    registered describer knows it, or when it is a parser, database or user exception.
    """
    own = _described(exc, node.name)
    if own is not None:
        # a parser error raised straight from the node: the node's entry holds it
        entry = _node_entry(node, exc, "RecoverableException", 2230, (), str(exc) or type(exc).__name__)
        entry.append(own)
        return entry
    kind, number, inserts = _classify(exc)
    text = str(exc) or type(exc).__name__
    entry = _node_entry(node, exc, kind, number, inserts, text)
    holder = entry
    seen = {id(exc)}
    cause = _cause_of(exc)
    while cause is not None and id(cause) not in seen and len(seen) <= _MAX_CAUSES:
        seen.add(id(cause))
        nested = _described(cause, node.name)
        if nested is None:
            cause_kind, cause_number, cause_inserts = _classify(cause)
            if cause_kind == "RecoverableException":
                break
            nested = _node_entry(node, cause, cause_kind, cause_number, cause_inserts, str(cause))
        holder.append(nested)
        holder = nested
        cause = _cause_of(cause)
    return entry


def _cause_of(exc: BaseException) -> BaseException | None:
    if exc.__cause__ is not None:
        return exc.__cause__
    return None if exc.__suppress_context__ else exc.__context__


def _node_entry(
    node: Node, exc: BaseException, kind: str, number: int, inserts: tuple[Any, ...], text: str
) -> Element:
    entry = Element(kind)
    frame = traceback.extract_tb(exc.__traceback__)[-1] if exc.__traceback__ else None
    entry.add("File", frame.filename if frame else "")
    entry.add("Line", frame.lineno if frame else 0)
    entry.add("Function", frame.name if frame else "")
    entry.add("Type", node.SPEC.type)
    entry.add("Name", node.id)
    entry.add("Label", node.name)
    entry.add("Catalog", str(getattr(exc, "catalog", None) or "BIPmsgs"))
    entry.add("Severity", _severity(exc))
    entry.add("Number", number)
    entry.add("Text", text)
    for value in inserts:
        insert = entry.add("Insert")
        insert.add("Type", _insert_type(value))
        insert.add("Text", str(value))
    if kind != "UserException":
        # where in the ESQL the statement failed (a user exception's values are its inserts)
        for attr in ("line", "column"):
            value = getattr(exc, attr, None)
            if isinstance(value, int) and value:
                insert = entry.add("Insert")
                insert.add("Type", 2)
                insert.add("Text", f"{attr} {value}")
    return entry


def _severity(exc: BaseException) -> int:
    value = getattr(exc, "severity", 3)
    return value if isinstance(value, int) and not isinstance(value, bool) else 3


def _insert_type(value: Any) -> int:
    """ACE's insert types: 2 integer, 3 float, 4 decimal, 5 character."""
    if isinstance(value, bool):
        return 5
    if isinstance(value, int):
        return 2
    if isinstance(value, float):
        return 3
    if type(value).__name__ == "Decimal":
        return 4
    return 5


def _classify(exc: BaseException) -> tuple[str, int, tuple[Any, ...]]:
    """ExceptionList kind, message number and inserts of an exception a node raised."""
    if isinstance(exc, NodeError):
        return exc.kind, exc.number, exc.inserts
    name = type(exc).__name__
    module = type(exc).__module__ or ""
    if name == "UserException":
        # THROW USER EXCEPTION: its MESSAGE number and VALUES, as ESQL records them
        number = getattr(exc, "number", None)
        inserts = getattr(exc, "inserts", None)
        if inserts is None:
            inserts = getattr(exc, "values", None)
        return (
            "UserException",
            number if isinstance(number, int) and not isinstance(number, bool) else 3001,
            tuple(inserts or ()),
        )
    if name == "DomainError" or "Parse" in name:
        return "ParserException", 5009, ()
    if module.startswith("sqlalchemy") or "Database" in name:
        return "DatabaseException", 2321, ()
    if name in {"EsqlValueError", "EsqlRuntimeError", "BudgetExceeded"}:
        return "RecoverableException", 2488, ()
    return "RecoverableException", 2230, ()


def exception_list_with(entry: Element) -> Element:
    root = Element("ExceptionList")
    root.append(entry)
    return root


def innermost_entry(exception_list: Element) -> Element | None:
    """The deepest exception entry: the original failure, below the nodes it unwound through."""
    entry = exception_list.first_child
    while entry is not None:
        deeper = entry.last_child
        if deeper is None or not deeper.name.endswith("Exception"):
            return entry
        entry = deeper
    return None


def describe_exception_list(exception_list: Element) -> str:
    """The node's entry and, when deeper, the original failure, as one line (for logs and reasons)."""
    parts: list[str] = []
    for entry in (exception_list.first_child, innermost_entry(exception_list)):
        if entry is None or (parts and entry is exception_list.first_child):
            continue
        label = entry.child("Label")
        text = entry.child("Text")
        parts.append(f"{entry.name} in {label.value if label else '?'}: {text.value if text else ''}")
    return "; caused by ".join(parts) or "exception"


def field(root: Element, *path: str) -> Element | None:
    """The element at ``path`` below ``root`` (first of each name), or None."""
    node: Element | None = root
    for name in path:
        if node is None:
            return None
        node = node.child(name)
    return node


def field_value(root: Element, *path: str) -> Any:
    node = field(root, *path)
    return node.value if node is not None else None


def esql_log(node: Node) -> Callable[[str], None]:
    return lambda text: node.flow.log(f"{node.name}: {text}")
