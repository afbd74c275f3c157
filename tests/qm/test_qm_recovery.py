"""Persistence: restart keeps exactly the committed persistent messages; SIGKILL and torn logs lose nothing committed."""

from __future__ import annotations

import random
import threading
import time
from pathlib import Path

import pytest
from flowbroker.qm import log as qlog
from flowbroker.qm.client import Client, MessageDescriptor, QMError
from flowbroker.qm.harness import QueueManagerProcess

pytestmark = pytest.mark.timeout(150)

PERSISTENT = MessageDescriptor(persistence=1)


def _drain(c: Client, queue: str) -> list[bytes]:
    out: list[bytes] = []
    while True:
        batch = c.get_many(queue, 500)
        if not batch:
            return out
        out.extend(m.body for m in batch)


def test_restart_keeps_committed_persistent_only(data_dir: Path) -> None:
    with QueueManagerProcess(data_dir) as qm, qm.client() as c:
        c.define_queue("P", max_depth=1000)
        c.put("P", b"persistent", PERSISTENT)
        c.put("P", b"transient", MessageDescriptor(persistence=0))
        c.put("P", b"committed-tx", PERSISTENT, syncpoint=True)
        c.commit()
        c.put("P", b"left-open", PERSISTENT, syncpoint=True)
        c.put("P", b"got", PERSISTENT)
        assert c.get("P", msg_id=c.put("P", b"got-then-removed", PERSISTENT)) is not None
        c.subscribe("news/#", "P", name="durable-sub")
        c.publish("weather", b"sunny", PERSISTENT, retain=True)
        c.define_user("carol", "carol-password")
        c.set_topic_acl("secret", "carol", publish=False)
        c.alter_queue("P", description="orders", max_depth=500)
    with QueueManagerProcess(data_dir) as qm, qm.client() as c:
        assert sorted(_drain(c, "P")) == [b"committed-tx", b"got", b"persistent"]
        assert c.publish("news/today", b"n") == 1
        c.define_queue("R")
        info = c.subscribe("weather", "R")
        assert info["retained_delivered"] == 1
        attrs = c.inquire_queue("P")
        assert attrs["description"] == "orders" and attrs["max_depth"] == 500
        with Client.connect(qm.url, user="carol", password="carol-password") as carol:
            with pytest.raises(QMError) as e:
                carol.publish("secret/x", b"x")
            assert e.value.reason_code == 2035


def test_backout_count_survives_restart(data_dir: Path) -> None:
    with QueueManagerProcess(data_dir) as qm, qm.client() as c:
        c.define_queue("B")
        c.put("B", b"m", PERSISTENT)
        c.get("B", syncpoint=True)
        c.backout()
    with QueueManagerProcess(data_dir) as qm, qm.client() as c:
        m = c.get("B")
        assert m is not None and m.md.backout_count == 1


def test_purged_message_of_an_open_unit_of_work_stays_gone_after_restart(data_dir: Path) -> None:
    with QueueManagerProcess(data_dir) as qm, qm.client() as c, qm.client() as consumer:
        c.define_queue("PG")
        c.put("PG", b"held", PERSISTENT)
        assert consumer.get("PG", syncpoint=True) is not None
        assert c.purge("PG") == 1
        c.put("PG", b"after", PERSISTENT)
    with QueueManagerProcess(data_dir) as qm, qm.client() as c:
        assert _drain(c, "PG") == [b"after"]


def test_checkpoint_then_restart(data_dir: Path) -> None:
    with QueueManagerProcess(data_dir) as qm, qm.client() as c:
        c.define_queue("C", max_depth=10000)
        c.put_many("C", [f"a{i}".encode() for i in range(300)], PERSISTENT)
        _ = [c.get("C") for _ in range(100)]
        c.admin("checkpoint")
        deadline = time.monotonic() + 20
        while not list((data_dir / "log").glob("*.ckpt")) and time.monotonic() < deadline:
            time.sleep(0.05)
        c.put_many("C", [f"b{i}".encode() for i in range(50)], PERSISTENT)
        c.get("C")
    assert list((data_dir / "log").glob("*.ckpt"))
    with QueueManagerProcess(data_dir) as qm, qm.client() as c:
        got = _drain(c, "C")
        assert got == [f"a{i}".encode() for i in range(101, 300)] + [f"b{i}".encode() for i in range(50)]


class _Load:
    """One round of transactional load: producers commit batches of 5, a consumer commits gets of 3."""

    def __init__(
        self, qm: QueueManagerProcess, round_no: int, committed: set[bytes], consumed: set[bytes]
    ) -> None:
        self.qm = qm
        self.round_no = round_no
        self.committed = committed
        self.consumed = consumed
        self.stop = threading.Event()
        self.lock = threading.Lock()
        self.counter = 0
        self.in_doubt: list[set[bytes]] = []
        self.consumed_in_doubt: list[set[bytes]] = []

    def producer(self, worker: int) -> None:
        try:
            c = self.qm.client()
        except QMError:
            return
        try:
            while not self.stop.is_set():
                with self.lock:
                    base = self.counter
                    self.counter += 5
                batch = {f"r{self.round_no}-w{worker}-{base + i}".encode() for i in range(5)}
                for body in sorted(batch):
                    c.put("CRASH", body, PERSISTENT, syncpoint=True)
                with self.lock:
                    self.in_doubt.append(batch)
                c.commit()
                with self.lock:
                    self.in_doubt.remove(batch)
                    self.committed.update(batch)
        except QMError:
            return
        finally:
            c.close()

    def consumer(self) -> None:
        try:
            c = self.qm.client()
        except QMError:
            return
        try:
            while not self.stop.is_set():
                msgs = [c.get("CRASH", syncpoint=True) for _ in range(3)]
                bodies = {m.body for m in msgs if m is not None}
                with self.lock:
                    self.consumed_in_doubt.append(bodies)
                c.commit()
                with self.lock:
                    self.consumed_in_doubt.remove(bodies)
                    self.consumed.update(bodies)
        except QMError:
            return
        finally:
            c.close()


def test_sigkill_under_transactional_load_keeps_exactly_the_committed_set(data_dir: Path) -> None:
    """Kill the real server at random moments while units of work commit; compare after each restart."""
    rnd = random.Random(20261122)
    committed: set[bytes] = set()
    consumed: set[bytes] = set()
    # Small checkpoints so kills also land during log rotation and checkpoint writing.
    qm = QueueManagerProcess(data_dir, checkpoint_mb=0.05)
    qm.start()
    with qm.client() as c:
        c.define_queue("CRASH", max_depth=1_000_000)
    try:
        for round_no in range(12):
            load = _Load(qm, round_no, committed, consumed)
            threads = [threading.Thread(target=load.producer, args=(w,)) for w in range(3)]
            threads.append(threading.Thread(target=load.consumer))
            for t in threads:
                t.start()
            time.sleep(rnd.uniform(0.05, 0.4))
            qm.kill()
            load.stop.set()
            for t in threads:
                t.join(30)
            qm.start()
            with qm.client() as c:
                present = [m.body for m in c.browse("CRASH", batch=1000)]
            doubtful_puts: set[bytes] = set().union(*load.in_doubt)
            doubtful_gets: set[bytes] = set().union(*load.consumed_in_doubt)
            assert len(present) == len(set(present)), "a message was restored twice"
            present_set = set(present)
            # Commits that returned are there unless a consumer's returned commit removed them.
            must = committed - consumed - doubtful_gets
            assert must <= present_set, f"round {round_no}: lost {len(must - present_set)} committed"
            may = committed | doubtful_puts
            assert present_set <= may, (
                f"round {round_no}: {len(present_set - may)} uncommitted messages restored"
            )
            assert not (present_set & (consumed - doubtful_gets)), "a committed get came back"
            # In-doubt units resolve one way or the other: adopt what recovery decided.
            committed |= present_set & doubtful_puts
            consumed |= doubtful_gets - present_set
        assert len(committed) > 100 and len(consumed) > 10, "the load never reached the kill points"
        assert list((data_dir / "log").glob("*.ckpt")), "no checkpoint was taken under load"
    finally:
        qm.stop()


def test_log_cut_at_random_offsets_recovers_every_record_before_the_cut(tmp_path: Path) -> None:
    log_dir = tmp_path / "log"
    log_dir.mkdir()
    w = qlog.LogWriter(log_dir, 1)
    ends: list[int] = []
    done = threading.Event()
    total = 0
    for i in range(200):
        rec = qlog.TxRecord(puts=[("Q", i + 1, f"message {i} ".encode() * (i % 7 + 1))]).encode()
        total += len(rec)
        ends.append(total)
        w.append(rec, done.set if i == 199 else None)
    done.wait(10)
    w.close()
    path = log_dir / "00000001.log"
    full = path.read_bytes()
    assert len(full) == total
    rnd = random.Random(7)
    for cut in [0, 1, 8, total - 1, *(rnd.randrange(total) for _ in range(60))]:
        path.write_bytes(full[:cut])
        generation, files = qlog.recover(log_dir)
        recs = files[0].records if files else []
        expected = sum(1 for e in ends if e <= cut)
        assert len(recs) == expected
        for i, (rtype, payload) in enumerate(recs):
            tx = qlog.TxRecord.decode(payload)
            assert rtype == qlog.REC_TX and tx.puts[0][1] == i + 1
        assert path.stat().st_size == (ends[expected - 1] if expected else 0)  # the torn tail is cut


def test_corrupt_byte_stops_replay_at_that_record(tmp_path: Path) -> None:
    log_dir = tmp_path / "log"
    log_dir.mkdir()
    recs = [qlog.TxRecord(puts=[("Q", i, b"x" * 50)]).encode() for i in range(10)]
    data = bytearray(b"".join(recs))
    data[len(recs[0]) * 4 + 20] ^= 0xFF
    (log_dir / "00000001.log").write_bytes(bytes(data))
    _, files = qlog.recover(log_dir)
    assert len(files[0].records) == 4


def test_torn_tail_from_a_real_server_log(data_dir: Path) -> None:
    with QueueManagerProcess(data_dir) as qm, qm.client() as c:
        c.define_queue("T")
        for i in range(20):
            c.put("T", f"m{i}".encode(), PERSISTENT)
    log = sorted((data_dir / "log").glob("*.log"))[-1]
    raw = log.read_bytes()
    log.write_bytes(raw + b"\x10\x00\x00\x00garbage")  # a record header whose body never arrived
    with QueueManagerProcess(data_dir) as qm, qm.client() as c:
        assert _drain(c, "T") == [f"m{i}".encode() for i in range(20)]


def test_expiry_sweep_removes_expired_messages_from_depth_and_log(data_dir: Path) -> None:
    with QueueManagerProcess(data_dir, expiry_interval=0.1) as qm, qm.client() as c:
        c.define_queue("EXP")
        c.put("EXP", b"brief", MessageDescriptor(persistence=1, expiry=1))
        c.put("EXP", b"lasting", PERSISTENT)
        deadline = time.monotonic() + 10
        while c.inquire_queue("EXP")["current_depth"] != 1 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert c.inquire_queue("EXP")["current_depth"] == 1
    with QueueManagerProcess(data_dir) as qm, qm.client() as c:
        assert [m.body for m in c.browse("EXP")] == [b"lasting"]


def _wait_for_checkpoint(data_dir: Path, before: set[Path]) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if set((data_dir / "log").glob("*.ckpt")) - before:
            return
        time.sleep(0.02)
    raise AssertionError("no checkpoint was written")


def test_restart_restores_the_order_messages_became_visible_in(data_dir: Path) -> None:
    with QueueManagerProcess(data_dir) as qm, qm.client() as c, qm.client() as other:
        c.define_queue("ORDER", max_depth=1000)
        c.put("ORDER", b"A", PERSISTENT, syncpoint=True)  # put first, visible only at commit
        other.put("ORDER", b"B", PERSISTENT)
        c.commit()
        c.put("ORDER", b"C", PERSISTENT)
        c.put("ORDER", b"hi", MessageDescriptor(persistence=1, priority=5))
        assert [m.body for m in other.browse("ORDER")] == [b"hi", b"B", b"A", b"C"]
    with QueueManagerProcess(data_dir) as qm, qm.client() as c:
        assert [m.body for m in c.browse("ORDER")] == [b"hi", b"B", b"A", b"C"]


def test_checkpoint_keeps_the_order_and_the_place_of_messages_in_open_units_of_work(data_dir: Path) -> None:
    with QueueManagerProcess(data_dir) as qm, qm.client() as c, qm.client() as other:
        c.define_queue("ORDER", max_depth=1000, memory_buffer=2048)
        for body in (b"1", b"2", b"3"):
            c.put("ORDER", body * 900, PERSISTENT, syncpoint=True)
            other.put("ORDER", body * 901, PERSISTENT)  # these become visible before c's commit
        c.commit()
        expected = [b * 901 for b in (b"1", b"2", b"3")] + [b * 900 for b in (b"1", b"2", b"3")]
        assert [m.body for m in c.browse("ORDER")] == expected
        assert c.inquire_queue("ORDER")["spilled_messages"] > 0
        held = other.get("ORDER", syncpoint=True)  # in an open unit of work during the checkpoint
        assert held is not None and held.body == expected[0]
        before = set((data_dir / "log").glob("*.ckpt"))
        c.admin("checkpoint")
        _wait_for_checkpoint(data_dir, before)
        qm.kill()
    with QueueManagerProcess(data_dir) as qm, qm.client() as c:
        assert [m.body for m in c.browse("ORDER")] == expected


def test_echo_queue_keeps_nothing_across_a_restart(data_dir: Path) -> None:
    with QueueManagerProcess(data_dir) as qm, qm.client() as c:
        c.define_queue("REPLIES")
        for i in range(3):
            mid = c.put(
                "SYSTEM.BROKER.ECHO", b"ping%d" % i, MessageDescriptor(persistence=1, reply_to_q="REPLIES")
            )
            reply = c.get("REPLIES", correl_id=mid, wait=5)
            assert reply is not None and reply.body == b"ping%d" % i and reply.md.persistence == 0
        c.put("SYSTEM.BROKER.ECHO", b"nobody", MessageDescriptor(persistence=1, reply_to_q="NO.SUCH.Q"))
        assert c.inquire_queue("SYSTEM.BROKER.ECHO")["current_depth"] == 0
        c.admin("checkpoint")
        c.put(
            "SYSTEM.BROKER.ECHO",
            b"after",
            MessageDescriptor(persistence=1, reply_to_q="REPLIES"),
            syncpoint=True,
        )
        c.commit()
        assert c.get("REPLIES", wait=5) is not None
    with QueueManagerProcess(data_dir) as qm, qm.client() as c:
        assert c.inquire_queue("SYSTEM.BROKER.ECHO")["current_depth"] == 0
        assert c.inquire_queue("REPLIES")["current_depth"] == 0


def test_echo_requests_left_by_an_older_server_are_dropped_on_start(data_dir: Path) -> None:
    from flowbroker.qm.protocol import encode_message

    log_dir = data_dir / "log"
    log_dir.mkdir(parents=True)
    request = encode_message(
        MessageDescriptor(persistence=1, priority=0, reply_to_q="REPLIES"), None, b"stale"
    )
    queues = b"".join(
        qlog.json_record(qlog.REC_QUEUE, {"name": name, "attrs": {}})
        for name in ("REPLIES", "SYSTEM.BROKER.ECHO")
    )
    (log_dir / "00000001.log").write_bytes(
        queues + qlog.TxRecord(puts=[("SYSTEM.BROKER.ECHO", 1, request)]).encode()
    )
    with QueueManagerProcess(data_dir) as qm, qm.client() as c:
        assert c.inquire_queue("SYSTEM.BROKER.ECHO")["current_depth"] == 0
        assert c.inquire_queue("REPLIES")["current_depth"] == 0


def test_restart_replays_only_the_log_written_after_the_last_checkpoint(data_dir: Path) -> None:
    with QueueManagerProcess(data_dir) as qm, qm.client() as c:
        c.define_queue("CK", max_depth=10_000)
        for _ in range(5):
            c.put_many("CK", [b"before" * 20] * 100, PERSISTENT)
        before = set((data_dir / "log").glob("*.ckpt"))
        c.admin("checkpoint")
        _wait_for_checkpoint(data_dir, before)
        c.put_many("CK", [b"after-1", b"after-2"], PERSISTENT)
        c.get("CK")
    generation, files = qlog.recover(data_dir / "log")
    assert files[0].path.suffix == ".ckpt" and len(files) == 2
    assert sorted(p.name for p in (data_dir / "log").iterdir()) == sorted(f.path.name for f in files)
    txs = [qlog.TxRecord.decode(p) for rtype, p in files[1].records if rtype == qlog.REC_TX]
    # The log after the checkpoint holds the two puts after it and the one get: nothing older.
    assert [raw[-7:] for tx in txs for _q, _s, raw in tx.puts] == [b"after-1", b"after-2"]
    assert sum(len(tx.dels) for tx in txs) == 1
    snapshot_puts = sum(len(qlog.TxRecord.decode(p).puts) for t, p in files[0].records if t == qlog.REC_TX)
    assert snapshot_puts == 500
    with QueueManagerProcess(data_dir) as qm, qm.client() as c:
        assert c.inquire_queue("CK")["current_depth"] == 501


def test_a_batched_get_skips_expired_messages_and_logs_their_removal(data_dir: Path) -> None:
    # the sweep is kept away, so only the gets find the expired messages
    with QueueManagerProcess(data_dir, expiry_interval=3600) as qm, qm.client() as c:
        c.define_queue("EXPB")
        c.put("EXPB", b"gone-1", MessageDescriptor(persistence=1, expiry=1))
        c.put("EXPB", b"live-1", PERSISTENT)
        c.put("EXPB", b"gone-2", MessageDescriptor(persistence=1, expiry=1, correl_id=b"C" * 24))
        c.put("EXPB", b"live-2", MessageDescriptor(persistence=1, correl_id=b"C" * 24))
        c.put("EXPB", b"live-3", PERSISTENT)
        time.sleep(0.3)
        got = c.get("EXPB", correl_id=b"C" * 24)
        assert got is not None and got.body == b"live-2"
        assert [m.body for m in c.get_many("EXPB", 10)] == [b"live-1", b"live-3"]
        assert c.inquire_queue("EXPB")["current_depth"] == 0
        assert c.get_many("EXPB", 10) == []
    with QueueManagerProcess(data_dir, expiry_interval=3600) as qm, qm.client() as c:
        assert c.inquire_queue("EXPB")["current_depth"] == 0
