"""One client connection of the queue manager: frames in, verbs of ``QueueManager`` called, replies out.

The first frame must be HELLO. A password is checked against its scrypt hash on a worker thread,
so a slow hash never stalls the event loop; frames that arrive meanwhile wait, in order, until
the answer is known. What a connection may cost is bounded by the queue manager's
:class:`~flowbroker.qm.server.ConnectionLimits`: small frames, few bytes and little time before
its HELLO is answered, a cap on connections, and a bound on the replies it leaves unread.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import struct
from functools import partial
from typing import Any

import orjson

from flowbroker.qm.principals import verify_password
from flowbroker.qm.protocol import (
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
    RC_BACKED_OUT,
    RC_BAD_ARGUMENT,
    RC_CONNECTION_BROKEN,
    RC_DATA_LENGTH_ERROR,
    RC_FRAME_ERROR,
    RC_FUNCTION_NOT_SUPPORTED,
    RC_GET_INHIBITED,
    RC_MAX_CONNS_LIMIT_REACHED,
    RC_NOT_AUTHORIZED,
    RC_UNEXPECTED_ERROR,
    FrameDecoder,
    FrameError,
    QMError,
    encode_frame,
    no_delay,
    split_messages,
)
from flowbroker.qm.queues import BrowsePosition
from flowbroker.qm.server import Done, Failed, QueueManager, UnitOfWork, Waiter

logger = logging.getLogger("flowbroker.qm")

#: The most non-persistent messages one get may read ahead (``ahead``), whatever the client asks.
MAX_READ_AHEAD = 1000

ADMIN_OPS = {OP_DEFINE, OP_ALTER, OP_DELETE, OP_PURGE, OP_ADMIN}
#: A reply's frame header and argument length (see protocol.encode_frame), and the encoded
#: arguments of a get's reply for the usual message counts.
REPLY_HEADER = struct.Struct("<IBII")
_COUNT_ARGS = [orjson.dumps({"n": n}) for n in range(1025)]
#: Frames a client may send before its HELLO has been answered; beyond this it is flooding.
MAX_FRAMES_BEFORE_WELCOME = 1024
#: Replies gathered while a batch of requests is handled are written once they pass this many
#: bytes, so a batch of large replies meets the buffer bound as the socket takes them.
FLUSH_EARLY = 256 * 1024
BAD_CREDENTIALS = "bad user name or password"

Frame = tuple[int, int, Any, bytes]


class Connection(asyncio.Protocol):
    """One client connection: its frames, its unit of work, its browse cursors and waits."""

    _ids = 0

    def __init__(self, qm: QueueManager) -> None:
        Connection._ids += 1
        self.id = Connection._ids
        self.qm = qm
        limits = qm.limits
        self.decoder = FrameDecoder(min(limits.max_hello_frame, qm.max_frame), " before authentication")
        self.received = 0  # bytes received before HELLO was answered
        self.handshake: asyncio.TimerHandle | None = None
        self.transport: asyncio.Transport | None = None
        self.user = ""
        self.admin = False
        self.authenticating = False
        self.held: list[Frame] = []  # frames that arrived while HELLO was being checked
        self.uow = UnitOfWork()
        # per queue, the non-persistent messages the last read-ahead get sent: the client may give
        # back the ones it did not consume (``unread``) when it closes in an orderly way
        self.lent: dict[str, tuple[Any, list[Any]]] = {}
        self.cursors: dict[int, tuple[str, BrowsePosition | None]] = {}
        self.next_cursor = 0
        self.waiters: set[Waiter] = set()
        self.ended_waits: list[Waiter] = []  # finished on closing, still listed by their queues
        self.temporary_subs: set[str] = set()
        self.out: list[bytes] = []
        self.out_size = 0
        self.flush_pending = False
        self.closed = False
        self.in_batch = False
        self.counted = False  # holds one of the places FLOWBROKER_QM_MAX_CONNECTIONS allows

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]  # uvloop's transports are not subclasses
        qm = self.qm
        limits = qm.limits
        sock = transport.get_extra_info("socket")
        # The Unix socket (mode 0600) admits only the queue manager's own OS user, its local
        # execution groups among them: the cap keeps network peers from crowding them out.
        if sock is None or sock.family != socket.AF_UNIX:
            if qm.network_connections >= limits.max_connections:
                self._fatal(
                    RC_MAX_CONNS_LIMIT_REACHED,
                    f"the queue manager already serves {qm.network_connections} connections, its limit "
                    "(FLOWBROKER_QM_MAX_CONNECTIONS); try again later",
                )
                return
            self.counted = True
            qm.network_connections += 1
        qm.connections.add(self)
        no_delay(transport)
        assert qm.loop is not None
        self.handshake = qm.loop.call_later(limits.handshake_timeout, self._handshake_expired)

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        qm = self.qm
        qm.connections.discard(self)
        if self.counted:
            self.counted = False
            qm.network_connections -= 1
        if self.handshake is not None:
            self.handshake.cancel()
            self.handshake = None
        self._end_waits(unlist=True)
        self.held.clear()
        if self.uow.puts or self.uow.gets:
            qm.backout(self)  # a connection that drops backs out its unit of work
        for name in list(self.temporary_subs):
            qm.topics.remove(name)

    def _end_waits(self, *, unlist: bool = False) -> None:
        """Stop this connection's get-waits, so no message is handed to a connection going away.

        A finished waiter is skipped and dropped by the queue serving its waiters, which may be
        doing so right now (a reply to it can close this connection); ``unlist`` also takes it off
        its queue at once, which only ``connection_lost``, outside any such loop, may do.
        """
        ended = [*self.ended_waits, *self.waiters]
        for w in ended:
            w.finish()
        if not unlist:
            self.ended_waits = ended
            return
        self.ended_waits = []
        for w in ended:
            with contextlib.suppress(ValueError):
                w.queue.waiters.remove(w)  # a queue nobody puts to would otherwise keep it forever

    def data_received(self, data: bytes) -> None:
        if self.closed:
            return
        try:
            frames = self.decoder.feed(data)
        except FrameError as exc:
            self._fatal(RC_DATA_LENGTH_ERROR if exc.oversized else RC_FRAME_ERROR, str(exc))
            return
        if not self.user:
            self.received += len(data)
            budget = self.qm.limits.max_pre_auth_bytes
            if self.received > budget:
                self._fatal(RC_DATA_LENGTH_ERROR, f"more than {budget} bytes sent before authentication")
                return
        self._handle_frames(frames)

    def _handshake_expired(self) -> None:
        self.handshake = None
        if self.user or self.closed:
            return
        self._fatal(
            RC_CONNECTION_BROKEN,
            f"no HELLO answered within {self.qm.limits.handshake_timeout:g} s of connecting",
        )

    def _handle_frames(self, frames: list[Frame]) -> None:
        self.in_batch = True
        qm = self.qm
        qm.handling += 1
        try:
            for i, frame in enumerate(frames):
                if self.closed:
                    return
                if self.authenticating:
                    self.held.extend(frames[i:])
                    if len(self.held) > MAX_FRAMES_BEFORE_WELCOME:
                        self._fatal(RC_FRAME_ERROR, "too many requests before HELLO was answered")
                    return
                self.handle(*frame)
        finally:
            self.in_batch = False
            self._flush()
            qm.handling -= 1
            if not qm.handling and qm.pending_flush:
                # replies this batch made to other connections (messages it put that their
                # waiting gets took): one write each, however many the batch delivered
                pending, qm.pending_flush = qm.pending_flush, []
                for other in pending:
                    other.flush_pending = False
                    other._flush()
        qm.maybe_checkpoint()

    def _fatal(self, rc: int, reason: str) -> None:
        """Say why outside any request (request id 0), then close the connection."""
        self._send(encode_frame(OP_REPLY_ERR, 0, {"rc": rc, "reason": reason}))
        self._close()

    def _close(self) -> None:
        self._flush()
        if self.transport is not None:
            self.transport.close()
        self.closed = True
        self._end_waits()

    def _send(self, frame: bytes) -> None:
        if self.closed:
            return
        self.out.append(frame)
        self.out_size += len(frame)
        if self.out_size > FLUSH_EARLY:
            self._flush()
        elif not self.in_batch:
            self._flush_soon()

    def _flush_soon(self) -> None:
        """Write now, or, while another connection's frames are being handled, at their end."""
        qm = self.qm
        if qm.handling:
            if not self.flush_pending:
                self.flush_pending = True
                qm.pending_flush.append(self)
        else:
            self._flush()

    def _flush(self) -> None:
        transport = self.transport
        if self.out and transport is not None and not self.closed:
            # One write per batch of replies: one syscall, one segment for pipelined requests.
            out = self.out
            transport.write(out[0] if len(out) == 1 else b"".join(out))
            unread = transport.get_write_buffer_size()
            if unread > self.qm.limits.max_buffer:
                self._overflow(unread)
        self.out = []
        self.out_size = 0

    def _overflow(self, unread: int) -> None:
        """The client leaves its replies unread: drop them and the connection, not grow memory.

        Its unit of work is backed out (``connection_lost``), as for any connection that breaks.
        """
        logger.warning(
            "connection %d (%s) closed: %d bytes of replies unread, beyond its bound of %d "
            "(FLOWBROKER_QM_MAX_CONNECTION_BUFFER)",
            self.id,
            self.user or "not authenticated",
            unread,
            self.qm.limits.max_buffer,
        )
        self.closed = True
        self._end_waits()
        assert self.transport is not None
        self.transport.abort()

    def reply(self, rid: int, args: Any = None, tail: bytes = b"") -> None:
        self._send(encode_frame(OP_REPLY_OK, rid, args, tail))

    def reply_error(self, rid: int, exc: QMError) -> None:
        self._send(encode_frame(OP_REPLY_ERR, rid, {"rc": exc.reason_code, "reason": exc.reason}))

    def reply_messages(self, rid: int, raws: list[bytes], extra: dict[str, Any] | None = None) -> None:
        if extra or self.closed:
            self._send(encode_frame(OP_REPLY_OK, rid, {"n": len(raws), **(extra or {})}, b"".join(raws)))
            return
        # the hot reply of a get: the header and the messages go to the output as they are, and
        # the one join of the flush copies each message once
        count = len(raws)
        args = _COUNT_ARGS[count] if count < len(_COUNT_ARGS) else orjson.dumps({"n": count})
        size = sum(map(len, raws))
        out = self.out
        out.append(REPLY_HEADER.pack(9 + len(args) + size, OP_REPLY_OK, rid, len(args)))
        out.append(args)
        out.extend(raws)
        self.out_size += 13 + len(args) + size
        if self.out_size > FLUSH_EARLY:
            self._flush()
        elif not self.in_batch:
            self._flush_soon()

    # --- authentication ---------------------------------------------------------------------
    def _hello(self, rid: int, a: dict[str, Any]) -> None:
        if self.user:
            raise QMError(RC_BAD_ARGUMENT, f"already authenticated as {self.user}")
        user, password = a.get("user"), a.get("password")
        if not isinstance(user, str) or not isinstance(password, str):
            self._refuse(rid)
            return
        principals = self.qm.principals
        if principals.recognised(user, password):
            self._welcome(rid, user)
            return
        assert self.qm.loop is not None
        self.authenticating = True
        check = self.qm.loop.run_in_executor(None, verify_password, principals.hashes.get(user), password)
        check.add_done_callback(partial(self._checked, rid, user, password))

    def _checked(self, rid: int, user: str, password: str, check: asyncio.Future[bool]) -> None:
        self.authenticating = False
        if self.closed:
            return
        if check.cancelled() or check.exception() is not None or not check.result():
            self._refuse(rid)
            return
        self.qm.principals.remember(user, password)
        self._welcome(rid, user)
        held, self.held = self.held, []
        if held:
            self._handle_frames(held)
        else:
            self._flush()

    def _welcome(self, rid: int, user: str) -> None:
        if self.handshake is not None:
            self.handshake.cancel()
            self.handshake = None
        self.user = user
        self.admin = user == self.qm.admin_user
        self.decoder.max_frame = self.qm.max_frame
        self.decoder.limit_context = ""
        self.reply(rid, {"qm": "flowbroker", "user": user, "max_frame": self.qm.max_frame})

    def _refuse(self, rid: int) -> None:
        self.reply_error(rid, QMError(RC_NOT_AUTHORIZED, BAD_CREDENTIALS))
        self._close()

    # --- requests ---------------------------------------------------------------------------
    def handle(self, op: int, rid: int, args: Any, tail: bytes) -> None:
        qm = self.qm
        try:
            if args is not None and not isinstance(args, dict):
                raise QMError(RC_BAD_ARGUMENT, "frame arguments must be a JSON object")
            a: dict[str, Any] = args or {}
            if op == OP_HELLO:
                self._hello(rid, a)
                return
            if not self.user:
                raise QMError(RC_NOT_AUTHORIZED, "not authenticated: the first frame must be HELLO")
            if op in ADMIN_OPS and not self.admin:
                raise QMError(
                    RC_NOT_AUTHORIZED,
                    f"{self.user} is not the queue manager's administrator and may not {_VERBS[op]}",
                )
            if op == OP_PUT:
                if a.get("noreply") and a.get("sync"):
                    self._deferred(a, tail, publication=False)
                    return
                self._put(rid, a, tail)
            elif op == OP_GET:
                if a.get("browse"):
                    out, cursor = qm.browse(self, a)
                    self.reply_messages(rid, out, {"cursor": cursor})
                    return
                if "ahead" in a:
                    self._read_ahead(rid, a)
                    return
                if "unread" in a:
                    self.reply(rid, {"returned": self._give_back_unread(a)})
                    return
                qm.get(self, rid, a)
            elif op == OP_COMMIT:
                self._commit(rid, a)
            elif op == OP_BACKOUT:
                notes = a.get("notes")
                if notes is not None and not (
                    isinstance(notes, dict) and all(isinstance(v, str) for v in notes.values())
                ):
                    raise QMError(RC_BAD_ARGUMENT, "backout notes must be an object of strings")
                qm.backout(self, notes)
                self.reply(rid)
            elif op == OP_PUBLISH:
                if a.get("noreply") and a.get("sync"):
                    self._deferred(a, tail, publication=True)
                    return
                self._publish(rid, a, tail)
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
                self.reply(rid, qm.inquire(qm.queue(a.get("name"))))
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
        except (TypeError, ValueError, KeyError, OverflowError, UnicodeDecodeError, struct.error) as exc:
            self.reply_error(rid, QMError(RC_BAD_ARGUMENT, f"bad request arguments: {exc}"))
        except Exception as exc:  # a defect must cost one request, never the queue manager
            logger.exception("request op %d failed", op)
            self.reply_error(rid, QMError(RC_UNEXPECTED_ERROR, f"unexpected error: {type(exc).__name__}"))

    def _read_ahead(self, rid: int, a: dict[str, Any]) -> None:
        """A get outside a unit of work that sends up to ``ahead`` non-persistent messages at once.

        The messages are gone from the queue when sent, as any get outside a unit of work; the
        client keeps them in a buffer and gives back the ones it did not consume when it closes
        normally (``unread``). A persistent message is never read ahead: it comes alone, on the
        path of an ordinary get, and so does a get that has to wait for its first message.
        """
        qm = self.qm
        ahead = a["ahead"]
        if type(ahead) is not int or ahead < 1:
            raise QMError(RC_BAD_ARGUMENT, "ahead must be a positive integer")
        if a.get("sync") or a.get("msg_id") is not None or a.get("correl_id") is not None:
            raise QMError(RC_BAD_ARGUMENT, "read-ahead is for gets outside a unit of work, not by id")
        q = qm.queue(a.get("q"))
        if q.attrs.get_inhibited:
            raise QMError(RC_GET_INHIBITED, f"get inhibited on queue {q.name}")
        self.lent.pop(q.name, None)
        taken: list[Any] = []
        limit = min(ahead, MAX_READ_AHEAD)
        while len(taken) < limit:
            m = qm.take(q, None, None)
            if m is None:
                break
            if m.persistent:
                q.restore(m)
                break
            taken.append(m)
        if not taken:
            # nothing non-persistent at the head: an ordinary get, which may wait
            qm.get(self, rid, {"q": q.name, "wait": a.get("wait", 0), "sync": False, "max": 1})
            return
        q.gets += len(taken)
        qm.stats["gets"] += len(taken)
        self.lent[q.name] = (q, taken)
        self.reply_messages(rid, [m.raw for m in taken])

    def _give_back_unread(self, a: dict[str, Any]) -> int:
        """Put the last ``unread`` messages of the queue's last read-ahead back in their places."""
        unread = a["unread"]
        if type(unread) is not int or unread < 0:
            raise QMError(RC_BAD_ARGUMENT, "unread must be a non-negative integer")
        try:
            current = self.qm.queue(a.get("q"))
        except QMError:
            return 0  # the queue was deleted since: its messages went with it
        q, taken = self.lent.pop(current.name, (None, []))
        if q is not current or not unread:
            return 0
        back = taken[-unread:]
        for m in back:
            q.restore(m)
        self.qm._serve_waiters(q)
        return len(back)

    def _put(self, rid: int, a: dict[str, Any], tail: bytes) -> None:
        qm = self.qm
        raws = split_messages(tail)
        done: list[Done] = []
        failed: list[Failed] = []
        ids, wait = qm.put(self, a.get("q"), raws, bool(a.get("sync")), done, failed)
        qm.stats["puts"] += len(raws)
        if a.get("noreply"):
            return
        if wait:
            done.append(lambda: self.reply(rid, None, b"".join(ids)))
            failed.append(lambda exc: self.reply_error(rid, exc))
        else:
            self.reply(rid, None, b"".join(ids))

    def _deferred(self, a: dict[str, Any], tail: bytes, *, publication: bool) -> None:
        """A put or publication under syncpoint whose sender does not wait for a reply: a refusal
        dooms the unit of work, whose commit then backs it out and says why."""
        qm = self.qm
        try:
            raws = split_messages(tail)
            if publication:
                if len(raws) != 1:
                    raise QMError(RC_BAD_ARGUMENT, "a publication carries exactly one message")
                qm.publish(
                    self, a.get("topic"), raws[0], bool(a.get("retain")), True, [], [], a.get("principal")
                )
            else:
                qm.put(self, a.get("q"), raws, True, [], [])
                qm.stats["puts"] += len(raws)
        except QMError as exc:
            if self.uow.failed is None:
                self.uow.failed = exc
        except (TypeError, ValueError, KeyError, OverflowError, UnicodeDecodeError, struct.error) as exc:
            if self.uow.failed is None:
                self.uow.failed = QMError(RC_BAD_ARGUMENT, f"bad request arguments: {exc}")

    def _commit(self, rid: int, a: dict[str, Any]) -> None:
        qm = self.qm
        refused = self.uow.failed
        if refused is not None:
            qm.backout(self)
            raise QMError(
                RC_BACKED_OUT,
                f"unit of work backed out: a put was refused: {refused.reason_code} {refused.reason}",
            )
        then_get = a.get("get")
        if then_get is None:
            if qm.commit(self, lambda: self.reply(rid), lambda exc: self.reply_error(rid, exc)):
                self.reply(rid)
            return
        # commit, then get the next batch for the same reply: one round trip per batch for a
        # flow thread; the get runs once the commit is durable, and not at all if it failed
        if not isinstance(then_get, dict):
            raise QMError(RC_BAD_ARGUMENT, "get after commit takes the arguments of a get")
        if qm.commit(
            self, lambda: self._get_after_commit(rid, then_get), lambda exc: self.reply_error(rid, exc)
        ):
            self._get_after_commit(rid, then_get)

    def _get_after_commit(self, rid: int, args: dict[str, Any]) -> None:
        if self.closed:
            return
        try:
            self.qm.get(self, rid, args)
        except QMError as exc:
            self.reply_error(rid, exc)
        except (TypeError, ValueError, KeyError, OverflowError) as exc:
            self.reply_error(rid, QMError(RC_BAD_ARGUMENT, f"bad request arguments: {exc}"))

    def _publish(self, rid: int, a: dict[str, Any], tail: bytes) -> None:
        raws = split_messages(tail)
        if len(raws) != 1:
            raise QMError(RC_BAD_ARGUMENT, "a publication carries exactly one message")
        result: dict[str, int] = {}
        done: list[Done] = [lambda: self.reply(rid, result)]
        failed: list[Failed] = [lambda exc: self.reply_error(rid, exc)]
        n, wait = self.qm.publish(
            self,
            a.get("topic"),
            raws[0],
            bool(a.get("retain")),
            bool(a.get("sync")),
            done,
            failed,
            a.get("principal"),
        )
        result["deliveries"] = n
        if not wait:
            self.reply(rid, result)


_VERBS = {
    OP_DEFINE: "define queues",
    OP_ALTER: "alter queues",
    OP_DELETE: "delete queues",
    OP_PURGE: "purge queues",
    OP_ADMIN: "run administrative actions",
}


def _attrs(a: dict[str, Any]) -> dict[str, Any]:
    attrs = a.get("attrs") or {}
    if not isinstance(attrs, dict):
        raise QMError(RC_BAD_ARGUMENT, "attrs must be an object")
    return attrs
