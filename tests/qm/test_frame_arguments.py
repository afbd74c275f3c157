"""Frames whose arguments were encoded once (a connection's puts to one queue) are the frames
``encode_frame`` makes, and a connection's deferred and asynchronous puts send exactly those."""

from __future__ import annotations

import itertools
import socket
from typing import Any

import pytest
from flowbroker.qm.client import Client
from flowbroker.qm.protocol import (
    OP_PUT,
    FrameDecoder,
    IdFactory,
    MessageDescriptor,
    encode_frame,
    encode_message,
    encoded_arguments,
    frame_with,
)


@pytest.mark.parametrize(
    ("args", "tail"),
    [
        ({"q": "Q", "sync": True, "noreply": True}, b"x" * 300),
        ({"q": 'ÉTÉ.Q "quoted"', "noreply": True}, b""),
        ({}, bytearray(b"tail")),
    ],
)
def test_a_frame_with_encoded_arguments_is_the_frame_encode_frame_makes(
    args: dict[str, Any], tail: bytes
) -> None:
    assert frame_with(OP_PUT, 77, encoded_arguments(args), tail) == encode_frame(OP_PUT, 77, args, tail)
    [(op, rid, decoded, got)] = FrameDecoder().feed(frame_with(OP_PUT, 77, encoded_arguments(args), tail))
    assert (op, rid, decoded, got) == (OP_PUT, 77, args, bytes(tail))


def _client() -> tuple[Client, socket.socket]:
    left, right = socket.socketpair()
    client = Client.__new__(Client)
    # the state __init__ makes before its HELLO, which needs a queue manager
    client._sock = left
    client._decoder = FrameDecoder()
    client._rids = itertools.count(1)
    client._ids = IdFactory()
    client._outbox = []
    client._deferred_put_args = {}
    client._async_put_args = {}
    client._async_rids = itertools.count(1 << 31)
    client._async_queues = {}
    client._async_error = None
    client.async_puts = 0
    return client, right


def test_a_connection_s_deferred_and_asynchronous_puts_send_the_frames_encode_frame_makes() -> None:
    client, peer = _client()
    md = MessageDescriptor(msg_id=b"I" * 24, persistence=0)
    encoded = encode_message(md, {"p": 1}, b"body")
    for queue in ("A", "B", "A"):
        client.put_encoded(queue, encoded, syncpoint=True, deferred=True)
        client.put_deferred(queue, b"body", md, properties={"p": 1})
    client.put_async("A", encoded)
    client.put_async("C", encoded)
    client._write(b"")  # the outbox leaves with the next write
    peer.setblocking(False)
    frames = FrameDecoder().feed(peer.recv(1 << 20))
    deferred = {"sync": True, "noreply": True}
    expected = [
        encode_frame(OP_PUT, rid, {"q": queue, **deferred}, encoded)
        for rid, queue in zip(range(1, 7), ("A", "A", "B", "B", "A", "A"), strict=True)
    ]
    expected += [
        encode_frame(OP_PUT, (1 << 31) + i, {"q": queue, "noreply": True}, encoded)
        for i, queue in enumerate("AC")
    ]
    assert frames == FrameDecoder().feed(b"".join(expected))
    client._sock.close()
    peer.close()
