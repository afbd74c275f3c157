"""A flow thread's queue-manager connection: blocking calls, with puts under syncpoint pipelined to the commit.

A flow thread is synchronous, but waiting for the reply of every put inside a unit of work costs
a round trip per message for nothing: the put only becomes visible at the commit anyway. This
connection drives the queue manager's asyncio client on a private event loop owned by the
thread: a pipelined put is written without waiting, and the commit (which flushes first) reports
the first refusal, so the unit of work still commits or backs out as a whole.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any, TypeVar

from flowbroker.qm.client import AsyncClient
from flowbroker.qm.protocol import Message, MessageDescriptor

T = TypeVar("T")

_ZERO_ID = b"\x00" * 24


class QueueConnection:
    """One flow thread's connection; never shared between threads."""

    def __init__(self, loop: asyncio.AbstractEventLoop, client: AsyncClient) -> None:
        self._loop = loop
        self._client = client
        self.pipelined = 0

    @classmethod
    def open(cls, url: str | None = None, *, data_dir: str | None = None) -> QueueConnection:
        loop = asyncio.new_event_loop()
        try:
            client = loop.run_until_complete(AsyncClient.connect(url, data_dir=data_dir))
        except BaseException:
            loop.close()
            raise
        return cls(loop, client)

    def _run(self, coro: Coroutine[Any, Any, T]) -> T:
        return self._loop.run_until_complete(coro)

    def get_many(
        self, queue: str, max_messages: int, *, wait: float = 0, syncpoint: bool = False
    ) -> list[Message]:
        return self._run(self._client.get_many(queue, max_messages, wait=wait, syncpoint=syncpoint))

    def get(self, queue: str, *, wait: float = 0, syncpoint: bool = False) -> Message | None:
        found = self.get_many(queue, 1, wait=wait, syncpoint=syncpoint)
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
        keeps_id = md is not None and md.msg_id != _ZERO_ID
        if pipeline and syncpoint and not keeps_id:
            self._run(self._put_async(queue, body, md, properties))
            self.pipelined += 1
            return
        self._run(self._client.put(queue, body, md, syncpoint=syncpoint, properties=properties))

    async def _put_async(
        self, queue: str, body: bytes, md: MessageDescriptor | None, properties: dict[str, Any] | None
    ) -> None:
        self._client.put_async(queue, body, md, syncpoint=True, properties=properties)

    def publish(
        self,
        topic: str,
        body: bytes,
        md: MessageDescriptor | None = None,
        *,
        syncpoint: bool = False,
        properties: dict[str, Any] | None = None,
    ) -> int:
        return self._run(self._client.publish(topic, body, md, syncpoint=syncpoint, properties=properties))

    def commit(self) -> None:
        self.pipelined = 0
        self._run(self._client.commit())

    def backout(self) -> None:
        self.pipelined = 0
        self._run(self._client.backout())

    def inquire_queue(self, name: str) -> dict[str, Any]:
        return self._run(self._client.inquire_queue(name))

    def close(self) -> None:
        try:
            self._run(self._client.close())
        finally:
            self._loop.close()
