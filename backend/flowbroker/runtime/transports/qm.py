"""The embedded queue manager as a flow thread's transport: blocking calls, puts under syncpoint deferred to the commit.

Outside a unit of work it does what MQ does for non-persistent messages: gets read ahead
(``FLOWBROKER_QM_READ_AHEAD`` messages sent at once and buffered here, given back to the queue
when the connection closes normally) and puts are asynchronous (``FLOWBROKER_QM_ASYNC_PUT``: no
reply is waited for; a refusal is logged, counted and raised by the next call that waits).

A flow thread is synchronous, but waiting for the reply of every put inside a unit of work costs
a round trip per message for nothing: the put only becomes visible at the commit anyway. This
connection uses the blocking client on the flow thread itself (no event loop, no thread hop):
a deferred put is written together with the commit, and the queue manager backs out a unit of
work one of whose deferred puts it refused, so the unit of work still commits or backs out as
a whole and the commit reports why.
"""

from __future__ import annotations

import os
from typing import Any

from flowbroker.qm.client import Client
from flowbroker.qm.protocol import PERSISTENCE_OFFSET, Message, MessageDescriptor
from flowbroker.runtime.transports import DEAD_LETTER_QUEUE

#: The most non-persistent messages one get outside a unit of work may read ahead.
MAX_READ_AHEAD = 1000


def read_ahead_setting() -> int:
    """``FLOWBROKER_QM_READ_AHEAD``: messages a get outside a unit of work reads ahead (0: none)."""
    raw = os.environ.get("FLOWBROKER_QM_READ_AHEAD", "").strip()
    try:
        value = int(raw) if raw else 64
    except ValueError:
        raise ValueError(f"FLOWBROKER_QM_READ_AHEAD must be a whole number, not {raw!r}") from None
    return max(0, min(value, MAX_READ_AHEAD))


def async_put_setting() -> bool:
    """``FLOWBROKER_QM_ASYNC_PUT``: whether non-persistent puts outside a unit of work are asynchronous."""
    return os.environ.get("FLOWBROKER_QM_ASYNC_PUT", "1").strip().lower() not in ("0", "false", "no", "off")


class QueueConnection:
    """One flow thread's connection; never shared between threads (a :class:`~flowbroker.runtime.transports.Transport`)."""

    dead_letter_queue = DEAD_LETTER_QUEUE
    #: Who the queue manager's topic ACLs judge this connection's publications and subscriptions
    #: as (its alternate user); "": the connection's own user.
    principal = ""

    def __init__(self, client: Client) -> None:
        self._client = client
        self.pipelined = 0
        # whether this connection did anything under syncpoint since its last commit or backout:
        # a flow that touched no queue (an MQTT flow, say) then commits without a round trip
        self._in_unit_of_work = False
        self.read_ahead = read_ahead_setting()
        self.async_put = async_put_setting()

    @classmethod
    def open(cls, url: str | None = None, *, data_dir: str | None = None) -> QueueConnection:
        return cls(Client.connect(url, data_dir=data_dir))

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
        got = self._client.get_many(
            queue, max_messages, wait=wait, syncpoint=syncpoint, msg_id=msg_id, correl_id=correl_id
        )
        if syncpoint and got:
            self._in_unit_of_work = True
        return got

    def get_ahead(self, queue: str, max_messages: int, *, wait: float = 0) -> list[Message]:
        """Up to ``max_messages`` messages outside a unit of work, non-persistent ones read ahead."""
        if self.read_ahead <= 0:
            return self._client.get_many(queue, max_messages, wait=wait)
        return self._client.get_ahead(queue, max_messages, self.read_ahead, wait=wait)

    def async_status(self) -> dict[str, int]:
        """The asynchronous puts so far and how many were refused (raises a refusal not yet raised)."""
        return self._client.async_status()

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
        """Put a message; with ``pipeline`` (under syncpoint only) its refusal is reported by the commit."""
        if syncpoint:
            self._in_unit_of_work = True
        if pipeline and syncpoint:
            self._client.put_deferred(queue, body, md, properties=properties)
            self.pipelined += 1
            return
        if not syncpoint and self.async_put and md is not None and md.persistence == 0:
            self._client.put_nowait(queue, body, md, properties=properties)
            return
        self._client.put(queue, body, md, syncpoint=syncpoint, properties=properties)

    def put_encoded(
        self, queue: str, encoded: bytes, *, syncpoint: bool = False, pipeline: bool = False
    ) -> None:
        """Put a message got from this queue manager as its bytes (see :meth:`put`)."""
        if syncpoint:
            self._in_unit_of_work = True
        if pipeline and syncpoint:
            self._client.put_encoded(queue, encoded, syncpoint=True, deferred=True)
            self.pipelined += 1
            return
        if not syncpoint and self.async_put and encoded[PERSISTENCE_OFFSET] == 0:
            self._client.put_async(queue, encoded)
            return
        self._client.put_encoded(queue, encoded, syncpoint=syncpoint)

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
        """Publish; with ``pipeline`` (under syncpoint only) nobody learns the number of deliveries
        (-1 is returned) and a refusal is reported by the commit."""
        if syncpoint:
            self._in_unit_of_work = True
        if pipeline and syncpoint:
            self._client.publish_deferred(topic, body, md, properties=properties, principal=self.principal)
            self.pipelined += 1
            return -1
        return self._client.publish(
            topic, body, md, syncpoint=syncpoint, properties=properties, principal=self.principal
        )

    def subscribe(
        self, topic: str, queue: str, *, name: str | None = None, filter: str | None = None
    ) -> None:
        """A durable subscription of ``queue`` to ``topic``, judged by the topic ACLs as this
        connection's principal (refused with 2035), its content ``filter`` run by the queue manager."""
        self._client.subscribe(topic, queue, name=name, filter=filter, principal=self.principal or None)

    def commit(self) -> None:
        self.pipelined = 0
        if self._in_unit_of_work:
            self._in_unit_of_work = False
            self._client.commit()

    def commit_and_get(self, queue: str, max_messages: int, *, wait: float = 0) -> list[Message]:
        """Commit and get the next messages under syncpoint in one round trip."""
        self.pipelined = 0
        got = self._client.commit_and_get(queue, max_messages, wait=wait, syncpoint=True)
        self._in_unit_of_work = bool(got)
        return got

    def backout(self, notes: dict[str, str] | None = None) -> None:
        """Back out; ``notes`` go with a message the queue manager moves past its backout threshold."""
        self.pipelined = 0
        if self._in_unit_of_work:
            self._in_unit_of_work = False
            self._client.backout(notes)

    def backout_policy(self, queue: str) -> tuple[int, str]:
        """The queue's BOTHRESH and BOQNAME; the queue manager itself moves a message past its
        BOTHRESH to the backout queue when it backs out a unit of work."""
        info = self._client.inquire_queue(queue)
        threshold = int(info.get("backout_threshold", 0) or 0)
        return threshold, str(
            info.get("backout_requeue_q", "") or info.get("backout_requeue_queue", "") or ""
        )

    def inquire_queue(self, name: str) -> dict[str, Any]:
        return self._client.inquire_queue(name)

    def define_queue(self, name: str, **attrs: Any) -> dict[str, Any]:
        """Define a local queue (the reason code 2100 when it exists already)."""
        return self._client.define_queue(name, **attrs)

    def close(self) -> None:
        self._client.close()
