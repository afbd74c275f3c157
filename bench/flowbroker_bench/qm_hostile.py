"""The queue manager under hostile unauthenticated connections (`flowbroker bench qm-hostile`).

Each hostile connection declares one huge frame (64 MiB by default) instead of a HELLO and then
streams its bytes as fast as the queue manager takes them, never authenticating. The figures are
the queue manager's resident memory before, at its peak while the connections push, and after;
how many of them the queue manager cut and how long the last one stayed open; and whether a
well-behaved application could still connect and be answered meanwhile.
"""

from __future__ import annotations

import argparse
import asyncio
import struct
import tempfile
import time
from pathlib import Path

from flowbroker_bench.core import Row, Scenario


def _args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--connections", type=int, default=16, help="hostile unauthenticated connections")
    p.add_argument("--frame-mb", type=float, default=64.0, help="size each hostile frame declares")
    p.add_argument("--seconds", type=float, default=20.0, help="longest the hostile clients push")


def _rss(pid: int) -> int:
    with open(f"/proc/{pid}/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


async def _hostile(port: int, frame: int, deadline: float, cut: list[float], started: float) -> None:
    """Declare a ``frame``-byte PUT and push its payload until the queue manager closes us."""
    try:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
    except OSError:
        cut.append(0.0)  # refused outright: the cheapest outcome for the queue manager
        return
    chunk = b"\x00" * (1 << 20)
    payload = frame - 5  # the declared length counts the op and request id too
    sent = 0
    try:
        writer.write(struct.pack("<IBI", frame, 2, 1))
        while sent < payload and time.monotonic() < deadline:
            if reader.at_eof():
                break
            n = min(len(chunk), payload - sent)
            writer.write(chunk[:n])
            sent += n
            await asyncio.wait_for(writer.drain(), max(0.01, deadline - time.monotonic()))
        # the whole frame is out (or time is up): wait for the queue manager to cut us
        while time.monotonic() < deadline and not await _closed(reader, deadline):
            pass
    except (OSError, TimeoutError):
        pass
    finally:
        if reader.at_eof() or time.monotonic() < deadline:
            cut.append(time.monotonic() - started)
        writer.close()


async def _closed(reader: asyncio.StreamReader, deadline: float) -> bool:
    try:
        data = await asyncio.wait_for(reader.read(65536), max(0.01, deadline - time.monotonic()))
    except TimeoutError:
        return False
    return not data


async def _measure(args: argparse.Namespace, port: int, pid: int, qm_url: str, data_dir: str) -> Row:
    from flowbroker.qm.client import AsyncClient, QMError

    frame = int(args.frame_mb * 1024 * 1024)
    before = _rss(pid)
    started = time.monotonic()
    deadline = started + args.seconds
    cut: list[float] = []
    tasks = [
        asyncio.create_task(_hostile(port, frame, deadline, cut, started)) for _ in range(args.connections)
    ]
    peak = before
    answered = 0
    probes = 0
    while not all(t.done() for t in tasks):
        peak = max(peak, _rss(pid))
        probes += 1
        try:
            client = await asyncio.wait_for(AsyncClient.connect(qm_url, data_dir=data_dir), 5)
            await asyncio.wait_for(client.ping(), 5)
            await client.close()
            answered += 1
        except (QMError, OSError, TimeoutError):
            pass
        await asyncio.sleep(0.2)
    await asyncio.gather(*tasks)
    peak = max(peak, _rss(pid))
    await asyncio.sleep(0.5)
    return {
        "case": f"{args.connections} unauthenticated connections, {args.frame_mb:g} MiB frame each",
        "RSS MB before": round(before / 1e6, 1),
        "RSS MB peak": round(peak / 1e6, 1),
        "RSS MB after": round(_rss(pid) / 1e6, 1),
        "cut by the queue manager": len(cut),
        "last cut s": round(max(cut), 2) if cut else None,
        "well-behaved connects answered": f"{answered}/{probes}",
    }


def _run(args: argparse.Namespace) -> list[Row]:
    from flowbroker.qm.harness import QueueManagerProcess

    if args.connections < 1 or args.frame_mb <= 0 or args.seconds <= 0:
        raise ValueError("--connections, --frame-mb and --seconds must be positive")
    with tempfile.TemporaryDirectory(prefix="fbqm-hostile-") as tmp, QueueManagerProcess(Path(tmp)) as qm:
        row = asyncio.run(_measure(args, qm.port, qm.pid, qm.url, tmp))
    return [row]


SCENARIOS = {
    "qm-hostile": Scenario(
        "qm-hostile",
        "queue manager memory under unauthenticated connections that each push one huge frame",
        _run,
        _args,
    ),
}
