"""Streaming queues to a topic: the copy follows the original's unit of work, and MUSTDUP holds."""

from __future__ import annotations

from pathlib import Path

import pytest
from flowbroker.qm.client import Client, MessageDescriptor, QMError
from flowbroker.qm.harness import QueueManagerProcess

pytestmark = pytest.mark.timeout(90)

PERSISTENT = MessageDescriptor(persistence=1)


def _setup(c: Client, src: str, copies: str, qos: str, topic: str) -> None:
    for name in (src, copies):
        c.define_queue(name, replace=True)
        c.purge(name)
    c.subscribe(f"{topic}/#", copies, name=f"stream-{copies}")
    c.alter_queue(src, stream_queue=f"topic:{topic}/{src}", stream_qos=qos)


@pytest.mark.parametrize("qos", ["BESTEF", "MUSTDUP"])
@pytest.mark.parametrize("persistence", [0, 1])
def test_copy_to_a_topic_follows_the_unit_of_work(client: Client, qos: str, persistence: int) -> None:
    src, copies = f"S.{qos}.{persistence}", f"S.{qos}.{persistence}.COPIES"
    _setup(client, src, copies, qos, "audit")
    md = MessageDescriptor(persistence=persistence)
    client.put(src, b"backed-out", md, syncpoint=True)
    assert client.inquire_queue(copies)["available"] == 0  # not before commit
    client.backout()
    assert client.inquire_queue(copies)["current_depth"] == 0  # and never after backout
    client.put(src, b"committed", md, syncpoint=True)
    assert client.inquire_queue(copies)["available"] == 0
    client.commit()
    copy = client.get(copies)
    assert copy is not None and copy.body == b"committed"
    assert copy.properties["MQTopicString"] == f"audit/{src}" and copy.md.persistence == persistence
    client.put(src, b"outside", md)
    copy = client.get(copies)
    assert copy is not None and copy.body == b"outside"
    assert [m.body for m in client.get_many(src, 10)] == [b"committed", b"outside"]
    client.unsubscribe(f"stream-{copies}")


@pytest.mark.parametrize("syncpoint", [False, True])
def test_must_duplicate_refuses_the_original_when_no_copy_can_be_made(
    client: Client, syncpoint: bool
) -> None:
    src, copies = f"S.MUSTDUP.FULL.{int(syncpoint)}", f"S.MUSTDUP.FULL.{int(syncpoint)}.COPIES"
    _setup(client, src, copies, "MUSTDUP", "ledger")
    client.alter_queue(copies, max_depth=1)
    client.put(src, b"first", syncpoint=syncpoint)
    with pytest.raises(QMError) as e:
        client.put(src, b"second", syncpoint=syncpoint)  # the subscriber's queue is full
    assert e.value.reason_code == 2600
    assert "2053" in e.value.reason and "ledger/" in e.value.reason
    if syncpoint:
        client.commit()
    assert [m.body for m in client.browse(src)] == [b"first"]
    assert [m.body for m in client.browse(copies)] == [b"first"]
    client.unsubscribe(f"stream-{copies}")


@pytest.mark.parametrize("syncpoint", [False, True])
def test_best_effort_keeps_the_original_when_no_copy_can_be_made(client: Client, syncpoint: bool) -> None:
    src, copies = f"S.BESTEF.FULL.{int(syncpoint)}", f"S.BESTEF.FULL.{int(syncpoint)}.COPIES"
    _setup(client, src, copies, "BESTEF", "journal")
    client.alter_queue(copies, max_depth=1)
    client.put(src, b"first", PERSISTENT, syncpoint=syncpoint)
    client.put(src, b"second", PERSISTENT, syncpoint=syncpoint)
    if syncpoint:
        client.commit()
    assert [m.body for m in client.browse(src)] == [b"first", b"second"]
    assert [m.body for m in client.browse(copies)] == [b"first"]
    client.unsubscribe(f"stream-{copies}")


def test_persistent_copies_to_a_topic_survive_a_restart(data_dir: Path) -> None:
    with QueueManagerProcess(data_dir) as qm, qm.client() as c:
        _setup(c, "SRC", "COPIES", "MUSTDUP", "durable")
        c.put("SRC", b"one", PERSISTENT)
        c.put("SRC", b"two", PERSISTENT, syncpoint=True)
        c.commit()
        c.put("SRC", b"never", PERSISTENT, syncpoint=True)
    with QueueManagerProcess(data_dir) as qm, qm.client() as c:
        assert [m.body for m in c.browse("COPIES")] == [b"one", b"two"]
        assert [m.body for m in c.browse("SRC")] == [b"one", b"two"]


def test_stream_to_an_invalid_topic_is_refused_when_defined(client: Client) -> None:
    with pytest.raises(QMError) as e:
        client.define_queue("S.BADTOPIC", replace=True, stream_queue="topic:a/+/b")
    assert e.value.reason_code == 2046 and "stream_queue" in e.value.reason
