"""RabbitMQ commits sent ahead: the next batch is taken before the broker answers a commit, and
every way the answer can go wrong returns the gets it would have acknowledged."""

from __future__ import annotations

import time

import pytest
from flowbroker.qm.protocol import MessageDescriptor
from flowbroker.runtime import transports
from flowbroker.runtime.transports.amqp import AmqpTransport
from pika.spec import BasicProperties
from transport_support import wait_for

pytestmark = [pytest.mark.timeout(90)]


def _take(transport: AmqpTransport, queue: str, count: int) -> list:
    """``count`` messages got under syncpoint (over several gets when they come back one by one)."""
    got: list = []
    deadline = time.monotonic() + 10
    while len(got) < count and time.monotonic() < deadline:
        got += transport.get_many(queue, count - len(got), wait=1, syncpoint=True)
    return got


def _two_batches(rabbit, transport: AmqpTransport, base: str) -> tuple[str, str, list, list]:
    """A first batch of two got and its two outputs held, committed ahead with the second batch
    taken: the queues, the first batch and the second."""
    src, dst = rabbit.queue(f"{base}.IN", "classic"), rabbit.queue(f"{base}.OUT", "classic")
    for i in range(4):
        transport.put(src, b"in-%d" % i, MessageDescriptor(persistence=1))
    first = _take(transport, src, 2)
    for message in first:
        transport.put(dst, message.body + b"-out", syncpoint=True, pipeline=True)
    second = transport.commit_and_get(src, 2, wait=5)
    second += _take(transport, src, 2 - len(second))
    return src, dst, first, second


def test_a_commit_sent_ahead_acknowledges_its_gets_once_answered_and_close_settles_it(rabbit) -> None:
    transport = AmqpTransport.open(rabbit.url)
    try:
        src, dst, first, second = _two_batches(rabbit, transport, "AHEAD")
        assert [m.body for m in first + second] == [b"in-0", b"in-1", b"in-2", b"in-3"]
        assert transport._pending is not None or transport._got  # taken before, or after, the answer
        for message in second:
            transport.put(dst, message.body + b"-out", syncpoint=True, pipeline=True)
        assert transport.commit_and_get(src, 2, wait=0) == []
    finally:
        transport.close()  # the second batch's commit, still pending, is settled first
    wait_for(lambda: rabbit.depth(src) == 0, 10, f"{src} to be empty")
    assert rabbit.depth(dst) == 4


def test_a_commit_sent_ahead_whose_put_is_returned_backs_out_both_units_of_work(rabbit) -> None:
    transport = AmqpTransport.open(rabbit.url)
    try:
        src, dst = rabbit.queue("AHEAD.IN", "classic"), rabbit.queue("AHEAD.OUT", "classic")
        for i in range(4):
            transport.put(src, b"in-%d" % i, MessageDescriptor(persistence=1))
        transport.put(dst, b"checked")  # the transport now knows the queue exists
        rabbit.channel.queue_delete(dst)
        first = _take(transport, src, 2)
        for message in first:
            transport.put(dst, message.body + b"-out", syncpoint=True, pipeline=True)
        second = transport.commit_and_get(src, 2, wait=5)
        second += _take(transport, src, 2 - len(second))
        assert [m.body for m in second] == [b"in-2", b"in-3"]
        with pytest.raises(transports.TransportError) as caught:
            transport.commit()
        assert caught.value.reason_code == 2003 and "could not route" in caught.value.reason
        again = _take(transport, src, 4)  # nothing of either batch was acknowledged away
        assert sorted(m.body for m in again) == [b"in-0", b"in-1", b"in-2", b"in-3"]
        assert all(m.md.backout_count == 1 for m in again)
        transport.commit()
    finally:
        transport.close()
    wait_for(lambda: rabbit.depth(src) == 0, 10, f"{src} to be empty")


def test_a_commit_sent_ahead_on_a_transaction_the_broker_closes_loses_nothing(rabbit) -> None:
    transport = AmqpTransport.open(rabbit.url)
    try:
        src, dst = rabbit.queue("REFUSED.IN", "classic"), rabbit.queue("REFUSED.OUT", "classic")
        for i in range(4):
            transport.put(src, b"in-%d" % i)
        first = _take(transport, src, 2)
        transport.put(dst, first[0].body + b"-out", syncpoint=True, pipeline=True)
        # an exchange the broker does not know: it closes the transaction's channel (404)
        transport._held.append(("flowbroker.no-such-exchange", "k", b"x", BasicProperties(), False))
        second = transport.commit_and_get(src, 2, wait=5)
        second += _take(transport, src, 2 - len(second))
        with pytest.raises(transports.TransportError) as caught:
            transport.commit()
        assert caught.value.reason_code == 2003 and "refused its commit" in caught.value.reason
        again = _take(transport, src, 4)
        assert sorted(m.body for m in again) == [b"in-0", b"in-1", b"in-2", b"in-3"]
        for message in again:  # the transaction channel is opened again
            transport.put(dst, message.body + b"-out", syncpoint=True, pipeline=True)
        transport.commit()
    finally:
        transport.close()
    wait_for(lambda: rabbit.depth(src) == 0, 10, f"{src} to be empty")
    assert rabbit.depth(dst) == 4  # the refused transaction put nothing


def test_a_backout_while_a_commit_is_pending_settles_it_and_returns_only_its_own_gets(rabbit) -> None:
    transport = AmqpTransport.open(rabbit.url)
    try:
        src, dst, _first, second = _two_batches(rabbit, transport, "PENDING")
        transport.put(dst, b"dropped", syncpoint=True, pipeline=True)
        transport.backout()
        again = _take(transport, src, 2)
        assert sorted(m.body for m in again) == sorted(m.body for m in second)
        assert all(m.md.backout_count == 1 for m in again)
        transport.commit()
    finally:
        transport.close()
    wait_for(lambda: rabbit.depth(src) == 0, 10, f"{src} to be empty")
    assert rabbit.depth(dst) == 2  # the first batch's outputs, not the backed-out put


def test_a_connection_lost_with_a_commit_pending_loses_nothing(rabbit) -> None:
    transport = AmqpTransport.open(rabbit.url)
    try:
        src, dst, first, _second = _two_batches(rabbit, transport, "LOST")
        settled = transport._pending is None
        reader = transport._reader
        assert reader is not None
        impl = transport._conn._impl

        def corrupted(data: bytes) -> None:
            impl._on_data_available = reader.data_received
            reader.data_received(data[:-1] + b"\x00")  # the frame's end octet is wrong

        impl._on_data_available = corrupted
        with pytest.raises(transports.TransportError) as caught:
            transport.commit()
        assert caught.value.reason_code == 2009
    finally:
        transport.close()
    # at least once: every input is back on its queue, or its output was committed
    if settled:
        wait_for(lambda: rabbit.depth(src) == 2, 10, f"two inputs back on {src}")
        assert rabbit.depth(dst) == 2
    else:
        wait_for(lambda: rabbit.depth(src) == 4, 10, f"four inputs back on {src}")
        assert rabbit.depth(dst) in (0, 2)
    assert [m.body for m in first] == [b"in-0", b"in-1"]


def test_a_backout_that_finds_its_pending_commit_refused_returns_both_units_of_work(rabbit) -> None:
    transport = AmqpTransport.open(rabbit.url)
    try:
        src, dst = rabbit.queue("REFUSED.IN", "classic"), rabbit.queue("REFUSED.OUT", "classic")
        for i in range(4):
            transport.put(src, b"in-%d" % i)
        first = _take(transport, src, 2)
        transport.put(dst, first[0].body + b"-out", syncpoint=True, pipeline=True)
        transport._held.append(("flowbroker.no-such-exchange", "k", b"x", BasicProperties(), False))
        second = transport.commit_and_get(src, 2, wait=5)
        second += _take(transport, src, 2 - len(second))
        transport.backout()  # the unit of work is being backed out anyway: no error
        again = _take(transport, src, 4)
        assert sorted(m.body for m in again) == [b"in-0", b"in-1", b"in-2", b"in-3"]
        transport.commit()
    finally:
        transport.close()
    wait_for(lambda: rabbit.depth(src) == 0, 10, f"{src} to be empty")
    assert rabbit.depth(dst) == 0
