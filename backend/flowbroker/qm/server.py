"""The queue manager process: queues, units of work, the recovery log and pub/sub behind one event loop.

All state lives on the asyncio loop thread, so no request needs a lock; the log's flusher thread
is the only other thread and hands durable batches back to the loop in one wake-up. Replies
carry the request id of their frame, so clients may pipeline and persistent work may complete
after later non-persistent work on the same connection.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import json
import logging
import os
import secrets
import shutil
import signal
import socket
import struct
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

from flowbroker.pubsub.filters import compile_filter
from flowbroker.pubsub.topics import Subscription, TopicSpace
from flowbroker.qm import log as qlog
from flowbroker.qm.protocol import (
    DEFAULT_MAX_FRAME,
    MD_SIZE,
    OP_ADMIN,
    OP_ALTER,
    OP_BACKOUT,
    OP_BROWSE_CLOSE,
    OP_COMMIT,
    OP_DEFINE,
    OP_DELETE,
    OP_GET,
    OP_HELLO,
    OP_INQUIRE,
    OP_LIST,
    OP_PING,
    OP_PUBLISH,
    OP_PURGE,
    OP_PUT,
    OP_REPLY_ERR,
    OP_REPLY_OK,
    OP_SUBSCRIBE,
    OP_UNSUBSCRIBE,
    PERSISTENCE_OFFSET,
    PRIORITY_OFFSET,
    PUT_TIME_OFFSET,
    RC_BACKED_OUT,
    RC_BAD_ARGUMENT,
    RC_DATA_LENGTH_ERROR,
    RC_DUPLICATE_SUBSCRIPTION,
    RC_FUNCTION_NOT_SUPPORTED,
    RC_GET_INHIBITED,
    RC_MSG_TOO_BIG_FOR_Q,
    RC_NOT_AUTHORIZED,
    RC_OBJECT_ALREADY_EXISTS,
    RC_OBJECT_IN_USE,
    RC_PUT_INHIBITED,
    RC_Q_FULL,
    RC_Q_NOT_EMPTY,
    RC_SUBSCRIPTION_NOT_FOUND,
    RC_UNEXPECTED_ERROR,
    RC_UNKNOWN_OBJECT_NAME,
    FrameDecoder,
    FrameError,
    QMError,
    decode_message,
    encode_frame,
    encode_message,
    pad_id,
    patch_backout,
    split_messages,
)
from flowbroker.qm.queues import LocalQueue, QMsg, QueueAttributes

logger = logging.getLogger("flowbroker.qm")

DEAD_LETTER_QUEUE = "SYSTEM.DEAD.LETTER.QUEUE"
ECHO_QUEUE = "SYSTEM.BROKER.ECHO"
SYSTEM_QUEUES = (DEAD_LETTER_QUEUE, ECHO_QUEUE, "SYSTEM.DEFAULT.LOCAL.QUEUE")
ADMIN_OPS = {OP_DEFINE, OP_ALTER, OP_DELETE, OP_PURGE, OP_ADMIN}
MAX_QUEUE_NAME = 48
_D = struct.Struct("<d")
_LENGTHS = struct.Struct("<II")  # properties and body lengths, the last fields of the descriptor


def _valid_queue_name(name: Any) -> str:
    if not isinstance(name, str) or not name:
        raise QMError(RC_BAD_ARGUMENT, "queue name is missing")
    if len(name) > MAX_QUEUE_NAME:
        raise QMError(RC_BAD_ARGUMENT, f"queue name longer than {MAX_QUEUE_NAME} characters: {name[:60]!r}")
    for ch in name:
        if not (ch.isalnum() or ch in "._%/"):
            raise QMError(RC_BAD_ARGUMENT, f"queue name {name!r} contains {ch!r}")
    return name


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


class _Waiter:
    __slots__ = ("conn", "rid", "msg_id", "correl_id", "syncpoint", "max", "handle", "done")

    def __init__(self, conn: Connection, rid: int, msg_id: bytes | None, correl_id: bytes | None) -> None:
        self.conn = conn
        self.rid = rid
        self.msg_id = msg_id
        self.correl_id = correl_id
        self.syncpoint = False
        self.max = 1
        self.handle: asyncio.TimerHandle | None = None
        self.done = False


class QueueManager:
    """The queue manager's state and verbs; connections call these on the loop thread."""

    def __init__(
        self,
        data_dir: Path,
        *,
        fsync: bool = True,
        checkpoint_bytes: int = 64 * 1024 * 1024,
        max_frame: int = DEFAULT_MAX_FRAME,
    ) -> None:
        self.data_dir = data_dir
        self.log_dir = data_dir / "log"
        self.spill_dir = data_dir / "spill"
        self.queues: dict[str, LocalQueue] = {}
        self.topics = TopicSpace()
        self.users: dict[str, str] = {}
        self.admin_user = ""
        self.seq = 0
        self.fsync = fsync
        self.checkpoint_bytes = checkpoint_bytes
        self.max_frame = max_frame
        self.connections: set[Connection] = set()
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
        self._replay(files)
        for name in SYSTEM_QUEUES:
            if name not in self.queues:
                self._define(name, {}, log=False)
        self.log = qlog.LogWriter(self.log_dir, generation, fsync=self.fsync, dispatch=self._dispatch)
        for q in self.queues.values():
            self.log.append(qlog.json_record(qlog.REC_QUEUE, {"name": q.name, "attrs": q.attrs.as_dict()}))

    def _dispatch(self, callbacks: list[Callable[[], None]]) -> None:
        assert self.loop is not None
        self.loop.call_soon_threadsafe(_run_callbacks, callbacks)

    def _replay(self, files: list[qlog.RecoveredFile]) -> None:
        attrs: dict[str, dict[str, Any]] = {}
        messages: dict[str, dict[int, bytes]] = {}
        subs: dict[str, dict[str, Any]] = {}
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
                elif rtype == qlog.REC_BACKOUT:
                    for qname, seq, count in orjson.loads(payload):
                        held = messages.get(qname, {}).get(seq)
                        if held is not None:
                            messages[qname][seq] = patch_backout(held, count)
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
                        self.users.update(obj["users"])
                    if "acls" in obj:
                        self.topics.acls = obj["acls"]
        for name, a in attrs.items():
            qa = QueueAttributes()
            qa.update(a)
            self.queues[name] = LocalQueue(name, qa, self.spill_dir)
        for qname, msgs in messages.items():
            q = self.queues.get(qname)
            if q is None:
                continue
            for seq in sorted(msgs):
                raw = msgs[seq]
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

    def close(self) -> None:
        if self.log is not None:
            self.log.close()
            self.log = None
        for q in self.queues.values():
            q.drop_spill_files()

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
        self.checkpointing = True
        records = self._snapshot_records()
        generation = self.log.generation + 1
        loop = self.loop

        def rotated() -> None:
            loop.call_soon_threadsafe(start_write)

        def start_write() -> None:
            fut = loop.run_in_executor(None, qlog.write_checkpoint, self.log_dir, generation, iter(records))
            fut.add_done_callback(lambda f: finished(f))

        def finished(f: asyncio.Future[Any]) -> None:
            self.checkpointing = False
            if f.exception() is None:
                qlog.remove_before(self.log_dir, generation)
            else:
                logger.error("checkpoint %d failed: %s", generation, f.exception())

        self.log.rotate(generation, rotated)

    def _snapshot_records(self) -> list[bytes]:
        records: list[bytes] = []
        for q in self.queues.values():
            records.append(qlog.json_record(qlog.REC_QUEUE, {"name": q.name, "attrs": q.attrs.as_dict()}))
        records.append(qlog.json_record(qlog.REC_META, {"users": self.users, "acls": self.topics.acls}))
        for sub in self.topics.subscriptions.values():
            if sub.durable:
                records.append(qlog.json_record(qlog.REC_SUB, sub.as_dict()))
        for topic, raw in self.topics.retained.items():
            if raw[PERSISTENCE_OFFSET] == 1:
                tb = topic.encode()
                records.append(qlog.encode_record(qlog.REC_RETAIN, struct.pack("<I", len(tb)) + tb + raw))
        pending_dels: set[tuple[str, int]] = set()
        tx = qlog.TxRecord()
        for q in self.queues.values():
            for m in q.iter_all():
                if m.persistent:
                    tx.puts.append((q.name, m.seq, m.raw))
        for conn in self.connections:
            for q, m in conn.uow.gets:
                if m.persistent:
                    tx.puts.append((q.name, m.seq, m.raw))
        for itx in self.inflight.values():
            tx.puts.extend(itx.puts)
            pending_dels.update(itx.dels)
        if pending_dels:
            tx.puts = [p for p in tx.puts if (p[0], p[1]) not in pending_dels]
        # Chunk so no single record holds the whole queue manager.
        for i in range(0, len(tx.puts), 1000):
            records.append(qlog.TxRecord(puts=tx.puts[i : i + 1000]).encode())
        return records

    # --- queue administration ---------------------------------------------------------------
    def queue(self, name: Any) -> LocalQueue:
        q = self.queues.get(name) if isinstance(name, str) else None
        if q is None:
            raise QMError(RC_UNKNOWN_OBJECT_NAME, f"unknown queue {name!r}")
        return q

    def _define(
        self, name: str, attrs: dict[str, Any], *, log: bool = True, replace: bool = False
    ) -> LocalQueue:
        _valid_queue_name(name)
        if name in self.queues and not replace:
            raise QMError(RC_OBJECT_ALREADY_EXISTS, f"queue {name!r} already exists")
        qa = QueueAttributes()
        qa.update(attrs)
        q = self.queues.get(name)
        if q is None:
            q = self.queues[name] = LocalQueue(name, qa, self.spill_dir)
        else:
            q.attrs = qa
        if log and self.log is not None:
            self.log.append(qlog.json_record(qlog.REC_QUEUE, {"name": name, "attrs": qa.as_dict()}))
        return q

    def define(self, name: Any, attrs: dict[str, Any], replace: bool) -> dict[str, Any]:
        return self._define(_valid_queue_name(name), attrs, replace=replace).inquire()

    def alter(self, name: Any, attrs: dict[str, Any]) -> dict[str, Any]:
        q = self.queue(name)
        merged = q.attrs.as_dict()
        merged.update(attrs)
        qa = QueueAttributes()
        qa.update(merged)
        q.attrs = qa
        assert self.log is not None
        self.log.append(qlog.json_record(qlog.REC_QUEUE, {"name": q.name, "attrs": qa.as_dict()}))
        self._serve_waiters(q)
        return q.inquire()

    def delete(self, name: Any, purge: bool) -> None:
        q = self.queue(name)
        if q.name in SYSTEM_QUEUES:
            raise QMError(RC_NOT_AUTHORIZED, f"system queue {q.name} cannot be deleted")
        if q.locked or q.uncommitted_puts:
            raise QMError(RC_OBJECT_IN_USE, f"queue {q.name} has messages in open units of work")
        if q.available and not purge:
            raise QMError(RC_Q_NOT_EMPTY, f"queue {q.name} holds {q.available} messages (use purge)")
        q.clear()
        q.drop_spill_files()
        del self.queues[q.name]
        for w in q.waiters:
            w.done = True
            if w.handle:
                w.handle.cancel()
            w.conn.reply_error(w.rid, QMError(RC_UNKNOWN_OBJECT_NAME, f"queue {q.name} was deleted"))
        assert self.log is not None
        self.log.append(qlog.json_record(qlog.REC_QUEUE_DELETE, {"name": q.name}))

    def purge(self, name: Any) -> int:
        q = self.queue(name)
        removed = q.clear()
        dels = [(q.name, m.seq) for m in removed if m.persistent]
        if dels:
            assert self.log is not None
            self.log.append(qlog.TxRecord(dels=dels).encode())
        return len(removed)

    def list_queues(self, pattern: str) -> list[dict[str, Any]]:
        import fnmatch

        return [q.inquire() for name, q in sorted(self.queues.items()) if fnmatch.fnmatchcase(name, pattern)]

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

    def _stream_copy(self, q: LocalQueue, m: QMsg, now: float) -> list[tuple[LocalQueue, QMsg]]:
        """The duplicate a streaming queue receives, or [] (BESTEF) / QMError (MUSTDUP) on failure."""
        target = q.attrs.stream_queue
        if not target or target.startswith("topic:"):
            return []
        try:
            sq = self.queue(target)
            copy = self.prepare(sq, m.raw, now)
            if m.persistent and not copy.persistent:
                copy.persistent = True
            return [(sq, copy)]
        except QMError as exc:
            if q.attrs.stream_qos == "MUSTDUP":
                raise QMError(exc.reason_code, f"streaming copy to {target} failed: {exc.reason}") from None
            return []

    def put(
        self, conn: Connection, qname: Any, raws: list[bytes], syncpoint: bool
    ) -> tuple[list[bytes], bool]:
        """Put messages; returns their msg ids and whether the reply must wait for the log."""
        q = self.queue(qname)
        q.handles.add(conn.id)
        now = time.time()
        staged: list[tuple[LocalQueue, QMsg]] = []
        ids: list[bytes] = []
        topic_copies: list[bytes] = []
        try:
            for raw in raws:
                m = self.prepare(q, raw, now)
                staged.append((q, m))
                q.uncommitted_puts += 1  # counts toward depth while the batch is checked
                copies = self._stream_copy(q, m, now)
                for sq, _c in copies:
                    sq.uncommitted_puts += 1
                staged.extend(copies)
                if q.attrs.stream_queue.startswith("topic:"):
                    topic_copies.append(m.raw)
                ids.append(m.msg_id)
        finally:
            for sq, _ in staged:
                sq.uncommitted_puts -= 1
        if syncpoint:
            for sq, _m in staged:
                sq.uncommitted_puts += 1
            conn.uow.puts.extend(staged)
            self._publish_stream_copies(q, topic_copies)
            return ids, False
        persistent = [(sq.name, m.seq, m.raw) for sq, m in staged if m.persistent]
        self._publish_stream_copies(q, topic_copies)
        if persistent:
            for sq, _m in staged:
                sq.uncommitted_puts += 1
            return ids, True if self._log_then(qlog.TxRecord(puts=persistent), staged, []) else False
        for sq, m in staged:
            self.enqueue(sq, m)
        return ids, False

    def _publish_stream_copies(self, q: LocalQueue, raws: list[bytes]) -> None:
        topic = q.attrs.stream_queue[len("topic:") :]
        for raw in raws:
            try:
                self.publish_raw("", topic, raw, admin=True, syncpoint_uow=None)
            except QMError as exc:
                logger.debug("streaming publication from %s dropped: %s", q.name, exc.reason)

    def _log_then(
        self,
        tx: qlog.TxRecord,
        puts: list[tuple[LocalQueue, QMsg]],
        done: list[Callable[[], None]],
    ) -> bool:
        """Append ``tx``; once durable, make ``puts`` visible and run ``done``. Always True."""
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

        self.log.append(tx.encode(), durable)
        return True

    def enqueue(self, q: LocalQueue, m: QMsg) -> None:
        if q.name == ECHO_QUEUE:
            self._echo(m)
            return
        q.enqueue(m)
        if q.waiters:
            self._serve_waiters(q)

    def _echo(self, m: QMsg) -> None:
        """The server-side responder of request/reply measurements: reply to replyToQ, correlId = msgId."""
        msg = decode_message(m.raw)
        target = self.queues.get(msg.md.reply_to_q)
        if target is None:
            return
        raw = m.raw[:24] + m.msg_id + m.raw[48:]  # correlId := the request's msgId
        try:
            reply = self.prepare(target, raw, time.time())
        except QMError:
            return
        reply.persistent = False
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
            dels = [(q.name, e.seq) for e in expired if e.persistent]
            if dels:
                assert self.log is not None
                self.log.append(qlog.TxRecord(dels=dels).encode())
        return m

    def get(
        self,
        conn: Connection,
        rid: int,
        args: dict[str, Any],
    ) -> None:
        """Answer a get now, once its removals are durable, or when a message arrives (get-wait)."""
        q = self.queue(args.get("q"))
        q.handles.add(conn.id)
        if q.attrs.get_inhibited:
            raise QMError(RC_GET_INHIBITED, f"get inhibited on queue {q.name}")
        msg_id = _opt_id(args.get("msg_id"))
        correl_id = _opt_id(args.get("correl_id"))
        syncpoint = bool(args.get("sync"))
        limit = int(args.get("max", 1))
        if limit < 1:
            raise QMError(RC_BAD_ARGUMENT, "max must be at least 1")
        if self._take_batch(conn, rid, q, msg_id, correl_id, syncpoint, limit):
            return
        wait = float(args.get("wait", 0) or 0)
        if wait <= 0:
            conn.reply_messages(rid, [])
            return
        w = _Waiter(conn, rid, msg_id, correl_id)
        w.syncpoint = syncpoint
        w.max = limit
        assert self.loop is not None
        w.handle = self.loop.call_later(wait, self._wait_expired, q, w)
        q.waiters.append(w)
        conn.waiters.append(w)

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
        """Take up to ``limit`` messages and reply with them; False (no reply) when none."""
        out: list[bytes] = []
        dels: list[tuple[str, int]] = []
        while len(out) < limit:
            m = self.take(q, msg_id, correl_id)
            if m is None:
                break
            q.gets += 1
            if syncpoint:
                q.locked += 1
                conn.uow.gets.append((q, m))
            elif m.persistent:
                dels.append((q.name, m.seq))
            out.append(m.raw)
        if not out:
            return False
        self.stats["gets"] += len(out)
        if dels:
            # A get outside a unit of work is its own commit: once answered, the message must
            # not come back after a crash, so the answer waits for the removal to be logged.
            assert self.log is not None
            self.log.append(qlog.TxRecord(dels=dels).encode(), lambda: conn.reply_messages(rid, out))
        else:
            conn.reply_messages(rid, out)
        return True

    def _wait_expired(self, q: LocalQueue, w: _Waiter) -> None:
        if w.done:
            return
        w.done = True
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
            if self._take_batch(w.conn, w.rid, q, w.msg_id, w.correl_id, w.syncpoint, w.max):
                w.done = True
                q.waiters.remove(w)
                if w.handle:
                    w.handle.cancel()

    def browse(self, conn: Connection, args: dict[str, Any]) -> tuple[list[bytes], int]:
        q = self.queue(args.get("q"))
        if q.attrs.get_inhibited:
            raise QMError(RC_GET_INHIBITED, f"get inhibited on queue {q.name}")
        cursor = int(args.get("cursor") or 0)
        if cursor == 0:
            conn.next_cursor += 1
            cursor = conn.next_cursor
            conn.cursors[cursor] = (q.name, None)
        if cursor not in conn.cursors:
            raise QMError(RC_BAD_ARGUMENT, f"unknown browse cursor {cursor}")
        qname, position = conn.cursors[cursor]
        if qname != q.name:
            raise QMError(RC_BAD_ARGUMENT, f"browse cursor {cursor} belongs to queue {qname}")
        limit = int(args.get("max", 1))
        out: list[bytes] = []
        now = time.time()
        while len(out) < limit:
            m = q.browse_after(position, now)
            if m is None:
                break
            position = (m.priority, m.place)
            out.append(m.raw)
        conn.cursors[cursor] = (q.name, position)
        return out, cursor

    # --- units of work ----------------------------------------------------------------------
    def commit(self, conn: Connection, on_done: Callable[[], None]) -> bool:
        """Commit the connection's unit of work; False when ``on_done`` will run once durable."""
        uow = conn.uow
        conn.uow = UnitOfWork()
        self.stats["commits"] += 1
        tx = qlog.TxRecord(
            puts=[(q.name, m.seq, m.raw) for q, m in uow.puts if m.persistent],
            dels=[(q.name, m.seq) for q, m in uow.gets if m.persistent],
        )
        for q, _ in uow.gets:
            q.locked -= 1
        if tx.puts or tx.dels:
            self._log_then(tx, uow.puts, [on_done])
            return False
        for q, m in uow.puts:
            q.uncommitted_puts -= 1
            if q.name in self.queues:
                self.enqueue(q, m)
        return True

    def backout(self, conn: Connection) -> None:
        uow = conn.uow
        conn.uow = UnitOfWork()
        for q, _ in uow.puts:
            q.uncommitted_puts -= 1
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
                moved = QMsg(self.next_seq(), m.raw, m.expire_at)
                if moved.persistent:
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
        if moves.puts:
            self.log.append(moves.encode())
        for name in touched:
            q = self.queues[name]
            if q.waiters:
                self._serve_waiters(q)

    # --- pub/sub ----------------------------------------------------------------------------
    def publish(
        self,
        conn: Connection,
        topic: Any,
        raw: bytes,
        retain: bool,
        syncpoint: bool,
        on_done: Callable[[], None],
    ) -> tuple[int, bool]:
        if not isinstance(topic, str):
            raise QMError(RC_BAD_ARGUMENT, "topic is missing")
        self.topics.check(conn.user, topic, "publish", admin=conn.admin)
        now = time.time()
        raw = raw[:PUT_TIME_OFFSET] + _D.pack(now) + raw[PUT_TIME_OFFSET + 8 :]
        if retain:
            self.topics.retain(topic, raw)
            if raw[PERSISTENCE_OFFSET] == 1:
                tb = topic.encode()
                assert self.log is not None
                self.log.append(qlog.encode_record(qlog.REC_RETAIN, struct.pack("<I", len(tb)) + tb + raw))
        self.stats["publishes"] += 1
        return self.publish_raw(
            conn.user,
            topic,
            raw,
            admin=conn.admin,
            syncpoint_uow=conn.uow if syncpoint else None,
            on_done=on_done,
        )

    def publish_raw(
        self,
        user: str,
        topic: str,
        raw: bytes,
        *,
        admin: bool,
        syncpoint_uow: UnitOfWork | None,
        on_done: Callable[[], None] | None = None,
    ) -> tuple[int, bool]:
        """Deliver a publication to every matching subscription: all or none when persistent."""
        subs = self.topics.match(topic)
        if not subs:
            return 0, True
        persistent = raw[PERSISTENCE_OFFSET] == 1
        now = time.time()
        decoded = None
        if any(s.filter_fn is not None for s in subs):
            decoded = decode_message(raw)
        with_topic = _with_topic(raw, topic)
        staged: list[tuple[LocalQueue, QMsg]] = []
        try:
            for s in subs:
                if s.filter_fn is not None:
                    assert decoded is not None
                    try:
                        if not s.filter_fn(decoded.properties, decoded.body):
                            continue
                    except Exception as exc:
                        logger.debug("filter of %s raised %s", s.name, exc)
                        continue
                q = self.queues.get(s.queue)
                try:
                    if q is None:
                        raise QMError(RC_UNKNOWN_OBJECT_NAME, f"subscriber queue {s.queue!r} does not exist")
                    body = with_topic
                    if s.correl_id is not None:
                        body = body[:24] + s.correl_id + body[48:]
                    m = self.prepare(q, body, now)
                    q.uncommitted_puts += 1
                    staged.append((q, m))
                except QMError as exc:
                    if persistent:
                        raise QMError(
                            exc.reason_code, f"publication to {topic!r} not delivered: {exc.reason}"
                        ) from None
        finally:
            for q, _ in staged:
                q.uncommitted_puts -= 1
        if syncpoint_uow is not None:
            for q, _m in staged:
                q.uncommitted_puts += 1
            syncpoint_uow.puts.extend(staged)
            return len(staged), True
        if persistent:
            for q, _m in staged:
                q.uncommitted_puts += 1
            tx = qlog.TxRecord(puts=[(q.name, m.seq, m.raw) for q, m in staged])
            self._log_then(tx, staged, [on_done] if on_done else [])
            return len(staged), False
        for q, m in staged:
            self.enqueue(q, m)
        return len(staged), True

    def subscribe(self, conn: Connection, args: dict[str, Any]) -> dict[str, Any]:
        topic = args.get("topic")
        qname = args.get("queue")
        if not isinstance(topic, str):
            raise QMError(RC_BAD_ARGUMENT, "topic is missing")
        self.topics.check(conn.user, topic, "subscribe", admin=conn.admin)
        q = self.queue(qname)
        name = args.get("name") or f"{conn.user}:{topic}:{q.name}"
        if not isinstance(name, str):
            raise QMError(RC_BAD_ARGUMENT, "subscription name must be a string")
        durable = bool(args.get("durable", True))
        existing = self.topics.subscriptions.get(name)
        if existing is not None and (existing.topic != topic or existing.queue != q.name):
            raise QMError(
                RC_DUPLICATE_SUBSCRIPTION, f"subscription {name!r} exists with another topic or queue"
            )
        sub = Subscription(
            name=name,
            topic=topic,
            queue=q.name,
            correl_id=_opt_id(args.get("correl_id")),
            filter_text=args.get("filter") or None,
            durable=durable,
            principal=conn.user,
        )
        if sub.filter_text:
            sub.filter_fn = compile_filter(sub.filter_text)
        if existing is not None:
            self.topics.remove(name)
        self.topics.add(sub)
        if durable:
            assert self.log is not None
            self.log.append(qlog.json_record(qlog.REC_SUB, sub.as_dict()))
        else:
            conn.temporary_subs.add(name)
        retained = 0
        now = time.time()
        for rtopic, raw in list(self.topics.retained_matching(topic)):
            body = _with_topic(raw, rtopic, retained=True)
            if sub.correl_id is not None:
                body = body[:24] + sub.correl_id + body[48:]
            try:
                m = self.prepare(q, body, now)
            except QMError:
                continue
            if m.persistent:
                assert self.log is not None
                self.log.append(qlog.TxRecord(puts=[(q.name, m.seq, m.raw)]).encode())
            self.enqueue(q, m)
            retained += 1
        return {"name": name, "retained_delivered": retained}

    def unsubscribe(self, conn: Connection, name: Any) -> None:
        sub = self.topics.subscriptions.get(name) if isinstance(name, str) else None
        if sub is None:
            raise QMError(RC_SUBSCRIPTION_NOT_FOUND, f"no subscription named {name!r}")
        if not conn.admin and sub.principal != conn.user:
            raise QMError(RC_NOT_AUTHORIZED, f"subscription {name!r} belongs to {sub.principal}")
        self.topics.remove(name)
        conn.temporary_subs.discard(name)
        if sub.durable:
            assert self.log is not None
            self.log.append(qlog.json_record(qlog.REC_UNSUB, {"name": name}))

    # --- principals and ACLs ----------------------------------------------------------------
    def admin(self, args: dict[str, Any]) -> dict[str, Any]:
        action = args.get("action")
        if action == "define_user":
            user, password = args.get("user"), args.get("password")
            if not isinstance(user, str) or not user or not isinstance(password, str) or len(password) < 8:
                raise QMError(
                    RC_BAD_ARGUMENT, "define_user needs a user name and a password of 8+ characters"
                )
            self.users[user] = password
        elif action == "set_topic_acl":
            topic, principal = args.get("topic"), args.get("principal")
            if not isinstance(topic, str) or not isinstance(principal, str) or not principal:
                raise QMError(RC_BAD_ARGUMENT, "set_topic_acl needs topic and principal")
            pub, sub = args.get("publish"), args.get("subscribe")
            self.topics.set_acl(
                topic, principal, pub if pub is None else bool(pub), sub if sub is None else bool(sub)
            )
        elif action == "list_subscriptions":
            return {"subscriptions": [s.as_dict() for s in self.topics.subscriptions.values()]}
        elif action == "status":
            assert self.log is not None
            return {
                "queues": len(self.queues),
                "connections": len(self.connections),
                "log_flushes": self.log.flushes,
                "log_records": self.log.records,
                "log_generation": self.log.generation,
                **self.stats,
            }
        elif action == "checkpoint":
            if not self.checkpointing:
                self.checkpoint()
            return {"checkpoint": True}
        else:
            raise QMError(RC_FUNCTION_NOT_SUPPORTED, f"unknown admin action {action!r}")
        assert self.log is not None
        self.log.append(qlog.json_record(qlog.REC_META, {"users": self.users, "acls": self.topics.acls}))
        return {}

    def authenticate(self, user: Any, password: Any) -> bool:
        if not isinstance(user, str) or not isinstance(password, str):
            return False
        expected = self.users.get(user)
        return expected is not None and hmac.compare_digest(expected.encode(), password.encode())


def _run_callbacks(callbacks: list[Callable[[], None]]) -> None:
    for cb in callbacks:
        try:
            cb()
        except Exception:  # one waiter's failure must not strand the rest of its batch
            logger.exception("durable callback failed")


def _opt_id(value: Any) -> bytes | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise QMError(RC_BAD_ARGUMENT, "ids travel as hex strings")
    try:
        return pad_id(bytes.fromhex(value))
    except ValueError:
        raise QMError(RC_BAD_ARGUMENT, f"id {value[:60]!r} is not hexadecimal") from None


def _with_topic(raw: bytes, topic: str, retained: bool = False) -> bytes:
    msg = decode_message(raw)
    msg.properties["MQTopicString"] = topic
    if retained:
        msg.properties["MQIsRetained"] = True
    return encode_message(msg.md, msg.properties, msg.body)


class Connection(asyncio.Protocol):
    """One client connection: its frames, its unit of work, its browse cursors and waits."""

    _ids = 0

    def __init__(self, qm: QueueManager) -> None:
        Connection._ids += 1
        self.id = Connection._ids
        self.qm = qm
        self.decoder = FrameDecoder(qm.max_frame)
        self.transport: asyncio.Transport | None = None
        self.user = ""
        self.admin = False
        self.uow = UnitOfWork()
        self.cursors: dict[int, tuple[str, tuple[int, int] | None]] = {}
        self.next_cursor = 0
        self.waiters: list[_Waiter] = []
        self.temporary_subs: set[str] = set()
        self.out: list[bytes] = []
        self.closed = False
        self.in_batch = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]  # uvloop's transports are not subclasses
        self.qm.connections.add(self)
        sock = transport.get_extra_info("socket")
        if sock is not None and sock.family in (socket.AF_INET, socket.AF_INET6):
            with contextlib.suppress(OSError):
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        qm = self.qm
        qm.connections.discard(self)
        for w in self.waiters:
            if not w.done:
                w.done = True
                if w.handle:
                    w.handle.cancel()
        self.waiters.clear()
        if self.uow.puts or self.uow.gets:
            qm.backout(self)  # a connection that drops backs out its unit of work
        for name in list(self.temporary_subs):
            qm.topics.remove(name)
        for q in qm.queues.values():
            q.handles.discard(self.id)

    def data_received(self, data: bytes) -> None:
        try:
            frames = self.decoder.feed(data)
        except FrameError as exc:
            self._send(encode_frame(OP_REPLY_ERR, 0, {"rc": RC_DATA_LENGTH_ERROR, "reason": str(exc)}))
            self._flush()
            assert self.transport is not None
            self.transport.close()
            return
        self.in_batch = True
        try:
            for op, rid, args, tail in frames:
                if self.closed:
                    return
                self.handle(op, rid, args, tail)
        finally:
            self.in_batch = False
            self._flush()
        self.qm.maybe_checkpoint()

    def _send(self, frame: bytes) -> None:
        if self.closed:
            return
        self.out.append(frame)
        if not self.in_batch:
            self._flush()

    def _flush(self) -> None:
        if self.out and self.transport is not None and not self.closed:
            # One write per batch of replies: one syscall, one segment for pipelined requests.
            out = self.out
            self.transport.write(out[0] if len(out) == 1 else b"".join(out))
        self.out = []

    def _deferred_put(self, a: dict[str, Any], tail: bytes) -> None:
        """A put under syncpoint whose sender does not wait: a refusal dooms the unit of work."""
        qm = self.qm
        try:
            raws = split_messages(tail)
            qm.put(self, a.get("q"), raws, True)
        except (QMError, TypeError, ValueError, KeyError, UnicodeDecodeError, struct.error) as exc:
            if self.uow.failed is None:
                self.uow.failed = _deferred_put_error(exc)
            return
        qm.stats["puts"] += len(raws)

    def _deferred_publish(self, a: dict[str, Any], tail: bytes) -> None:
        """A publication under syncpoint whose sender does not wait: a refusal dooms the unit of work."""
        try:
            raws = split_messages(tail)
            if len(raws) != 1:
                raise QMError(RC_BAD_ARGUMENT, "a publication carries exactly one message")
            self.qm.publish(self, a.get("topic"), raws[0], bool(a.get("retain")), True, _nothing)
        except (QMError, TypeError, ValueError, KeyError, UnicodeDecodeError, struct.error) as exc:
            if self.uow.failed is None:
                self.uow.failed = _deferred_put_error(exc)

    def _get_after_commit(self, rid: int, args: dict[str, Any]) -> None:
        if self.closed:
            return
        try:
            self.qm.get(self, rid, args)
        except QMError as exc:
            self.reply_error(rid, exc)
        except (TypeError, ValueError, KeyError) as exc:
            self.reply_error(rid, QMError(RC_BAD_ARGUMENT, f"bad request arguments: {exc}"))

    def reply(self, rid: int, args: Any = None, tail: bytes = b"") -> None:
        self._send(encode_frame(OP_REPLY_OK, rid, args, tail))

    def reply_error(self, rid: int, exc: QMError) -> None:
        self._send(encode_frame(OP_REPLY_ERR, rid, {"rc": exc.reason_code, "reason": exc.reason}))

    def reply_messages(self, rid: int, raws: list[bytes], extra: dict[str, Any] | None = None) -> None:
        args: dict[str, Any] = {"n": len(raws)}
        if extra:
            args.update(extra)
        self._send(encode_frame(OP_REPLY_OK, rid, args, b"".join(raws)))

    def handle(self, op: int, rid: int, args: Any, tail: bytes) -> None:
        qm = self.qm
        try:
            if args is not None and not isinstance(args, dict):
                raise QMError(RC_BAD_ARGUMENT, "frame arguments must be a JSON object")
            a: dict[str, Any] = args or {}
            if op == OP_HELLO:
                if not qm.authenticate(a.get("user"), a.get("password")):
                    self.reply_error(rid, QMError(RC_NOT_AUTHORIZED, "bad user name or password"))
                    self._flush()
                    assert self.transport is not None
                    self.transport.close()
                    self.closed = True
                    return
                self.user = a["user"]
                self.admin = self.user == qm.admin_user
                self.reply(rid, {"qm": "flowbroker", "user": self.user, "max_frame": qm.max_frame})
                return
            if not self.user:
                raise QMError(RC_NOT_AUTHORIZED, "the first frame must authenticate (HELLO)")
            if op in ADMIN_OPS and not self.admin:
                raise QMError(RC_NOT_AUTHORIZED, f"{self.user} may not administer the queue manager")
            if op == OP_PUT:
                if a.get("noreply") and a.get("sync"):
                    self._deferred_put(a, tail)
                    return
                raws = split_messages(tail)
                ids, wait = qm.put(self, a.get("q"), raws, bool(a.get("sync")))
                qm.stats["puts"] += len(raws)
                if a.get("noreply"):
                    return
                if wait:
                    # Reply once the log holds the messages: registered behind the put's record.
                    assert qm.log is not None
                    qm.log.append(b"", lambda: self.reply(rid, None, b"".join(ids)))
                else:
                    self.reply(rid, None, b"".join(ids))
            elif op == OP_GET:
                if a.get("browse"):
                    out, cursor = qm.browse(self, a)
                    self.reply_messages(rid, out, {"cursor": cursor})
                    return
                qm.get(self, rid, a)
            elif op == OP_COMMIT:
                failed = self.uow.failed
                if failed is not None:
                    qm.backout(self)
                    raise QMError(
                        RC_BACKED_OUT,
                        f"unit of work backed out: a put was refused: {failed.reason_code} {failed.reason}",
                    )
                then_get = a.get("get")
                if then_get is not None:
                    # commit, then get the next batch for the same reply: one round trip per
                    # batch for a flow thread; the get runs once the commit is durable
                    if not isinstance(then_get, dict):
                        raise QMError(RC_BAD_ARGUMENT, "get after commit takes the arguments of a get")
                    if qm.commit(self, lambda: self._get_after_commit(rid, then_get)):
                        self._get_after_commit(rid, then_get)
                elif qm.commit(self, lambda: self.reply(rid)):
                    self.reply(rid)
            elif op == OP_BACKOUT:
                qm.backout(self)
                self.reply(rid)
            elif op == OP_PUBLISH:
                if a.get("noreply") and a.get("sync"):
                    self._deferred_publish(a, tail)
                    return
                raws = split_messages(tail)
                if len(raws) != 1:
                    raise QMError(RC_BAD_ARGUMENT, "a publication carries exactly one message")
                result: dict[str, int] = {}

                def done() -> None:
                    self.reply(rid, result)

                n, now = qm.publish(
                    self, a.get("topic"), raws[0], bool(a.get("retain")), bool(a.get("sync")), done
                )
                result["deliveries"] = n
                if now:
                    self.reply(rid, result)
            elif op == OP_SUBSCRIBE:
                self.reply(rid, qm.subscribe(self, a))
            elif op == OP_UNSUBSCRIBE:
                qm.unsubscribe(self, a.get("name"))
                self.reply(rid)
            elif op == OP_DEFINE:
                self.reply(rid, qm.define(a.get("name"), _attrs(a), bool(a.get("replace"))))
            elif op == OP_ALTER:
                self.reply(rid, qm.alter(a.get("name"), _attrs(a)))
            elif op == OP_DELETE:
                qm.delete(a.get("name"), bool(a.get("purge")))
                self.reply(rid)
            elif op == OP_INQUIRE:
                self.reply(rid, qm.queue(a.get("name")).inquire())
            elif op == OP_LIST:
                pattern = a.get("pattern", "*")
                if not isinstance(pattern, str):
                    raise QMError(RC_BAD_ARGUMENT, "pattern must be a string")
                self.reply(rid, {"queues": qm.list_queues(pattern)})
            elif op == OP_PURGE:
                self.reply(rid, {"purged": qm.purge(a.get("name"))})
            elif op == OP_BROWSE_CLOSE:
                self.cursors.pop(int(a.get("cursor", 0)), None)
                self.reply(rid)
            elif op == OP_ADMIN:
                self.reply(rid, qm.admin(a))
            elif op == OP_PING:
                self.reply(rid, {"pong": True})
            else:
                raise QMError(RC_FUNCTION_NOT_SUPPORTED, f"unknown operation {op}")
        except QMError as exc:
            self.reply_error(rid, exc)
        except (TypeError, ValueError, KeyError, UnicodeDecodeError, struct.error) as exc:
            self.reply_error(rid, QMError(RC_BAD_ARGUMENT, f"bad request arguments: {exc}"))
        except Exception as exc:  # a defect must cost one request, never the queue manager
            logger.exception("request op %d failed", op)
            self.reply_error(rid, QMError(RC_UNEXPECTED_ERROR, f"unexpected error: {type(exc).__name__}"))


def _nothing() -> None:
    """Nobody waits for a deferred request's outcome: its commit reports it."""


def _deferred_put_error(exc: Exception) -> QMError:
    if isinstance(exc, QMError):
        return exc
    return QMError(RC_BAD_ARGUMENT, f"bad request arguments: {exc}")


def _attrs(a: dict[str, Any]) -> dict[str, Any]:
    attrs = a.get("attrs") or {}
    if not isinstance(attrs, dict):
        raise QMError(RC_BAD_ARGUMENT, "attrs must be an object")
    return attrs


# --- the process ------------------------------------------------------------------------------
def load_or_create_credentials(data_dir: Path, host: str, port: int) -> dict[str, Any]:
    """The application credentials of ``DIR/qm.json`` (created, mode 0600, on first start)."""
    path = data_dir / "qm.json"
    info: dict[str, Any] = {}
    if path.exists():
        with contextlib.suppress(ValueError, OSError):
            info = json.loads(path.read_text())
    user = info.get("user") or "app"
    password = info.get("password") or secrets.token_urlsafe(24)
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
) -> None:
    data_dir.mkdir(parents=True, exist_ok=True)
    loop = asyncio.get_running_loop()
    qm = QueueManager(data_dir, fsync=fsync, checkpoint_bytes=checkpoint_bytes)
    qm.open(loop)
    # a supervisor may stop the queue manager as soon as it answers, so the handlers come
    # first, and the Unix socket exists before the TCP listener tells anyone we are up
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    info = load_or_create_credentials(data_dir, host, port)
    qm.admin_user = info["user"]
    qm.users[info["user"]] = info["password"]
    sock_path = Path(info["unix_socket"])
    with contextlib.suppress(FileNotFoundError):
        sock_path.unlink()
    unix = await loop.create_unix_server(lambda: Connection(qm), str(sock_path))
    os.chmod(sock_path, 0o600)
    tcp = await loop.create_server(lambda: Connection(qm), host, port, reuse_address=True, backlog=512)
    if port == 0:
        info["port"] = tcp.sockets[0].getsockname()[1]
        load_or_create_credentials(data_dir, host, info["port"])
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
        )
    )
