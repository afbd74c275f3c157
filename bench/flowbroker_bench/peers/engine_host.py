"""Hosts our side of peer scenarios A and B: MQTTSubscribe → Compute → MQTTPublish run by the flow runtime.

Run as ``python -m flowbroker_bench.peers.engine_host --scenario A --port P`` in its own process
(pinned by the caller), so its CPU can be read from /proc like Node-RED's. The flow is compiled and
run by :mod:`flowbroker.runtime` exactly as an execution group runs it; only the hosting process
differs, which keeps the worker's control plane out of the measurement.
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from pathlib import Path
from typing import Any

SET_STATUS = """CREATE COMPUTE MODULE SetStatus
CREATE FUNCTION Main() RETURNS BOOLEAN
BEGIN
  SET OutputRoot = InputRoot;
  SET OutputRoot.JSON.Data.status = 'processed';
  RETURN TRUE;
END;
END MODULE;"""

INVOICE = """CREATE COMPUTE MODULE Invoice
CREATE FUNCTION Main() RETURNS BOOLEAN
BEGIN
  SET OutputRoot.Properties = InputRoot.Properties;
  DECLARE total DECIMAL 0;
  SET OutputRoot.XMLNSC.invoice.(XMLNSC.Attribute)orderId = InputRoot.XMLNSC.order.(XMLNSC.Attribute)id;
  SET OutputRoot.XMLNSC.invoice.customer = InputRoot.XMLNSC.order.customer;
  DECLARE item REFERENCE TO InputRoot.XMLNSC.order.items.item[1];
  DECLARE line REFERENCE TO OutputRoot;
  WHILE LASTMOVE(item) DO
    DECLARE qty DECIMAL CAST(item.quantity AS DECIMAL);
    DECLARE price DECIMAL CAST(item.price AS DECIMAL);
    CREATE LASTCHILD OF OutputRoot.XMLNSC.invoice AS line NAME 'line';
    SET line.sku = item.sku;
    SET line.quantity = qty;
    SET line.price = price;
    DECLARE amount DECIMAL qty * price;
    SET line.amount = amount;
    SET total = total + amount;
    MOVE item NEXTSIBLING REPEAT TYPE NAME;
  END WHILE;
  SET OutputRoot.XMLNSC.invoice.total = total;
  RETURN TRUE;
END;
END MODULE;"""


def document(
    scenario: str, host: str, port: int, in_topic: str, out_topic: str, instances: int
) -> dict[str, Any]:
    """The flow of scenario A (JSON, set a field) or B (XML order → invoice)."""
    if scenario == "A":
        domain, esql, module = "JSON", SET_STATUS, "SetStatus"
    elif scenario == "B":
        domain, esql, module = "XMLNSC", INVOICE, "Invoice"
    else:
        raise ValueError(f"unknown scenario {scenario!r} (A or B)")
    common = {"host": host, "port": port}
    return {
        "name": f"Peer{scenario}",
        "properties": {"additionalInstances": instances - 1},
        "nodes": [
            {
                "id": "in",
                "type": "MQTTSubscribe",
                "properties": {**common, "topicName": in_topic, "messageDomain": domain, "waitInterval": 200},
            },
            {"id": "compute", "type": "Compute", "properties": {"esql": esql, "module": module}},
            {"id": "out", "type": "MQTTPublish", "properties": {**common, "topicName": out_topic}},
        ],
        "connections": [
            {"from": {"node": "in", "terminal": "out"}, "to": {"node": "compute", "terminal": "in"}},
            {"from": {"node": "compute", "terminal": "out"}, "to": {"node": "out", "terminal": "in"}},
        ],
    }


def passthrough(in_queue: str, out_queue: str, transaction_mode: str, instances: int) -> dict[str, Any]:
    """Seed 003's flow: MQInput → MQOutput, the cheapest path a message can take through an execution group."""
    return {
        "name": "Passthrough",
        "properties": {"additionalInstances": instances - 1},
        "nodes": [
            {
                "id": "in",
                "type": "MQInput",
                "properties": {
                    "queueName": in_queue,
                    "transactionMode": transaction_mode,
                    "waitInterval": 200,
                },
            },
            {"id": "out", "type": "MQOutput", "properties": {"queueName": out_queue}},
        ],
        "connections": [{"from": {"node": "in", "terminal": "out"}, "to": {"node": "out", "terminal": "in"}}],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="engine_host")
    parser.add_argument("--flow", choices=("scenario", "passthrough"), default="scenario")
    parser.add_argument("--scenario", choices=("A", "B"), default="A")
    parser.add_argument("--qm-url", default="")
    parser.add_argument("--qm-data", default="")
    parser.add_argument("--in-queue", default="IN")
    parser.add_argument("--out-queue", default="OUT")
    parser.add_argument("--transaction-mode", choices=("yes", "no", "automatic"), default="no")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=1883)
    parser.add_argument("--in-topic", default="bench/in")
    parser.add_argument("--out-topic", default="bench/out")
    parser.add_argument("--instances", type=int, default=1)
    args = parser.parse_args(argv)

    from flowbroker.runtime import assembly as assemblies
    from flowbroker.runtime.compiler import FlowCompileError, compile_flow
    from flowbroker.runtime.datasources import DataSources
    from flowbroker.runtime.engine import DeployedFlow, FlowThread
    from flowbroker.runtime.usertrace import UserTrace

    assemblies.ensure_domains()
    if args.flow == "passthrough":
        doc = passthrough(args.in_queue, args.out_queue, args.transaction_mode, args.instances)
    else:
        doc = document(args.scenario, args.host, args.port, args.in_topic, args.out_topic, args.instances)
    try:
        compiled = compile_flow(doc)
    except FlowCompileError as exc:
        print(f"engine_host: the flow does not compile: {exc}", file=sys.stderr)
        return 2

    def connect() -> Any:
        if args.flow != "passthrough":
            return None  # MQTT flows need no queue-manager connection
        from flowbroker.runtime.transports.qm import QueueConnection

        return QueueConnection.open(args.qm_url or None, data_dir=args.qm_data or None)

    deployed = DeployedFlow(compiled, connect, DataSources(None), UserTrace(Path("/dev/null"), level="none"))
    threads = [FlowThread(deployed, compiled.nodes["in"], i) for i in range(args.instances)]
    deployed.threads = threads
    done = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: done.set())
    signal.signal(signal.SIGINT, lambda *_: done.set())
    for thread in threads:
        thread.start()
    print("ready", flush=True)
    done.wait()
    deployed.stop_event.set()
    for thread in threads:
        thread.join(10)
    stats = deployed.statistics()
    print(f"messages_in={stats['messages_in']} errors={stats['errors']} {stats['last_errors']}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
