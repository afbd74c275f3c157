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
