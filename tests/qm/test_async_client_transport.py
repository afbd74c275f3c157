"""The asyncio client's transport against a queue manager that misbehaves: each waiting request
learns why the connection ended, and later requests fail at once instead of hanging."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import pytest
from flowbroker.qm.client import AsyncClient, QMError
from flowbroker.qm.protocol import (
    OP_GET,
    OP_HELLO,
    OP_REPLY_ERR,
    OP_REPLY_OK,
    RC_CONNECTION_BROKEN,
    FrameDecoder,
    MessageDescriptor,
    encode_frame,
    encode_message,
)

pytestmark = pytest.mark.timeout(30)

#: What the fake queue manager does with each request after HELLO: (op, rid, writer).
Behaviour = Callable[[int, int, asyncio.StreamWriter], Awaitable[None]]


async def _serve(behaviour: Behaviour) -> tuple[asyncio.Server, str]:
    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        decoder = FrameDecoder()
        try:
            while data := await reader.read(65536):
                for op, rid, _args, _tail in decoder.feed(data):
                    if op == OP_HELLO:
                        writer.write(encode_frame(OP_REPLY_OK, rid, {"user": "app"}))
                    else:
                        await behaviour(op, rid, writer)
                    if writer.is_closing():
                        return
        except ConnectionError:
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    return server, f"fbqm://app:secret@127.0.0.1:{port}"


async def test_a_connection_the_queue_manager_closes_fails_the_waiting_and_later_requests() -> None:
    async def close_it(op: int, rid: int, writer: asyncio.StreamWriter) -> None:
        writer.close()

    server, url = await _serve(close_it)
    async with server:
        client = await AsyncClient.connect(url)
        with pytest.raises(QMError) as waiting:
            await client.ping()
        assert waiting.value.reason_code == RC_CONNECTION_BROKEN
        assert "closed the connection" in str(waiting.value)
        with pytest.raises(QMError) as later:
            await client.get("Q", wait=5)
        assert later.value.reason_code == RC_CONNECTION_BROKEN
        await asyncio.wait_for(client.close(), 5)
        await client.close()  # closing twice is harmless


async def test_garbage_from_the_queue_manager_breaks_the_connection_with_a_reason() -> None:
    async def garbage(op: int, rid: int, writer: asyncio.StreamWriter) -> None:
        writer.write(b"\xff\xff\xff\x7f" + b"\x00" * 12)  # a frame length far past any limit

    server, url = await _serve(garbage)
    async with server:
        client = await AsyncClient.connect(url)
        with pytest.raises(QMError) as info:
            await client.ping()
        assert info.value.reason_code == RC_CONNECTION_BROKEN
        assert "connection to the queue manager lost" in str(info.value)
        await asyncio.wait_for(client.close(), 5)


async def test_an_error_for_the_whole_connection_reaches_every_waiting_request() -> None:
    async def refuse(op: int, rid: int, writer: asyncio.StreamWriter) -> None:
        if op == OP_GET:
            return  # a get-wait: answered by nothing but the connection's end
        writer.write(encode_frame(OP_REPLY_ERR, 0, {"rc": 2196, "reason": "bad frame"}))
        writer.close()

    server, url = await _serve(refuse)
    async with server:
        client = await AsyncClient.connect(url)
        get = asyncio.ensure_future(client.get("Q", wait=30))
        await asyncio.sleep(0.05)
        with pytest.raises(QMError) as info:
            await client.ping()
        assert info.value.reason_code == 2196
        with pytest.raises(QMError) as info:
            await get
        assert info.value.reason_code == 2196 and "bad frame" in str(info.value)
        await asyncio.wait_for(client.close(), 5)


async def test_a_reply_cut_into_many_small_writes_is_put_back_together() -> None:
    body = bytes(range(256)) * 64
    raw = encode_message(MessageDescriptor(), None, body, b"\x01" * 24)

    async def dribble(op: int, rid: int, writer: asyncio.StreamWriter) -> None:
        frame = encode_frame(OP_REPLY_OK, rid, {"n": 1}, raw)
        for i in range(0, len(frame), 7):
            writer.write(frame[i : i + 7])
            await writer.drain()

    server, url = await _serve(dribble)
    async with server:
        client = await AsyncClient.connect(url)
        got = await client.get("Q")
        assert got is not None and got.body == body
        await client.close()


async def test_an_unreachable_queue_manager_is_a_clear_error() -> None:
    server, url = await _serve(lambda op, rid, writer: asyncio.sleep(0))
    server.close()
    await server.wait_closed()
    with pytest.raises(QMError) as info:
        await AsyncClient.connect(url)
    assert info.value.reason_code == RC_CONNECTION_BROKEN and "cannot reach" in str(info.value)
