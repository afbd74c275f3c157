"""Node-RED 4 as a peer: installed with npm into a scratch directory, given scenario A or B, run pinned.

Node-RED is never a test dependency: the benchmark installs ``node-red@4`` (Node-RED 5 needs
Node 22) into a directory outside the repository the first time it runs and reuses it after.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

from flowbroker_bench.peers.mqttwire import MqttWire, publish_packet
from flowbroker_bench.peers.processes import Child, free_port, taskset_prefix

DEFAULT_SCRATCH = Path("/tmp/flowbroker-peers")
PACKAGE = "node-red@4"

#: Scenario B's function node: one invoice line per order item, quantity × price, and the total.
INVOICE_FUNCTION = """
const order = msg.payload.order;
const items = order.items[0].item;
let cents = 0;
const lines = items.map((it) => {
  const qty = Number(it.quantity[0]);
  const price = Number(it.price[0]);
  const amount = Math.round(qty * price * 100);
  cents += amount;
  return {sku: it.sku[0], quantity: qty, price: price.toFixed(2), amount: (amount / 100).toFixed(2)};
});
msg.payload = {invoice: {$: {orderId: order.$.id}, customer: order.customer[0], line: lines,
                         total: (cents / 100).toFixed(2)}};
return msg;
"""


def install(scratch: Path = DEFAULT_SCRATCH) -> tuple[Path, str]:
    """Install Node-RED 4 into ``scratch`` unless it is there; returns (red.js, version)."""
    red = scratch / "node_modules" / "node-red" / "red.js"
    if not red.exists():
        npm = shutil.which("npm")
        if npm is None:
            raise OSError("npm is not installed: the Node-RED peer needs Node.js 20 and npm")
        scratch.mkdir(parents=True, exist_ok=True)
        if not (scratch / "package.json").exists():
            (scratch / "package.json").write_text('{"name": "flowbroker-peers", "private": true}\n')
        done = subprocess.run(
            [npm, "install", "--no-audit", "--no-fund", "--loglevel=error", PACKAGE],
            cwd=scratch,
            capture_output=True,
            text=True,
            timeout=600,
        )
        if done.returncode != 0 or not red.exists():
            raise OSError(f"npm install {PACKAGE} failed: {done.stderr.strip().splitlines()[-1:]}")
    meta = json.loads((scratch / "node_modules" / "node-red" / "package.json").read_text())
    return red, str(meta.get("version", "?"))


def flow(scenario: str, port: int, in_topic: str, out_topic: str) -> list[dict[str, Any]]:
    """Node-RED's flow for scenario ``A`` (change node) or ``B`` (xml → function → xml).

    Node ids carry a prefix no property value can equal: Node-RED takes any property whose value
    is another node's id for a config-node reference.
    """
    broker: dict[str, Any] = {
        "id": "fb.broker",
        "type": "mqtt-broker",
        "name": "bench",
        "broker": "127.0.0.1",
        "port": str(port),
        "clientid": "",
        "autoConnect": True,
        "usetls": False,
        "protocolVersion": "4",
        "keepalive": "60",
        "cleansession": True,
    }
    tab: dict[str, Any] = {"id": "fb.tab", "type": "tab", "label": f"scenario {scenario}"}
    out: dict[str, Any] = {
        "id": "fb.out",
        "type": "mqtt out",
        "z": "fb.tab",
        "topic": out_topic,
        "qos": "0",
        "retain": "false",
        "broker": "fb.broker",
        "wires": [],
    }
    if scenario == "A":
        mqtt_in: dict[str, Any] = {
            "id": "fb.in",
            "type": "mqtt in",
            "z": "fb.tab",
            "topic": in_topic,
            "qos": "0",
            "datatype": "json",
            "broker": "fb.broker",
            "nl": False,
            "rap": True,
            "inputs": 0,
            "wires": [["fb.set"]],
        }
        change: dict[str, Any] = {
            "id": "fb.set",
            "type": "change",
            "z": "fb.tab",
            "name": "set status",
            "rules": [{"t": "set", "p": "payload.status", "pt": "msg", "to": "processed", "tot": "str"}],
            "wires": [["fb.out"]],
        }
        return [tab, broker, mqtt_in, change, out]
    if scenario == "B":
        mqtt_in = {
            "id": "fb.in",
            "type": "mqtt in",
            "z": "fb.tab",
            "topic": in_topic,
            "qos": "0",
            "datatype": "utf8",
            "broker": "fb.broker",
            "nl": False,
            "rap": True,
            "inputs": 0,
            "wires": [["fb.parse"]],
        }
        parse: dict[str, Any] = {
            "id": "fb.parse",
            "type": "xml",
            "z": "fb.tab",
            "property": "payload",
            "attr": "",
            "chr": "",
            "wires": [["fb.invoice"]],
        }
        function: dict[str, Any] = {
            "id": "fb.invoice",
            "type": "function",
            "z": "fb.tab",
            "name": "invoice",
            "func": INVOICE_FUNCTION,
            "outputs": 1,
            "wires": [["fb.serialise"]],
        }
        serialise: dict[str, Any] = {
            "id": "fb.serialise",
            "type": "xml",
            "z": "fb.tab",
            "property": "payload",
            "attr": "",
            "chr": "",
            "wires": [["fb.out"]],
        }
        return [tab, broker, mqtt_in, parse, function, serialise, out]
    raise ValueError(f"unknown peer scenario {scenario!r} (A or B)")


class NodeRed:
    """One Node-RED instance running one scenario's flow, pinned to ``core``."""

    def __init__(
        self,
        red: Path,
        scenario: str,
        mqtt_port: int,
        in_topic: str,
        out_topic: str,
        workdir: Path,
        core: int | None = 1,
    ) -> None:
        self.in_topic, self.out_topic, self.mqtt_port = in_topic, out_topic, mqtt_port
        userdir = workdir / f"nodered-{scenario}-{time.monotonic_ns()}"
        userdir.mkdir(parents=True)
        (userdir / "flows.json").write_text(json.dumps(flow(scenario, mqtt_port, in_topic, out_topic)))
        ui_port = free_port()
        (userdir / "settings.js").write_text(
            "module.exports = {\n"
            f"  uiPort: {ui_port}, uiHost: '127.0.0.1', httpAdminRoot: false, httpNodeRoot: false,\n"
            "  flowFile: 'flows.json', credentialSecret: false, contextStorage: {},\n"
            "  logging: {console: {level: 'warn', metrics: false, audit: false}},\n"
            "  externalModules: {autoInstall: false}, telemetry: {enabled: false}\n"
            "};\n"
        )
        node = shutil.which("node") or "node"
        argv = [
            *taskset_prefix(core),
            node,
            str(red),
            "--settings",
            str(userdir / "settings.js"),
            "--userDir",
            str(userdir),
        ]
        self.child = Child(argv, userdir, userdir / "node-red.log")

    @property
    def pid(self) -> int:
        return self.child.pid

    def wait_ready(self, probe: bytes, timeout: float = 60.0) -> None:
        """Publish ``probe`` until the flow answers: the subscription and the flow are both live."""
        listener = MqttWire("127.0.0.1", self.mqtt_port)
        sender = MqttWire("127.0.0.1", self.mqtt_port)
        try:
            listener.subscribe(self.out_topic)
            deadline = time.monotonic() + timeout
            packet = publish_packet(self.in_topic, probe)
            while time.monotonic() < deadline:
                if self.child.process.poll() is not None:
                    raise OSError(
                        f"Node-RED exited with status {self.child.process.returncode}: {self.child.tail()}"
                    )
                sender.send(packet)
                if listener.receive(0.5):
                    return
            raise OSError(f"Node-RED did not answer within {timeout} s: {self.child.tail()}")
        finally:
            listener.close()
            sender.close()

    def wait_idle(self, timeout: float = 60.0) -> None:
        """Node-RED has no back-pressure: wait until it has drained its own backlog (CPU stops moving)."""
        from flowbroker_bench.peers.loadgen import cpu_seconds

        deadline = time.monotonic() + timeout
        last = cpu_seconds([self.pid])
        while time.monotonic() < deadline:
            time.sleep(0.5)
            now = cpu_seconds([self.pid])
            if now - last < 0.05:
                return
            last = now

    def stop(self) -> None:
        self.child.stop()
