"""Running a flow in-process on the caller's thread: inject a message at a node, see what reaches each terminal.

Node tests and ``flowbroker flow run`` use it. Queue work goes to a real queue-manager client
when one is given; a tap records every assembly propagated on a terminal without changing the
flow's own wiring.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from esql import domains
from esql.tree import Element
from flowbroker_nodes.base import Assembly, Node, Unwinding, bind_thread
from flowbroker_nodes.passthrough import SPEC as PASSTHROUGH_SPEC

from flowbroker.runtime import assembly as assemblies
from flowbroker.runtime.compiler import CompiledFlow, compile_flow
from flowbroker.runtime.datasources import DataSources
from flowbroker.runtime.engine import Connector, DeployedFlow, FlowThread
from flowbroker.runtime.usertrace import UserTrace


class Tap(Node):
    """Records what arrives; wired onto a terminal beside its real connections."""

    SPEC = PASSTHROUGH_SPEC

    def __init__(self, node_id: str) -> None:
        super().__init__(node_id, node_id, {})
        self.seen: list[Assembly] = []

    def evaluate(self, assembly: Assembly, terminal: str) -> None:
        self.seen.append(assembly)


class FlowHarness:
    """A compiled flow whose nodes run on the calling thread."""

    def __init__(
        self,
        document: dict[str, Any],
        *,
        connect: Connector | None = None,
        data_sources: dict[str, str] | None = None,
        externals: dict[str, Any] | None = None,
        trace_path: Path | None = None,
    ) -> None:
        assemblies.ensure_domains()
        self.compiled: CompiledFlow = compile_flow(document, externals=externals)
        trace = UserTrace(trace_path or Path("/dev/null"), level="normal" if trace_path else "none")
        self.deployed = DeployedFlow(
            self.compiled, connect or _no_queue_manager, DataSources(data_sources), trace
        )
        first = next(iter(self.compiled.nodes.values()))
        self.thread = FlowThread(self.deployed, first, 0)
        self.taps: dict[tuple[str, str], Tap] = {}
        # every ordinary output terminal is tapped up front (an unconnected one discards anyway);
        # failure and catch terminals are left alone because connecting them changes behaviour
        for node_id, node in list(self.compiled.nodes.items()):
            for terminal in node.SPEC.outputs:
                if terminal.kind == "out":
                    self.tap(node_id, terminal.name)
            for name in node.SPEC.derived_outputs(node.properties):
                self.tap(node_id, name)

    def tap(self, node_id: str, terminal: str) -> Tap:
        key = (node_id, terminal)
        if key not in self.taps:
            tap = Tap(f"tap:{node_id}.{terminal}")
            self.compiled.nodes[node_id].connect(terminal, tap, "in")
            self.taps[key] = tap
        return self.taps[key]

    def seen(self, node_id: str, terminal: str) -> list[Assembly]:
        """What was propagated on ``terminal`` (tap a failure or catch terminal before injecting)."""
        return self.tap(node_id, terminal).seen

    def inject(
        self,
        node_id: str,
        body: bytes | Element,
        *,
        domain: str = "BLOB",
        md: dict[str, Any] | None = None,
        terminal: str = "in",
        local_environment: Element | None = None,
        transactional: bool = False,
    ) -> Assembly:
        """Propagate a message into ``node_id``; unwinding exceptions propagate to the caller."""
        root = body if isinstance(body, Element) else self.root_for(body, domain, md, transactional)
        assembly = Assembly(root, local_environment)
        thread = self.thread
        if thread.client is None and self.deployed.connect is not _no_queue_manager:
            thread.client = self.deployed.connect()
        bind_thread(thread)
        thread._trace_writer = None  # bind_thread turned the thread's node trace off
        thread.begin(transactional)
        try:
            self.compiled.nodes[node_id].receive(terminal, assembly)
            if thread.client is not None or thread._sources:
                thread.commit()
        except Unwinding:
            if thread.client is not None or thread._sources:
                thread.backout()
            raise
        finally:
            # an injected message is a batch of its own: what waits for the batch's end runs now
            if thread._after_batch:
                thread._end_batch()
            bind_thread(None)
        return assembly

    def root_for(
        self, body: bytes, domain: str, md: dict[str, Any] | None = None, transactional: bool = False
    ) -> Element:
        from flowbroker.qm.protocol import Message, MessageDescriptor

        message = Message(MessageDescriptor(**(md or {})), {}, body)
        return assemblies.build_root(message, {"domain": domain}, transactional=transactional)

    def close(self) -> None:
        self.thread._drop_connections()
        self.deployed.release()
        self.deployed.data_sources.dispose()
        self.deployed.trace.close()


def flow(
    nodes: dict[str, tuple[str, dict[str, Any]]], wires: list[str], name: str = "TestFlow", **props: Any
) -> dict[str, Any]:
    """``nodes``: id → (type, properties); ``wires``: "a.out -> b.in" strings."""
    connections = []
    for wire in wires:
        left, right = (part.strip() for part in wire.split("->"))
        src, term = left.split(".")
        dst, dterm = right.split(".") if "." in right else (right, "in")
        connections.append({"from": {"node": src, "terminal": term}, "to": {"node": dst, "terminal": dterm}})
    return {
        "name": name,
        "properties": props,
        "nodes": [{"id": nid, "type": t, "properties": p} for nid, (t, p) in nodes.items()],
        "connections": connections,
    }


def with_input(
    nodes: dict[str, tuple[str, dict[str, Any]]], wires: list[str], first: str, **props: Any
) -> dict[str, Any]:
    """A flow fed by an input node ``in`` reading the queue TEST.IN, wired to ``first``."""
    return flow(
        {"in": (queue_reader(), {"queueName": "TEST.IN"}), **nodes}, [f"in.out -> {first}", *wires], **props
    )


def queue_reader() -> str:
    """The built-in input node type that takes its messages from the queue its ``queueName`` names."""
    from flowbroker_nodes import registry

    for spec in registry.specs():
        if spec.is_input and spec.queues_read({"queueName": "TEST.IN"}) == ("TEST.IN",):
            return spec.type
    raise LookupError("no registered input node type reads a queue named by queueName")


def get_all(client: Any, queue: str, count: int, wait: float = 10.0) -> list[Any]:
    """Get ``count`` messages (waiting up to ``wait`` seconds in total for the last one)."""
    found: list[Any] = []
    deadline = time.monotonic() + wait
    while len(found) < count and time.monotonic() < deadline:
        message = client.get(queue, wait=0.2)
        if message is not None:
            found.append(message)
    return found


class _NoQueueManager:
    def __getattr__(self, name: str) -> Any:
        raise RuntimeError("this flow harness has no queue manager connection")


def _no_queue_manager() -> Any:
    return _NoQueueManager()


def domain_names() -> list[str]:
    return domains.known()
