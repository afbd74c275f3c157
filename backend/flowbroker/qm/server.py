"""The queue manager process: queues, units of work and the recovery log behind one event loop (the publish path is in ``flowbroker.pubsub.publishing``).

All state lives on the asyncio loop thread, so no request needs a lock; the log's flusher thread
is the only other thread and hands durable batches back to the loop in one wake-up. Replies
carry the request id of their frame, so clients may pipeline and persistent work may complete
after later non-persistent work on the same connection. ``connection.py`` turns frames into
calls of the verbs here.
"""

from __future__ import annotations

import asyncio
import contextlib
import fnmatch
import json
import logging
import os
import secrets
import shutil
import signal
import struct
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from flowbroker.pubsub.filters import compile_filter
from flowbroker.pubsub.publishing import Publishing
from flowbroker.pubsub.topics import Subscription, TopicSpace, split_topic
from flowbroker.qm import log as qlog
from flowbroker.qm.checkpoint import CheckpointSnapshot, Held
from flowbroker.qm.names import queue_name_problem
from flowbroker.qm.principals import Principals
from flowbroker.qm.protocol import (
    BACKOUT_OFFSET,
    DEFAULT_MAX_FRAME,
    DEFAULT_MAX_HELLO_FRAME,
    MD_SIZE,
    PERSISTENCE_OFFSET,
    PRIORITY_OFFSET,
    PUT_TIME_OFFSET,
    RC_BAD_ARGUMENT,
    RC_FUNCTION_NOT_SUPPORTED,
    RC_GET_INHIBITED,
    RC_MSG_TOO_BIG_FOR_Q,
    RC_NOT_AUTHORIZED,
    RC_OBJECT_ALREADY_EXISTS,
    RC_OBJECT_IN_USE,
    RC_PERSISTENCE_FAILED,
    RC_PUT_INHIBITED,
    RC_Q_FULL,
    RC_Q_NOT_EMPTY,
    RC_STREAM_DUPLICATE_FAILED,
    RC_UNKNOWN_OBJECT_NAME,
    QMError,
    decode_message,
    encode_message,
    optional_id,
    patch_backout,
)
from flowbroker.qm.queues import LocalQueue, QMsg, QueueAttributes, unstage

if TYPE_CHECKING:
    from flowbroker.qm.connection import Connection

logger = logging.getLogger("flowbroker.qm")

DEAD_LETTER_QUEUE = "SYSTEM.DEAD.LETTER.QUEUE"
#: Answers on arrival and keeps nothing: see ``QueueManager._echo``.
ECHO_QUEUE = "SYSTEM.BROKER.ECHO"
SYSTEM_QUEUES = (DEAD_LETTER_QUEUE, ECHO_QUEUE, "SYSTEM.DEFAULT.LOCAL.QUEUE")
TOPIC_PREFIX = "topic:"
_D = struct.Struct("<d")
_NOT_BACKED_OUT = bytes(4)
_LENGTHS = struct.Struct("<II")  # properties and body lengths, the last fields of the descriptor
_U16 = struct.Struct("<H")

Done = Callable[[], None]
Failed = Callable[[QMError], None]


def _valid_queue_name(name: Any) -> str:
    problem = queue_name_problem(name)
    if problem is not None:
        raise QMError(RC_BAD_ARGUMENT, problem)
    return str(name)


class UnitOfWork:
    """Puts and gets of one connection since its last commit or backout.

    ``failed`` holds the first refusal of a put the client sent without waiting for its reply
    (a deferred put): such a unit of work can only be backed out, and its commit says why.
    """

    __slots__ = ("puts", "gets", "failed")

    def __init__(self) -> None:
        self.puts: list[tuple[LocalQueue, QMsg]] = []
        self.gets: list[tuple[LocalQueue, QMsg]] = []
        self.failed: QMError | None = None


class Waiter:
    """A get that waits for a message to arrive (MQGMO_WAIT)."""

    __slots__ = ("conn", "rid", "queue", "msg_id", "correl_id", "syncpoint", "max", "handle", "done")

    def __init__(
        self, conn: Connection, rid: int, queue: LocalQueue, msg_id: bytes | None, correl_id: bytes | None
    ) -> None:
        self.conn = conn
        self.rid = rid
        self.queue = queue
        self.msg_id = msg_id
        self.correl_id = correl_id
        self.syncpoint = False
        self.max = 1
        self.handle: asyncio.TimerHandle | None = None
        self.done = False

    def finish(self) -> None:
        self.done = True
        if self.handle is not None:
            self.handle.cancel()
        self.conn.waiters.discard(self)


@dataclass(frozen=True)
class ConnectionLimits:
    """What one client connection may cost the queue manager (``FLOWBROKER_QM_*`` settings).

    Before its HELLO is answered a connection may send frames of ``max_hello_frame`` bytes and
    ``PRE_AUTH_FRAMES`` of them in all, and must be answered within ``handshake_timeout``
    seconds; past ``max_connections`` over TCP a new one is refused (the Unix socket, open only
    to the queue manager's own OS user, is not capped). Once authenticated, replies
    it leaves unread beyond ``max_buffer`` bytes disconnect it, and no frame it sends may be
    larger than that bound.
    """

    max_connections: int = 1000
    handshake_timeout: float = 10.0
    max_hello_frame: int = DEFAULT_MAX_HELLO_FRAME
    max_buffer: int = 128 * 1024 * 1024

    #: Bytes an unauthenticated connection may send in all, as a number of its largest frames.
    PRE_AUTH_FRAMES = 16

    @property
    def max_pre_auth_bytes(self) -> int:
        return self.max_hello_frame * self.PRE_AUTH_FRAMES


class QueueManager(Publishing):
    """The queue manager's state and verbs; connections call these on the loop thread."""

    def __init__(
        self,
        data_dir: Path,
        *,
        fsync: bool = True,
        checkpoint_bytes: int = 64 * 1024 * 1024,
        max_frame: int = DEFAULT_MAX_FRAME,
        limits: ConnectionLimits | None = None,
    ) -> None:
        #: Connections whose frames are being handled now (nested: authentication resumes), and
        #: the other connections with replies to write when they are done.
        self.handling = 0
        self.pending_flush: list[Any] = []
        self.data_dir = data_dir
        self.log_dir = data_dir / "log"
        self.spill_dir = data_dir / "spill"
        self.queues: dict[str, LocalQueue] = {}
        self.topics = TopicSpace()
        self.principals = Principals()
        self.admin_user = ""
        self.seq = 0
        self.fsync = fsync
        self.checkpoint_bytes = checkpoint_bytes
        self.limits = limits or ConnectionLimits()
        #: The largest frame an authenticated connection may send (its buffer bound caps it).
        self.max_frame = min(max_frame, self.limits.max_buffer)
        self.connections: set[Connection] = set()
        #: Connections over TCP, the ones ``limits.max_connections`` caps.
        self.network_connections = 0
        self.inflight: dict[int, qlog.TxRecord] = {}
        self._inflight_id = 0
        self.checkpointing = False
        self.loop: asyncio.AbstractEventLoop | None = None
        self.log: qlog.LogWriter | None = None
        self.stats = {"puts": 0, "gets": 0, "commits": 0, "publishes": 0}

    # --- start-up and recovery --------------------------------------------------------------
    def open(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        if self.spill_dir.exists():
            shutil.rmtree(self.spill_dir)  # spill files are a cache; recovery rebuilds queues
        self.spill_dir.mkdir(parents=True)
        generation, files = qlog.recover(self.log_dir)
        upgraded = self._replay(files)
        for name in SYSTEM_QUEUES:
            if name not in self.queues:
                self._define(name, {}, log=False)
        if upgraded:
            # Older data directories hold passwords in plain text: a checkpoint written now, with
            # their hashes, replaces every log and checkpoint that held them.
            generation += 1
            snapshot = self._snapshot()
            try:
                qlog.write_checkpoint(self.log_dir, generation, snapshot.records())
            finally:
                snapshot.close()
            qlog.remove_before(self.log_dir, generation)
        self.log = qlog.LogWriter(self.log_dir, generation, fsync=self.fsync, dispatch=self._dispatch)
        for q in self.queues.values():
            self.log.append(qlog.json_record(qlog.REC_QUEUE, {"name": q.name, "attrs": q.attrs.as_dict()}))

    def _dispatch(self, callbacks: list[Callable[[], None]]) -> None:
        assert self.loop is not None
        self.loop.call_soon_threadsafe(_run_callbacks, callbacks)

    def _replay(self, files: list[qlog.RecoveredFile]) -> bool:
        """Rebuild the state the log describes; True when plain-text passwords were upgraded."""
        attrs: dict[str, dict[str, Any]] = {}
        # Per queue, seq → message in the order the messages became visible: the log holds
        # puts in commit order and a checkpoint in queue order, and a dict keeps that order.
        messages: dict[str, dict[int, bytes]] = {}
        subs: dict[str, dict[str, Any]] = {}
        users: dict[str, str] = {}
        max_seq = 0
        for f in files:
            for rtype, payload in f.records:
                if rtype == qlog.REC_TX:
                    tx = qlog.TxRecord.decode(payload)
                    for qname, seq, raw in tx.puts:
                        messages.setdefault(qname, {})[seq] = raw
                        max_seq = max(max_seq, seq)
                    for qname, seq in tx.dels:
                        messages.get(qname, {}).pop(seq, None)
                elif rtype == qlog.REC_QUEUE:
                    obj = orjson.loads(payload)
                    attrs[obj["name"]] = obj["attrs"]
                elif rtype == qlog.REC_QUEUE_DELETE:
                    obj = orjson.loads(payload)
                    attrs.pop(obj["name"], None)
                    messages.pop(obj["name"], None)
                elif rtype == qlog.REC_PURGE:
                    obj = orjson.loads(payload)
                    held = messages.get(obj["name"])
                    if held:
                        keep = set(obj.get("keep") or ())
                        messages[obj["name"]] = {s: r for s, r in held.items() if s in keep}
                elif rtype == qlog.REC_BACKOUT:
                    for qname, seq, count in orjson.loads(payload):
                        held_raw = messages.get(qname, {}).get(seq)
                        if held_raw is not None:
                            messages[qname][seq] = patch_backout(held_raw, count)
                elif rtype == qlog.REC_SUB:
                    obj = orjson.loads(payload)
                    subs[obj["name"]] = obj
                elif rtype == qlog.REC_UNSUB:
                    subs.pop(orjson.loads(payload)["name"], None)
                elif rtype == qlog.REC_RETAIN:
                    (tlen,) = struct.unpack_from("<I", payload, 0)
                    topic = payload[4 : 4 + tlen].decode()
                    self.topics.retain(topic, payload[4 + tlen :] or None)
                elif rtype == qlog.REC_META:
                    obj = orjson.loads(payload)
                    if "users" in obj:
                        users.update(obj["users"])
                    if "acls" in obj:
                        self.topics.acls = obj["acls"]
        for name, a in attrs.items():
            qa = QueueAttributes()
            qa.update(a)
            self.queues[name] = LocalQueue(name, qa, self.spill_dir)
        # The echo queue answers requests as they arrive; one that outlived a restart has no
        # requester waiting any more, so it is dropped rather than left sitting unanswered.
        messages.pop(ECHO_QUEUE, None)
        for qname, msgs in messages.items():
            q = self.queues.get(qname)
            if q is None:
                continue
            for seq, raw in msgs.items():
                q.enqueue(QMsg(seq, raw, QMsg.expiry_of(raw)))
            q.puts = 0
        for obj in subs.values():
            sub = Subscription(
                name=obj["name"],
                topic=obj["topic"],
                queue=obj["queue"],
                correl_id=bytes.fromhex(obj["correl_id"]) if obj.get("correl_id") else None,
                filter_text=obj.get("filter"),
                durable=True,
                principal=obj.get("principal", ""),
            )
            if sub.filter_text:
                try:
                    sub.filter_fn = compile_filter(sub.filter_text)
                except QMError as exc:
                    logger.warning("subscription %s: filter refused on restart: %s", sub.name, exc.reason)
                    continue
            self.topics.add(sub)
        self.seq = max_seq
        return self.principals.load(users)

    def close(self) -> None:
        if self.log is not None:
            self.log.close()
            self.log = None
        for q in self.queues.values():
            q.drop_spill_files()

    # --- the log ----------------------------------------------------------------------------
    def _require_log(self) -> None:
        """Refuse work that must be logged once the log has failed (it never recovers in-process)."""
        assert self.log is not None
        if self.log.failed is not None:
            raise QMError(
                RC_PERSISTENCE_FAILED,
                f"{self.log.failed}: persistent work is refused until the queue manager restarts",
            )

    def _log_meta(self) -> None:
        assert self.log is not None
        self.log.append(
            qlog.json_record(qlog.REC_META, {"users": self.principals.as_dict(), "acls": self.topics.acls})
        )

    @staticmethod
    def _durable(q: LocalQueue, m: QMsg) -> bool:
        """Whether a message in ``q`` must be logged (the echo queue keeps nothing; see ``_echo``)."""
        return m.persistent and q.name != ECHO_QUEUE

    def _log_then(
        self,
        tx: qlog.TxRecord,
        puts: list[tuple[LocalQueue, QMsg]],
        done: list[Done],
        failed: list[Failed],
        gets: list[tuple[LocalQueue, QMsg]] | None = None,
    ) -> None:
        """Append ``tx``; once durable, make ``puts`` visible and run ``done``.

        If the log fails instead, ``puts`` are dropped, ``gets`` go back to their places and
        ``failed`` runs: nothing of the record happened.
        """
        assert self.log is not None
        self._inflight_id += 1
        key = self._inflight_id
        self.inflight[key] = tx

        def durable() -> None:
            self.inflight.pop(key, None)
            for sq, m in puts:
                sq.uncommitted_puts -= 1
                if sq.name in self.queues:
                    self.enqueue(sq, m)
            for cb in done:
                cb()

        def lost(reason: str) -> None:
            self.inflight.pop(key, None)
            for sq, _m in puts:
                sq.uncommitted_puts -= 1
            self._give_back(gets or [])
            exc = QMError(RC_PERSISTENCE_FAILED, f"{reason}: nothing of the request was done")
            for fail in failed:
                fail(exc)

        self.log.append(tx.encode(), durable, lost)

    def _give_back(self, gets: list[tuple[LocalQueue, QMsg]]) -> None:
        """Return taken messages to their places, unchanged (not a backout: the log refused)."""
        touched: set[LocalQueue] = set()
        for q, m in reversed(gets):
            if self.queues.get(q.name) is q:
                q.restore(m)
                q.gets -= 1
                touched.add(q)
        for q in touched:
            if q.waiters:
                self._serve_waiters(q)

    # --- expiry -----------------------------------------------------------------------------
    def sweep_expired(self) -> int:
        """Discard expired messages so depth and the log stop counting them (MQ's EXPRYINT)."""
        now = time.time()
        removed = 0
        dels: list[tuple[str, int]] = []
        for q in self.queues.values():
            expired = q.expire(now)
            removed += len(expired)
            dels.extend((q.name, m.seq) for m in expired if m.persistent)
        if dels:
            assert self.log is not None
            self.log.append(qlog.TxRecord(dels=dels).encode())
        return removed

    # --- checkpoints ------------------------------------------------------------------------
    def maybe_checkpoint(self) -> None:
        log = self.log
        if log is None or self.checkpointing or log.bytes_written < self.checkpoint_bytes:
            return
        self.checkpoint()

    def checkpoint(self) -> None:
        """Snapshot the durable state and start a new log generation after it."""
        assert self.log is not None and self.loop is not None
        if self.log.failed is not None:
            return
        self.checkpointing = True
        snapshot = self._snapshot()
        generation = self.log.generation + 1
        loop = self.loop

        def rotated() -> None:
            loop.call_soon_threadsafe(start_write)

        def start_write() -> None:
            fut = loop.run_in_executor(
                None, qlog.write_checkpoint, self.log_dir, generation, snapshot.records()
            )
            fut.add_done_callback(finished)

        def finished(f: asyncio.Future[Any]) -> None:
            snapshot.close()
            self.checkpointing = False
            if f.exception() is None:
                qlog.remove_before(self.log_dir, generation)
            else:
                logger.error("checkpoint %d failed: %s", generation, f.exception())

        def not_rotated(reason: str) -> None:
            # The log has failed for good: no later checkpoint is attempted either.
            snapshot.close()
            logger.error("checkpoint %d abandoned: %s", generation, reason)

        self.log.rotate(generation, rotated, not_rotated)

    def _snapshot(self) -> CheckpointSnapshot:
        head: list[bytes] = []
        for q in self.queues.values():
            head.append(qlog.json_record(qlog.REC_QUEUE, {"name": q.name, "attrs": q.attrs.as_dict()}))
        head.append(
            qlog.json_record(qlog.REC_META, {"users": self.principals.as_dict(), "acls": self.topics.acls})
        )
        for sub in self.topics.subscriptions.values():
            if sub.durable:
                head.append(qlog.json_record(qlog.REC_SUB, sub.as_dict()))
        for topic, raw in self.topics.retained.items():
            if raw[PERSISTENCE_OFFSET] == 1:
                tb = topic.encode()
                head.append(qlog.encode_record(qlog.REC_RETAIN, struct.pack("<I", len(tb)) + tb + raw))
        held: dict[str, list[Held]] = {}
        for conn in self.connections:
            for q, m in conn.uow.gets:
                if m.persistent:
                    held.setdefault(q.name, []).append((m.priority, m.place, m.seq, m.raw))
        queues = [(q.snapshot(), held.get(q.name, [])) for q in self.queues.values() if q.name != ECHO_QUEUE]
        inflight: list[tuple[str, int, bytes]] = []
        pending_dels: set[tuple[str, int]] = set()
        for itx in self.inflight.values():
            inflight.extend(itx.puts)
            pending_dels.update(itx.dels)
        return CheckpointSnapshot(head, queues, inflight, pending_dels)

    # --- queue administration ---------------------------------------------------------------
    def queue(self, name: Any) -> LocalQueue:
        q = self.queues.get(name) if isinstance(name, str) else None
        if q is None:
            raise QMError(RC_UNKNOWN_OBJECT_NAME, f"unknown queue {name!r}")
        return q

    @staticmethod
    def _attributes(attrs: dict[str, Any]) -> QueueAttributes:
        qa = QueueAttributes()
        qa.update(attrs)
        if qa.stream_queue.startswith(TOPIC_PREFIX):
            try:
                split_topic(qa.stream_queue[len(TOPIC_PREFIX) :], pattern=False)
            except QMError as exc:
                raise QMError(RC_BAD_ARGUMENT, f"attribute stream_queue: {exc.reason}") from None
        return qa

    def _define(
        self, name: str, attrs: dict[str, Any], *, log: bool = True, replace: bool = False
    ) -> LocalQueue:
        _valid_queue_name(name)
        if name in self.queues and not replace:
            raise QMError(RC_OBJECT_ALREADY_EXISTS, f"queue {name!r} already exists")
        qa = self._attributes(attrs)
        if log:
            self._require_log()
        q = self.queues.get(name)
        if q is None:
            q = self.queues[name] = LocalQueue(name, qa, self.spill_dir)
        else:
            q.attrs = qa
        if log and self.log is not None:
            self.log.append(qlog.json_record(qlog.REC_QUEUE, {"name": name, "attrs": qa.as_dict()}))
        return q

    def define(self, name: Any, attrs: dict[str, Any], replace: bool) -> dict[str, Any]:
        return self.inquire(self._define(_valid_queue_name(name), attrs, replace=replace))

    def alter(self, name: Any, attrs: dict[str, Any]) -> dict[str, Any]:
        q = self.queue(name)
        merged = q.attrs.as_dict()
        merged.update(attrs)
        qa = self._attributes(merged)
        self._require_log()
        q.attrs = qa
        assert self.log is not None
        self.log.append(qlog.json_record(qlog.REC_QUEUE, {"name": q.name, "attrs": qa.as_dict()}))
        self._serve_waiters(q)
        return self.inquire(q)

    def delete(self, name: Any, purge: bool) -> None:
        q = self.queue(name)
        if q.name in SYSTEM_QUEUES:
            raise QMError(RC_NOT_AUTHORIZED, f"system queue {q.name} cannot be deleted")
        if q.locked or q.uncommitted_puts:
            raise QMError(RC_OBJECT_IN_USE, f"queue {q.name} has messages in open units of work")
        if q.available and not purge:
            raise QMError(RC_Q_NOT_EMPTY, f"queue {q.name} holds {q.available} messages (use purge)")
        self._require_log()
        q.clear()
        q.drop_spill_files()
        del self.queues[q.name]
        for w in list(q.waiters):
            w.finish()
            w.conn.reply_error(w.rid, QMError(RC_UNKNOWN_OBJECT_NAME, f"queue {q.name} was deleted"))
        q.waiters.clear()
        assert self.log is not None
        self.log.append(qlog.json_record(qlog.REC_QUEUE_DELETE, {"name": q.name}))

    def purge(self, name: Any) -> int:
        """Remove every message of the queue, those got in open units of work included.

        A message some connection has got under syncpoint leaves that unit of work too: if it
        commits, the message was consumed; if it backs out, the message does not come back.
        Otherwise a flow retrying a message it keeps failing on would hold it through every
        purge (it is available only between a backout and the next get).
        """
        q = self.queue(name)
        self._require_log()
        removed = q.clear()
        for conn in self.connections:
            held = [(gq, m) for gq, m in conn.uow.gets if gq is q]
            if held:
                conn.uow.gets = [(gq, m) for gq, m in conn.uow.gets if gq is not q]
                q.locked -= len(held)
                removed += len(held)
        if removed:
            # One small record however deep the queue was. The seqs it keeps are this queue's
            # messages logged and not yet durable (their records come before this one in the
            # log): they become available only after the purge.
            keep = [seq for itx in self.inflight.values() for qname, seq, _raw in itx.puts if qname == q.name]
            assert self.log is not None
            self.log.append(qlog.json_record(qlog.REC_PURGE, {"name": q.name, "keep": keep}))
        return removed

    def open_handles(self) -> dict[str, int]:
        """Queue name → connections that hold the queue open now.

        A connection holds a queue open while it waits in a get on it, keeps a browse cursor on
        it, or has puts or gets on it in its open unit of work; a connection that merely used
        the queue earlier does not. (MQ counts handles between MQOPEN and MQCLOSE; this protocol
        names the queue in every request, so these are the moments a handle would be open.)
        """
        counts: dict[str, int] = {}
        for conn in self.connections:
            names = {w.queue.name for w in conn.waiters if not w.done}
            names.update(qname for qname, _pos in conn.cursors.values())
            names.update(q.name for q, _m in conn.uow.puts)
            names.update(q.name for q, _m in conn.uow.gets)
            for name in names:
                counts[name] = counts.get(name, 0) + 1
        return counts

    def inquire(self, q: LocalQueue, handles: dict[str, int] | None = None) -> dict[str, Any]:
        if handles is None:
            handles = self.open_handles()
        return q.inquire(open_handles=handles.get(q.name, 0))

    def list_queues(self, pattern: str) -> list[dict[str, Any]]:
        handles = self.open_handles()
        return [
            self.inquire(q, handles)
            for name, q in sorted(self.queues.items())
            if fnmatch.fnmatchcase(name, pattern)
        ]

    # --- putting ----------------------------------------------------------------------------
    def next_seq(self) -> int:
        self.seq += 1
        return self.seq

    def prepare(self, q: LocalQueue, raw: bytes, now: float) -> QMsg:
        """Check a put against the queue and resolve the descriptor's 'as queue' defaults."""
        a = q.attrs
        if a.put_inhibited:
            raise QMError(RC_PUT_INHIBITED, f"put inhibited on queue {q.name}")
        props_len, body_len = _LENGTHS.unpack_from(raw, MD_SIZE - 8)
        if props_len + body_len > a.max_msg_length:
            raise QMError(
                RC_MSG_TOO_BIG_FOR_Q,
                f"message of {props_len + body_len} bytes exceeds {q.name} max_msg_length {a.max_msg_length}",
            )
        if q.depth >= a.max_depth:
            raise QMError(RC_Q_FULL, f"queue {q.name} is full ({a.max_depth} messages)")
        pers = raw[PERSISTENCE_OFFSET]
        prio = raw[PRIORITY_OFFSET]
        if pers == 2 or prio == 255 or prio > 9:
            b = bytearray(raw)
            if pers == 2:
                b[PERSISTENCE_OFFSET] = a.default_persistence
            if prio == 255 or prio > 9:
                b[PRIORITY_OFFSET] = a.default_priority
            _D.pack_into(b, PUT_TIME_OFFSET, now)
            raw = bytes(b)
        else:
            raw = raw[:PUT_TIME_OFFSET] + _D.pack(now) + raw[PUT_TIME_OFFSET + 8 :]
        m = QMsg(self.next_seq(), raw)
        m.expire_at = QMsg.expiry_of(raw)
        return m

    def _stream_copies(self, q: LocalQueue, m: QMsg, now: float) -> list[tuple[LocalQueue, QMsg]]:
        """The duplicates a streaming queue sends on, staged (counted toward their queues' depth).

        BESTEF leaves out a copy that cannot be made; MUSTDUP refuses the original instead. A
        copy to a topic is a publication by the queue manager: it reaches every entitled
        subscriber or, when the original is persistent or must be duplicated, none.
        """
        target = q.attrs.stream_queue
        if not target:
            return []
        must = q.attrs.stream_qos == "MUSTDUP"
        if target.startswith(TOPIC_PREFIX):
            topic = target[len(TOPIC_PREFIX) :]
            try:
                return self._stage_publication(topic, m.raw, now, all_or_none=must or m.persistent)
            except QMError as exc:
                if must:
                    raise QMError(
                        RC_STREAM_DUPLICATE_FAILED,
                        f"streaming copy to topic {topic!r} failed, so the put was refused "
                        f"({exc.reason_code} {exc.reason})",
                    ) from None
                logger.debug("streaming publication from %s dropped: %s", q.name, exc.reason)
                return []
        try:
            sq = self.queue(target)
            copy = self.prepare(sq, m.raw, now)
        except QMError as exc:
            if must:
                raise QMError(exc.reason_code, f"streaming copy to {target} failed: {exc.reason}") from None
            return []
        if m.persistent and not copy.persistent:
            # The stream queue defaults to non-persistent, but a copy is as durable as its original.
            raw = bytearray(copy.raw)
            raw[PERSISTENCE_OFFSET] = 1
            copy = QMsg(copy.seq, bytes(raw), copy.expire_at)
        sq.uncommitted_puts += 1
        return [(sq, copy)]

    def put(
        self,
        conn: Connection,
        qname: Any,
        raws: list[bytes],
        syncpoint: bool,
        done: list[Done],
        failed: list[Failed],
    ) -> tuple[list[bytes], bool]:
        """Put messages; returns their msg ids and whether the reply must wait for the log.

        When it must wait, the caller appends its reply to ``done`` and its refusal to
        ``failed`` before the loop runs again.
        """
        q = self.queue(qname)
        now = time.time()
        staged: list[tuple[LocalQueue, QMsg]] = []
        ids: list[bytes] = []
        try:
            for raw in raws:
                m = self.prepare(q, raw, now)
                q.uncommitted_puts += 1  # counts toward depth while the batch is checked
                staged.append((q, m))
                if q.attrs.stream_queue:
                    staged.extend(self._stream_copies(q, m, now))
                ids.append(m.msg_id)
        except BaseException:
            unstage(staged)
            raise
        return ids, not self._deliver(staged, conn.uow if syncpoint else None, done, failed)

    def _deliver(
        self,
        staged: list[tuple[LocalQueue, QMsg]],
        uow: UnitOfWork | None,
        done: list[Done],
        failed: list[Failed],
    ) -> bool:
        """Hand staged messages to the unit of work, the log or their queues; False when waiting."""
        assert self.log is not None
        if uow is not None:
            if self.log.failed is not None and any(self._durable(q, m) for q, m in staged):
                unstage(staged)
                self._require_log()
            uow.puts.extend(staged)
            return True
        durable = [(q.name, m.seq, m.raw) for q, m in staged if m.persistent and q.name != ECHO_QUEUE]
        if durable:
            if self.log.failed is not None:
                unstage(staged)
                self._require_log()
            self._log_then(qlog.TxRecord(puts=durable), staged, done, failed)
            return False
        for q, m in staged:
            q.uncommitted_puts -= 1
            self.enqueue(q, m)
        return True

    def enqueue(self, q: LocalQueue, m: QMsg) -> None:
        if q.name == ECHO_QUEUE:
            self._echo(m)
            return
        q.enqueue(m)
        if q.waiters:
            self._serve_waiters(q)

    def _echo(self, m: QMsg) -> None:
        """The server-side responder of request/reply measurements: reply to replyToQ, correlId = msgId.

        It keeps nothing: requests are answered as they arrive and are neither logged nor
        recovered (a request outliving a restart would find its requester gone), and the
        reply is non-persistent whatever the request was.
        """
        (rq_len,) = _U16.unpack_from(m.raw, MD_SIZE - 14)  # replyToQ length, after the fixed fields
        try:
            reply_to = m.raw[MD_SIZE : MD_SIZE + rq_len].decode()
        except UnicodeDecodeError:
            logger.debug("echo request %s has an undecodable descriptor; dropped", m.msg_id.hex())
            return
        target = self.queues.get(reply_to)
        if target is None or target.name == ECHO_QUEUE:
            return
        raw = bytearray(m.raw)
        raw[24:48] = m.msg_id  # correlId := the request's msgId
        raw[PERSISTENCE_OFFSET] = 0
        try:
            reply = self.prepare(target, bytes(raw), time.time())
        except QMError:
            return
        self.enqueue(target, reply)

    # --- getting ----------------------------------------------------------------------------
    def take(self, q: LocalQueue, msg_id: bytes | None, correl_id: bytes | None) -> QMsg | None:
        expired: list[QMsg] = []
        now = time.time()
        if msg_id is None and correl_id is None:
            m = q.take(now, expired)
        else:
            m = q.take_matching(msg_id, correl_id, now, expired)
        if expired:
            self._log_expired(q, expired)
        return m

    def _log_expired(self, q: LocalQueue, expired: list[QMsg]) -> None:
        """Log the removal of the persistent ones among messages found expired while getting."""
        dels = [(q.name, e.seq) for e in expired if e.persistent]
        if dels:
            assert self.log is not None
            self.log.append(qlog.TxRecord(dels=dels).encode())

    def get(self, conn: Connection, rid: int, args: dict[str, Any]) -> None:
        """Answer a get now, once its removals are durable, or when a message arrives (get-wait)."""
        q = self.queue(args.get("q"))
        if q.attrs.get_inhibited:
            raise QMError(RC_GET_INHIBITED, f"get inhibited on queue {q.name}")
        get = args.get
        msg_id = optional_id(get("msg_id"))
        correl_id = optional_id(get("correl_id"))
        syncpoint = bool(get("sync"))
        limit = get("max", 1)
        if type(limit) is not int:
            limit = int(limit)
        if limit < 1:
            raise QMError(RC_BAD_ARGUMENT, "max must be at least 1")
        wait = float(get("wait", 0) or 0)
        if wait != wait or wait < 0:
            raise QMError(RC_BAD_ARGUMENT, "wait must be a non-negative number of seconds")
        if self._take_batch(conn, rid, q, msg_id, correl_id, syncpoint, limit):
            return
        if wait <= 0:
            conn.reply_messages(rid, [])
            return
        w = Waiter(conn, rid, q, msg_id, correl_id)
        w.syncpoint = syncpoint
        w.max = limit
        assert self.loop is not None
        w.handle = self.loop.call_later(min(wait, 366 * 86400.0), self._wait_expired, q, w)
        q.waiters.append(w)
        conn.waiters.add(w)

    def _take_batch(
        self,
        conn: Connection,
        rid: int,
        q: LocalQueue,
        msg_id: bytes | None,
        correl_id: bytes | None,
        syncpoint: bool,
        limit: int,
    ) -> bool:
        """Take up to ``limit`` messages and reply with them; False (no reply) when none.

        A message that was backed out before comes alone: a batch ends before it, and it is the
        only message of the next. So a message that keeps failing is retried in a unit of work of
        its own, and never raises the backout counts of the messages got with it again.
        """
        if not q.available:
            return False
        taken: list[tuple[LocalQueue, QMsg]] = []
        dels: list[tuple[str, int]] = []
        # one clock reading and one list of expired messages for the whole batch, logged once
        now = time.time()
        expired: list[QMsg] = []
        by_id = msg_id is not None or correl_id is not None
        while len(taken) < limit:
            m = q.take_matching(msg_id, correl_id, now, expired) if by_id else q.take(now, expired)
            if m is None:
                break
            if limit > 1 and m.raw[BACKOUT_OFFSET : BACKOUT_OFFSET + 4] != _NOT_BACKED_OUT:
                if taken:
                    q.restore(m)
                    break
                limit = 1
            q.gets += 1
            taken.append((q, m))
            if not syncpoint and m.persistent:
                dels.append((q.name, m.seq))
        if expired:
            self._log_expired(q, expired)
        if not taken:
            return False
        out = [m.raw for _q, m in taken]
        if dels:
            assert self.log is not None
            if self.log.failed is not None:
                self._give_back(taken)
                self._require_log()
            self.stats["gets"] += len(out)
            # A get outside a unit of work is its own commit: once answered, the message must
            # not come back after a crash, so the answer waits for the removal to be logged.
            self._log_then(
                qlog.TxRecord(dels=dels),
                [],
                [lambda: conn.reply_messages(rid, out)],
                [lambda exc: conn.reply_error(rid, exc)],
                gets=taken,
            )
            return True
        self.stats["gets"] += len(out)
        if syncpoint:
            for tq, m in taken:
                tq.locked += 1
                conn.uow.gets.append((tq, m))
        conn.reply_messages(rid, out)
        return True

    def _wait_expired(self, q: LocalQueue, w: Waiter) -> None:
        if w.done:
            return
        w.finish()
        with contextlib.suppress(ValueError):
            q.waiters.remove(w)
        w.conn.reply_messages(w.rid, [])

    def _serve_waiters(self, q: LocalQueue) -> None:
        if q.attrs.get_inhibited:
            return
        for w in list(q.waiters):
            if not q.available:
                break
            if w.done:
                q.waiters.remove(w)
                continue
            try:
                served = self._take_batch(w.conn, w.rid, q, w.msg_id, w.correl_id, w.syncpoint, w.max)
            except QMError as exc:
                w.conn.reply_error(w.rid, exc)
                served = True
            if served:
                w.finish()
                q.waiters.remove(w)

    def browse(self, conn: Connection, args: dict[str, Any]) -> tuple[list[bytes], int]:
        q = self.queue(args.get("q"))
        if q.attrs.get_inhibited:
            raise QMError(RC_GET_INHIBITED, f"get inhibited on queue {q.name}")
        cursor = int(args.get("cursor") or 0)
        limit = int(args.get("max", 1))
        if limit < 1:
            raise QMError(RC_BAD_ARGUMENT, "max must be at least 1")
        if cursor == 0:
            conn.next_cursor += 1
            cursor = conn.next_cursor
            conn.cursors[cursor] = (q.name, None)
        if cursor not in conn.cursors:
            raise QMError(RC_BAD_ARGUMENT, f"unknown browse cursor {cursor}")
        qname, position = conn.cursors[cursor]
        if qname != q.name:
            raise QMError(RC_BAD_ARGUMENT, f"browse cursor {cursor} belongs to queue {qname}")
        msgs, position = q.browse(position, limit, time.time())
        conn.cursors[cursor] = (q.name, position)
        return [m.raw for m in msgs], cursor

    # --- units of work ----------------------------------------------------------------------
    def commit(self, conn: Connection, on_done: Done, on_failed: Failed) -> bool:
        """Commit the connection's unit of work; False when ``on_done`` will run once durable."""
        uow = conn.uow
        conn.uow = UnitOfWork()
        self.stats["commits"] += 1
        tx = qlog.TxRecord(
            puts=[(q.name, m.seq, m.raw) for q, m in uow.puts if m.persistent and q.name != ECHO_QUEUE],
            dels=[(q.name, m.seq) for q, m in uow.gets if m.persistent],
        )
        for q, _ in uow.gets:
            q.locked -= 1
        if tx.puts or tx.dels:
            assert self.log is not None
            if self.log.failed is not None:
                # Nothing can be made durable: the unit of work ends as if never done.
                unstage(uow.puts)
                self._give_back(uow.gets)
                self._require_log()
            self._log_then(tx, uow.puts, [on_done], [on_failed], gets=uow.gets)
            return False
        for q, m in uow.puts:
            q.uncommitted_puts -= 1
            if q.name in self.queues:
                self.enqueue(q, m)
        return True

    def backout(self, conn: Connection, notes: dict[str, str] | None = None) -> None:
        """Back out; a message that reaches its queue's backout threshold moves to the backout
        queue (else the dead-letter queue) carrying ``notes`` (why, which node, the exception)."""
        uow = conn.uow
        conn.uow = UnitOfWork()
        unstage(uow.puts)
        counts: list[tuple[str, int, int]] = []
        moves = qlog.TxRecord()
        touched: set[str] = set()
        for q, m in reversed(uow.gets):
            q.locked -= 1
            count = struct.unpack_from("<I", m.raw, 90)[0] + 1
            m.raw = patch_backout(m.raw, count)
            threshold = q.attrs.backout_threshold
            if q.name not in self.queues:
                continue
            if threshold and count >= threshold:
                target = self.queues.get(q.attrs.backout_requeue_q) or self.queues[DEAD_LETTER_QUEUE]
                moved = QMsg(
                    self.next_seq(), _noting_origin(m.raw, q.name, count, threshold, notes), m.expire_at
                )
                if moved.persistent:
                    if self._durable(target, moved):
                        moves.puts.append((target.name, moved.seq, moved.raw))
                    moves.dels.append((q.name, m.seq))
                self.enqueue(target, moved)
                continue
            q.restore(m)
            touched.add(q.name)
            if m.persistent:
                counts.append((q.name, m.seq, count))
        assert self.log is not None
        if counts:
            self.log.append(qlog.json_record(qlog.REC_BACKOUT, counts))
        if moves.puts or moves.dels:
            self.log.append(moves.encode())
        for name in touched:
            q = self.queues[name]
            if q.waiters:
                self._serve_waiters(q)

    # --- principals and ACLs ----------------------------------------------------------------
    def admin(self, args: dict[str, Any]) -> dict[str, Any]:
        action = args.get("action")
        if action == "define_user":
            user, password = args.get("user"), args.get("password")
            if not isinstance(user, str) or not user or not isinstance(password, str) or len(password) < 8:
                raise QMError(
                    RC_BAD_ARGUMENT, "define_user needs a user name and a password of 8+ characters"
                )
            self._require_log()
            self.principals.define(user, password)
        elif action == "set_topic_acl":
            topic, principal = args.get("topic"), args.get("principal")
            if not isinstance(topic, str) or not isinstance(principal, str) or not principal:
                raise QMError(RC_BAD_ARGUMENT, "set_topic_acl needs topic and principal")
            pub, sub = args.get("publish"), args.get("subscribe")
            self._require_log()
            self.topics.set_acl(
                topic, principal, pub if pub is None else bool(pub), sub if sub is None else bool(sub)
            )
        elif action == "replace_topic_acls":
            rules = args.get("rules")
            if not isinstance(rules, list):
                raise QMError(RC_BAD_ARGUMENT, "replace_topic_acls needs a list of rules")
            fresh = TopicSpace()
            for i, rule in enumerate(rules):
                if not isinstance(rule, dict):
                    raise QMError(RC_BAD_ARGUMENT, f"rule {i} must be an object")
                topic, principal = rule.get("topic"), rule.get("principal")
                if not isinstance(topic, str) or not isinstance(principal, str) or not principal:
                    raise QMError(RC_BAD_ARGUMENT, f"rule {i} needs topic and principal")
                pub, sub = rule.get("publish"), rule.get("subscribe")
                fresh.set_acl(
                    topic, principal, pub if pub is None else bool(pub), sub if sub is None else bool(sub)
                )
            self._require_log()
            self.topics.acls = fresh.acls
            self._log_meta()
            return {"rules": len(rules)}
        elif action == "list_topic_acls":
            return {"acls": self.topics.acls}
        elif action == "list_subscriptions":
            return {"subscriptions": [s.as_dict() for s in self.topics.subscriptions.values()]}
        elif action == "status":
            assert self.log is not None
            return {
                "queues": len(self.queues),
                "connections": len(self.connections),
                "log_flushes": self.log.flushes,
                "log_fsyncs": self.log.fsyncs,
                "log_records": self.log.records,
                "log_generation": self.log.generation,
                "log_failed": self.log.failed,
                **self.stats,
            }
        elif action == "checkpoint":
            self._require_log()
            if not self.checkpointing:
                self.checkpoint()
            return {"checkpoint": True}
        else:
            raise QMError(RC_FUNCTION_NOT_SUPPORTED, f"unknown admin action {action!r}")
        self._log_meta()
        return {}


def _run_callbacks(callbacks: list[Callable[[], None]]) -> None:
    for cb in callbacks:
        try:
            cb()
        except Exception:  # one waiter's failure must not strand the rest of its batch
            logger.exception("durable callback failed")


def _noting_origin(
    raw: bytes, queue: str, count: int, threshold: int, notes: dict[str, str] | None = None
) -> bytes:
    """A message moved past its backout threshold, carrying the queue it came from and why (and
    the ``notes`` of the backout: the node and exception that failed it), as a flow's dead-letter
    puts do, so an operator can send it back. Rare, so decoding is fine."""
    try:
        msg = decode_message(raw)
    except (ValueError, UnicodeDecodeError):
        return raw  # a body the queue manager cannot decode still moves, just unannotated
    if not isinstance(msg.properties, dict):
        return raw
    msg.properties.setdefault("flowbroker.queue", queue)
    for key, value in (notes or {}).items():
        msg.properties[key] = value
    msg.properties.setdefault(
        "flowbroker.reason", f"backout count {count} reached the backout threshold {threshold} of {queue}"
    )
    return encode_message(msg.md, msg.properties, msg.body)


# --- the process ------------------------------------------------------------------------------
def load_or_create_credentials(
    data_dir: Path, host: str, port: int, password: str | None = None
) -> dict[str, Any]:
    """The application credentials of ``DIR/qm.json`` (created, mode 0600, on first start).

    ``password`` (FLOWBROKER_QM_PASSWORD) replaces the stored or generated one, so clients on
    other hosts, which cannot read ``qm.json``, can be given it in their queue manager URL.
    """
    path = data_dir / "qm.json"
    info: dict[str, Any] = {}
    if path.exists():
        with contextlib.suppress(ValueError, OSError):
            info = json.loads(path.read_text())
    user = info.get("user") or "app"
    password = password or info.get("password") or secrets.token_urlsafe(24)
    info = {
        "host": host,
        "port": port,
        "unix_socket": str((data_dir / "qm.sock").resolve()),
        "user": user,
        "password": password,
    }
    tmp = path.with_suffix(".json.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as fh:
        json.dump(info, fh, indent=2)
    os.chmod(tmp, 0o600)
    os.replace(tmp, path)
    return info


async def serve(
    data_dir: Path,
    host: str = "127.0.0.1",
    port: int = 1414,
    *,
    parent_pid: int | None = None,
    fsync: bool = True,
    checkpoint_bytes: int = 64 * 1024 * 1024,
    expiry_interval: float = 5.0,
    ready: Callable[[], None] | None = None,
    limits: ConnectionLimits | None = None,
    password: str | None = None,
) -> None:
    from flowbroker.qm.connection import Connection

    data_dir.mkdir(parents=True, exist_ok=True)
    loop = asyncio.get_running_loop()
    qm = QueueManager(data_dir, fsync=fsync, checkpoint_bytes=checkpoint_bytes, limits=limits)
    qm.open(loop)
    # a supervisor may stop the queue manager as soon as it answers, so the handlers come
    # first, and the Unix socket exists before the TCP listener tells anyone we are up
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    info = load_or_create_credentials(data_dir, host, port, password)
    qm.admin_user = info["user"]
    if qm.principals.ensure(info["user"], info["password"]):
        qm._log_meta()
    sock_path = Path(info["unix_socket"])
    with contextlib.suppress(FileNotFoundError):
        sock_path.unlink()
    unix = await loop.create_unix_server(lambda: Connection(qm), str(sock_path))
    os.chmod(sock_path, 0o600)
    tcp = await loop.create_server(lambda: Connection(qm), host, port, reuse_address=True, backlog=512)
    if port == 0:
        info["port"] = tcp.sockets[0].getsockname()[1]
        load_or_create_credentials(data_dir, host, info["port"], password)
    if parent_pid:

        async def watch_parent() -> None:
            while not stop.is_set():
                await asyncio.sleep(1.0)
                try:
                    os.kill(parent_pid, 0)
                except ProcessLookupError:
                    stop.set()
                if os.getppid() != parent_pid:
                    stop.set()

        loop.create_task(watch_parent())
    if expiry_interval > 0:

        async def sweep() -> None:
            while not stop.is_set():
                await asyncio.sleep(expiry_interval)
                qm.sweep_expired()

        loop.create_task(sweep())
    logger.info("queue manager listening on %s:%s and %s", host, info["port"], sock_path)
    if ready is not None:
        ready()
    try:
        await stop.wait()
    finally:
        tcp.close()
        unix.close()
        for conn in list(qm.connections):
            if conn.transport is not None:
                conn.transport.close()
        await asyncio.sleep(0)
        qm.close()
        with contextlib.suppress(FileNotFoundError):
            sock_path.unlink()


def run(
    data_dir: Path,
    host: str,
    port: int,
    parent_pid: int | None = None,
    fsync: bool = True,
    checkpoint_bytes: int = 64 * 1024 * 1024,
    expiry_interval: float = 5.0,
    limits: ConnectionLimits | None = None,
    password: str | None = None,
) -> None:
    try:
        import uvloop

        uvloop.install()
    except ImportError:  # pragma: no cover - uvloop is pinned, plain asyncio still works
        pass
    asyncio.run(
        serve(
            data_dir,
            host,
            port,
            parent_pid=parent_pid,
            fsync=fsync,
            checkpoint_bytes=checkpoint_bytes,
            expiry_interval=expiry_interval,
            limits=limits,
            password=password,
        )
    )
