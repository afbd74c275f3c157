"""MQTTSubscribe and MQTTPublish in a real flow against the local Mosquitto, and their bad configurations."""

from __future__ import annotations

import json
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import paho.mqtt.client as mqtt
import pytest
from flowbroker.runtime import assembly as assemblies
from flowbroker.runtime.compiler import FlowCompileError, compile_flow
from flowbroker.runtime.datasources import DataSources
from flowbroker.runtime.engine import DeployedFlow
from flowbroker.runtime.harness import FlowHarness, flow
from flowbroker.runtime.usertrace import UserTrace
from flowbroker_nodes import registry
from flowbroker_nodes.base import DeployProblem, Unwinding
from flowbroker_nodes.mqtt_publish import validate_topic_name
from flowbroker_nodes.mqtt_subscribe import validate_topic_filter

SET_STATUS = """CREATE COMPUTE MODULE SetStatus
CREATE FUNCTION Main() RETURNS BOOLEAN
BEGIN
  SET OutputRoot = InputRoot;
  SET OutputRoot.JSON.Data.status = 'processed';
  SET OutputLocalEnvironment.Destination.MQTT.topicName = InputLocalEnvironment.MQTT.Input.Topic || '/done';
  RETURN TRUE;
END;
END MODULE;"""


def test_registered_with_specs() -> None:
    assert registry.spec("MQTTSubscribe") is not None
    assert registry.spec("MQTTPublish") is not None


@pytest.mark.parametrize(
    ("topic", "problem"),
    [
        ("a/#", ""),
        ("+/b/+", ""),
        ("", "the topic is empty"),
        ("a/#/b", "'#' must be a whole last level (offset 2)"),
        ("a/b+", "'+' must be a whole level (offset 3)"),
    ],
)
def test_topic_filters(topic: str, problem: str) -> None:
    assert validate_topic_filter(topic) == problem


def test_topic_names() -> None:
    assert validate_topic_name("a/b") == ""
    assert validate_topic_name("a/+") == "'+' is not allowed in a topic published on (offset 2)"


def _document(nodes: dict[str, tuple[str, dict[str, Any]]], wires: list[str]) -> dict[str, Any]:
    return flow(nodes, wires, name="MqttFlow")


@pytest.mark.parametrize(
    ("props", "field", "text"),
    [
        ({"topicName": "a/#/b"}, "topicName", "invalid topic filter 'a/#/b'"),
        ({"topicName": "a", "port": 70000}, "port", "port must be between 1 and 65535, got 70000"),
        ({"topicName": "a", "qos": "x"}, "qos", "qos must be an integer"),
        ({"topicName": "a", "host": " "}, "host", "required: the broker host"),
    ],
)
def test_bad_subscribe_properties_are_deploy_problems(props: dict[str, Any], field: str, text: str) -> None:
    module = registry.modules()["MQTTSubscribe"]
    node = module.Node("s1", "S1", props)
    with pytest.raises(DeployProblem) as caught:
        node.prepare()
    assert caught.value.property == field
    assert text in caught.value.message


def test_publish_to_a_wildcard_topic_from_local_environment_fails_the_message() -> None:
    h = FlowHarness(
        _document({"p": ("MQTTPublish", {"topicName": "fine"}), "q": ("MQInput", {"queueName": "Q"})}, [])
    )
    from esql.tree import Element

    env = Element("LocalEnvironment")
    env.add("Destination").add("MQTT").add("topicName", "bad/#")
    with pytest.raises(Unwinding) as caught:
        h.inject("p", b"x", local_environment=env)
    assert "LocalEnvironment.Destination.MQTT.topicName" in str(caught.value)


class Collector:
    def __init__(self, host: str, port: int, topic: str) -> None:
        self.messages: list[tuple[str, bytes]] = []
        self.ready = threading.Event()
        self.client = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2)
        self.client.on_message = lambda c, u, m: self.messages.append((m.topic, m.payload))
        self.client.on_subscribe = lambda *a: self.ready.set()
        self.client.connect(host, port)
        self.client.subscribe(topic)
        self.client.loop_start()
        assert self.ready.wait(5)

    def wait_for(self, count: int, timeout: float = 10) -> list[tuple[str, bytes]]:
        deadline = time.monotonic() + timeout
        while len(self.messages) < count and time.monotonic() < deadline:
            time.sleep(0.02)
        return self.messages

    def close(self) -> None:
        self.client.disconnect()
        self.client.loop_stop()


class Sender:
    """A paho client publishing at QoS 1, each publication acknowledged before the next."""

    def __init__(self, host: str, port: int) -> None:
        self.client = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2)
        self.client.connect(host, port)
        self.client.loop_start()

    def send(self, topic: str, payload: bytes) -> None:
        self.client.publish(topic, payload, qos=1).wait_for_publish(5)

    def __enter__(self) -> Sender:
        return self

    def __exit__(self, *exc: object) -> None:
        self.client.disconnect()
        self.client.loop_stop()


def _deployed(doc: dict[str, Any], trace: UserTrace | None = None) -> tuple[Any, DeployedFlow]:
    assemblies.ensure_domains()
    try:
        compiled = compile_flow(doc)
    except FlowCompileError as exc:  # pragma: no cover - shows the compiler's reasons
        pytest.fail(str(exc))
    trace = trace or UserTrace(Path("/dev/null"), level="none")
    return compiled, DeployedFlow(compiled, lambda: None, DataSources(None), trace)


def _wait_subscribed(compiled: Any) -> None:
    deadline = time.monotonic() + 10
    while compiled.nodes["in"]._client is None and time.monotonic() < deadline:
        time.sleep(0.02)


@pytest.mark.mqtt
@pytest.mark.timeout(60)
def test_subscribe_compute_publish_through_mosquitto(mqtt_address: tuple[str, int], tmp_path: Path) -> None:
    host, port = mqtt_address
    base = f"fbtest/{uuid.uuid4().hex}"
    common = {"host": host, "port": port}
    doc = _document(
        {
            "in": ("MQTTSubscribe", {**common, "topicName": f"{base}/in", "messageDomain": "JSON"}),
            "c": (
                "Compute",
                {"esql": SET_STATUS, "module": "SetStatus", "computeMode": "LocalEnvironmentAndMessage"},
            ),
            "out": ("MQTTPublish", {**common, "topicName": f"{base}/unused"}),
        },
        ["in.out -> c", "c.out -> out"],
    )
    # an MQTT-only flow: its input node is the MQTTSubscribe, which runs two flow threads
    doc["properties"] = {"additionalInstances": 1}
    compiled, deployed = _deployed(doc)
    collector = Collector(host, port, f"{base}/#")
    deployed.start()
    threads = list(deployed.threads)
    assert [t.node.id for t in threads] == ["in", "in"]
    try:
        _wait_subscribed(compiled)
        with Sender(host, port) as sender:
            for i in range(20):
                sender.send(f"{base}/in", json.dumps({"id": i, "status": "new"}).encode())
            sender.send(f"{base}/in", b"{not json")
            got = collector.wait_for(41)
    finally:
        deployed.stop(10)
        collector.close()
    done = sorted(json.loads(p)["id"] for t, p in got if t == f"{base}/in/done")
    assert done == list(range(20))  # two flow threads shared the subscription: no copies
    assert all(json.loads(p)["status"] == "processed" for t, p in got if t.endswith("/done"))
    stats = compiled.nodes["in"].stats
    assert stats.messages_in == 21 and stats.errors == 1  # the bad JSON failed and was dropped, not fatal
    assert all(not t.is_alive() for t in threads)
    assert compiled.nodes["in"]._client is None  # the last thread out closed the connection


@pytest.mark.timeout(30)
def test_unreachable_broker_is_a_connection_error_naming_it() -> None:
    module = registry.modules()["MQTTSubscribe"]
    node = module.Node("s1", "S1", {"topicName": "a", "port": 9, "connectTimeout": 1})
    node.prepare()
    with pytest.raises(ConnectionError, match=r"cannot reach MQTT broker 127\.0\.0\.1:9"):
        node._connect("F")


@pytest.mark.parametrize(("raw", "taken"), [("", 65536), ("0", 0), ("4096", 4096), ("999999999", 16 << 20)])
def test_the_write_buffer_setting(monkeypatch: pytest.MonkeyPatch, raw: str, taken: int) -> None:
    monkeypatch.setenv("FLOWBROKER_MQTT_WRITE_BUFFER", raw)
    node = registry.modules()["MQTTPublish"].Node("p1", "P1", {"topicName": "a"})
    node.prepare()
    assert node.write_buffer == taken


def test_a_bad_write_buffer_setting_is_a_deploy_problem(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FLOWBROKER_MQTT_WRITE_BUFFER", "lots")
    node = registry.modules()["MQTTPublish"].Node("p1", "P1", {"topicName": "a"})
    with pytest.raises(DeployProblem, match="FLOWBROKER_MQTT_WRITE_BUFFER must be a whole number"):
        node.prepare()


STAMP = """CREATE COMPUTE MODULE Stamp
CREATE FUNCTION Main() RETURNS BOOLEAN
BEGIN
  CALL CopyEntireMessage();
  SET OutputRoot.JSON.Data.status = 'processed';
  SET OutputRoot.JSON.Data.seen = InputRoot.JSON.Data.id;
  RETURN TRUE;
END;
CREATE PROCEDURE CopyEntireMessage() BEGIN
  SET OutputRoot = InputRoot;
END;
END MODULE;"""


def _stamp_flow(host: str, port: int) -> tuple[str, dict[str, Any]]:
    """MQTTSubscribe (JSON) on BASE/in → Compute (STAMP) → MQTTPublish on BASE/out, and BASE."""
    base = f"fbtest/{uuid.uuid4().hex}"
    common = {"host": host, "port": port}
    doc = _document(
        {
            "in": ("MQTTSubscribe", {**common, "topicName": f"{base}/in", "messageDomain": "JSON"}),
            "c": ("Compute", {"esql": STAMP}),
            "out": ("MQTTPublish", {**common, "topicName": f"{base}/out"}),
        },
        ["in.out -> c", "c.out -> out"],
    )
    return base, doc


@pytest.mark.mqtt
@pytest.mark.timeout(60)
def test_a_straight_flow_edits_each_body_and_steps_aside_for_the_rest(
    mqtt_address: tuple[str, int], tmp_path: Path
) -> None:
    """MQTTSubscribe → Compute (copy, set two fields) → MQTTPublish runs straight: the same
    publications in the same order, the nodes' counts as node by node; a body it cannot edit goes
    through the nodes in its place, and so does every message while the user trace is on."""
    host, port = mqtt_address
    base, doc = _stamp_flow(host, port)
    trace = UserTrace(tmp_path / "flow.trace", level="none", mode="safe")
    compiled, deployed = _deployed(doc, trace)
    collector = Collector(host, port, f"{base}/out")
    deployed.start()
    (thread,) = deployed.threads
    bodies = [json.dumps({"id": i, "status": "new", "pad": "x" * i}).encode() for i in range(45)]
    bodies[20] = b"{not json"  # the Compute node fails on it: dropped, as node by node
    bodies[25] = b'{"id": 25, "status": {"was": "an object"}}'  # not an edit: the nodes set it
    try:
        _wait_subscribed(compiled)
        with Sender(host, port) as sender:
            for body in bodies[:40]:
                sender.send(f"{base}/in", body)
            got = collector.wait_for(39)
            straight_runs = thread.straight.runs if thread.straight is not None else -1
            trace.configure("normal", "safe")
            for body in bodies[40:]:
                sender.send(f"{base}/in", body)
            got = collector.wait_for(44)
    finally:
        deployed.stop(10)
        collector.close()
    assert straight_runs == 38  # all but the two the editor declined
    assert thread.straight is not None and thread.straight.runs == 38  # none while traced
    payloads = [json.loads(p) for _, p in got]
    assert [p["id"] for p in payloads] == [i for i in range(45) if i != 20]
    for p in payloads:
        if p["id"] != 25:
            assert p == {"id": p["id"], "status": "processed", "pad": "x" * p["id"], "seen": p["id"]}
    assert payloads[24]["seen"] == 25  # the nodes' own output for the object they set
    nodes = compiled.nodes
    assert (nodes["in"].stats.messages_in, nodes["in"].stats.messages_out, nodes["in"].stats.errors) == (
        45,
        45,
        1,
    )
    assert (nodes["c"].stats.messages_in, nodes["c"].stats.messages_out, nodes["c"].stats.errors) == (
        45,
        44,
        1,
    )
    assert (nodes["out"].stats.messages_in, nodes["out"].stats.errors) == (44, 0)
    for node in nodes.values():
        assert node.stats.elapsed_ns > 0 and node.stats.cpu_ns > 0
    trace.flush()
    traced = (tmp_path / "flow.trace").read_text()
    assert traced.count("Compute node 'c' received a message") == 5


@pytest.mark.mqtt
@pytest.mark.timeout(60)
def test_a_straight_flow_whose_publication_fails_drops_it_and_goes_on(
    mqtt_address: tuple[str, int], caplog: pytest.LogCaptureFixture
) -> None:
    """The output's connection lost under a straight run: the publication that found it lost
    fails as MQTTPublish fails it (counted, logged, dropped: MQTT has no unit of work), and the
    next turn publishes on a new connection."""
    import socket

    host, port = mqtt_address
    base, doc = _stamp_flow(host, port)
    compiled, deployed = _deployed(doc)
    collector = Collector(host, port, f"{base}/out")
    deployed.start()
    (thread,) = deployed.threads
    out = compiled.nodes["out"]
    caplog.set_level("INFO")
    try:
        _wait_subscribed(compiled)
        with Sender(host, port) as sender:
            sender.send(f"{base}/in", b'{"id": 1}')
            assert len(collector.wait_for(1)) == 1
            out._client.sock.shutdown(socket.SHUT_RDWR)  # the broker's side of it is gone too
            # larger than the write buffer: written at once, into the lost connection
            big = json.dumps({"id": 2, "pad": "y" * (out.write_buffer + 10)}).encode()
            sender.send(f"{base}/in", big)
            deadline = time.monotonic() + 10
            while out.stats.errors == 0 and time.monotonic() < deadline:
                time.sleep(0.02)
            sender.send(f"{base}/in", b'{"id": 3}')
            got = collector.wait_for(2)
    finally:
        deployed.stop(10)
        collector.close()
    assert [json.loads(p)["id"] for _, p in got] == [1, 3]
    assert thread.straight is not None and thread.straight.runs == 2
    assert (out.stats.errors, compiled.nodes["in"].stats.errors) == (1, 1)
    dropped = [r.getMessage() for r in caplog.records if "publication dropped" in r.getMessage()]
    assert len(dropped) == 1 and "publish on" in dropped[0] and "failed" in dropped[0]
