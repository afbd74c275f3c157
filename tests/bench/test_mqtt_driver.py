"""The lean MQTT load driver against the local Mosquitto: packets, counts, a paced step, a closed loop."""

from __future__ import annotations

import multiprocessing
import os
import time
import uuid

import pytest
from flowbroker_bench import mst
from flowbroker_bench.peers import loadgen, mqttwire


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
def test_paced_step_delivers_every_message_it_sends(mqtt_address: tuple[str, int]) -> None:
    host, port = mqtt_address
    topic = f"fbtest/{uuid.uuid4().hex}"
    rate, warmup_s, window_s = 2000, 0.5, 2.0
    m = loadgen.paced_step(
        host, port, topic, topic, [b"p" * 1024], rate, warmup_s=warmup_s, window_s=window_s
    )
    # behaviour, whatever this machine's load: everything sent arrives, once, and the pacing
    # never sends ahead of its schedule
    assert m.sent > 0 and m.received == m.sent and m.lost == 0
    assert 0 < m.window_sent <= m.sent <= rate * (warmup_s + window_s)
    assert m.window_received <= m.received
    assert m.sample == b"p" * 1024
    assert m.backlog and all(0 <= t < window_s + 0.25 for t, _ in m.backlog)
    verdict = mst.judge(
        m.rate,
        m.delivered_rate,
        m.backlog,
        m.lost,
        m.last_arrival_after_stop_s,
        sent_rate=m.window_sent / m.window_s,
    )
    assert verdict.lost == 0
    print(
        f"paced step: offered {rate}/s, sent {m.window_sent / window_s:,.0f}/s, delivered {m.delivered_rate:,.0f}/s"
    )


def _burn() -> None:
    while True:
        pass


@pytest.mark.mqtt
@pytest.mark.timeout(60)
def test_closed_loop_keeps_n_in_flight_and_charges_the_engines_cpu(mqtt_address: tuple[str, int]) -> None:
    host, port = mqtt_address
    topic = f"fbtest/{uuid.uuid4().hex}"
    engine = multiprocessing.get_context("fork").Process(target=_burn, daemon=True)
    engine.start()
    try:
        assert engine.pid is not None
        m = loadgen.closed_loop(
            host, port, topic, topic, [b"{}"], 10, warmup_s=0.3, window_s=1.0, engine_pids=[engine.pid]
        )
    finally:
        engine.kill()
        engine.join(5)
    assert m.in_flight == 10 and m.received > 0 and m.sample == b"{}"
    # a process spinning through the whole window is charged CPU, never more than the window's
    # wall time plus the last receive's wait
    assert 0.0 < m.cpu_s <= m.window_s + 0.5 + 0.1
    assert m.cpu_ms_per_msg == pytest.approx(1000.0 * m.cpu_s / m.received)


def test_cpu_seconds_reads_proc_stat() -> None:
    before = loadgen.cpu_seconds([os.getpid()])
    deadline = time.process_time() + 0.2
    while time.process_time() < deadline:
        pass
    assert loadgen.cpu_seconds([os.getpid()]) - before >= 0.1
    assert loadgen.cpu_seconds([2**22 + 12345]) == 0.0
