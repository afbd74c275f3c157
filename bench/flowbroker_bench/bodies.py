"""The request messages of seed 004's measurements, each built to a given size: ``builder(size, ident)``.

A builder returns the body bytes and the descriptor fields they need (``format``). Sizes are the
seed's "Message Size": the bytes the requester puts, headers inside the body (MQRFH2) included,
padded so every message of a row has the same length.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

BodyBuilder = Callable[[int, int], tuple[bytes, dict[str, Any]]]

#: The values of the 50-field message (seed 004 §2.7 and §2.13): every fifth field is a number.
FIELDS = 50
RULE_FIELD = 37
RULE_VALUE = "V037"


def blob(size: int, ident: int) -> tuple[bytes, dict[str, Any]]:
    """Bytes with no format, as §7.1's "not set to any particular type" messages."""
    return b"b" * size, {}


def xml_record(size: int, ident: int) -> tuple[bytes, dict[str, Any]]:
    """An XML message with an id and a value (the database flow stores both), padded to size."""
    head = f"<Message><Id>{ident}</Id><Field>value</Field><Pad>"
    tail = "</Pad></Message>"
    pad = "x" * max(0, size - len(head) - len(tail))
    return (head + pad + tail).encode(), {"format": "MQSTR"}


def one_field(size: int, ident: int) -> tuple[bytes, dict[str, Any]]:
    """§2.2 and §7.13: "the input message consisted of a single field"."""
    head = f"<Message><Field>{ident}:"
    tail = "</Field></Message>"
    return (head + "v" * max(0, size - len(head) - len(tail)) + tail).encode(), {"format": "MQSTR"}


def fifty_fields(size: int, ident: int) -> tuple[bytes, dict[str, Any]]:
    """§7.7 and §7.13: fifty fields sharing the size; fields 5, 10 … 50 hold 8-digit numbers.

    Field 37 holds the value one routing rule of the rules flow looks for, so exactly one of its
    hundred rules fires.
    """
    numbers = {i for i in range(5, FIELDS + 1, 5)}
    fixed = {i: f"{(ident * 7 + i) % 100_000_000:08d}" for i in numbers}
    fixed[RULE_FIELD] = RULE_VALUE
    frame = "<Message>" + "".join(f"<F{i:02d}></F{i:02d}>" for i in range(1, FIELDS + 1)) + "</Message>"
    free = [i for i in range(1, FIELDS + 1) if i not in fixed]
    room = max(0, size - len(frame) - sum(len(v) for v in fixed.values()))
    share, extra = divmod(room, len(free))
    parts = ["<Message>"]
    for i in range(1, FIELDS + 1):
        if i in fixed:
            value = fixed[i]
        else:
            length = share + (1 if extra > 0 else 0)
            extra -= 1 if extra > 0 else 0
            value = (f"t{i:02d}" + "abcdefghij" * (length // 10 + 1))[:length]
        parts.append(f"<F{i:02d}>{value}</F{i:02d}>")
    parts.append("</Message>")
    return "".join(parts).encode(), {"format": "MQSTR"}


def csim(size: int, ident: int) -> tuple[bytes, dict[str, Any]]:
    """Appendix C's input: a CSIM test case whose stack lists up to 20 processing path elements.

    Appendix C §8.1: "The variable i has a maximum value of 20", the number of elements.
    """
    element = "<Element><COMPONENT>Component{n}</COMPONENT><QUEUE>QUEUE.{n}</QUEUE></Element>"
    parts = [f"<CSIM><TestCase><Id>{ident}</Id><Stack><ProcessingPath>"]
    n = 0
    while sum(map(len, parts)) + 60 < size - 64:
        n += 1
        parts.append(element.format(n=n))
        if n >= 20:
            break
    parts.append("</ProcessingPath></Stack><Data>")
    used = sum(map(len, parts)) + len("</Data></TestCase></CSIM>")
    parts.append("d" * max(0, size - used))
    parts.append("</Data></TestCase></CSIM>")
    return "".join(parts).encode(), {"format": "MQSTR"}


def rfh2(folders: dict[str, dict[str, str]], body: bytes) -> bytes:
    """``body`` behind an MQRFH2 header holding ``folders`` (``{"usr": {"Route": "yes"}}``)."""
    key = tuple((name, tuple(fields.items())) for name, fields in folders.items())
    return _rfh2_header(key) + body


@functools.lru_cache(maxsize=64)
def _rfh2_header(folders: tuple[tuple[str, tuple[tuple[str, str], ...]], ...]) -> bytes:
    # the seed's requesters sent one content: a header is built once, not for every request,
    # so the driver spends its time on the messages, not on making them
    from esql.tree import Element
    from flowbroker.formats import rfh2 as rfh2_format

    header = Element("MQRFH2")
    header.add("Format", "MQSTR   ")
    for name, fields in folders:
        folder = header.add(name, type=0x01000000)
        for key, value in fields:
            folder.add(key, value)
    return rfh2_format.serialize(header, encoding=546, ccsid=1208)


def filter_rfh2(size: int, ident: int) -> tuple[bytes, dict[str, Any]]:
    """§2.4: "an MQRFH2 message with two tags specified following the header"."""
    raw = rfh2({"usr": {"Route": "yes", "Region": "north"}}, b"")
    return raw + b"f" * max(0, size - len(raw)), {"format": "MQHRF2"}


#: The topic every publication case publishes on, and the content its filter looks for.
TOPIC = "seed004/prices"
CONTENT_FILTER = "Root.MQRFH2.usr.Region = 'north'"


def publication(size: int, ident: int) -> tuple[bytes, dict[str, Any]]:
    """§2.5 and §2.12: a publish command and a tag for content filters, in one MQRFH2.

    Topic-based and content-based rows send this same message, so they differ only in how the
    subscription selects it.
    """
    raw = rfh2({"psc": {"Command": "Publish", "Topic": TOPIC}, "usr": {"Region": "north"}}, b"")
    return raw + b"p" * max(0, size - len(raw)), {"format": "MQHRF2"}
