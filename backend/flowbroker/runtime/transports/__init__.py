"""The transport seam: how a flow thread reaches messages, whichever broker carries them.

A flow thread holds one :class:`Transport` (a unit of work is per transport connection); the
nodes reach it only through the thread's ``FlowServices``, never a broker client. Two
implementations, chosen from the broker's URL scheme when an execution group starts:

- ``fbqm://``, ``tcp://``, ``unix://`` or empty: the embedded queue manager (:mod:`.qm`);
- ``amqp://``, ``amqps://``: RabbitMQ over AMQP 0-9-1 (:mod:`.amqp`).

What both need lives here: the protocol, the error carrying an MQ reason code, the mapping from
an output Root's MQMD fields to a descriptor, and the reconnect back-off policy.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol
from urllib.parse import urlsplit

from flowbroker.qm.protocol import IdFactory, Message, MessageDescriptor, pad_id

__all__ = [
    "DEAD_LETTER_QUEUE",
    "Backoff",
    "IdFactory",
    "Message",
    "MessageDescriptor",
    "Transport",
    "TransportError",
    "TransportURLError",
    "connector",
    "descriptor",
    "kind_of",
    "pad_id",
]

DEAD_LETTER_QUEUE = "SYSTEM.DEAD.LETTER.QUEUE"

# MQ reason codes both transports report (the runtime reacts to these two)
RC_NO_MSG_AVAILABLE = 2033
RC_UNKNOWN_OBJECT_NAME = 2085
RC_NOT_AUTHORIZED = 2035
RC_CONNECTION_BROKEN = 2009
RC_BACKED_OUT = 2003
RC_BAD_ARGUMENT = 2046

QM_SCHEMES = frozenset({"", "fbqm", "tcp", "unix"})
AMQP_SCHEMES = frozenset({"amqp", "amqps"})


class TransportError(Exception):
    """A transport refused a request: an MQ-style reason code and a one-line reason (as ``QMError``)."""

    def __init__(self, reason_code: int, reason: str) -> None:
        self.reason_code = reason_code
        self.reason = reason
        super().__init__(f"{reason_code}: {reason}")


class TransportURLError(ValueError):
    """A broker's transport URL names no transport this runtime has."""


class Transport(Protocol):
    """One flow thread's connection to its messages; never shared between threads.

    Gets under syncpoint and puts under syncpoint belong to the connection's unit of work until
    :meth:`commit` or :meth:`backout`. A message's descriptor carries its backout count (how
    often its units of work were backed out, or it was redelivered).
    """

    #: Puts and publications made with ``pipeline`` since the last commit or backout.
    pipelined: int
    #: Where a message nothing else takes goes.
    dead_letter_queue: str
    #: Who the topic ACLs judge this connection's publications and subscriptions as: the flow's
    #: execution group, ``BROKER/GROUP`` ("": exempt, the administrator's own connection).
    principal: str

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
        """Up to ``max_messages`` waiting messages (with ``msg_id`` / ``correl_id``: only those with
        that message id / correlated to it), waiting up to ``wait`` seconds for the first."""
        ...

    def get(
        self,
        queue: str,
        *,
        wait: float = 0,
        syncpoint: bool = False,
        msg_id: bytes | None = None,
        correl_id: bytes | None = None,
    ) -> Message | None: ...

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
        """Put; with ``pipeline`` (under syncpoint only) a refusal may be reported by the commit."""
        ...

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
        """Publish on an MQ topic string; the number of deliveries (-1: not known yet)."""
        ...

    def subscribe(
        self, topic: str, queue: str, *, name: str | None = None, filter: str | None = None
    ) -> None:
        """Subscribe ``queue`` to ``topic`` (MQ wildcards), with an optional ESQL content filter."""
        ...

    def commit(self) -> None: ...

    def commit_and_get(self, queue: str, max_messages: int, *, wait: float = 0) -> list[Message]:
        """Commit, then get the next messages under syncpoint (in one round trip where it can)."""
        ...

    def backout(self, notes: dict[str, str] | None = None) -> None:
        """Back out; ``notes`` go with a message the transport itself moves past a backout threshold."""
        ...

    def backout_policy(self, queue: str) -> tuple[int, str]:
        """The queue's own backout threshold (0: none) and backout queue ("" : none)."""
        ...

    def inquire_queue(self, name: str) -> dict[str, Any]: ...

    def define_queue(self, name: str, **attrs: Any) -> dict[str, Any]: ...

    def close(self) -> None: ...


def descriptor(**fields: Any) -> MessageDescriptor:
    """A descriptor from an output Root's MQMD fields, ignoring any the descriptor does not carry."""
    try:
        return MessageDescriptor(**fields)
    except TypeError:  # a field the descriptor does not carry
        known = MessageDescriptor.__dataclass_fields__
        return MessageDescriptor(**{k: v for k, v in fields.items() if k in known})


class Backoff:
    """Delays between reconnect attempts: from ``first`` doubling to ``most`` seconds, never zero."""

    def __init__(self, first: float = 0.2, most: float = 5.0) -> None:
        self.first = first
        self.most = most
        self.delay = first

    def next(self) -> float:
        """The delay to wait now; the next one is twice as long, bounded."""
        delay = self.delay
        self.delay = min(delay * 2, self.most)
        return delay

    def reset(self) -> None:
        self.delay = self.first


def kind_of(url: str | None) -> str:
    """``qm`` or ``amqp``: the transport a broker URL names; :class:`TransportURLError` otherwise."""
    text = (url or "").strip()
    scheme = urlsplit(text).scheme.lower() if text else ""
    if scheme in QM_SCHEMES:
        return "qm"
    if scheme in AMQP_SCHEMES:
        if not urlsplit(text).hostname:
            raise TransportURLError(f"transport URL {redact(text)!r} names no host")
        return "amqp"
    raise TransportURLError(
        f"transport URL {redact(text)!r}: unknown scheme {scheme!r} "
        "(fbqm://, unix:// or empty for the queue manager; amqp:// or amqps:// for RabbitMQ)"
    )


def redact(url: str) -> str:
    """The URL without its password."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.replace(f":{parts.password}@", ":***@", 1)
    return parts._replace(netloc=netloc).geturl()


def connector(
    url: str | None, *, data_dir: str | None = None, principal: str = ""
) -> Callable[[], Transport]:
    """Opens one transport connection per call, of the kind the URL's scheme names; its
    publications and subscriptions are judged by the topic ACLs as ``principal``'s."""
    kind = kind_of(url)
    if kind == "amqp":
        from flowbroker.runtime.transports.amqp import AmqpTransport

        amqp_url = str(url).strip()

        def open_amqp() -> Transport:
            transport = AmqpTransport.open(amqp_url)
            transport.principal = principal
            return transport

        return open_amqp
    from flowbroker.runtime.transports.qm import QueueConnection

    qm_url = (url or "").strip() or None

    def open_qm() -> Transport:
        transport = QueueConnection.open(qm_url, data_dir=data_dir)
        transport.principal = principal
        return transport

    return open_qm
