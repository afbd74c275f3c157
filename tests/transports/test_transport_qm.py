"""The embedded queue manager's unit of work is all or nothing: a crash before the commit loses and repeats nothing."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest
from flowbroker.qm.protocol import MessageDescriptor
from flowbroker.runtime.transports import connector
from transport_support import unique

pytestmark = [pytest.mark.timeout(90)]

CHILD = """
import os, signal, sys
from flowbroker.runtime.transports import connector
url, data, src, dst = sys.argv[1:]
t = connector(url, data_dir=data)()
got = t.get(src, wait=10, syncpoint=True)
assert got is not None
t.put(dst, got.body + b"-out", got.md, syncpoint=True, pipeline=True)
t.put(dst, got.body + b"-out2", got.md, syncpoint=True)
print("ready", flush=True)
os.kill(os.getpid(), signal.SIGKILL)
"""


def test_a_crash_before_the_commit_returns_the_input_and_no_output(qm_process) -> None:
    src, dst = unique("QCRASH.IN"), unique("QCRASH.OUT")
    with qm_process.client() as client:
        client.define_queue(src)
        client.define_queue(dst)
    transport = connector(qm_process.url, data_dir=str(qm_process.data_dir))()
    try:
        transport.put(src, b"order-1", MessageDescriptor(persistence=1))
        child = subprocess.run(
            [
                sys.executable,
                "-c",
                textwrap.dedent(CHILD),
                qm_process.url,
                str(qm_process.data_dir),
                src,
                dst,
            ],
            capture_output=True,
            timeout=60,
        )
        assert child.returncode == -9, child.stderr.decode()
        again = transport.get(src, wait=10, syncpoint=True)
        assert again is not None and again.body == b"order-1"
        assert transport.get_many(dst, 10) == []  # nothing of the crashed unit of work is visible
        transport.put(dst, again.body + b"-out", again.md, syncpoint=True)
        transport.commit()
        # exactly once: the one committed output, the input gone
        assert [m.body for m in transport.get_many(dst, 10, wait=0.5)] == [b"order-1-out"]
        assert transport.get_many(src, 10) == []
    finally:
        transport.close()
