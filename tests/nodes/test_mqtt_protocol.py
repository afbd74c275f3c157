"""The MQTT nodes' own protocol client against the real Mosquitto: QoS 0/1/2, keep-alive, reconnects.

Every test uses topics and client ids of its own, so concurrent runs do not see each other.
"""

from __future__ import annotations

import threading
import time
import uuid
from pathlib import Path
from typing import Any

import paho.mqtt.client as mqtt
import pytest
from flowbroker.runtime.compiler import compile_flow
from flowbroker.runtime.datasources import DataSources
from flowbroker.runtime.engine import DeployedFlow, FlowThread
from flowbroker.runtime.harness import FlowHarness, flow
from flowbroker.runtime.usertrace import UserTrace
from flowbroker_nodes import mqtt_wire
from flowbroker_nodes.base import Unwinding
from flowbroker_nodes.mqtt_wire import MAX_INFLIGHT, MqttConnection, MqttError, encode_string

pytestmark = [pytest.mark.mqtt, pytest.mark.timeout(60)]


def _unique() -> str:
    return f"fbtest/{uuid.uuid4().hex}"


class Peer:
    """A paho client on its own network thread: the other end of each conversation."""

    def __init__(self, host: str, port: int, client_id: str = "") -> None:
        self.messages: list[tuple[str, bytes, int]] = []
        self.subscribed = threading.Event()
        self.client = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id=client_id)
        self.client.on_message = lambda c, u, m: self.messages.append((m.topic, m.payload, m.qos))
        self.client.on_subscribe = lambda *a: self.subscribed.set()
        self.client.connect(host, port)
        self.client.loop_start()

    def subscribe(self, topic: str, qos: int) -> Peer:
        self.client.subscribe(topic, qos)
        assert self.subscribed.wait(5)
        return self

    def wait_for(self, count: int, timeout: float = 10) -> list[tuple[str, bytes, int]]:
        deadline = time.monotonic() + timeout
        while len(self.messages) < count and time.monotonic() < deadline:
            time.sleep(0.02)
        return self.messages

    def close(self) -> None:
        self.client.disconnect()
        self.client.loop_stop()


@pytest.mark.parametrize("qos", [0, 1, 2])
def test_publications_arrive_once_at_each_qos(mqtt_address: tuple[str, int], qos: int) -> None:
    host, port = mqtt_address
    topic = _unique()
    got: list[tuple[str, bytes, int, bool]] = []
    sub = MqttConnection(host, port, f"fb-sub-{uuid.uuid4().hex[:12]}").connect(5)
    sub.subscribe(topic + "/#", qos, 5, lambda *m: got.append(m))
    pub = MqttConnection(host, port, f"fb-pub-{uuid.uuid4().hex[:12]}").connect(5)
    try:
        ids: list[int] = []
        deadline = time.monotonic() + 10
        while (len(got) < 200 or pub.pending) and time.monotonic() < deadline:
            # the broker takes MAX_INFLIGHT unacknowledged publications at a time
            while len(ids) < 200 and len(pub.pending) < MAX_INFLIGHT:
                i = len(ids)
                ids.append(pub.publish(encode_string(f"{topic}/{i % 3}"), b"x" * i, qos))
            sub.read(0.01, lambda *m: got.append(m))
            pub.read(0.01, lambda *m: None)
        if qos:
            assert all(pub.done(i) for i in ids) and not pub.pending
        else:
            assert ids == [0] * 200
        assert [(t, p, q) for t, p, q, _ in got] == [(f"{topic}/{i % 3}", b"x" * i, qos) for i in range(200)]
        # a large payload crosses several reads and is still one publication
        big = bytes(range(256)) * 4000
        pub.publish(encode_string(f"{topic}/big"), big, qos)
        deadline = time.monotonic() + 10
        while len(got) < 201 and time.monotonic() < deadline:
            sub.read(0.02, lambda *m: got.append(m))
            pub.read(0.02, lambda *m: None)  # at QoS 2 the broker delivers once it has our PUBREL
        assert len(got) == 201 and got[200][:2] == (f"{topic}/big", big)
    finally:
        sub.close()
        pub.close()


def test_a_full_window_is_refused_not_lost(mqtt_address: tuple[str, int]) -> None:
    host, port = mqtt_address
    pub = MqttConnection(host, port, f"fb-pub-{uuid.uuid4().hex[:12]}").connect(5)
    try:
        topic = encode_string(_unique())
        for _ in range(MAX_INFLIGHT):
            pub.publish(topic, b"x", 2)
        with pytest.raises(MqttError, match="await acknowledgement"):
            pub.publish(topic, b"x", 2)
        deadline = time.monotonic() + 10
        while pub.pending and time.monotonic() < deadline:
            pub.read(0.05, lambda *m: None)
        assert not pub.pending
        pub.publish(topic, b"x", 2)
    finally:
        pub.close()


def test_qos2_from_another_client_is_delivered_once_and_completed(mqtt_address: tuple[str, int]) -> None:
    host, port = mqtt_address
    topic = _unique()
    got: list[tuple[str, bytes, int, bool]] = []
    sub = MqttConnection(host, port, f"fb-sub-{uuid.uuid4().hex[:12]}").connect(5)
    sub.subscribe(topic, 2, 5, lambda *m: got.append(m))
    peer = Peer(host, port)
    try:
        infos = [peer.client.publish(topic, f"m{i}".encode(), qos=2) for i in range(50)]
        deadline = time.monotonic() + 10
        while len(got) < 50 and time.monotonic() < deadline:
            sub.read(0.05, lambda *m: got.append(m))
        for info in infos:
            info.wait_for_publish(5)
        # PUBRELs answered: the broker forgets them, nothing is left half-done on our side
        for _ in range(20):
            sub.read(0.02, lambda *m: got.append(m))
        assert [p for _, p, _, _ in got] == [f"m{i}".encode() for i in range(50)]
        assert not sub._incoming
    finally:
        sub.close()
        peer.close()


def test_a_broken_conversation_and_an_unreachable_broker_are_errors(mqtt_address: tuple[str, int]) -> None:
    host, port = mqtt_address
    conn = MqttConnection(host, port, f"fb-{uuid.uuid4().hex[:12]}").connect(5)
    # Mosquitto answers a malformed topic filter by closing the connection
    with pytest.raises(MqttError, match=r"connection lost \(closed by the broker\)"):
        conn.subscribe("a/#/b", 0, 5, lambda *m: None)
    assert not conn.connected
    with pytest.raises(MqttError, match=r"cannot reach MQTT broker 127\.0\.0\.1:9"):
        MqttConnection("127.0.0.1", 9, "x").connect(1)


def test_keepalive_pings_keep_an_idle_connection(mqtt_address: tuple[str, int]) -> None:
    host, port = mqtt_address
    topic = _unique()
    got: list[Any] = []
    conn = MqttConnection(host, port, f"fb-{uuid.uuid4().hex[:12]}", keepalive=1).connect(5)
    conn.subscribe(topic, 0, 5, lambda *m: got.append(m))
    try:
        # the broker drops a client silent for 1.5 keep-alive intervals; pinging keeps this one
        deadline = time.monotonic() + 3.5
        while time.monotonic() < deadline:
            conn.read(0.1, lambda *m: got.append(m))
            conn.service()
        peer = Peer(host, port)
        peer.client.publish(topic, b"still here", qos=1).wait_for_publish(5)
        peer.close()
        deadline = time.monotonic() + 5
        while not got and time.monotonic() < deadline:
            conn.read(0.1, lambda *m: got.append(m))
        assert [m[1] for m in got] == [b"still here"]
    finally:
        conn.close()


def test_subscriber_reconnects_after_the_broker_drops_it(mqtt_address: tuple[str, int]) -> None:
    host, port = mqtt_address
    base = _unique()
    client_id = f"fb-sub-{uuid.uuid4().hex[:12]}"
    common = {"host": host, "port": port}
    doc = flow(
        {
            "in": ("MQTTSubscribe", {**common, "topicName": f"{base}/in", "clientId": client_id, "qos": "1"}),
            "out": ("MQTTPublish", {**common, "topicName": f"{base}/out", "qos": "1"}),
            "q": ("MQInput", {"queueName": "UNUSED"}),
        },
        ["in.out -> out"],
        name="MqttReconnect",
    )
    compiled = compile_flow(doc)
    deployed = DeployedFlow(
        compiled, lambda: None, DataSources(None), UserTrace(Path("/dev/null"), level="none")
    )
    collector = Peer(host, port).subscribe(f"{base}/out", 1)
    sender = Peer(host, port)
    # two flow threads share the node's connection: both carry on after it is replaced
    threads = [FlowThread(deployed, compiled.nodes["in"], i) for i in range(2)]
    deployed.threads = threads
    for thread in threads:
        thread.start()
    node = compiled.nodes["in"]
    try:
        _until(lambda: node._client is not None)
        sender.client.publish(f"{base}/in", b"before", qos=1).wait_for_publish(5)
        assert [p for _, p, _ in collector.wait_for(1)] == [b"before"]
        first = node._client
        # a second client with the same id takes the session over: Mosquitto drops ours
        thief = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id=client_id)
        thief.connect(host, port)
        thief.loop(1)
        thief.disconnect()
        _until(lambda: node._client is not None and node._client is not first, timeout=20)
        # the new connection's subscription is live once a probe comes back
        deadline = time.monotonic() + 20
        while b"after" not in [p for _, p, _ in collector.messages] and time.monotonic() < deadline:
            sender.client.publish(f"{base}/in", b"after", qos=1).wait_for_publish(5)
            time.sleep(0.2)
        assert b"after" in [p for _, p, _ in collector.messages]
        assert deployed.statistics()["errors"] == 0
    finally:
        deployed.stop_event.set()
        for thread in threads:
            thread.join(10)
        collector.close()
        sender.close()
    assert not any(thread.is_alive() for thread in threads)
    assert node._client is None  # the last thread out closed the connection


def test_publisher_fails_the_message_on_a_lost_connection_and_reconnects(
    mqtt_address: tuple[str, int],
) -> None:
    host, port = mqtt_address
    base = _unique()
    client_id = f"fb-pub-{uuid.uuid4().hex[:12]}"
    h = FlowHarness(
        flow(
            {
                "p": (
                    "MQTTPublish",
                    {
                        "host": host,
                        "port": port,
                        "topicName": f"{base}/out",
                        "qos": "1",
                        "clientId": client_id,
                    },
                ),
                "q": ("MQInput", {"queueName": "UNUSED"}),
            },
            [],
        )
    )
    collector = Peer(host, port).subscribe(f"{base}/out", 1)
    try:
        h.inject("p", b"one")
        node = h.compiled.nodes["p"]
        first = node._client
        assert first is not None and first.connected
        thief = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id=client_id)
        thief.connect(host, port)
        thief.loop(1)
        thief.disconnect()
        time.sleep(0.3)
        # the publication on the dropped connection gets no PUBACK: the message fails, naming why
        with pytest.raises(Unwinding, match="connection lost"):
            h.inject("p", b"lost")
        h.inject("p", b"two")  # and the next message connects again
        assert node._client is not first and node._client.connected
        got = [p for _, p, _ in collector.wait_for(2)]
        assert got == [b"one", b"two"]
    finally:
        collector.close()


def _until(condition: Any, timeout: float = 10) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


def test_publisher_replaces_a_connection_dropped_while_idle_without_losing_the_next_message(
    mqtt_address: tuple[str, int],
) -> None:
    host, port = mqtt_address
    base = _unique()
    client_id = f"fb-pub-{uuid.uuid4().hex[:12]}"
    props = {"host": host, "port": port, "topicName": f"{base}/out", "clientId": client_id}
    h = FlowHarness(flow({"p": ("MQTTPublish", props), "q": ("MQInput", {"queueName": "UNUSED"})}, []))
    collector = Peer(host, port).subscribe(f"{base}/out", 0)
    try:
        h.inject("p", b"one")
        node = h.compiled.nodes["p"]
        first = node._client
        thief = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id=client_id)
        thief.connect(host, port)
        thief.loop(1)
        thief.disconnect()
        time.sleep(1.2)  # idle past the node's once-a-second look at its connection
        h.inject("p", b"two")  # QoS 0: nothing would tell a write into the dead socket was lost
        assert node._client is not first
        assert [p for _, p, _ in collector.wait_for(2)] == [b"one", b"two"]
    finally:
        collector.close()


def test_remaining_length_encoding() -> None:
    assert mqtt_wire.encode_length(0) == b"\x00"
    assert mqtt_wire.encode_length(127) == b"\x7f"
    assert mqtt_wire.encode_length(128) == b"\x80\x01"
    assert mqtt_wire.encode_length(16_383) == b"\xff\x7f"
    assert mqtt_wire.encode_length(268_435_455) == b"\xff\xff\xff\x7f"
    with pytest.raises(ValueError, match="out of range"):
        mqtt_wire.encode_length(268_435_456)


def test_qos0_publications_kept_are_written_together_in_order(mqtt_address: tuple[str, int]) -> None:
    host, port = mqtt_address
    topic = _unique()
    collector = Peer(host, port).subscribe(topic, 1)
    pub = MqttConnection(host, port, f"fb-pub-{uuid.uuid4().hex[:12]}", write_buffer=3000).connect(5)
    encoded = encode_string(topic)
    try:
        pub.publish_buffered(encoded, b"a" * 1000)
        pub.publish_buffered(encoded, b"b" * 1000)
        # kept, whole packets (type, length, topic, payload), under the write buffer's 3000 bytes
        assert pub._out_bytes == 2 * (3 + len(encoded) + 1000) and pub._out
        pub.publish_buffered(encoded, b"c" * 1000)
        assert pub._out == []  # the third reached it: all three written at once
        assert [p[:1] for _, p, _ in collector.wait_for(3)] == [b"a", b"b", b"c"]
        pub.publish_buffered(encoded, b"d")
        pub.publish_buffered(encoded, b"e")
        packet_id = pub.publish(encoded, b"f", 1)  # a QoS 1 publication goes after the kept ones
        assert pub._out == []
        deadline = time.monotonic() + 5
        while not pub.done(packet_id) and time.monotonic() < deadline:
            pub.read(0.05, lambda *m: None)
        assert pub.done(packet_id)
        pub.publish_buffered(encoded, b"g")
        pub.flush()
        pub.publish_buffered(encoded, b"h")
        pub.close()  # kept publications leave before the DISCONNECT
        got = [p[:1] for _, p, _ in collector.wait_for(8)]
        assert got == [b"a", b"b", b"c", b"d", b"e", b"f", b"g", b"h"]
    finally:
        pub.close()
        collector.close()


def test_a_flow_threads_turn_is_published_whole_and_in_order(mqtt_address: tuple[str, int]) -> None:
    host, port = mqtt_address
    base = _unique()
    common = {"host": host, "port": port}
    doc = flow(
        {
            "in": ("MQTTSubscribe", {**common, "topicName": f"{base}/in"}),
            "out": ("MQTTPublish", {**common, "topicName": f"{base}/out"}),
            "q": ("MQInput", {"queueName": "UNUSED"}),
        },
        ["in.out -> out"],
        name="MqttTurns",
    )
    compiled = compile_flow(doc)
    deployed = DeployedFlow(
        compiled, lambda: None, DataSources(None), UserTrace(Path("/dev/null"), level="none")
    )
    collector = Peer(host, port).subscribe(f"{base}/out", 0)
    sender = MqttConnection(host, port, f"fb-snd-{uuid.uuid4().hex[:12]}").connect(5)
    thread = FlowThread(deployed, compiled.nodes["in"], 0)
    deployed.threads = [thread]
    thread.start()
    try:
        _until(lambda: compiled.nodes["in"]._client is not None)
        # published in one write: the flow thread takes them in turns of many
        encoded = encode_string(f"{base}/in")
        for i in range(500):
            sender.publish_buffered(encoded, str(i).encode())
        sender.flush()
        got = [int(p) for _, p, _ in collector.wait_for(500)]
        assert got == list(range(500))
        published = compiled.nodes["out"]._client
        assert published is not None and published._out == []  # nothing left kept once idle
    finally:
        deployed.stop_event.set()
        thread.join(10)
        sender.close()
        collector.close()
    assert not thread.is_alive()


class _PartsOnly:
    """Flow services that serialise only through ``message_parts`` and keep no turn (no after_batch)."""

    flow_name = "parts-only"
    stop = threading.Event()

    def __init__(self) -> None:
        self.parts = 0

    def message_parts(self, root: Any) -> tuple[Any, dict[str, Any], bytes]:
        from flowbroker.runtime import assembly as assemblies

        self.parts += 1
        return None, {}, assemblies.to_body(root)

    def log(self, text: str) -> None:
        pass


def test_publisher_looks_up_each_flow_threads_services_and_falls_back_to_message_parts(
    mqtt_address: tuple[str, int],
) -> None:
    from flowbroker.runtime import assembly as assemblies
    from flowbroker_nodes.base import Assembly, bind_thread

    host, port = mqtt_address
    topic = _unique()
    h = FlowHarness(
        flow(
            {
                "p": ("MQTTPublish", {"host": host, "port": port, "topicName": topic}),
                "q": ("MQInput", {"queueName": "UNUSED"}),
            },
            [],
        )
    )
    node = h.compiled.nodes["p"]
    collector = Peer(host, port).subscribe(topic, 0)
    first, second = _PartsOnly(), _PartsOnly()

    def publish(services: Any, body: bytes) -> None:
        assemblies.ensure_domains()
        root = assemblies.formats_assembly.build_root(
            type("MD", (), {"format": "", "encoding": 546, "coded_char_set_id": 1208})(), body
        )
        bind_thread(services)
        try:
            node.evaluate(Assembly(root), "in")
        finally:
            bind_thread(None)

    try:
        publish(first, b"one")
        publish(second, b"two")
        publish(first, b"three")
        # each thread's services are its own, found again by the thread; with no turn to keep
        # them for, QoS 0 publications are written at once
        assert (first.parts, second.parts) == (2, 1)
        assert {key: found[0] for key, found in node._services.items()} == {
            id(first): first,
            id(second): second,
        }
        assert node._client is not None and node._client._out == []
        assert [p for _, p, _ in collector.wait_for(3)] == [b"one", b"two", b"three"]
        node.release()  # and the threads' services are not kept once the node is released
        assert node._services == {}
    finally:
        collector.close()
        node.release()
