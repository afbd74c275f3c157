"""Structure-aware fuzzing of the wire protocol: mostly-valid frames, then damaged ones.

The frame decoder must give back exactly the frames that were encoded up to the first damaged
byte and then either more well-typed frames or a FrameError naming an offset at or after that
byte — never anything else. The real server, fed the same streams, must go on serving fresh
connections without losing a committed persistent message.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import orjson
import pytest
from flowbroker.qm.client import Client, MessageDescriptor, QMError
from flowbroker.qm.harness import QueueManagerProcess
from flowbroker.qm.protocol import (
    HEADER_SIZE,
    OP_HELLO,
    FrameDecoder,
    FrameError,
    encode_frame,
    encode_message,
    split_messages,
)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytestmark = pytest.mark.timeout(300)

SENTINEL_QUEUE = "FUZZ%SENTINEL"  # '%' never appears in generated text, so no fuzz frame names it
FUZZ_QUEUE = "FUZZ.Q"
MAX_FRAME = 1 << 16

_text = st.text(alphabet=st.characters(blacklist_characters="%", blacklist_categories=("Cs",)), max_size=12)
_scalars = (
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**63 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | _text
)
_json = st.recursive(
    _scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_text, inner, max_size=4),
    max_leaves=10,
)
_keys = st.sampled_from(
    [
        "q",
        "name",
        "topic",
        "queue",
        "max",
        "wait",
        "sync",
        "browse",
        "cursor",
        "msg_id",
        "correl_id",
        "retain",
        "durable",
        "filter",
        "action",
        "attrs",
        "pattern",
        "noreply",
        "purge",
        "replace",
    ]
)
_values = st.one_of(
    _json,
    st.sampled_from([FUZZ_QUEUE, "SYSTEM.DEFAULT.LOCAL.QUEUE", "SYSTEM.BROKER.ECHO", "a/b", "#", "+/x"]),
    st.sampled_from(["00", "zz", "ab" * 24, ""]),
    st.integers(-5, 5),
)
_args = st.none() | st.dictionaries(_keys | _text, _values, max_size=6) | _json


@st.composite
def _messages(draw: st.DrawFn) -> bytes:
    md = MessageDescriptor(
        correl_id=draw(st.binary(max_size=24)),
        persistence=draw(st.integers(0, 2)),
        priority=draw(st.integers(-1, 9)),
        expiry=draw(st.sampled_from([-1, 1, 600])),
        reply_to_q=draw(st.sampled_from(["", FUZZ_QUEUE, "NO.SUCH.Q"])),
        format=draw(st.sampled_from(["", "MQSTR", "MQHRF2"])),
    )
    props = draw(st.none() | st.dictionaries(_text, _scalars, max_size=3))
    return encode_message(md, props, draw(st.binary(max_size=64)))


_tails = st.binary(max_size=80) | st.lists(_messages(), max_size=3).map(b"".join)


@dataclass
class Frame:
    op: int
    rid: int
    args: Any
    tail: bytes

    def encode(self) -> bytes:
        return encode_frame(self.op, self.rid, self.args, self.tail)


_ops = st.integers(2, 17) | st.integers(0, 255)
_frames = st.builds(Frame, _ops, st.integers(0, 2**32 - 1), _args, _tails)


@dataclass
class Stream:
    frames: list[Frame]
    data: bytes
    damaged_at: int | None  # first byte that differs from the encoding, None when intact
    truncated: bool


@st.composite
def _streams(draw: st.DrawFn) -> Stream:
    frames = draw(st.lists(_frames, min_size=1, max_size=6))
    data = bytearray(b"".join(f.encode() for f in frames))
    kind = draw(st.sampled_from(["intact", "truncate", "flip", "length", "insert"]))
    if kind == "intact":
        return Stream(frames, bytes(data), None, False)
    if kind == "truncate":
        cut = draw(st.integers(0, len(data) - 1))
        return Stream(frames, bytes(data[:cut]), None, True)
    if kind == "flip":
        at = draw(st.integers(0, len(data) - 1))
        data[at] ^= 1 << draw(st.integers(0, 7))
        return Stream(frames, bytes(data), at, False)
    starts = _starts(frames)
    if kind == "length":
        j = draw(st.integers(0, len(frames) - 1))
        length = draw(st.integers(0, 2**32 - 1) | st.integers(0, 64))
        data[starts[j] : starts[j] + 4] = length.to_bytes(4, "little")
        return Stream(frames, bytes(data), starts[j], False)
    at = draw(st.integers(0, len(data)))
    data[at:at] = draw(st.binary(min_size=1, max_size=12))
    return Stream(frames, bytes(data), at, False)


def _starts(frames: list[Frame]) -> list[int]:
    out, pos = [], 0
    for f in frames:
        out.append(pos)
        pos += len(f.encode())
    return out


def _decoded(f: Frame) -> tuple[int, int, Any, bytes]:
    return f.op, f.rid, orjson.loads(orjson.dumps(f.args)) if f.args is not None else None, f.tail


def _feed(data: bytes, chunks: list[int]) -> tuple[list[tuple[int, int, Any, bytes]], FrameError | None, int]:
    dec = FrameDecoder(MAX_FRAME)
    out: list[tuple[int, int, Any, bytes]] = []
    pos = 0
    sizes: Iterator[int] = iter(chunks * (len(data) + 1))
    try:
        while pos < len(data):
            size = next(sizes)
            out.extend(dec.feed(data[pos : pos + size]))
            pos += size
    except FrameError as exc:
        return out, exc, dec.pending
    return out, None, dec.pending


def _well_typed(frame: tuple[int, int, Any, bytes]) -> bool:
    op, rid, args, tail = frame
    return (
        0 <= op <= 255
        and 0 <= rid < 2**32
        and isinstance(tail, bytes)
        and (args is None or isinstance(args, dict | list | str | int | float | bool))
    )


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_streams(), st.lists(st.integers(1, 97), min_size=1, max_size=5))
def test_decoder_gives_back_what_was_encoded_or_a_frame_error(stream: Stream, chunks: list[int]) -> None:
    frames, error, pending = _feed(stream.data, chunks)
    expected = [_decoded(f) for f in stream.frames if len(f.encode()) + 4 <= MAX_FRAME + 4]
    starts = _starts(stream.frames)
    ends = [s + len(f.encode()) for s, f in zip(starts, stream.frames, strict=True)]
    if stream.damaged_at is None:
        # Intact, or cut short: every whole frame comes back, the cut one waits for more bytes.
        whole = sum(1 for e in ends if e <= len(stream.data))
        assert error is None
        assert frames == expected[:whole]
        assert pending == len(stream.data) - (ends[whole - 1] if whole else 0)
    else:
        intact = sum(1 for e in ends if e <= stream.damaged_at)
        assert frames[: min(intact, len(frames))] == expected[: min(intact, len(frames))]
        assert all(_well_typed(f) for f in frames)
        if error is not None:
            # bytes inserted after the last frame damage nothing before them
            first_damaged = starts[intact] if intact < len(starts) else ends[-1]
            assert first_damaged <= error.offset <= len(stream.data) + HEADER_SIZE
            assert error.reason and "byte offset" in str(error)
    for _op, _rid, _args, tail in frames:
        try:
            assert b"".join(split_messages(tail)) == tail
        except QMError as exc:
            assert exc.reason_code == 2196 and "byte offset" in exc.reason


@pytest.fixture(scope="module")
def fuzz_target(qm_process: QueueManagerProcess) -> Iterator[tuple[QueueManagerProcess, list[bytes]]]:
    with qm_process.client() as c:
        c.define_queue(FUZZ_QUEUE, replace=True, max_depth=1_000_000)
        c.define_queue(SENTINEL_QUEUE, replace=True)
        c.purge(SENTINEL_QUEUE)
        bodies = [b"committed-%d" % i for i in range(5)]
        for body in bodies:
            c.put(SENTINEL_QUEUE, body, MessageDescriptor(persistence=1))
        c.define_user("fuzzer", "fuzzer-password")
    yield qm_process, bodies


def _read_until_closed(s: socket.socket) -> None:
    s.settimeout(15)
    while s.recv(65536):
        pass


@settings(max_examples=120, deadline=None, suppress_health_check=list(HealthCheck))
@given(stream=_streams())
def test_server_survives_damaged_frames(
    fuzz_target: tuple[QueueManagerProcess, list[bytes]], stream: Stream
) -> None:
    qm, bodies = fuzz_target
    with socket.create_connection(("127.0.0.1", qm.port)) as s:
        s.sendall(encode_frame(OP_HELLO, 1, {"user": "fuzzer", "password": "fuzzer-password"}))
        s.sendall(stream.data)
        s.shutdown(socket.SHUT_WR)
        _read_until_closed(s)
    with qm.client() as c:
        c.ping()
        assert [m.body for m in c.browse(SENTINEL_QUEUE)] == bodies
        c.backout()


def test_server_restart_after_fuzzing_keeps_committed_messages(
    fuzz_target: tuple[QueueManagerProcess, list[bytes]],
) -> None:
    qm, bodies = fuzz_target
    qm.stop()
    qm.start()
    with Client.connect(qm.url, data_dir=str(qm.data_dir)) as c:
        assert [m.body for m in c.browse(SENTINEL_QUEUE)] == bodies
