"""The seed 004 requesters as a C program (``requesters.c``), built with the machine's C compiler.

Seed 004 drove its broker from "a multithreaded MQSeries Client program written in C" on a
separate machine. Here the requesters share the two cores with the queue manager and the
execution group, so what they cost is taken from what they measure: the C requesters cost a
fraction of the Python ones (:func:`flowbroker_bench.flow._drive`), which stay as the fallback
(``--driver python``) and for the cases the C program does not drive (drained subscribers).

The program is built on first use into a cache directory named after its source's digest (a
changed source builds a new binary; concurrent builds rename into place atomically).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import struct
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

SOURCE = Path(__file__).with_name("requesters.c")
MAGIC = b"FBREQ1\n"
RID_PUT = 1
RID_GET = 2
RID_HELLO = 4
#: Distinct requests a requester cycles through (each with its own ident, as the Python requester's
#: sequence gives): enough that no two requests in flight share one.
RING = 16
#: Seconds the build may take.
BUILD_TIMEOUT_S = 120.0


class NativeDriverError(OSError):
    """The C requesters could not be built or run; the message says why (`flowbroker bench`
    prints it as its one-line error)."""


def _cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "flowbroker-bench"


def compiler() -> str | None:
    """The C compiler to build with (``$CC``, else cc or gcc on the PATH), or None."""
    for name in (os.environ.get("CC"), "cc", "gcc"):
        if name and shutil.which(name):
            return name
    return None


def binary() -> Path:
    """The built requesters program, building it when its source has changed."""
    source = SOURCE.read_bytes()
    digest = hashlib.sha256(source).hexdigest()[:16]
    target = _cache_dir() / f"requesters-{digest}"
    if target.exists():
        return target
    cc = compiler()
    if cc is None:
        raise NativeDriverError("no C compiler (cc, gcc or $CC) to build the requesters with")
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=target.name + ".", dir=target.parent)
    os.close(fd)
    try:
        done = subprocess.run(
            [cc, "-O2", "-Wall", "-o", tmp, str(SOURCE)],
            capture_output=True,
            text=True,
            timeout=BUILD_TIMEOUT_S,
            check=False,
        )
        if done.returncode != 0:
            raise NativeDriverError(f"building the requesters failed: {done.stderr.strip()[-2000:]}")
        os.replace(tmp, target)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return target


def available() -> bool:
    """Whether the C requesters can be used here (built already, or a compiler to build them)."""
    try:
        digest = hashlib.sha256(SOURCE.read_bytes()).hexdigest()[:16]
    except OSError:
        return False
    return (_cache_dir() / f"requesters-{digest}").exists() or compiler() is not None


# --- the plan ------------------------------------------------------------------------------------


def _part(data: bytes) -> bytes:
    return struct.pack("<I", len(data)) + data


def plan(
    *,
    address: tuple[str, int] | str,
    user: str,
    password: str,
    in_queue: str,
    out_queue: str,
    requests: Callable[[int, int], tuple[bytes, Any]],
    clients: int,
    warmup: float,
    seconds: float,
    empty_limit: float,
    asynchronous: bool,
    ring: int = RING,
) -> bytes:
    """The plan file: per requester its HELLO, its get-wait and ``ring`` request blocks.

    ``requests(index, k)`` gives the k-th request of requester ``index``: its body and
    :class:`~flowbroker.qm.protocol.MessageDescriptor`.
    """
    from flowbroker.qm.protocol import OP_GET, OP_HELLO, OP_PUT, encode_frame, encode_message

    unix = isinstance(address, str)
    where = (address if isinstance(address, str) else address[0]).encode()
    port = 0 if isinstance(address, str) else address[1]
    out = [
        MAGIC,
        struct.pack("<II", clients, 0 if asynchronous else 1),
        struct.pack("<ddd", warmup, seconds, empty_limit),
        struct.pack("<I", 1 if unix else 0),
        _part(where),
        struct.pack("<I", port),
    ]
    hello = encode_frame(OP_HELLO, RID_HELLO, {"user": user, "password": password})
    get = encode_frame(OP_GET, RID_GET, {"q": out_queue, "wait": 1.0, "max": 1})
    put_args: dict[str, Any] = {"q": in_queue, "noreply": True} if asynchronous else {"q": in_queue}
    for index in range(clients):
        prefix = b"FBR" + os.urandom(9)  # this requester's msgId prefix; the counter is patched
        out += [_part(hello), _part(get), struct.pack("<I", ring)]
        for k in range(ring):
            body, md = requests(index, k)
            put = encode_frame(OP_PUT, RID_PUT, put_args, encode_message(md, None, body, prefix + bytes(12)))
            (jlen,) = struct.unpack_from("<I", put, 9)
            out += [struct.pack("<II", 13 + jlen + 12, len(body)), _part(put + get)]
    return b"".join(out)


def run(
    plan_bytes: bytes,
    *,
    on_measuring: Callable[[], None],
    on_stopped: Callable[[], None],
    timeout: float,
) -> dict[str, Any]:
    """Run the requesters on a plan; the callbacks run as the window opens and closes.

    Returns the program's figures (count, bytes, elapsed, driver_cpu, puts and the median times
    in ms). Raises :class:`NativeDriverError` with the program's own message when it fails, or
    when it outlives ``timeout`` seconds (it is killed).
    """
    import orjson

    program = binary()
    with tempfile.NamedTemporaryFile(prefix="fb-requesters-", suffix=".plan") as f:
        f.write(plan_bytes)
        f.flush()
        proc = subprocess.Popen(
            [str(program), f.name], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        timer = threading.Timer(timeout, proc.kill)
        timer.start()
        started = time.monotonic()
        try:
            assert proc.stdout is not None and proc.stderr is not None
            result: dict[str, Any] | None = None
            for line in proc.stdout:
                line = line.strip()
                if line == "measuring":
                    on_measuring()
                elif line == "stopped":
                    on_stopped()
                elif line.startswith("{"):
                    result = orjson.loads(line)
            error = proc.stderr.read().strip()
            code = proc.wait()
        finally:
            timer.cancel()
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    if code != 0 or result is None:
        if time.monotonic() - started >= timeout:
            raise NativeDriverError(f"the requesters did not finish within {timeout:.0f} s")
        raise NativeDriverError(
            error.removeprefix("requesters: ") or f"the requesters exited with status {code}"
        )
    return result
