"""Against the real queue manager process: ordering, priorities, ids, waits, units of work, backout, expiry."""

from __future__ import annotations

import threading
import time

import pytest
from flowbroker.qm.client import Client, MessageDescriptor, QMError
from flowbroker.qm.harness import QueueManagerProcess

pytestmark = pytest.mark.timeout(60)


def test_fifo_within_priority_and_priority_order(client: Client, qname: str) -> None:
    for i, prio in enumerate([0, 5, 0, 9, 5, 0]):
        client.put(qname, f"{prio}-{i}".encode(), MessageDescriptor(priority=prio))
    got = [client.get(qname) for _ in range(6)]
    assert [m.body for m in got if m] == [b"9-3", b"5-1", b"5-4", b"0-0", b"0-2", b"0-5"]
    assert client.get(qname) is None


def test_get_by_correl_id_and_msg_id(client: Client, qname: str) -> None:
    for i in range(50):
        client.put(qname, f"m{i}".encode(), MessageDescriptor(correl_id=f"C{i % 5}".encode()))
    m = client.get(qname, correl_id=b"C3")
    assert m is not None and m.body == b"m3"
    m = client.get(qname, correl_id=b"C3")
    assert m is not None and m.body == b"m8"
    mid = client.put(qname, b"target")
    got = client.get(qname, msg_id=mid)
    assert got is not None and got.body == b"target" and got.md.msg_id == mid
    assert client.get(qname, correl_id=b"nothing") is None
    assert client.inquire_queue(qname)["current_depth"] == 48


def test_get_wait_is_satisfied_by_a_later_put(
    qm_process: QueueManagerProcess, client: Client, qname: str
) -> None:
    def later() -> None:
        time.sleep(0.3)
        with qm_process.client() as other:
            other.put(qname, b"late")

    t = threading.Thread(target=later)
    t.start()
    m = client.get(qname, wait=10)
    t.join()
    assert m is not None and m.body == b"late"
    assert client.get(qname, wait=0.2) is None


def test_reply_queue_shared_by_correl_id(qm_process: QueueManagerProcess, client: Client, qname: str) -> None:
    """Seed 000's pattern: requesters wait on one reply queue, each for its own correlId."""
    client.define_queue("T.REPLIES", replace=True)
    client.purge("T.REPLIES")
    mid = client.put("SYSTEM.BROKER.ECHO", b"ping", MessageDescriptor(reply_to_q="T.REPLIES"))
    reply = client.get("T.REPLIES", correl_id=mid, wait=5)
    assert reply is not None and reply.body == b"ping" and reply.md.correl_id == mid


def test_syncpoint_commit_and_backout(qm_process: QueueManagerProcess, client: Client, qname: str) -> None:
    client.put(qname, b"a", syncpoint=True)
    client.put(qname, b"b", syncpoint=True)
    with qm_process.client() as other:
        assert other.get(qname) is None  # uncommitted puts are invisible
        assert other.inquire_queue(qname)["current_depth"] == 2  # but count toward depth, as in MQ
    client.commit()
    m = client.get(qname, syncpoint=True)
    assert m is not None and m.body == b"a"
    client.backout()
    again = client.get(qname)
    assert again is not None and again.body == b"a" and again.md.backout_count == 1
    client.put(qname, b"x", syncpoint=True)
    client.backout()
    rest = client.get(qname)
    assert rest is not None and rest.body == b"b"
    assert client.get(qname) is None


def test_purge_takes_messages_got_in_open_units_of_work(
    qm_process: QueueManagerProcess, client: Client, qname: str
) -> None:
    """A consumer that keeps backing out a message (a flow retrying it) cannot keep it through a purge."""
    client.put(qname, b"held", MessageDescriptor(persistence=1))
    client.put(qname, b"waiting")
    with qm_process.client() as consumer:
        assert consumer.get(qname, syncpoint=True) is not None
        assert client.inquire_queue(qname)["current_depth"] == 2
        assert client.purge(qname) == 2
        assert client.inquire_queue(qname)["current_depth"] == 0
        consumer.backout()
        assert client.inquire_queue(qname)["current_depth"] == 0
        assert consumer.get(qname) is None
        # the consumer's unit of work goes on without it
        assert consumer.get(qname, syncpoint=True) is None
        consumer.put(qname, b"after", syncpoint=True)
        consumer.commit()
    got = client.get(qname)
    assert got is not None and got.body == b"after"


def test_backed_out_get_returns_to_its_place(client: Client, qname: str) -> None:
    for i in range(5):
        client.put(qname, str(i).encode())
    first = client.get(qname, syncpoint=True)
    second = client.get(qname, syncpoint=True)
    assert first and second
    client.backout()
    bodies = [m.body for m in iter(lambda: client.get(qname), None)]
    assert bodies == [b"0", b"1", b"2", b"3", b"4"]


def test_deferred_puts_commit_together_in_one_write(
    qm_process: QueueManagerProcess, client: Client, qname: str
) -> None:
    client.put(qname, b"in")
    got = client.get(qname, syncpoint=True)
    assert got is not None
    ids = [client.put_deferred(qname, f"d{i}".encode()) for i in range(3)]
    with qm_process.client() as other:
        assert other.inquire_queue(qname)["current_depth"] == 1  # nothing sent before the commit
    client.commit()
    bodies = [(m.body, m.md.msg_id) for m in iter(lambda: client.get(qname), None)]
    assert bodies == [(b"d0", ids[0]), (b"d1", ids[1]), (b"d2", ids[2])]


def test_refused_deferred_put_backs_out_the_whole_unit_of_work(client: Client, qname: str) -> None:
    client.alter_queue(qname, max_depth=3)
    client.put(qname, b"in")
    assert client.get(qname, syncpoint=True) is not None
    client.put_deferred(qname, b"fits")
    client.put_deferred(qname, b"fits too")
    client.put_deferred(qname, b"one too many")  # input + 3 puts exceed max depth 3
    client.put_deferred("NO.SUCH.QUEUE", b"refused as well; the first refusal is reported")
    with pytest.raises(QMError) as info:
        client.commit()
    assert info.value.reason_code == 2003
    assert "2053" in info.value.reason and "is full" in info.value.reason
    rest = [m for m in iter(lambda: client.get(qname), None)]
    assert [m.body for m in rest] == [b"in"] and rest[0].md.backout_count == 1
    client.put_deferred(qname, b"next unit of work is clean")
    client.commit()
    assert client.get(qname) is not None


def test_backout_discards_deferred_puts_never_sent(client: Client, qname: str) -> None:
    client.put_deferred(qname, b"never")
    client.backout()
    client.commit()
    assert client.get(qname) is None


def test_malformed_deferred_put_dooms_the_unit_of_work(client: Client, qname: str) -> None:
    from flowbroker.qm.protocol import OP_PUT, encode_frame

    client._outbox.append(encode_frame(OP_PUT, 999_999, {"q": qname, "sync": True, "noreply": True}, b"\x01"))
    with pytest.raises(QMError) as info:
        client.commit()
    assert info.value.reason_code == 2003 and "truncated" in info.value.reason


def test_dropped_connection_backs_out_its_unit_of_work(qm_process: QueueManagerProcess, qname: str) -> None:
    with qm_process.client() as c:
        c.put(qname, b"keep")
    c2 = qm_process.client()
    assert c2.get(qname, syncpoint=True) is not None
    c2.put(qname, b"never", syncpoint=True)
    c2.close()
    with qm_process.client() as c3:
        m = c3.get(qname, wait=5)
        assert m is not None and m.body == b"keep" and m.md.backout_count == 1
        assert c3.get(qname) is None


def test_backout_threshold_moves_to_backout_queue(client: Client, qname: str) -> None:
    client.define_queue("T.BOQ", replace=True)
    client.purge("T.BOQ")
    client.alter_queue(qname, backout_threshold=2, backout_requeue_q="T.BOQ")
    client.put(qname, b"poison", MessageDescriptor(persistence=1))
    for _ in range(2):
        assert client.get(qname, syncpoint=True) is not None
        client.backout()
    assert client.get(qname) is None
    moved = client.get("T.BOQ")
    assert moved is not None and moved.body == b"poison" and moved.md.backout_count == 2
    # where it came from and why travel with it, so an operator can send it back
    assert moved.properties["flowbroker.queue"] == qname
    assert moved.properties["flowbroker.reason"] == (
        f"backout count 2 reached the backout threshold 2 of {qname}"
    )


def test_backout_notes_travel_with_a_message_moved_past_the_threshold(client: Client, qname: str) -> None:
    client.define_queue("T.BOQ", replace=True)
    client.purge("T.BOQ")
    client.alter_queue(qname, backout_threshold=1, backout_requeue_q="T.BOQ")
    client.put(qname, b"poison", MessageDescriptor(persistence=1))
    assert client.get(qname, syncpoint=True) is not None
    client.backout(notes={"flowbroker.node": "read", "flowbroker.exception": "ParserException in read"})
    moved = client.get("T.BOQ")
    assert moved is not None and moved.properties["flowbroker.node"] == "read"
    assert moved.properties["flowbroker.exception"] == "ParserException in read"
    assert moved.properties["flowbroker.queue"] == qname


def test_a_backed_out_message_comes_alone_in_a_batch(client: Client, qname: str) -> None:
    """A batch ends before a redelivered message, which is the only message of the next batch:
    a message that keeps failing never takes the messages got with it to their threshold."""
    client.put_many(qname, [b"a", b"b", b"c", b"d"], MessageDescriptor(persistence=1))
    assert [m.body for m in client.get_many(qname, 2, syncpoint=True)] == [b"a", b"b"]
    client.backout()
    # a and b are back in front with backout count 1
    batches = [[m.body for m in client.get_many(qname, 10, syncpoint=True)] for _ in range(3)]
    client.commit()
    assert batches == [[b"a"], [b"b"], [b"c", b"d"]]


def test_backout_threshold_without_backout_queue_uses_dead_letter_queue(client: Client, qname: str) -> None:
    client.purge("SYSTEM.DEAD.LETTER.QUEUE")
    client.alter_queue(qname, backout_threshold=1)
    client.put(qname, b"bad")
    assert client.get(qname, syncpoint=True) is not None
    client.backout()
    dl = client.get("SYSTEM.DEAD.LETTER.QUEUE")
    assert dl is not None and dl.body == b"bad"


def test_expiry(client: Client, qname: str) -> None:
    client.put(qname, b"short", MessageDescriptor(expiry=2))  # tenths of a second
    client.put(qname, b"long", MessageDescriptor(expiry=600))
    time.sleep(0.35)
    m = client.get(qname)
    assert m is not None and m.body == b"long"
    assert client.get(qname) is None


def test_browse_cursor_does_not_remove(client: Client, qname: str) -> None:
    for i in range(5):
        client.put(qname, str(i).encode(), MessageDescriptor(priority=i % 2))
    seen = [m.body for m in client.browse(qname, batch=2)]
    assert seen == [b"1", b"3", b"0", b"2", b"4"]
    assert client.inquire_queue(qname)["current_depth"] == 5
    m = client.get(qname, browse_cursor=0)
    assert m is not None and m.body == b"1"


def test_properties_and_descriptor_round_trip(client: Client, qname: str) -> None:
    md = MessageDescriptor(
        correl_id=b"corr", persistence=1, priority=7, reply_to_q="R.Q", format="MQSTR", group_id=b"g1"
    )
    client.put(qname, b"\x00\xffbinary", md, properties={"colour": "blue", "n": 3})
    m = client.get(qname)
    assert m is not None
    assert m.body == b"\x00\xffbinary" and m.properties == {"colour": "blue", "n": 3}
    assert m.md.correl_id.rstrip(b"\x00") == b"corr" and m.md.priority == 7 and m.md.persistence == 1
    assert m.md.reply_to_q == "R.Q" and m.md.format == "MQSTR" and m.md.group_id.rstrip(b"\x00") == b"g1"
    assert m.md.put_time > 0


def test_inquire_reports_depth_and_age(client: Client, qname: str) -> None:
    client.put(qname, b"x")
    time.sleep(0.05)
    info = client.inquire_queue(qname)
    assert info["current_depth"] == 1 and info["open_handles"] == 0
    assert info["oldest_message_age"] > 0
    assert any(q["name"] == qname for q in client.list_queues("T.*"))


def test_open_handles_count_connections_holding_the_queue_open(
    qm_process: QueueManagerProcess, client: Client, qname: str
) -> None:
    """Waiting in a get, holding a browse cursor or uncommitted work opens it; having used it does not."""

    def handles() -> int:
        return int(client.inquire_queue(qname)["open_handles"])

    client.put(qname, b"one")
    client.get(qname)
    assert handles() == 0  # used earlier, holds nothing now
    client.put(qname, b"kept")
    with qm_process.client() as waiter, qm_process.client() as browser, qm_process.client() as worker:
        cursor = browser.browse(qname, batch=1)
        assert next(cursor).body == b"kept"
        assert handles() == 1
        got: list[object] = []
        t = threading.Thread(target=lambda: got.append(waiter.get(qname, correl_id=b"for-waiter", wait=30)))
        t.start()
        deadline = time.monotonic() + 10
        while handles() < 2 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert handles() == 2
        worker.put(qname, b"pending", syncpoint=True)
        assert handles() == 3
        assert [q["open_handles"] for q in client.list_queues(qname)] == [3]
        worker.commit()
        assert handles() == 2
        worker.put(qname, b"answer", MessageDescriptor(correl_id=b"for-waiter"))
        t.join(10)
        assert got and handles() == 1  # the wait ended; the browse cursor is still open
        assert worker.get(qname, syncpoint=True) is not None
        assert handles() == 2
        worker.backout()
        cursor.close()  # closes the browse cursor
        assert handles() == 0
    assert handles() == 0


def test_streaming_queue_best_effort_and_must_duplicate(client: Client, qname: str) -> None:
    client.define_queue("T.STREAM", replace=True, max_depth=1)
    client.purge("T.STREAM")
    client.alter_queue(qname, stream_queue="T.STREAM", stream_qos="BESTEF")
    client.put(qname, b"one")
    client.put(qname, b"two")  # the stream queue is full: best effort keeps the original
    assert client.inquire_queue(qname)["current_depth"] == 2
    dup = client.get("T.STREAM")
    assert dup is not None and dup.body == b"one"
    client.put("T.STREAM", b"filler")
    client.alter_queue(qname, stream_qos="MUSTDUP")
    with pytest.raises(QMError) as exc:
        client.put(qname, b"three")
    assert exc.value.reason_code == 2053
    assert client.inquire_queue(qname)["current_depth"] == 2  # the original was refused too
    client.purge("T.STREAM")
    client.put(qname, b"four")
    assert client.get("T.STREAM") is not None


def test_streaming_copy_commits_with_the_unit_of_work(client: Client, qname: str) -> None:
    client.define_queue("T.STREAM2", replace=True)
    client.purge("T.STREAM2")
    client.alter_queue(qname, stream_queue="T.STREAM2", stream_qos="MUSTDUP")
    client.put(qname, b"tx", syncpoint=True)
    client.backout()
    assert client.inquire_queue("T.STREAM2")["current_depth"] == 0
    client.put(qname, b"tx", syncpoint=True)
    client.commit()
    assert client.inquire_queue("T.STREAM2")["current_depth"] == 1
