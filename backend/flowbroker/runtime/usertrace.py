"""User trace of a flow: records of what each node did, to a file, in safe (flushed) or fast (buffered) mode.

Seed 004 §2.14: safe mode forces every record to disk before the flow goes on; fast mode keeps
records in a buffer and writes them in blocks, so its cost is small. A fast trace is still written
out at least every :data:`FLUSH_INTERVAL` seconds and when its flow stops, so whoever reads the file
(the configuration manager's trace endpoint) sees records from a quiet flow too.
"""

from __future__ import annotations

import datetime
import os
import threading
from pathlib import Path
from typing import BinaryIO

FAST_BUFFER = 256 * 1024
#: The longest a fast-mode record waits in the buffer.
FLUSH_INTERVAL = 1.0


class UserTrace:
    """One flow's trace file; ``write`` is a no-op while the trace is off."""

    def __init__(self, path: Path, *, level: str = "none", mode: str = "fast") -> None:
        self.path = path
        self.level = level
        self.mode = mode
        self._lock = threading.Lock()
        self._handle: BinaryIO | None = None
        self._dirty = False
        self._flusher: threading.Thread | None = None
        self._closed = threading.Event()

    @property
    def enabled(self) -> bool:
        return self.level != "none"

    def configure(self, level: str, mode: str) -> None:
        if level not in {"none", "normal", "debug"}:
            raise ValueError(f"trace level must be none, normal or debug, not {level!r}")
        if mode not in {"safe", "fast"}:
            raise ValueError(f"trace mode must be safe or fast, not {mode!r}")
        with self._lock:
            self._close()
            self.level = level
            self.mode = mode

    def write(self, text: str) -> None:
        if self.level == "none":
            return
        stamp = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M:%S.%f")
        record = f"{stamp} {threading.current_thread().name} {text}\n".encode()
        with self._lock:
            handle = self._handle
            if handle is None:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                buffering = 0 if self.mode == "safe" else FAST_BUFFER
                handle = self._handle = open(self.path, "ab", buffering=buffering)
            handle.write(record)
            if self.mode == "safe":
                os.fsync(handle.fileno())
            elif not self._dirty:
                self._dirty = True
                self._start_flusher()

    def _start_flusher(self) -> None:
        if self._flusher is not None and self._flusher.is_alive() and not self._closed.is_set():
            return  # (a flusher whose file was closed is on its way out: a new one takes over)
        self._closed = threading.Event()
        self._flusher = threading.Thread(
            target=self._flush_periodically, args=(self._closed,), name=f"trace:{self.path.stem}", daemon=True
        )
        self._flusher.start()

    def _flush_periodically(self, closed: threading.Event) -> None:
        while not closed.wait(FLUSH_INTERVAL):
            self.flush()

    def flush(self) -> None:
        with self._lock:
            if self._handle is not None and self._dirty:
                self._handle.flush()
                self._dirty = False

    def read(self, limit: int = 1 << 20) -> str:
        """The last ``limit`` bytes of the trace (flushed first)."""
        self.flush()
        try:
            with open(self.path, "rb") as handle:
                size = handle.seek(0, os.SEEK_END)
                handle.seek(max(0, size - limit))
                return handle.read().decode("utf-8", "replace")
        except FileNotFoundError:
            return ""

    def clear(self) -> None:
        with self._lock:
            self._close()
            self.path.unlink(missing_ok=True)

    def close(self) -> None:
        with self._lock:
            self._close()

    def _close(self) -> None:
        self._closed.set()
        if self._handle is not None:
            self._handle.close()
            self._handle = None
        self._dirty = False
