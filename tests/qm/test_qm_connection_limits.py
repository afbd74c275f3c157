"""What one connection may cost the queue manager: small frames, few bytes and little time before
HELLO, a cap on connections, and a bound on the replies a client leaves unread."""

from __future__ import annotations

import os
import socket
import struct
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from flowbroker.qm.client import Client, MessageDescriptor, QMError
from flowbroker.qm.harness import QueueManagerProcess
from flowbroker.qm.protocol import OP_GET, OP_HELLO, OP_PING, OP_PUT, FrameDecoder, encode_frame

pytestmark = pytest.mark.timeout(120)

Frame = tuple[int, int, Any, bytes]


def _read_until_closed(s: socket.socket, timeout: float = 15.0) -> bytes:
    """Everything the queue manager sends until it closes the connection (bounded wait)."""
    s.settimeout(timeout)
    data = b""
    while True:
        try:
            chunk = s.recv(65536)
        except ConnectionResetError:
            return data
        if not chunk:
            return data
        data += chunk


def _send_ignoring_reset(s: socket.socket, data: bytes) -> None:
    """Send what the queue manager takes: it may close the connection part way, as it should."""
    try:
        s.sendall(data)
    except (BrokenPipeError, ConnectionResetError):
        pass


def _hello(s: socket.socket, qm: QueueManagerProcess) -> None:
    info = orjson.loads((qm.data_dir / "qm.json").read_bytes())
    s.sendall(encode_frame(OP_HELLO, 1, {"user": info["user"], "password": info["password"]}))
    dec = FrameDecoder()
    frames: list[Frame] = []
    while not frames:
        frames = dec.feed(s.recv(65536))
    assert frames[0][0] == 0x80, frames


def _connections(client: Client) -> int:
    return int(client.admin("status")["connections"])


def _wait_for_connections(client: Client, n: int, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while _connections(client) != n:
        assert time.monotonic() < deadline, f"{_connections(client)} connections, expected {n}"
        time.sleep(0.05)


# --- before authentication --------------------------------------------------------------------
def test_oversized_frame_before_hello_is_refused_and_closed(
    qm_process: QueueManagerProcess, client: Client
) -> None:
    with socket.create_connection(("127.0.0.1", qm_process.port)) as s:
        # a 64 MiB PUT instead of a HELLO: refused on its header, not buffered
        _send_ignoring_reset(s, struct.pack("<IBI", 64 * 1024 * 1024, OP_PUT, 1) + b"\x00" * (4 << 20))
        frames = FrameDecoder().feed(_read_until_closed(s))
    assert len(frames) == 1
    op, rid, args, _ = frames[0]
    assert (op, rid) == (0x81, 0)  # said outside any request, then closed
    assert args == {
        "rc": 2010,
        "reason": "frame of 67108864 bytes exceeds the 4096-byte limit before authentication at byte offset 0",
    }
    # the client library says the same, precisely, when its own HELLO is too large
    with pytest.raises(QMError) as e:
        Client.connect(qm_process.url, user="app", password="p" * 10_000)
    assert e.value.reason_code == 2010
    assert "exceeds the 4096-byte limit before authentication" in e.value.reason
    client.ping()  # everyone else is served as before


def test_many_small_frames_before_hello_are_refused(qm_process: QueueManagerProcess, client: Client) -> None:
    """Frames under the limit still may not add up to more than 16 of it before HELLO."""
    with socket.create_connection(("127.0.0.1", qm_process.port)) as s:
        ping = encode_frame(OP_PING, 3, None, b"\x00" * 4000)
        _send_ignoring_reset(s, ping * 20)
        frames = FrameDecoder().feed(_read_until_closed(s))
    assert frames, "the queue manager closed without saying why"
    op, rid, args, _ = frames[-1]
    assert (op, rid) == (0x81, 0)
    assert args == {"rc": 2010, "reason": "more than 65536 bytes sent before authentication"}
    client.ping()


@pytest.fixture(scope="module")
def quick_handshake(tmp_path_factory: pytest.TempPathFactory) -> Iterator[QueueManagerProcess]:
    """A queue manager whose handshake timeout comes from its environment variable."""
    with QueueManagerProcess(
        tmp_path_factory.mktemp("qm-handshake"), env={"FLOWBROKER_QM_HANDSHAKE_TIMEOUT": "2"}
    ) as qm:
        yield qm


@pytest.mark.parametrize("sent", [b"", struct.pack("<IBI", 60, OP_HELLO, 1) + b"\x00" * 10])
def test_handshake_timeout_closes_an_idle_unauthenticated_connection(
    quick_handshake: QueueManagerProcess, sent: bytes
) -> None:
    with quick_handshake.client() as app, socket.create_connection(("127.0.0.1", quick_handshake.port)) as s:
        s.sendall(sent)  # nothing at all, or a HELLO that never finishes arriving
        started = time.monotonic()
        frames = FrameDecoder().feed(_read_until_closed(s))
        assert time.monotonic() - started < 10  # closed by the queue manager, not by our wait
        assert frames == [
            (0x81, 0, {"rc": 2009, "reason": "no HELLO answered within 2 s of connecting"}, b"")
        ]
        time.sleep(2.5)  # past the timeout, an authenticated connection is still served
        app.ping()


# --- the connection cap -----------------------------------------------------------------------
@pytest.fixture(scope="module")
def capped(tmp_path_factory: pytest.TempPathFactory) -> Iterator[QueueManagerProcess]:
    with QueueManagerProcess(
        tmp_path_factory.mktemp("qm-capped"), env={"FLOWBROKER_QM_MAX_CONNECTIONS": "3"}
    ) as qm:
        yield qm


def test_connection_cap_refuses_the_one_past_it(capped: QueueManagerProcess) -> None:
    with capped.client() as first:
        _wait_for_connections(first, 1)  # the start-up probe's connection has gone
        with capped.client() as second, capped.client() as third:
            with pytest.raises(QMError) as e:
                Client.connect(capped.url, data_dir=str(capped.data_dir))
            assert e.value.reason_code == 2025
            assert e.value.reason == (
                "the queue manager already serves 3 connections, its limit "
                "(FLOWBROKER_QM_MAX_CONNECTIONS); try again later"
            )
            with socket.create_connection(("127.0.0.1", capped.port)) as s:  # raw: refused as it arrives
                frames = FrameDecoder().feed(_read_until_closed(s))
            assert frames[0][:2] == (0x81, 0) and frames[0][2]["rc"] == 2025
            for c in (first, second, third):
                c.ping()  # those within the cap are untouched
            # the Unix socket, open only to the queue manager's own OS user (its local execution
            # groups), is not capped: network peers cannot crowd them out
            with Client.connect(data_dir=str(capped.data_dir)) as local:
                local.ping()
                assert _connections(local) == 4
        _wait_for_connections(first, 1)
        with capped.client() as again:  # a freed place is taken again
            again.ping()


# --- after authentication: the buffer bound ---------------------------------------------------
BOUND = 1024 * 1024
BODY = 256 * 1024
COUNT = 128  # 32 MiB of replies: far beyond the bound and what the sockets themselves hold


@pytest.fixture(scope="module")
def bounded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[QueueManagerProcess]:
    with QueueManagerProcess(
        tmp_path_factory.mktemp("qm-bounded"), env={"FLOWBROKER_QM_MAX_CONNECTION_BUFFER": str(BOUND)}
    ) as qm:
        yield qm


def _fill(client: Client, name: str) -> None:
    client.define_queue(name, replace=True, max_depth=10_000, max_msg_length=BODY * 2)
    client.purge(name)
    for i in range(COUNT):
        client.put(name, bytes([i]) * BODY, MessageDescriptor(persistence=1), syncpoint=True)
    client.commit()


def test_flood_beyond_the_buffer_bound_disconnects_only_that_client(bounded: QueueManagerProcess) -> None:
    with bounded.client() as app, bounded.client() as bystander:
        _fill(app, "FLOOD.Q")
        _wait_for_connections(app, 2)
        flooder = socket.create_connection(("127.0.0.1", bounded.port))
        try:
            _hello(flooder, bounded)
            _wait_for_connections(app, 3)
            # every message got under syncpoint, and not one reply read
            gets = b"".join(
                encode_frame(OP_GET, 10 + i, {"q": "FLOOD.Q", "sync": True}) for i in range(COUNT)
            )
            flooder.sendall(gets)
            _wait_for_connections(app, 2)  # the flooder is cut ...
            bystander.ping()  # ... and nobody else
            received = len(_read_until_closed(flooder))
            assert received < COUNT * BODY  # its replies were dropped, not all delivered
        finally:
            flooder.close()
        log = (bounded.data_dir / "qm.stderr.log").read_text()
        assert f"bytes of replies unread, beyond its bound of {BOUND}" in log
        # its unit of work was backed out: every committed message is still there, intact
        assert app.inquire_queue("FLOOD.Q")["current_depth"] == COUNT
        backed_out = 0
        for i in range(COUNT):
            m = bystander.get("FLOOD.Q")
            assert m is not None and m.body == bytes([i]) * BODY
            backed_out += m.md.backout_count  # 1 for those it got before it was cut, else 0
        assert backed_out > 0


def test_flood_of_waiting_gets_served_by_a_commit(bounded: QueueManagerProcess) -> None:
    """The flooder is cut while a commit hands it messages: the commit stands, nothing is lost."""
    with bounded.client() as app:
        app.define_queue("WAITED.Q", replace=True, max_depth=10_000, max_msg_length=BODY * 2)
        app.purge("WAITED.Q")
        _wait_for_connections(app, 1)
        flooder = socket.create_connection(("127.0.0.1", bounded.port))
        try:
            _hello(flooder, bounded)
            waits = b"".join(
                encode_frame(OP_GET, 10 + i, {"q": "WAITED.Q", "sync": True, "wait": 60})
                for i in range(COUNT)
            )
            flooder.sendall(waits)
            deadline = time.monotonic() + 20
            while app.inquire_queue("WAITED.Q")["open_handles"] < 1:
                assert time.monotonic() < deadline
                time.sleep(0.05)
            for i in range(COUNT):
                app.put("WAITED.Q", bytes([i]) * BODY, MessageDescriptor(persistence=1), syncpoint=True)
            app.commit()  # serves the waiting gets, whose replies overflow the flooder's bound
            _wait_for_connections(app, 1)
        finally:
            flooder.close()
        assert app.inquire_queue("WAITED.Q")["current_depth"] == COUNT
        bodies = set()
        for _ in range(COUNT):
            m = app.get("WAITED.Q")
            assert m is not None
            bodies.add(m.body)
        assert bodies == {bytes([i]) * BODY for i in range(COUNT)}


def test_well_behaved_client_is_unaffected_by_the_bound(bounded: QueueManagerProcess) -> None:
    """Replies read as they come may add up to any size; one frame may not pass the bound."""
    with bounded.client() as app:
        _fill(app, "CALM.Q")
        for _ in range(2):  # 64 MiB of replies through a 1 MiB bound, one at a time
            for i in range(COUNT):
                m = app.get("CALM.Q", syncpoint=True)
                assert m is not None and m.body == bytes([i]) * BODY
            app.backout()
        app.commit()
        assert app.inquire_queue("CALM.Q")["current_depth"] == COUNT
        with pytest.raises(QMError) as e:
            app.put("CALM.Q", b"x" * (2 * BOUND))
        assert e.value.reason_code == 2010
        assert f"exceeds the {BOUND}-byte limit" in e.value.reason
    with bounded.client() as again:
        assert again.inquire_queue("CALM.Q")["current_depth"] == COUNT


# --- the settings -----------------------------------------------------------------------------
def test_options_override_the_environment(tmp_path: Path) -> None:
    with QueueManagerProcess(
        tmp_path / "qm",
        options=["--max-connections", "1", "--handshake-timeout", "30"],
        env={"FLOWBROKER_QM_MAX_CONNECTIONS": "50"},
    ) as qm:
        deadline = time.monotonic() + 20
        while True:  # the start-up probe's connection may hold the one place for a moment
            try:
                only = qm.client()
                break
            except QMError as exc:
                assert exc.reason_code == 2025 and time.monotonic() < deadline
                time.sleep(0.05)
        with only:
            _wait_for_connections(only, 1)
            with pytest.raises(QMError) as e:
                qm.client()
            assert e.value.reason_code == 2025 and "serves 1 connections" in e.value.reason


@pytest.mark.parametrize(
    ("args", "env", "message"),
    [
        (
            ["--max-connections", "0"],
            {},
            "bad setting --max-connections: Input should be greater than or equal to 1",
        ),
        (
            [],
            {"FLOWBROKER_QM_MAX_HELLO_FRAME": "lots"},
            "bad setting FLOWBROKER_QM_MAX_HELLO_FRAME: Input should be a valid integer",
        ),
        (["--handshake-timeout", "0"], {}, "bad setting --handshake-timeout: Input should be greater than 0"),
    ],
)
def test_bad_limits_are_one_line_errors(
    tmp_path: Path, args: list[str], env: dict[str, str], message: str
) -> None:
    r = subprocess.run(
        [sys.executable, "-m", "flowbroker.cli", "qm", "--data", str(tmp_path), "--port", "0", *args],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, **env},
    )
    assert r.returncode != 0
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"flowbroker: error: {message}"), r.stderr
