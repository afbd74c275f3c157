"""Client library of the queue manager: a blocking ``Client`` and an asyncio ``AsyncClient``.

Both speak the framed protocol of :mod:`flowbroker.qm.protocol` over TCP or a Unix socket. The
asyncio client pipelines: ``put_async`` sends without waiting for each reply (seed 002's
asynchronous put) and ``get`` reads ahead a batch of messages when no unit of work is open.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import itertools
import json
import logging
import os
import socket
from collections import deque
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

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
    OP_SUBSCRIBE,
    OP_UNSUBSCRIBE,
    RC_CONNECTION_BROKEN,
    RC_NOT_AUTHORIZED,
    ZERO_ID,
    FrameDecoder,
    FrameError,
    IdFactory,
    Message,
    MessageDescriptor,
    QMError,
    decode_message,
    encode_frame,
    encode_message,
    encoded_arguments,
    frame_with,
    no_delay,
    pad_id,
    split_messages,
)

logger = logging.getLogger("flowbroker.qm.client")

#: Asynchronous puts number their frames from here up (the 32-bit request id's upper half).
_ASYNC_RID_BASE = 1 << 31
_RID_MAX = (1 << 32) - 1
#: How many of the last asynchronous puts' queues are remembered to name one that is refused.
_ASYNC_NAMES = 4096
#: How many queues' put arguments a connection keeps encoded (a flow puts to a few).
_PUT_ARGUMENTS = 256

__all__ = ["AsyncClient", "Client", "Message", "MessageDescriptor", "QMError", "resolve_address"]


def resolve_address(
    url: str | None, data_dir: str | None, user: str | None, password: str | None
) -> tuple[tuple[str, int] | str, str, str]:
    """((host, port) or unix path, user, password) from a URL or the data directory's qm.json."""
    url = url or (None if data_dir else os.environ.get("FLOWBROKER_QM"))
    if url:
        u = urlparse(url)
        if u.scheme == "unix":
            address: tuple[str, int] | str = unquote(u.path)
        elif u.scheme in ("fbqm", "tcp"):
            if not u.hostname:
                raise QMError(RC_CONNECTION_BROKEN, f"queue manager URL {url!r} names no host")
            address = (u.hostname, u.port or 1414)
        else:
            raise QMError(
                RC_CONNECTION_BROKEN, f"queue manager URL {url!r}: scheme must be fbqm:// or unix://"
            )
        user = user or (unquote(u.username) if u.username else None)
        password = password or (unquote(u.password) if u.password else None)
        if user is None or password is None:
            info = _read_info(data_dir or os.environ.get("FLOWBROKER_DATA") or "./var", required=False)
            user = user or info.get("user")
            password = password or info.get("password")
        if not user or not password:
            raise QMError(RC_NOT_AUTHORIZED, f"no credentials for {url!r}: give user:password in the URL")
        return address, user, password
    info = _read_info(data_dir or os.environ.get("FLOWBROKER_DATA") or "./var", required=True)
    return (str(info["host"]), int(info["port"])), user or info["user"], password or info["password"]


def _local_socket(data_dir: str | None) -> str | None:
    """The Unix socket the queue manager of ``data_dir`` listens on, when it exists."""
    info = _read_info(data_dir or os.environ.get("FLOWBROKER_DATA") or "./var", required=False)
    path = info.get("unix_socket")
    return path if isinstance(path, str) and path and Path(path).exists() else None


def _open(address: tuple[str, int] | str, timeout: float) -> socket.socket:
    if isinstance(address, str):
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.settimeout(timeout)
            sock.connect(address)
        except OSError:
            sock.close()
            raise
        return sock
    sock = socket.create_connection(address, timeout=timeout)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock


def _read_info(data_dir: str, *, required: bool) -> dict[str, Any]:
    path = Path(data_dir) / "qm.json"
    try:
        info = json.loads(path.read_text())
        if not isinstance(info, dict):
            raise ValueError("not an object")
        return info
    except FileNotFoundError:
        if required:
            raise QMError(RC_CONNECTION_BROKEN, f"{path} not found: is the queue manager running?") from None
    except (ValueError, OSError) as exc:
        if required:
            raise QMError(RC_CONNECTION_BROKEN, f"{path} is unreadable: {exc}") from None
    return {}


_DEFAULT_MD = MessageDescriptor()

#: One receive takes at most this much: replies are small, batches of messages rarely larger.
_RECV_SIZE = 256 * 1024


def _fill_md(md: MessageDescriptor | None, ids: IdFactory) -> MessageDescriptor:
    # A copy: one descriptor object is often reused for many puts, each needing its own msgId.
    if md is None:
        return MessageDescriptor(msg_id=ids.next())
    if md.msg_id == b"\x00" * 24 or not md.msg_id:
        return dataclasses.replace(md, msg_id=ids.next())
    return md


def _encode_batch(
    bodies: list[bytes], md: MessageDescriptor | None, properties: dict[str, Any] | None, ids: IdFactory
) -> bytes:
    """Messages sharing one descriptor: encoded once, then only the msgId differs."""
    base = md or MessageDescriptor()
    parts: list[bytes] = []
    last_body: bytes | None = None
    template = b""
    for body in bodies:
        if body is not last_body:
            template = encode_message(base, properties, body)
            last_body = body
        parts.append(ids.next())
        parts.append(template[24:])
    return b"".join(parts)


def _id_hex(value: bytes | str | None) -> str | None:
    return None if value is None else pad_id(value).hex()


def _subscribe_request(
    topic: str,
    queue: str,
    name: str | None,
    correl_id: bytes | str | None,
    filter: str | None,
    durable: bool,
    principal: str | None,
) -> dict[str, Any]:
    """The SUBSCRIBE request both clients send (``principal`` only when one is named)."""
    request: dict[str, Any] = {
        "topic": topic,
        "queue": queue,
        "name": name,
        "correl_id": _id_hex(correl_id),
        "filter": filter,
        "durable": durable,
    }
    if principal:
        request["principal"] = principal
    return request


def _raise_error(args: Any) -> QMError:
    if isinstance(args, dict):
        return QMError(int(args.get("rc", RC_CONNECTION_BROKEN)), str(args.get("reason", "")))
    return QMError(RC_CONNECTION_BROKEN, "malformed error reply")


#: Bytes of encoded messages consecutive deferred puts to one queue send in one frame at most (a
#: larger message goes in a frame of its own, as always).
MERGED_PUT_BYTES = 64 * 1024


class Client:
    """A blocking connection to the queue manager; one request at a time, replies in order.

    Puts under syncpoint may be deferred (:meth:`put_deferred`): they wait in an outbox and
    leave in the same write as the next request, usually the commit, so a unit of work of N
    puts costs one round trip instead of N + 1.
    """

    def __init__(self, sock: socket.socket, user: str, password: str) -> None:
        self._sock = sock
        self._decoder = FrameDecoder()
        self._rids = itertools.count(1)
        self._ready: dict[int, tuple[int, Any, bytes]] = {}
        self._discard: set[int] = set()  # replies nobody waits for any more
        self._ids = IdFactory()
        self._outbox: list[bytes] = []
        #: Deferred puts of encoded messages to one queue not yet framed: consecutive ones go out
        #: in one frame (see :meth:`put_encoded`); framed into the outbox before anything else.
        self._open_put: tuple[str, list[bytes]] | None = None
        self._open_put_bytes = 0
        # per queue, the encoded arguments of a deferred put to it and of an asynchronous one
        self._deferred_put_args: dict[str, bytes] = {}
        self._async_put_args: dict[str, bytes] = {}
        self._reply_templates: dict[str, MessageDescriptor] = {}
        self._inbuf = bytearray(_RECV_SIZE)
        # read-ahead: per queue, the non-persistent messages a get sent ahead and nobody consumed yet
        self._ahead: dict[str, deque[Message]] = {}
        # asynchronous puts take their request ids from a range of their own, so a refusal the
        # queue manager sends back later is known as one without remembering every put
        self._async_rids = itertools.count(_ASYNC_RID_BASE)
        self._async_queues: dict[int, str] = {}  # the last puts' queues, to name a refused one
        self._async_error: QMError | None = None
        self.async_puts = 0
        self.async_put_failures = 0
        self.user = user
        self._call(OP_HELLO, {"user": user, "password": password})

    @classmethod
    def connect(
        cls,
        url: str | None = None,
        *,
        data_dir: str | None = None,
        user: str | None = None,
        password: str | None = None,
        timeout: float = 10.0,
    ) -> Client:
        address, user, password = resolve_address(url, data_dir, user, password)
        # a queue manager found through its data directory is on this machine: its Unix socket
        # costs less per request than loopback TCP, which stays the fallback
        local = (
            _local_socket(data_dir) if not url and (data_dir or not os.environ.get("FLOWBROKER_QM")) else None
        )
        sock = None
        if local is not None:
            with contextlib.suppress(OSError):
                sock = _open(local, timeout)
        if sock is None:
            try:
                sock = _open(address, timeout)
            except OSError as exc:
                raise QMError(
                    RC_CONNECTION_BROKEN, f"cannot reach the queue manager at {address}: {exc}"
                ) from None
        sock.settimeout(None)
        try:
            return cls(sock, user, password)
        except BaseException:
            sock.close()
            raise

    # --- transport --------------------------------------------------------------------------
    def _send(self, op: int, args: Any = None, tail: bytes = b"") -> int:
        if self._open_put is not None:
            self._frame_open_put()  # the deferred puts kept so far go first, with the lower ids
        rid = next(self._rids)
        self._write(encode_frame(op, rid, args, tail))
        return rid

    def _write(self, frame: bytes) -> None:
        """Send one frame; deferred puts go first, in the same write, so the server sees them in order."""
        if self._open_put is not None:
            self._frame_open_put()
        if self._outbox:
            self._outbox.append(frame)
            frame = b"".join(self._outbox)
            self._outbox = []
        try:
            self._sock.sendall(frame)
        except OSError as exc:
            raise self._lost(exc) from None

    def _lost(self, exc: OSError) -> QMError:
        """Why the connection broke: the queue manager's last word, when it said why before closing
        (a refusal outside any request, e.g. an oversized frame), else the socket's error."""
        try:
            while True:
                data = self._sock.recv(65536, socket.MSG_DONTWAIT)
                if not data:
                    break
                for op, frid, args, _tail in self._decoder.feed(data):
                    if frid == 0 and op == OP_REPLY_ERR:
                        return _raise_error(args)
        except (OSError, FrameError):
            pass
        return QMError(RC_CONNECTION_BROKEN, f"connection to the queue manager lost: {exc}")

    def _wait(self, rid: int) -> tuple[Any, bytes]:
        view = memoryview(self._inbuf)
        while rid not in self._ready:
            try:
                n = self._sock.recv_into(self._inbuf)
            except OSError as exc:
                raise self._lost(exc) from None
            if not n:
                raise QMError(RC_CONNECTION_BROKEN, "the queue manager closed the connection")
            try:
                frames = self._decoder.feed(view[:n])
            except FrameError as exc:
                raise QMError(RC_CONNECTION_BROKEN, f"bad frame from the queue manager: {exc}") from None
            for op, frid, args, tail in frames:
                if frid == 0 and op == OP_REPLY_ERR:
                    raise _raise_error(args)
                if frid >= _ASYNC_RID_BASE:
                    self._async_failed(frid, args)
                    continue
                if frid in self._discard:
                    self._discard.discard(frid)
                    continue
                self._ready[frid] = (op, args, tail)
        op, args, tail = self._ready.pop(rid)
        if op == OP_REPLY_ERR:
            raise _raise_error(args)
        return args, tail

    def _call(self, op: int, args: Any = None, tail: bytes = b"") -> tuple[Any, bytes]:
        if self._async_error is not None:
            self._raise_async_error()
        return self._wait(self._send(op, args, tail))

    # --- asynchronous puts (MQPMO_ASYNC_RESPONSE) ---------------------------------------------
    def put_async(self, queue: str, encoded: bytes) -> None:
        """Put a message outside a unit of work without waiting for the queue manager's answer.

        Only a refusal is answered. It is logged and counted (``async_put_failures``) when it
        arrives, and the next request that waits for a reply raises it instead of being sent (as
        MQ's MQSTAT reports an asynchronous put's failure later), so it is never silent.
        :meth:`async_status` asks the queue manager to answer everything sent before it first.
        """
        rid = next(self._async_rids)
        if rid > _RID_MAX:
            self._async_rids = itertools.count(_ASYNC_RID_BASE)
            rid = next(self._async_rids)
        queues = self._async_queues
        queues[rid] = queue
        if len(queues) > _ASYNC_NAMES:
            del queues[next(iter(queues))]
        arguments = self._async_put_args.get(queue)
        if arguments is None:
            if len(self._async_put_args) >= _PUT_ARGUMENTS:
                self._async_put_args.clear()
            arguments = self._async_put_args[queue] = encoded_arguments({"q": queue, "noreply": True})
        self._write(frame_with(OP_PUT, rid, arguments, encoded))
        self.async_puts += 1

    def put_nowait(
        self,
        queue: str,
        body: bytes,
        md: MessageDescriptor | None = None,
        *,
        properties: dict[str, Any] | None = None,
    ) -> bytes:
        """:meth:`put_async` of a message made of its parts; returns its message id."""
        if md is None:
            md = _DEFAULT_MD
        msg_id = pad_id(md.msg_id) if md.msg_id and md.msg_id != ZERO_ID else self._ids.next()
        self.put_async(queue, encode_message(md, properties, body, msg_id))
        return msg_id

    def _async_failed(self, rid: int, args: Any) -> None:
        error = _raise_error(args)
        queue = self._async_queues.pop(rid, "?")
        self.async_put_failures += 1
        logger.warning("an asynchronous put to %s failed: %s", queue, error)
        if self._async_error is None:
            self._async_error = QMError(
                error.reason_code, f"an earlier asynchronous put to {queue} failed: {error.reason}"
            )

    def _raise_async_error(self) -> None:
        error, self._async_error = self._async_error, None
        if error is not None:
            raise error

    def async_status(self) -> dict[str, int]:
        """As MQ's MQSTAT: the asynchronous puts so far and how many were refused, once the queue
        manager has answered every request sent before; raises the first refusal not yet raised."""
        self._wait(self._send(OP_PING))
        self._raise_async_error()
        return {"puts": self.async_puts, "failed": self.async_put_failures}

    # --- read-ahead (MQOO_READ_AHEAD) ---------------------------------------------------------
    def get_ahead(self, queue: str, max_messages: int, read_ahead: int, *, wait: float = 0) -> list[Message]:
        """Up to ``max_messages`` messages got outside a unit of work, with up to ``read_ahead``
        non-persistent messages sent ahead at once and kept here for the next calls.

        A persistent message is never read ahead: it comes alone, as an ordinary get brings it.
        :meth:`close` gives the messages not consumed yet back to their queues.
        """
        buffered = self._ahead.get(queue)
        if not buffered:
            if self._async_error is not None:
                self._raise_async_error()
            args = {"q": queue, "wait": wait, "ahead": max(read_ahead, max_messages, 1)}
            _, tail = self._wait(self._send(OP_GET, args))
            raws = split_messages(tail)
            if len(raws) <= max_messages:
                return [decode_message(raw) for raw in raws]
            buffered = self._ahead[queue] = deque(decode_message(raw) for raw in raws)
        n = min(max_messages, len(buffered))
        return [buffered.popleft() for _ in range(n)]

    def read_ahead_count(self, queue: str) -> int:
        """How many messages of ``queue`` were read ahead and not consumed yet."""
        return len(self._ahead.get(queue) or ())

    def _give_back_read_ahead(self) -> None:
        for queue, buffered in list(self._ahead.items()):
            if buffered:
                self._wait(self._send(OP_GET, {"q": queue, "unread": len(buffered)}))
        self._ahead.clear()

    # --- messaging --------------------------------------------------------------------------
    def put(
        self,
        queue: str,
        body: bytes,
        md: MessageDescriptor | None = None,
        *,
        syncpoint: bool = False,
        properties: dict[str, Any] | None = None,
    ) -> bytes:
        md = _fill_md(md, self._ids)
        _, tail = self._call(OP_PUT, {"q": queue, "sync": syncpoint}, encode_message(md, properties, body))
        return tail[:24]

    def put_encoded(
        self, queue: str, encoded: bytes, *, syncpoint: bool = False, deferred: bool = False
    ) -> None:
        """Put a message already in its wire form (:func:`~flowbroker.qm.protocol.relay_encoding`);
        ``deferred`` (under syncpoint only) as :meth:`put_deferred`, else one round trip."""
        if deferred and syncpoint:
            # one frame for consecutive deferred puts to the same queue, up to MERGED_PUT_BYTES: the
            # queue manager stages each as it would alone, and a refusal of any dooms the unit of
            # work as one would
            open_put = self._open_put
            size = len(encoded)
            if open_put is not None:
                if open_put[0] == queue and self._open_put_bytes + size <= MERGED_PUT_BYTES:
                    open_put[1].append(encoded)
                    self._open_put_bytes += size
                    return
                self._frame_open_put()
            self._open_put = (queue, [encoded])
            self._open_put_bytes = size
            return
        self._call(OP_PUT, {"q": queue, "sync": syncpoint}, encoded)

    def _frame_open_put(self) -> None:
        """Frame the deferred puts :meth:`put_encoded` kept together into the outbox."""
        open_put = self._open_put
        if open_put is None:
            return
        self._open_put = None
        queue, messages = open_put
        tail = messages[0] if len(messages) == 1 else b"".join(messages)
        self._outbox.append(frame_with(OP_PUT, next(self._rids), self._deferred_put(queue), tail))

    def put_deferred(
        self,
        queue: str,
        body: bytes,
        md: MessageDescriptor | None = None,
        *,
        properties: dict[str, Any] | None = None,
    ) -> bytes:
        """Put under syncpoint without a round trip: the frame leaves with the next request.

        The queue manager sends no reply for it; if it refuses the put, the unit of work can no
        longer commit, and :meth:`commit` backs it out and raises ``RC_BACKED_OUT`` with the
        refusal's reason — so the unit of work still commits or backs out as a whole.
        Returns the message id.
        """
        if md is None:
            md = _DEFAULT_MD
        msg_id = pad_id(md.msg_id) if md.msg_id and md.msg_id != ZERO_ID else self._ids.next()
        self._frame_open_put()  # the deferred puts kept so far go first, with the lower ids
        self._outbox.append(
            frame_with(
                OP_PUT,
                next(self._rids),
                self._deferred_put(queue),
                encode_message(md, properties, body, msg_id),
            )
        )
        return msg_id

    def _deferred_put(self, queue: str) -> bytes:
        """The encoded arguments of a deferred put to ``queue``."""
        arguments = self._deferred_put_args.get(queue)
        if arguments is None:
            if len(self._deferred_put_args) >= _PUT_ARGUMENTS:
                self._deferred_put_args.clear()
            arguments = encoded_arguments({"q": queue, "sync": True, "noreply": True})
            self._deferred_put_args[queue] = arguments
        return arguments

    def publish_deferred(
        self,
        topic: str,
        body: bytes,
        md: MessageDescriptor | None = None,
        *,
        properties: dict[str, Any] | None = None,
        principal: str | None = None,
    ) -> bytes:
        """Publish under syncpoint without a round trip, as :meth:`put_deferred` puts; ``principal``:
        the user the topic ACLs judge (the administrator's alternate user)."""
        args: dict[str, Any] = {"topic": topic, "sync": True, "noreply": True}
        if principal:
            args["principal"] = principal
        return self._defer(OP_PUBLISH, args, body, md, properties)

    def _defer(
        self,
        op: int,
        args: dict[str, Any],
        body: bytes,
        md: MessageDescriptor | None,
        properties: dict[str, Any] | None,
    ) -> bytes:
        if md is None:
            md = _DEFAULT_MD
        msg_id = pad_id(md.msg_id) if md.msg_id and md.msg_id != ZERO_ID else self._ids.next()
        self._frame_open_put()  # the deferred puts kept so far go first, with the lower ids
        self._outbox.append(
            encode_frame(op, next(self._rids), args, encode_message(md, properties, body, msg_id))
        )
        return msg_id

    def put_many(
        self,
        queue: str,
        bodies: list[bytes],
        md: MessageDescriptor | None = None,
        *,
        syncpoint: bool = False,
    ) -> list[bytes]:
        """Put several messages in one frame (one round trip, one log record when persistent)."""
        _, tail = self._call(
            OP_PUT, {"q": queue, "sync": syncpoint}, _encode_batch(bodies, md, None, self._ids)
        )
        return [tail[i : i + 24] for i in range(0, len(tail), 24)]

    def request(
        self,
        queue: str,
        body: bytes,
        reply_to_q: str,
        *,
        wait: float = 30,
        md: MessageDescriptor | None = None,
    ) -> Message | None:
        """Put a request and wait for its reply (correlId = the request's msgId) in one round trip.

        Both frames leave in one write: the msgId is chosen here, so the get need not wait for
        the put's reply before it can name the correlId it matches.
        """
        if md is None:
            # one template descriptor per reply queue: no copy per request
            base = self._reply_templates.get(reply_to_q)
            if base is None:
                base = self._reply_templates[reply_to_q] = MessageDescriptor(reply_to_q=reply_to_q)
            msg_id = self._ids.next()
        else:
            base = md if md.reply_to_q == reply_to_q else dataclasses.replace(md, reply_to_q=reply_to_q)
            msg_id = pad_id(md.msg_id) if md.msg_id and md.msg_id != ZERO_ID else self._ids.next()
        self._frame_open_put()  # the deferred puts kept so far go first, with the lower ids
        self._outbox.append(
            encode_frame(
                OP_PUT, put_rid := next(self._rids), {"q": queue}, encode_message(base, None, body, msg_id)
            )
        )
        get_args = {"q": reply_to_q, "wait": wait, "correl_id": msg_id.hex()}
        get_rid = self._send(OP_GET, get_args)
        try:
            self._wait(put_rid)
        except QMError:
            self._ready.pop(get_rid, None)
            self._discard.add(get_rid)
            raise
        _, tail = self._wait(get_rid)
        raws = split_messages(tail)
        return decode_message(raws[0]) if raws else None

    def get(
        self,
        queue: str,
        *,
        wait: float = 0,
        syncpoint: bool = False,
        msg_id: bytes | str | None = None,
        correl_id: bytes | str | None = None,
        browse_cursor: int | None = None,
    ) -> Message | None:
        if browse_cursor is not None:
            msgs, _ = self.browse_next(queue, browse_cursor)
            return msgs[0] if msgs else None
        msgs = self.get_many(queue, 1, wait=wait, syncpoint=syncpoint, msg_id=msg_id, correl_id=correl_id)
        return msgs[0] if msgs else None

    def get_many(
        self,
        queue: str,
        max_messages: int,
        *,
        wait: float = 0,
        syncpoint: bool = False,
        msg_id: bytes | str | None = None,
        correl_id: bytes | str | None = None,
    ) -> list[Message]:
        args: dict[str, Any] = {"q": queue, "wait": wait, "sync": syncpoint, "max": max_messages}
        if msg_id is not None:
            args["msg_id"] = _id_hex(msg_id)
        if correl_id is not None:
            args["correl_id"] = _id_hex(correl_id)
        _, tail = self._call(OP_GET, args)
        return [decode_message(raw) for raw in split_messages(tail)]

    def browse_next(self, queue: str, cursor: int = 0, max_messages: int = 1) -> tuple[list[Message], int]:
        """The next messages under a browse cursor (0 opens one); returns them and the cursor."""
        args, tail = self._call(OP_GET, {"q": queue, "browse": True, "cursor": cursor, "max": max_messages})
        return [decode_message(raw) for raw in split_messages(tail)], int(args["cursor"])

    def browse(self, queue: str, batch: int = 100) -> Iterator[Message]:
        msgs, cursor = self.browse_next(queue, 0, batch)
        try:
            while msgs:
                yield from msgs
                msgs, cursor = self.browse_next(queue, cursor, batch)
        finally:
            self._call(OP_BROWSE_CLOSE, {"cursor": cursor})

    def commit(self) -> None:
        self._call(OP_COMMIT)

    def commit_and_get(
        self, queue: str, max_messages: int, *, wait: float = 0, syncpoint: bool = True
    ) -> list[Message]:
        """Commit, then get up to ``max_messages`` in one round trip (nothing is got if the commit fails)."""
        get_args = {"q": queue, "wait": wait, "sync": syncpoint, "max": max_messages}
        _, tail = self._call(OP_COMMIT, {"get": get_args})
        return [decode_message(raw) for raw in split_messages(tail)]

    def backout(self, notes: dict[str, str] | None = None) -> None:
        """Back out; ``notes`` become properties of a message moved past its backout threshold."""
        self._outbox.clear()  # never sent: there is nothing of them to back out
        self._open_put = None
        self._call(OP_BACKOUT, {"notes": notes} if notes else None)

    # --- pub/sub ----------------------------------------------------------------------------
    def publish(
        self,
        topic: str,
        body: bytes,
        md: MessageDescriptor | None = None,
        *,
        syncpoint: bool = False,
        retain: bool = False,
        properties: dict[str, Any] | None = None,
        principal: str | None = None,
    ) -> int:
        md = _fill_md(md, self._ids)
        request: dict[str, Any] = {"topic": topic, "sync": syncpoint, "retain": retain}
        if principal:
            request["principal"] = principal
        args, _ = self._call(OP_PUBLISH, request, encode_message(md, properties, body))
        return int(args["deliveries"])

    def subscribe(
        self,
        topic: str,
        queue: str,
        *,
        name: str | None = None,
        correl_id: bytes | str | None = None,
        filter: str | None = None,
        durable: bool = True,
        principal: str | None = None,
    ) -> dict[str, Any]:
        request = _subscribe_request(topic, queue, name, correl_id, filter, durable, principal)
        args, _ = self._call(OP_SUBSCRIBE, request)
        return dict(args)

    def unsubscribe(self, name: str) -> None:
        self._call(OP_UNSUBSCRIBE, {"name": name})

    # --- administration ---------------------------------------------------------------------
    def define_queue(self, name: str, *, replace: bool = False, **attrs: Any) -> dict[str, Any]:
        args, _ = self._call(OP_DEFINE, {"name": name, "attrs": attrs, "replace": replace})
        return dict(args)

    def alter_queue(self, name: str, **attrs: Any) -> dict[str, Any]:
        args, _ = self._call(OP_ALTER, {"name": name, "attrs": attrs})
        return dict(args)

    def delete_queue(self, name: str, *, purge: bool = False) -> None:
        self._call(OP_DELETE, {"name": name, "purge": purge})

    def inquire_queue(self, name: str) -> dict[str, Any]:
        args, _ = self._call(OP_INQUIRE, {"name": name})
        return dict(args)

    def list_queues(self, pattern: str = "*") -> list[dict[str, Any]]:
        args, _ = self._call(OP_LIST, {"pattern": pattern})
        return list(args["queues"])

    def purge(self, name: str) -> int:
        args, _ = self._call(OP_PURGE, {"name": name})
        return int(args["purged"])

    def define_user(self, user: str, password: str) -> None:
        self._call(OP_ADMIN, {"action": "define_user", "user": user, "password": password})

    def set_topic_acl(
        self, topic: str, principal: str, *, publish: bool | None = None, subscribe: bool | None = None
    ) -> None:
        self._call(
            OP_ADMIN,
            {
                "action": "set_topic_acl",
                "topic": topic,
                "principal": principal,
                "publish": publish,
                "subscribe": subscribe,
            },
        )

    def replace_topic_acls(self, rules: list[dict[str, Any]]) -> int:
        """Make ``rules`` (topic, principal, publish, subscribe) the queue manager's whole ACL set."""
        reply, _ = self._call(OP_ADMIN, {"action": "replace_topic_acls", "rules": rules})
        return int(reply["rules"])

    def admin(self, action: str, **args: Any) -> dict[str, Any]:
        reply, _ = self._call(OP_ADMIN, {"action": action, **args})
        return dict(reply)

    def ping(self) -> None:
        self._call(OP_PING)

    def close(self) -> None:
        """Close; the messages read ahead and not consumed go back to their places in their queues
        first (a connection that ends without closing loses them, as MQ's read-ahead may)."""
        try:
            if any(self._ahead.values()):
                self._give_back_read_ahead()
        except QMError as exc:
            logger.warning("the messages read ahead could not be given back: %s", exc)
        finally:
            try:
                self._sock.close()
            except OSError:
                pass

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class _ReplyProtocol(asyncio.Protocol):
    """The transport side of an :class:`AsyncClient`: frames in, each reply handed to its future.

    Replies are matched in ``data_received`` itself, on the event loop's callback, with no reader
    task to wake in between: a requester's await resumes one step after its reply arrives.
    """

    def __init__(self, client: AsyncClient) -> None:
        self.client = client
        self.decoder = FrameDecoder()
        self.transport: asyncio.Transport | None = None
        self.paused = False
        self.resumed: list[asyncio.Future[None]] = []
        self.closed: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]  # uvloop's transports are not subclasses
        no_delay(transport)

    def data_received(self, data: bytes) -> None:
        client = self.client
        try:
            frames = self.decoder.feed(data)
        except FrameError as exc:
            self._break(QMError(RC_CONNECTION_BROKEN, f"connection to the queue manager lost: {exc}"))
            return
        pending = client._pending
        for op, rid, args, tail in frames:
            if rid == 0 and op == OP_REPLY_ERR:
                self._break(_raise_error(args))
                return
            fut = pending.pop(rid, None)
            if fut is None or fut.done():
                continue
            if op == OP_REPLY_ERR:
                fut.set_exception(_raise_error(args))
            else:
                fut.set_result((args, tail))

    def eof_received(self) -> bool:
        return False  # the transport closes itself; connection_lost tells the waiting requests

    def connection_lost(self, exc: Exception | None) -> None:
        if exc is not None:
            self.client._fail(QMError(RC_CONNECTION_BROKEN, f"connection to the queue manager lost: {exc}"))
        else:
            self.client._fail(QMError(RC_CONNECTION_BROKEN, "the queue manager closed the connection"))
        self.resume_writing()
        if not self.closed.done():
            self.closed.set_result(None)

    def _break(self, error: QMError) -> None:
        self.client._fail(error)
        if self.transport is not None:
            self.transport.close()

    def pause_writing(self) -> None:
        self.paused = True

    def resume_writing(self) -> None:
        self.paused = False
        waiters, self.resumed = self.resumed, []
        for waiter in waiters:
            if not waiter.done():
                waiter.set_result(None)

    async def drain(self) -> None:
        """Wait while the queue manager reads slower than requests are written."""
        while self.paused and self.client._broken is None:
            waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self.resumed.append(waiter)
            await waiter
        if self.client._broken is not None:
            raise self.client._broken


class AsyncClient:
    """An asyncio connection: every request pipelined, replies matched by request id."""

    def __init__(self) -> None:
        self._protocol: _ReplyProtocol | None = None
        self._transport: asyncio.Transport | None = None
        self._pending: dict[int, asyncio.Future[tuple[Any, bytes]]] = {}
        self._rids = itertools.count(1)
        self._ids = IdFactory()
        self._async_puts: deque[asyncio.Future[tuple[Any, bytes]]] = deque()
        self._read_ahead: dict[str, deque[Message]] = {}
        self._in_uow = False
        self._broken: QMError | None = None

    @classmethod
    async def connect(
        cls,
        url: str | None = None,
        *,
        data_dir: str | None = None,
        user: str | None = None,
        password: str | None = None,
    ) -> AsyncClient:
        address, user, password = resolve_address(url, data_dir, user, password)
        self = cls()
        loop = asyncio.get_running_loop()
        try:
            if isinstance(address, str):
                transport, protocol = await loop.create_unix_connection(lambda: _ReplyProtocol(self), address)
            else:
                transport, protocol = await loop.create_connection(
                    lambda: _ReplyProtocol(self), address[0], address[1]
                )
        except OSError as exc:
            raise QMError(
                RC_CONNECTION_BROKEN, f"cannot reach the queue manager at {address}: {exc}"
            ) from None
        self._transport, self._protocol = transport, protocol  # type: ignore[assignment]
        try:
            await self._call(OP_HELLO, {"user": user, "password": password})
        except QMError:
            await self.close()
            raise
        return self

    def _fail(self, error: QMError) -> None:
        """The connection is gone: every waiting request, and every later one, raises ``error``."""
        if self._broken is None:
            self._broken = error
        pending, self._pending = self._pending, {}
        for fut in pending.values():
            if not fut.done():
                fut.set_exception(self._broken)

    def _send(self, op: int, args: Any = None, tail: bytes = b"") -> asyncio.Future[tuple[Any, bytes]]:
        if self._broken is not None:
            raise self._broken
        assert self._transport is not None
        rid = next(self._rids)
        fut: asyncio.Future[tuple[Any, bytes]] = asyncio.get_running_loop().create_future()
        self._pending[rid] = fut
        self._transport.write(encode_frame(op, rid, args, tail))
        return fut

    def _send_together(
        self, requests: list[tuple[int, Any, bytes]]
    ) -> list[asyncio.Future[tuple[Any, bytes]]]:
        """Several requests in one write (one syscall, one segment), each with its own reply."""
        return [fut for _rid, fut in self._send_numbered(requests)]

    def _send_numbered(
        self, requests: list[tuple[int, Any, bytes]]
    ) -> list[tuple[int, asyncio.Future[tuple[Any, bytes]]]]:
        """:meth:`_send_together`, each future with its request id."""
        if self._broken is not None:
            raise self._broken
        assert self._transport is not None
        loop = asyncio.get_running_loop()
        sent: list[tuple[int, asyncio.Future[tuple[Any, bytes]]]] = []
        frames: list[bytes] = []
        for op, args, tail in requests:
            rid = next(self._rids)
            fut: asyncio.Future[tuple[Any, bytes]] = loop.create_future()
            self._pending[rid] = fut
            sent.append((rid, fut))
            frames.append(encode_frame(op, rid, args, tail))
        self._transport.write(b"".join(frames))
        return sent

    async def _drain(self) -> None:
        protocol = self._protocol
        if protocol is not None and protocol.paused:
            await protocol.drain()

    async def _call(self, op: int, args: Any = None, tail: bytes = b"") -> tuple[Any, bytes]:
        fut = self._send(op, args, tail)
        await self._drain()
        return await fut

    # --- messaging --------------------------------------------------------------------------
    async def put(
        self,
        queue: str,
        body: bytes,
        md: MessageDescriptor | None = None,
        *,
        syncpoint: bool = False,
        properties: dict[str, Any] | None = None,
    ) -> bytes:
        md = _fill_md(md, self._ids)
        if syncpoint:
            self._in_uow = True
        _, tail = await self._call(
            OP_PUT, {"q": queue, "sync": syncpoint}, encode_message(md, properties, body)
        )
        return tail[:24]

    async def put_then_get(
        self,
        queue: str,
        body: bytes,
        reply_queue: str,
        md: MessageDescriptor | None = None,
        *,
        wait: float = 0,
        correl_id: bytes | str | None = None,
        on_put: Callable[[], None] | None = None,
        asynchronous: bool = False,
    ) -> Message | None:
        """Put a request and get from ``reply_queue`` (by ``correl_id`` when given), both in one write.

        The queue manager handles them in order, so this is a put followed by a get-wait, as a
        requester does it, with one send instead of two. ``on_put`` runs when the put's reply
        arrives (a requester's put time). A refused put raises and its get is answered but ignored.

        ``asynchronous`` (a non-persistent request): the put asks for no reply (MQ's
        ``MQPMO_ASYNC_RESPONSE``), so the queue manager writes one reply per request instead of
        two; only a refusal is answered, and as it is written before the get's reply it is
        raised when the get is answered. ``on_put`` then runs once the put is sent, when an
        asynchronous MQPUT returns.
        """
        if md is None:
            md = _DEFAULT_MD
        msg_id = pad_id(md.msg_id) if md.msg_id and md.msg_id != ZERO_ID else self._ids.next()
        get_args: dict[str, Any] = {"q": reply_queue, "wait": wait, "max": 1}
        if correl_id is not None:
            get_args["correl_id"] = _id_hex(correl_id)
        put = (
            OP_PUT,
            {"q": queue, "noreply": True} if asynchronous else {"q": queue},
            encode_message(md, None, body, msg_id),
        )
        if asynchronous:
            return await self._put_async_then_get(put, get_args, on_put)
        put_fut, get_fut = self._send_together([put, (OP_GET, get_args, b"")])
        await self._drain()
        try:
            await put_fut
        except QMError:
            get_fut.cancel()
            raise
        if on_put is not None:
            on_put()
        _, tail = await get_fut
        raws = split_messages(tail)
        return decode_message(raws[0]) if raws else None

    async def _put_async_then_get(
        self,
        put: tuple[int, Any, bytes],
        get_args: dict[str, Any],
        on_put: Callable[[], None] | None,
    ) -> Message | None:
        (put_rid, put_fut), (_, get_fut) = self._send_numbered([put, (OP_GET, get_args, b"")])
        try:
            await self._drain()
            if on_put is not None:
                on_put()
            _, tail = await get_fut
        finally:
            # the queue manager answers a put that asked for no reply only to refuse it, and it
            # writes that before its answer to the get sent after the put: by now it is in, or none
            self._pending.pop(put_rid, None)
            refused = put_fut.exception() if put_fut.done() and not put_fut.cancelled() else None
            put_fut.cancel()
        if refused is not None:
            raise refused
        raws = split_messages(tail)
        return decode_message(raws[0]) if raws else None

    def put_async(
        self,
        queue: str,
        bodies: list[bytes] | bytes,
        md: MessageDescriptor | None = None,
        *,
        syncpoint: bool = False,
        properties: dict[str, Any] | None = None,
    ) -> None:
        """Send messages without waiting; ``flush()`` waits for them and raises the first refusal."""
        if isinstance(bodies, bytes | bytearray):
            bodies = [bytes(bodies)]
        if syncpoint:
            self._in_uow = True
        tail = _encode_batch(bodies, md, properties, self._ids)
        self._async_puts.append(self._send(OP_PUT, {"q": queue, "sync": syncpoint}, tail))

    async def flush(self) -> None:
        await self._drain()
        first: BaseException | None = None
        while self._async_puts:
            fut = self._async_puts.popleft()
            try:
                await fut
            except QMError as exc:
                first = first or exc
        if first is not None:
            raise first

    async def get(
        self,
        queue: str,
        *,
        wait: float = 0,
        syncpoint: bool = False,
        msg_id: bytes | str | None = None,
        correl_id: bytes | str | None = None,
        browse_cursor: int | None = None,
        read_ahead: int = 0,
    ) -> Message | None:
        """One message; with ``read_ahead`` (outside a unit of work) later gets come from a local batch.

        As with MQ's read-ahead, the batch leaves the queue when it is fetched: messages still
        buffered when the application ends are gone, so use it for non-persistent traffic.
        """
        if browse_cursor is not None:
            args, tail = await self._call(OP_GET, {"q": queue, "browse": True, "cursor": browse_cursor})
            raws = split_messages(tail)
            return decode_message(raws[0]) if raws else None
        plain = msg_id is None and correl_id is None and not syncpoint
        buffered = self._read_ahead.get(queue)
        if plain and buffered:
            return buffered.popleft()
        msgs = await self.get_many(
            queue,
            max(1, read_ahead) if plain else 1,
            wait=wait,
            syncpoint=syncpoint,
            msg_id=msg_id,
            correl_id=correl_id,
        )
        if not msgs:
            return None
        if len(msgs) > 1:
            self._read_ahead.setdefault(queue, deque()).extend(msgs[1:])
        return msgs[0]

    async def get_many(
        self,
        queue: str,
        max_messages: int,
        *,
        wait: float = 0,
        syncpoint: bool = False,
        msg_id: bytes | str | None = None,
        correl_id: bytes | str | None = None,
    ) -> list[Message]:
        args: dict[str, Any] = {"q": queue, "wait": wait, "sync": syncpoint, "max": max_messages}
        if msg_id is not None:
            args["msg_id"] = _id_hex(msg_id)
        if correl_id is not None:
            args["correl_id"] = _id_hex(correl_id)
        if syncpoint:
            self._in_uow = True
        _, tail = await self._call(OP_GET, args)
        return [decode_message(raw) for raw in split_messages(tail)]

    async def get_raw_many(
        self, queue: str, max_messages: int, *, wait: float = 0, syncpoint: bool = False
    ) -> list[bytes]:
        """Encoded messages, undecoded: for relays and measurements that need no descriptor."""
        _, tail = await self._call(OP_GET, {"q": queue, "wait": wait, "sync": syncpoint, "max": max_messages})
        return split_messages(tail)

    async def commit(self) -> None:
        await self.flush()
        self._in_uow = False
        await self._call(OP_COMMIT)

    async def backout(self) -> None:
        try:
            await self.flush()
        finally:
            self._in_uow = False
            await self._call(OP_BACKOUT)

    async def publish(
        self,
        topic: str,
        body: bytes,
        md: MessageDescriptor | None = None,
        *,
        syncpoint: bool = False,
        retain: bool = False,
        properties: dict[str, Any] | None = None,
        principal: str | None = None,
    ) -> int:
        md = _fill_md(md, self._ids)
        request: dict[str, Any] = {"topic": topic, "sync": syncpoint, "retain": retain}
        if principal:
            request["principal"] = principal
        args, _ = await self._call(OP_PUBLISH, request, encode_message(md, properties, body))
        return int(args["deliveries"])

    async def subscribe(
        self,
        topic: str,
        queue: str,
        *,
        name: str | None = None,
        correl_id: bytes | str | None = None,
        filter: str | None = None,
        durable: bool = True,
        principal: str | None = None,
    ) -> dict[str, Any]:
        request = _subscribe_request(topic, queue, name, correl_id, filter, durable, principal)
        args, _ = await self._call(OP_SUBSCRIBE, request)
        return dict(args)

    async def unsubscribe(self, name: str) -> None:
        await self._call(OP_UNSUBSCRIBE, {"name": name})

    async def define_queue(self, name: str, *, replace: bool = False, **attrs: Any) -> dict[str, Any]:
        args, _ = await self._call(OP_DEFINE, {"name": name, "attrs": attrs, "replace": replace})
        return dict(args)

    async def alter_queue(self, name: str, **attrs: Any) -> dict[str, Any]:
        args, _ = await self._call(OP_ALTER, {"name": name, "attrs": attrs})
        return dict(args)

    async def delete_queue(self, name: str, *, purge: bool = False) -> None:
        await self._call(OP_DELETE, {"name": name, "purge": purge})

    async def inquire_queue(self, name: str) -> dict[str, Any]:
        args, _ = await self._call(OP_INQUIRE, {"name": name})
        return dict(args)

    async def list_queues(self, pattern: str = "*") -> list[dict[str, Any]]:
        args, _ = await self._call(OP_LIST, {"pattern": pattern})
        return list(args["queues"])

    async def purge(self, name: str) -> int:
        args, _ = await self._call(OP_PURGE, {"name": name})
        return int(args["purged"])

    async def browse(self, queue: str, batch: int = 100) -> list[Message]:
        args, tail = await self._call(OP_GET, {"q": queue, "browse": True, "cursor": 0, "max": batch})
        cursor = args["cursor"]
        out = [decode_message(r) for r in split_messages(tail)]
        while True:
            args, tail = await self._call(
                OP_GET, {"q": queue, "browse": True, "cursor": cursor, "max": batch}
            )
            raws = split_messages(tail)
            if not raws:
                break
            out.extend(decode_message(r) for r in raws)
        await self._call(OP_BROWSE_CLOSE, {"cursor": cursor})
        return out

    async def ping(self) -> None:
        await self._call(OP_PING)

    async def close(self) -> None:
        transport, protocol = self._transport, self._protocol
        if transport is None or protocol is None:
            return
        transport.close()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(protocol.closed), 2)

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()
