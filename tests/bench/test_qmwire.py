"""The lean one-message-per-frame driver of our own protocol: its frames, and a real queue manager."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
from flowbroker.qm.client import AsyncClient, resolve_address
from flowbroker.qm.harness import QueueManagerProcess
from flowbroker.qm.protocol import OP_COMMIT, OP_PUT, FrameDecoder, decode_message
from flowbroker_bench import qmwire


class _Writer:
    def __init__(self) -> None:
        self.data = bytearray()

    def write(self, data: bytes) -> None:
        self.data += data


def _putter(persistent: bool, unit: int, max_batch: int) -> tuple[qmwire.Putter, _Writer]:
    writer = _Writer()
    wire = SimpleNamespace(writer=writer)
    putter = qmwire.Putter(wire, "Q1", b"b" * 100, persistent=persistent, unit=unit, max_batch=max_batch)  # type: ignore[arg-type]
    return putter, writer


def test_persistent_puts_go_in_units_each_followed_by_its_commit() -> None:
    putter, writer = _putter(True, unit=4, max_batch=10)  # the block holds two whole units
    putter.write(12)
    putter.write(4)
    frames = FrameDecoder().feed(bytes(writer.data))
    ops = [op for op, *_ in frames]
    assert ops == ([OP_PUT] * 4 + [OP_COMMIT]) * 4
    puts = [f for f in frames if f[0] == OP_PUT]
    assert {str(f[2]) for f in puts} == {str({"q": "Q1", "sync": True, "noreply": True})}
    messages = [decode_message(f[3]) for f in puts]
    assert len({m.md.msg_id for m in messages}) == 16  # each put its own msgId, across writes too
    assert {(m.md.persistence, m.body) for m in messages} == {(1, b"b" * 100)}
    assert putter.published == 16 and putter.unconfirmed == 16
    with pytest.raises(ValueError, match="whole units of 4, not 6"):
        putter.write(6)


def test_transient_puts_are_plain_answered_puts() -> None:
    putter, writer = _putter(False, unit=100, max_batch=5)
    putter.write(7)
    frames = FrameDecoder().feed(bytes(writer.data))
    assert [(op, args) for op, _, args, _ in frames] == [(OP_PUT, {"q": "Q1"})] * 7
    assert len({decode_message(f[3]).md.msg_id for f in frames}) == 7
    assert {decode_message(f[3]).md.persistence for f in frames} == {0}
    assert putter.unconfirmed == 0


async def _wait_for(check: object, what: str, seconds: float = 20) -> None:
    deadline = time.monotonic() + seconds
    while not check():  # type: ignore[operator]
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.01)


async def _depth(qm: QueueManagerProcess, queue: str) -> int:
    admin = await AsyncClient.connect(qm.url, data_dir=str(qm.data_dir))
    try:
        return int((await admin.inquire_queue(queue))["current_depth"])
    finally:
        await admin.close()


@pytest.mark.timeout(120)
async def test_transient_messages_all_arrive_once(tmp_path: Path) -> None:
    with QueueManagerProcess(tmp_path / "qm") as qm:
        admin = await AsyncClient.connect(qm.url, data_dir=str(qm.data_dir))
        await admin.define_queue("BENCH.T")
        await admin.close()
        (host, port), user, password = resolve_address(qm.url, str(qm.data_dir), None, None)  # type: ignore[misc]
        seen: list[bytes] = []
        getter = await qmwire.Getter.open(
            host, port, user, password, "BENCH.T", syncpoint=False, prefetch=64, on_message=seen.append
        )
        putter = await qmwire.Putter.open(
            host, port, user, password, "BENCH.T", b"t" * 1024, persistent=False, max_batch=128
        )
        putter.write(300)
        await _wait_for(lambda: getter.delivered >= 300 and putter.replies >= 300, "300 messages")
        await asyncio.sleep(0.1)
        assert (getter.delivered, putter.replies, getter.error, putter.error) == (300, 300, None, None)
        messages = [decode_message(raw) for raw in seen]
        assert len({m.md.msg_id for m in messages}) == 300
        assert {m.body for m in messages} == {b"t" * 1024}
        await putter.close()
        await getter.close()
        assert await _depth(qm, "BENCH.T") == 0


@pytest.mark.timeout(120)
async def test_persistent_units_of_work_survive_a_crash_once_committed(tmp_path: Path) -> None:
    data = tmp_path / "qm"
    with QueueManagerProcess(data) as qm:
        admin = await AsyncClient.connect(qm.url, data_dir=str(qm.data_dir))
        await admin.define_queue("BENCH.P")
        await admin.close()
        (host, port), user, password = resolve_address(qm.url, str(qm.data_dir), None, None)  # type: ignore[misc]
        putter = await qmwire.Putter.open(
            host, port, user, password, "BENCH.P", b"p" * 1024, persistent=True, unit=50, max_batch=100
        )
        putter.write(300)
        await _wait_for(lambda: putter.confirmed >= 300, "300 confirmed puts")
        assert putter.error is None
        qm.kill()  # every commit was answered, so all 300 must come back
        port = qm.port
    with QueueManagerProcess(data, port) as qm:
        assert await _depth(qm, "BENCH.P") == 300
        getter = await qmwire.Getter.open(
            host, port, user, password, "BENCH.P", syncpoint=True, unit=50, prefetch=120
        )
        await _wait_for(lambda: getter.delivered >= 300, "300 messages got")
        getter.commit_now()
        await _wait_for(lambda: getter.commits == getter.commits_sent, "the last commit's reply")
        assert (getter.delivered, getter.error) == (300, None)
        qm.kill()  # the gets were committed: none may come back
    with QueueManagerProcess(data, port) as qm:
        assert await _depth(qm, "BENCH.P") == 0
