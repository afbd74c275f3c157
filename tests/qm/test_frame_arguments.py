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
    client._open_put = None
    client._open_put_bytes = 0
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


def test_consecutive_deferred_puts_to_one_queue_go_in_one_frame_in_order() -> None:
    """The kept puts are framed before anything else the connection sends, with the lower
    request ids; a change of queue, a put of another kind or a request ends the frame, and so
    does ``MERGED_PUT_BYTES``; a larger message goes alone."""
    from flowbroker.qm.client import MERGED_PUT_BYTES

    client, peer = _client()
    messages = [encode_message(MessageDescriptor(msg_id=bytes([i]) * 24), None, b"m%d" % i) for i in range(7)]
    big = encode_message(MessageDescriptor(msg_id=b"B" * 24), None, b"x" * MERGED_PUT_BYTES)
    for m in messages[:3]:
        client.put_encoded("A", m, syncpoint=True, deferred=True)
    client.put_encoded("B", messages[3], syncpoint=True, deferred=True)
    client.put_deferred("B", b"body", MessageDescriptor(msg_id=b"D" * 24))
    client.put_encoded("B", messages[4], syncpoint=True, deferred=True)
    client.put_encoded("B", big, syncpoint=True, deferred=True)
    client.put_encoded("B", messages[5], syncpoint=True, deferred=True)
    client.put_encoded("B", messages[6], syncpoint=True, deferred=True)
    client._send(OP_PUT, {"q": "C"}, b"")  # a request: the kept puts leave first
    peer.setblocking(False)
    data = b""
    while True:
        try:
            data += peer.recv(1 << 22)
        except BlockingIOError:
            break
    frames = FrameDecoder().feed(data)
    deferred = {"sync": True, "noreply": True}
    d = encode_message(MessageDescriptor(msg_id=b"D" * 24), None, b"body")
    expected = [
        (OP_PUT, 1, {"q": "A", **deferred}, b"".join(messages[:3])),
        (OP_PUT, 2, {"q": "B", **deferred}, messages[3]),
        (OP_PUT, 3, {"q": "B", **deferred}, d),
        (OP_PUT, 4, {"q": "B", **deferred}, messages[4]),
        (OP_PUT, 5, {"q": "B", **deferred}, big),
        (OP_PUT, 6, {"q": "B", **deferred}, b"".join(messages[5:7])),
        (OP_PUT, 7, {"q": "C"}, b""),
    ]
    assert frames == expected
    client._sock.close()


def _encoded(n: int) -> bytes:
    return encode_message(
        MessageDescriptor(msg_id=n.to_bytes(24, "big"), persistence=1), {"n": n}, b"m%d" % n
    )


def test_kept_puts_commit_in_order_and_back_out_whole(client: Client, qname: str) -> None:
    """Against the queue manager: puts sent in one frame commit as the puts of separate frames
    do, in order, and a backout or a refused one among them leaves none."""
    from flowbroker.qm.protocol import RC_BACKED_OUT, QMError

    for n in range(10):
        client.put_encoded(qname, _encoded(n), syncpoint=True, deferred=True)
    client.commit()
    got = client.get_many(qname, 20)
    assert [m.body for m in got] == [b"m%d" % n for n in range(10)]
    assert [m.properties["n"] for m in got] == list(range(10))

    for n in range(5):
        client.put_encoded(qname, _encoded(n), syncpoint=True, deferred=True)
    client.backout()
    assert client.get_many(qname, 20) == []

    client.alter_queue(qname, max_depth=3)
    for n in range(5):  # the fourth is refused: the whole unit of work backs out
        client.put_encoded(qname, _encoded(n), syncpoint=True, deferred=True)
    with pytest.raises(QMError) as refused:
        client.commit()
    assert refused.value.reason_code == RC_BACKED_OUT and "2053" in str(refused.value)
    assert client.get_many(qname, 20) == []
