"""The frame cutter in C (``_frames_native.c``) and the Python loop of ``FrameDecoder.feed`` give the
same frames, the same buffered remainder and, for a malformed stream, the same FrameError with the
same message and offset."""

from __future__ import annotations

import random
import struct
from collections.abc import Callable, Iterator
from typing import Any

import orjson
import pytest
from flowbroker.qm import protocol
from flowbroker.qm.protocol import (
    DEFAULT_MAX_HELLO_FRAME,
    OP_HELLO,
    OP_PUT,
    FrameDecoder,
    FrameError,
    MessageDescriptor,
    encode_frame,
    encode_message,
)
from native_support import require_compiled

_NATIVE = protocol._split_native_loaded()

Split = Callable[[bytearray, int], Any]
Outcome = tuple[list[tuple[int, int, Any, bytes]], int, tuple[str, str, int, bool] | None]


def _native() -> Split:
    return require_compiled(_NATIVE, "flowbroker.qm._frames_native")


Paths = Callable[[bytes, list[int], int, str], tuple[Outcome, Outcome]]


@pytest.fixture
def paths(monkeypatch: pytest.MonkeyPatch) -> Iterator[Paths]:
    """Feeds a stream through a decoder with the C cutter and through one without it."""
    native = _native()

    def run(data: bytes, chunks: list[int], max_frame: int, context: str) -> tuple[Outcome, Outcome]:
        outcomes = []
        for split in (native, None):
            monkeypatch.setattr(protocol, "_split_native", split)
            outcomes.append(_feed(data, chunks, max_frame, context))
        monkeypatch.setattr(protocol, "_split_native", native)
        return outcomes[0], outcomes[1]

    yield run


def _feed(
    data: bytes, chunks: list[int], max_frame: int = protocol.DEFAULT_MAX_FRAME, context: str = ""
) -> Outcome:
    dec = FrameDecoder(max_frame, context)
    frames: list[tuple[int, int, Any, bytes]] = []
    pos = 0
    i = 0
    try:
        while pos < len(data):
            size = chunks[i % len(chunks)]
            i += 1
            got = dec.feed(data[pos : pos + size])
            assert all(type(f) is tuple and type(f[3]) is bytes for f in got)
            frames.extend(got)
            pos += size
    except FrameError as exc:
        return frames, dec.pending, (str(exc), exc.reason, exc.offset, exc.oversized)
    return frames, dec.pending, None


def _frame(rng: random.Random) -> bytes:
    op = rng.randrange(256)
    rid = rng.choice((0, 1, 2**31, 2**32 - 1, rng.randrange(2**32)))
    kind = rng.randrange(6)
    if kind == 0:  # no payload at all
        return struct.pack("<IBI", 5, op, rid)
    if kind == 1:  # an argument length of 0 and maybe a tail
        tail = rng.randbytes(rng.choice((0, 1, 7, 300)))
        return struct.pack("<IBII", 9 + len(tail), op, rid, 0) + tail
    args: Any = rng.choice(
        (
            {"q": "APP.QUEUE", "sync": rng.random() < 0.5},
            {"rc": 2033, "reason": "no message available \u00e9\u4e2d"},
            [1, 2.5, None, True, "x" * rng.randrange(50)],
            "text",
            0,
            {"nested": {"deep": [[[]]]}},
        )
    )
    tail_size = rng.choice((0, 1, 24, 1024, 5000, 70000 if rng.random() < 0.1 else 100))
    tail = (
        bytes(rng.randrange(256) for _ in range(min(tail_size, 64))) * (tail_size // 64)
        + b"\x00\xff"[: tail_size % 3]
    )
    return encode_frame(op, rid, args, tail)


def test_random_streams_of_valid_frames_agree(paths: Paths) -> None:
    rng = random.Random(1202)
    md = MessageDescriptor(format="MQSTR")
    for _ in range(150):
        frames = [_frame(rng) for _ in range(rng.randrange(1, 40))]
        if rng.random() < 0.3:
            frames.append(
                encode_frame(OP_PUT, 5, {"q": "Q"}, encode_message(md, {"p": 1}, rng.randbytes(1000)))
            )
        data = b"".join(frames)
        cut = rng.randrange(len(data) + 1) if rng.random() < 0.3 else len(data)  # maybe stop mid-frame
        chunks = [
            rng.choice((1, 3, 4, 5, 9, 13, 100, 1500, 65536, rng.randrange(1, 200000))) for _ in range(7)
        ]
        native, python = paths(data[:cut], chunks, protocol.DEFAULT_MAX_FRAME, "")
        assert native == python
        assert native[2] is None
        if cut == len(data):
            assert len(native[0]) == len(frames) and native[1] == 0


def test_frames_are_the_same_tuples() -> None:
    split = _native()
    buf = bytearray(
        struct.pack("<IBI", 5, 17, 3)
        + struct.pack("<IBII", 9, 2, 4, 0)
        + struct.pack("<IBII", 12, 2, 2**32 - 1, 0)
        + b"\x00\x01\xff"
        + encode_frame(0x80, 7, {"rc": 0}, b"tail")
        + struct.pack("<IBI", 50, 1, 1)  # the head of a frame still to come
    )
    frames, pos = split(buf, protocol.DEFAULT_MAX_FRAME)
    assert frames == [
        (17, 3, None, b""),
        (2, 4, None, b""),
        (2, 2**32 - 1, None, b"\x00\x01\xff"),
        (0x80, 7, {"rc": 0}, b"tail"),
    ]
    assert pos == len(buf) - 9
    assert all(type(f[3]) is bytes for f in frames)


def _bad_payloads() -> list[bytes]:
    """Every malformed frame of test_qm_bad_input.py, and the faults around them."""
    j = orjson.dumps({"q": "T.Q"})
    good_args = struct.pack("<I", len(j)) + j

    def framed(payload: bytes, op: int = OP_PUT, rid: int = 9) -> bytes:
        return struct.pack("<IBI", 5 + len(payload), op, rid) + payload

    return [
        framed(struct.pack("<I", 50) + b"{}"),  # argument length beyond the payload
        framed(struct.pack("<I", 3) + b"{{{"),  # arguments that are not JSON
        framed(struct.pack("<I", 2) + b"[]"),  # arguments that are not an object: a good frame
        framed(good_args + b"\x01\x02"),  # a truncated message: a good frame
        struct.pack("<IBI", 2, OP_PUT, 9),  # a length shorter than the header
        struct.pack("<IBI", 2**31, OP_PUT, 2),  # an oversized frame
        struct.pack("<I", 0),
        struct.pack("<I", 4) + b"\x01\x02\x03\x04",
        struct.pack("<I", 2**32 - 1),
        framed(b"\x01"),  # payloads too short for their argument length
        framed(b"\x01\x00"),
        framed(b"\x01\x00\x00"),
        framed(struct.pack("<I", 1)),  # argument length one past the payload
        framed(struct.pack("<I", 2**32 - 1) + b"{}"),
        framed(struct.pack("<I", 2) + b"\xff\xfe"),  # not UTF-8
        framed(struct.pack("<I", 5) + b"{}   " + b"tail"),  # JSON followed by spaces: fine
        framed(struct.pack("<I", 5) + b"{} {}"),  # two documents
        framed(struct.pack("<I", 4000) + b"[" * 4000),  # nested past orjson's limit
        framed(struct.pack("<I", 1) + b" "),  # only white space
        framed(struct.pack("<I", 3) + b"NaN"),
        framed(struct.pack("<I", 3) + b"1e9999"),
        framed(orjson.dumps("x" * 5000), OP_HELLO),  # a HELLO over the limit before authentication
    ]


@pytest.mark.parametrize("index", range(len(_bad_payloads())))
@pytest.mark.parametrize(
    "limit", [(protocol.DEFAULT_MAX_FRAME, ""), (DEFAULT_MAX_HELLO_FRAME, " before authentication")]
)
def test_malformed_frames_fail_alike(paths: Paths, index: int, limit: tuple[int, str]) -> None:
    bad = _bad_payloads()[index]
    good = encode_frame(OP_PUT, 1, {"q": "A"}, b"m" * 300) + struct.pack("<IBI", 5, 17, 2)
    rng = random.Random(index)
    for data in (bad, good + bad, good * 3 + bad + good, bad[:3], (good + bad)[: len(good) + 6]):
        for chunks in ([len(data)], [1], [4], [9, 13], [len(good)], [rng.randrange(1, 60) for _ in range(5)]):
            native, python = paths(data, chunks, *limit)
            assert native == python, (data[:40], chunks)


def test_the_cutter_declines_what_is_malformed() -> None:
    split = _native()
    for bad in _bad_payloads():
        try:
            FrameDecoder().feed(bad)
        except FrameError:
            assert split(bytearray(bad), protocol.DEFAULT_MAX_FRAME) is None
            assert split(bytearray(encode_frame(1, 1, {}) + bad), protocol.DEFAULT_MAX_FRAME) is None


def test_limits_of_every_size() -> None:
    split = _native()
    frame = bytearray(encode_frame(OP_PUT, 1, {"q": "A"}, b"x" * 100))
    length = len(frame) - 4
    for limit in (length, 2**32 - 1, 2**32, 2**63, 2**64, 2**100):
        assert split(frame, limit) == ([(OP_PUT, 1, {"q": "A"}, b"x" * 100)], len(frame))
    for limit in (length - 1, 5, 0, -1, -(2**100)):
        assert split(frame, limit) is None
    assert split(frame, 1e9) is None  # a limit that is not an int: the Python loop compares it


def test_a_limit_raised_after_hello_applies_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    big = encode_frame(OP_PUT, 2, {"q": "A"}, b"b" * 10000)
    for split in (_native(), None):
        monkeypatch.setattr(protocol, "_split_native", split)
        dec = FrameDecoder(DEFAULT_MAX_HELLO_FRAME, " before authentication")
        hello = encode_frame(OP_HELLO, 1, {"user": "u"})
        assert dec.feed(hello + big[:3]) == [(OP_HELLO, 1, {"user": "u"}, b"")]
        dec.max_frame = protocol.DEFAULT_MAX_FRAME
        dec.limit_context = ""
        assert dec.feed(big[3:100]) == []
        assert dec.feed(big[100:]) == [(OP_PUT, 2, {"q": "A"}, b"b" * 10000)]


def test_the_cutter_refuses_what_is_not_a_buffer() -> None:
    split = _native()
    with pytest.raises(TypeError):
        split("text", 100)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        split(bytearray())  # type: ignore[call-arg]
    assert split(bytes(encode_frame(1, 2)), 100) == ([(1, 2, None, b"")], 13)  # any buffer will do
    assert split(memoryview(encode_frame(1, 2)), 100) == ([(1, 2, None, b"")], 13)


def test_the_buffer_cannot_be_resized_by_the_loads_it_calls() -> None:
    """A loads that tries to grow the buffer finds it exported; the cutter declines, nothing crashes."""
    _native()
    from flowbroker.qm import _frames_native  # type: ignore[attr-defined]

    buf = bytearray(encode_frame(1, 2, {"a": 1}) * 3)

    def meddling_loads(doc: bytes) -> Any:
        buf.extend(b"\x00" * 100000)
        return orjson.loads(doc)

    _frames_native.configure(meddling_loads)
    try:
        assert _frames_native.split(buf, 1000) is None
    finally:
        _frames_native.configure(orjson.loads)
    assert _frames_native.split(buf, 1000) == ([(1, 2, {"a": 1}, b"")] * 3, len(buf))
