"""The MQTT reader's packet cutter in C (``_mqtt_native.c``) and the Python loop of
``MqttConnection._handle`` read the same streams alike: the same publications delivered in the
same order, the same replies written, the same state (acknowledgements awaited, QoS 2 ids, SUBACKs)
and bytes left over, and for a malformed stream the same error. No broker is involved: the
connection reads from a socket that hands out the stream's chunks one ``recv`` at a time."""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from flowbroker_nodes import mqtt_wire
from flowbroker_nodes.mqtt_wire import MqttConnection, encode_length
from native_support import require_compiled

_NATIVE = mqtt_wire._cut_loaded()


class _Socket:
    """A connected socket as far as ``MqttConnection.read`` and ``_send`` use one."""

    def __init__(self, chunks: list[bytes]) -> None:
        self.chunks = iter(chunks)
        self.written: list[bytes] = []
        self.closed = False

    def recv(self, size: int, flags: int = 0) -> bytes:
        return next(self.chunks)

    def sendall(self, data: bytes) -> None:
        self.written.append(bytes(data))

    def close(self) -> None:
        self.closed = True


#: What one way of reading did with a stream: per read its count of publications, then the
#: publications, the writes, the connection's state and bytes left, and the error raised.
Outcome = dict[str, Any]


def _read(chunks: list[bytes], pending: dict[int, int], incoming: set[int]) -> Outcome:
    conn = MqttConnection("127.0.0.1", 1883, "test")
    sock = _Socket(chunks)
    conn.sock = sock  # type: ignore[assignment]
    conn.pending = dict(pending)
    conn._incoming = set(incoming)
    got: list[tuple[Any, ...]] = []
    counts: list[int] = []
    error = None
    try:
        for _ in chunks:
            counts.append(conn.read(0, lambda *m: got.append(m)))
    except Exception as exc:  # what is raised, with its message, is compared
        error = (type(exc).__name__, str(exc))
    for topic, payload, qos, retain in got:
        assert (type(topic), type(payload), type(qos), type(retain)) == (str, bytes, int, bool)
    return {
        "counts": counts,
        "publications": got,
        "written": sock.written,
        "closed": sock.closed,
        "pending": conn.pending,
        "incoming": conn._incoming,
        "subacks": conn._subacks,
        "left": bytes(conn._buffer),
        "error": error,
    }


Paths = Callable[..., tuple[Outcome, Outcome]]


@pytest.fixture
def paths(monkeypatch: pytest.MonkeyPatch) -> Iterator[Paths]:
    """Reads a stream, cut into chunks, with the C cutter and without it."""
    native = require_compiled(_NATIVE, "flowbroker_nodes._mqtt_native")

    def run(
        chunks: list[bytes], pending: dict[int, int] | None = None, incoming: set[int] | None = None
    ) -> tuple[Outcome, Outcome]:
        outcomes = []
        for cut in (native, None):
            monkeypatch.setattr(mqtt_wire, "_cut", cut)
            outcomes.append(_read(chunks, pending or {}, incoming or set()))
        monkeypatch.setattr(mqtt_wire, "_cut", native)
        return outcomes[0], outcomes[1]

    yield run


def _publish(
    topic: bytes, payload: bytes, qos: int, retain: bool, packet_id: int, dup: bool = False
) -> bytes:
    first = 0x30 | (qos << 1) | int(retain) | (0x08 if dup else 0)
    body = len(topic).to_bytes(2, "big") + topic + (packet_id.to_bytes(2, "big") if qos else b"") + payload
    return bytes([first]) + encode_length(len(body)) + body


_TOPICS = [b"a", b"sensors/floor-1/temperature", b"", "caf\u00e9/\u6e29\u5ea6".encode(), b"x" * 300]
#: topics that are not valid UTF-8: decoded with U+FFFD where they fail, as Python decodes them
_BAD_TOPICS = [b"bad\xff", b"\xc3", b"half\xe6\xb8", b"\xed\xa0\x80surrogate", b"ok/\x80\x80"]
#: Remaining Lengths at the edges of its one-, two- and three-byte encodings
_EDGES = [0, 1, 126, 127, 128, 129, 16_383, 16_384, 16_385]


def _random_publish(rng: random.Random, bad_topics: bool = False) -> bytes:
    qos = rng.choice((0, 0, 1, 2))
    topic = rng.choice(_TOPICS + (_BAD_TOPICS if bad_topics else []))
    head = 2 + len(topic) + (2 if qos else 0)
    target = rng.choice(_EDGES + [rng.randrange(0, 2000)])
    size = max(0, target - head)
    payload = bytes(rng.randrange(256) for _ in range(min(size, 64))) * (size // 64 + 1)
    return _publish(topic, payload[:size], qos, rng.random() < 0.3, rng.randrange(1, 12), rng.random() < 0.1)


def _random_other(rng: random.Random) -> bytes:
    packet_id = rng.randrange(1, 12).to_bytes(2, "big")
    return rng.choice(
        (
            b"\x40\x02" + packet_id,  # PUBACK
            b"\x50\x02" + packet_id,  # PUBREC
            b"\x62\x02" + packet_id,  # PUBREL
            b"\x70\x02" + packet_id,  # PUBCOMP
            b"\x90\x03" + packet_id + rng.choice((b"\x00", b"\x01", b"\x80")),  # SUBACK
            b"\xd0\x00",  # PINGRESP
        )
    )


def _random_stream(rng: random.Random, count: int, bad_topics: bool = False) -> bytes:
    return b"".join(
        _random_publish(rng, bad_topics) if rng.random() < 0.75 else _random_other(rng) for _ in range(count)
    )


def _random_state(rng: random.Random) -> tuple[dict[int, int], set[int]]:
    pending = {i: rng.choice((0x40, 0x50, 0x70)) for i in range(1, 12) if rng.random() < 0.5}
    incoming = {i for i in range(1, 12) if rng.random() < 0.3}
    return pending, incoming


def _random_chunks(rng: random.Random, data: bytes) -> list[bytes]:
    cuts = sorted({0, len(data), *(rng.randrange(len(data) + 1) for _ in range(rng.randrange(0, 6)))})
    return [data[a:b] for a, b in zip(cuts, cuts[1:], strict=False)] or [data]


def test_random_streams_in_random_chunks(paths: Paths) -> None:
    rng = random.Random(20240611)
    for _ in range(300):
        data = _random_stream(rng, rng.randrange(1, 40), bad_topics=rng.random() < 0.3)
        pending, incoming = _random_state(rng)
        native, python = paths(_random_chunks(rng, data), pending, incoming)
        assert native == python
        assert python["error"] is None and python["left"] == b""


def test_a_stream_split_at_every_byte(paths: Paths) -> None:
    rng = random.Random(7)
    pending, incoming = {3: 0x40, 4: 0x50, 5: 0x70}, {6}
    data = b"".join(
        (
            _publish(b"a/b", b"first", 0, False, 0),
            _publish(b"a/b", b"x" * 130, 1, True, 9),  # a two-byte Remaining Length
            b"\x40\x02\x00\x03",
            _publish("t\u00e9".encode(), b"", 0, True, 0),
            _publish(b"q2", b"two", 2, False, 6),  # a QoS 2 id already delivered: not again
            _publish(b"q2", b"two", 2, False, 7),
            b"\x62\x02\x00\x07\xd0\x00",
            _publish(b"bad\xfe", b"z", 1, False, 10),
            _random_stream(rng, 6, bad_topics=True),
            _publish(b"a/b", b"last", 0, False, 0),
        )
    )
    for at in range(len(data) + 1):
        native, python = paths([data[:at], data[at:]] if 0 < at < len(data) else [data], pending, incoming)
        assert native == python, f"split at {at}"
        assert python["left"] == b"" and python["error"] is None
    # and one byte per read
    native, python = paths([data[i : i + 1] for i in range(len(data))], pending, incoming)
    assert native == python
    assert len(python["publications"]) >= 8 and python["left"] == b""


def test_long_publications_across_reads(paths: Paths) -> None:
    rng = random.Random(11)
    big = bytes(rng.randrange(256) for _ in range(4096)) * 512  # 2 MB: a four-byte Remaining Length
    data = b"".join(
        (
            _publish(b"big", big, 0, False, 0),
            _publish(b"small", b"s", 1, False, 2),
            _publish(b"big", big, 1, True, 3),
            _publish(b"big", big[:16_384], 0, False, 0),
        )
    )
    for _ in range(10):
        native, python = paths(_random_chunks(rng, data))
        assert native == python
    assert [p[1] for p in python["publications"]] == [big, b"s", big, big[:16_384]]
    assert b"".join(python["written"]) == b"\x40\x02\x00\x02\x40\x02\x00\x03"


def test_remaining_lengths_of_every_width_even_longer_than_needed(paths: Paths) -> None:
    # MQTT asks for the shortest encoding; the reader takes a longer one as well
    packets = []
    for length in (0, 5, 127, 16_000):
        body = b"\x00\x01t" + b"p" * length
        size = encode_length(len(body))
        for width in range(len(size), 5):
            # the same length in more bytes: continuation bits over trailing zero groups
            longer = bytes(b | 0x80 for b in size) + b"\x80" * (width - len(size) - 1) + b"\x00"
            packets.append(b"\x30" + (size if width == len(size) else longer) + body)
    data = b"".join(packets)
    for at in range(len(data) + 1):
        native, python = paths([data[:at], data[at:]] if 0 < at < len(data) else [data])
        assert native == python
    assert len(python["publications"]) == len(packets) == 14
    assert python["left"] == b"" and python["error"] is None


@pytest.mark.parametrize(
    "bad",
    [
        b"\x30\xff\xff\xff\xff\x7f",  # a fifth byte of Remaining Length: malformed
        b"\x40\x80\x80\x80\x80\x01",
        b"\x30\x85\x80\x80\x80\x00\x00\x01tab",  # malformed, though five bytes follow
        b"\x30\x00",  # a PUBLISH too short for its topic's length
        b"\x30\x01\x00",
        b"\x30\x03\x00\x05a",  # a topic longer than its packet
        b"\x32\x04\x00\x02ab",  # no room for the packet id at QoS 1
        b"\x36\x06\x00\x01a\x00\x05x",  # QoS 3
    ],
)
def test_malformed_packets_are_left_to_the_python_loop(paths: Paths, bad: bytes) -> None:
    rng = random.Random(bad)
    before, after = _random_stream(rng, 5), _random_stream(rng, 3)
    for data in (bad, before + bad, before + bad + after):
        for chunks in ([data], _random_chunks(rng, data), [data[i : i + 1] for i in range(len(data))]):
            native, python = paths(chunks)
            assert native == python


def test_the_malformed_length_error_and_the_publications_before_it(paths: Paths) -> None:
    data = (
        _publish(b"t", b"one", 0, False, 0)
        + b"\x30\xff\xff\xff\xff\x7f"
        + _publish(b"t", b"two", 0, False, 0)
    )
    native, python = paths([data])
    assert native == python
    assert python["error"] == ("MqttError", "MQTT broker 127.0.0.1:1883: malformed Remaining Length")
    assert python["publications"] == [("t", b"one", 0, False)] and python["closed"]


def test_invalid_utf8_topics_are_decoded_with_replacement(paths: Paths) -> None:
    data = b"".join(_publish(topic, b"p", 0, False, 0) for topic in _BAD_TOPICS)
    native, python = paths([data])
    assert native == python
    assert [t for t, *_ in native["publications"]] == [t.decode("utf-8", "replace") for t in _BAD_TOPICS]


def test_a_failing_delivery_leaves_the_connection_as_the_python_loop_does(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    native = require_compiled(_NATIVE, "flowbroker_nodes._mqtt_native")
    data = b"".join(_publish(b"t", str(i).encode(), i % 2, False, i + 1) for i in range(6))

    def deliver_to(got: list[bytes]) -> Callable[[str, bytes, int, bool], None]:
        def deliver(topic: str, payload: bytes, qos: int, retain: bool) -> None:
            if payload == b"3":
                raise RuntimeError("full")
            got.append(payload)

        return deliver

    outcomes = []
    for cut in (native, None):
        monkeypatch.setattr(mqtt_wire, "_cut", cut)
        conn = MqttConnection("127.0.0.1", 1883, "test")
        sock = _Socket([data])
        conn.sock = sock  # type: ignore[assignment]
        got: list[bytes] = []
        with pytest.raises(RuntimeError, match="full"):
            conn.read(0, deliver_to(got))
        # the publications before the failing one delivered, nothing written, the read dropped
        outcomes.append((got, sock.written, bytes(conn._buffer)))
    assert outcomes[0] == outcomes[1] == ([b"0", b"1", b"2"], [], b"")


def test_cut_on_its_own() -> None:
    cut = require_compiled(_NATIVE, "flowbroker_nodes._mqtt_native")
    data = bytearray(_publish(b"t", b"a", 0, True, 0) + _publish(b"t", b"b", 1, False, 0x1234) + b"\xd0\x00")
    assert cut(data, 0) == ([("t", b"a", 0, True), ("t", b"b", 1, False)], b"\x40\x02\x12\x34", 14)
    assert cut(data, 14) is None  # a PINGRESP: the Python loop's
    assert cut(data, 16) is None  # nothing left
    assert cut(bytes(data), 6) == ([("t", b"b", 1, False)], b"\x40\x02\x12\x34", 14)
    with pytest.raises(ValueError):
        cut(data, -1)


def test_the_subscribers_messages_carry_their_reads_arrival() -> None:
    import queue
    import time

    from flowbroker_nodes.base import ArrivedDescriptor
    from flowbroker_nodes.mqtt_subscribe import MqttMessage, Node

    node = Node.__new__(Node)
    node._inbox = queue.SimpleQueue()
    conn = MqttConnection("127.0.0.1", 1883, "test")
    conn.sock = _Socket([_publish(b"t/0", b"zero", 0, True, 0) + _publish(b"t/1", b"one", 1, False, 5)])  # type: ignore[assignment]
    before = time.time()
    assert conn.read(0, node._deliverer(conn)) == 2
    assert before <= conn.arrived <= time.time()
    first, second = node._inbox.get_nowait(), node._inbox.get_nowait()
    assert first == MqttMessage(ArrivedDescriptor(conn.arrived, 0), {}, b"zero", "t/0", 0, True)
    assert second == MqttMessage(ArrivedDescriptor(conn.arrived, 1), {}, b"one", "t/1", 1, False)
    assert (second.md.format, second.md.encoding, second.md.coded_char_set_id) == ("MQSTR   ", 546, 1208)
    assert first.md is not second.md and first.properties is not second.properties
