"""The step debugger of a deployed flow: breakpoints on connections and ESQL lines, pauses, commands.

A flow without breakpoints runs exactly as before: nothing here is on its path. Setting the first
breakpoint puts a probe in place of the target of every connection of the flow (each entry of a
node's ``wires``), and an ESQL breakpoint wraps its node's ``run_routine`` so that a line tracer
runs only while that node's ESQL runs; clearing the last breakpoint takes them all out again.

A probe pauses the flow thread that carries a message across its connection when the connection
has a breakpoint, or when that thread is stepping. The thread then blocks, for that message
only (other threads of the flow go on), until a command arrives — resume, step (pause again at
the next connection or ESQL line the message reaches) or abort — or until the pause timeout
resumes it by itself, or the flow stops. While it is paused the message tree can be edited
(:mod:`flowbroker.runtime.message_view`); abort raises :class:`FlowAborted`, which no node, TryCatch
or ESQL handler catches, and the flow thread backs the unit of work out.

A :class:`PauseListener` (the worker: the repository's ``debug_pauses`` table) hears of each
pause, edit and resumption.
"""

from __future__ import annotations

import os
import re
import sys
import threading
import time
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field
from types import FrameType
from typing import Any, Protocol

from flowbroker_nodes.base import Assembly, Node

from flowbroker.runtime import message_view

#: Seconds a paused flow thread waits for a command before it resumes by itself.
PAUSE_TIMEOUT_ENV = "FLOWBROKER_DEBUG_PAUSE_SECONDS"
DEFAULT_PAUSE_TIMEOUT = 300.0
MAX_PAUSE_TIMEOUT = 3600.0
#: At most this many flow threads of one flow are paused at once; further hits run on.
MAX_PAUSED = 16

ACTIONS = ("resume", "step", "abort")


def pause_timeout() -> float:
    """The pause timeout from FLOWBROKER_DEBUG_PAUSE_SECONDS, between 1 s and an hour."""
    raw = os.environ.get(PAUSE_TIMEOUT_ENV, "")
    try:
        value = float(raw) if raw.strip() else DEFAULT_PAUSE_TIMEOUT
    except ValueError:
        value = DEFAULT_PAUSE_TIMEOUT
    return min(MAX_PAUSE_TIMEOUT, max(1.0, value))


class FlowAborted(BaseException):
    """The debugger's abort: passes every node, TryCatch and ESQL handler; the unit of work is backed out."""


class DebugError(ValueError):
    """A debugger command that cannot be carried out (unknown pause, bad breakpoint, bad edit)."""


def connection_id(source: str, terminal: str, target: str, target_terminal: str) -> str:
    """How a connection is named in breakpoints: ``source.terminal->target.terminal``."""
    return f"{source}.{terminal}->{target}.{target_terminal}"


@dataclass(frozen=True)
class Breakpoints:
    connections: frozenset[str] = frozenset()
    #: (node id, ESQL line)
    esql: frozenset[tuple[str, int]] = frozenset()

    def __bool__(self) -> bool:
        return bool(self.connections or self.esql)

    @classmethod
    def from_json(cls, data: dict[str, Any] | None) -> Breakpoints:
        data = data or {}
        connections = frozenset(str(c) for c in data.get("connections") or [])
        esql = frozenset((str(e["node"]), int(e["line"])) for e in data.get("esql") or [])
        return cls(connections, esql)

    def to_json(self) -> dict[str, Any]:
        return {
            "connections": sorted(self.connections),
            "esql": [{"node": n, "line": ln} for n, ln in sorted(self.esql)],
        }


@dataclass
class Pause:
    """One paused flow thread: where, the assembly it holds, and the command it waits for."""

    flow: str
    thread: str
    kind: str  # "connection" or "esql"
    assembly: Assembly
    connection: str = ""
    node: str = ""
    line: int = 0
    variables: list[dict[str, Any]] = field(default_factory=list)
    timeout: float = DEFAULT_PAUSE_TIMEOUT
    id: str = field(default_factory=lambda: str(uuid.uuid4()))
    revision: int = 0
    paused_at: float = field(default_factory=time.time)
    action: str = ""
    _event: threading.Event = field(default_factory=threading.Event)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def resumes_at(self) -> float:
        return self.paused_at + self.timeout

    def view(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "flow": self.flow,
            "thread": self.thread,
            "kind": self.kind,
            "connection": self.connection,
            "node": self.node,
            "line": self.line,
            "variables": self.variables,
            "revision": self.revision,
            "pausedAt": self.paused_at,
            "resumesAt": self.resumes_at,
            "message": message_view.view_assembly(self.assembly),
        }

    def edit(self, edits: Iterable[dict[str, Any]]) -> None:
        """Apply ``{tree, ref, value, type}`` edits to the held assembly (all checked before any applies)."""
        with self._lock:
            if self.action:
                raise DebugError(f"pause {self.id} has already been answered")
            checked = []
            for index, edit in enumerate(edits):
                try:
                    tree = str(edit["tree"])
                    ref = [int(i) for i in edit["ref"]]
                    type_name = str(edit.get("type") or "CHARACTER")
                    value = edit.get("value")
                    message_view.find(self.assembly, tree, ref)
                    message_view.parse_value(None if value is None else str(value), type_name)
                except (KeyError, TypeError) as exc:
                    raise DebugError(f"edit {index}: needs tree, ref, value and type ({exc})") from None
                except ValueError as exc:  # message_view.EditError is one
                    raise DebugError(f"edit {index}: {exc}") from None
                checked.append((tree, ref, None if value is None else str(value), type_name))
            for tree, ref, text, type_name in checked:
                message_view.set_value(self.assembly, tree, ref, text, type_name)
            self.revision += 1

    def answer(self, action: str) -> None:
        if action not in ACTIONS:
            raise DebugError(f"unknown action {action!r}: one of {', '.join(ACTIONS)}")
        with self._lock:
            if self.action:
                raise DebugError(f"pause {self.id} has already been answered")
            self.action = action
        self._event.set()

    def wait(self, stop: threading.Event) -> str:
        """Block until answered, the timeout passes (resume) or the flow stops (resume)."""
        deadline = time.monotonic() + self.timeout
        while not self._event.is_set():
            left = deadline - time.monotonic()
            if left <= 0 or stop.is_set():
                with self._lock:
                    if not self.action:
                        self.action = "resume"
                break
            self._event.wait(min(0.25, left))
        return self.action


class PauseListener(Protocol):
    def paused(self, pause: Pause) -> None: ...
    def changed(self, pause: Pause) -> None: ...
    def resumed(self, pause: Pause) -> None: ...


class _NoListener:
    def paused(self, pause: Pause) -> None:
        pass

    def changed(self, pause: Pause) -> None:
        pass

    def resumed(self, pause: Pause) -> None:
        pass


class _Probe:
    """Stands in for the target of one connection while the flow has breakpoints."""

    __slots__ = ("connection", "debugger", "node", "target")

    def __init__(self, debugger: FlowDebugger, target: Node, connection: str, node: str = "") -> None:
        self.debugger = debugger
        self.target = target
        self.connection = connection
        #: the node the connection enters on its canvas (a subflow instance rather than its Input)
        self.node = node or target.id

    def __getattr__(self, name: str) -> Any:
        return getattr(self.target, name)

    def receive(self, terminal: str, assembly: Assembly) -> None:
        debugger = self.debugger
        local = debugger.local
        depth = getattr(local, "depth", 0)
        local.depth = depth + 1
        try:
            if self.connection in debugger.breakpoints.connections or getattr(local, "stepping", False):
                debugger.pause(assembly, kind="connection", connection=self.connection, node=self.node)
            self.target.receive(terminal, assembly)
        finally:
            local.depth = depth
            if depth == 0:
                # the message's way through the flow is over: stepping ends with it
                local.stepping = False


def _node(target: Any) -> Any:
    """The node behind a wire's target (a probe, a recording's tap, or both in turn)."""
    while not isinstance(target, Node) and hasattr(target, "target"):
        target = target.target
    return target


def canvas_name(source: Node, terminal: str, target: Any, target_terminal: str) -> str:
    """A compiled connection as breakpoints name it: as the flow's canvas draws it.

    A connection into or out of a subflow instance is named by the subflow node and its terminal
    (``in.out->sub.in``, ``sub.done->next.in``), as the designer names that edge; one inside a
    subflow keeps the inner ids (``sub/inner``)."""
    from flowbroker.runtime.recorder import canvas_connection

    real = _node(target)
    if not isinstance(real, Node):
        return connection_id(source.id, terminal, str(getattr(real, "id", "")), target_terminal)
    return canvas_connection(source, terminal, real, target_terminal)


def canvas_target(target: Any, target_terminal: str) -> str:
    """The node a connection enters as its canvas draws it: the subflow instance for its Input node."""
    from flowbroker.runtime.recorder import _outer

    real = _node(target)
    if not isinstance(real, Node):
        return str(getattr(real, "id", ""))
    outer = _outer(real, target_terminal, "input", "in")
    return outer[0] if outer is not None else real.id


def connections_of(nodes: dict[str, Node]) -> list[str]:
    """Every connection between compiled nodes, as breakpoints name them (subflows expanded:
    their inner nodes are named ``subflowNode/innerNode``, the connections into and out of a
    subflow instance by that instance, see :func:`canvas_name`)."""
    found = []
    for node in nodes.values():
        for terminal, wires in node.wires.items():
            for target, target_terminal in wires:
                found.append(canvas_name(node, terminal, target, target_terminal))
    return found


def runnable(breakpoints: Breakpoints, nodes: dict[str, Node]) -> tuple[Breakpoints, list[str]]:
    """The breakpoints a compiled flow can stop at, and a description of each it cannot."""
    known = set(connections_of(nodes))
    dropped = [f"no connection {c}" for c in sorted(breakpoints.connections - known)]
    esql = set()
    for node_id, line in breakpoints.esql:
        if getattr(nodes.get(node_id), "routine", None) is None or line < 1:
            dropped.append(f"no ESQL line {line} of node {node_id}")
        else:
            esql.add((node_id, line))
    return Breakpoints(breakpoints.connections & known, frozenset(esql)), dropped


class FlowDebugger:
    """The breakpoints and paused threads of one deployed flow."""

    def __init__(
        self,
        flow: str,
        nodes: dict[str, Node],
        stop: threading.Event,
        listener: PauseListener | None = None,
        timeout: float | None = None,
    ) -> None:
        self.flow = flow
        self.nodes = nodes
        self.stop = stop
        self.listener: PauseListener = listener or _NoListener()
        self.timeout = pause_timeout() if timeout is None else timeout
        self.breakpoints = Breakpoints()
        self.local = threading.local()
        self.paused: dict[str, Pause] = {}
        self._lock = threading.Lock()
        self._probed = False
        self._traced: dict[str, Any] = {}

    # -- breakpoints ---------------------------------------------------------------------------

    def connections(self) -> list[str]:
        """Every connection of the compiled flow, as breakpoints name them."""
        return connections_of(self.nodes)

    def set_breakpoints(self, breakpoints: Breakpoints) -> None:
        """Replace the breakpoints; a connection or ESQL node the flow does not have is refused."""
        known = set(self.connections())
        unknown = sorted(breakpoints.connections - known)
        if unknown:
            raise DebugError(f"flow {self.flow} has no connection {unknown[0]}")
        for node_id, line in breakpoints.esql:
            node = self.nodes.get(node_id)
            if node is None or getattr(node, "routine", None) is None:
                raise DebugError(f"flow {self.flow} has no ESQL node {node_id}")
            if line < 1:
                raise DebugError(f"ESQL line {line} of node {node_id}: lines start at 1")
        with self._lock:
            self.breakpoints = breakpoints
            if breakpoints and not self._probed:
                self._install_probes()
            elif not breakpoints and self._probed:
                self._remove_probes()
            esql_nodes = {n for n, _ in breakpoints.esql}
            for node_id in list(self._traced):
                if node_id not in esql_nodes:
                    del self.nodes[node_id].run_routine  # type: ignore[attr-defined]
                    del self._traced[node_id]
            for node_id in esql_nodes - set(self._traced):
                self._trace_node(self.nodes[node_id])

    def _install_probes(self) -> None:
        """Put a probe on every wire that has none (so it can run again after someone else, such
        as a recording that ended, put back wires it had saved)."""
        for node in self.nodes.values():
            for terminal, wires in node.wires.items():
                wires[:] = [
                    (
                        target
                        if isinstance(target, _Probe)
                        else _Probe(
                            self,
                            target,
                            canvas_name(node, terminal, target, tt),
                            canvas_target(target, tt),
                        ),
                        tt,
                    )  # type: ignore[misc]
                    for target, tt in wires
                ]
        self._probed = True

    def reinstall(self) -> None:
        """Probe the wires again while breakpoints are set, or take the probes out when none are:
        for whoever replaced ``node.wires`` (a recording that ended puts back the wires it saved)."""
        with self._lock:
            if self.breakpoints:
                self._install_probes()
            elif self._probed:
                self._remove_probes()

    def _remove_probes(self) -> None:
        for node in self.nodes.values():
            for wires in node.wires.values():
                wires[:] = [
                    (target.target if isinstance(target, _Probe) else target, tt) for target, tt in wires
                ]
        self._probed = False

    def _trace_node(self, node: Node) -> None:
        """Run ``node``'s ESQL under a line tracer (only while it runs, only on its thread)."""
        original = node.run_routine  # type: ignore[attr-defined]
        program = node.routine.program  # type: ignore[attr-defined]
        tracer = _EsqlTracer(self, node, program)

        def run_routine(ctx: Any, **how: Any) -> Any:
            previous = sys.gettrace()
            sys.settrace(tracer.global_trace)
            try:
                return original(ctx, **how)
            finally:
                sys.settrace(previous)

        node.run_routine = run_routine  # type: ignore[attr-defined]
        self._traced[node.id] = run_routine

    # -- pausing -------------------------------------------------------------------------------

    def pause(
        self,
        assembly: Assembly,
        *,
        kind: str,
        connection: str = "",
        node: str = "",
        line: int = 0,
        variables: list[dict[str, Any]] | None = None,
    ) -> None:
        """Block this flow thread at a breakpoint until a command, the timeout or the flow's stop."""
        self.local.stepping = False
        with self._lock:
            if len(self.paused) >= MAX_PAUSED:
                return
            pause = Pause(
                self.flow,
                threading.current_thread().name,
                kind,
                assembly,
                connection=connection,
                node=node,
                line=line,
                variables=variables or [],
                timeout=self.timeout,
            )
            self.paused[pause.id] = pause
        try:
            self.listener.paused(pause)
            action = pause.wait(self.stop)
        finally:
            with self._lock:
                self.paused.pop(pause.id, None)
            self.listener.resumed(pause)
        if action == "abort":
            raise FlowAborted(f"aborted in the debugger at {connection or f'{node} line {line}'}")
        if action == "step":
            self.local.stepping = True

    def command(self, pause_id: str, action: str, edits: list[dict[str, Any]] | None = None) -> Pause:
        """Edit the paused message and/or answer the pause (``action`` "" edits only)."""
        pause = self.paused.get(pause_id)
        if pause is None:
            raise DebugError(f"flow {self.flow} has no pause {pause_id} (it may have resumed)")
        if edits:
            pause.edit(edits)
            self.listener.changed(pause)
        if action:
            pause.answer(action)
        return pause

    def release_all(self) -> None:
        """Resume every paused thread (the breakpoints are gone, or the group is no longer for development)."""
        for pause in list(self.paused.values()):
            try:
                pause.answer("resume")
            except DebugError:
                pass


_MANGLED = re.compile(r"_([0-9a-f]+)_")


_LEVEL = re.compile(r"_(\d+)$")


def esql_name(python_name: str) -> tuple[str, int]:
    """The ESQL name and block level of a generated local (``v_`` prefix, escaped characters, a
    ``_level`` suffix inside nested blocks) — see esql.codegen.mangle and var_for_declare."""
    level = 1
    stem = python_name[2:]
    found = _LEVEL.search(stem)
    if found is not None:
        level = int(found.group(1))
        stem = stem[: found.start()]
    return _MANGLED.sub(lambda m: chr(int(m.group(1), 16)), stem), level


class _EsqlTracer:
    """Pauses at an ESQL line of one node that has a breakpoint, or at the next one when stepping."""

    def __init__(self, debugger: FlowDebugger, node: Node, program: Any) -> None:
        self.debugger = debugger
        self.node = node
        self.code_name = program.code_name
        self.positions = program.positions
        self.filename = f"{node.id}.esql"
        self.ctx: Any = None
        self.program = program

    def global_trace(self, frame: FrameType, event: str, arg: Any) -> Any:
        if frame.f_code.co_filename != self.code_name:
            return None
        last: list[int] = [0]

        def local_trace(frame: FrameType, event: str, arg: Any) -> Any:
            if event == "line":
                self.line(frame, last)
            return local_trace

        return local_trace

    def line(self, frame: FrameType, last: list[int]) -> None:
        number = frame.f_lineno
        if not 0 < number <= len(self.positions):
            return
        filename, line, _col = self.positions[number - 1]
        if filename != self.filename or line == last[0] or line <= 0:
            return
        last[0] = line
        debugger = self.debugger
        stepping = getattr(debugger.local, "stepping", False)
        if not stepping and (self.node.id, line) not in debugger.breakpoints.esql:
            return
        ctx = frame.f_locals.get("ctx")
        debugger.pause(
            self.assembly(ctx),
            kind="esql",
            node=self.node.id,
            line=line,
            variables=variables(frame, self.program),
        )

    def assembly(self, ctx: Any) -> Assembly:
        """What the ESQL works on: the output trees a Compute node builds, else the input message."""
        if ctx is None:
            return Assembly(message_view_root())
        if getattr(self.node, "KIND", "") == "COMPUTE":
            return Assembly(
                ctx.output_root, ctx.output_local_environment, ctx.environment, ctx.output_exception_list
            )
        return Assembly(
            ctx.input_root, ctx.input_local_environment, ctx.environment, ctx.input_exception_list
        )


def message_view_root() -> Any:
    from esql.tree import Element

    return Element("Root")


def variables(frame: FrameType, program: Any = None) -> list[dict[str, Any]]:
    """The ESQL variables in scope in a generated frame: name, type, value (trees as paths) and
    scope: ``local`` (the routine's own), ``module`` or ``schema`` (the DECLAREs at module or
    broker-schema level that the routine sees, when ``program`` is the compiled program).

    A name declared in an inner scope hides the same name of an outer one, as in ESQL."""
    found: dict[str, tuple[int, dict[str, Any]]] = {}
    for name, value in frame.f_locals.items():
        if not name.startswith("v_"):
            continue
        esql, level = esql_name(name)
        if esql in found and found[esql][0] > level:
            continue  # an inner block's variable hides an outer one of the same name
        found[esql] = (level, _variable(esql, value, "local"))
    shown = [entry for _, entry in found.values()]
    for scope, table in _outer_scopes(frame, program):
        for esql, var in table.items():
            if esql in found or var.kind in ("namespace", "alias"):
                continue
            missing = object()
            if var.py.startswith("ctx.mv."):
                holder = getattr(frame.f_locals.get("ctx"), "mv", None)
                value = getattr(holder, var.py.removeprefix("ctx.mv."), missing)
            else:
                value = frame.f_globals.get(var.py, missing)
            if value is missing:
                continue  # not made yet for this message: nothing to show
            found[esql] = (0, _variable(esql, value, scope, var.kind))
            shown.append(found[esql][1])
    return shown


def _outer_scopes(frame: FrameType, program: Any) -> list[tuple[str, dict[str, Any]]]:
    """(scope, ESQL name -> codegen Var) of the module and broker schema of the frame's routine."""
    generator = getattr(program, "generator", None)
    if generator is None:
        return []
    function = frame.f_code.co_name
    for module in generator.modules.values():
        if any(routine.py == function for routine in module.routines.values()) or (
            module.node is None and function == "f__bare_main"
        ):
            return [
                ("module", dict(getattr(module, "declares_vars", {}) or {})),
                ("schema", dict(generator.schema_vars.get(module.schema, {}))),
            ]
    for schema, routines in generator.schema_routines.items():
        if any(routine.py == function for routine in routines.values()):
            return [("schema", dict(generator.schema_vars.get(schema, {})))]
    return []


def _variable(name: str, value: Any, scope: str, kind: str = "") -> dict[str, Any]:
    from esql.tree import Element

    entry: dict[str, Any] = {"name": name, "scope": scope}
    target = getattr(value, "element", value) if not isinstance(value, Element) else value
    if isinstance(target, Element):
        entry["type"] = "ROW" if kind == "row" else "REFERENCE"
        entry["value"] = _path(target)
    else:
        entry["type"] = message_view.value_type(value)
        entry["value"] = message_view.value_text(value)
    return entry


def _path(element: Any) -> str:
    names = []
    while element is not None:
        names.append(str(element.name))
        element = element.parent
    return ".".join(reversed(names))
