"""The queue manager commands of `flowbroker`: queues, put, get, pub and sub against the real server."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from flowbroker.qm.client import Client, MessageDescriptor
from flowbroker.qm.harness import QueueManagerProcess

pytestmark = pytest.mark.timeout(180)


def _cli(qm: QueueManagerProcess, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "flowbroker.cli", *args, "--data", str(qm.data_dir)],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
    )


def _ok(r: subprocess.CompletedProcess[str]) -> subprocess.CompletedProcess[str]:
    assert r.returncode == 0, r.stderr
    assert "Traceback" not in r.stderr
    return r


def _one_line_error(r: subprocess.CompletedProcess[str], *fragments: str) -> None:
    assert r.returncode != 0
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in r.stderr, r.stderr
    for fragment in fragments:
        assert fragment in lines[0], lines[0]


def test_queue_list_browse_and_purge(qm_process: QueueManagerProcess, client: Client) -> None:
    client.define_queue("CLI.LIST.A", replace=True)
    client.define_queue("CLI.LIST.B", replace=True)
    client.purge("CLI.LIST.A")
    for i in range(3):
        client.put("CLI.LIST.A", b"m%d" % i, MessageDescriptor(correl_id=b"c%d" % i))
    listed = _ok(_cli(qm_process, "queue", "list", "CLI.LIST.*")).stdout.splitlines()
    assert [line.split() for line in listed] == [["CLI.LIST.A", "3"], ["CLI.LIST.B", "0"]]
    as_json = json.loads(_ok(_cli(qm_process, "queue", "list", "CLI.LIST.A", "--json")).stdout)
    assert [q["name"] for q in as_json] == ["CLI.LIST.A"] and as_json[0]["current_depth"] == 3
    browsed = [
        json.loads(line)
        for line in _ok(_cli(qm_process, "queue", "browse", "CLI.LIST.A")).stdout.splitlines()
    ]
    assert [m["correl_id"] for m in browsed] == ["c0", "c1", "c2"] and all(m["length"] == 2 for m in browsed)
    limited = _ok(_cli(qm_process, "queue", "browse", "CLI.LIST.A", "--limit", "2")).stdout.splitlines()
    assert len(limited) == 2
    assert _ok(_cli(qm_process, "queue", "purge", "CLI.LIST.A")).stdout.strip() == "3"
    assert client.inquire_queue("CLI.LIST.A")["current_depth"] == 0
    _one_line_error(_cli(qm_process, "queue", "purge", "CLI.NO.SUCH"), "2085")


def test_put_from_a_file_with_reply_to_and_get_shows_the_descriptor(
    qm_process: QueueManagerProcess, client: Client, tmp_path: Path
) -> None:
    client.define_queue("CLI.PUT", replace=True)
    client.purge("CLI.PUT")
    body = tmp_path / "body.bin"
    body.write_bytes(b"\x00\x01binary\xff")
    msg_id = _ok(_cli(qm_process, "put", "CLI.PUT", "--file", str(body), "--reply-to", "CLI.REPLIES")).stdout
    r = subprocess.run(
        [sys.executable, "-m", "flowbroker.cli", "get", "CLI.PUT", "--data", str(qm_process.data_dir)],
        capture_output=True,
        timeout=60,
    )
    assert r.returncode == 0 and r.stdout == b"\x00\x01binary\xff"
    descriptor = json.loads(r.stderr)
    assert descriptor["msg_id"] == msg_id.strip() and descriptor["reply_to_q"] == "CLI.REPLIES"
    assert descriptor["correl_id"] is None  # no correlId: not 48 hex zeros
    _one_line_error(_cli(qm_process, "put", "CLI.PUT", "--file", str(tmp_path / "missing")), "cannot read")
    client.put("CLI.PUT", b"x", MessageDescriptor(correl_id=b"\x00\xfe\x01"))
    r = _ok(_cli(qm_process, "get", "CLI.PUT"))
    assert json.loads(r.stderr)["correl_id"] == (b"\x00\xfe\x01" + b"\x00" * 21).hex()


def test_get_wait_returns_a_message_put_while_waiting(
    qm_process: QueueManagerProcess, client: Client
) -> None:
    client.define_queue("CLI.WAIT", replace=True)
    client.purge("CLI.WAIT")

    def put_later() -> None:
        deadline = time.monotonic() + 30
        with qm_process.client() as other:
            # Put once the command is waiting in its get, so the wait is what delivers it.
            while other.inquire_queue("CLI.WAIT")["open_handles"] == 0 and time.monotonic() < deadline:
                time.sleep(0.02)
            other.put("CLI.WAIT", b"worth the wait")

    t = threading.Thread(target=put_later)
    t.start()
    r = _ok(_cli(qm_process, "get", "CLI.WAIT", "--wait", "30"))
    t.join()
    assert r.stdout == "worth the wait"
    r = _cli(qm_process, "get", "CLI.WAIT", "--wait", "0.2")
    _one_line_error(r, "2033")
    _one_line_error(_cli(qm_process, "get", "CLI.WAIT", "--wait", "-1"), "--wait")


def test_pub_and_sub_with_a_filter(qm_process: QueueManagerProcess, client: Client) -> None:
    client.define_queue("CLI.SUB", replace=True)
    client.purge("CLI.SUB")
    name = _ok(
        _cli(qm_process, "sub", "cli/prices/#", "--queue", "CLI.SUB", "--filter", "Root.JSON.Data.price > 10")
    ).stdout.strip()
    assert name
    assert _ok(_cli(qm_process, "pub", "cli/prices/a", "-", stdin='{"price": 12}')).stdout.strip() == "1"
    assert _ok(_cli(qm_process, "pub", "cli/prices/b", "-", stdin='{"price": 2}')).stdout.strip() == "0"
    assert _ok(_cli(qm_process, "pub", "cli/other", "-", stdin="x")).stdout.strip() == "0"
    got = client.get_many("CLI.SUB", 10)
    assert [m.body for m in got] == [b'{"price": 12}']
    assert got[0].properties["MQTopicString"] == "cli/prices/a"
    _one_line_error(
        _cli(qm_process, "sub", "cli/#", "--queue", "CLI.SUB", "--filter", "Root.JSON.Data.price >> 1"),
        "2459",
    )
    client.unsubscribe(name)
