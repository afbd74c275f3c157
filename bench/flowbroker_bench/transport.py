"""`flowbroker bench transport`: the passthrough flow (MQInput → MQOutput) on each transport.

The same flow document runs in an execution group in this process, once on the embedded queue
manager (a process of its own, without fsync) and once per RabbitMQ queue type at
``--amqp-url``. Its input queue is filled first; the row gives the rate at which the flow
drained it onto its output queue and this process's CPU per message (flow threads and the
reader that empties the output queue; the queue manager's or RabbitMQ's own CPU is not in it).
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from flowbroker_bench.core import Row, Scenario


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


def _drain(
    args: argparse.Namespace,
    url: str,
    data_dir: str | None,
    make_queue: Callable[[str], str],
    label: str,
) -> Row:
    from flowbroker.qm.protocol import MessageDescriptor
    from flowbroker.runtime import transports
    from flowbroker.runtime.engine import ExecutionGroupRuntime
    from flowbroker.runtime.harness import flow

    connect = transports.connector(url, data_dir=data_dir)
    src, dst = make_queue("BENCH.IN"), make_queue("BENCH.OUT")
    body = b"x" * args.size
    md = MessageDescriptor(persistence=1 if args.persistence == "p" else 0)
    probe = connect()
    runtime = ExecutionGroupRuntime(connect, trace_dir=Path(tempfile.mkdtemp(prefix="bench-transport-")))
    try:
        for i in range(args.messages):
            probe.put(src, body, md, syncpoint=True, pipeline=True)
            if i % 500 == 499:
                probe.commit()
        probe.commit()
        document = flow(
            {"in": ("MQInput", {"queueName": src}), "out": ("MQOutput", {"queueName": dst})},
            ["in.out -> out"],
            name=f"BenchTransport{label.split()[0].title()}",
        )
        cpu = time.process_time()
        started = time.monotonic()
        runtime.deploy(document)
        got = 0
        while got < args.messages and time.monotonic() - started < 600:
            got += len(probe.get_many(dst, 500, wait=1.0))
        elapsed = time.monotonic() - started
        cpu = time.process_time() - cpu
    finally:
        runtime.shutdown(timeout=10)
        probe.close()
    return {
        "transport": label,
        "persistence": args.persistence,
        "message_size": args.size,
        "messages": got,
        "Msgs/Sec": round(got / elapsed) if elapsed else 0,
        "CPU-ms/msg (this process)": round(cpu * 1000 / max(got, 1), 3),
    }


def run(args: argparse.Namespace) -> list[Row]:
    from flowbroker.qm.harness import QueueManagerProcess

    wanted = args.transport or ["qm", "quorum", "classic"]
    rows: list[Row] = []
    stamp = time.time_ns()
    if "qm" in wanted:
        with QueueManagerProcess(Path(tempfile.mkdtemp(prefix="bench-qm-")), fsync=False) as qm:

            def qm_queue(base: str) -> str:
                with qm.client() as client:
                    client.define_queue(f"{base}.{stamp}")
                return f"{base}.{stamp}"

            rows.append(_drain(args, qm.url, str(qm.data_dir), qm_queue, "embedded queue manager"))
    kinds = [kind for kind in ("quorum", "classic") if kind in wanted]
    if kinds:
        import pika

        connection = pika.BlockingConnection(pika.URLParameters(args.amqp_url))
        channel = connection.channel()
        made: list[str] = []
        try:
            for kind in kinds:

                def rabbit_queue(base: str, kind: str = kind) -> str:
                    name = f"{base}.{kind}.{stamp}"
                    channel.queue_declare(name, durable=True, arguments={"x-queue-type": kind})
                    made.append(name)
                    return name

                rows.append(_drain(args, args.amqp_url, None, rabbit_queue, f"RabbitMQ {kind} queues"))
        finally:
            for name in made:
                channel.queue_delete(name)
            connection.close()
    return rows


SCENARIOS = {
    "transport": Scenario(
        "transport",
        "the passthrough flow on the embedded queue manager and on RabbitMQ (quorum, classic queues)",
        run,
        add_arguments,
        tags=("runtime",),
    )
}
