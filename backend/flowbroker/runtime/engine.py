"""Running flows: flow threads with their unit of work, deployed flows, and the execution group's set of them.

Each flow thread owns one queue-manager connection (a unit of work is per connection) and one
connection per data source it touched; it gets a message, builds the assembly and propagates it
through the compiled graph on its own stack. The loop is the thread's, whatever the input node: a
node fed by a queue names it (``queue_input``) and the thread gets, batches, commits and backs out;
any other opens a source for the thread (``open_input``) that supplies arrivals and their assemblies. :class:`ExecutionGroupRuntime` is the library API the
worker's control tasks call: deploy, undeploy, start, stop, statistics, user trace.

Coordinated transactions (a flow's ``coordinatedTransaction``) are single phase, not XA: at the
end of a flow invocation the thread commits each data source it used, then the queue manager's
unit of work. That order is the safer one for redelivery: a crash between the two leaves the
database work committed while the message is still on its input queue (the queue manager backs
out the unit of work of a lost connection), so the message is processed again and its database
work is repeated (at least once, never lost). The other order would lose the database work of a
message whose get and outputs were already committed. Within the first step, several data
sources commit one after the other, with the same window between them. Outside a unit of work
(transaction mode ``no``, or ``automatic`` with a non-persistent message) the get is final before
the flow runs; the coordinated database work still commits when the invocation ends, or is
rolled back when it fails. Uncoordinated database work commits when its node finishes.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from esql.tree import Element
from flowbroker_nodes.base import (
    ArrivedMessage,
    Assembly,
    InputSource,
    Node,
    QueueInput,
    QueueMessage,
    Unwinding,
    bind_thread,
    describe_exception_list,
    exception_entry,
    exception_list_with,
    field_value,
    release_nodes,
    trace_nodes,
)

from flowbroker.formats import mqmd, rfh2
from flowbroker.pubsub import rules as pubsub_rules
from flowbroker.qm.protocol import QMError, pad_id, relay_encoding
from flowbroker.runtime import assembly as assemblies
from flowbroker.runtime import backout as backouts
from flowbroker.runtime.compiler import CompiledFlow, SubflowResolver, compile_flow
from flowbroker.runtime.datasources import DataSources, ThreadDataSource
from flowbroker.runtime.debugger import Breakpoints, FlowAborted, FlowDebugger, PauseListener
from flowbroker.runtime.dependencies import install_message_sets, subflow_resolver
from flowbroker.runtime.http_listener import HTTPListener
from flowbroker.runtime.recorder import Recording, RecordingSpec
from flowbroker.runtime.straight import StraightRun, straight_domain
from flowbroker.runtime.transports import (
    DEAD_LETTER_QUEUE,
    RC_NO_MSG_AVAILABLE,
    RC_UNKNOWN_OBJECT_NAME,
    Backoff,
    IdFactory,
    Transport,
    TransportError,
    descriptor,
)
from flowbroker.runtime.usertrace import UserTrace

log = logging.getLogger("flowbroker.runtime")

__all__ = ["DEAD_LETTER_QUEUE", "DeployedFlow", "ExecutionGroupRuntime", "FlowThread"]

#: Opens one flow thread's transport connection (see :mod:`flowbroker.runtime.transports`).
Connector = Callable[[], Transport]
#: Message properties the queue manager sets on a delivery, not the application's own.
_DELIVERY_PROPERTIES = frozenset({"MQTopicString", "MQIsRetained"})
#: The MQMD Format of a message whose body begins with an MQRFH2 header.
_RFH2 = mqmd.FORMAT_RFH2.strip()


def _own_properties(given: dict[str, Any]) -> dict[str, Any]:
    """A got message's properties without those its delivery added (its topic, the broker's own)."""
    if not given:
        return {}
    return {
        key: value
        for key, value in given.items()
        if key not in _DELIVERY_PROPERTIES and not key.startswith("flowbroker.")
    }


def _backout_count(message: Any) -> int:
    return int(getattr(message.md, "backout_count", 0) or 0)


#: The MsgIds of what flows put, assigned here so the putting node learns its message's id
#: (ACE's LocalEnvironment.WrittenDestination), whichever transport carries it.
_IDS = IdFactory()
_ZERO_ID = b"\x00" * 24
#: an output node's persistence mode → the persistence it puts with (asMessage: the message's)
_PERSISTENCE = {"persistent": 1, "nonPersistent": 0}


def stop_grace() -> float:
    """Seconds a stopping flow's message in progress has to finish before its ESQL is
    interrupted: ``FLOWBROKER_STOP_GRACE_MS`` (default 5000, 0 = interrupt at once)."""
    return backouts.env_int("FLOWBROKER_STOP_GRACE_MS", 5000, 0) / 1000.0


def _msg_id(message: QueueMessage) -> bytes:
    return bytes(getattr(message.md, "msg_id", b"") or b"")


def _persistent(message: QueueMessage) -> bool:
    return int(getattr(message.md, "persistence", 0) or 0) == 1


class FlowThread(threading.Thread):
    """One instance of one input node of a deployed flow; also the nodes' ``FlowServices``."""

    def __init__(self, flow: DeployedFlow, node: Node, index: int) -> None:
        super().__init__(name=f"{flow.name}.{node.id}#{index}", daemon=True)
        self.deployed = flow
        self.flow_name = flow.name
        self.node = node
        self.stop = flow.stop_event
        self.interrupt = flow.interrupt_event
        self.client: Transport | None = None
        self.transactional = False
        self.batching = False
        #: Whether the queue manager holds work of this thread under syncpoint (a commit has work to do).
        self.uncommitted = False
        #: The application properties of the message being processed, carried to what it puts.
        self.input_properties: dict[str, Any] = {}
        # the message being processed, when its untouched Root may be put as its bytes
        self._relay_message: QueueMessage | None = None
        # the message being processed, whatever its properties
        self._input_message: QueueMessage | None = None
        self._sources: dict[str, ThreadDataSource] = {}
        #: The queue this thread last got from: where a message it dead-letters came from.
        self.input_queue = ""
        #: The input queue the queue manager does not know, while this thread waits for it.
        self.missing_queue = ""
        #: Why this thread's transport connection cannot be opened, while it retries ("" once it is).
        self.connect_error = ""
        #: The batch this thread got with its last commit, under its own unit of work: never
        #: another thread's to process, and gone with the connection it was got on.
        self.prefetched: list[QueueMessage] = []
        #: Why the message being processed failed (node, exception), for its backout.
        self.failure_notes: dict[str, str] = {}
        #: The broker's own queues this thread has made sure exist (see :meth:`put_record`).
        self._system_queues: set[str] = set()
        #: What nodes remember until the unit of work ends (committed or backed out), and the
        #: work they hand to its commit: run first, inside the unit of work.
        self.unit_state: dict[str, Any] = {}
        self._before_commit: list[Callable[[], None]] = []
        #: Work to run once the arrivals taken together are processed (see :meth:`after_batch`).
        self._after_batch: dict[object, Callable[[], None]] = {}
        #: What this thread last gave :func:`trace_nodes` (its user trace's writer, or None).
        self._trace_writer: Callable[[str], None] | None = None
        #: The straight run of this thread's input, while it serves a flow that is one, and the
        #: same for the batch being processed when it may run straight.
        self.straight: StraightRun | None = None
        self._straight_now: StraightRun | None = None

    # -- the thread ----------------------------------------------------------------------------

    def run(self) -> None:
        bind_thread(self)
        backoff = Backoff()
        try:
            while not self.stop.is_set():
                try:
                    # an input node that gets no queue messages (HTTPInput) connects on first use:
                    # a flow that only answers HTTP runs while its transport is unreachable
                    if self.client is None and getattr(self.node, "needs_queue_manager", True):
                        self.client = self._connect()
                    self._serve()
                    backoff.reset()
                except FlowAborted as aborted:
                    # the step debugger's abort: the message's unit of work is rolled back, and the
                    # batch got with it (its other messages return to the queue with it)
                    self.log(f"{self.name}: {aborted}; backing out the unit of work")
                    self.backout()
                    self.prefetched = []
                except Exception as exc:
                    if self.stop.is_set():
                        break
                    # a lost transport connection backs out its unit of work on the server;
                    # reconnect with back-off and carry on
                    self.deployed.record_error(f"{self.name}: {type(exc).__name__}: {exc}")
                    if getattr(exc, "reason_code", None) == RC_UNKNOWN_OBJECT_NAME and self.input_queue:
                        self.missing_queue = self.input_queue
                    delay = backoff.next()
                    log.warning("flow thread %s: %s; reconnecting in %.1fs", self.name, exc, delay)
                    self._drop_connections()
                    self.stop.wait(delay)
        finally:
            self._drop_connections()
            bind_thread(None)

    def _serve(self) -> None:
        """Run the input node's arrivals until the flow stops (or the connection fails)."""
        queue_input = self.node.queue_input()
        if queue_input is not None:
            self._serve_queue(queue_input)
            return
        source = self.node.open_input(self)
        try:
            self._serve_source(source)
        finally:
            source.close()

    # -- the loop of an input fed by a queue of the transport ----------------------------------

    def _serve_queue(self, spec: QueueInput) -> None:
        """Until stop, get waiting messages from the input queue and process them.

        The loop's own state (the threshold, how many messages are still retried one at a time)
        lives in this call; the batch got with the last commit and the unit of work on the thread.
        """
        queue_threshold, backout_queue = self.backout_policy(spec.queue)
        # never 0 (infinite): the node's, else the queue's, else the execution group's default
        threshold = spec.backout_threshold or queue_threshold or backouts.default_threshold()
        backout_queue = spec.backout_queue or backout_queue
        self.straight = StraightRun.of(self.node, straight_domain(spec.template))
        cautious = 0
        # messages already got are processed even when a stop arrives, never backed out by it
        while not self.stop.is_set() or self.prefetched:
            # after a failed batch its messages come back one at a time, so only the bad one is retried
            limit = 1 if cautious > 0 else spec.read_ahead
            try:
                got = self._process_batch(
                    spec, threshold, backout_queue, limit, cautious > 0, queue_threshold
                )
            finally:
                if self._straight_now is not None:
                    self._straight_now.flush()
                if self._after_batch:
                    self._end_batch()
            if got < 0:
                cautious = -got
            elif cautious:
                cautious -= got

    def _process_batch(
        self,
        spec: QueueInput,
        threshold: int,
        backout_queue: str,
        limit: int,
        retrying: bool,
        queue_threshold: int,
    ) -> int:
        """Get up to ``limit`` messages and process them; how many (negative: the batch was backed out)."""
        # gets are always under syncpoint so a crash before the commit loses nothing; the batch
        # got with the last commit is this thread's own
        mode = spec.transaction_mode
        if mode == "no" and not self.prefetched:
            messages = self.get_outside_unit(spec.queue, limit, spec.wait_ms)
        else:
            messages = self.next_messages(spec.queue, limit, spec.wait_ms)
        if not messages:
            return 0
        straight = self.straight
        self._straight_now = straight if straight is not None and straight.ready(self) else None
        transactional = mode == "yes" or (mode == "automatic" and any(map(_persistent, messages)))
        # non-persistent messages in automatic mode share one unit of work for their queue work (one
        # commit instead of a round trip per put); if one of them fails, the batch is backed out and
        # its messages come back one at a time, each with the non-transactional handling of §2.0
        shared = not transactional and mode == "automatic" and not retrying
        if not transactional and not shared:
            # seed 004 §2.0: outside a unit of work the get is final before the flow runs
            self.commit()
            for message in messages:
                self._run_queued(spec, message, False, threshold, backout_queue)
                # the invocation is over: its coordinated database work (and any put an output
                # node made under syncpoint of its own accord) commits now, not at the next get
                self.commit()
            return len(messages)
        # puts are pipelined to the commit unless a lone transactional message is being retried,
        # so that a refused put is seen by the node that made it
        pipeline = len(messages) > 1 or shared
        for attempted, message in enumerate(messages, 1):
            if not self._run_queued(spec, message, True, threshold, backout_queue, pipeline):
                # back out: the messages return to the queue with their backout counts raised, and
                # are retried (after a growing delay) until the threshold sends one to the failure
                # terminal, the backout queue or the dead-letter queue
                self.back_out_failed(message, attempted, queue_threshold if len(messages) == 1 else 0)
                return -len(messages)
        try:
            if retrying or self.stop.is_set():
                self.commit()
            else:
                # the next batch comes back with the commit's reply: one round trip per batch
                self.commit_and_prefetch(spec.queue, spec.read_ahead, spec.wait_ms)
        except Exception as exc:
            if not pipeline:
                raise
            # a pipelined put was refused: retry the messages one at a time
            self.log(f"{self.node.name}: the commit failed, retrying its messages one at a time: {exc}")
            self.back_out_failed(None, len(messages), 0)
            return -len(messages)
        return len(messages)

    def _run_queued(
        self,
        spec: QueueInput,
        message: QueueMessage,
        transactional: bool,
        threshold: int,
        backout_queue: str,
        pipeline: bool = False,
    ) -> bool:
        """Process one message; False when the unit of work must be backed out."""
        straight = self._straight_now
        if (
            straight is not None
            and (not transactional or not threshold or _backout_count(message) < threshold)
            and straight.queued(self, message, transactional, pipeline)
        ):
            return True
        node = self.node
        self.begin(transactional, pipeline)
        stats = node.stats
        stats.messages_in += 1
        started = time.perf_counter_ns()
        cpu = stats.cpu_clock()
        try:
            backout_count = _backout_count(message)
            if transactional and threshold and backout_count >= threshold:
                return self._give_up(spec, message, backout_queue, backout_count, threshold)
            try:
                assembly = self.build_assembly(message, spec.template)
                try:
                    node.propagate("out", assembly)
                except Unwinding as unwound:
                    stats.errors += 1
                    caught = assembly.replace(exception_list=unwound.exception_list)
                    if not node.propagate("catch", caught):
                        raise
            except Unwinding as failed:
                return self._queued_failed(spec, message, transactional, failed.exception_list, failed.node)
            except Exception as exc:  # the assembly could not be built
                stats.errors += 1
                errors = exception_list_with(exception_entry(node, exc))
                return self._queued_failed(spec, message, transactional, errors)
            return True
        finally:
            stats.add_time(started, cpu)

    def _queued_failed(
        self,
        spec: QueueInput,
        message: QueueMessage,
        transactional: bool,
        errors: Element,
        origin: Node | None = None,
    ) -> bool:
        node = self.node
        reason = describe_exception_list(errors)
        if transactional:
            # logged once however often the retries repeat it, remembered for the backout queue
            self.failed(message, (origin or node).name, reason)
            (origin or node).stats.backouts += 1
            return False
        # the failed invocation's coordinated database work and syncpoint puts are undone; the
        # get itself was final before the flow ran
        self.backout()
        if node.is_connected("failure"):
            try:
                node.propagate(
                    "failure",
                    Assembly(self.build_assembly(message, spec.template).root, exception_list=errors),
                )
                return True
            except Exception as exc:
                reason = f"{reason}; the failure path failed too: {exc}"
        self.log(f"{node.name}: message not processed outside a unit of work: {reason}")
        self.gave_up(message)
        notes = {"node": (origin or node).name, "exception": reason}
        self.dead_letter(message, reason, syncpoint=False, notes=notes)
        return True

    def _give_up(
        self, spec: QueueInput, message: QueueMessage, backout_queue: str, count: int, threshold: int
    ) -> bool:
        """Past the threshold: failure terminal (in the unit of work), else backout queue, else DLQ.

        When the failure path itself keeps failing, the message comes back with a higher count;
        from twice the threshold on it skips the failure terminal, as ACE does, so it cannot loop.
        """
        node = self.node
        reason = f"backout count {count} reached the backout threshold {threshold}"
        if node.is_connected("failure") and count < 2 * threshold:
            try:
                node.propagate("failure", self.build_assembly(message, spec.template))
                return True
            except Exception as exc:
                self.log(f"{node.name}: the failure path failed, backing out: {exc}")
                (exc.node if isinstance(exc, Unwinding) and exc.node else node).stats.backouts += 1
                return False
        # why it failed last (the node where the exception began, the exception list) goes with it
        notes = self.gave_up(message)
        if backout_queue:
            try:
                self.put_raw(backout_queue, message, syncpoint=True, reason=reason, notes=notes)
                self.log(f"{node.name}: message moved to backout queue {backout_queue}: {reason}")
                return True
            except Exception as exc:
                self.log(f"{node.name}: cannot put to backout queue {backout_queue}: {exc}")
        self.dead_letter(message, reason, syncpoint=True, notes=notes)
        self.log(f"{node.name}: message moved to the dead-letter queue: {reason}")
        return True

    # -- the loop of an input with a source of its own -----------------------------------------

    def _serve_source(self, source: InputSource) -> None:
        """Until stop, take the source's next arrivals and run each in a unit of work of its own."""
        # a source outside any unit of work whose flow is a straight line runs it so
        template = (
            None if getattr(source, "transactional", True) else getattr(source, "straight_template", None)
        )
        straight = self.straight = StraightRun.of(self.node, straight_domain(template or {}))
        while not self.stop.is_set():
            arrivals = source.next()
            if not arrivals:
                continue
            complete = True
            try:
                write = straight.writer(self) if straight is not None else None
                if straight is not None and write is not None:
                    complete = straight.run(self, source, arrivals, write)
                else:
                    for arrival in arrivals:
                        # a stop between two arrivals of one turn leaves the rest to the source
                        # (as a failed one does), not run only to be interrupted
                        if self.stop.is_set() or not self._run_arrival(source, arrival):
                            complete = False
                            break
                source.done(arrivals, complete)
            finally:
                if self._after_batch:
                    self._end_batch()

    def _run_arrival(self, source: InputSource, arrival: Any) -> bool:
        """Propagate one arrival and commit; False when its batch must end (see InputSource.unhandled)."""
        node = self.node
        stats = node.stats
        self.begin(source.transactional)
        started = time.perf_counter_ns()
        cpu = stats.cpu_clock()
        assembly: Assembly | None = None
        try:
            try:
                try:
                    made = source.assembly(arrival)
                except Exception:
                    stats.messages_in += 1
                    raise
                if made is None:
                    self.commit()
                    return True
                stats.messages_in += 1
                terminal, assembly = made
                try:
                    node.propagate(terminal, assembly)
                except Unwinding as unwound:
                    stats.errors += 1
                    caught = assembly.replace(exception_list=unwound.exception_list)
                    if not node.propagate("catch", caught):
                        raise
                self.commit()
                return True
            except Unwinding as failed:
                errors = failed.exception_list
            except Exception as exc:  # the assembly could not be built, or the commit failed
                stats.errors += 1
                errors = exception_list_with(exception_entry(node, exc))
            return self._arrival_failed(source, arrival, assembly, errors)
        finally:
            stats.add_time(started, cpu)

    def _arrival_failed(
        self, source: InputSource, arrival: Any, assembly: Assembly | None, errors: Element
    ) -> bool:
        """Back out, then the failure terminal in a unit of work of its own, else the source's say
        (in one of its own too)."""
        node = self.node
        reason = describe_exception_list(errors)
        try:
            self.backout()
        except Exception as exc:  # a lost connection: the queue manager backs the unit of work out
            reason = f"{reason}; the backout failed too: {exc}"
        if node.is_connected("failure"):
            self.begin(source.transactional)
            try:
                failed = source.failure_assembly(arrival, assembly, errors)
                if failed is not None:
                    node.propagate("failure", failed)
                self.commit()
                return True
            except Unwinding as again:
                self.backout()
                errors = again.exception_list
                reason = f"{reason}; the failure path failed too: {describe_exception_list(errors)}"
            except Exception as exc:  # its failure message could not be made, or the commit failed
                self.backout()
                errors = exception_list_with(exception_entry(node, exc))
                reason = f"{reason}; the failure path failed too: {describe_exception_list(errors)}"
        # what the source does then (retry later, answer, give the arrival up) is a unit of its own
        self.begin(source.transactional)
        try:
            go_on = source.unhandled(arrival, errors, reason)
            self.commit()
        except BaseException:
            self.backout()
            raise
        return go_on

    def _connect(self) -> Transport:
        try:
            client = self.deployed.connect()
        except Exception as exc:
            self.connect_error = str(getattr(exc, "reason", "") or exc) or type(exc).__name__
            raise
        self.connect_error = ""
        return client

    def _drop_connections(self) -> None:
        for source in self._sources.values():
            try:
                source.close()
            except Exception:  # closing a broken connection must not stop the thread
                pass
        self._sources.clear()
        if self.client is not None:
            try:
                self.client.close()
            except Exception:
                pass
            self.client = None
        self.uncommitted = False
        self.prefetched = []
        self.failure_notes = {}
        self._system_queues = set()
        self._end_unit()

    # -- FlowServices: queue manager work ------------------------------------------------------

    @property
    def transport(self) -> Transport:
        """This thread's transport connection, opened on first use (:meth:`run` opens it before
        the input node runs, unless the input node gets no queue messages)."""
        if self.client is None:
            self.client = self._connect()
        return self.client

    def get(self, queue: str, wait_ms: int, syncpoint: bool) -> QueueMessage | None:
        self.uncommitted = self.uncommitted or syncpoint
        self.input_queue = queue
        try:
            got = self.transport.get(queue, wait=wait_ms / 1000.0, syncpoint=syncpoint)
        except Exception as exc:
            if getattr(exc, "reason_code", None) == RC_NO_MSG_AVAILABLE:
                self.missing_queue = ""
                return None
            raise
        self.missing_queue = ""
        return got

    def get_batch(self, queue: str, limit: int, wait_ms: int) -> list[QueueMessage]:
        """Up to ``limit`` waiting messages under syncpoint, waiting ``wait_ms`` for the first."""
        self.input_queue = queue
        got: list[QueueMessage] = list(
            self.transport.get_many(queue, limit, wait=wait_ms / 1000.0, syncpoint=True)
        )
        self.missing_queue = ""
        self.uncommitted = self.uncommitted or bool(got)
        return got

    def get_message(
        self,
        queue: str,
        wait_ms: int,
        *,
        syncpoint: bool | None,
        msg_id: bytes | None = None,
        correl_id: bytes | None = None,
    ) -> QueueMessage | None:
        """One message got in the middle of a flow (None when none came within ``wait_ms``); under
        syncpoint (None: as the flow's unit of work) it is part of the message's unit of work."""
        sync = self._syncpoint(syncpoint)
        try:
            got = self.transport.get(
                queue, wait=wait_ms / 1000.0, syncpoint=sync, msg_id=msg_id, correl_id=correl_id
            )
        except Exception as exc:
            if getattr(exc, "reason_code", None) == RC_NO_MSG_AVAILABLE:
                return None
            raise
        if got is not None and sync:
            self.uncommitted = True
        return got

    def get_outside_unit(self, queue: str, limit: int, wait_ms: int) -> list[QueueMessage]:
        """Up to ``limit`` messages got outside a unit of work (transaction mode ``no``), the
        transport reading non-persistent ones ahead where it can (MQ's read-ahead); else as
        :meth:`get_batch`, whose unit of work the caller commits before the flow runs."""
        get_ahead = getattr(self.transport, "get_ahead", None)
        if get_ahead is None:
            return self.get_batch(queue, limit, wait_ms)
        self.input_queue = queue
        got: list[QueueMessage] = list(get_ahead(queue, limit, wait=wait_ms / 1000.0))
        self.missing_queue = ""
        return got

    def next_messages(self, queue: str, limit: int, wait_ms: int) -> list[QueueMessage]:
        """The batch got with the last commit, else up to ``limit`` waiting messages (see :meth:`get_batch`)."""
        got = self.prefetched
        if got:
            self.prefetched = []
            return got
        return self.get_batch(queue, limit, wait_ms)

    def _syncpoint(self, syncpoint: bool | None) -> bool:
        return self.transactional if syncpoint is None else syncpoint

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
    ) -> bytes:
        """Put ``root`` as a message; the MsgId it was put with."""
        relayed = self._relay_put(queue, root, syncpoint, persistence, new_msg_id, new_correl_id, correl_id)
        if relayed is not None:
            if isinstance(relayed, bytes):
                return relayed
            md, properties, body = relayed
        else:
            md, properties, body = self.message_parts(root)
        if new_msg_id or not md.msg_id or md.msg_id == _ZERO_ID:
            md.msg_id = _IDS.next()
        if new_correl_id:
            md.correl_id = b"\x00" * 24
        if correl_id is not None:
            md.correl_id = correl_id
        if persistence == "persistent":
            md.persistence = 1
        elif persistence == "nonPersistent":
            md.persistence = 0
        md.backout_count = 0
        sync = self._syncpoint(syncpoint)
        self.uncommitted = self.uncommitted or sync
        if sync and self.batching:
            # inside a batch the put's refusal surfaces at the commit, which backs the batch out
            # and retries its messages one at a time, where puts are checked node by node again
            self.transport.put(queue, body, md, syncpoint=True, properties=properties, pipeline=True)
        else:
            self.transport.put(queue, body, md, syncpoint=sync, properties=properties)
        return bytes(md.msg_id)

    def _untouched(self, root: Element) -> tuple[Any, Any] | None:
        """(message, relay) when ``root`` is still exactly the message this thread is processing
        (:func:`relay_of`), so that it can go out as that message's own parts; else None."""
        message = self._relay_message
        if message is None:
            return None
        relay = assemblies.relay_of(root)
        if relay is None or relay.message is not message:
            return None
        return message, relay

    def _relay_put(
        self,
        queue: str,
        root: Element,
        syncpoint: bool | None,
        persistence: str,
        new_msg_id: bool,
        new_correl_id: bool,
        correl_id: bytes | None,
    ) -> bytes | tuple[Any, dict[str, Any], bytes] | None:
        """Put an untouched Root of the message this thread is processing as that message's own
        bytes, with the MsgId, CorrelId, persistence and backout count a put gives it; None when
        the Root does not allow it (then :meth:`put` writes the Root out).

        A transport that cannot put a message as its bytes but puts a message it got again from
        its descriptor (RabbitMQ's ``put_relayed``) is told only what the put changes
        (:meth:`_relay_fields`); any other gets back the descriptor, properties and body
        :meth:`message_parts` would give, taken from the message instead of the tree, for
        :meth:`put` to put as it puts any other."""
        untouched = self._untouched(root)
        if untouched is None:
            return self._rewritten_put(
                queue, root, syncpoint, persistence, new_msg_id, new_correl_id, correl_id
            )
        message, relay = untouched
        put_encoded = getattr(self.transport, "put_encoded", None)
        if put_encoded is None or not getattr(message, "raw", None):
            put_relayed = getattr(self.transport, "put_relayed", None)
            # a message that came from no queue (MQTT, a file, a timer) is not one the transport
            # can put again as it got it: its parts are put as any others
            if put_relayed is None or isinstance(message, ArrivedMessage):
                return self._relay_parts(root, message, relay)
            return self._relay_fields(
                put_relayed,
                queue,
                root,
                message,
                relay,
                syncpoint,
                persistence,
                new_msg_id,
                correl_id,
                new_correl_id,
            )
        properties = None
        if relay.header is not None:
            overlaid = self._relay_properties(root, relay)
            if overlaid != self.input_properties:
                properties = overlaid
        return self._put_encoded(
            put_encoded,
            queue,
            message,
            syncpoint,
            persistence,
            new_msg_id,
            new_correl_id,
            correl_id,
            format=relay.format,
            properties=properties,
        )

    def _rewritten_put(
        self,
        queue: str,
        root: Element,
        syncpoint: bool | None,
        persistence: str,
        new_msg_id: bool,
        new_correl_id: bool,
        correl_id: bytes | None,
    ) -> bytes | None:
        """Put a Root whose Properties and MQMD are still those of the message this thread is
        processing, and only its body read or changed (:func:`rewritten`), as that message's bytes
        with the body written anew and the input properties: what :meth:`put` of the Root written
        out (:meth:`message_parts`) carries, without making its descriptor. None when the Root or
        the transport does not allow it."""
        message = self._input_message
        if message is None or not getattr(message, "raw", None):
            return None
        put_encoded = getattr(self.transport, "put_encoded", None)
        if put_encoded is None:
            return None
        rewritten = assemblies.rewritten(root)
        if rewritten is None:
            return None
        relay, out_format, body = rewritten
        if relay.message is not message:
            return None
        return self._put_encoded(
            put_encoded,
            queue,
            message,
            syncpoint,
            persistence,
            new_msg_id,
            new_correl_id,
            correl_id,
            format=out_format,
            properties=self.input_properties,
            body=body,
        )

    def put_straight(
        self,
        queue: str,
        message: Any,
        body: bytes,
        syncpoint: bool | None,
        persistence: str,
        new_msg_id: bool,
        new_correl_id: bool,
    ) -> bool:
        """Put ``message``, got from the input queue, with ``body`` (UTF-8 text) in place of its
        own, as :meth:`put` puts a Root that copied it and changed only its body
        (:meth:`_rewritten_put`); False when that is not how such a Root would be put (a message
        with an MQRFH2, a body in another CCSID, a transport without encoded puts): nothing is put."""
        put_encoded = getattr(self.transport, "put_encoded", None)
        if put_encoded is None or not getattr(message, "raw", None):
            return False
        md = message.md
        fmt = getattr(md, "format", "")
        if type(fmt) is not str or _RFH2 in fmt or getattr(md, "coded_char_set_id", 0) != 1208:
            return False
        self._put_encoded(
            put_encoded,
            queue,
            message,
            syncpoint,
            persistence,
            new_msg_id,
            new_correl_id,
            None,
            format=mqmd.FORMAT_STRING,
            properties=_own_properties(getattr(message, "properties", None) or {}),
            body=body,
        )
        return True

    def _put_encoded(
        self,
        put_encoded: Any,
        queue: str,
        message: Any,
        syncpoint: bool | None,
        persistence: str,
        new_msg_id: bool,
        new_correl_id: bool,
        correl_id: bytes | None,
        *,
        format: str | None,
        properties: dict[str, Any] | None,
        body: bytes | None = None,
    ) -> bytes:
        """Put ``message``'s own encoded bytes (its ``raw``) again (``body`` in place of its own, when given),
        with the MsgId, CorrelId, persistence, Format and properties this put gives it."""
        md = message.md
        msg_id = md.msg_id
        if new_msg_id or not msg_id or msg_id == _ZERO_ID:
            msg_id = _IDS.next()
        else:
            msg_id = pad_id(msg_id)
        if correl_id is None and new_correl_id:
            correl_id = _ZERO_ID
        encoded = relay_encoding(
            message.raw,
            md,
            msg_id,
            correl_id=correl_id,
            persistence=_PERSISTENCE.get(persistence),
            format=format,
            properties=properties,
            body=body,
        )
        sync = self._syncpoint(syncpoint)
        self.uncommitted = self.uncommitted or sync
        put_encoded(queue, encoded, syncpoint=sync, pipeline=sync and self.batching)
        return msg_id

    def _relay_fields(
        self,
        put_relayed: Any,
        queue: str,
        root: Element,
        message: QueueMessage,
        relay: Any,
        syncpoint: bool | None,
        persistence: str,
        new_msg_id: bool,
        correl_id: bytes | None,
        new_correl_id: bool,
    ) -> bytes:
        """Put an untouched Root through a transport that puts a message it got again from its
        descriptor (RabbitMQ: ``put_relayed``), naming only the fields :meth:`put` changes: the
        MsgId, CorrelId, persistence, the format writing out gives and the properties."""
        msg_id = message.md.msg_id
        if new_msg_id or not msg_id or msg_id == _ZERO_ID:
            msg_id = _IDS.next()
        if new_correl_id and correl_id is None:
            correl_id = _ZERO_ID
        properties = (
            self._relay_properties(root, relay) if relay.header is not None else self.input_properties
        )
        sync = self._syncpoint(syncpoint)
        self.uncommitted = self.uncommitted or sync
        put_relayed(
            queue,
            message,
            msg_id,
            correl_id=correl_id,
            persistence=_PERSISTENCE.get(persistence),
            format=relay.format,
            properties=properties,
            syncpoint=sync,
            pipeline=sync and self.batching,
        )
        return bytes(msg_id)

    def _relay_parts(
        self, root: Element, message: QueueMessage, relay: Any
    ) -> tuple[Any, dict[str, Any], bytes]:
        """(descriptor, properties, body) of an untouched Root, as :meth:`message_parts` writes
        them out, from the message it was built from: the fields of its unread MQMD, the format
        writing out gives, its properties overlaid by the header's ``usr`` fields, its body."""
        fields = mqmd.descriptor_fields(message.md)
        if relay.format is not None:
            fields["format"] = relay.format
        return descriptor(**fields), self._relay_properties(root, relay), message.body

    def _relay_properties(self, root: Element, relay: Any) -> dict[str, Any]:
        """A copy of the input properties overlaid by the simple fields of the MQRFH2 usr folder,
        as writing the Root out makes them; relay_of found the header unread or as parsed, so
        they are those of its parse (worked out once per header layout)."""
        properties = dict(self.input_properties)
        if relay.header is not None:
            header = root.child("MQRFH2")
            usr = rfh2.pristine_usr_fields(header) if header is not None else None
            if usr is None:
                self._usr_overlay(root, properties)
            else:
                properties.update(usr)
        return properties

    @staticmethod
    def _usr_overlay(root: Element, properties: dict[str, Any]) -> dict[str, Any]:
        """``properties`` overlaid by the simple fields of the output's ``MQRFH2.usr`` folder."""
        header = root.child("MQRFH2")
        if header is not None:
            properties.update(rfh2.usr_fields(header))
        return properties

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
    ) -> None:
        """Put a persistent record of the broker's own state (aggregations, timers) on one of its
        system queues, defining the queue the first time it is missing."""
        record = md if md is not None else descriptor(format="MQSTR   ")
        record.correl_id = correl_id
        record.msg_id = _IDS.next()
        record.persistence = 1
        record.backout_count = 0
        if expiry_s > 0:
            record.expiry = min(expiry_s * 10, 2**31 - 1)  # MQ counts tenths of a second
        self.ensure_queue(queue)
        sync = self._syncpoint(syncpoint)
        self.uncommitted = self.uncommitted or sync
        self.transport.put(queue, body, record, syncpoint=sync, properties=dict(properties or {}))

    def ensure_queue(self, queue: str) -> None:
        """Define one of the broker's system queues unless it exists (once per connection)."""
        if queue in self._system_queues:
            return
        transport = self.transport
        try:
            transport.inquire_queue(queue)
        except Exception as exc:
            if getattr(exc, "reason_code", None) != RC_UNKNOWN_OBJECT_NAME:
                raise
            try:
                transport.define_queue(queue)
            except Exception as again:
                if getattr(again, "reason_code", None) != 2100:  # defined meanwhile by another thread
                    raise
        self._system_queues.add(queue)

    def message_parts(self, root: Element) -> tuple[Any, dict[str, Any], bytes]:
        """Descriptor, message properties and body bytes of an output Root.

        The properties are the input message's own, overlaid by the simple fields of the output's
        ``MQRFH2.usr`` folder (ACE's view of message properties), so subscribers' content filters
        on properties see what the flow sends.
        """
        fields, body = assemblies.to_message(root)
        properties = self._usr_overlay(root, dict(self.input_properties))
        return descriptor(**fields), properties, body

    #: The body bytes :meth:`message_parts` gives, for a transport that carries no descriptor (the
    #: converters' function itself: an MQTT or HTTP output calls it once a message).
    message_body = staticmethod(assemblies.to_body)

    def put_raw(
        self,
        queue: str,
        message: QueueMessage,
        *,
        syncpoint: bool,
        reason: str = "",
        notes: dict[str, str] | None = None,
    ) -> None:
        """Put a message as it was got; with ``reason``, noting why, the flow, the queue it came
        from and ``notes`` (``node``, ``exception``) as ``flowbroker.*`` properties."""
        properties = dict(getattr(message, "properties", None) or {})
        if reason:
            properties["flowbroker.reason"] = reason
            for key, value in (notes or {}).items():
                properties[f"flowbroker.{key}"] = value
            properties["flowbroker.flow"] = self.flow_name
            if self.input_queue:
                # so the dead-letter queue's reader can send the message back where it came from
                properties["flowbroker.queue"] = self.input_queue
        self.uncommitted = self.uncommitted or syncpoint
        self.transport.put(queue, message.body, message.md, syncpoint=syncpoint, properties=properties)

    def header_field(self, root: Element, folder: str, name: str) -> Any:
        """The value of ``MQRFH2.<folder>.<name>`` of ``root`` (first of each name; None when
        missing), read off the header's layout while the header is unread, so that reading it
        leaves the message relayable as its bytes."""
        header = root.child("MQRFH2")
        if header is None:
            return None
        value = rfh2.pristine_field(header, folder, name)
        return field_value(header, folder, name) if value is rfh2.NOT_PRISTINE else value

    def publish(
        self, topic: str, root: Element, *, syncpoint: bool | None, need_deliveries: bool = True
    ) -> int:
        """Publish; -1 when the number of deliveries was not waited for (nobody needed it)."""
        principal = getattr(self.transport, "principal", "")
        if principal:
            # judged before anything is sent, so a refusal reaches the node's failure terminal
            # even where the publication would travel with the commit
            try:
                pubsub_rules.current().check(principal, topic, "publish")
            except QMError as exc:
                raise TransportError(exc.reason_code, exc.reason) from None
        # an untouched Root of the message being processed: its parts from the message
        untouched = self._untouched(root)
        md, properties, body = (
            self._relay_parts(root, *untouched) if untouched is not None else self.message_parts(root)
        )
        sync = self._syncpoint(syncpoint)
        self.uncommitted = self.uncommitted or sync
        if not need_deliveries and sync and self.batching:
            return self.transport.publish(
                topic, body, md, syncpoint=True, pipeline=True, properties=properties
            )
        result = self.transport.publish(topic, body, md, syncpoint=sync, properties=properties)
        return int(result) if isinstance(result, int) and not isinstance(result, bool) else 1

    def backout_policy(self, queue: str) -> tuple[int, str]:
        """The queue's own backout threshold (BOTHRESH, 0 when it has none) and backout queue."""
        try:
            return self.transport.backout_policy(queue)
        except Exception as exc:
            log.warning("cannot inquire queue %s: %s", queue, exc)
            return 0, ""

    def default_backout_threshold(self) -> int:
        return backouts.default_threshold()

    def failed(self, message: QueueMessage, node_name: str, exception: str) -> None:
        """A message's processing failed and its unit of work will be backed out: remember why
        for the move past the backout threshold, and log it unless it repeats the last error."""
        self.failure_notes = {"node": node_name, "exception": exception}
        self.deployed.failures_memo.remember(_msg_id(message), self.failure_notes)
        text = f"backing out the unit of work: {exception}"
        self.deployed.repeated_errors.report(f"{self.flow_name}: {node_name}", text)
        trace = self.deployed.trace
        if trace.enabled:
            trace.write(f"{node_name}: {text}")

    def back_out_failed(self, message: QueueMessage | None, attempted: int, queue_threshold: int) -> None:
        """Back out a unit of work that failed after ``attempted`` messages; ``message`` is the one
        that failed (None: the commit was refused), ``queue_threshold`` its queue's own backout
        threshold when it was alone in the unit of work, else 0. Counts the backout apart from
        throughput, then waits before the retry: longer for each consecutive backout of the same
        message, bounded."""
        deployed = self.deployed
        count = int(getattr(message.md, "backout_count", 0) or 0) + 1 if message is not None else 0
        if message is not None and queue_threshold and count >= queue_threshold:
            # the queue manager moves it to the backout queue as it backs it out: counted first,
            # so whoever sees it there also sees it counted
            deployed.failures += 1
            deployed.failures_memo.recall(_msg_id(message))
        deployed.backouts += 1
        deployed.retried += attempted
        # the notes name what failed this message: they go with it alone, never with a batch
        self.backout(self.failure_notes if message is not None and queue_threshold else None)
        self.failure_notes = {}
        if message is None:
            return
        delay = backouts.retry_delay(count)
        if delay:
            self.stop.wait(delay)

    def gave_up(self, message: QueueMessage) -> dict[str, str]:
        """A message past its backout threshold is being moved: the notes of its last failure."""
        self.deployed.failures += 1
        return self.deployed.failures_memo.recall(_msg_id(message))

    def dead_letter(
        self, message: QueueMessage, reason: str, *, syncpoint: bool, notes: dict[str, str] | None = None
    ) -> None:
        self.put_raw(
            self.transport.dead_letter_queue, message, syncpoint=syncpoint, reason=reason, notes=notes
        )

    # -- FlowServices: the unit of work --------------------------------------------------------

    def begin(self, transactional: bool, pipeline: bool = False) -> None:
        self.transactional = transactional
        self.batching = transactional and pipeline
        trace = self.deployed.trace
        writer = trace.write if trace.enabled else None
        if writer != self._trace_writer:  # the thread's setting changes only when the trace level does
            self._trace_writer = writer
            trace_nodes(writer)

    def in_transaction(self) -> bool:
        return self.transactional

    def before_commit(self, work: Callable[[], None]) -> None:
        """Run ``work`` when the unit of work commits, first and inside it (dropped by a backout)."""
        self._before_commit.append(work)

    def after_batch(self, key: object, work: Callable[[], None]) -> None:
        """Run ``work`` once the arrivals taken together are processed, before the thread waits for
        more; once per ``key`` a batch, whatever their units of work did (an output's coalesced write)."""
        self._after_batch[key] = work

    def _end_batch(self) -> None:
        """Run the batch's :meth:`after_batch` work, in the order first asked; a failure is logged."""
        work, self._after_batch = self._after_batch, {}
        for run in work.values():
            try:
                run()
            except Exception as exc:
                self.log(f"{self.name}: the work at the end of a batch failed: {type(exc).__name__}: {exc}")

    def _run_before_commit(self) -> None:
        while self._before_commit:
            self._before_commit.pop(0)()

    def _end_unit(self) -> None:
        if self.unit_state:  # most units of work leave nothing: no allocation per commit then
            self.unit_state = {}
        if self._before_commit:
            self._before_commit = []

    def commit(self) -> None:
        """End the unit of work: data sources first, then the queue manager (see the module docstring)."""
        if self._straight_now is not None:
            self._straight_now.flush()  # the nodes' counts are there once their messages are
        if self._before_commit:
            self._run_before_commit()
        if self._sources:
            for source in self._sources.values():
                source.commit()
        if self.uncommitted and self.client is not None:
            self.client.commit()
            self.uncommitted = False
        self._end_unit()

    def commit_and_prefetch(self, queue: str, limit: int, wait_ms: int) -> None:
        """Commit, getting this thread's next batch in the same round trip (see :meth:`next_messages`)."""
        self.prefetched = self.commit_and_get(queue, limit, wait_ms)

    def commit_and_get(self, queue: str, limit: int, wait_ms: int) -> list[QueueMessage]:
        """Commit the unit of work, then get the next batch under syncpoint, in one round trip."""
        if self._straight_now is not None:
            self._straight_now.flush()
        self._run_before_commit()
        for source in self._sources.values():
            source.commit()
        if self.client is None:
            self._end_unit()
            return []
        self.input_queue = queue
        got: list[QueueMessage] = list(self.client.commit_and_get(queue, limit, wait=wait_ms / 1000.0))
        self._end_unit()
        self.uncommitted = bool(got)
        return got

    def backout(self, notes: dict[str, str] | None = None) -> None:
        """Back out the unit of work; ``notes`` (why, node, exception) go with a message the queue
        manager moves past its queue's backout threshold."""
        self._end_unit()
        for source in self._sources.values():
            source.rollback()
        if self.client is not None and self.uncommitted:
            if notes:
                self.client.backout(notes={f"flowbroker.{k}": v for k, v in notes.items()})
            else:
                self.client.backout()
            self.uncommitted = False

    # -- FlowServices: assembly, databases, labels, trace --------------------------------------

    def build_assembly(self, message: QueueMessage, template: dict[str, str]) -> Assembly:
        given = getattr(message, "properties", None) or {}
        self.input_properties = _own_properties(given)
        # an untouched Root of this message may be put as the message itself when it carries
        # exactly the properties the written-out Root would
        self._relay_message = message if len(self.input_properties) == len(given) else None
        self._input_message = message
        return Assembly(assemblies.build_root(message, template, transactional=self.transactional))

    def reset_body(self, root: Element, template: dict[str, str]) -> None:
        assemblies.reset_body(root, template)

    def data_source(self, name: str) -> Any:
        source = self._sources.get(name)
        if source is None:
            source = self._sources[name] = ThreadDataSource(self.deployed.data_sources, name)
        return source

    def database_done(self, name: str, node_commits: bool) -> None:
        if node_commits or not self.deployed.compiled.coordinated_transaction:
            source = self._sources.get(name)
            if source is not None:
                source.commit()

    def label(self, name: str) -> Node | None:
        return self.deployed.compiled.labels.get(name)

    def externals(self, node: Node) -> dict[str, object]:
        return self.deployed.compiled.externals.get(node.id, {})

    def esql_limits(self) -> tuple[int, int]:
        compiled = self.deployed.compiled
        return compiled.esql_cpu_limit_ms, compiled.esql_memory_limit_bytes

    def file_roots(self) -> tuple[str, ...]:
        return self.deployed.compiled.file_roots

    def xslt_limits(self) -> tuple[int, int, int, int]:
        return self.deployed.compiled.xslt_limits

    def broker_attributes(self) -> dict[str, object]:
        return self.deployed.broker

    def user_trace(self, text: str) -> None:
        self.deployed.trace.write(text)

    def http_listener(self) -> HTTPListener:
        """The execution group's HTTP listener (HTTPInput and HTTPReply nodes)."""
        listener = self.deployed.http
        if listener is None:
            raise RuntimeError("this execution group has no HTTP listener")
        return listener

    def log(self, text: str) -> None:
        log.info("%s: %s", self.flow_name, text)
        trace = self.deployed.trace
        if trace.enabled:
            trace.write(text)


class DeployedFlow:
    """A compiled flow and its threads: 1 + additionalInstances per input node."""

    def __init__(
        self,
        compiled: CompiledFlow,
        connect: Connector,
        data_sources: DataSources,
        trace: UserTrace,
        broker: dict[str, object] | None = None,
        http: HTTPListener | None = None,
    ) -> None:
        # nodes that build a body themselves (HTTP) find the format converters' domains registered
        assemblies.ensure_domains()
        self.compiled = compiled
        self.http = http
        self.name = compiled.name
        #: What ESQL's broker attributes say in this flow: its group's, then its own.
        self.broker: dict[str, object] = {
            **(broker or {}),
            "MessageFlowLabel": compiled.name,
            "CommitCount": int((compiled.document.get("properties") or {}).get("commitCount") or 1),
            "CoordinatedTransaction": compiled.coordinated_transaction,
            "AdditionalInstances": compiled.additional_instances,
        }
        self.connect = connect
        self.data_sources = data_sources
        self.trace = trace
        self.stop_event = threading.Event()
        #: Set when a stopping flow's grace is over: ESQL stops at its next statement.
        self.interrupt_event = threading.Event()
        self.threads: list[FlowThread] = []
        #: The HTTP listener's routes this flow holds open while it runs.
        self.routes: list[Any] = []
        self.state = "stopped"
        self.errors: list[str] = []
        self.started_at = 0.0
        #: Units of work backed out, the messages they had processed (retried, not throughput),
        #: and messages given up past their backout threshold (or not processed outside one).
        self.backouts = 0
        self.retried = 0
        self.failures = 0
        self.failures_memo = backouts.FailureMemo()
        self.repeated_errors = backouts.RepeatedErrors(log)
        #: The step debugger, once breakpoints were set (development groups only).
        self.debugger: FlowDebugger | None = None
        #: The flow exerciser's recording running now; None (the usual case) taps nothing.
        self.recording: Recording | None = None
        #: Whether the nodes were told to release what they hold (see :meth:`release`).
        self.released = False
        self._release_lock = threading.Lock()

    def set_breakpoints(
        self, breakpoints: Breakpoints, listener: PauseListener | None = None
    ) -> FlowDebugger:
        """Set the flow's breakpoints (none: the flow runs without any probe); threads paused at a
        breakpoint that is gone go on."""
        if self.debugger is None:
            self.debugger = FlowDebugger(self.name, self.compiled.nodes, self.stop_event, listener)
        elif listener is not None:
            self.debugger.listener = listener
        self.debugger.set_breakpoints(breakpoints)
        if not breakpoints:
            self.debugger.release_all()
        return self.debugger

    def start_recording(self, directory: Path, spec: RecordingSpec) -> Recording:
        """Record what crosses each connection (a recording already running is ended first)."""
        self.stop_recording("a new recording was started")
        recording = Recording(self.name, self.compiled.nodes, directory, spec, on_stop=self._wires_restored)
        recording.start()
        self.recording = recording
        return recording

    def _wires_restored(self) -> None:
        if self.debugger is not None:
            self.debugger.reinstall()

    def stop_recording(self, reason: str, recording_id: str | None = None) -> bool:
        """End the running recording (only if it is ``recording_id``, when given)."""
        recording = self.recording
        if recording is None or (recording_id is not None and recording.spec.id != recording_id):
            return False
        recording.stop(reason)
        self.recording = None
        return True

    def record_error(self, text: str) -> None:
        self.errors = [*self.errors[-19:], text]

    def start(self) -> None:
        if self.state == "running":
            return
        self.stop_event = threading.Event()
        self.interrupt_event = threading.Event()
        if self.debugger is not None:
            self.debugger.stop = self.stop_event
        self.threads = []
        for node in self.compiled.input_nodes():
            count = 1 + self.compiled.additional_instances
            if node.properties.get("orderMode") == "byQueueOrder":
                count = 1
            for index in range(count):
                self.threads.append(FlowThread(self, node, index))
        # an input node served by the group's HTTP listener has its route open from now until
        # stop, not only once a flow thread runs: a started flow never answers 404
        self.routes = [
            node.open_route(self.http)  # type: ignore[attr-defined]
            for node in self.compiled.input_nodes()
            if self.http is not None and hasattr(node, "open_route")
        ]
        for thread in self.threads:
            thread.start()
        self.state = "running"
        self.started_at = time.time()

    def stop(self, timeout: float = 30.0, *, grace: float | None = None) -> bool:
        """Ask every thread to stop after its current message; True when all have stopped.

        A message in progress has ``grace`` seconds (default :func:`stop_grace`) to finish; then its ESQL is interrupted at
        the next statement (a runaway loop never holds an undeploy), the message fails and is
        backed out like any other failure, and the threads have what is left of ``timeout``.
        """
        self.stop_event.set()
        started = time.monotonic()
        deadline = started + timeout
        until = started + min(stop_grace() if grace is None else grace, timeout)
        for thread in self.threads:
            thread.join(max(0.0, until - time.monotonic()))
        self.interrupt_event.set()
        for thread in self.threads:
            thread.join(max(0.0, deadline - time.monotonic()))
        alive = [t.name for t in self.threads if t.is_alive()]
        if self.http is not None:
            # requests still queued for a stopped flow are answered 503
            for route in self.routes:
                self.http.release(route)
        self.routes = []
        self.state = "stopping" if alive else "stopped"
        self.trace.flush()
        if alive:
            log.warning("flow %s: threads still busy after %.0fs: %s", self.name, timeout, ", ".join(alive))
        return not alive

    def release(self) -> None:
        """Have the nodes release what they hold (connections, pools, child processes), once,
        after every flow thread has stopped: threads still busy past the stop timeout release
        the nodes when the last of them ends. For a flow that will not run again."""
        with self._release_lock:
            if self.released:
                return
            self.released = True
        busy = [t for t in self.threads if t.is_alive()]
        if not busy:
            release_nodes(self.compiled.nodes.values(), self.name)
            return

        def after_busy() -> None:
            for thread in busy:
                thread.join()
            release_nodes(self.compiled.nodes.values(), self.name)

        threading.Thread(target=after_busy, name=f"{self.name}.release", daemon=True).start()

    @staticmethod
    def waiting_message(queue: str) -> str:
        return f"waiting: queue {queue} does not exist"

    @staticmethod
    def unreachable_message(reason: str) -> str:
        return f"waiting: cannot connect to the transport: {reason}"

    def unreachable(self) -> list[tuple[str, str]]:
        """``(input node id, reason)`` for each input whose transport connection cannot be opened (yet)."""
        return sorted(
            {(t.node.id, t.connect_error) for t in self.threads if t.connect_error and t.is_alive()}
        )

    def missing_queues(self) -> list[tuple[str, str]]:
        """``(input node id, queue)`` for each input queue the queue manager does not know (yet)."""
        return sorted(
            {(t.node.id, t.missing_queue) for t in self.threads if t.missing_queue and t.is_alive()}
        )

    def statistics(self) -> dict[str, Any]:
        nodes = {node_id: node.stats.snapshot() for node_id, node in self.compiled.nodes.items()}
        inputs = [nodes[n.id] for n in self.compiled.input_nodes()]
        missing = self.missing_queues() if self.state == "running" else []
        unreachable = self.unreachable() if self.state == "running" else []
        return {
            "flow": self.name,
            "version": self.compiled.version,
            "state": "waiting" if missing or unreachable else self.state,
            "detail": "; ".join(
                [self.waiting_message(queue) for _, queue in missing]
                + sorted({self.unreachable_message(reason) for _, reason in unreachable})
            ),
            "threads": sum(1 for t in self.threads if t.is_alive()),
            # what was processed: the retries of backed-out messages are counted as backouts
            "messages_in": max(0, sum(i["messages_in"] for i in inputs) - self.retried),
            "cpu_us": sum(i["cpu_us"] for i in inputs),
            "elapsed_us": sum(i["elapsed_us"] for i in inputs),
            "errors": sum(n["errors"] for n in nodes.values()),
            "backouts": self.backouts,
            "failures": self.failures,
            "nodes": nodes,
            "last_errors": list(self.errors[-5:]),
            "trace": {"level": self.trace.level, "mode": self.trace.mode},
            "recording": self.recording.spec.id
            if self.recording is not None and self.recording.active
            else None,
        }


class ExecutionGroupRuntime:
    """The flows of one execution group, by name: what the control tasks act on."""

    def __init__(
        self,
        connect: Connector,
        *,
        data_sources: DataSources | None = None,
        trace_dir: Path | None = None,
        recording_dir: Path | None = None,
        resolve_subflow: SubflowResolver | None = None,
        broker: dict[str, object] | None = None,
        http: HTTPListener | None = None,
    ) -> None:
        """``broker``: the broker attributes ESQL reads in every flow of the group (BrokerName,
        ExecutionGroupLabel, QueueManagerName, WorkPath …); ``http``: the group's HTTP listener,
        opened when the first flow with an HTTPInput node is deployed (default: 127.0.0.1, any
        free port)."""
        self.connect = connect
        self.http = http if http is not None else HTTPListener("127.0.0.1", 0)
        self.broker = dict(broker or {})
        self.data_sources = data_sources or DataSources()
        self.trace_dir = trace_dir or Path("trace")
        self.recording_dir = recording_dir or Path("recordings")
        self.resolve_subflow = resolve_subflow
        self.flows: dict[str, DeployedFlow] = {}
        self._lock = threading.RLock()

    def deploy(
        self,
        document: dict[str, Any],
        *,
        externals: dict[str, Any] | None = None,
        additional_instances: int | None = None,
        start: bool = True,
        dependencies: dict[str, Any] | None = None,
        code_nodes: bool = True,
    ) -> DeployedFlow:
        """Compile ``document`` and replace the running version of the flow with it.

        ``code_nodes`` False (an execution group no administrator enabled for them) refuses a
        flow holding code nodes (PythonCompute) with one problem per such node.

        ``dependencies`` are the subflow and message set documents shipped with the deployment
        (see :mod:`flowbroker.runtime.dependencies`); the sets are registered before the flow's
        threads start. A flow that does not compile raises :class:`FlowCompileError` and the
        running version keeps running. The old version's threads finish their current message
        (and its unit of work) before the new version's threads start, so a redeploy loses and
        duplicates nothing.
        """
        compiled = compile_flow(
            document,
            resolve_subflow=subflow_resolver(dependencies, self.resolve_subflow),
            externals=externals,
            additional_instances=additional_instances,
        )
        try:
            if not code_nodes:
                _refuse_code_nodes(compiled)
            install_message_sets(dependencies)
        except BaseException:
            release_nodes(compiled.nodes.values(), compiled.name)
            raise
        with self._lock:
            try:
                self._check_http_routes(compiled)
            except BaseException:
                release_nodes(compiled.nodes.values(), compiled.name)
                raise
            old = self.flows.get(compiled.name)
            trace = old.trace if old is not None else UserTrace(self.trace_dir / f"{compiled.name}.trace")
            if old is not None:
                old.stop_recording("the flow was redeployed")
                old.stop()
                old.release()
            deployed = DeployedFlow(compiled, self.connect, self.data_sources, trace, self.broker, self.http)
            self.flows[compiled.name] = deployed
            if start:
                deployed.start()
            return deployed

    def _check_http_routes(self, compiled: CompiledFlow) -> None:
        """Open the HTTP listener for a flow with HTTPInput nodes, and refuse a route another
        deployed flow already serves (a redeploy of the same flow may keep its routes)."""
        from flowbroker.runtime.compiler import FlowCompileError, Problem

        routes = {
            node.id: route for node in compiled.nodes.values() if (route := getattr(node, "http_route", None))
        }
        if not routes:
            return
        problems: list[Problem] = []
        taken: dict[tuple[str, str], tuple[str, str]] = {}
        for other in self.flows.values():
            if other.name == compiled.name:
                continue
            for node in other.compiled.nodes.values():
                route = getattr(node, "http_route", None)
                if route:
                    taken[route] = (other.name, node.id)
        for node_id, (method, path) in routes.items():
            for (other_method, other_path), (flow, other_node) in taken.items():
                same_path = [p for p in other_path.split("/") if p] == [p for p in path.split("/") if p]
                if same_path and (method == other_method or "ANY" in (method, other_method)):
                    problems.append(
                        Problem(
                            f"{method} {path} is already served by node {other_node} of flow {flow}",
                            node_id,
                            "path",
                        )
                    )
            # later nodes of this flow see this one's route
            taken[(method, path)] = (compiled.name, node_id)
        if not problems:
            try:
                self.http.start()
            except OSError as exc:
                problems.append(Problem(str(exc.strerror or exc), next(iter(routes)), "path"))
        if problems:
            raise FlowCompileError(problems)

    def undeploy(self, name: str) -> bool:
        with self._lock:
            deployed = self.flows.pop(name, None)
        if deployed is None:
            return False
        deployed.stop_recording("the flow was undeployed")
        deployed.stop()
        deployed.release()
        deployed.trace.close()
        return True

    def start_flow(self, name: str) -> None:
        self._get(name).start()

    def stop_flow(self, name: str) -> None:
        self._get(name).stop()

    def _get(self, name: str) -> DeployedFlow:
        deployed = self.flows.get(name)
        if deployed is None:
            raise KeyError(f"no flow named {name!r} is deployed to this execution group")
        return deployed

    def set_trace(self, name: str, level: str, mode: str) -> None:
        """Switch a flow's user trace: level none, normal or debug; mode safe (flushed) or fast (buffered)."""
        self._get(name).trace.configure(level, mode)

    def set_breakpoints(
        self, name: str, breakpoints: Breakpoints, listener: PauseListener | None = None
    ) -> FlowDebugger:
        """Set a flow's step-debugger breakpoints (raises DebugError for one the flow does not have)."""
        return self._get(name).set_breakpoints(breakpoints, listener)

    def start_recording(self, name: str, spec: RecordingSpec) -> None:
        """Start the flow exerciser's recording of a flow: its files go to ``recording_dir/<flow>``."""
        self._get(name).start_recording(self.recording_dir / name, spec)

    def stop_recording(self, name: str, recording_id: str, reason: str) -> bool:
        return self._get(name).stop_recording(reason, recording_id)

    def shutdown(self, timeout: float = 30.0) -> None:
        with self._lock:
            flows = list(self.flows.values())
        for deployed in flows:
            deployed.stop_recording("the execution group stopped")
            deployed.stop_event.set()
        # one grace for every flow's message in progress, not one after another
        grace = time.monotonic() + min(stop_grace(), timeout)
        for deployed in flows:
            for thread in deployed.threads:
                thread.join(max(0.0, grace - time.monotonic()))
        for deployed in flows:
            deployed.stop(timeout, grace=0.0)
            deployed.release()
            deployed.trace.close()
        self.http.stop()
        self.data_sources.dispose()

    def statistics(self) -> dict[str, Any]:
        return {name: flow.statistics() for name, flow in list(self.flows.items())}


def _refuse_code_nodes(compiled: CompiledFlow) -> None:
    """Raise :class:`FlowCompileError` naming each code node of ``compiled``, if it has any."""
    from flowbroker_nodes.python_compute import is_code_node

    from flowbroker.runtime.compiler import FlowCompileError, Problem

    found = [node for node in compiled.nodes.values() if is_code_node(node.SPEC)]
    if found:
        raise FlowCompileError(
            [
                Problem(
                    f"{node.SPEC.type} node {node.name!r}: this execution group does not run code nodes",
                    node.id,
                    "code",
                )
                for node in found
            ]
        )
