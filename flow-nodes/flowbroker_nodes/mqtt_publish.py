"""MQTTPublish: publishes the message body to a topic on an MQTT broker (paho-mqtt).

The topic comes from ``LocalEnvironment.Destination.MQTT.topicName`` when a node upstream set
it, else from the node's property. One connection per deployed node serves all its flow
threads. It has no network thread: a publication is written on the flow thread that makes it,
and keep-alive and acknowledgements are read by the flow threads too, so no message waits for a
thread hand-off. At QoS 1 and 2 the node waits for the broker's acknowledgement and fails the
message (failure terminal, else back to the input node) when none comes.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from flowbroker_nodes.base import Assembly, DeployProblem, NodeError
from flowbroker_nodes.base import Node as BaseNode
from flowbroker_nodes.mqtt_subscribe import _integer
from flowbroker_nodes.spec import NodeSpec, Property, Terminal

SPEC = NodeSpec(
    type="MQTTPublish",
    role="output",
    label="MQTTPublish",
    category="output",
    icon="mqtt-out",
    description="Publishes the message body on a topic of an MQTT broker, then propagates the message "
    "unchanged to its out terminal.",
    inputs=(Terminal("in", "in", "In"),),
    outputs=(Terminal("out", "out", "Out"), Terminal("failure", "failure", "Failure")),
    properties=(
        Property(
            "host",
            "string",
            "Broker host",
            default="127.0.0.1",
            required=True,
            description="Host name or address of the MQTT broker.",
        ),
        Property(
            "port",
            "integer",
            "Broker port",
            default=1883,
            minimum=1,
            maximum=65535,
            description="TCP port of the MQTT broker.",
        ),
        Property(
            "topicName",
            "topic",
            "Topic",
            default="",
            editor="topic",
            description="Topic published on, unless LocalEnvironment.Destination.MQTT.topicName "
            "names another.",
        ),
        Property(
            "qos",
            "enum",
            "Quality of service",
            default="0",
            enum=("0", "1", "2"),
            description="MQTT QoS of each publication.",
        ),
        Property(
            "retain",
            "boolean",
            "Retain",
            default=False,
            description="Ask the broker to keep the last publication for new subscribers.",
        ),
        Property(
            "clientId",
            "string",
            "Client id",
            default="",
            description="MQTT client identifier; empty makes one from the flow and node names.",
        ),
        Property(
            "ackTimeout",
            "integer",
            "Acknowledgement timeout (s)",
            default=10,
            minimum=1,
            maximum=300,
            description="How long a QoS 1 or 2 publication waits for the broker's acknowledgement.",
        ),
    ),
)


def validate_topic_name(topic: str) -> str:
    """'' when ``topic`` can be published on (no wildcards), else why not, with the offset."""
    if not topic:
        return "the topic is empty"
    for char in "+#\x00":
        if char in topic:
            return f"{char!r} is not allowed in a topic published on (offset {topic.index(char)})"
    if len(topic.encode("utf-8")) > 65535:
        return "the topic is longer than 65535 bytes"
    return ""


class Node(BaseNode):
    SPEC = SPEC

    def prepare(self) -> None:
        props = self.properties
        self.topic = str(props.get("topicName") or "")
        if self.topic:
            problem = validate_topic_name(self.topic)
            if problem:
                raise DeployProblem(f"invalid topic {self.topic!r}: {problem}", property="topicName")
        self.host = str(props.get("host") or "").strip()
        if not self.host:
            raise DeployProblem("required: the broker host", property="host")
        self.port = _integer(props.get("port"), "port", 1, 65535)
        self.qos = _integer(props.get("qos"), "qos", 0, 2)
        self.retain = bool(props.get("retain"))
        self.ack_timeout = _integer(props.get("ackTimeout"), "ackTimeout", 1, 300)
        self.client_id = str(props.get("clientId") or "")
        self._lock = threading.Lock()
        self._client: Any = None
        self._serviced = 0.0

    def _connection(self) -> Any:
        client = self._client
        if client is not None and client.is_connected():
            return client
        with self._lock:
            if self._client is not None and self._client.is_connected():
                return self._client
            import paho.mqtt.client as mqtt

            client_id = self.client_id or f"flowbroker-pub-{self.id}-{int(time.time() * 1000) % 100000}"
            client = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id=client_id, clean_session=True)
            connected = threading.Event()
            client.on_connect = lambda c, u, f, reason, p: connected.set()
            try:
                client.connect(self.host, self.port, keepalive=60)
            except OSError as exc:
                raise NodeError(
                    f"{self.name}: cannot reach MQTT broker {self.host}:{self.port}: {exc.strerror or exc}",
                    number=2111,
                ) from exc
            deadline = time.monotonic() + self.ack_timeout
            while not connected.is_set() and time.monotonic() < deadline:
                if client.loop(timeout=0.1) != 0:
                    break
            if not client.is_connected():
                client.disconnect()
                raise NodeError(
                    f"{self.name}: MQTT broker {self.host}:{self.port} did not accept the connection",
                    number=2111,
                )
            self._client = client
            self._serviced = time.monotonic()
            return client

    def _service(self, client: Any, timeout: float = 0.0) -> None:
        """Read acknowledgements and keep-alive answers, send what is pending (one thread at a time)."""
        with self._lock:
            client.loop(timeout=timeout)
            self._serviced = time.monotonic()

    def evaluate(self, assembly: Assembly, terminal: str) -> None:
        topic = self._topic(assembly)
        parts = getattr(self.flow, "message_parts", None)
        if parts is None:
            raise NodeError(f"{self.name}: this runtime cannot serialise a message for MQTT")
        _, _, body = parts(assembly.root)
        client = self._connection()
        info = client.publish(topic, body, self.qos, self.retain)
        if info.rc != 0:
            raise NodeError(
                f"{self.name}: publish on {topic!r} failed (paho rc {info.rc})", number=2111, inserts=(topic,)
            )
        if self.qos:
            deadline = time.monotonic() + self.ack_timeout
            while not info.is_published() and time.monotonic() < deadline:
                self._service(client, 0.05)
            if not info.is_published():
                raise NodeError(
                    f"{self.name}: no acknowledgement for the publication on {topic!r} within {self.ack_timeout} s",
                    number=2111,
                    inserts=(topic,),
                )
        elif client.want_write() or time.monotonic() - self._serviced > 1.0:
            self._service(client)
        self.propagate("out", assembly)

    def _topic(self, assembly: Assembly) -> str:
        destination = assembly.local_environment.child("Destination")
        mqtt = destination.child("MQTT") if destination is not None else None
        named = mqtt.child("topicName") if mqtt is not None else None
        topic = str(named.value) if named is not None and named.value else self.topic
        problem = validate_topic_name(topic)
        if problem:
            source = "LocalEnvironment.Destination.MQTT.topicName" if named is not None else "topicName"
            raise NodeError(f"{self.name}: cannot publish on {topic!r} ({source}): {problem}")
        return topic
