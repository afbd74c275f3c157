"""RabbitMQ as a flow thread's transport: AMQP 0-9-1 through pika's blocking connection.

A flow thread is synchronous, and so is pika's ``BlockingConnection``: no event loop, no thread
hop. How MQ's terms map onto RabbitMQ's:

- **Queues** are RabbitMQ queues reached through the default exchange. Queues this transport
  defines are quorum queues (durable, replicated) unless ``FLOWBROKER_AMQP_QUEUE_TYPE=classic``
  or a maximum priority is asked for (``x-max-priority``: classic queues only).
- **A unit of work** is manual acknowledgement: gets under syncpoint stay unacknowledged, puts
  under syncpoint are held by the transport; the commit publishes them (several in one AMQP
  transaction: one ``tx.commit`` round trip, answered once every queue has them) and only then
  acknowledges the messages got, with one ``basic.ack`` for the batch. A crash anywhere before
  the acknowledgement reaches the broker redelivers the input: nothing is lost, but outputs
  already published are sent again when the input is processed again (at least once). A backout
  drops the held puts and returns the input to its queue.
- **Read-ahead**: a consumer may hold twice its batch unacknowledged, so the next batch is on
  its way while this one is processed and committed. A backout hands the read-ahead of its
  queue back with the input; those messages keep their backout count.
- **The backout count** is the quorum queue's ``x-delivery-count`` (every earlier delivery,
  crashes included). A classic queue has none: its first backout returns the message to its
  place and is counted by the redelivered flag; from the second on, a backed-out message is put
  back on its queue with its count in ``x-flowbroker-backout-count`` and the original
  acknowledged (it goes to the back of the queue); a redelivery after a crash counts as one.
- **The descriptor** travels in the AMQP properties (message_id and correlation_id as the hex of
  the 24-byte ids, reply_to, priority, expiration, timestamp, delivery mode) and ``x-mq-*``
  headers for the fields AMQP has no property for; message properties are the other headers.
- **Wire work**: publishes are marshalled in one pass (:func:`_publish_frames`) and the
  consumers' deliveries decoded by the transport itself (:mod:`.amqp_codec`); pika keeps the
  connection, the channels and every other frame.
- **Topics**: a topic exchange (``FLOWBROKER_AMQP_TOPIC_EXCHANGE``, default ``flowbroker.topics``)
  with the MQ topic string mapped to a routing key (``/`` → ``.``, ``+`` → ``*``, ``#`` → ``#``).
"""

from __future__ import annotations

import os
import struct
import threading
import time
from collections import OrderedDict, deque
from typing import Any
from urllib.parse import quote, unquote, urlsplit

import pika
import pika.exceptions
from pika import data as pika_data
from pika.adapters.blocking_connection import BlockingChannel
from pika.spec import Basic, BasicProperties

from flowbroker.pubsub import rules as pubsub_rules
from flowbroker.pubsub.filters import Publication
from flowbroker.pubsub.topics import split_topic
from flowbroker.qm.protocol import QMError, encode_message
from flowbroker.runtime.transports import (
    DEAD_LETTER_QUEUE,
    RC_BACKED_OUT,
    RC_BAD_ARGUMENT,
    RC_CONNECTION_BROKEN,
    RC_NOT_AUTHORIZED,
    RC_UNKNOWN_OBJECT_NAME,
    IdFactory,
    Message,
    MessageDescriptor,
    TransportError,
    pad_id,
    redact,
)
from flowbroker.runtime.transports.amqp_codec import DeliveryReader

ZERO_ID = b"\x00" * 24
#: The header that counts a classic queue's backouts (quorum queues count deliveries themselves).
BACKOUT_HEADER = "x-flowbroker-backout-count"
_MQ = "x-mq-"


def queue_type() -> str:
    """``quorum`` (the default) or ``classic``: the kind of queue :meth:`AmqpTransport.define_queue` makes."""
    kind = os.environ.get("FLOWBROKER_AMQP_QUEUE_TYPE", "quorum").strip().lower()
    return kind if kind in ("quorum", "classic") else "quorum"


def topic_exchange() -> str:
    return (
        os.environ.get("FLOWBROKER_AMQP_TOPIC_EXCHANGE", "flowbroker.topics").strip() or "flowbroker.topics"
    )


def routing_key(topic: str) -> str:
    """An MQ topic string (or subscription pattern) as an AMQP topic routing key."""
    return ".".join("*" if level == "+" else level for level in topic.strip().strip("/").split("/"))


def topic_string(key: str) -> str:
    """The MQ topic string of a routing key (the reverse of :func:`routing_key`)."""
    return "/".join("+" if level == "*" else level for level in key.split("."))


# -- the descriptor in AMQP properties -----------------------------------------------------------


def _id_text(value: bytes) -> str | None:
    return None if value == ZERO_ID else value.hex()


def _id_bytes(text: str | None) -> bytes:
    if not text:
        return ZERO_ID
    if len(text) == 48:
        try:
            return bytes.fromhex(text)
        except ValueError:
            pass
    raw = text.encode()
    return raw[:24].ljust(24, b"\x00")  # an id set by an AMQP application: its first 24 bytes


def to_amqp(md: MessageDescriptor, properties: dict[str, Any] | None) -> BasicProperties:
    """AMQP properties carrying every descriptor field and the message properties."""
    headers: dict[str, Any] = {}
    floats = []
    for key, value in (properties or {}).items():
        if key.startswith("x-"):
            continue
        if isinstance(value, float):
            # AMQP tables have no binary float pika writes: carried as its exact text
            floats.append(key)
            value = repr(value)
        headers[key] = value
    if floats:
        headers["x-mq-floats"] = ",".join(floats)
    # a field gets a header only where the AMQP properties cannot say it (or a default is not it):
    # a header table is encoded and decoded field by field, the costliest part of a message
    headers["x-mq-put-time"] = repr(float(md.put_time))
    if md.persistence not in (0, 1):
        headers["x-mq-persistence"] = md.persistence
    if not (0 <= md.priority <= 9 or md.priority == -1):
        headers["x-mq-priority"] = md.priority
    if md.expiry <= 0 and md.expiry != -1:
        headers["x-mq-expiry"] = md.expiry
    if md.format:
        headers["x-mq-format"] = md.format
    if md.encoding != 546:
        headers["x-mq-encoding"] = md.encoding
    if md.coded_char_set_id != 1208:
        headers["x-mq-ccsid"] = md.coded_char_set_id
    if md.reply_to_q_mgr:
        headers["x-mq-reply-to-q-mgr"] = md.reply_to_q_mgr
    group = pad_id(md.group_id)
    if group != ZERO_ID:
        headers["x-mq-group-id"] = group.hex()
    return BasicProperties(
        message_id=pad_id(md.msg_id).hex(),
        correlation_id=_id_text(pad_id(md.correl_id)),
        reply_to=md.reply_to_q or None,
        # persistence 2 (as the queue says): RabbitMQ queues are durable, so persistent
        delivery_mode=1 if md.persistence == 0 else 2,
        priority=md.priority if 0 <= md.priority <= 9 else None,
        # MQ's expiry counts tenths of a second, AMQP's milliseconds
        expiration=str(md.expiry * 100) if md.expiry > 0 else None,
        timestamp=int(md.put_time) if md.put_time else None,
        headers=headers,
    )


# -- the same properties, encoded in one pass ----------------------------------------------------

_FLAG_HEADERS = 1 << 13
_FLAG_DELIVERY_MODE = 1 << 12
_FLAG_PRIORITY = 1 << 11
_FLAG_CORRELATION_ID = 1 << 10
_FLAG_REPLY_TO = 1 << 9
_FLAG_EXPIRATION = 1 << 8
_FLAG_MESSAGE_ID = 1 << 7
_FLAG_TIMESTAMP = 1 << 6
_U32 = struct.Struct(">I")
_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")
_U64 = struct.Struct(">Q")
_UNSET: Any = object()


def _key(name: str) -> bytes:
    raw = name.encode()
    return bytes((len(raw),)) + raw


_PUT_TIME = _key("x-mq-put-time") + b"S"
_FLOATS = _key("x-mq-floats")
_PERSISTENCE = _key("x-mq-persistence")
_PRIORITY = _key("x-mq-priority")
_EXPIRY = _key("x-mq-expiry")
_FORMAT = _key("x-mq-format")
_ENCODING = _key("x-mq-encoding")
_CCSID = _key("x-mq-ccsid")
_REPLY_TO_Q_MGR = _key("x-mq-reply-to-q-mgr")
_GROUP_ID = _key("x-mq-group-id") + b"S"
_ID_TEXT = b"\x30"  # the length octet of an id as a short string: 48 hex digits


class _Unusual(Exception):
    """A value :func:`encode_properties` leaves to pika's own encoding (which says what is wrong)."""


def _field(pieces: list[bytes], value: Any) -> None:
    """A table field's value as pika encodes it; the common types packed here."""
    kind = type(value)
    if kind is str:
        raw = value.encode()
        pieces += (b"S", _U32.pack(len(raw)), raw)
    elif kind is int and -0x80000000 <= value <= 0x7FFFFFFF:
        pieces += (b"I", _I32.pack(value))
    else:
        pika_data.encode_value(pieces, value)


def _short(value: Any) -> bytes:
    """A short string property as pika writes it (text only: other types are pika's)."""
    if type(value) is not str:
        raise _Unusual
    raw = value.encode()
    if len(raw) > 255:
        raise _Unusual
    return bytes((len(raw),)) + raw


def encode_properties(
    md: MessageDescriptor,
    properties: dict[str, Any] | None,
    *,
    msg_id: bytes | None = None,
    correl_id: bytes | None = None,
    persistence: int | None = None,
    format: str | None = None,
    put_time: float | None = None,
) -> bytes | None:
    """The bytes pika encodes ``to_amqp(md, properties)`` to (a content header's property flags and
    values), ``md``'s message id, correlation id, persistence, format and put time replaced by
    those given; None where pika must encode the properties itself (a value of a type or size
    this does not pack: pika's encoding says what is wrong with it, when it is sent).

    One pass of struct packing instead of a :class:`BasicProperties` and pika's encoding of it,
    the costliest part of a put when profiled; the tests compare the two field for field."""
    try:
        pieces: list[bytes] = [b"", b""]  # the flags and the table's size, filled in at the end
        if properties:
            floats = []
            for key, value in properties.items():
                if key.startswith("x-"):
                    continue
                if isinstance(value, float):
                    floats.append(key)
                    value = repr(value)
                pieces.append(_short(key))
                _field(pieces, value)
            if floats:
                pieces.append(_FLOATS)
                _field(pieces, ",".join(floats))
        if put_time is None:
            put_time = md.put_time
        stamp = repr(float(put_time)).encode()
        pieces += (_PUT_TIME, _U32.pack(len(stamp)), stamp)
        if persistence is None:
            persistence = md.persistence
        if persistence not in (0, 1):
            pieces.append(_PERSISTENCE)
            _field(pieces, persistence)
        priority = md.priority
        if not (0 <= priority <= 9 or priority == -1):
            pieces.append(_PRIORITY)
            _field(pieces, priority)
        expiry = md.expiry
        if expiry <= 0 and expiry != -1:
            pieces.append(_EXPIRY)
            _field(pieces, expiry)
        if format is None:
            format = md.format
        if format:
            pieces.append(_FORMAT)
            _field(pieces, format)
        if md.encoding != 546:
            pieces.append(_ENCODING)
            _field(pieces, md.encoding)
        if md.coded_char_set_id != 1208:
            pieces.append(_CCSID)
            _field(pieces, md.coded_char_set_id)
        if md.reply_to_q_mgr:
            pieces.append(_REPLY_TO_Q_MGR)
            _field(pieces, md.reply_to_q_mgr)
        group = pad_id(md.group_id)
        if group != ZERO_ID:
            pieces += (_GROUP_ID, b"\x00\x00\x000", group.hex().encode())
        pieces[1] = _U32.pack(sum(map(len, pieces)))
        flags = _FLAG_HEADERS | _FLAG_DELIVERY_MODE | _FLAG_MESSAGE_ID
        # persistence 2 (as the queue says): RabbitMQ queues are durable, so persistent
        pieces.append(b"\x01" if persistence == 0 else b"\x02")
        if 0 <= priority <= 9:
            if type(priority) is not int:
                raise _Unusual
            flags |= _FLAG_PRIORITY
            pieces.append(bytes((priority,)))
        correl = pad_id(md.correl_id if correl_id is None else correl_id)
        if correl != ZERO_ID:
            flags |= _FLAG_CORRELATION_ID
            pieces += (_ID_TEXT, correl.hex().encode())
        if md.reply_to_q:
            flags |= _FLAG_REPLY_TO
            pieces.append(_short(md.reply_to_q))
        if expiry > 0:
            # MQ's expiry counts tenths of a second, AMQP's milliseconds
            flags |= _FLAG_EXPIRATION
            pieces.append(_short(str(expiry * 100)))
        pieces += (_ID_TEXT, pad_id(md.msg_id if msg_id is None else msg_id).hex().encode())
        if put_time:
            flags |= _FLAG_TIMESTAMP
            pieces.append(_U64.pack(int(put_time)))
        pieces[0] = flags.to_bytes(2, "big")
        return b"".join(pieces)
    except Exception:
        return None


class EncodedProperties(BasicProperties):
    """AMQP properties encoded already (:func:`encode_properties`): a publish sends their bytes
    as they are, through this transport's marshalling or pika's."""

    __slots__ = ("data",)

    def __init__(self, data: bytes) -> None:  # the bytes only: no field is read back
        self.data = data

    def encode(self) -> list[bytes]:
        return [self.data]


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def from_amqp(
    props: BasicProperties, body: bytes, *, redelivered: bool = False, exchange: str = "", key: str = ""
) -> Message:
    """The message a delivery carries: its descriptor, properties and body.

    One pass over the headers: ``x-mq-*`` ones are descriptor fields, other ``x-`` ones the
    broker's or the transport's, the rest the message's properties (a name that is not text, as
    another AMQP application may send, is none of them)."""
    headers = props.headers or {}
    properties: dict[str, Any] = {}
    mq: dict[str, Any] = {}
    for name, value in headers.items():
        if type(name) is not str:
            continue
        if name[:2] != "x-":
            properties[name] = value
        elif name[:5] == _MQ and value is not None:
            mq[name[5:]] = value
    expiry_ms = props.expiration
    priority = props.priority
    timestamp = props.timestamp
    if mq:
        get = mq.get
        persistence = int(get("persistence", 0 if props.delivery_mode == 1 else 1))
        md = MessageDescriptor(
            msg_id=_id_bytes(props.message_id),
            correl_id=_id_bytes(props.correlation_id),
            persistence=persistence,
            priority=int(get("priority", priority if priority is not None else -1)),
            expiry=int(get("expiry", int(expiry_ms) // 100 if expiry_ms else -1)),
            reply_to_q=props.reply_to or "",
            reply_to_q_mgr=_text(get("reply-to-q-mgr", "")),
            format=_text(get("format", "")),
            encoding=int(get("encoding", 546)),
            coded_char_set_id=int(get("ccsid", 1208)),
            put_time=float(get("put-time", float(timestamp or 0))),
            backout_count=backout_count(headers, redelivered),
            group_id=_id_bytes(_text(get("group-id", "")) or None),
        )
        floats = mq.get("floats")
        if floats is not None:
            for name in _text(floats).split(","):
                if name in properties:
                    properties[name] = float(properties[name])
    else:
        md = MessageDescriptor(
            msg_id=_id_bytes(props.message_id),
            correl_id=_id_bytes(props.correlation_id),
            persistence=0 if props.delivery_mode == 1 else 1,
            priority=priority if priority is not None else -1,
            expiry=int(expiry_ms) // 100 if expiry_ms else -1,
            reply_to_q=props.reply_to or "",
            put_time=float(timestamp or 0),
            backout_count=backout_count(headers, redelivered),
        )
    if exchange and exchange == topic_exchange():
        properties["MQTopicString"] = topic_string(key)
    return Message(md, properties, body)


class _Requeued:
    """The backout counts of the messages this process returned to their queues, by queue and
    message id, taken when the message is delivered again.

    A quorum queue's ``x-delivery-count`` counts every return on RabbitMQ 3.x, including the
    read-ahead deliveries handed back unread behind a backout (which are no backout of theirs),
    and a broker whose count ignores requeues counts none: the count recorded here is what the
    message's next delivery reports, so a poison message always reaches its backout threshold and
    an innocent one is not pushed towards it. Bounded.
    """

    def __init__(self, most: int = 4096) -> None:
        self._lock = threading.Lock()
        self._counts: OrderedDict[tuple[str, str], int] = OrderedDict()
        self._most = most

    def __bool__(self) -> bool:
        return bool(self._counts)

    def raised(self, queue: str, message_id: str, count: int) -> None:
        with self._lock:
            self._counts[(queue, message_id)] = count
            self._counts.move_to_end((queue, message_id))
            while len(self._counts) > self._most:
                self._counts.popitem(last=False)

    def count(self, queue: str, message_id: str) -> int:
        with self._lock:
            return self._counts.get((queue, message_id), 0)

    def forget(self, queue: str, message_id: str) -> None:
        with self._lock:
            self._counts.pop((queue, message_id), None)

    def take(self, queue: str, message_id: str) -> int | None:
        with self._lock:
            return self._counts.pop((queue, message_id), None)


_REQUEUED = _Requeued()
#: Deliveries a consumer may hold unacknowledged, per message of its batch: the next batch is
#: already here when a commit acknowledges this one (no wait for the broker between batches).
PREFETCH_BATCHES = 2
MOST_PREFETCH = 2000


def backout_count(headers: dict[str, Any], redelivered: bool) -> int:
    """How often a delivered message was backed out (see the module docstring)."""
    count = headers.get("x-delivery-count")
    if count is not None:
        return int(count)
    counted = int(headers.get(BACKOUT_HEADER, 0) or 0)
    return max(counted, 1) if redelivered else counted


def _counted(queue: str, method: Basic.Deliver, props: BasicProperties) -> int:
    """The backout count of a delivery: what this process recorded when it returned the message
    (backed out, or handed back unread), else what its headers and redelivered flag say."""
    if method.redelivered and props.message_id and _REQUEUED:
        known = _REQUEUED.take(queue, props.message_id)
        if known is not None:
            return known
    return backout_count(dict(props.headers or {}), bool(method.redelivered))


# -- errors ----------------------------------------------------------------------------------------


def _refusal(exc: BaseException, what: str) -> TransportError:
    """A TransportError with an MQ reason code for a pika exception."""
    if isinstance(exc, pika.exceptions.ChannelClosedByBroker):
        code = {404: RC_UNKNOWN_OBJECT_NAME, 403: RC_NOT_AUTHORIZED, 406: RC_BAD_ARGUMENT}.get(
            exc.reply_code, RC_CONNECTION_BROKEN
        )
        return TransportError(code, f"RabbitMQ refused {what}: {exc.reply_code} {exc.reply_text}")
    if isinstance(exc, pika.exceptions.UnroutableError):
        return TransportError(RC_UNKNOWN_OBJECT_NAME, f"RabbitMQ could not route {what}: no such queue")
    if isinstance(exc, pika.exceptions.NackError):
        return TransportError(RC_BACKED_OUT, f"RabbitMQ did not accept {what} (negative confirm)")
    return TransportError(
        RC_CONNECTION_BROKEN, f"RabbitMQ connection lost during {what}: {exc or type(exc).__name__}"
    )


def _vhost_quoted(url: str) -> str:
    """The URL with its virtual host as one quoted path segment: ``amqp://h//`` names ``/`` (as
    Celery and kombu read it), where pika would read an empty name."""
    parts = urlsplit(url)
    if len(parts.path) <= 1:
        return url
    return parts._replace(path="/" + quote(unquote(parts.path[1:]), safe="")).geturl()


def _connect_error(url: str, exc: BaseException) -> TransportError:
    parts = urlsplit(url)
    where = f"{parts.hostname}:{parts.port or (5671 if parts.scheme == 'amqps' else 5672)}"
    vhost = unquote(parts.path[1:]) if len(parts.path) > 1 else "/"
    if isinstance(exc, pika.exceptions.ProbableAuthenticationError):
        return TransportError(RC_NOT_AUTHORIZED, f"RabbitMQ at {where} refused the user name or password")
    if isinstance(exc, pika.exceptions.ProbableAccessDeniedError) or (
        isinstance(exc, pika.exceptions.ConnectionClosedByBroker) and exc.reply_code in (530, 403)
    ):
        return TransportError(RC_NOT_AUTHORIZED, f"RabbitMQ at {where}: no access to virtual host {vhost!r}")
    if isinstance(exc, pika.exceptions.AMQPConnectionError):
        detail = str(exc) or type(exc).__name__
        if exc.args and isinstance(exc.args[0], BaseException):
            detail = str(exc.args[0]) or type(exc.args[0]).__name__
        return TransportError(RC_CONNECTION_BROKEN, f"cannot reach RabbitMQ at {where}: {detail}")
    return TransportError(RC_CONNECTION_BROKEN, f"cannot use RabbitMQ at {redact(url)}: {exc}")


def _coalesce_frames(connection: pika.BlockingConnection) -> None:
    """Hand each AMQP command's frames (method, header, body) to the socket as one write.

    pika buffers every frame as a chunk of its own and sends chunk by chunk: three ``send``
    calls per message, a fifth of a passthrough flow's CPU time when profiled. Joined, the
    command goes out in one. Left as pika has it when its internals are not the ones expected.
    """
    impl = getattr(connection, "_impl", None)
    emit = getattr(impl, "_adapter_emit_data", None)
    if impl is None or emit is None or not hasattr(impl, "_output_marshaled_frames"):
        return

    def output(frames: Any) -> None:
        data = frames[0] if len(frames) == 1 else b"".join(frames)
        impl.bytes_sent += len(data)
        impl.frames_sent += len(frames)
        emit(data)

    impl._output_marshaled_frames = output
    _marshal_publishes(impl, output)
    # and the commands a commit publishes together leave in one write too (bounded, so a
    # partial send of a long backlog never copies it all again)
    transport: Any = getattr(impl, "_transport", None)
    produce = getattr(transport, "_produce", None)
    buffers = getattr(transport, "_tx_buffers", None)
    if produce is None or not isinstance(buffers, deque):
        return

    def produce_joined() -> None:
        if len(buffers) > 1 and len(buffers[0]) < _JOIN_MOST:
            chunks = [buffers.popleft()]
            size = len(chunks[0])
            while buffers and size + len(buffers[0]) <= _JOIN_MOST:
                chunk = buffers.popleft()
                chunks.append(chunk)
                size += len(chunk)
            buffers.appendleft(b"".join(chunks))
        produce()

    transport._produce = produce_joined


_FRAME = struct.Struct(">BHI")  # frame type, channel, payload size
_PUBLISH = struct.Struct(">BHIHHH")  # a method frame's head and basic.publish's class, method, ticket
_CONTENT = struct.Struct(">BHIHHQ")  # a header frame's head, class, weight and body size
_FRAME_END = b"\xce"


#: The method frame of a ``basic.publish`` by channel, exchange, routing key and flags: a flow
#: thread publishes to a few queues, again and again (bounded: emptied when full).
_METHOD_FRAMES: dict[tuple[int, str, str, int], bytes] = {}
_METHOD_FRAMES_MOST = 1024


def _publish_frames(
    channel: int, method: Basic.Publish, props: BasicProperties, body: bytes, most: int
) -> bytes | None:
    """A ``basic.publish`` command as the bytes of its frames (method, content header, body), or
    None when pika must marshal it itself (a name over 255 bytes or of the wrong type: pika says
    what is wrong)."""
    bits = (1 if method.mandatory else 0) | (2 if method.immediate else 0)
    return _frames(channel, method.exchange, method.routing_key, bits, props, body, most)


def _frames(
    channel: int, exchange: str, key: str, bits: int, props: BasicProperties, body: bytes, most: int
) -> bytes | None:
    """:func:`_publish_frames` of a publish given by its exchange, routing key and flags (1:
    mandatory, 2: immediate)."""
    if type(exchange) is not str or type(key) is not str or type(body) is not bytes:
        return None
    head = _METHOD_FRAMES.get((channel, exchange, key, bits))
    if head is None:
        exchange_b, key_b = exchange.encode(), key.encode()
        if len(exchange_b) > 255 or len(key_b) > 255:
            return None
        args = b"".join((bytes((len(exchange_b),)), exchange_b, bytes((len(key_b),)), key_b, bytes((bits,))))
        head = b"".join((_PUBLISH.pack(1, channel, 6 + len(args), 60, 40, 0), args, _FRAME_END))
        if len(_METHOD_FRAMES) >= _METHOD_FRAMES_MOST:
            _METHOD_FRAMES.clear()
        _METHOD_FRAMES[(channel, exchange, key, bits)] = head
    properties = props.data if type(props) is EncodedProperties else b"".join(props.encode())
    length = len(body)
    if 0 < length <= most:  # the usual case: the body in one frame
        return b"".join(
            (
                head,
                _CONTENT.pack(2, channel, 12 + len(properties), 60, 0, length),
                properties,
                _FRAME_END,
                _FRAME.pack(3, channel, length),
                body,
                _FRAME_END,
            )
        )
    parts = [head, _CONTENT.pack(2, channel, 12 + len(properties), 60, 0, length), properties, _FRAME_END]
    for start in range(0, length, most):
        chunk = body[start : start + most]
        parts += (_FRAME.pack(3, channel, len(chunk)), chunk, _FRAME_END)
    return b"".join(parts)


def _marshal_publishes(impl: Any, output: Any) -> None:
    """Marshal every ``basic.publish`` in one pass of struct packing instead of pika's frame
    objects (a method, a header and a body frame object per message, each marshalled on its own:
    the costliest part of a put when profiled). Other commands, and a publish pika must refuse,
    keep pika's own path."""
    original = getattr(impl, "_send_message", None)
    if original is None or not hasattr(impl, "_body_max_length"):
        return

    def send_message(channel_number: int, method: Any, content: tuple[BasicProperties, bytes]) -> None:
        data = None
        if type(method) is Basic.Publish and impl._body_max_length:
            data = _publish_frames(channel_number, method, content[0], content[1], impl._body_max_length)
        if data is None:
            original(channel_number, method, content)
        else:
            output((data,))

    impl._send_message = send_message
    impl._flowbroker_publish_output = output


#: The most bytes of queued commands joined into one socket write.
_JOIN_MOST = 256 * 1024

#: Whether the transport decodes its consumers' deliveries itself (:mod:`.amqp_codec`) rather than
#: through pika's frame objects and event dispatch (the tests compare both).
OWN_DECODING = True


def _delivery_reader(connection: pika.BlockingConnection) -> DeliveryReader | None:
    """The transport's own reader of deliveries over the connection's, or None where pika's
    internals are not the ones it replaces (then pika decodes everything, as before)."""
    impl = getattr(connection, "_impl", None)
    # a delivery read here ends the connection's wait for events, as pika's dispatch would
    wake = getattr(connection, "_request_channel_dispatch", None)
    if not OWN_DECODING or impl is None or wake is None:
        return None
    if not all(
        hasattr(impl, name)
        for name in ("_on_data_available", "_process_frame", "bytes_received", "frames_received")
    ):
        return None
    return DeliveryReader(impl, 0, lambda: wake(-1))


# -- the transport ---------------------------------------------------------------------------------


class AmqpTransport:
    """One flow thread's RabbitMQ connection and channel; never shared between threads."""

    dead_letter_queue = DEAD_LETTER_QUEUE

    #: Who the topic ACLs judge this connection's publications and subscriptions as ("": exempt).
    principal = ""

    def __init__(self, connection: pika.BlockingConnection) -> None:
        self._conn = connection
        _coalesce_frames(connection)
        self._reader = _delivery_reader(connection)
        self._tags = 0
        self._channel = self._open_channel()
        self._ids = IdFactory()
        self._exchange = topic_exchange()
        self._exchange_ready = False
        self.pipelined = 0
        #: Queues known to exist (checked once per connection, on a side channel).
        self._queues: set[str] = set()
        #: Per consumed queue: its consumer tag and the deliveries not handed out yet.
        self._consumers: dict[str, str] = {}
        self._arrived: dict[str, deque[tuple[Basic.Deliver, BasicProperties, bytes]]] = {}
        #: Queues whose consumer RabbitMQ cancelled (deleted queues).
        self._lost: set[str] = set()
        #: The unit of work: deliveries got under syncpoint, and the puts held for the commit.
        #: (a got delivery, its queue and the backout count it was handed out with)
        self._got: list[tuple[Basic.Deliver, BasicProperties, bytes, str, int]] = []
        self._held: list[tuple[str, str, bytes, BasicProperties, bool]] = []
        #: The channel that publishes a commit's several held puts in one AMQP transaction.
        self._batch_channel: BlockingChannel | None = None
        #: The queues of the puts RabbitMQ returned as unroutable in the last batch.
        self._returned: list[str] = []

    @classmethod
    def open(cls, url: str) -> AmqpTransport:
        try:
            params = pika.URLParameters(_vhost_quoted(url))
        except Exception as exc:
            raise TransportError(RC_BAD_ARGUMENT, f"transport URL {redact(url)!r}: {exc}") from None
        # one attempt: the flow thread retries with its own back-off, and a stop is never held up
        params.connection_attempts = 1
        params.socket_timeout = min(params.socket_timeout or 10.0, 10.0)
        try:
            connection = pika.BlockingConnection(params)
        except Exception as exc:
            raise _connect_error(url, exc) from None
        return cls(connection)

    def _open_channel(self) -> BlockingChannel:
        channel = self._conn.channel()
        channel.confirm_delivery()
        channel.add_on_cancel_callback(self._cancelled)
        if self._reader is not None:
            # the consumers of an earlier channel are gone with it
            self._reader.channel = channel.channel_number
            self._reader.consumers.clear()
        return channel

    def _cancelled(self, frame: Any) -> None:
        """RabbitMQ cancelled a consumer (its queue was deleted): the next get from it says so."""
        tag = frame.method.consumer_tag
        for queue, consumer in list(self._consumers.items()):
            if consumer == tag:
                self._lost.add(queue)

    # -- queues --------------------------------------------------------------------------------

    def _check_queue(self, queue: str) -> None:
        """Raise 2085 when ``queue`` does not exist (checked on a side channel: a refusal closes it)."""
        if queue in self._queues:
            return
        side = self._conn.channel()
        try:
            side.queue_declare(queue, passive=True)
        except pika.exceptions.ChannelClosedByBroker as exc:
            if exc.reply_code == 404 and queue == self.dead_letter_queue:
                self.define_queue(queue)
                return
            raise _refusal(exc, f"queue {queue}") from None
        finally:
            if side.is_open:
                side.close()
        self._queues.add(queue)

    def queue_exists(self, name: str) -> bool:
        """Whether ``name`` is a queue of the virtual host (asked on a side channel)."""
        side = self._conn.channel()
        try:
            side.queue_declare(name, passive=True)
        except pika.exceptions.ChannelClosedByBroker as exc:
            if exc.reply_code == 404:
                return False
            raise _refusal(exc, f"queue {name}") from None
        finally:
            if side.is_open:
                side.close()
        return True

    def inquire_queue(self, name: str) -> dict[str, Any]:
        side = self._conn.channel()
        try:
            ok = side.queue_declare(name, passive=True)
        except pika.exceptions.ChannelClosedByBroker as exc:
            raise _refusal(exc, f"queue {name}") from None
        finally:
            if side.is_open:
                side.close()
        return {"name": name, "depth": ok.method.message_count, "consumers": ok.method.consumer_count}

    def define_queue(self, name: str, **attrs: Any) -> dict[str, Any]:
        """Declare a durable queue: quorum, or classic when configured or a priority is asked for.

        ``max_depth`` bounds the queue as MQ's MAXDEPTH does: ``x-max-length`` with publishes
        refused once it is full (``x-overflow: reject-publish``), so a put to a full queue fails
        instead of dropping the oldest message.
        """
        max_priority = int(attrs.get("max_priority") or 0)
        kind = "classic" if max_priority else queue_type()
        arguments: dict[str, Any] = {"x-queue-type": kind}
        if max_priority:
            arguments["x-max-priority"] = min(max_priority, 9)
        max_depth = int(attrs.get("max_depth") or 0)
        if max_depth:
            arguments["x-max-length"] = max_depth
            arguments["x-overflow"] = "reject-publish"
        side = self._conn.channel()
        try:
            side.queue_declare(name, durable=True, arguments=arguments)
        except pika.exceptions.ChannelClosedByBroker as exc:
            raise _refusal(exc, f"the definition of queue {name}") from None
        finally:
            if side.is_open:
                side.close()
        self._queues.add(name)
        return {"name": name, "type": kind, **({"max_depth": max_depth} if max_depth else {})}

    def backout_policy(self, queue: str) -> tuple[int, str]:
        """RabbitMQ queues have no backout threshold nor backout queue: the input node's apply."""
        self._check_queue(queue)
        return 0, ""

    def _judge(self, topic: str, action: str, *, pattern: bool) -> None:
        """Refuse a bad topic string (2425) or what the topic ACLs deny this connection's principal
        (2035), as the queue manager would."""
        try:
            split_topic(topic, pattern=pattern)
            pubsub_rules.current().check(self.principal, topic, action)
        except QMError as exc:
            raise TransportError(exc.reason_code, exc.reason) from None

    def subscribe(
        self, topic: str, queue: str, *, name: str | None = None, filter: str | None = None
    ) -> None:
        """Deliver the publications on ``topic`` (MQ wildcards ``+`` and ``#``) to ``queue``.

        Refused (2035) when the topic ACLs let this connection's principal subscribe to no topic
        the pattern matches. With a content ``filter`` the queue is not bound to the topic
        exchange: publishers of this process evaluate the filter and put the copies that pass
        (publishers elsewhere read filtered subscriptions from the repository, see
        :mod:`flowbroker.pubsub.rules`).
        """
        self._judge(topic, "subscribe", pattern=True)
        if filter:
            self._check_queue(queue)
            try:
                pubsub_rules.current().add_filtered(
                    name or f"{self.principal}:{topic}:{queue}", topic, queue, filter, self.principal
                )
            except QMError as exc:
                raise TransportError(exc.reason_code, exc.reason) from None
            return
        self._ensure_exchange()
        try:
            self._channel.queue_bind(queue, self._exchange, routing_key(topic))
        except pika.exceptions.ChannelClosedByBroker as exc:
            self._channel = self._open_channel()
            raise _refusal(exc, f"the subscription of {queue} to {topic}") from None

    def unsubscribe(self, topic: str, queue: str) -> None:
        """Remove the binding of ``queue`` to the topic exchange that :meth:`subscribe` made for
        ``topic`` (none there is no error: RabbitMQ unbinds idempotently)."""
        self._ensure_exchange()
        try:
            self._channel.queue_unbind(queue, self._exchange, routing_key(topic))
        except pika.exceptions.ChannelClosedByBroker as exc:
            self._channel = self._open_channel()
            raise _refusal(exc, f"the removal of the subscription of {queue} to {topic}") from None

    def _ensure_exchange(self) -> None:
        if not self._exchange_ready:
            side = self._conn.channel()
            try:
                side.exchange_declare(self._exchange, "topic", durable=True)
            except pika.exceptions.ChannelClosedByBroker as exc:
                raise _refusal(exc, f"the topic exchange {self._exchange}") from None
            finally:
                if side.is_open:
                    side.close()
            self._exchange_ready = True

    # -- gets ------------------------------------------------------------------------------------

    def _consume(self, queue: str, prefetch: int) -> deque[tuple[Basic.Deliver, BasicProperties, bytes]]:
        arrived = self._arrived.get(queue)
        if arrived is not None:
            return arrived
        arrived = self._arrived[queue] = deque()

        def on_message(_ch: Any, method: Basic.Deliver, props: BasicProperties, body: bytes) -> None:
            arrived.append((method, props, body))

        # the tag is known before basic.consume goes out: the reader decodes the first delivery too
        self._tags += 1
        tag = f"flowbroker.{id(self):x}.{self._tags}"
        if self._reader is not None:
            self._reader.consumers[tag] = arrived
        try:
            # unacknowledged deliveries this consumer may hold: its read-ahead
            self._channel.basic_qos(prefetch_count=max(1, prefetch))
            self._consumers[queue] = self._channel.basic_consume(
                queue, on_message, auto_ack=False, consumer_tag=tag
            )
        except pika.exceptions.ChannelClosedByBroker as exc:
            del self._arrived[queue]
            if self._reader is not None:
                self._reader.consumers.pop(tag, None)
            raise _refusal(exc, f"a get from queue {queue}") from None
        return arrived

    def get_many(
        self,
        queue: str,
        max_messages: int,
        *,
        wait: float = 0,
        syncpoint: bool = False,
        msg_id: bytes | None = None,
        correl_id: bytes | None = None,
    ) -> list[Message]:
        """Up to ``max_messages`` deliveries of ``queue``; with ``msg_id`` / ``correl_id`` only those
        whose message / correlation id matches, the others staying with this consumer
        (unacknowledged) for later gets: a selective get suits a reply queue read by one requester."""
        want_correl = None if correl_id is None else pad_id(correl_id)
        want_msg = None if msg_id is None else pad_id(msg_id)
        want = None if want_correl is None and want_msg is None else (want_msg, want_correl)

        def wanted(props: BasicProperties) -> bool:
            return (want_correl is None or _id_bytes(props.correlation_id) == want_correl) and (
                want_msg is None or _id_bytes(props.message_id) == want_msg
            )

        try:
            arrived = self._consume(
                queue, min(max_messages * PREFETCH_BATCHES, MOST_PREFETCH) if want is None else 256
            )

            def ready() -> bool:
                if queue in self._lost:
                    self._lost.discard(queue)
                    tag = self._consumers.pop(queue, None)
                    if self._reader is not None and tag is not None:
                        self._reader.consumers.pop(tag, None)
                    self._queues.discard(queue)
                    self._arrived.pop(queue, None)
                    raise TransportError(RC_UNKNOWN_OBJECT_NAME, f"queue {queue} was deleted")
                if want is None:
                    return bool(arrived)
                return any(wanted(props) for _m, props, _b in arrived)

            if not ready():
                self._conn.process_data_events(time_limit=0)
                deadline = time.monotonic() + wait
                while not ready():
                    left = deadline - time.monotonic()
                    if left <= 0:
                        return []
                    self._conn.process_data_events(time_limit=min(left, 0.5))
        except TransportError:
            raise
        except Exception as exc:
            raise _refusal(exc, f"a get from queue {queue}") from None
        taken: list[tuple[Basic.Deliver, BasicProperties, bytes]] = []
        if want is None:
            while arrived and len(taken) < max_messages:
                taken.append(arrived.popleft())
        else:
            kept: list[tuple[Basic.Deliver, BasicProperties, bytes]] = []
            while arrived:
                delivery = arrived.popleft()
                if len(taken) < max_messages and wanted(delivery[1]):
                    taken.append(delivery)
                else:
                    kept.append(delivery)
            arrived.extend(kept)
        got: list[Message] = []
        for method, props, body in taken:
            message = from_amqp(
                props,
                body,
                redelivered=bool(method.redelivered),
                exchange=method.exchange or "",
                key=method.routing_key or "",
            )
            if method.redelivered:
                message.md.backout_count = _counted(queue, method, props)
            got.append(message)
            if syncpoint:
                self._got.append((method, props, body, queue, message.md.backout_count))
            else:
                self._channel.basic_ack(method.delivery_tag)  # outside a unit of work the get is final
        return got

    def get(
        self,
        queue: str,
        *,
        wait: float = 0,
        syncpoint: bool = False,
        msg_id: bytes | None = None,
        correl_id: bytes | None = None,
    ) -> Message | None:
        found = self.get_many(queue, 1, wait=wait, syncpoint=syncpoint, msg_id=msg_id, correl_id=correl_id)
        return found[0] if found else None

    # -- puts and publications -------------------------------------------------------------------

    def _properties(self, md: MessageDescriptor | None, properties: dict[str, Any] | None) -> BasicProperties:
        md = md if md is not None else MessageDescriptor()
        # as the queue manager does: a new message id and the put time
        msg_id = self._ids.next() if pad_id(md.msg_id) == ZERO_ID else None
        encoded = encode_properties(
            md, properties, msg_id=msg_id, put_time=None if md.put_time else time.time()
        )
        if encoded is not None:
            return EncodedProperties(encoded)
        if msg_id is not None or not md.put_time:
            # as the queue manager does: a new message id and the put time
            md = MessageDescriptor(**{**md.__dict__})
            if msg_id is not None:
                md.msg_id = msg_id
            if not md.put_time:
                md.put_time = time.time()
        return to_amqp(md, properties)

    def _send(self, exchange: str, key: str, body: bytes, props: BasicProperties, mandatory: bool) -> None:
        """Publish and wait for the broker's confirm (the channel is in confirm mode)."""
        self._channel.basic_publish(exchange, key, body, props, mandatory=mandatory)

    def put(
        self,
        queue: str,
        body: bytes,
        md: MessageDescriptor | None = None,
        *,
        syncpoint: bool = False,
        properties: dict[str, Any] | None = None,
        pipeline: bool = False,
    ) -> None:
        """Put on ``queue``; under syncpoint the put is held and published by the commit."""
        self._check_queue(queue)
        props = self._properties(md, properties)
        if syncpoint:
            self._held.append(("", queue, body, props, True))
            if pipeline:
                self.pipelined += 1
            return
        try:
            self._send("", queue, body, props, True)
        except Exception as exc:
            raise _refusal(exc, f"a put to queue {queue}") from None

    def put_relayed(
        self,
        queue: str,
        message: Message,
        msg_id: bytes,
        *,
        correl_id: bytes | None = None,
        persistence: int | None = None,
        format: str | None = None,
        properties: dict[str, Any] | None = None,
        syncpoint: bool = False,
        pipeline: bool = False,
    ) -> None:
        """Put ``message``, as got, again: what :meth:`put` of its body with its descriptor puts,
        that descriptor with ``msg_id``, no put time (the put's), backout count 0 and the
        correlation id, persistence and format given (None: the message's), with ``properties``
        (None: the message's).

        The content header is packed straight from the message's descriptor: no descriptor is
        copied nor :class:`BasicProperties` made for it."""
        self._check_queue(queue)
        md = message.md
        if properties is None:
            properties = message.properties
        encoded = encode_properties(
            md,
            properties,
            msg_id=msg_id,
            correl_id=correl_id,
            persistence=persistence,
            format=format,
            put_time=time.time(),
        )
        if encoded is None:  # pika's encoding of it, which says what is wrong
            fields = {**md.__dict__, "msg_id": msg_id, "put_time": 0.0, "backout_count": 0}
            if correl_id is not None:
                fields["correl_id"] = correl_id
            if persistence is not None:
                fields["persistence"] = persistence
            if format is not None:
                fields["format"] = format
            self.put(
                queue,
                message.body,
                MessageDescriptor(**fields),
                syncpoint=syncpoint,
                properties=properties,
                pipeline=pipeline,
            )
            return
        props = EncodedProperties(encoded)
        if syncpoint:
            self._held.append(("", queue, message.body, props, True))
            if pipeline:
                self.pipelined += 1
            return
        try:
            self._send("", queue, message.body, props, True)
        except Exception as exc:
            raise _refusal(exc, f"a put to queue {queue}") from None

    def publish(
        self,
        topic: str,
        body: bytes,
        md: MessageDescriptor | None = None,
        *,
        syncpoint: bool = False,
        pipeline: bool = False,
        properties: dict[str, Any] | None = None,
    ) -> int:
        """Publish on the topic exchange; 1 when a queue took it, 0 when no subscription matched,
        -1 when held for the commit (pipelined under syncpoint).

        Refused (2035) when the topic ACLs deny this connection's principal the topic. Filtered
        subscriptions the publication matches and passes get their copy on their queue, counted.
        """
        self._judge(topic, "publish", pattern=False)
        self._ensure_exchange()
        key = routing_key(topic)
        props = self._properties(md, properties)
        copies = self._filtered_copies(topic, body, md, properties)
        if syncpoint and pipeline:
            self._held.append((self._exchange, key, body, props, False))
            self._held.extend(copies)
            self.pipelined += 1
            return -1
        # the number of deliveries is needed now: the publication is sent at once, before the
        # commit (a backout cannot take it back; see README "Transports")
        delivered = 1
        try:
            self._send(self._exchange, key, body, props, True)
        except pika.exceptions.UnroutableError:
            delivered = 0
        except Exception as exc:
            raise _refusal(exc, f"a publication on {topic}") from None
        for copy in copies:
            try:
                self._send(*copy)
            except Exception as exc:
                raise _refusal(exc, f"a publication on {topic} to queue {copy[1]}") from None
            delivered += 1
        return delivered

    def _filtered_copies(
        self,
        topic: str,
        body: bytes,
        md: MessageDescriptor | None,
        properties: dict[str, Any] | None,
    ) -> list[tuple[str, str, bytes, BasicProperties, bool]]:
        """A put for every filtered subscription the publication reaches and whose filter it passes."""
        subs = pubsub_rules.current().filtered(topic)
        if not subs:
            return []
        props_with_topic = {**(properties or {}), "MQTopicString": topic}
        publication = Publication(encode_message(md or MessageDescriptor(), props_with_topic, body), topic)
        copies = []
        for sub in subs:
            try:
                if sub.filter_fn is None or not sub.filter_fn(publication):
                    continue
            except Exception:  # a filter that raises does not match, as on the queue manager
                continue
            self._check_queue(sub.queue)
            copies.append(("", sub.queue, body, self._properties(md, props_with_topic), True))
        return copies

    # -- the unit of work ------------------------------------------------------------------------

    def publish_held(self) -> None:
        """The commit's first step: publish the held puts, settled by the broker before it returns.

        One held put is published with a publisher confirm. Several go on a second channel in
        AMQP transaction mode and are settled by one ``tx.commit`` (the broker answers once they
        are enqueued, persistent ones written), instead of a confirm round trip each; their
        queues were checked when they were put.
        """
        held, self._held = self._held, []
        if len(held) == 1:
            exchange, key, body, props, mandatory = held[0]
            self._send(exchange, key, body, props, mandatory)
            return
        if not held:
            return
        channel = self._batch_channel
        if channel is None or not channel.is_open:
            channel = self._batch_channel = self._conn.channel()
            channel.add_on_return_callback(self._on_return)
            channel.tx_select()
        self._returned = []
        # pika's BlockingChannel flushes and polls after every publish; its underlying channel only
        # queues the frames, so the batch goes out with the commit's single flush (pika is pinned
        # in constraints.txt for this)
        queued = getattr(channel, "_impl", channel)
        impl: Any = getattr(self._conn, "_impl", None)
        output = getattr(impl, "_flowbroker_publish_output", None)
        if output is None or not queued.is_open or not impl._body_max_length:
            for exchange, key, body, props, mandatory in held:
                queued.basic_publish(exchange, key, body, props, mandatory=mandatory)
        else:
            # marshalled here and queued as pika's basic_publish would (the channel is open and
            # stays so: nothing is read before the commit), without its method object per put
            number, most = queued.channel_number, impl._body_max_length
            for exchange, key, body, props, mandatory in held:
                data = _frames(number, exchange, key, 1 if mandatory else 0, props, body, most)
                if data is None:  # pika's to marshal, or refuse
                    queued.basic_publish(exchange, key, body, props, mandatory=mandatory)
                else:
                    output((data,))
        channel.tx_commit()
        # RabbitMQ returns an unroutable put (its queue deleted since it was checked) before it
        # answers the commit; a returned put must not let the gets be acknowledged
        self._conn.process_data_events(time_limit=0)
        if self._returned:
            self._queues.difference_update(self._returned)
            raise pika.exceptions.UnroutableError([])

    def _on_return(self, _channel: Any, method: Basic.Return, _props: BasicProperties, _body: bytes) -> None:
        self._returned.append(method.routing_key)

    def acknowledge(self) -> None:
        """The commit's second step: acknowledge the messages got in the unit of work.

        Every delivery this channel has not settled is either got in the unit of work or still
        waiting to be handed out; when none of the waiting ones comes before the last got, one
        ``basic.ack`` with ``multiple`` settles the whole batch."""
        got, self._got = self._got, []
        if not got:
            return
        last = max(method.delivery_tag for method, *_rest in got)
        held_back = any(
            delivery[0].delivery_tag < last for arrived in self._arrived.values() for delivery in arrived
        )
        if held_back:
            for method, *_rest in got:
                self._channel.basic_ack(method.delivery_tag)
        else:
            self._channel.basic_ack(last, multiple=True)

    def commit(self) -> None:
        """Publish the held puts (confirmed), then acknowledge the gets: a crash in between
        redelivers the input and its outputs are sent again (at least once, never lost)."""
        self.pipelined = 0
        try:
            self.publish_held()
        except Exception as exc:
            refusal = _refusal(exc, "a put of the unit of work")
            try:
                self._return_got()
            except Exception:
                pass  # a lost connection returns them anyway
            raise TransportError(
                RC_BACKED_OUT, f"the unit of work was backed out: {refusal.reason}"
            ) from None
        try:
            self.acknowledge()
            # acknowledgements have no reply: flush them now rather than with the next get
            self._conn.process_data_events(time_limit=0)
        except Exception as exc:
            raise _refusal(exc, "a commit") from None

    def commit_and_get(self, queue: str, max_messages: int, *, wait: float = 0) -> list[Message]:
        self.commit()
        return self.get_many(queue, max_messages, wait=wait, syncpoint=True)

    def backout(self, notes: dict[str, str] | None = None) -> None:
        """Drop the held puts and return the messages got to their queues, their backout count raised."""
        self.pipelined = 0
        self._held = []
        try:
            self._return_got()
        except TransportError:
            raise
        except Exception as exc:
            raise _refusal(exc, "a backout") from None

    def _return_got(self) -> None:
        got, self._got = self._got, []
        returned: list[int] = []
        for method, props, body, queue, count in got:
            headers = dict(props.headers or {})
            if "x-delivery-count" in headers or (not method.redelivered and BACKOUT_HEADER not in headers):
                # a quorum queue counts the redelivery itself (its first delivery carries no count
                # yet) and keeps the message's place; a classic queue's first backout is then
                # counted by its redelivered flag
                if props.message_id:
                    _REQUEUED.raised(queue, props.message_id, count + 1)
                returned.append(method.delivery_tag)
                continue
            # a classic queue counts no further: put it back with its count, then let the original go
            headers[BACKOUT_HEADER] = count + 1
            again = BasicProperties(**{**props.__dict__, "headers": headers})
            self._send("", queue, body, again, True)
            self._channel.basic_ack(method.delivery_tag)
        # the read-ahead of the same queues goes back too, so that the messages backed out are the
        # next ones got (one at a time when the runtime retries them); each keeps its count
        for queue in {queue for *_rest, queue, _count in got}:
            arrived = self._arrived.get(queue)
            while arrived:
                method, props, _body = arrived.popleft()
                if props.message_id:
                    _REQUEUED.raised(queue, props.message_id, _counted(queue, method, props))
                returned.append(method.delivery_tag)
        if not returned:
            return
        last = max(returned)
        if any(delivery[0].delivery_tag < last for arrived in self._arrived.values() for delivery in arrived):
            for tag in returned:
                self._channel.basic_nack(tag, requeue=True)
        else:
            # one return for them all: the queue puts them back before it delivers anything else
            self._channel.basic_nack(last, multiple=True, requeue=True)

    def close(self) -> None:
        """Close; the broker returns every unacknowledged delivery to its queue."""
        self._held = []
        self._got = []
        try:
            if self._conn.is_open:
                self._conn.close()
        except Exception:
            pass
