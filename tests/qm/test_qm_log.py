"""The recovery log: group commit shares fsyncs among concurrent commits, and a failing log refuses instead of hanging."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from flowbroker.qm import log as qlog
from flowbroker.qm.client import MessageDescriptor, QMError
from flowbroker.qm.harness import QueueManagerProcess

pytestmark = pytest.mark.timeout(120)

PERSISTENT = MessageDescriptor(persistence=1)
needs_dev_full = pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full to fail writes")


def _record(i: int) -> bytes:
    return qlog.TxRecord(puts=[("Q", i, b"m%d" % i)]).encode()


def test_records_queued_together_share_one_write_and_fsync(tmp_path: Path) -> None:
    w = qlog.LogWriter(tmp_path, 1)
    done = threading.Event()
    durable: list[int] = []
    # Holding the writer's lock keeps the flusher out while 50 commits queue up, as they do
    # when many connections commit during one fsync.
    with w._cond:
        for i in range(50):
            w.append(_record(i), lambda i=i: durable.append(i))
        w.append(_record(50), done.set)
    assert done.wait(10)
    w.close()
    assert durable == list(range(50)) and w.records == 51
    assert w.fsyncs == 1 and w.flushes == 1
    _, files = qlog.recover(tmp_path)
    assert len(files[0].records) == 51


def test_concurrent_committers_are_served_by_fewer_fsyncs_than_commits(tmp_path: Path) -> None:
    with QueueManagerProcess(tmp_path / "data") as qm, qm.client() as admin:
        admin.define_queue("GROUP", max_depth=100_000)
        before = admin.admin("status")
        workers, commits_each = 8, 40
        start = threading.Barrier(workers)
        errors: list[BaseException] = []

        def committer(n: int) -> None:
            try:
                with qm.client() as c:
                    start.wait()
                    for i in range(commits_each):
                        c.put("GROUP", b"w%d-%d" % (n, i), PERSISTENT, syncpoint=True)
                        c.commit()
            except BaseException as exc:  # surfaced below
                errors.append(exc)

        threads = [threading.Thread(target=committer, args=(n,)) for n in range(workers)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        assert not errors
        after = admin.admin("status")
        commits = after["commits"] - before["commits"]
        fsyncs = after["log_fsyncs"] - before["log_fsyncs"]
        assert commits == workers * commits_each
        assert admin.inquire_queue("GROUP")["current_depth"] == workers * commits_each
        assert 0 < fsyncs < commits, (fsyncs, commits)


@needs_dev_full
def test_a_failed_write_fails_its_waiters_and_every_later_record(tmp_path: Path) -> None:
    (tmp_path / "00000001.log").symlink_to("/dev/full")  # every write fails with ENOSPC
    outcomes: list[str] = []
    arrived = threading.Event()

    def waiter(name: str) -> tuple[Callable[[], None], Callable[[str], None]]:
        def ok() -> None:
            outcomes.append(f"{name} durable")
            arrived.set()

        def failed(reason: str) -> None:
            outcomes.append(f"{name} failed: {reason}")
            arrived.set()

        return ok, failed

    w = qlog.LogWriter(tmp_path, 1)
    w.append(_record(1), *waiter("first"))
    assert arrived.wait(10)
    arrived.clear()
    assert w.failed is not None and "No space left on device" in w.failed
    w.append(_record(2), *waiter("second"))  # after the failure: refused, never written
    assert arrived.wait(10)
    rotated = threading.Event()
    w.rotate(2, rotated.set, lambda reason: outcomes.append("rotation failed"))
    w.append(b"", *waiter("third"))
    deadline = time.monotonic() + 10
    while len(outcomes) < 4 and time.monotonic() < deadline:
        time.sleep(0.01)
    w.close()
    assert outcomes[0].startswith(
        "first failed: the recovery log cannot be written (No space left on device)"
    )
    assert outcomes[1].startswith("second failed:") and "rotation failed" in outcomes
    assert any(o.startswith("third failed:") for o in outcomes[2:]) and not rotated.is_set()
    assert w.fsyncs == 0


@needs_dev_full
def test_queue_manager_refuses_persistent_work_when_its_log_fails_and_serves_the_rest(tmp_path: Path) -> None:
    data = tmp_path / "data"
    with QueueManagerProcess(data) as qm, qm.client() as c:
        c.define_queue("LOGFAIL", max_depth=1000)
        c.put("LOGFAIL", b"durable", PERSISTENT)
        generation = c.admin("status")["log_generation"]
        # The next log generation is /dev/full: once the checkpoint rotates to it, writes fail.
        (data / "log" / f"{generation + 1:08d}.log").symlink_to("/dev/full")
        c.admin("checkpoint")
        with pytest.raises(QMError) as e:
            c.put("LOGFAIL", b"lost", PERSISTENT)
        assert e.value.reason_code == 2102
        assert "recovery log cannot be written" in e.value.reason and "\n" not in e.value.reason
        with pytest.raises(QMError) as e:
            c.put("LOGFAIL", b"later", PERSISTENT)  # refused at once, not hung
        assert e.value.reason_code == 2102
        c.put("LOGFAIL", b"fleeting", MessageDescriptor(persistence=0))  # non-persistent work goes on
        m = c.get("LOGFAIL", syncpoint=True)
        assert m is not None and m.body == b"durable"
        with pytest.raises(QMError) as e:
            c.commit()  # removing a persistent message needs the log: the unit of work is backed out
        assert e.value.reason_code == 2102
        with pytest.raises(QMError) as e:
            c.get("LOGFAIL")  # a persistent message at the head cannot be got outside a unit of work
        assert e.value.reason_code == 2102
        assert [m.body for m in c.browse("LOGFAIL")] == [b"durable", b"fleeting"]
        with pytest.raises(QMError) as e:
            c.define_queue("NEWQ")
        assert e.value.reason_code == 2102
        with pytest.raises(QMError) as e:
            c.publish("news", b"x", PERSISTENT, retain=True)
        assert e.value.reason_code == 2102
        assert c.publish("news", b"x") == 0
        c.put("SYSTEM.DEFAULT.LOCAL.QUEUE", b"np")
        assert c.get("SYSTEM.DEFAULT.LOCAL.QUEUE") is not None
        status = c.admin("status")
        assert "recovery log cannot be written" in status["log_failed"]
    (data / "log" / f"{generation + 1:08d}.log").unlink()
    assert "recovery log cannot be written" in (data / "qm.stderr.log").read_text()
    with QueueManagerProcess(data) as qm, qm.client() as c:
        assert [m.body for m in c.browse("LOGFAIL")] == [b"durable"]
