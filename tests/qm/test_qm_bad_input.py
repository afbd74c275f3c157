"""Bad input gets a distinct reason code and never crashes the server or loses a committed message."""

from __future__ import annotations

import socket
import struct
import subprocess
import sys

import orjson
import pytest
from flowbroker.qm.client import Client, MessageDescriptor, QMError
from flowbroker.qm.harness import QueueManagerProcess
from flowbroker.qm.protocol import (
    OP_HELLO,
    OP_PUT,
    FrameDecoder,
    FrameError,
    encode_frame,
    encode_message,
    split_messages,
)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytestmark = pytest.mark.timeout(120)


def _rc(exc: pytest.ExceptionInfo[QMError]) -> int:
    return exc.value.reason_code


def test_distinct_reason_codes(client: Client, qname: str) -> None:
    with pytest.raises(QMError) as e:
        client.put("NO.SUCH.QUEUE", b"x")
    assert _rc(e) == 2085
    client.alter_queue(qname, max_depth=1, max_msg_length=10)
    with pytest.raises(QMError) as e:
        client.put(qname, b"x" * 500)
    assert _rc(e) == 2030
    client.put(qname, b"ok")
    with pytest.raises(QMError) as e:
        client.put(qname, b"full")
    assert _rc(e) == 2053
    client.alter_queue(qname, put_inhibited=True, get_inhibited=True)
    with pytest.raises(QMError) as e:
        client.put(qname, b"x")
    assert _rc(e) == 2051
    with pytest.raises(QMError) as e:
        client.get(qname)
    assert _rc(e) == 2016
    with pytest.raises(QMError) as e:
        client.define_queue(qname)
    assert _rc(e) == 2100
    with pytest.raises(QMError) as e:
        client.delete_queue(qname)
    assert _rc(e) == 2055
    with pytest.raises(QMError) as e:
        client.alter_queue(qname, max_depth="lots")
    assert _rc(e) == 2046 and "max_depth" in e.value.reason
    with pytest.raises(QMError) as e:
        client.define_queue("BAD NAME")
    assert _rc(e) == 2046
    client.alter_queue(qname, get_inhibited=False)
    m = client.get(qname)
    assert m is not None and m.body == b"ok"  # the committed message survived every refusal


def test_bad_credentials(qm_process: QueueManagerProcess) -> None:
    with pytest.raises(QMError) as e:
        Client.connect(qm_process.url, user="app", password="wrong-password")
    assert _rc(e) == 2035


def test_requests_before_hello_are_refused(qm_process: QueueManagerProcess) -> None:
    with socket.create_connection(("127.0.0.1", qm_process.port)) as s:
        s.sendall(encode_frame(OP_PUT, 7, {"q": "X"}, b""))
        dec = FrameDecoder()
        frames: list[tuple[int, int, object, bytes]] = []
        while not frames:
            frames = dec.feed(s.recv(65536))
        assert frames[0][1] == 7 and frames[0][2]["rc"] == 2035


def _hello(s: socket.socket, qm: QueueManagerProcess) -> None:
    info = orjson.loads((qm.data_dir / "qm.json").read_bytes())
    s.sendall(encode_frame(OP_HELLO, 1, {"user": info["user"], "password": info["password"]}))
    dec = FrameDecoder()
    while not dec.feed(s.recv(65536)):
        pass


def _read_until_closed(s: socket.socket) -> bytes:
    s.settimeout(10)
    data = b""
    while True:
        chunk = s.recv(65536)
        if not chunk:
            return data
        data += chunk


def test_oversized_frame_is_refused_and_connection_closed(
    qm_process: QueueManagerProcess, client: Client
) -> None:
    with socket.create_connection(("127.0.0.1", qm_process.port)) as s:
        _hello(s, qm_process)
        s.sendall(struct.pack("<IBI", 2**31, OP_PUT, 2))
        frames = FrameDecoder().feed(_read_until_closed(s))
        assert frames[0][2]["rc"] == 2010 and "byte offset" in frames[0][2]["reason"]
    client.ping()


def test_malformed_frames(qm_process: QueueManagerProcess, client: Client, qname: str) -> None:
    client.put(qname, b"committed")
    bad_payloads = [
        struct.pack("<I", 50) + b"{}",  # argument length beyond the payload
        struct.pack("<I", 3) + b"{{{",  # arguments that are not JSON
        struct.pack("<I", 2) + b"[]",  # arguments that are not an object
        struct.pack("<I", 13) + orjson.dumps({"q": qname}) + b"\x01\x02",  # a truncated message
    ]
    for payload in bad_payloads:
        with socket.create_connection(("127.0.0.1", qm_process.port)) as s:
            _hello(s, qm_process)
            s.sendall(struct.pack("<IBI", 5 + len(payload), OP_PUT, 9) + payload)
            s.shutdown(socket.SHUT_WR)
            frames = FrameDecoder().feed(_read_until_closed(s))
            assert frames and frames[0][3] == b"" and frames[0][2]["rc"] in (2010, 2046), frames
    m = client.get(qname)
    assert m is not None and m.body == b"committed"


def test_client_vanishing_mid_frame(qm_process: QueueManagerProcess, client: Client, qname: str) -> None:
    client.put(qname, b"safe", MessageDescriptor(persistence=1))
    frame = encode_frame(OP_PUT, 5, {"q": qname}, encode_message(MessageDescriptor(), None, b"y" * 5000))
    for cut in (3, 9, 20, len(frame) // 2, len(frame) - 1):
        s = socket.create_connection(("127.0.0.1", qm_process.port))
        _hello(s, qm_process)
        s.sendall(frame[:cut])
        s.close()
    client.ping()
    assert client.inquire_queue(qname)["current_depth"] == 1
    m = client.get(qname)
    assert m is not None and m.body == b"safe"


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=300), st.integers(min_value=1, max_value=40))
def test_fuzz_frame_decoder(data: bytes, chunk: int) -> None:
    """Any byte string either decodes to frames or raises FrameError — nothing else."""
    dec = FrameDecoder(max_frame=1 << 16)
    try:
        for i in range(0, len(data), chunk):
            for _op, _rid, _args, tail in dec.feed(data[i : i + chunk]):
                try:
                    split_messages(tail)
                except QMError as exc:
                    assert exc.reason_code == 2010
    except FrameError as exc:
        assert exc.offset >= 0


@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 255), st.integers(0, 2**32 - 1), st.binary(max_size=200)), max_size=8)
)
def test_fuzz_frames_round_trip_in_any_split(frames: list[tuple[int, int, bytes]]) -> None:
    stream = b"".join(encode_frame(op, rid, {"k": len(t)}, t) for op, rid, t in frames)
    dec = FrameDecoder()
    out = []
    for i in range(0, len(stream), 7):
        out.extend(dec.feed(stream[i : i + 7]))
    assert [(op, rid, tail) for op, rid, _a, tail in out] == frames


def test_server_survives_random_garbage(qm_process: QueueManagerProcess, client: Client) -> None:
    import random

    rnd = random.Random(1234)
    for _ in range(30):
        with socket.create_connection(("127.0.0.1", qm_process.port)) as s:
            if rnd.random() < 0.5:
                _hello(s, qm_process)
            s.sendall(bytes(rnd.getrandbits(8) for _ in range(rnd.randint(1, 400))))
    client.ping()


def _cli(*args: str, data: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "flowbroker.cli", *args, "--data", data],
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_cli_errors_are_one_line(qm_process: QueueManagerProcess) -> None:
    data = str(qm_process.data_dir)
    r = _cli("get", "NO.SUCH.Q", data=data)
    assert r.returncode == 1 and r.stderr.strip() == "flowbroker: error: 2085 unknown queue 'NO.SUCH.Q'"
    r = _cli("queue", "define", "CLI.Q", "--set", "max_depth", data=data)
    assert r.returncode == 1 and "ATTR=VALUE" in r.stderr and "Traceback" not in r.stderr
    r = _cli("queue", "depth", "CLI.Q", data="/nonexistent/dir")
    assert r.returncode == 1 and "qm.json not found" in r.stderr and len(r.stderr.strip().splitlines()) == 1
    r = _cli("sub", "a/#/b", "--queue", "SYSTEM.DEFAULT.LOCAL.QUEUE", data=data)
    assert r.returncode == 1 and "2425" in r.stderr


def test_cli_round_trip(qm_process: QueueManagerProcess, tmp_path: pytest.TempPathFactory) -> None:
    data = str(qm_process.data_dir)
    assert _cli("queue", "define", "CLI.RT", "--set", "max_depth=10", data=data).returncode == 0
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "flowbroker.cli",
            "put",
            "CLI.RT",
            "-",
            "--persistent",
            "--correl-id",
            "abc",
            "--data",
            data,
        ],
        input="hello world",
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode == 0, r.stderr
    assert _cli("queue", "depth", "CLI.RT", data=data).stdout.strip() == "1"
    r = _cli("get", "CLI.RT", "--browse", data=data)
    assert r.stdout == "hello world" and '"correl_id": "abc"' in r.stderr
    r = _cli("get", "CLI.RT", data=data)
    assert r.stdout == "hello world"
    r = _cli("get", "CLI.RT", data=data)
    assert r.returncode == 1 and "2033" in r.stderr
    assert _cli("queue", "delete", "CLI.RT", data=data).returncode == 0


def test_cli_put_with_rfh2_header(qm_process: QueueManagerProcess, client: Client) -> None:
    import struct

    data = str(qm_process.data_dir)
    client.define_queue("CLI.RFH2", replace=True)
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "flowbroker.cli",
            "put",
            "CLI.RFH2",
            "-",
            "--rfh2-domain",
            "XMLNSC",
            "--data",
            data,
        ],
        input="<a>1</a>",
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode == 0, r.stderr
    m = client.get("CLI.RFH2")
    assert m is not None and m.md.format == "MQHRF2"
    assert m.body[:4] == b"RFH " and struct.unpack_from("<ii", m.body, 4) == (2, 68)
    assert m.body[68:] == b"<a>1</a>" and b"<Msd>XMLNSC</Msd>" in m.body[40:68]
