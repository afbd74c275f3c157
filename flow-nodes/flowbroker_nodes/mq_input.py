"""MQInput: gets messages from a queue of the queue manager and starts the flow on them."""

from __future__ import annotations

import time

from esql.tree import Element

from flowbroker_nodes.base import (
    Assembly,
    DeployProblem,
    QueueMessage,
    Unwinding,
    describe_exception_list,
    exception_entry,
    exception_list_with,
)
from flowbroker_nodes.base import Node as BaseNode
from flowbroker_nodes.spec import NodeSpec, Property, Terminal

SPEC = NodeSpec(
    type="MQInput",
    label="MQInput",
    category="input",
    role="input",
    extra={
        "readsQueue": {"property": "queueName"},
        "testInput": "queue",
        "namesMessageSet": {"property": "messageSet", "when": {"messageDomain": "MRM"}},
    },
    icon="queue-in",
    description="Gets each message from a queue, builds the message assembly from it and propagates it "
    "through the flow in a unit of work decided by the transaction mode.",
    outputs=(
        Terminal("out", "out", "Out"),
        Terminal("failure", "failure", "Failure"),
        Terminal("catch", "catch", "Catch"),
    ),
    properties=(
        Property(
            "queueName",
            "queue",
            "Queue name",
            required=True,
            editor="queue",
            description="The local queue this node gets messages from.",
        ),
        Property(
            "transactionMode",
            "enum",
            "Transaction mode",
            default="yes",
            enum=("yes", "no", "automatic"),
            description="yes: the flow runs in a unit of work; no: it does not; automatic: only when the "
            "incoming message is persistent.",
        ),
        Property(
            "messageDomain",
            "enum",
            "Message domain",
            default="BLOB",
            enum=("BLOB", "XMLNSC", "XMLNS", "XML", "JSON", "MRM"),
            description="The domain the body is parsed in when the message carries no MQRFH2 <mcd> folder.",
        ),
        Property(
            "messageSet",
            "string",
            "Message set",
            default="",
            description="Message set of the default template (MRM).",
        ),
        Property(
            "messageType",
            "string",
            "Message type",
            default="",
            description="Message type of the default template (MRM).",
        ),
        Property(
            "messageFormat",
            "string",
            "Message format",
            default="",
            description="Physical format of the default template (MRM: CWF, XML).",
        ),
        Property(
            "orderMode",
            "enum",
            "Order mode",
            default="default",
            enum=("default", "byQueueOrder"),
            description="byQueueOrder processes messages one at a time in queue order, whatever the "
            "flow's additional instances.",
        ),
        Property(
            "waitInterval",
            "integer",
            "Wait interval (ms)",
            default=1000,
            minimum=1,
            maximum=60000,
            description="How long one get waits for a message before the thread checks for a stop.",
        ),
        Property(
            "readAhead",
            "integer",
            "Read ahead",
            default=32,
            minimum=1,
            maximum=1000,
            description="At most this many waiting messages are got together and committed in one unit of "
            "work (ACE's commitCount); 1 gives every message its own unit of work. After a failure the "
            "messages of that batch are retried one at a time.",
        ),
        Property(
            "backoutThreshold",
            "integer",
            "Backout threshold",
            default=0,
            minimum=0,
            maximum=999999,
            description="Backout count at which a message goes to the failure terminal, else the backout "
            "queue, else the dead-letter queue; 0 takes the queue's own BOTHRESH, and when the queue has "
            "none the execution group's FLOWBROKER_BACKOUT_THRESHOLD (default 3). Never infinite.",
        ),
        Property(
            "backoutQueue",
            "queue",
            "Backout queue",
            default="",
            editor="queue",
            description="Where a message that reached the threshold goes; empty takes the queue's "
            "BOQNAME, then the dead-letter queue.",
        ),
    ),
)


class Node(BaseNode):
    """Runs the get-propagate-commit loop of one flow thread; see the module docstring of base."""

    SPEC = SPEC

    def prepare(self) -> None:
        props = self.properties
        if not str(props.get("queueName") or "").strip():
            raise DeployProblem("required: the input queue", property="queueName")
        self.queue = str(props["queueName"]).strip()
        self.template = {
            "domain": str(props.get("messageDomain") or "BLOB"),
            "set": str(props.get("messageSet") or ""),
            "type": str(props.get("messageType") or ""),
            "format": str(props.get("messageFormat") or ""),
        }
        self.mode = props.get("transactionMode") or "yes"
        self.wait_ms = int(props.get("waitInterval") or 1000)
        self.read_ahead = max(1, int(props.get("readAhead") or 1))
        if props.get("orderMode") == "byQueueOrder":
            self.read_ahead = 1

    def evaluate(self, assembly: Assembly, terminal: str) -> None:
        # a message injected on this node (tests, the designer's "inject") starts the flow here
        self.propagate("out", assembly)

    def run(self) -> None:
        """The flow thread's loop: until stop, get waiting messages and process them.

        Several flow threads share this node instance: every per-thread value (the batch got with
        the last commit, the unit of work, the connection) lives on the flow thread, and the
        loop's own state in this call's locals.
        """
        flow = self.flow
        queue_threshold, backout_queue = flow.backout_policy(self.queue)
        # never 0 (infinite): the node's, else the queue's, else the execution group's default
        threshold = (
            int(self.properties.get("backoutThreshold") or 0)
            or queue_threshold
            or flow.default_backout_threshold()
        )
        backout_queue = str(self.properties.get("backoutQueue") or "") or backout_queue
        cautious = 0
        # messages already got are processed even when a stop arrives, never backed out by it
        while not flow.stop.is_set() or flow.prefetched:
            # after a failed batch its messages come back one at a time, so only the bad one is retried
            limit = 1 if cautious > 0 else self.read_ahead
            got = self.process(
                threshold, backout_queue, limit, retrying=cautious > 0, queue_threshold=queue_threshold
            )
            if got < 0:
                cautious = -got
            elif cautious:
                cautious -= got

    def process(
        self,
        threshold: int,
        backout_queue: str,
        limit: int = 1,
        retrying: bool = False,
        queue_threshold: int = 0,
    ) -> int:
        """Get up to ``limit`` messages and process them; how many (negative: the batch was backed out)."""
        flow = self.flow
        # gets are always under syncpoint so a crash before the commit loses nothing; the batch
        # got with the last commit is this thread's own
        messages = flow.next_messages(self.queue, limit, self.wait_ms)
        if not messages:
            return 0
        transactional = self.mode == "yes" or (self.mode == "automatic" and any(map(_persistent, messages)))
        # non-persistent messages in automatic mode share one unit of work for their queue work (one
        # commit instead of a round trip per put); if one of them fails, the batch is backed out and
        # its messages come back one at a time, each with the non-transactional handling of §2.0
        shared = not transactional and self.mode == "automatic" and not retrying
        if not transactional and not shared:
            # seed 004 §2.0: outside a unit of work the get is final before the flow runs
            flow.commit()
            for message in messages:
                self._run_one(message, False, threshold, backout_queue)
                # the invocation is over: its coordinated database work (and any put an output
                # node made under syncpoint of its own accord) commits now, not at the next get
                flow.commit()
            return len(messages)
        # puts are pipelined to the commit unless a lone transactional message is being retried,
        # so that a refused put is seen by the node that made it
        pipeline = len(messages) > 1 or shared
        for attempted, message in enumerate(messages, 1):
            if not self._run_one(message, True, threshold, backout_queue, pipeline):
                # back out: the messages return to the queue with their backout counts raised, and
                # are retried (after a growing delay) until the threshold sends one to the failure
                # terminal, the backout queue or the dead-letter queue
                flow.back_out_failed(message, attempted, queue_threshold if len(messages) == 1 else 0)
                return -len(messages)
        try:
            if retrying or flow.stop.is_set():
                flow.commit()
            else:
                # the next batch comes back with the commit's reply: one round trip per batch
                flow.commit_and_prefetch(self.queue, self.read_ahead, self.wait_ms)
        except Exception as exc:
            if not pipeline:
                raise
            # a pipelined put was refused: retry the messages one at a time
            flow.log(f"{self.name}: the commit failed, retrying its messages one at a time: {exc}")
            flow.back_out_failed(None, len(messages), 0)
            return -len(messages)
        return len(messages)

    def _run_one(
        self,
        message: QueueMessage,
        transactional: bool,
        threshold: int,
        backout_queue: str,
        pipeline: bool = False,
    ) -> bool:
        """Process one message; False when the unit of work must be backed out."""
        flow = self.flow
        flow.begin(transactional, pipeline)
        stats = self.stats
        stats.messages_in += 1
        started = time.perf_counter_ns()
        cpu = time.thread_time_ns()
        try:
            backout_count = int(getattr(message.md, "backout_count", 0) or 0)
            if transactional and threshold and backout_count >= threshold:
                return self._give_up(message, backout_queue, backout_count, threshold)
            try:
                assembly = flow.build_assembly(message, self.template)
                try:
                    self.propagate("out", assembly)
                except Unwinding as unwound:
                    stats.errors += 1
                    caught = assembly.replace(exception_list=unwound.exception_list)
                    if not self.propagate("catch", caught):
                        raise
            except Unwinding as failed:
                return self._failed(message, transactional, failed.exception_list, failed.node)
            except Exception as exc:  # the assembly could not be built
                stats.errors += 1
                return self._failed(message, transactional, exception_list_with(exception_entry(self, exc)))
            return True
        finally:
            stats.elapsed_ns += time.perf_counter_ns() - started
            stats.cpu_ns += time.thread_time_ns() - cpu

    def _failed(
        self, message: QueueMessage, transactional: bool, errors: Element, origin: BaseNode | None = None
    ) -> bool:
        flow = self.flow
        reason = describe_exception_list(errors)
        if transactional:
            # logged once however often the retries repeat it, remembered for the backout queue
            flow.failed(message, (origin or self).name, reason)
            (origin or self).stats.backouts += 1
            return False
        # the failed invocation's coordinated database work and syncpoint puts are undone; the
        # get itself was final before the flow ran
        flow.backout()
        if self.is_connected("failure"):
            try:
                self.propagate(
                    "failure",
                    Assembly(flow.build_assembly(message, self.template).root, exception_list=errors),
                )
                return True
            except Exception as exc:
                reason = f"{reason}; the failure path failed too: {exc}"
        flow.log(f"{self.name}: message not processed outside a unit of work: {reason}")
        flow.gave_up(message)
        notes = {"node": (origin or self).name, "exception": reason}
        flow.dead_letter(message, reason, syncpoint=False, notes=notes)
        return True

    def _give_up(self, message: QueueMessage, backout_queue: str, count: int, threshold: int) -> bool:
        """Past the threshold: failure terminal (in the unit of work), else backout queue, else DLQ.

        When the failure path itself keeps failing, the message comes back with a higher count;
        from twice the threshold on it skips the failure terminal, as ACE does, so it cannot loop.
        """
        flow = self.flow
        reason = f"backout count {count} reached the backout threshold {threshold}"
        if self.is_connected("failure") and count < 2 * threshold:
            try:
                self.propagate("failure", flow.build_assembly(message, self.template))
                return True
            except Exception as exc:
                flow.log(f"{self.name}: the failure path failed, backing out: {exc}")
                (exc.node if isinstance(exc, Unwinding) and exc.node else self).stats.backouts += 1
                return False
        # why it failed last (the node where the exception began, the exception list) goes with it
        notes = flow.gave_up(message)
        if backout_queue:
            try:
                flow.put_raw(backout_queue, message, syncpoint=True, reason=reason, notes=notes)
                flow.log(f"{self.name}: message moved to backout queue {backout_queue}: {reason}")
                return True
            except Exception as exc:
                flow.log(f"{self.name}: cannot put to backout queue {backout_queue}: {exc}")
        flow.dead_letter(message, reason, syncpoint=True, notes=notes)
        flow.log(f"{self.name}: message moved to the dead-letter queue: {reason}")
        return True


def _persistent(message: QueueMessage) -> bool:
    return int(getattr(message.md, "persistence", 0) or 0) == 1
