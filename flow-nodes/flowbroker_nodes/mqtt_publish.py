"""MQTTPublish: publishes the message body to a topic on an MQTT broker.

The topic comes from ``LocalEnvironment.Destination.MQTT.topicName`` when a node upstream set
it, else from the node's property. One connection per deployed node serves all its flow
threads. It has no network thread: a publication is written on the flow thread that makes it,
and keep-alive and acknowledgements are read by the flow threads too, so no message waits for a
thread hand-off. At QoS 1 and 2 the node waits for the broker's acknowledgement and fails the
message (failure terminal, else back to the input node) when none comes.

At QoS 0 a flow thread's publications of one turn (the arrivals its input node took together,
see ``FlowServices.after_batch``) are written together once the turn is over, or as soon as
they reach ``FLOWBROKER_MQTT_WRITE_BUFFER`` bytes: one system call for many messages. A QoS 1
or 2 publication is written at once (after the kept ones, in order) and acknowledged before the
node propagates. The protocol is spoken by :mod:`flowbroker_nodes.mqtt_wire`; a lost connection
fails the message being published (a QoS 0 publication kept for the turn's write is lost with
it, and the loss logged), and the next message connects again.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from typing import Any

from flowbroker_nodes.base import Assembly, DeployProblem, NodeError
from flowbroker_nodes.base import Node as BaseNode
from flowbroker_nodes.mqtt_subscribe import INPUT_FOLDER, _integer
from flowbroker_nodes.mqtt_wire import MAX_INFLIGHT, WRITE_BUFFER, MqttConnection, MqttError, encode_string
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


#: The largest ``FLOWBROKER_MQTT_WRITE_BUFFER`` taken.
MAX_WRITE_BUFFER = 16 << 20


def write_buffer_setting() -> int:
    """``FLOWBROKER_MQTT_WRITE_BUFFER``: bytes of QoS 0 publications written together at most (0: each alone)."""
    raw = os.environ.get("FLOWBROKER_MQTT_WRITE_BUFFER", "").strip()
    try:
        value = int(raw) if raw else WRITE_BUFFER
    except ValueError:
        raise ValueError(f"FLOWBROKER_MQTT_WRITE_BUFFER must be a whole number, not {raw!r}") from None
    return max(0, min(value, MAX_WRITE_BUFFER))


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
        try:
            self.write_buffer = write_buffer_setting()
        except ValueError as exc:
            raise DeployProblem(str(exc)) from None
        self._lock = threading.Lock()
        self._client: MqttConnection | None = None
        self._serviced = 0.0
        #: Topics already validated, as encoded MQTT strings: a publication encodes only its payload.
        self._topics: dict[str, bytes] = {}
        #: Flow threads publishing at QoS 1 or 2 at once: no more than the connection may leave in flight.
        self._window = threading.BoundedSemaphore(MAX_INFLIGHT)
        #: Per flow thread (by id, the thread's services kept with it so the id is not reused):
        #: its body serialiser and its end-of-turn hook, looked up once instead of per message.
        self._services: dict[int, tuple[object, Any, Any]] = {}
        #: The end-of-turn write, bound once (a bound method made per message otherwise).
        self._flush_kept = self._flush

    def _connection(self) -> MqttConnection:
        client = self._client
        if client is not None and client.connected:
            return client
        with self._lock:
            if self._client is not None and self._client.connected:
                return self._client
            client_id = self.client_id or f"flowbroker-pub-{self.id}-{int(time.time() * 1000) % 100000}"
            try:
                client = MqttConnection(
                    self.host, self.port, client_id, write_buffer=self.write_buffer
                ).connect(self.ack_timeout)
            except MqttError as exc:
                raise NodeError(f"{self.name}: {exc}", number=2111) from exc
            self._client = client
            self._serviced = time.monotonic()
            return client

    def release(self) -> None:
        """Disconnect from the broker (a later publication connects again)."""
        lock = getattr(self, "_lock", None)
        if lock is None:  # prepare failed before a connection could exist
            return
        with lock:
            client, self._client = self._client, None
        self._services.clear()  # the flow threads that ran are done: none is kept alive here
        if client is not None:
            client.close()

    def _service(self, client: MqttConnection, timeout: float = 0.0) -> None:
        """Read acknowledgements and keep-alive answers, ping when due (one thread at a time)."""
        with self._lock:
            client.read(timeout, _unexpected)
            client.service()
            self._serviced = time.monotonic()

    def _services_of(self, flow: Any) -> tuple[object, Any, Any]:
        """(flow, body serialiser, end-of-turn hook or None) of a flow thread, looked up once."""
        body_of = getattr(flow, "message_body", None)
        if body_of is None:
            parts = getattr(flow, "message_parts", None)
            if parts is None:
                raise NodeError(f"{self.name}: this runtime cannot serialise a message for MQTT")

            def body_of(root: Any) -> bytes:
                return parts(root)[2]  # type: ignore[no-any-return]

        after_batch = getattr(flow, "after_batch", None) if self.write_buffer else None
        found = (flow, body_of, after_batch)
        services = self._services
        if len(services) >= 256:  # flow threads come and go with restarts: never more than a few
            services.clear()
        services[id(flow)] = found
        return found

    def evaluate(self, assembly: Assembly, terminal: str) -> None:
        topic, encoded = self._topic(assembly)
        flow = self.flow
        found = self._services.get(id(flow))
        if found is None or found[0] is not flow:
            found = self._services_of(flow)
        _, body_of, after_batch = found
        body = body_of(assembly.root)  # MQTT carries no descriptor: none is built
        client = self._client
        if client is None or client.sock is None:
            client = self._connection()
        if time.monotonic() - self._serviced > 1.0:
            # at most once a second: acknowledgements and keep-alive answers are read, and a
            # connection the broker closed while the flow was idle is found before a message is
            # written into it, and replaced
            try:
                self._service(client)
            except MqttError:
                client = self._connection()
        try:
            if self.qos:
                self._acknowledged(client, topic, encoded, body)
            elif after_batch is not None:
                client.publish_buffered(encoded, body, self.retain)
                after_batch(self, self._flush_kept)
            else:
                client.publish(encoded, body, 0, self.retain)
        except MqttError as exc:
            raise NodeError(
                f"{self.name}: publish on {topic!r} failed: {exc}", number=2111, inserts=(topic,)
            ) from exc
        self.propagate("out", assembly)

    def _flush(self) -> None:
        """Write the QoS 0 publications this turn kept (run by the flow thread once its turn ends)."""
        client = self._client
        if client is None:
            return
        try:
            client.flush()
        except MqttError as exc:
            self.stats.errors += 1
            self.flow.log(f"{self.name}: QoS 0 publications lost with the connection: {exc}")

    def _acknowledged(self, client: MqttConnection, topic: str, encoded: bytes, body: bytes) -> None:
        """Publish at QoS 1 or 2 and wait until the broker completes it."""
        deadline = time.monotonic() + self.ack_timeout
        if not self._window.acquire(timeout=self.ack_timeout):
            raise NodeError(
                f"{self.name}: no room in flight for the publication on {topic!r} within {self.ack_timeout} s",
                number=2111,
                inserts=(topic,),
            )
        try:
            packet_id = client.publish(encoded, body, self.qos, self.retain)
            while not client.done(packet_id) and time.monotonic() < deadline:
                self._service(client, 0.05)
            if not client.done(packet_id):
                client.pending.pop(packet_id, None)
                raise NodeError(
                    f"{self.name}: no acknowledgement for the publication on {topic!r} within {self.ack_timeout} s",
                    number=2111,
                    inserts=(topic,),
                )
        finally:
            self._window.release()

    def _topic(self, assembly: Assembly) -> tuple[str, bytes]:
        """The topic published on, and its encoding (a topic is validated and encoded once)."""
        local = assembly.local_environment
        lazy = local.lazy
        # an unread LocalEnvironment of an MQTTSubscribe holds MQTT.Input only: no Destination
        destination = None if lazy is not None and lazy.parser is INPUT_FOLDER else local.child("Destination")
        mqtt = destination.child("MQTT") if destination is not None else None
        named = mqtt.child("topicName") if mqtt is not None else None
        topic = str(named.value) if named is not None and named.value else self.topic
        encoded = self._topics.get(topic)
        if encoded is not None:
            return topic, encoded
        return topic, self._encode_topic(topic, named is not None)

    def _encode_topic(self, topic: str, named: bool) -> bytes:
        """``topic`` validated and encoded, remembered for the next publication on it."""
        problem = validate_topic_name(topic)
        if problem:
            source = "LocalEnvironment.Destination.MQTT.topicName" if named else "topicName"
            raise NodeError(f"{self.name}: cannot publish on {topic!r} ({source}): {problem}")
        if len(self._topics) >= 1024:
            self._topics.clear()
        encoded = self._topics[topic] = encode_string(topic)
        return encoded

    def straight_writer(self, flow: Any) -> Callable[[Any, bytes], bool] | None:
        """For a flow thread's straight run (``flowbroker.runtime.straight``) of one turn: a function
        that publishes an arrival's new body as :meth:`evaluate` does for a message whose
        LocalEnvironment names no topic (True; or the NodeError it raises), or None when this node
        publishes otherwise (QoS 1 or 2, unbuffered) or cannot now; :meth:`evaluate` then takes
        each message."""
        if self.qos or not self.write_buffer:
            return None
        found = self._services.get(id(flow))
        if found is None or found[0] is not flow:
            found = self._services_of(flow)
        after_batch = found[2]
        if after_batch is None:
            return None
        topic = self.topic
        try:
            encoded = self._topics.get(topic) or self._encode_topic(topic, False)
            client = self._client
            if client is None or client.sock is None:
                client = self._connection()
            if time.monotonic() - self._serviced > 1.0:  # as evaluate does, once a turn
                try:
                    self._service(client)
                except MqttError:
                    client = self._connection()
        except NodeError:
            return None  # each message meets it in evaluate, and fails as it does there
        after_batch(self, self._flush_kept)
        publish = client.publish_buffered
        retain = self.retain
        name = self.name

        def write(arrival: Any, body: bytes) -> bool:
            try:
                publish(encoded, body, retain)
                return True
            except MqttError as exc:
                raise NodeError(
                    f"{name}: publish on {topic!r} failed: {exc}", number=2111, inserts=(topic,)
                ) from exc

        return write


def _unexpected(topic: str, payload: bytes, qos: int, retain: bool) -> None:
    """A publisher subscribes to nothing: a publication sent to it anyway is dropped."""
