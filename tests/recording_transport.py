"""A transport that records what a flow thread puts, as the queue manager's client would send it."""

from __future__ import annotations

from typing import Any

from flowbroker.qm.protocol import Message, MessageDescriptor, decode_message, encode_message, pad_id


class Encoded:
    """A transport that takes a message as its bytes (the queue manager's) or as its parts."""

    dead_letter_queue = "SYSTEM.DEAD.LETTER.QUEUE"
    principal = ""
    pipelined = 0

    def __init__(self) -> None:
        self.puts: list[tuple[str, str, bytes, bool, bool]] = []

    def put(
        self,
        queue: str,
        body: bytes,
        md: MessageDescriptor | None = None,
        *,
        syncpoint: bool = False,
        properties: dict[str, Any] | None = None,
        pipeline: bool = False,
    ) -> None:
        # as the queue manager's client encodes a put made of parts
        assert md is not None
        encoded = encode_message(md, properties, body, pad_id(md.msg_id))
        self.puts.append(("parts", queue, encoded, syncpoint, pipeline))

    def put_encoded(
        self, queue: str, encoded: bytes, *, syncpoint: bool = False, pipeline: bool = False
    ) -> None:
        self.puts.append(("encoded", queue, encoded, syncpoint, pipeline))


class PartsOnly(Encoded):
    """A transport that puts only parts: every Root is written out."""

    put_encoded = None  # type: ignore[assignment]


def got_message(body: bytes, properties: dict[str, Any] | None = None, **md: Any) -> Message:
    """A message as a get returns it: decoded from its wire form, which it keeps."""
    fields = {"msg_id": b"M" * 24, "persistence": 0, "priority": 4, "put_time": 1_700_000_000.5, **md}
    return decode_message(encode_message(MessageDescriptor(**fields), properties, body))


#: Descriptor fields of a got message that a put must carry over (or change) one by one.
DESCRIPTOR_FIELDS: dict[str, Any] = {
    "format": "MQSTR   ",
    "correl_id": b"C" * 24,
    "group_id": b"G" * 24,
    "reply_to_q": "REPLY.Q",
    "reply_to_q_mgr": "QM2",
    "expiry": 600,
    "priority": 7,
    "persistence": 1,
    "backout_count": 2,
    "encoding": 273,
}
