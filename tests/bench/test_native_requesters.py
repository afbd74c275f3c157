"""The seed 004 requesters in C: a real queue manager with a responder standing in for the flow,
plans that are wrong in every way the program checks, and `bench flow` choosing them."""

from __future__ import annotations

import json
import struct
import subprocess
import threading
from pathlib import Path
from typing import Any

import pytest
from flowbroker.cli import main
from flowbroker.qm.client import Client, resolve_address
from flowbroker.qm.harness import QueueManagerProcess
from flowbroker.qm.protocol import MessageDescriptor
from flowbroker_bench import native

pytestmark = pytest.mark.skipif(not native.available(), reason="no C compiler to build the requesters")


def _plan(qm: QueueManagerProcess, in_queue: str = "REQ.IN", **kw: Any) -> bytes:
    address, user, password = resolve_address(qm.url, str(qm.data_dir), None, None)
    md = MessageDescriptor(persistence=0, format="MQSTR")
    settings: dict[str, Any] = {
        "address": address,
        "user": user,
        "password": password,
        "in_queue": in_queue,
        "out_queue": "REQ.OUT",
        "requests": lambda index, k: (f"request {index}/{k} ".encode() * 20, md),
        "clients": 3,
        "warmup": 0.1,
        "seconds": 0.5,
        "empty_limit": 5.0,
        "asynchronous": True,
        "ring": 4,
    }
    settings.update(kw)
    return native.plan(**settings)


class _Responder(threading.Thread):
    """Answers every request as a passthrough flow does: got from REQ.IN, put to REQ.OUT."""

    def __init__(self, qm: QueueManagerProcess) -> None:
        super().__init__(daemon=True)
        self.client = Client.connect(qm.url, data_dir=str(qm.data_dir))
        self.stop = threading.Event()
        self.msg_ids: list[bytes] = []
        self.bodies: set[bytes] = set()

    def run(self) -> None:
        while not self.stop.is_set():
            got = self.client.get("REQ.IN", wait=0.2)
            if got is not None:
                self.msg_ids.append(got.md.msg_id)
                self.bodies.add(got.body)
                self.client.put("REQ.OUT", got.body, MessageDescriptor(persistence=0))


def _queues(qm: QueueManagerProcess) -> Client:
    admin = Client.connect(qm.url, data_dir=str(qm.data_dir))
    for name in ("REQ.IN", "REQ.OUT"):
        admin.define_queue(name)
    return admin


def _depth(admin: Client, queue: str) -> int:
    return int(admin.inquire_queue(queue)["current_depth"] or 0)


@pytest.mark.timeout(120)
@pytest.mark.parametrize("asynchronous", [True, False], ids=["async-puts", "sync-puts"])
def test_every_request_gets_its_reply_and_its_own_msgid(tmp_path: Path, asynchronous: bool) -> None:
    with QueueManagerProcess(tmp_path / "qm") as qm:
        admin = _queues(qm)
        responder = _Responder(qm)
        responder.start()
        marks: list[str] = []
        try:
            result = native.run(
                _plan(qm, asynchronous=asynchronous),
                on_measuring=lambda: marks.append("measuring"),
                on_stopped=lambda: marks.append("stopped"),
                timeout=60,
            )
        finally:
            responder.stop.set()
            responder.join(10)
        assert marks == ["measuring", "stopped"]
        # two messages a round trip, counted only inside the window; every request answered
        assert result["count"] > 0 and result["count"] % 2 == 0
        assert result["count"] // 2 <= len(responder.msg_ids)
        assert result["puts"] == len(responder.msg_ids)
        assert (_depth(admin, "REQ.IN"), _depth(admin, "REQ.OUT")) == (0, 0)
        # the msgId counter is patched before every send: no two requests share one
        assert len(set(responder.msg_ids)) == len(responder.msg_ids)
        # each requester cycles through its ring of distinct requests (3 requesters x 4)
        assert responder.bodies == {f"request {i}/{k} ".encode() * 20 for i in range(3) for k in range(4)}
        length = len("request 0/0 ") * 20
        assert result["bytes"] == result["count"] * length
        assert result["driver_cpu"] >= 0 and result["elapsed"] >= 0.5
        assert 0 < result["put_ms"] <= result["response_ms"] and result["get_ms"] > 0
        admin.close()


@pytest.mark.timeout(120)
def test_a_refused_put_stops_the_run_with_the_queue_managers_reason(tmp_path: Path) -> None:
    with QueueManagerProcess(tmp_path / "qm") as qm:
        _queues(qm).close()
        for asynchronous in (True, False):
            with pytest.raises(native.NativeDriverError, match="refused a put: .*2085"):
                native.run(
                    _plan(qm, in_queue="NO.SUCH.QUEUE", asynchronous=asynchronous),
                    on_measuring=lambda: None,
                    on_stopped=lambda: None,
                    timeout=60,
                )


@pytest.mark.timeout(120)
def test_wrong_credentials_and_no_queue_manager_are_one_line_errors(tmp_path: Path) -> None:
    with QueueManagerProcess(tmp_path / "qm") as qm:
        _queues(qm).close()
        with pytest.raises(native.NativeDriverError, match="refused HELLO: .*2035"):
            native.run(
                _plan(qm, password="wrong"), on_measuring=lambda: None, on_stopped=lambda: None, timeout=60
            )
        address, _, _ = resolve_address(qm.url, str(qm.data_dir), None, None)
    with pytest.raises(native.NativeDriverError, match="cannot reach the queue manager at .*refused"):
        native.run(_plan_for(address), on_measuring=lambda: None, on_stopped=lambda: None, timeout=60)


def _plan_for(address: tuple[str, int] | str) -> bytes:
    md = MessageDescriptor(persistence=0)
    return native.plan(
        address=address,
        user="u",
        password="p",
        in_queue="A",
        out_queue="B",
        requests=lambda index, k: (b"x", md),
        clients=2,
        warmup=0,
        seconds=0.1,
        empty_limit=0,
        asynchronous=True,
        ring=2,
    )


def _run_program(tmp_path: Path, plan: bytes) -> subprocess.CompletedProcess[str]:
    path = tmp_path / "bad.plan"
    path.write_bytes(plan)
    return subprocess.run(
        [str(native.binary()), str(path)], capture_output=True, text=True, timeout=30, check=False
    )


def test_a_malformed_plan_is_refused_with_where_and_why(tmp_path: Path) -> None:
    good = _plan_for(("127.0.0.1", 1))
    header = len(native.MAGIC) + 4 * 2 + 8 * 3 + 4  # magic, count and flags, times, address kind
    count_at = len(native.MAGIC)
    cases = {
        b"": "plan file of 0 bytes",
        b"NOTAPLAN" + good[8:]: "not a requesters plan",
        good[: len(good) // 2]: "plan file truncated at byte",
        good + b"extra": "5 bytes after the last requester",
        good[:count_at] + struct.pack("<I", 0) + good[count_at + 4 :]: "0 requesters (1..4096 allowed)",
        good[:count_at] + struct.pack("<I", 10**9) + good[count_at + 4 :]: "1000000000 requesters",
        good[: count_at + 8] + struct.pack("<d", -1.0) + good[count_at + 16 :]: "warm-up -1 s",
        good[:header] + struct.pack("<I", 2**31) + good[header + 4 :]: "the address of 2147483648 bytes",
    }
    # the first requester's ring length, after its HELLO and get-wait frames
    (hello_len,) = struct.unpack_from("<I", good, header + 4 + len("127.0.0.1") + 4)
    ring_at = header + 4 + len("127.0.0.1") + 4 + 4 + hello_len
    (get_len,) = struct.unpack_from("<I", good, ring_at)
    ring_at += 4 + get_len
    cases[good[:ring_at] + struct.pack("<I", 0) + good[ring_at + 4 :]] = "ring of 0 requests"
    cases[good[: ring_at + 4] + struct.pack("<I", 10**6) + good[ring_at + 8 :]] = (
        "msgId offset 1000000 outside"
    )
    for plan, expected in cases.items():
        done = _run_program(tmp_path, plan)
        assert done.returncode == 2, (expected, done)
        assert done.stdout == "" and done.stderr.count("\n") == 1, done.stderr
        assert done.stderr.startswith("requesters: ") and expected in done.stderr, (expected, done.stderr)
    missing = subprocess.run(
        [str(native.binary()), str(tmp_path / "none.plan")], capture_output=True, text=True, check=False
    )
    assert missing.returncode == 2 and "cannot open the plan" in missing.stderr


@pytest.mark.timeout(300)
def test_bench_flow_runs_its_requesters_in_c_or_in_python(capsys: pytest.CaptureFixture[str]) -> None:
    rows: dict[str, list[dict[str, Any]]] = {}
    for driver in ("c", "python"):
        code = main(
            ["bench", "flow", "--case", "passthrough", "--sizes", "first", "--persistence", "both"]
            + ["--seconds", "0.3", "--warmup", "0.1", "--clients", "3", "--no-fsync"]
            + ["--driver", driver, "--format", "json"]
        )
        assert code == 0
        rows[driver] = [r for r in json.loads(capsys.readouterr().out) if r.get("table")]
    for driver, label in (("c", "C"), ("python", "Python")):
        assert [(r["persistence"], r["requesters"]) for r in rows[driver]] == [("np", label), ("p", label)]
        assert all(r["Msgs/Sec"] and r["EG CPU-ms/msg"] and r["QM CPU-ms/msg"] for r in rows[driver])


def test_no_compiler_or_a_failed_build_is_said_plainly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))  # nothing built yet
    monkeypatch.setattr(native, "compiler", lambda: None)
    assert not native.available()
    with pytest.raises(native.NativeDriverError, match="no C compiler"):
        native.binary()
    # `bench flow --driver c` says so in one line instead of measuring with other requesters
    assert main(["bench", "flow", "--case", "passthrough", "--sizes", "first", "--driver", "c"]) == 1
    assert "no C compiler" in capsys.readouterr().err
    monkeypatch.setattr(native, "compiler", lambda: "false")  # a compiler that fails
    with pytest.raises(native.NativeDriverError, match="building the requesters failed"):
        native.binary()
    assert not list((tmp_path / "cache" / "flowbroker-bench").iterdir())  # no half-built binary
