"""The JSON domain's scan for integers beyond 64 bits (a run of 19 or more digits) gives the same
answer in C and in Python, and a document holding one keeps it exact either way."""

from __future__ import annotations

import random
from collections.abc import Callable

import pytest
from flowbroker.formats import json as json_domain
from formats_support import attach
from native_support import require_compiled

_NATIVE = json_domain._has_long_number_native()


def _native() -> Callable[[bytes], bool]:
    return require_compiled(_NATIVE, "flowbroker.formats._json_native")


EDGES = [
    b"",
    b"1" * 18,
    b"1" * 19,
    b"1" * 20,
    b'{"n": ' + b"9" * 18 + b"}",
    b'{"n": ' + b"9" * 19 + b"}",
    b"x" + b"0" * 19,
    b"0" * 19 + b"x",
    b"1" * 18 + b"." + b"1" * 18,  # two runs of 18 either side of a point
    b"12345678901234567890",
    "\u0661\u0662\u0663".encode() * 10,  # digits of another script are not ASCII digits
    bytes(range(256)) * 4,
]


@pytest.mark.parametrize("data", EDGES)
def test_the_scan_agrees_on_edges(data: bytes) -> None:
    native = _native()
    assert native(data) == json_domain._has_long_number_py(data)
    assert native(bytearray(data)) == native(memoryview(data)) == native(data)


def test_the_scan_agrees_on_random_documents() -> None:
    native = _native()
    rng = random.Random(1129)
    alphabet = b"0123456789" * 6 + b' .,-e{}[]":x'
    for _ in range(3000):
        data = bytes(rng.choice(alphabet) for _ in range(rng.randint(0, 120)))
        assert native(data) == json_domain._has_long_number_py(data), data


def test_the_scan_agrees_on_every_run_length_and_offset() -> None:
    # the C scan skips ahead by a run's length: runs of 17-21 digits at every offset, alone,
    # after a shorter run and between two, at the ends of the data and away from them
    native = _native()
    for offset in range(45):
        for length in range(15, 22):
            for before in (b"", b"12345678901234567.", b"9" * 18 + b"x"):
                for after in (b"", b"x", b"." + b"7" * 18):
                    data = b"a" * offset + before + b"5" * length + after
                    assert native(data) == json_domain._has_long_number_py(data), data


def test_the_scan_refuses_what_is_not_bytes() -> None:
    with pytest.raises(TypeError):
        _native()("text")  # type: ignore[arg-type]


@pytest.mark.parametrize("scan", ["native", "python"])
def test_an_integer_beyond_64_bits_stays_exact(monkeypatch: pytest.MonkeyPatch, scan: str) -> None:
    monkeypatch.setattr(
        json_domain, "_has_long_number", _native() if scan == "native" else json_domain._has_long_number_py
    )
    element = attach("JSON", b'{"big": 123456789012345678901234567890, "small": 5}')
    data = element.first_child
    assert data is not None
    big = data.first_child
    assert big is not None and big.value == 123456789012345678901234567890
