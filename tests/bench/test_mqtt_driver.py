"""The lean MQTT load driver against the local Mosquitto: packets, counts, a paced step, a closed loop."""

from __future__ import annotations

import os
import time
import uuid

import pytest
from flowbroker.bench import mst
from flowbroker.bench.peers import loadgen, mqttwire


def test_remaining_length_encoding() -> None:
    assert mqttwire.encode_length(0) == b"\x00"
    assert mqttwire.encode_length(127) == b"\x7f"
    assert mqttwire.encode_length(128) == b"\x80\x01"
    assert mqttwire.encode_length(16_383) == b"\xff\x7f"
    assert mqttwire.encode_length(268_435_455) == b"\xff\xff\xff\x7f"
    with pytest.raises(ValueError, match="out of range"):
        mqttwire.encode_length(268_435_456)


def test_publish_packet_round_trip() -> None:
    packet = mqttwire.publish_packet("a/b", b"x" * 300)
    assert packet[0] == 0x30
    assert mqttwire.parse_publish(packet) == ("a/b", b"x" * 300)
    with pytest.raises(mqttwire.MqttWireError, match="not a PUBLISH"):
        mqttwire.parse_publish(b"\x20\x02\x00\x00")


def test_connect_refused_port_is_a_precise_error() -> None:
    with pytest.raises(mqttwire.MqttWireError, match=r"cannot connect to MQTT broker 127\.0\.0\.1:9"):
        mqttwire.MqttWire("127.0.0.1", 9, timeout=1)


@pytest.mark.mqtt
@pytest.mark.timeout(60)
def test_every_publish_is_counted_across_chunk_boundaries(mqtt_address: tuple[str, int]) -> None:
    host, port = mqtt_address
    topic = f"fbtest/{uuid.uuid4().hex}"
    receiver = mqttwire.MqttWire(host, port)
    receiver.subscribe(topic)
    sender = mqttwire.MqttWire(host, port)
    sizes = [0, 1, 127, 128, 1024, 20_000]
    packets = [
        mqttwire.publish_packet(topic, bytes([65 + i % 26]) * sizes[i % len(sizes)]) for i in range(3000)
    ]
    sender.send(b"".join(packets))
    seen: list[bytes] = []
    deadline = time.monotonic() + 20
    while len(seen) < len(packets) and time.monotonic() < deadline:
        receiver.receive(0.5, seen.append)
    sender.close()
    receiver.close()
    assert len(seen) == len(packets)
    assert [len(mqttwire.parse_publish(p)[1]) for p in seen[:6]] == sizes


@pytest.mark.mqtt
@pytest.mark.timeout(60)
def test_paced_step_through_the_broker_alone_is_sustainable(mqtt_address: tuple[str, int]) -> None:
    host, port = mqtt_address
    topic = f"fbtest/{uuid.uuid4().hex}"
    m = loadgen.paced_step(host, port, topic, topic, [b"p" * 1024], 2000, warmup_s=0.5, window_s=2.0)
    assert m.sent > 0 and m.received == m.sent and m.lost == 0
    assert m.window_sent == pytest.approx(4000, rel=0.1)
    assert m.sample == b"p" * 1024
    verdict = mst.judge(
        m.rate,
        m.delivered_rate,
        m.backlog,
        m.lost,
        m.last_arrival_after_stop_s,
        sent_rate=m.window_sent / m.window_s,
    )
    assert verdict.lost == 0 and verdict.backlog_end < 2000


@pytest.mark.mqtt
@pytest.mark.timeout(60)
def test_closed_loop_keeps_n_in_flight(mqtt_address: tuple[str, int]) -> None:
    host, port = mqtt_address
    topic = f"fbtest/{uuid.uuid4().hex}"
    m = loadgen.closed_loop(
        host, port, topic, topic, [b"{}"], 10, warmup_s=0.3, window_s=1.0, engine_pids=[os.getpid()]
    )
    assert m.received > 10 and m.sample == b"{}"
    assert m.cpu_s >= 0.0


def test_cpu_seconds_reads_proc_stat() -> None:
    before = loadgen.cpu_seconds([os.getpid()])
    deadline = time.process_time() + 0.2
    while time.process_time() < deadline:
        pass
    assert loadgen.cpu_seconds([os.getpid()]) - before >= 0.1
    assert loadgen.cpu_seconds([2**22 + 12345]) == 0.0
