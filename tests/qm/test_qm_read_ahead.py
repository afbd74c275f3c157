"""Read-ahead of non-persistent messages got outside a unit of work, and asynchronous puts."""

from __future__ import annotations

import pytest
from flowbroker.qm.client import Client, MessageDescriptor, QMError
from flowbroker.qm.harness import QueueManagerProcess
from flowbroker.qm.protocol import OP_GET, RC_BAD_ARGUMENT, RC_Q_FULL, RC_UNKNOWN_OBJECT_NAME

NP = MessageDescriptor(persistence=0)
P = MessageDescriptor(persistence=1)


def _fill(client: Client, queue: str, n: int, md: MessageDescriptor = NP, start: int = 0) -> None:
    for i in range(start, start + n):
        client.put(queue, b"m%d" % i, md)


def _depth(client: Client, queue: str) -> int:
    return int(client.inquire_queue(queue)["current_depth"])


def test_read_ahead_keeps_order_and_its_bound(client: Client, qname: str) -> None:
    _fill(client, qname, 25)
    got = client.get_ahead(qname, 1, 10)
    assert [m.body for m in got] == [b"m0"]
    assert client.read_ahead_count(qname) == 9  # the bound: 10 sent at once
    assert _depth(client, qname) == 15
    bodies = [m.body for _ in range(24) for m in client.get_ahead(qname, 1, 10)]
    assert bodies == [b"m%d" % i for i in range(1, 25)]
    assert client.get_ahead(qname, 1, 10) == []
    assert _depth(client, qname) == 0


def test_a_normal_close_gives_unconsumed_messages_back_in_order(
    qm_process: QueueManagerProcess, client: Client, qname: str
) -> None:
    _fill(client, qname, 8)
    with qm_process.client() as reader:
        got = reader.get_ahead(qname, 2, 6)
        assert [m.body for m in got] == [b"m0", b"m1"]
        assert _depth(client, qname) == 2  # four more are in the reader's buffer
        # other consumers and browsers do not see the messages read ahead
        assert [m.body for m in client.browse(qname)] == [b"m6", b"m7"]
        assert client.get(qname).body == b"m6"  # type: ignore[union-attr]
    assert _depth(client, qname) == 5
    assert [m.body for m in client.browse(qname)] == [b"m2", b"m3", b"m4", b"m5", b"m7"]


def test_an_abnormal_end_loses_the_read_ahead_messages(
    qm_process: QueueManagerProcess, client: Client, qname: str
) -> None:
    _fill(client, qname, 5)
    reader = qm_process.client()
    reader.get_ahead(qname, 1, 5)
    reader._sock.close()  # ends without closing: non-persistent messages read ahead may be lost
    client.ping()
    assert _depth(client, qname) == 0


def test_persistent_messages_are_never_read_ahead(client: Client, qname: str) -> None:
    _fill(client, qname, 2)
    _fill(client, qname, 1, P, start=2)
    _fill(client, qname, 2, start=3)
    got = client.get_ahead(qname, 1, 10)
    assert client.read_ahead_count(qname) == 1  # the batch stops before the persistent message
    assert [m.body for m in got] == [b"m0"]
    assert client.get_ahead(qname, 1, 10)[0].body == b"m1"
    persistent = client.get_ahead(qname, 1, 10)
    assert [m.body for m in persistent] == [b"m2"] and persistent[0].md.persistence == 1
    assert client.read_ahead_count(qname) == 0
    assert [m.body for m in client.get_ahead(qname, 2, 10)] == [b"m3", b"m4"]


def test_gets_under_syncpoint_are_not_read_ahead(client: Client, qname: str) -> None:
    _fill(client, qname, 3)
    assert len(client.get_many(qname, 1, syncpoint=True)) == 1
    client.backout()
    assert _depth(client, qname) == 3


def test_read_ahead_waits_for_a_first_message(
    qm_process: QueueManagerProcess, client: Client, qname: str
) -> None:
    assert client.get_ahead(qname, 1, 10, wait=0.05) == []


def test_malformed_read_ahead_requests_are_refused(client: Client, qname: str) -> None:
    _fill(client, qname, 3)
    for args in (
        {"q": qname, "ahead": 0},
        {"q": qname, "ahead": "5"},
        {"q": qname, "ahead": True},
        {"q": qname, "ahead": 5, "sync": True},
        {"q": qname, "ahead": 5, "msg_id": "00" * 24},
        {"q": qname, "unread": -1},
        {"q": qname, "unread": 1.5},
    ):
        with pytest.raises(QMError) as e:
            client._call(OP_GET, args)
        assert e.value.reason_code == RC_BAD_ARGUMENT, args
    with pytest.raises(QMError) as e:
        client._call(OP_GET, {"q": "T.NO.SUCH.QUEUE", "ahead": 5})
    assert e.value.reason_code == RC_UNKNOWN_OBJECT_NAME
    # giving back more than the last read-ahead sent gives back only what it sent
    client.get_ahead(qname, 1, 2)
    args, _ = client._call(OP_GET, {"q": qname, "unread": 50})
    assert args == {"returned": 2}
    client._ahead.clear()
    assert _depth(client, qname) == 3
    args, _ = client._call(OP_GET, {"q": qname, "unread": 1})
    assert args == {"returned": 0}  # nothing lent any more
    assert _depth(client, qname) == 3


def test_asynchronous_puts_arrive_in_order(client: Client, qname: str) -> None:
    for i in range(50):
        client.put_nowait(qname, b"a%d" % i, NP)
    assert client.async_status() == {"puts": 50, "failed": 0}
    assert [m.body for m in client.get_many(qname, 100)] == [b"a%d" % i for i in range(50)]


def test_a_refused_asynchronous_put_is_reported_later(client: Client, qname: str) -> None:
    client.alter_queue(qname, max_depth=2)
    for i in range(3):
        client.put_nowait(qname, b"x%d" % i, NP)
    # the next call that waits for a reply raises the refusal instead of being sent
    with pytest.raises(QMError) as e:
        client.async_status()
    assert e.value.reason_code == RC_Q_FULL and qname in e.value.reason
    assert client.async_put_failures == 1
    assert _depth(client, qname) == 2  # raised once, then the connection goes on
    client.put_nowait("T.NO.SUCH.QUEUE", b"y", NP)
    client.ping()  # the refusal may arrive while this waits: it is kept, not lost
    with pytest.raises(QMError) as e:
        client.inquire_queue(qname)
    assert e.value.reason_code == RC_UNKNOWN_OBJECT_NAME
    assert client.async_put_failures == 2
    assert _depth(client, qname) == 2
