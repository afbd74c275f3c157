"""Deep queues: memory bounded by the queue's buffer, the rest spilled to disk and read back in order."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from flowbroker.qm.client import Client, MessageDescriptor
from flowbroker.qm.harness import QueueManagerProcess

pytestmark = pytest.mark.timeout(90)

BUFFER = 64 * 1024


def test_spill_keeps_memory_bounded_and_order(client: Client, qname: str) -> None:
    client.alter_queue(qname, memory_buffer=BUFFER, max_depth=100_000)
    body = b"x" * 1000
    for start in range(0, 3000, 100):
        for i in range(start, start + 100):
            client.put(
                qname, body + str(i).encode(), MessageDescriptor(priority=i % 3, correl_id=f"c{i}".encode())
            )
    info = client.inquire_queue(qname)
    assert info["current_depth"] == 3000
    assert info["memory_bytes"] <= BUFFER
    assert info["spilled_messages"] > 2500
    deep = client.get(qname, correl_id=b"c2999")  # found by scanning the spill file
    assert deep is not None and deep.body.endswith(b"2999")
    browsed = [m.body for m in client.browse(qname, batch=500)]
    expected = [body + str(i).encode() for p in (2, 1, 0) for i in range(3000) if i % 3 == p and i != 2999]
    assert browsed == expected
    got: list[bytes] = []
    peak = 0
    while True:
        batch = client.get_many(qname, 250)
        if not batch:
            break
        got.extend(m.body for m in batch)
        peak = max(peak, client.inquire_queue(qname)["memory_bytes"])
    assert got == expected
    assert peak <= BUFFER + 256 * 1024  # the buffer plus at most one read-back chunk


def test_spilled_persistent_messages_survive_checkpoint_and_restart(tmp_path: Path) -> None:
    data = tmp_path / "data"
    with QueueManagerProcess(data) as qm, qm.client() as c:
        c.define_queue("DEEP", memory_buffer=BUFFER, max_depth=100_000)
        for start in range(0, 1000, 100):
            c.put_many(
                "DEEP",
                [f"m{i}".encode() * 100 for i in range(start, start + 100)],
                MessageDescriptor(persistence=1),
            )
        assert c.inquire_queue("DEEP")["spilled_messages"] > 500
        c.admin("checkpoint")
        deadline = time.monotonic() + 20
        while not list((data / "log").glob("*.ckpt")) and time.monotonic() < deadline:
            time.sleep(0.05)
    with QueueManagerProcess(data) as qm, qm.client() as c:
        bodies: list[bytes] = []
        while batch := c.get_many("DEEP", 300):
            bodies.extend(m.body for m in batch)
        assert bodies == [f"m{i}".encode() * 100 for i in range(1000)]


def _spilled_queue(c: Client, name: str, n: int, size: int = 1000, buffer: int = 4096) -> list[bytes]:
    c.define_queue(name, replace=True, memory_buffer=buffer, max_depth=1_000_000)
    c.purge(name)
    bodies = [b"%d." % i + b"x" * size for i in range(n)]
    for i, body in enumerate(bodies):
        c.put(name, body, MessageDescriptor(correl_id=f"c{i}".encode()))
    return bodies


@pytest.mark.parametrize("by", ["correl_id", "msg_id"])
def test_backed_out_get_by_id_of_a_spilled_message_keeps_its_place(client: Client, by: str) -> None:
    name = f"DEEP.BACKOUT.{by.upper()}"
    bodies = _spilled_queue(client, name, 10)
    assert client.inquire_queue(name)["spilled_messages"] >= 7
    target = next(m for m in client.browse(name) if m.body == bodies[7])
    key = {"correl_id": b"c7"} if by == "correl_id" else {"msg_id": target.md.msg_id}
    got = client.get(name, syncpoint=True, **key)
    assert got is not None and got.body == bodies[7]
    client.backout()
    assert [m.body for m in client.browse(name)] == bodies
    got_all = [client.get(name) for _ in range(10)]
    assert [m.body for m in got_all if m] == bodies
    assert [m.md.backout_count for m in got_all if m] == [0] * 7 + [1] + [0] * 2


def test_oldest_message_age_counts_spilled_messages(client: Client) -> None:
    name = "DEEP.AGE"
    client.define_queue(name, replace=True, memory_buffer=4096)
    client.purge(name)
    client.put(name, b"a" * 3500, MessageDescriptor(priority=5))  # fills the memory buffer
    client.put(name, b"old" * 400, MessageDescriptor(priority=0))  # so this one is spilled
    old = next(m for m in client.browse(name) if m.md.priority == 0)
    assert client.get(name) is not None  # the buffer is free again
    time.sleep(0.3)  # so the two put times differ by more than an inquire takes
    client.put(name, b"new", MessageDescriptor(priority=9))  # in memory
    assert client.inquire_queue(name)["spilled_messages"] == 1
    before = time.time()
    age = client.inquire_queue(name)["oldest_message_age"]
    assert age >= before - old.md.put_time


def test_browse_reads_each_spilled_message_once(client: Client) -> None:
    name = "DEEP.BROWSE"
    bodies = _spilled_queue(client, name, 400, size=2000)
    spill_size = sum(len(b) + 200 for b in bodies)
    read_before = client.inquire_queue(name)["spill_bytes_read"]
    assert [m.body for m in client.browse(name, batch=1)] == bodies
    read = client.inquire_queue(name)["spill_bytes_read"] - read_before
    # Quadratic re-reading would be ~200 times the spill file; streaming reads it about once.
    assert read <= 3 * spill_size


def test_get_by_id_of_a_spilled_message_uses_the_index(client: Client) -> None:
    name = "DEEP.INDEX"
    bodies = _spilled_queue(client, name, 400, size=2000)
    assert client.get(name, correl_id=b"c0") is not None  # builds the index
    for i in (399, 250, 123, 7):
        first = client.inquire_queue(name)["spill_bytes_read"]
        before = client.inquire_queue(name)["spill_bytes_read"]
        inquire_cost = before - first  # an inquire reads the head of the spill file for the age
        m = client.get(name, correl_id=f"c{i}".encode())
        assert m is not None and m.body == bodies[i]
        get_cost = client.inquire_queue(name)["spill_bytes_read"] - before - inquire_cost
        assert get_cost <= len(bodies[i]) + 256  # the message itself, not a scan of the file
    rest = [m.body for m in client.browse(name, batch=100)]
    assert rest == [b for i, b in enumerate(bodies) if i not in (0, 399, 250, 123, 7)]
    later = _spilled_queue(client, name, 0)  # purge, then the index follows new spills too
    assert later == []
    client.put(name, b"y" * 5000, MessageDescriptor(correl_id=b"late"))
    client.put(name, b"z" * 5000, MessageDescriptor(correl_id=b"later"))
    m = client.get(name, correl_id=b"later")
    assert m is not None and m.body == b"z" * 5000


def _peak_rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    raise AssertionError("no VmHWM in /proc status")


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="needs Linux /proc to read peak RSS")
def test_browse_checkpoint_and_purge_of_a_deep_queue_stay_within_bounded_memory(tmp_path: Path) -> None:
    body = b"d" * (256 * 1024)
    total_mb = 48
    with QueueManagerProcess(tmp_path / "data") as qm, qm.client() as c:
        c.define_queue("DEEP.RSS", memory_buffer=BUFFER, max_depth=100_000, max_msg_length=1 << 20)
        for _ in range(total_mb * 4):
            c.put("DEEP.RSS", body, MessageDescriptor(persistence=1))
        assert c.inquire_queue("DEEP.RSS")["spilled_messages"] >= total_mb * 4 - 1
        base = _peak_rss_kb(qm.pid)
        assert sum(1 for _ in c.browse("DEEP.RSS", batch=2)) == total_mb * 4
        assert c.get("DEEP.RSS", msg_id=b"no such id") is None
        c.admin("checkpoint")
        deadline = time.monotonic() + 60
        while not list((tmp_path / "data" / "log").glob("*.ckpt")) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert list((tmp_path / "data" / "log").glob("*.ckpt"))
        assert c.purge("DEEP.RSS") == total_mb * 4
        grown_mb = (_peak_rss_kb(qm.pid) - base) / 1024
        assert grown_mb < total_mb / 2, f"peak RSS grew by {grown_mb:.0f} MB over a {total_mb} MB spill"
    with QueueManagerProcess(tmp_path / "data") as qm, qm.client() as c:
        assert c.inquire_queue("DEEP.RSS")["current_depth"] == 0  # the purge was logged
