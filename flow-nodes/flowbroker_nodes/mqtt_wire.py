"""MQTT 3.1.1 on a plain socket, read and written by the flow threads themselves.

The MQTT nodes need a handful of packets: CONNECT, SUBSCRIBE, PUBLISH at QoS 0, 1 and 2 with
their acknowledgements, PINGREQ and DISCONNECT. Speaking them directly, as the queue manager's
blocking client speaks its own protocol, keeps a general-purpose client's callbacks, locks and
per-message objects off the path every message takes: a publication is a packet whose topic
part was encoded once, written with one ``sendall`` (or, at QoS 0, kept with the others its flow
thread makes in one turn and written with them, see :meth:`MqttConnection.publish_buffered`),
and one ``recv`` brings in every publication the socket holds, parsed in one pass.

A connection is shared by the flow threads of one node: writes take a lock of their own, and
reads are made by one thread at a time (the node's reader lock), which is what the MQTT nodes
already arrange. Keep-alive is the client's duty: :meth:`MqttConnection.service` sends a PINGREQ
when nothing was sent for half the keep-alive interval and declares the connection lost when
the broker stays silent for a whole interval after it.
"""

from __future__ import annotations

import select
import socket
import struct
import threading
import time
from collections.abc import Callable

from esql.native import compiled

#: CONNACK return codes of MQTT 3.1.1 (§3.2.2.3).
CONNACK_CODES = {
    1: "unacceptable protocol version",
    2: "client identifier rejected",
    3: "server unavailable",
    4: "bad user name or password",
    5: "not authorized",
}

#: ``on_publish(topic, payload, qos, retain)``: a publication arrived (once, even at QoS 2).
OnPublish = Callable[[str, bytes, int, bool], None]

#: QoS 1/2 publications one connection leaves unacknowledged at most: Mosquitto's default
#: max_inflight_messages, past which it acknowledges a QoS 2 publication of a 3.1.1 client
#: without delivering it.
MAX_INFLIGHT = 20

#: Bytes of QoS 0 publications a connection keeps for one write at most, by default
#: (``FLOWBROKER_MQTT_WRITE_BUFFER``); 0 writes each publication as it is made.
WRITE_BUFFER = 65536


#: ``cut(data, index)``: the PUBLISH packets at QoS 0 and 1 from ``index`` on as
#: ``([(topic, payload, qos, retain), ...], PUBACKs or None, index past them)``, or None when the
#: packet at ``index`` is not one of them (``_mqtt_native.c``); None when that module is not built.
_Cut = Callable[
    [bytes | bytearray, int], "tuple[list[tuple[str, bytes, int, bool]], bytes | None, int] | None"
]


def _cut_loaded() -> _Cut | None:
    """The packet cutter in C, when it was built and ``FLOWBROKER_PURE_PYTHON`` is not set."""
    native = compiled("flowbroker_nodes._mqtt_native")
    if native is None:
        return None
    cut: _Cut = native.cut
    return cut


_cut = _cut_loaded()


class MqttError(ConnectionError):
    """The broker refused something, broke the conversation or could not be reached."""


def encode_length(length: int) -> bytes:
    """MQTT's variable-length Remaining Length field."""
    if length < 0 or length > 268_435_455:
        raise ValueError(f"MQTT remaining length {length} is out of range 0..268435455")
    out = bytearray()
    while True:
        byte = length & 0x7F
        length >>= 7
        if length:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def encode_string(text: str) -> bytes:
    data = text.encode("utf-8")
    if len(data) > 0xFFFF:
        raise ValueError(f"MQTT string of {len(data)} bytes exceeds 65535")
    return struct.pack("!H", len(data)) + data


def connect_packet(client_id: str, keepalive: int, clean_session: bool = True) -> bytes:
    body = (
        encode_string("MQTT")
        + bytes([4, 0x02 if clean_session else 0])
        + struct.pack("!H", keepalive)
        + encode_string(client_id)
    )
    return b"\x10" + encode_length(len(body)) + body


def subscribe_packet(packet_id: int, topic: str, qos: int) -> bytes:
    body = struct.pack("!H", packet_id) + encode_string(topic) + bytes([qos])
    return b"\x82" + encode_length(len(body)) + body


def publish_packet(
    topic: bytes, payload: bytes, qos: int, retain: bool, packet_id: int, dup: bool = False
) -> bytes:
    """A PUBLISH; ``topic`` is the topic already encoded as an MQTT string (see :func:`encode_string`)."""
    first = 0x30 | (qos << 1) | (1 if retain else 0) | (0x08 if dup else 0)
    if qos:
        length = len(topic) + 2 + len(payload)
        return b"".join((bytes([first]), encode_length(length), topic, packet_id.to_bytes(2, "big"), payload))
    return b"".join((bytes([first]), encode_length(len(topic) + len(payload)), topic, payload))


class MqttConnection:
    """One MQTT session with ``clean_session`` set; see the module docstring for its threading."""

    def __init__(
        self, host: str, port: int, client_id: str, *, keepalive: int = 60, write_buffer: int = WRITE_BUFFER
    ) -> None:
        self.host, self.port = host, port
        self.client_id = client_id
        self.keepalive = keepalive
        self.sock: socket.socket | None = None
        self._buffer = bytearray()
        self._write = threading.Lock()
        #: QoS 0 publications made and not yet written (see :meth:`publish_buffered`), and their bytes.
        self._out: list[bytes] = []
        self._out_bytes = 0
        self.write_buffer = write_buffer
        self._next_id = 0
        #: Outgoing QoS 1/2 publications not yet completed: packet id → awaited packet type.
        self.pending: dict[int, int] = {}
        #: Incoming QoS 2 packet ids delivered and awaiting their PUBREL (a resent PUBLISH is not redelivered).
        self._incoming: set[int] = set()
        self._subacks: dict[int, bytes] = {}
        self._last_sent = 0.0
        self._last_heard = 0.0
        self._ping_sent = 0.0
        #: The wall-clock time of the last read that brought data: when its publications arrived.
        self.arrived = 0.0

    # -- the session ---------------------------------------------------------------------------

    def connect(self, timeout: float) -> MqttConnection:
        where = f"MQTT broker {self.host}:{self.port}"
        try:
            sock = socket.create_connection((self.host, self.port), timeout=timeout)
        except OSError as exc:
            raise MqttError(f"cannot reach {where}: {exc.strerror or exc}") from exc
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.sock = sock
        try:
            self._send(connect_packet(self.client_id, self.keepalive))
            deadline = time.monotonic() + timeout
            packet = self._read_one(deadline)
            if packet[0] != 0x20 or len(packet) < 4:
                raise MqttError(f"{where}: expected CONNACK, got packet type {packet[0] >> 4}")
            if packet[3]:
                reason = CONNACK_CODES.get(packet[3], f"return code {packet[3]}")
                raise MqttError(f"{where}: broker refused the connection: {reason}")
        except BaseException:
            self.close(polite=False)
            raise
        sock.settimeout(None)  # blocking from now on: reads wait in select(), never in recv()
        self._last_heard = time.monotonic()
        return self

    def subscribe(self, topic: str, qos: int, timeout: float, on_publish: OnPublish) -> None:
        """Subscribe and wait for the SUBACK; publications arriving meanwhile go to ``on_publish``."""
        packet_id = self._packet_id()
        self._send(subscribe_packet(packet_id, topic, qos))
        deadline = time.monotonic() + timeout
        while packet_id not in self._subacks:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise MqttError(f"MQTT broker {self.host}:{self.port}: no SUBACK within {timeout:g} s")
            self.read(remaining, on_publish)
        granted = self._subacks.pop(packet_id)
        if granted[-1:] == b"\x80":
            raise MqttError(
                f"MQTT broker {self.host}:{self.port}: broker refused the subscription to {topic!r}"
            )

    def publish(self, topic: bytes, payload: bytes, qos: int = 0, retain: bool = False) -> int:
        """Send one publication; its packet id (0 at QoS 0), to wait for with :meth:`wait_done`."""
        if not qos:
            self._send(publish_packet(topic, payload, 0, retain, 0))
            return 0
        with self._write:
            if len(self.pending) >= MAX_INFLIGHT:
                raise MqttError(
                    f"MQTT broker {self.host}:{self.port}: {len(self.pending)} publications await "
                    f"acknowledgement, the most one connection may leave in flight"
                )
            packet_id = self._packet_id()
            self.pending[packet_id] = 0x40 if qos == 1 else 0x50  # PUBACK, else PUBREC
            self._send_locked(publish_packet(topic, payload, qos, retain, packet_id))
        return packet_id

    def publish_buffered(self, topic: bytes, payload: bytes, retain: bool = False) -> None:
        """Make a QoS 0 publication, written by the next :meth:`flush` (or any other write) with
        the others made before it, in order; written at once when the publications kept reach
        ``write_buffer`` bytes. A connection lost before the write loses them (QoS 0: at most once)."""
        length = len(topic) + len(payload)
        # the packet's parts are kept as they are, joined once for the write
        if length < 16384:  # a Remaining Length of one or two bytes, as encode_length makes it
            size = bytes((length,)) if length < 128 else bytes(((length & 0x7F) | 0x80, length >> 7))
        else:
            size = encode_length(length)
        head = (b"\x31" if retain else b"\x30") + size
        with self._write:
            self._out += (head, topic, payload)
            self._out_bytes += length + len(head)
            if self._out_bytes >= self.write_buffer:
                self._send_locked(b"")

    def flush(self) -> None:
        """Write the QoS 0 publications kept by :meth:`publish_buffered`, in one ``sendall``."""
        if self._out:
            with self._write:
                if self._out:
                    self._send_locked(b"")

    def done(self, packet_id: int) -> bool:
        """Whether the broker completed the QoS 1/2 publication ``packet_id``."""
        return packet_id not in self.pending

    def service(self) -> None:
        """Keep-alive: a PINGREQ when due, and a lost connection noticed (no read is made here)."""
        if not self.keepalive:
            return
        now = time.monotonic()
        if self._ping_sent and now - self._ping_sent > self.keepalive:
            raise MqttError(
                f"MQTT broker {self.host}:{self.port}: no answer to PINGREQ within {self.keepalive} s"
            )
        if not self._ping_sent and now - self._last_sent > self.keepalive / 2:
            self._ping_sent = now
            self._send(b"\xc0\x00")

    def close(self, polite: bool = True) -> None:
        sock, self.sock = self.sock, None
        if sock is None:
            return
        out, self._out, self._out_bytes = self._out, [], 0
        if polite:
            try:
                # publications still kept go out before the DISCONNECT, as if written already
                sock.sendall(b"".join((*out, b"\xe0\x00")))
            except OSError:
                pass
        sock.close()

    @property
    def connected(self) -> bool:
        return self.sock is not None

    # -- reading (one thread at a time) ----------------------------------------------------------

    def read(self, timeout: float, on_publish: OnPublish) -> int:
        """Wait up to ``timeout`` s for data, then handle every whole packet read; the publications seen."""
        sock = self.sock
        if sock is None:
            raise MqttError(f"MQTT broker {self.host}:{self.port}: not connected")
        if timeout > 0:
            readable, _, _ = select.select([sock], [], [], timeout)
            if not readable:
                return 0
        try:
            chunk = sock.recv(1 << 18, socket.MSG_DONTWAIT)
        except BlockingIOError:
            return 0
        except OSError as exc:
            self.close(polite=False)
            raise MqttError(
                f"MQTT broker {self.host}:{self.port}: connection lost: {exc.strerror or exc}"
            ) from exc
        if not chunk:
            self.close(polite=False)
            raise MqttError(f"MQTT broker {self.host}:{self.port}: connection lost (closed by the broker)")
        self._last_heard = time.monotonic()
        self.arrived = time.time()
        self._ping_sent = 0.0
        buffer = self._buffer
        if buffer:
            buffer += chunk
            data: bytes | bytearray = buffer
        else:
            data = chunk
        count = self._handle(data, on_publish)
        return count

    def _handle(self, data: bytes | bytearray, on_publish: OnPublish) -> int:
        count = 0
        index = 0
        end = len(data)
        #: the acknowledgements the packets read call for, written together once they are handled
        replies: list[bytes] = []
        cut = _cut
        while index + 2 <= end:
            if cut is not None:
                # the PUBLISH packets at QoS 0 and 1 from here on, cut in C; the loop below
                # handles the packet it stops at (any other, or one not all read yet)
                taken = cut(data, index)
                if taken is not None:
                    publications, acks, index = taken
                    for topic, payload, qos, retain in publications:
                        on_publish(topic, payload, qos, retain)
                    count += len(publications)
                    if acks:
                        replies.append(acks)
                    if index + 2 > end:
                        break
            first = data[index]
            byte = data[index + 1]
            if byte < 0x80:
                length, pos = byte, index + 2
            else:
                length, shift, pos = 0, 0, index + 1
                while True:
                    if pos >= end:
                        length = -1
                        break
                    byte = data[pos]
                    length |= (byte & 0x7F) << shift
                    pos += 1
                    if not byte & 0x80:
                        break
                    shift += 7
                    if shift > 21:
                        self.close(polite=False)
                        raise MqttError(f"MQTT broker {self.host}:{self.port}: malformed Remaining Length")
            if length < 0 or pos + length > end:
                break
            stop = pos + length
            kind = first >> 4
            if kind == 3:
                qos = (first >> 1) & 3
                topic_len = (data[pos] << 8) | data[pos + 1]
                start = pos + 2 + topic_len
                topic = bytes(data[pos + 2 : start]).decode("utf-8", "replace")
                if qos == 0:
                    on_publish(topic, bytes(data[start:stop]), 0, bool(first & 1))
                else:
                    packet_id = (data[start] << 8) | data[start + 1]
                    if qos == 1:
                        on_publish(topic, bytes(data[start + 2 : stop]), 1, bool(first & 1))
                        replies.append(b"\x40\x02" + packet_id.to_bytes(2, "big"))
                    else:
                        if packet_id not in self._incoming:
                            self._incoming.add(packet_id)
                            on_publish(topic, bytes(data[start + 2 : stop]), 2, bool(first & 1))
                        replies.append(b"\x50\x02" + packet_id.to_bytes(2, "big"))
                count += 1
            elif kind in (4, 5, 7):  # PUBACK, PUBREC, PUBCOMP of our publications
                packet_id = (data[pos] << 8) | data[pos + 1]
                if kind == 5:
                    if self.pending.get(packet_id) == 0x50:
                        self.pending[packet_id] = 0x70
                    replies.append(b"\x62\x02" + packet_id.to_bytes(2, "big"))  # PUBREL
                elif self.pending.get(packet_id) == kind << 4:
                    del self.pending[packet_id]
            elif kind == 6:  # PUBREL of an incoming QoS 2 publication
                packet_id = (data[pos] << 8) | data[pos + 1]
                self._incoming.discard(packet_id)
                replies.append(b"\x70\x02" + packet_id.to_bytes(2, "big"))
            elif kind == 9:
                self._subacks[(data[pos] << 8) | data[pos + 1]] = bytes(data[pos + 2 : stop])
            # PINGRESP (13) needs nothing more: hearing from the broker reset the ping above
            index = stop
        if replies:
            self._send(b"".join(replies))
        rest = data[index:]
        if isinstance(data, bytearray) and data is self._buffer:
            del self._buffer[:index]
        else:
            self._buffer = bytearray(rest)
        return count

    def _read_one(self, deadline: float) -> bytes:
        """One whole packet, for the CONNACK (nothing else can arrive before it)."""
        sock = self.sock
        assert sock is not None
        while True:
            size = complete_packet_size(self._buffer)
            if size:
                packet = bytes(self._buffer[:size])
                del self._buffer[:size]
                return packet
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise MqttError(f"MQTT broker {self.host}:{self.port}: no CONNACK in time")
            sock.settimeout(remaining)
            try:
                chunk = sock.recv(65536)
            except TimeoutError:
                continue
            except OSError as exc:
                raise MqttError(f"MQTT broker {self.host}:{self.port}: {exc.strerror or exc}") from exc
            if not chunk:
                raise MqttError(f"MQTT broker {self.host}:{self.port} closed the connection")
            self._buffer += chunk

    # -- writing -----------------------------------------------------------------------------------

    def _packet_id(self) -> int:
        for _ in range(65535):
            self._next_id = self._next_id % 65535 + 1
            if self._next_id not in self.pending and self._next_id not in self._subacks:
                return self._next_id
        raise MqttError(f"MQTT broker {self.host}:{self.port}: 65535 publications await acknowledgement")

    def _send(self, data: bytes) -> None:
        with self._write:
            self._send_locked(data)

    def _send_locked(self, data: bytes) -> None:
        sock = self.sock
        if sock is None:
            raise MqttError(f"MQTT broker {self.host}:{self.port}: not connected")
        out = self._out
        if out:
            # publications kept for a later write go first: packets leave in the order made
            if data:
                out.append(data)
            data = out[0] if len(out) == 1 else b"".join(out)
            self._out = []
            self._out_bytes = 0
        try:
            sock.sendall(data)
        except OSError as exc:
            self.close(polite=False)
            raise MqttError(
                f"MQTT broker {self.host}:{self.port}: connection lost: {exc.strerror or exc}"
            ) from exc
        self._last_sent = time.monotonic()


def complete_packet_size(buffer: bytearray) -> int:
    """Bytes of the first whole packet at the start of ``buffer``, or 0 while it is incomplete."""
    if len(buffer) < 2:
        return 0
    length = 0
    shift = 0
    pos = 1
    while True:
        if pos >= len(buffer):
            return 0
        byte = buffer[pos]
        length |= (byte & 0x7F) << shift
        pos += 1
        if not byte & 0x80:
            break
        shift += 7
    return pos + length if pos + length <= len(buffer) else 0
