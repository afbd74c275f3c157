"""A lean socket-level MQTT 3.1.1 client for QoS 0 load: pre-encoded publishes, batch parsing of receipts.

paho-mqtt's Python subscriber tops out well below what the engines under test deliver, so the
load driver speaks the few packets it needs (CONNECT, SUBSCRIBE, PUBLISH QoS 0, DISCONNECT)
itself. Keep-alive is 0, so the broker never expects a PINGREQ from a busy driver.
"""

from __future__ import annotations

import os
import socket
import struct
import time
from collections.abc import Callable

from flowbroker_nodes import mqtt_wire as wire
from flowbroker_nodes.mqtt_wire import complete_packet_size, encode_string


class MqttWireError(OSError):
    """The broker refused or broke the conversation (message says which packet and why)."""


def connect_packet(client_id: str, clean_session: bool = True, keepalive: int = 0) -> bytes:
    return wire.connect_packet(client_id, keepalive, clean_session)


def subscribe_packet(packet_id: int, topic: str, qos: int = 0) -> bytes:
    return wire.subscribe_packet(packet_id, topic, qos)


def publish_packet(topic: str, payload: bytes, retain: bool = False) -> bytes:
    """One QoS 0 PUBLISH; callers build it once and send it many times."""
    return wire.publish_packet(encode_string(topic), payload, 0, retain, 0)


def parse_publish(packet: bytes) -> tuple[str, bytes]:
    """(topic, payload) of one whole PUBLISH packet as received (any QoS)."""
    if not packet or packet[0] >> 4 != 3:
        raise MqttWireError(f"not a PUBLISH packet (first byte {packet[:1].hex() or 'none'})")
    qos = (packet[0] >> 1) & 3
    index = 1
    while packet[index] & 0x80:
        index += 1
    index += 1
    (topic_len,) = struct.unpack_from("!H", packet, index)
    index += 2
    topic = packet[index : index + topic_len].decode("utf-8")
    index += topic_len
    if qos:
        index += 2
    return topic, packet[index:]


class MqttWire:
    """One connection to the broker; not thread-safe (one per process or thread)."""

    def __init__(self, host: str, port: int, client_id: str | None = None, timeout: float = 5.0) -> None:
        self.host, self.port = host, port
        self.client_id = client_id or f"fb-bench-{os.getpid()}-{time.monotonic_ns() % 1_000_000}"
        try:
            self.sock = socket.create_connection((host, port), timeout=timeout)
        except OSError as exc:
            raise MqttWireError(
                f"cannot connect to MQTT broker {host}:{port}: {exc.strerror or exc}"
            ) from exc
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4 << 20)
        self._buffer = bytearray()
        self.sock.sendall(connect_packet(self.client_id))
        packet = self._read_packet(timeout)
        if packet[0] != 0x20 or len(packet) < 4:
            raise MqttWireError(f"expected CONNACK from {host}:{port}, got packet type {packet[0] >> 4}")
        if packet[3] != 0:
            raise MqttWireError(
                f"broker {host}:{port} refused the connection (CONNACK return code {packet[3]})"
            )

    def subscribe(self, topic: str, qos: int = 0, timeout: float = 5.0) -> None:
        self.sock.sendall(subscribe_packet(1, topic, qos))
        deadline = time.monotonic() + timeout
        while True:
            packet = self._read_packet(max(0.01, deadline - time.monotonic()))
            if packet[0] == 0x90:
                if packet[-1] == 0x80:
                    raise MqttWireError(f"broker refused the subscription to {topic!r}")
                return
            if time.monotonic() > deadline:
                raise MqttWireError(f"no SUBACK for {topic!r} within {timeout} s")

    def send(self, data: bytes) -> None:
        self.sock.sendall(data)

    def _read_packet(self, timeout: float) -> bytes:
        """One whole packet (blocking up to ``timeout``), for the handshake only."""
        self.sock.settimeout(timeout)
        while True:
            size = complete_packet_size(self._buffer)
            if size:
                packet = bytes(self._buffer[:size])
                del self._buffer[:size]
                return packet
            try:
                chunk = self.sock.recv(65536)
            except TimeoutError as exc:
                raise MqttWireError(
                    f"no answer from MQTT broker {self.host}:{self.port} within {timeout} s"
                ) from exc
            if not chunk:
                raise MqttWireError(f"MQTT broker {self.host}:{self.port} closed the connection")
            self._buffer += chunk

    def receive(self, timeout: float, on_publish: Callable[[bytes], None] | None = None) -> int:
        """Read what arrives within ``timeout`` s; returns the number of PUBLISH packets completed.

        ``on_publish`` sees whole packets (use :func:`parse_publish`); without it the packets are
        only counted, which is the cheap path a receiving process uses at full rate.
        """
        self.sock.settimeout(timeout)
        try:
            chunk = self.sock.recv(1 << 20)
        except TimeoutError:
            return 0
        if not chunk:
            raise MqttWireError(f"MQTT broker {self.host}:{self.port} closed the connection")
        buffer = self._buffer
        buffer += chunk
        count = 0
        index = 0
        end = len(buffer)
        while index + 2 <= end:
            first = buffer[index]
            length = 0
            shift = 0
            pos = index + 1
            while True:
                if pos >= end:
                    length = -1
                    break
                byte = buffer[pos]
                length |= (byte & 0x7F) << shift
                pos += 1
                if not byte & 0x80:
                    break
                shift += 7
            if length < 0 or pos + length > end:
                break
            if first >> 4 == 3:
                count += 1
                if on_publish is not None:
                    on_publish(bytes(buffer[index : pos + length]))
            index = pos + length
        if index:
            del buffer[:index]
        return count

    def close(self) -> None:
        try:
            self.sock.sendall(b"\xe0\x00")
        except OSError:
            pass
        self.sock.close()
