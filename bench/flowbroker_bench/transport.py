"""`flowbroker bench transport`: seed 004 Appendix B flows on each transport, in one or more groups.

The same flow document runs on the embedded queue manager (a process of its own, without fsync)
and on RabbitMQ at ``--amqp-url`` with each queue type. With one group (the default) the group
runs in this process; ``--groups 1 2`` runs each row's groups as worker processes of their own
sharing the input queue (competing consumers), one group too, so that the rows compare. The
input queue is filled first; a row gives the rate at which the groups drained it onto the
output queue and the CPU per message of this process and its group processes (the reader that
empties the output queue included; the queue manager's or RabbitMQ's own CPU is not in it).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from flowbroker_bench.core import Row, Scenario

#: The Appendix B cases this bench runs by name (``--case``).
CASES = {"passthrough": "passthrough", "simple": "simple-compute", "very-complex": "groups-1"}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--messages", type=int, default=3000, help="messages through the flow per row")
    parser.add_argument("--size", type=int, default=1024, help="message body bytes")
    parser.add_argument(
        "--persistence", choices=("np", "p"), default="np", help="non-persistent or persistent messages"
    )
    parser.add_argument(
        "--amqp-url", default="amqp://guest:guest@127.0.0.1:5672/", help="RabbitMQ to measure"
    )
    parser.add_argument(
        "--transport",
        choices=("qm", "quorum", "classic"),
        action="append",
        help="rows to run (default: all three)",
    )
    parser.add_argument(
        "--case",
        choices=tuple(CASES),
        action="append",
        help="Appendix B flows to run (default: passthrough)",
    )
    parser.add_argument(
        "--groups",
        type=int,
        nargs="+",
        default=None,
        help="execution groups per row, each a process of its own (default: one, in this process)",
    )


def _document(case_name: str, src: str, dst: str) -> tuple[dict[str, Any], Callable[[int, int], bytes]]:
    """The case's flow document reading ``src`` and writing ``dst``, and its body maker."""
    from flowbroker_bench import appendix_b
    from flowbroker_bench.flow import EXAMPLES

    case = appendix_b.select([CASES[case_name]])[0]
    document = json.loads((EXAMPLES / case.flow_file).read_text())
    document["properties"] = {**(document.get("properties") or {}), **case.flow_properties}
    for node in document["nodes"]:
        if node.get("type") in ("MQInput", "MQOutput"):
            node.setdefault("properties", {})["queueName"] = src if node["type"] == "MQInput" else dst

    def body(size: int, ident: int) -> bytes:
        return case.body(size, ident)[0]

    return document, body


def _group_process(
    url: str, data_dir: str | None, document: dict[str, Any], ready: Any, go: Any, done: Any, cpu: Any
) -> None:
    """One execution group: deploy the flow stopped, start it on ``go``, run until ``done``; its
    CPU seconds from ``go`` to ``done`` go into ``cpu``."""
    from flowbroker.runtime import transports
    from flowbroker.runtime.engine import ExecutionGroupRuntime

    runtime = ExecutionGroupRuntime(
        transports.connector(url, data_dir=data_dir),
        trace_dir=Path(tempfile.mkdtemp(prefix="bench-transport-")),
    )
    try:
        runtime.deploy(document, start=False)
        ready.set()
        go.wait(600)
        began = time.process_time()
        runtime.start_flow(str(document["name"]))
        done.wait(900)
        cpu.value = time.process_time() - began
    finally:
        runtime.shutdown(timeout=10)


def _drain(
    args: argparse.Namespace,
    url: str,
    data_dir: str | None,
    make_queue: Callable[[str], str],
    label: str,
    case_name: str,
    groups: int | None,
) -> Row:
    from flowbroker.qm.protocol import MessageDescriptor
    from flowbroker.runtime import transports
    from flowbroker.runtime.engine import ExecutionGroupRuntime

    connect = transports.connector(url, data_dir=data_dir)
    src, dst = make_queue("BENCH.IN"), make_queue("BENCH.OUT")
    document, body = _document(case_name, src, dst)
    document["name"] = f"BenchTransport{label.split()[0].title()}{case_name.title().replace('-', '')}"
    md = MessageDescriptor(persistence=1 if args.persistence == "p" else 0)
    probe = connect()
    runtime = None
    workers: list[Any] = []
    spent_by: list[Any] = []
    context = multiprocessing.get_context("spawn")
    done = context.Event()
    try:
        for i in range(args.messages):
            probe.put(src, body(args.size, i), md, syncpoint=True, pipeline=True)
            if i % 500 == 499:
                probe.commit()
        probe.commit()
        go = context.Event()
        if groups:
            for _ in range(groups):
                ready = context.Event()
                spent = context.Value("d", 0.0)
                worker = context.Process(
                    target=_group_process, args=(url, data_dir, document, ready, go, done, spent), daemon=True
                )
                spent_by.append(spent)
                worker.start()
                workers.append(worker)
                if not ready.wait(120):
                    raise RuntimeError(f"a {label} group did not deploy {document['name']} within 120 s")
        cpu = time.process_time()
        started = time.monotonic()
        if groups:
            go.set()
        else:
            runtime = ExecutionGroupRuntime(
                connect, trace_dir=Path(tempfile.mkdtemp(prefix="bench-transport-"))
            )
            runtime.deploy(document)
        got = 0
        while got < args.messages and time.monotonic() - started < 600:
            got += len(probe.get_many(dst, 500, wait=1.0))
        elapsed = time.monotonic() - started
        done.set()
        for worker in workers:
            worker.join(30)
        cpu = time.process_time() - cpu + sum(spent.value for spent in spent_by)
    finally:
        done.set()
        if runtime is not None:
            runtime.shutdown(timeout=10)
        for worker in workers:
            if worker.is_alive():
                worker.terminate()
                worker.join(10)
        probe.close()
    return {
        "flow": case_name,
        "transport": label,
        "groups": groups or 1,
        "persistence": args.persistence,
        "message_size": args.size,
        "messages": got,
        "Msgs/Sec": round(got / elapsed) if elapsed else 0,
        "CPU-ms/msg": round(cpu * 1000 / max(got, 1), 3),
    }


def run(args: argparse.Namespace) -> list[Row]:
    from flowbroker.qm.harness import QueueManagerProcess

    wanted = args.transport or ["qm", "quorum", "classic"]
    cases = args.case or ["passthrough"]
    # without --groups: one group in this process; with it, each count as processes of their own
    group_counts: list[int | None] = list(args.groups) if args.groups else [None]
    if any(n is not None and not 1 <= n <= 8 for n in group_counts):
        raise SystemExit("--groups: between 1 and 8 groups")
    rows: list[Row] = []
    stamp = time.time_ns()
    serial = iter(range(1, 1_000_000))
    if "qm" in wanted:
        with QueueManagerProcess(Path(tempfile.mkdtemp(prefix="bench-qm-")), fsync=False) as qm:

            def qm_queue(base: str) -> str:
                name = f"{base}.{stamp}.{next(serial)}"
                with qm.client() as client:
                    client.define_queue(name)
                return name

            for case_name in cases:
                for groups in group_counts:
                    rows.append(
                        _drain(
                            args,
                            qm.url,
                            str(qm.data_dir),
                            qm_queue,
                            "embedded queue manager",
                            case_name,
                            groups,
                        )
                    )
    kinds = [kind for kind in ("quorum", "classic") if kind in wanted]
    if kinds:
        import pika

        connection = pika.BlockingConnection(pika.URLParameters(args.amqp_url))
        channel = connection.channel()
        made: list[str] = []
        try:
            for kind in kinds:

                def rabbit_queue(base: str, kind: str = kind) -> str:
                    name = f"{base}.{kind}.{stamp}.{next(serial)}"
                    channel.queue_declare(name, durable=True, arguments={"x-queue-type": kind})
                    made.append(name)
                    return name

                for case_name in cases:
                    for groups in group_counts:
                        rows.append(
                            _drain(
                                args,
                                args.amqp_url,
                                None,
                                rabbit_queue,
                                f"RabbitMQ {kind} queues",
                                case_name,
                                groups,
                            )
                        )
                        connection.process_data_events(time_limit=0)  # keep the connection alive
        finally:
            for name in made:
                channel.queue_delete(name)
            connection.close()
    return rows


SCENARIOS = {
    "transport": Scenario(
        "transport",
        "Appendix B flows (passthrough, simple and very complex compute) on the embedded queue manager and "
        "on RabbitMQ (quorum, classic queues), in one or more execution groups",
        run,
        add_arguments,
        tags=("runtime",),
    )
}
