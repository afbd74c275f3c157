"""The asyncio client (pipelined async put, read-ahead), the Unix socket, credentials file and clean shutdown."""

from __future__ import annotations

import asyncio
import json
import os
import stat
from pathlib import Path

import pytest
from flowbroker.qm.client import AsyncClient, Client, MessageDescriptor, QMError
from flowbroker.qm.harness import QueueManagerProcess

pytestmark = pytest.mark.timeout(60)


async def test_async_put_and_read_ahead(qm_process: QueueManagerProcess) -> None:
    c = await AsyncClient.connect(qm_process.url, data_dir=str(qm_process.data_dir))
    try:
        await c.define_queue("ASYNC.Q", replace=True, max_depth=10_000)
        await c.purge("ASYNC.Q")
        for i in range(20):
            c.put_async("ASYNC.Q", [f"{i}-{j}".encode() for j in range(50)])
        await c.flush()
        assert (await c.inquire_queue("ASYNC.Q"))["current_depth"] == 1000
        first = await c.get("ASYNC.Q", read_ahead=100)
        assert first is not None and first.body == b"0-0"
        # The next 99 come from the local read-ahead batch, without a round trip.
        assert (await c.inquire_queue("ASYNC.Q"))["current_depth"] == 900
        rest = [await c.get("ASYNC.Q", read_ahead=100) for _ in range(999)]
        assert [m.body for m in rest if m] == [f"{i}-{j}".encode() for i in range(20) for j in range(50)][1:]
        assert await c.get("ASYNC.Q", wait=0.1) is None
    finally:
        await c.close()


async def test_async_put_errors_surface_on_flush(qm_process: QueueManagerProcess) -> None:
    c = await AsyncClient.connect(qm_process.url, data_dir=str(qm_process.data_dir))
    try:
        await c.define_queue("ASYNC.SMALL", replace=True, max_depth=5)
        await c.purge("ASYNC.SMALL")
        c.put_async("ASYNC.SMALL", [b"a"] * 3)
        c.put_async("ASYNC.SMALL", [b"b"] * 3)  # would pass max_depth: the whole frame is refused
        with pytest.raises(QMError) as e:
            await c.flush()
        assert e.value.reason_code == 2053
        assert (await c.inquire_queue("ASYNC.SMALL"))["current_depth"] == 3
        c.put_async("NO.SUCH.Q", b"x")
        with pytest.raises(QMError) as e:
            await c.flush()
        assert e.value.reason_code == 2085
    finally:
        await c.close()


async def test_put_then_get_with_an_asynchronous_put(qm_process: QueueManagerProcess) -> None:
    """The put asks for no reply: a request and its reply cost one answer, a refused put still raises."""
    c = await AsyncClient.connect(qm_process.url, data_dir=str(qm_process.data_dir))
    other = await AsyncClient.connect(qm_process.url, data_dir=str(qm_process.data_dir))
    try:
        for name, depth in (("PTG.REQ", 1), ("PTG.REPLY", 100)):
            await c.define_queue(name, replace=True, max_depth=depth)
            await c.purge(name)
        answered: list[bool] = []
        md = MessageDescriptor(persistence=0, correl_id=b"R1".ljust(24, b"\0"))
        reply = asyncio.ensure_future(
            c.put_then_get(
                "PTG.REQ",
                b"ping",
                "PTG.REPLY",
                md,
                wait=5,
                on_put=lambda: answered.append(True),
                asynchronous=True,
            )
        )
        request = await other.get("PTG.REQ", wait=5)
        # the put returned once sent, as an asynchronous MQPUT does, before any reply came
        assert request is not None and request.body == b"ping" and answered == [True]
        await other.put("PTG.REPLY", b"pong")
        got = await reply
        assert got is not None and got.body == b"pong" and answered == [True]
        # the request queue holds one message: the next put is refused, and the get after it says so
        await other.put("PTG.REQ", b"filler")
        with pytest.raises(QMError) as refused:
            await c.put_then_get("PTG.REQ", b"ping", "PTG.REPLY", md, wait=0.2, asynchronous=True)
        assert refused.value.reason_code == 2053
        assert not c._pending  # nothing left waiting for an answer that never comes
        with pytest.raises(QMError) as unknown:
            await c.put_then_get("NO.SUCH.Q", b"ping", "PTG.REPLY", md, wait=0.2, asynchronous=True)
        assert unknown.value.reason_code == 2085
        assert (await c.inquire_queue("PTG.REQ"))["current_depth"] == 1
    finally:
        await other.close()
        await c.close()


async def test_async_units_of_work(qm_process: QueueManagerProcess) -> None:
    c = await AsyncClient.connect(qm_process.url, data_dir=str(qm_process.data_dir))
    try:
        await c.define_queue("ASYNC.TX", replace=True)
        await c.purge("ASYNC.TX")
        c.put_async("ASYNC.TX", [b"1", b"2"], MessageDescriptor(persistence=1), syncpoint=True)
        await c.commit()
        m = await c.get("ASYNC.TX", syncpoint=True)
        assert m is not None and m.body == b"1"
        await c.backout()
        again = await c.get("ASYNC.TX")
        assert again is not None and again.body == b"1" and again.md.backout_count == 1
    finally:
        await c.close()


def test_unix_socket_and_credentials_file(qm_process: QueueManagerProcess) -> None:
    info_path = qm_process.data_dir / "qm.json"
    assert stat.S_IMODE(info_path.stat().st_mode) == 0o600
    info = json.loads(info_path.read_text())
    assert set(info) == {"host", "port", "unix_socket", "user", "password"}
    assert info["port"] == qm_process.port and info["host"] == "127.0.0.1"
    with Client.connect(f"unix://{info['unix_socket']}", data_dir=str(qm_process.data_dir)) as c:
        c.ping()
    with Client.connect(data_dir=str(qm_process.data_dir)) as c:
        assert c.user == info["user"]


def test_request_reply_in_one_round_trip(client: Client) -> None:
    client.define_queue("RR.REPLY", replace=True)
    reply = client.request("SYSTEM.BROKER.ECHO", b"question", "RR.REPLY", wait=5)
    assert reply is not None and reply.body == b"question"
    with pytest.raises(QMError) as e:
        client.request("NO.SUCH.Q", b"x", "RR.REPLY", wait=1)
    assert e.value.reason_code == 2085
    client.ping()  # the abandoned get's late reply does not confuse the next call


def test_sigterm_exits_cleanly_and_removes_the_socket(tmp_path: Path) -> None:
    qm = QueueManagerProcess(tmp_path / "d").start()
    sock = Path(json.loads((tmp_path / "d" / "qm.json").read_text())["unix_socket"])
    assert sock.exists()
    assert qm.stop() == 0
    assert not sock.exists()


def test_exits_when_its_parent_dies(tmp_path: Path) -> None:
    import subprocess
    import sys
    import time

    from flowbroker.qm.harness import free_port

    port = free_port()
    code = (
        "import subprocess, sys, time;"
        f"p = subprocess.Popen([sys.executable, '-m', 'flowbroker.cli', 'qm', '--data', {str(tmp_path)!r},"
        f" '--port', '{port}', '--parent-pid', str(__import__('os').getpid())]);"
        "print(p.pid, flush=True); time.sleep(60)"
    )
    parent = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    assert parent.stdout is not None
    child = int(parent.stdout.readline())
    time.sleep(1.5)
    parent.kill()
    parent.wait()
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        try:
            os.kill(child, 0)
        except ProcessLookupError:
            break
        time.sleep(0.1)
    else:
        os.kill(child, 9)
        pytest.fail("the queue manager outlived its parent")


def test_a_client_of_the_data_directory_uses_the_unix_socket_and_falls_back_to_tcp(tmp_path: Path) -> None:
    import socket

    from flowbroker.qm.client import Client

    with QueueManagerProcess(tmp_path / "d") as qm:
        with Client.connect(data_dir=str(tmp_path / "d")) as local:
            assert local._sock.family == socket.AF_UNIX
            local.define_queue("LOCAL.Q")
        info = json.loads((tmp_path / "d" / "qm.json").read_text())
        moved = Path(info["unix_socket"]).rename(tmp_path / "elsewhere.sock")
        try:
            with Client.connect(data_dir=str(tmp_path / "d")) as remote:
                assert remote._sock.family == socket.AF_INET
                assert remote.inquire_queue("LOCAL.Q")["name"] == "LOCAL.Q"
        finally:
            moved.rename(info["unix_socket"])
        with Client.connect(qm.url, data_dir=str(tmp_path / "d")) as by_url:
            assert by_url._sock.family == socket.AF_INET  # a URL says how to connect
