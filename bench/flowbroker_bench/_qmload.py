"""Load against the real queue manager for the seed scenarios: a pinned `flowbroker qm` child, paced putters, getters.

Used by seed000–seed003: the queue manager (and, for flow runs, the execution group's flow
threads) run on the engine core, this driver on the load core.
"""

from __future__ import annotations

import os
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from flowbroker_bench.peers.loadgen import cpu_seconds, pin


@dataclass
class QueueManager:
    url: str
    data_dir: Path
    pid: int

    def client(self) -> Any:
        from flowbroker.qm.client import Client

        return Client.connect(self.url, data_dir=str(self.data_dir))


@contextmanager
def queue_manager(core: int | None, fsync: bool = True) -> Iterator[QueueManager]:
    """A fresh queue manager in a temporary data directory, pinned to ``core``, always stopped."""
    from flowbroker.qm.harness import QueueManagerProcess

    with tempfile.TemporaryDirectory(prefix="fb-seed-") as tmp:
        cpu = core if core is not None and core < (os.cpu_count() or 1) else None
        process = QueueManagerProcess(Path(tmp), cpu=cpu, fsync=fsync)
        try:
            process.start()
        except RuntimeError as exc:
            raise OSError(str(exc)) from exc
        try:
            yield QueueManager(process.url, Path(tmp), process.pid)
        finally:
            process.stop() if hasattr(process, "stop") else process.kill()


def md(persistent: bool) -> Any:
    from flowbroker.qm.protocol import MessageDescriptor

    return MessageDescriptor(persistence=1 if persistent else 0)


@dataclass
class Counter:
    value: int = 0
    last: float = 0.0
    errors: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, n: int) -> None:
        with self.lock:
            self.value += n
            self.last = time.monotonic()


def getter(
    qm: QueueManager,
    queue: str,
    counter: Counter,
    stop: threading.Event,
    *,
    syncpoint: bool,
    batch: int,
    on_unit: Callable[[int], None] | None = None,
) -> threading.Thread:
    """A thread with its own connection getting ``queue`` until ``stop``; ``on_unit`` runs before commit."""

    def loop() -> None:
        try:
            client = qm.client()
        except Exception as exc:  # the figure must say why a getter never ran
            counter.errors.append(f"getter could not connect: {exc}")
            return
        try:
            while not stop.is_set():
                got = client.get_many(queue, batch, wait=0.2, syncpoint=syncpoint)
                if not got:
                    continue
                if on_unit is not None:
                    on_unit(len(got))
                if syncpoint:
                    client.commit()
                counter.add(len(got))
        except Exception as exc:
            counter.errors.append(f"getter failed: {type(exc).__name__}: {exc}")
        finally:
            client.close()

    thread = threading.Thread(target=loop, daemon=True)
    thread.start()
    return thread


def paced_put(
    qm: QueueManager,
    queue: str,
    body: bytes,
    rate: float,
    seconds: float,
    *,
    persistent: bool,
    on_tick: Callable[[float, int], None] | None = None,
    batch_cap: int = 500,
) -> int:
    """Put at ``rate`` msgs/s for ``seconds`` (batched per 2 ms tick); returns how many were put."""
    client = qm.client()
    descriptor = md(persistent)
    start = time.monotonic()
    sent = 0
    try:
        while True:
            now = time.monotonic()
            elapsed = now - start
            if elapsed >= seconds:
                break
            due = int(elapsed * rate) - sent
            if due > 0:
                n = min(due, batch_cap)
                client.put_many(queue, [body] * n, descriptor)
                sent += n
            if on_tick is not None:
                on_tick(elapsed, sent)
            time.sleep(0.002)
    finally:
        client.close()
    return sent


def engine_cpu(pids: list[int]) -> float:
    return cpu_seconds(pids)


__all__ = ["Counter", "QueueManager", "engine_cpu", "getter", "md", "paced_put", "pin", "queue_manager"]
