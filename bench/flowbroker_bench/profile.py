"""Where a message's CPU goes in an execution group: the flow thread's real path, profiled.

``flowbroker bench profile`` preloads N messages on a queue of a queue manager process, runs one
flow thread of MQInput → Compute (ESQL) → MQOutput over them twice (once plain, for the CPU per
message, once under cProfile) and prints the profile's self time sorted into the stages of a
message's life; with ``--transport mqtt`` the flow is scenario A's MQTTSubscribe → Compute →
MQTTPublish on a private Mosquitto, fed by the peers' closed-loop load generator; with
``--transport amqp-classic`` or ``amqp-quorum`` the queue flows run on RabbitMQ queues of that type
(``--amqp-url``), beam.smp's CPU given where RabbitMQ runs on this machine. The stages: receive, parse, tree, ESQL, serialize, send, commit, statistics and the engine
around them. Time spent in a library or built-in function (a socket call, ``orjson.loads``) goes
to the stages of its callers in proportion to what each caller spent in it, so every stage holds
the C code it drives. The per-message figures scale the profile's shares to the plain run's CPU,
so cProfile's own overhead does not inflate them.
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import re
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from flowbroker_bench.core import Row, Scenario

#: (stage, path fragment of the function's file or "" for any, function name pattern), first match wins.
RULES: tuple[tuple[str, str, str], ...] = (
    ("statistics", "", r"^<built-in method time\.(perf_counter_ns|thread_time_ns|monotonic_ns)>$"),
    ("statistics", "/runtime/engine.py", r"^(statistics|record_\w+)$"),
    ("commit + next get", "/runtime/engine.py", r"^(commit_and_prefetch|commit_and_get)$"),
    ("commit + next get", "/transports/qm.py", r"^commit_and_get$"),
    ("commit + next get", "/transports/amqp.py", r"^commit_and_get$"),
    # the RabbitMQ transport's own publish marshalling is sending, wherever the commit drives it
    ("send", "/transports/amqp.py", r"^(_publish_frames|_frames|send_message|output|produce_joined)$"),
    ("commit", "/transports/amqp.py", r"^(commit|publish_held|acknowledge|_on_return)$"),
    ("receive", "/transports/amqp.py", r"^(get_many|get|_consume|on_message|from_amqp|_counted|ready)$"),
    ("receive", "/transports/amqp_codec.py", r""),
    (
        "send",
        "/transports/amqp.py",
        r"^(put|put_relayed|publish|_properties|to_amqp|encode_properties|_field|_short|_send|_check_queue)$",
    ),
    ("commit + next get", "/qm/client.py", r"^commit_and_get$"),
    ("commit", "/runtime/engine.py", r"^(commit|begin|in_transaction)$"),
    ("commit", "/transports/qm.py", r"^commit$"),
    ("commit", "/qm/client.py", r"^commit$"),
    ("receive", "/runtime/engine.py", r"^(next_messages|get_batch|get_message|get)$"),
    ("receive", "/transports/qm.py", r"^(get_many|get)$"),
    ("receive", "/qm/client.py", r"get"),
    ("receive", "/qm/protocol.py", r"decode|^feed$|^__next__$|^frames$"),
    (
        "send",
        "/runtime/engine.py",
        r"^(put|put_raw|publish|message_parts|message_body|_relay_put|_relay_fields|_usr_overlay)$",
    ),
    ("send", "/transports/qm.py", r"^(put|publish)$"),
    ("send", "/qm/client.py", r"put|publish|_send|_write"),
    ("send", "/qm/protocol.py", r"encode|relay_encoding"),
    ("receive", "flowbroker_nodes/mqtt_wire.py", r"^(read|_handle|_read_one)$"),
    ("receive", "flowbroker_nodes/mqtt_subscribe.py", r"^(_pump|_deliver|next)$"),
    ("send", "flowbroker_nodes/mqtt_wire.py", r""),
    ("send", "flowbroker_nodes/mqtt_publish.py", r""),
    ("send", "flowbroker_nodes/mq_output.py", r""),
    ("send", "flowbroker_nodes/output.py", r""),
    # a straight run's edit of a parsed JSON body is what the Compute module does
    ("ESQL", "/formats/json.py", r"^(edit|_read)$"),
    ("ESQL", "/runtime/straight.py", r"^_edited$"),
    ("statistics", "/runtime/straight.py", r"^_count$"),
    # the message tree back to a descriptor, properties and body bytes
    ("serialize", "/assembly.py", r"^(to_message|to_body|_property|_set|body_element|relay_of)$"),
    ("serialize", "/formats/json.py", r"^(_data|_default|serialize)$"),
    ("serialize", "/formats/mqmd.py", r"^(fields|_id)$"),
    (
        "serialize",
        "/formats/xmlcore.py",
        r"^(_element|_qname|text_of|escape_text|escape_attr|kid_names_ok|<genexpr>)$",
    ),
    ("parse", "/formats/json.py", r"^parse_document$"),
    ("serialize", "/formats/", r"serial|write|dump|encode|to_bytes|render|emit|fragment|document"),
    ("serialize", "esql/domains.py", r"serial|write|dump|encode|to_bytes|render"),
    ("serialize", "esql/xmlio.py", r"write|serial|render"),
    ("parse", "/formats/", r""),
    ("parse", "esql/domains.py", r""),
    ("parse", "esql/xmlio.py", r""),
    ("parse", "/runtime/assembly.py", r""),
    ("parse", "/runtime/engine.py", r"^(build_assembly|reset_body)$"),
    ("tree", "esql/tree.py", r""),
    ("ESQL", "esql/", r""),
    ("ESQL", "flowbroker_nodes/compute.py", r""),
    ("ESQL", "flowbroker_nodes/esqlnode.py", r""),
    ("ESQL", "<esql", r""),
    ("engine", "flowbroker_nodes/", r""),
    ("engine", "/runtime/", r""),
)

STAGES = (
    "receive",
    "parse",
    "tree",
    "ESQL",
    "serialize",
    "send",
    "commit",
    "commit + next get",
    "statistics",
    "engine",
    "other",
)

SET_STATUS = """CREATE COMPUTE MODULE SetStatus
CREATE FUNCTION Main() RETURNS BOOLEAN
BEGIN
  SET OutputRoot = InputRoot;
  SET OutputRoot.JSON.Data.status = 'processed';
  RETURN TRUE;
END;
END MODULE;"""

Func = tuple[str, int, str]


def stage_of(file: str, name: str) -> str | None:
    """The stage a function's own time belongs to; None for library and built-in code."""
    for stage, fragment, pattern in RULES:
        if fragment and fragment not in file:
            continue
        if not fragment and file != "~":
            continue
        if re.search(pattern, name):
            return stage
    return None


def breakdown(stats: dict[Func, Any]) -> dict[str, float]:
    """Seconds of self time per stage; unclaimed functions are split over their callers' stages."""
    memo: dict[Func, dict[str, float]] = {}

    def shares(func: Func, depth: int) -> dict[str, float]:
        """The stages ``func``'s time belongs to, as fractions summing to 1."""
        if func in memo:
            return memo[func]
        file, _, name = func
        own = stage_of(file, name)
        if own is not None:
            memo[func] = {own: 1.0}
            return memo[func]
        callers = stats[func][4] if func in stats else {}
        total = sum(c[3] for c in callers.values()) if callers else 0.0
        if depth > 40 or not callers or total <= 0:
            return {"other": 1.0}
        memo[func] = {"other": 1.0}  # a recursion back to func counts as unclaimed
        out: dict[str, float] = {}
        for caller, figures in callers.items():
            weight = figures[3] / total
            for stage, part in shares(caller, depth + 1).items():
                out[stage] = out.get(stage, 0.0) + weight * part
        memo[func] = out
        return out

    seconds = dict.fromkeys(STAGES, 0.0)
    for func, (_, _, tottime, _, _) in stats.items():
        for stage, part in shares(func, 0).items():
            seconds[stage] = seconds.get(stage, 0.0) + tottime * part
    return seconds


def _document(
    in_queue: str, out_queue: str, mode: str, read_ahead: int, flow: str = "compute"
) -> dict[str, Any]:
    if flow == "scenario-b":
        # peer scenario B's Compute (2 KB XML order -> 20-line invoice) between queues
        from flowbroker_bench.peers.engine_host import INVOICE

        document = _document(in_queue, out_queue, mode, read_ahead)
        document["name"] = "ProfileInvoice"
        document["nodes"][0]["properties"]["messageDomain"] = "XMLNSC"
        document["nodes"][1]["properties"] = {"esql": INVOICE, "module": "Invoice"}
        return document
    if flow == "passthrough":
        # seed 004 §2.1's flow: the message goes out as it came in (BLOB, never parsed)
        return {
            "name": "ProfilePassthrough",
            "nodes": [
                {
                    "id": "in",
                    "type": "MQInput",
                    "properties": {
                        "queueName": in_queue,
                        "transactionMode": mode,
                        "waitInterval": 50,
                        **({"readAhead": read_ahead} if read_ahead else {}),
                    },
                },
                {"id": "out", "type": "MQOutput", "properties": {"queueName": out_queue}},
            ],
            "connections": [
                {"from": {"node": "in", "terminal": "out"}, "to": {"node": "out", "terminal": "in"}}
            ],
        }
    return {
        "name": "ProfileCompute",
        "nodes": [
            {
                "id": "in",
                "type": "MQInput",
                "properties": {
                    "queueName": in_queue,
                    "messageDomain": "JSON",
                    "transactionMode": mode,
                    "waitInterval": 50,
                    **({"readAhead": read_ahead} if read_ahead else {}),
                },
            },
            {"id": "compute", "type": "Compute", "properties": {"esql": SET_STATUS, "module": "SetStatus"}},
            {"id": "out", "type": "MQOutput", "properties": {"queueName": out_queue}},
        ],
        "connections": [
            {"from": {"node": "in", "terminal": "out"}, "to": {"node": "compute", "terminal": "in"}},
            {"from": {"node": "compute", "terminal": "out"}, "to": {"node": "out", "terminal": "in"}},
        ],
    }


def _case(key: str) -> Any:
    from flowbroker_bench.appendix_b import CASES

    for case in CASES:
        if case.key == key:
            if case.subscribers or case.groups > 1 or case.message_set is not None:
                raise ValueError(f"--case {key}: only a one-group point-to-point case can be profiled")
            return case
    raise ValueError(f"--case {key}: no such Appendix B case (`flowbroker bench flow --list` names them)")


def _case_document(case: Any, in_queue: str, out_queue: str) -> dict[str, Any]:
    """The case's example flow reading ``in_queue`` and writing ``out_queue`` instead of its own."""
    import json

    from flowbroker_bench.flow import EXAMPLES

    text = (EXAMPLES / case.flow_file).read_text()
    document: dict[str, Any] = json.loads(
        text.replace(f'"{case.in_queue}"', f'"{in_queue}"').replace(f'"{case.out_queue}"', f'"{out_queue}"')
    )
    document["properties"] = {**(document.get("properties") or {}), **case.flow_properties}
    return document


def _cpu_seconds(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as fh:
        fields = fh.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class _QueueManagerSide:
    """The queues, connections and CPU of a queue manager process."""

    def __init__(self, qm: Any) -> None:
        self.qm = qm

    def define(self, name: str, max_depth: int) -> str:
        with self.qm.client() as control:
            control.define_queue(name, replace=True, max_depth=max_depth)
        return name

    def put_many(self, queue: str, bodies: list[bytes], md: Any) -> None:
        with self.qm.client() as control:
            control.put_many(queue, bodies, md)

    def connect(self) -> Any:
        from flowbroker.runtime.transports.qm import QueueConnection

        return QueueConnection.open(self.qm.url, data_dir=str(self.qm.data_dir))

    def depth_watcher(self, queue: str) -> Any:
        client = self.qm.client()
        control = client.__enter__()
        return lambda: int(control.inquire_queue(queue).get("current_depth", 0)), lambda: client.__exit__(
            None, None, None
        )

    def cpu(self) -> float:
        return _cpu_seconds(self.qm.pid)


class _RabbitSide:
    """The run's queues on RabbitMQ (deleted at the end), its connections and beam.smp's CPU."""

    def __init__(self, url: str, kind: str) -> None:
        from flowbroker_bench.qm_vs_rabbitmq import rabbit_pid
        from flowbroker_bench.seed004_amqp import RabbitSide, _local

        self.side = RabbitSide(url, kind)
        self.beam = rabbit_pid() if _local(url) else None
        for key, value in self.side.env().items():
            os.environ[key] = value

    def define(self, name: str, _max_depth: int) -> str:
        # PROFILE.PLAIN.IN as P.PL.IN: the run's suffix must leave the name within 48 characters
        _, tag, end = name.split(".")
        short = f"P.{tag[:2]}.{end}"
        real = self.side.define(short)
        self.side.purge(short)
        return real

    def put_many(self, queue: str, bodies: list[bytes], md: Any) -> None:
        from flowbroker.runtime.transports.amqp import to_amqp

        channel = self.side._channel
        for body in bodies:
            channel.basic_publish("", queue, body, to_amqp(md, None))

    def connect(self) -> Any:
        return self.side.connect()

    def depth_watcher(self, queue: str) -> Any:
        import pika

        conn = pika.BlockingConnection(pika.URLParameters(self.side.url))
        channel = conn.channel()
        return lambda: int(channel.queue_declare(queue, passive=True).method.message_count), conn.close

    def cpu(self) -> float:
        return _cpu_seconds(self.beam) if self.beam else 0.0

    def close(self) -> None:
        self.side.close()


def _pass(
    server: Any, args: argparse.Namespace, tag: str, profiler: cProfile.Profile | None
) -> tuple[float, float, float, int]:
    """One run over ``args.messages`` messages: flow-thread CPU s, server CPU s, wall s, errors."""
    from flowbroker.qm.protocol import MessageDescriptor
    from flowbroker.runtime.compiler import compile_flow
    from flowbroker.runtime.datasources import DataSources
    from flowbroker.runtime.engine import DeployedFlow, FlowThread
    from flowbroker.runtime.usertrace import UserTrace

    from flowbroker_bench.peers.workloads import json_message, xml_order

    in_queue = server.define(f"PROFILE.{tag}.IN", args.messages + 10)
    out_queue = server.define(f"PROFILE.{tag}.OUT", args.messages + 10)
    case = _case(args.case) if args.case else None
    persistence = 1 if args.persistent else 0
    md = MessageDescriptor(persistence=persistence)
    if case is not None:
        # the Appendix B case's own request, as its requesters send it
        size = args.size if args.size != 1024 else case.size
        body, fields = case.body(size, 0)
        case_md = MessageDescriptor(**{**fields, "persistence": persistence})
        for start in range(0, args.messages, 500):
            server.put_many(in_queue, [body] * min(500, args.messages - start), case_md)
    else:
        for start in range(0, args.messages, 500):
            numbers = range(start, min(args.messages, start + 500))
            if args.flow == "scenario-b":
                bodies = [xml_order(n) for n in numbers]
            else:
                bodies = [json_message(n, args.size) for n in numbers]
            server.put_many(in_queue, bodies, md)

    if case is not None:
        compiled = compile_flow(_case_document(case, in_queue, out_queue))
    else:
        compiled = compile_flow(
            _document(in_queue, out_queue, args.transaction_mode, args.read_ahead, args.flow)
        )

    deployed = DeployedFlow(
        compiled, server.connect, DataSources(None), UserTrace(Path("/dev/null"), level="none")
    )
    thread = FlowThread(deployed, compiled.nodes["in"], 0)
    deployed.threads = [thread]

    depth, done = server.depth_watcher(out_queue)

    def watch() -> None:
        try:
            while not deployed.stop_event.is_set():
                if depth() >= args.messages:
                    deployed.stop_event.set()
                    return
                time.sleep(0.05)
        finally:
            done()

    watcher = threading.Thread(target=watch, daemon=True)
    qm_before = server.cpu()
    wall = time.perf_counter()
    cpu = time.thread_time()
    watcher.start()
    # the flow thread's loop runs on this thread, so cProfile (which follows one thread) sees it all
    if profiler is not None:
        profiler.enable()
    try:
        thread.run()
    finally:
        if profiler is not None:
            profiler.disable()
    cpu = time.thread_time() - cpu
    wall = time.perf_counter() - wall
    qm_cpu = server.cpu() - qm_before
    watcher.join(5)
    stats = deployed.statistics()
    return cpu, qm_cpu, wall, int(stats.get("errors", 0) or 0)


def _mqtt_pass(
    port: int, args: argparse.Namespace, profiler: cProfile.Profile | None
) -> tuple[float, int, float, int]:
    """One closed-loop window of scenario A or B: flow-thread CPU s, messages, broker CPU s, errors."""
    from flowbroker.runtime.compiler import compile_flow
    from flowbroker.runtime.datasources import DataSources
    from flowbroker.runtime.engine import DeployedFlow, FlowThread
    from flowbroker.runtime.usertrace import UserTrace

    from flowbroker_bench.peers import loadgen
    from flowbroker_bench.peers.engine_host import document
    from flowbroker_bench.peers.runner import payloads_for

    tag = f"profile/{os.getpid()}/{time.monotonic_ns()}"
    compiled = compile_flow(document(args.scenario, "127.0.0.1", port, f"{tag}/in", f"{tag}/out", 1))
    deployed = DeployedFlow(
        compiled, _no_transport, DataSources(None), UserTrace(Path("/dev/null"), level="none")
    )
    thread = FlowThread(deployed, compiled.nodes["in"], 0)
    deployed.threads = [thread]
    node = compiled.nodes["in"]
    failure: list[BaseException] = []

    def load() -> None:
        try:
            deadline = time.monotonic() + 20
            while getattr(node, "_client", None) is None:  # subscribed before the first send
                if time.monotonic() > deadline:
                    raise OSError("the MQTTSubscribe node did not connect within 20 s")
                time.sleep(0.02)
            loadgen.closed_loop(
                "127.0.0.1",
                port,
                f"{tag}/in",
                f"{tag}/out",
                payloads_for(args.scenario),
                args.in_flight,
                warmup_s=0.5,
                window_s=args.seconds,
                load_core=args.load_core,
            )
        except BaseException as exc:
            failure.append(exc)
        finally:
            deployed.stop_event.set()

    driver = threading.Thread(target=load, daemon=True)
    cpu = time.thread_time()
    driver.start()
    if profiler is not None:
        profiler.enable()
    try:
        thread.run()
    finally:
        if profiler is not None:
            profiler.disable()
    cpu = time.thread_time() - cpu
    driver.join(30)
    if failure:
        raise OSError(f"the load generator failed: {failure[0]}")
    stats = deployed.statistics()
    return cpu, int(stats.get("messages_in", 0) or 0), 0.0, int(stats.get("errors", 0) or 0)


def _no_transport() -> Any:
    return None  # an MQTT flow needs no queue-manager connection


def _measure_qm(args: argparse.Namespace) -> tuple[float, float, float, int, cProfile.Profile]:
    from flowbroker.qm.harness import QueueManagerProcess

    with tempfile.TemporaryDirectory(prefix="fb-bench-profile-") as tmp:
        qm_core = args.load_core if args.load_core < (os.cpu_count() or 1) else None
        with QueueManagerProcess(Path(tmp), fsync=not args.no_fsync, cpu=qm_core) as qm:
            return _three_passes(_QueueManagerSide(qm), args)


def _three_passes(server: Any, args: argparse.Namespace) -> tuple[float, float, float, int, cProfile.Profile]:
    _pass(server, args, "WARM", None)  # imports, compiled ESQL, caches
    cpu, qm_cpu, wall, errors = _pass(server, args, "PLAIN", None)
    # CPU time of this thread, not wall time: a get blocked on the socket costs nothing
    profiler = cProfile.Profile(time.thread_time)
    _pass(server, args, "PROFILED", profiler)
    return cpu / args.messages, qm_cpu / args.messages, args.messages / wall, errors, profiler


def _measure_amqp(args: argparse.Namespace) -> tuple[float, float, float, int, cProfile.Profile]:
    """The same three passes with RabbitMQ as the transport (its queues of the kind asked for)."""
    from flowbroker_bench.seed004_amqp import DEFAULT_URL

    rabbit = _RabbitSide(args.amqp_url or DEFAULT_URL, args.transport.removeprefix("amqp-"))
    try:
        return _three_passes(rabbit, args)
    finally:
        rabbit.close()


def _measure_mqtt(args: argparse.Namespace) -> tuple[float, float, float, int, cProfile.Profile]:
    from flowbroker_bench.peers.loadgen import cpu_seconds
    from flowbroker_bench.peers.processes import start_mosquitto

    with tempfile.TemporaryDirectory(prefix="fb-bench-profile-") as tmp:
        broker, port = start_mosquitto(
            Path(tmp), args.load_core if args.load_core < (os.cpu_count() or 1) else None
        )
        try:
            _mqtt_pass(port, args, None)  # imports, compiled ESQL, caches
            before = cpu_seconds([broker.pid])
            wall = time.perf_counter()
            cpu, n, _, errors = _mqtt_pass(port, args, None)
            wall = time.perf_counter() - wall
            broker_cpu = cpu_seconds([broker.pid]) - before
            profiler = cProfile.Profile(time.thread_time)
            _mqtt_pass(port, args, profiler)
        finally:
            broker.stop()
    if n == 0:
        raise OSError("no message went through the flow")
    return cpu / n, broker_cpu / n, n / wall, errors, profiler


def run(args: argparse.Namespace) -> list[Row]:
    from flowbroker.runtime import assembly as assemblies

    if args.messages < 100:
        raise ValueError("--messages must be at least 100")
    assemblies.ensure_domains()
    core = args.engine_core if args.engine_core < (os.cpu_count() or 1) else None
    if core is not None:
        os.sched_setaffinity(0, {core})
    measures = {"mqtt": _measure_mqtt, "amqp-classic": _measure_amqp, "amqp-quorum": _measure_amqp}
    measure = measures.get(args.transport, _measure_qm)
    node_by_node = getattr(args, "node_by_node", False)
    saved = os.environ.get("FLOWBROKER_STRAIGHT_RUNS")
    if node_by_node:
        os.environ["FLOWBROKER_STRAIGHT_RUNS"] = "off"
    try:
        cpu_per_msg, server_per_msg, rate, errors, profiler = measure(args)
    finally:
        if node_by_node:
            if saved is None:
                del os.environ["FLOWBROKER_STRAIGHT_RUNS"]
            else:
                os.environ["FLOWBROKER_STRAIGHT_RUNS"] = saved
    raw = pstats.Stats(profiler).stats  # type: ignore[attr-defined]
    seconds = breakdown(raw)
    profiled = sum(seconds.values()) or 1.0
    per_msg_us = cpu_per_msg * 1e6
    servers = {
        "mqtt": "Mosquitto (private)",
        "amqp-classic": "RabbitMQ (beam.smp)",
        "amqp-quorum": "RabbitMQ (beam.smp)",
    }
    server = servers.get(args.transport, "queue manager process")
    rows: list[Row] = [
        {
            "stage": stage,
            "share (%)": round(100 * secs / profiled, 1),
            "CPU-us/msg": round(per_msg_us * secs / profiled, 2),
        }
        for stage, secs in seconds.items()
        if secs > 0
    ]
    rows.append({"stage": "flow thread total", "share (%)": 100.0, "CPU-us/msg": round(per_msg_us, 2)})
    rows.append({"stage": server, "share (%)": None, "CPU-us/msg": round(server_per_msg * 1e6, 2)})
    rows.append({"stage": "msgs/s (flow thread, plain run)", "share (%)": None, "CPU-us/msg": round(rate)})
    if errors:
        rows.append({"stage": "errors", "share (%)": None, "CPU-us/msg": errors})
    if args.top:
        top = sorted(raw.items(), key=lambda item: item[1][2], reverse=True)[: args.top]
        for (file, line, name), figures in top:
            where = f"{Path(file).name}:{line} {name}" if file != "~" else name
            rows.append(
                {
                    "stage": f"  {stage_of(file, name) or '(callers)'}: {where}"[:110],
                    "share (%)": round(100 * figures[2] / profiled, 1),
                    "CPU-us/msg": round(per_msg_us * figures[2] / profiled, 2),
                }
            )
    return rows


def _arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--transport",
        choices=("qm", "mqtt", "amqp-classic", "amqp-quorum"),
        default="qm",
        help="qm: MQInput -> Compute -> MQOutput on a queue manager; mqtt: a peer scenario through Mosquitto; "
        "amqp-classic / amqp-quorum: the qm flows on RabbitMQ queues of that type (--amqp-url)",
    )
    parser.add_argument(
        "--amqp-url",
        default="",
        help="amqp-*: the RabbitMQ to use (default amqp://guest:guest@127.0.0.1:5672/)",
    )
    parser.add_argument(
        "--scenario",
        choices=("A", "B"),
        default="A",
        help="mqtt: scenario A (1 KB JSON, set a field) or B (2 KB XML order -> invoice)",
    )
    parser.add_argument(
        "--flow",
        choices=("compute", "scenario-b", "passthrough"),
        default="compute",
        help="qm: compute is MQInput -> Compute -> MQOutput on 1 KB JSON (peer scenario A's ESQL); "
        "scenario-b the same with scenario B's (2 KB XML order -> invoice); passthrough is MQInput -> "
        "MQOutput (seed 004 §2.1, the body never parsed)",
    )
    parser.add_argument(
        "--case",
        default="",
        help="qm: profile this Appendix B case's flow and request instead (a key of `bench flow --list`, "
        "e.g. very-complex, filter); --size then overrides the case's first message size",
    )
    parser.add_argument("--seconds", type=float, default=10.0, help="mqtt: seconds of closed loop per pass")
    parser.add_argument("--in-flight", type=int, default=200, help="mqtt: messages kept in flight")
    parser.add_argument("--messages", type=int, default=20000, help="messages per pass (at least 100)")
    parser.add_argument("--size", type=int, default=1024, help="bytes of each JSON message")
    parser.add_argument("--transaction-mode", choices=("yes", "no", "automatic"), default="yes")
    parser.add_argument(
        "--read-ahead", type=int, default=0, help="the MQInput's readAhead (0: its default, 32)"
    )
    parser.add_argument("--persistent", action="store_true", help="persistent messages (default: not)")
    parser.add_argument("--no-fsync", action="store_true", help="the queue manager does not fsync its log")
    parser.add_argument("--engine-core", type=int, default=1, help="core of the flow thread")
    parser.add_argument("--load-core", type=int, default=0, help="core of the queue manager")
    parser.add_argument("--top", type=int, default=0, metavar="N", help="also list the N costliest functions")
    parser.add_argument(
        "--node-by-node",
        action="store_true",
        help="run every message through the nodes, also where the flow would run straight "
        "(FLOWBROKER_STRAIGHT_RUNS=off)",
    )


SCENARIOS = {
    "profile": Scenario(
        "profile",
        "per-message CPU of a flow thread (MQInput -> Compute -> MQOutput, 1 KB JSON) by stage: receive, "
        "parse, tree, ESQL, serialize, send, commit, statistics (cProfile)",
        run,
        _arguments,
        tags=("profile",),
    ),
}
