"""MQTTSubscribe: receives publications from an MQTT broker and starts the flow on each one.

One MQTT connection per deployed node feeds every flow thread of that node through one queue,
so additional instances share the work instead of each receiving a copy. The connection has no
network thread of its own: a flow thread that finds the queue empty reads the socket itself
(one reader at a time), which spares a thread hand-off per message. MQTT has no unit of work a
flow could back out: a message whose flow fails goes to the catch terminal, else the failure
terminal, else it is logged and dropped (at QoS 1 it was acknowledged on receipt). The
protocol is spoken by :mod:`flowbroker_nodes.mqtt_wire`; a lost connection ends the flow
threads' loop with a ConnectionError, and the flow thread reconnects after its back-off.
"""

from __future__ import annotations

import queue
import threading
import time
from dataclasses import dataclass
from typing import Any

from esql.tree import Element, LazyContent

from flowbroker_nodes.base import (
    ArrivedDescriptor,
    ArrivedMessage,
    Assembly,
    DeployProblem,
    FlowServices,
)
from flowbroker_nodes.base import Node as BaseNode
from flowbroker_nodes.mqtt_wire import MqttConnection, OnPublish
from flowbroker_nodes.spec import NodeSpec, Property, Terminal

SPEC = NodeSpec(
    type="MQTTSubscribe",
    label="MQTTSubscribe",
    category="input",
    role="input",
    icon="mqtt-in",
    extra={"namesMessageSet": {"property": "messageSet", "when": {"messageDomain": "MRM"}}},
    description="Subscribes to a topic on an MQTT broker and propagates each publication it receives "
    "through the flow, its body parsed in the message domain chosen.",
    outputs=(
        Terminal("out", "out", "Out"),
        Terminal("failure", "failure", "Failure"),
        Terminal("catch", "catch", "Catch"),
    ),
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
            required=True,
            editor="topic",
            description="The topic filter subscribed to; + and # wildcards are allowed.",
        ),
        Property(
            "qos",
            "enum",
            "Quality of service",
            default="0",
            enum=("0", "1", "2"),
            description="The MQTT QoS of the subscription.",
        ),
        Property(
            "clientId",
            "string",
            "Client id",
            default="",
            description="MQTT client identifier; empty makes one from the flow and node names.",
        ),
        Property(
            "messageDomain",
            "enum",
            "Message domain",
            default="BLOB",
            enum=("BLOB", "XMLNSC", "XMLNS", "XML", "JSON", "MRM"),
            description="The domain the payload is parsed in.",
        ),
        Property("messageSet", "string", "Message set", default="", description="Message set (MRM)."),
        Property("messageType", "string", "Message type", default="", description="Message type (MRM)."),
        Property(
            "messageFormat",
            "string",
            "Message format",
            default="",
            description="Physical format (MRM: CWF, XML).",
        ),
        Property(
            "waitInterval",
            "integer",
            "Wait interval (ms)",
            default=1000,
            minimum=1,
            maximum=60000,
            description="How long a flow thread waits for a publication before it checks for a stop.",
        ),
        Property(
            "connectTimeout",
            "integer",
            "Connect timeout (s)",
            default=10,
            minimum=1,
            maximum=300,
            description="How long to wait for the broker's CONNACK and SUBACK.",
        ),
    ),
)


@dataclass
class MqttMessage(ArrivedMessage):
    topic: str = ""
    qos: int = 0
    retain: bool = False


def validate_topic_filter(topic: str) -> str:
    """'' when ``topic`` is a valid MQTT topic filter, else why not (with the character offset)."""
    if not topic:
        return "the topic is empty"
    if len(topic.encode("utf-8")) > 65535:
        return "the topic is longer than 65535 bytes"
    if "\x00" in topic:
        return f"NUL character at offset {topic.index(chr(0))}"
    levels = topic.split("/")
    offset = 0
    for index, level in enumerate(levels):
        if "#" in level and (level != "#" or index != len(levels) - 1):
            return f"'#' must be a whole last level (offset {offset + level.index('#')})"
        if "+" in level and level != "+":
            return f"'+' must be a whole level (offset {offset + level.index('+')})"
        offset += len(level) + 1
    return ""


class Node(BaseNode):
    """The node's MQTT connection and the get-propagate loop of each of its flow threads."""

    SPEC = SPEC

    def prepare(self) -> None:
        props = self.properties
        topic = str(props.get("topicName") or "")
        problem = validate_topic_filter(topic)
        if problem:
            raise DeployProblem(f"invalid topic filter {topic!r}: {problem}", property="topicName")
        self.topic = topic
        self.host = str(props.get("host") or "").strip()
        if not self.host:
            raise DeployProblem("required: the broker host", property="host")
        self.port = _integer(props.get("port"), "port", 1, 65535)
        self.qos = _integer(props.get("qos"), "qos", 0, 2)
        self.wait_s = _integer(props.get("waitInterval"), "waitInterval", 1, 60000) / 1000.0
        self.connect_timeout = _integer(props.get("connectTimeout"), "connectTimeout", 1, 300)
        self.client_id = str(props.get("clientId") or "")
        self.template = {
            "domain": str(props.get("messageDomain") or "BLOB"),
            "set": str(props.get("messageSet") or ""),
            "type": str(props.get("messageType") or ""),
            "format": str(props.get("messageFormat") or ""),
        }
        self._lock = threading.Lock()
        self._reader = threading.Lock()
        self._client: Any = None
        self._inbox: queue.SimpleQueue[MqttMessage] = queue.SimpleQueue()
        self._threads = 0

    def evaluate(self, assembly: Assembly, terminal: str) -> None:
        # a message injected on this node (tests, the designer's "inject") starts the flow here
        self.propagate("out", assembly)

    # -- the connection, shared by the node's flow threads ---------------------------------------

    def _connect(self, flow_name: str) -> None:
        client_id = self.client_id or f"flowbroker-{flow_name}-{self.id}-{int(time.time() * 1000) % 100000}"
        client = MqttConnection(self.host, self.port, client_id).connect(self.connect_timeout)
        try:
            client.subscribe(self.topic, self.qos, self.connect_timeout, self._deliverer(client))
        except BaseException:
            client.close()
            raise
        self._client = client

    def _deliverer(self, client: MqttConnection) -> OnPublish:
        """``on_publish`` for one read of ``client``: each publication a message on the node's
        queue, put at the time its read arrived (one clock reading for all of a read's)."""
        put = self._inbox.put

        def deliver(topic: str, payload: bytes, qos: int, retain: bool) -> None:
            put(
                MqttMessage(
                    ArrivedDescriptor(client.arrived, 1 if qos else 0), {}, payload, topic, qos, retain
                )
            )

        return deliver

    def _pump(self, timeout: float) -> None:
        """Read what the socket holds into the queue (the caller holds the reader lock)."""
        client = self._client
        if client is None:
            # another flow thread lost the connection: this one backs off too, and reconnects
            raise ConnectionError(f"MQTT broker {self.host}:{self.port}: connection lost")
        client.read(timeout, self._deliverer(client))
        client.service()  # keep-alive

    def _release(self) -> None:
        with self._lock:
            self._threads -= 1
            if self._threads <= 0 and self._client is not None:
                client, self._client = self._client, None
                client.close()

    def release(self) -> None:
        """Close the connection whichever flow thread held it last (one that ended without closing
        its subscription, or a message injected with no thread running, leaves it open)."""
        lock = getattr(self, "_lock", None)
        if lock is None:  # prepare failed before a connection could exist
            return
        with lock:
            client, self._client = self._client, None
            self._threads = 0
        if client is not None:
            client.close()

    # -- one flow thread -------------------------------------------------------------------------

    def open_input(self, flow: FlowServices) -> _Subscription:
        return _Subscription(self, flow)


class _InputFolder:
    """Fills an unread LocalEnvironment with ``MQTT.Input`` (Topic, QoS, Retained) on its first
    read: most flows never look, and an MQTTPublish finds no Destination there without it."""

    def fill(self, element: Element, content: LazyContent) -> None:
        message: MqttMessage = content.options["message"]
        mqtt = element.append_new(Element("MQTT")).append_new(Element("Input"))
        # new fields of a new folder: linked without append's detach and parse checks
        mqtt.append_new(Element("Topic", message.topic))
        mqtt.append_new(Element("QoS", message.qos))
        mqtt.append_new(Element("Retained", message.retain))


#: The filler of a LocalEnvironment that holds only what MQTTSubscribe put there.
INPUT_FOLDER = _InputFolder()

#: Publications a flow thread takes from its node's queue at once (the rest stay for the node's
#: other flow threads and its next turn): a turn's QoS 0 publications are written together.
ARRIVALS_PER_TURN = 64


class _Subscription:
    """One flow thread's share of the node's connection: the next publication, its assembly.

    MQTT has no unit of work: a publication the flow fails on is dropped (unless the failure
    terminal takes it); the flow's own queue and database work commits or backs out as usual.
    """

    transactional = False

    def __init__(self, node: Node, flow: FlowServices) -> None:
        self.node = node
        #: The template every arrival's body (UTF-8, no header) is parsed under: this source's
        #: arrivals may run straight (``flowbroker.runtime.straight``).
        self.straight_template = node.template
        #: this thread's FlowServices.build_assembly, looked up once
        self._build_assembly = flow.build_assembly
        with node._lock:
            if node._client is None:
                node._connect(flow.flow_name)
            node._threads += 1

    def next(self) -> list[MqttMessage]:
        """The publications waiting, up to ``ARRIVALS_PER_TURN`` (one turn of the flow thread: an
        output writes what it made in the turn once it is over); [] after waiting for more."""
        node = self.node
        inbox = node._inbox
        taken: list[MqttMessage] = []
        try:
            while len(taken) < ARRIVALS_PER_TURN:
                taken.append(inbox.get_nowait())
            return taken
        except queue.Empty:
            if taken:
                return taken
        if node._reader.acquire(timeout=node.wait_s):
            try:
                node._pump(node.wait_s)
            except ConnectionError:
                with node._lock:
                    broken, node._client = node._client, None
                if broken is not None:
                    broken.close(polite=False)
                raise
            finally:
                node._reader.release()
        return []

    def assembly(self, message: MqttMessage) -> tuple[str, Assembly]:
        assembly = self._build_assembly(message, self.node.template)  # type: ignore[arg-type]
        # LocalEnvironment.MQTT.Input is made when something first reads LocalEnvironment
        assembly.local_environment.set_lazy(LazyContent(INPUT_FOLDER, b"", options={"message": message}))
        return "out", assembly

    def failure_assembly(self, message: MqttMessage, assembly: Assembly | None, errors: Element) -> Assembly:
        return Assembly(Element("Root"), exception_list=errors)

    def unhandled(self, message: MqttMessage, errors: Element, note: str) -> bool:
        self.node.flow.log(
            f"{self.node.name}: publication dropped (MQTT has no unit of work to back out): {note}"
        )
        return True

    def done(self, messages: list[MqttMessage], complete: bool) -> None:
        pass

    def close(self) -> None:
        self.node._release()


def _integer(value: Any, name: str, low: int, high: int) -> int:
    try:
        number = int(value)
    except (TypeError, ValueError):
        raise DeployProblem(f"{name} must be an integer, got {value!r}", property=name) from None
    if not low <= number <= high:
        raise DeployProblem(f"{name} must be between {low} and {high}, got {number}", property=name)
    return number
