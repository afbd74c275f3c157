"""The flow exerciser's recordings: what crossed each connection of a deployed flow, message by message.

A recording taps the wires of a flow's compiled nodes: each wire's target is replaced by a
:class:`Tap` that writes the message assembly's view (:mod:`flowbroker.runtime.message_view`)
and passes the message on. When no recording runs the wires are the plain ones, so recording
costs nothing while it is off. A recording ends by itself after ``max_messages`` flow
invocations, after ``seconds``, or when its file would pass ``max_bytes``; it never holds
messages in memory: each crossing is a line of ``<id>.jsonl`` (its summary, with the line's
offset, a line of ``<id>.index.jsonl``), and ``<id>.json`` says the recording's state. The
configuration manager reads those files from the data directory.
"""

from __future__ import annotations

import json
import logging
import os
import re
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from flowbroker_nodes.base import _CURRENT, Assembly, Node

from flowbroker.runtime import message_view

log = logging.getLogger("flowbroker.runtime.recorder")

#: Recording ids are made by the configuration manager; anything else never names a file.
ID_PATTERN = re.compile(r"^[0-9a-f]{32}$")
#: Terminals on which an input node passes on the message it already propagated (not a new one).
_SAME_MESSAGE_TERMINALS = frozenset({"failure", "catch"})


@dataclass
class RecordingSpec:
    """What to record and how much: the bounds a configuration manager asked for."""

    id: str
    max_messages: int
    seconds: float
    max_bytes: int
    limits: message_view.Limits = field(default_factory=message_view.Limits)


def recordings_dir(data: Path, broker: str, group: str) -> Path:
    """Where a group's flows write their recordings (one directory per flow below it)."""
    return data / "recordings" / broker / group


def connection_id(source: str, terminal: str, target: str, target_terminal: str) -> str:
    """A connection as the designer names its edge: ``from.terminal->to.terminal``."""
    return f"{source}.{terminal}->{target}.{target_terminal}"


def canvas_connection(source: Node, terminal: str, target: Node, target_terminal: str) -> str:
    """The connection as the flow's own canvas draws it.

    The compiler replaces a subflow node by its nodes (ids ``sub/inner``) and rewires the
    connections into it to its Input node and out of it from its Output node; those two are named
    here by the subflow node and its terminal again. A connection inside a subflow keeps the
    inner ids (it is on the subflow's canvas, not on this one).
    """
    outer_source = _outer(source, terminal, "output", "out")
    outer_target = _outer(target, target_terminal, "input", "in")
    if outer_source is None or outer_target is None:
        return connection_id(source.id, terminal, target.id, target_terminal)
    return connection_id(*outer_source, *outer_target)


def _outer(node: Node, terminal: str, boundary: str, default: str) -> tuple[str, str] | None:
    """(id, terminal) on the top canvas: the node itself, or the subflow it is the boundary node of
    (``boundary``: the spec's subflow part, "input" or "output")."""
    if "/" not in node.id:
        return node.id, terminal
    parent, _, inner = node.id.partition("/")
    if "/" in inner or node.SPEC.subflow_part != boundary:
        return None
    return parent, str(node.properties.get(node.SPEC.subflow_terminal_property) or default)


def _queue_properties() -> dict[str, Any]:
    """The own properties of the queue message the flow thread got (not its tree: an output node
    puts them again, overlaid by the MQRFH2 usr folder), as JSON values."""
    services = getattr(_CURRENT, "services", None)
    found = getattr(services, "input_properties", None)
    if not found:
        return {}
    return {
        str(key): value if isinstance(value, str | int | float | bool) or value is None else str(value)
        for key, value in found.items()
    }


def write_json(path: Path, document: dict[str, Any]) -> None:
    """Replace ``path`` atomically, so a reader never sees half a state file."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(document))
    os.replace(tmp, path)


class Tap:
    """A wire's target while a recording runs: records the crossing, then delivers the message."""

    __slots__ = ("connection", "ends", "recorder", "source", "starts", "target", "terminal")

    def __init__(
        self,
        recorder: Recording,
        source: Node,
        terminal: str,
        target: Node,
        target_terminal: str,
        *,
        first: bool,
        last: bool,
    ) -> None:
        self.recorder = recorder
        self.source = source
        self.terminal = terminal
        self.target = target
        self.connection = canvas_connection(source, terminal, target, target_terminal)
        # a flow invocation starts where an input node propagates a message it got (on its first
        # wire of the terminal) and has ended when the last wire's path returns
        from_input = source.SPEC.is_input and terminal not in _SAME_MESSAGE_TERMINALS
        self.starts = from_input and first
        self.ends = from_input and last

    def receive(self, terminal: str, assembly: Assembly) -> None:
        recorder = self.recorder
        if recorder.active:
            recorder.capture(self, terminal, assembly)
        if not self.ends:
            self.target.receive(terminal, assembly)
            return
        try:
            self.target.receive(terminal, assembly)
        finally:
            recorder.invocation_done()

    # nodes ask a wire's target for nothing but receive; these keep the tap honest in logs
    @property
    def id(self) -> str:
        return self.target.id

    def __repr__(self) -> str:
        return f"Tap({self.connection})"


class Recording:
    """One running recording of one deployed flow's nodes."""

    def __init__(
        self,
        flow: str,
        nodes: dict[str, Node],
        directory: Path,
        spec: RecordingSpec,
        on_stop: Callable[[], None] | None = None,
    ) -> None:
        if not ID_PATTERN.match(spec.id):
            raise ValueError(f"recording id {spec.id!r} is not 32 hexadecimal digits")
        self.flow = flow
        self.nodes = nodes
        self.spec = spec
        self.directory = directory
        self.active = False
        #: Set once a stop has written the recording's final state (its reason and counts).
        self.finished = threading.Event()
        self.messages = 0
        self.crossings = 0
        self.bytes = 0
        self.state_path = directory / f"{spec.id}.json"
        self.data_path = directory / f"{spec.id}.jsonl"
        self.index_path = directory / f"{spec.id}.index.jsonl"
        self._lock = threading.Lock()
        self._local = threading.local()
        self._plain: dict[str, dict[str, list[Any]]] = {}
        self._timer: threading.Timer | None = None
        self._data: Any = None
        self._index: Any = None
        self._state: dict[str, Any] = {}
        self.started = 0.0
        #: called once the plain wires are back (the step debugger probes them again)
        self.on_stop = on_stop

    # -- life --------------------------------------------------------------------------------

    def start(self) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        self._state = self._read_state()
        self._data = open(self.data_path, "ab")
        self._index = open(self.index_path, "ab")
        self.started = time.time()
        self._state.update(
            {
                "id": self.spec.id,
                "flow": self.flow,
                "status": "recording",
                "reason": "",
                "recordingStartedAt": self.started,
                "maxMessages": self.spec.max_messages,
                "seconds": self.spec.seconds,
                "limits": asdict(self.spec.limits),
            }
        )
        self._write_state()
        self.active = True
        # swap each terminal's list as a whole: a flow thread sees the old list or the new one
        for node in self.nodes.values():
            self._plain[node.id] = dict(node.wires)
            node.wires = {
                terminal: self._tapped(node, terminal, wires) for terminal, wires in node.wires.items()
            }
        self._timer = threading.Timer(
            self.spec.seconds, self.stop, args=(f"{self.spec.seconds:g} seconds passed",)
        )
        self._timer.daemon = True
        self._timer.start()
        log.info("flow %s: recording %s started", self.flow, self.spec.id)

    def _tapped(self, node: Node, terminal: str, wires: list[Any]) -> list[Any]:
        last = len(wires) - 1
        return [
            (
                Tap(self, node, terminal, target, target_terminal, first=i == 0, last=i == last),
                target_terminal,
            )
            for i, (target, target_terminal) in enumerate(wires)
        ]

    def stop(self, reason: str, status: str = "complete") -> None:
        """Put the plain wires back and close the files (idempotent)."""
        with self._lock:
            if not self.active:
                return
            self.active = False
            for node in self.nodes.values():
                plain = self._plain.get(node.id)
                if plain is not None:
                    node.wires = plain
            if self.on_stop is not None:
                self.on_stop()
            if self._timer is not None:
                self._timer.cancel()
            for handle in (self._data, self._index):
                if handle is not None:
                    handle.close()
            self._state.update(self._counts())
            self._state.update({"status": status, "reason": reason, "recordingStoppedAt": time.time()})
            self._write_state()
            self.finished.set()
        log.info("flow %s: recording %s stopped: %s", self.flow, self.spec.id, reason)

    # -- on the flow threads ------------------------------------------------------------------

    def capture(self, tap: Tap, terminal: str, assembly: Assembly) -> None:
        local = self._local
        if tap.starts:
            with self._lock:
                if not self.active:
                    return
                if self.messages >= self.spec.max_messages:
                    local.message = 0
                    return
                self.messages += 1
                local.message = self.messages
        message = getattr(local, "message", 0)
        if not message:
            return  # a message that started before the recording, or past its bound
        try:
            view = message_view.view_assembly(assembly, self.spec.limits)
        except Exception as exc:  # a view must never fail the flow
            view = {"trees": [], "body": {"format": "none", "text": "", "bytes": 0}, "truncated": True}
            view["notices"] = [f"the message could not be shown: {exc}"]
        properties = _queue_properties()
        if properties:
            view["properties"] = properties
        now = time.time()
        summary = {
            "message": message,
            "connection": tap.connection,
            "from": {"node": tap.source.id, "terminal": tap.terminal},
            "to": {"node": tap.target.id, "terminal": terminal},
            "time": now,
            "thread": threading.current_thread().name,
            "truncated": view["truncated"],
        }
        with self._lock:
            if not self.active:
                return
            summary["seq"] = self.crossings + 1
            line = (json.dumps({**summary, "view": view}, default=str) + "\n").encode()
            if self.bytes + len(line) > self.spec.max_bytes:
                # stop here rather than keep a partial message's path: the reader sees why
                self._stop_locked(f"the recording reached its size limit of {self.spec.max_bytes:,} bytes")
                return
            offset = self.bytes
            self._data.write(line)
            self._data.flush()
            self.bytes += len(line)
            self.crossings += 1
            self._index.write(
                (json.dumps({**summary, "offset": offset, "length": len(line)}) + "\n").encode()
            )
            self._index.flush()

    def invocation_done(self) -> None:
        """A flow invocation recorded ends: once the last one allowed has, the recording is complete.

        The thread keeps its message number: an input node's catch or failure path that follows
        still belongs to it."""
        message = getattr(self._local, "message", 0)
        if message and message >= self.spec.max_messages and self.active:
            count = self.spec.max_messages
            self.stop(f"{count} message{'' if count == 1 else 's'} recorded")

    # -- state ---------------------------------------------------------------------------------

    def _stop_locked(self, reason: str) -> None:
        # stop() takes the lock itself: finish it on another thread, after this crossing
        threading.Thread(target=self.stop, args=(reason,), daemon=True).start()

    def _counts(self) -> dict[str, Any]:
        return {"messages": self.messages, "crossings": self.crossings, "bytes": self.bytes}

    def _read_state(self) -> dict[str, Any]:
        try:
            found = json.loads(self.state_path.read_text())
        except (OSError, ValueError):
            return {}
        return found if isinstance(found, dict) else {}

    def _write_state(self) -> None:
        write_json(self.state_path, self._state)


def refuse(directory: Path, recording_id: str, reason: str) -> None:
    """Mark a requested recording failed (its flow is not here, say) so its reader sees why."""
    if not ID_PATTERN.match(recording_id):
        return
    path = directory / f"{recording_id}.json"
    try:
        state = json.loads(path.read_text())
    except (OSError, ValueError):
        state = {"id": recording_id}
    state.update({"status": "failed", "reason": reason, "recordingStoppedAt": time.time()})
    directory.mkdir(parents=True, exist_ok=True)
    write_json(path, state)
