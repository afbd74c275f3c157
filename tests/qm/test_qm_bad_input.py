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
    encode_frame,
    encode_message,
)

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


def _args(qname: str) -> bytes:
    j = orjson.dumps({"q": qname})
    return struct.pack("<I", len(j)) + j


def test_malformed_frames(qm_process: QueueManagerProcess, client: Client, qname: str) -> None:
    client.put(qname, b"committed")
    bad_payloads = [
        # (payload, reason code, whether the server closes the connection)
        (struct.pack("<I", 50) + b"{}", 2196, True),  # argument length beyond the payload
        (struct.pack("<I", 3) + b"{{{", 2196, True),  # arguments that are not JSON
        (struct.pack("<I", 2) + b"[]", 2046, False),  # arguments that are not an object
        (_args(qname) + b"\x01\x02", 2196, False),  # a truncated message
    ]
    for payload, rc, fatal in bad_payloads:
        with socket.create_connection(("127.0.0.1", qm_process.port)) as s:
            _hello(s, qm_process)
            s.sendall(struct.pack("<IBI", 5 + len(payload), OP_PUT, 9) + payload)
            s.shutdown(socket.SHUT_WR)
            frames = FrameDecoder().feed(_read_until_closed(s))
            assert len(frames) == 1 and frames[0][3] == b"", frames
            assert frames[0][2]["rc"] == rc, frames
            assert frames[0][1] == (0 if fatal else 9)  # a broken stream is answered outside any request
    with socket.create_connection(("127.0.0.1", qm_process.port)) as s:
        _hello(s, qm_process)
        s.sendall(struct.pack("<IBI", 2, OP_PUT, 9))  # a length shorter than the header: malformed
        frames = FrameDecoder().feed(_read_until_closed(s))
        assert frames[0][2]["rc"] == 2196 and "byte offset" in frames[0][2]["reason"]
    m = client.get(qname)
    assert m is not None and m.body == b"committed"


def test_refusals_say_why(qm_process: QueueManagerProcess, client: Client) -> None:
    """Bad credentials, administration and topic ACLs all refuse with 2035, each with its own reason."""
    client.define_user("frank", "frank-password")
    client.set_topic_acl("vault", "frank", publish=False, subscribe=False)
    reasons: dict[str, str] = {}
    with pytest.raises(QMError) as e:
        Client.connect(qm_process.url, user="frank", password="not-franks")
    reasons["credentials"] = e.value.reason
    with pytest.raises(QMError) as e:
        Client.connect(qm_process.url, user="nobody-at-all", password="whatever-pw")
    assert e.value.reason == reasons["credentials"]  # unknown users and wrong passwords look alike
    with Client.connect(qm_process.url, user="frank", password="frank-password") as frank:
        with pytest.raises(QMError) as e:
            frank.define_queue("FRANK.Q")
        reasons["admin"] = e.value.reason
        with pytest.raises(QMError) as e:
            frank.publish("vault/gold", b"x")
        reasons["publish"] = e.value.reason
        with pytest.raises(QMError) as e:
            frank.subscribe("vault/#", "SYSTEM.DEFAULT.LOCAL.QUEUE")
        reasons["subscribe"] = e.value.reason
    assert reasons["credentials"] == "bad user name or password"
    assert reasons["admin"] == "frank is not the queue manager's administrator and may not define queues"
    assert reasons["publish"] == "topic ACL: frank may not publish on topic 'vault/gold'"
    assert reasons["subscribe"] == "topic ACL: frank may not subscribe to any topic matching 'vault/#'"
    client.set_topic_acl("vault", "frank", publish=True, subscribe=True)
    with socket.create_connection(("127.0.0.1", qm_process.port)) as s:
        s.sendall(encode_frame(OP_PUT, 7, {"q": "X"}, b""))
        dec = FrameDecoder()
        frames: list[tuple[int, int, object, bytes]] = []
        while not frames:
            frames = dec.feed(s.recv(65536))
        assert frames[0][2] == {"rc": 2035, "reason": "not authenticated: the first frame must be HELLO"}


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
