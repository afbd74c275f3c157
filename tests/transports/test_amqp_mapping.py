"""The descriptor ↔ AMQP properties mapping: the one-pass versions against the general ones."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import pytest
from flowbroker.qm.protocol import Message, MessageDescriptor
from flowbroker.runtime.transports import amqp
from flowbroker.runtime.transports.amqp import (
    _MQ,
    ZERO_ID,
    EncodedProperties,
    _id_bytes,
    backout_count,
    encode_properties,
    from_amqp,
    to_amqp,
    topic_string,
)
from pika.spec import BasicProperties


def general_from_amqp(
    props: BasicProperties, body: bytes, *, redelivered: bool = False, exchange: str = "", key: str = ""
) -> Message:
    """The mapping as it was written first: a lookup per descriptor field."""
    headers = dict(props.headers or {})

    def header(name: str, default: Any) -> Any:
        value = headers.get(_MQ + name)
        return default if value is None else value

    def text(value: Any) -> str:
        return value.decode() if isinstance(value, bytes) else str(value)

    expiry_ms = props.expiration
    persistence = int(header("persistence", 0 if props.delivery_mode == 1 else 1))
    priority = int(header("priority", props.priority if props.priority is not None else -1))
    md = MessageDescriptor(
        msg_id=_id_bytes(props.message_id),
        correl_id=_id_bytes(props.correlation_id),
        persistence=persistence,
        priority=priority,
        expiry=int(header("expiry", int(expiry_ms) // 100 if expiry_ms else -1)),
        reply_to_q=props.reply_to or "",
        reply_to_q_mgr=text(header("reply-to-q-mgr", "")),
        format=text(header("format", "")),
        encoding=int(header("encoding", 546)),
        coded_char_set_id=int(header("ccsid", 1208)),
        put_time=float(header("put-time", float(props.timestamp or 0))),
        backout_count=backout_count(headers, redelivered),
        group_id=_id_bytes(text(header("group-id", "")) or None),
    )
    properties = {name: value for name, value in headers.items() if not name.startswith("x-")}
    for name in text(header("floats", "")).split(","):
        if name in properties:
            properties[name] = float(properties[name])
    if exchange and exchange == amqp.topic_exchange():
        properties["MQTopicString"] = topic_string(key)
    return Message(md, properties, body)


DESCRIPTORS = [
    MessageDescriptor(),
    MessageDescriptor(msg_id=b"M" * 24, put_time=1764076800.5, persistence=1, priority=0, expiry=1),
    MessageDescriptor(
        msg_id=bytes(range(24)),
        correl_id=bytes(range(100, 124)),
        persistence=2,
        priority=12,
        expiry=-5,
        reply_to_q="RÉPONSE",
        reply_to_q_mgr="QM.FAR",
        format="MQHRF2",
        encoding=273,
        coded_char_set_id=500,
        put_time=1764076800.123456,
        group_id=b"\xffG" * 12,
    ),
]
PROPERTY_SETS: list[dict[str, Any] | None] = [
    None,
    {},
    {"text": "é", "number": 42, "ratio": 0.1, "flag": True, "raw": b"\x00", "nested": {"a": [1, None]}},
    {"x-ignored": 1, "huge": 2**40, "negative": -1.5e300},
]
FOREIGN = [
    BasicProperties(),
    BasicProperties(headers={}),
    BasicProperties(headers={"k": None, "x-delivery-count": 3, "x-mq-format": None, b"\xff": 1}),
    BasicProperties(
        headers={"x-flowbroker-backout-count": 2, "x-mq-format": b"MQSTR", "x-mq-group-id": b"ab"}
    ),
    BasicProperties(
        correlation_id="an-application-id",
        message_id="m-1",
        reply_to="R",
        expiration="60000",
        timestamp=1764076800,
        delivery_mode=1,
        priority=4,
        headers={"x-mq-floats": "f,missing", "f": "2.5", "x-mq-put-time": "3.25", "x-mq-ccsid": 819},
    ),
]


def cases() -> list[BasicProperties]:
    made = [to_amqp(md, props) for md in DESCRIPTORS for props in PROPERTY_SETS]
    return made + FOREIGN


@pytest.mark.parametrize("props", cases())
@pytest.mark.parametrize("redelivered", [False, True])
@pytest.mark.parametrize("exchange", ["", "flowbroker.topics", "elsewhere"])
def test_from_amqp_maps_as_the_general_mapping_does(
    props: BasicProperties, redelivered: bool, exchange: str
) -> None:
    # (a header name that is not text is no message property: the general mapping failed on it)
    plain = BasicProperties(**{**props.__dict__})
    if plain.headers and any(type(name) is not str for name in plain.headers):
        plain.headers = {name: value for name, value in plain.headers.items() if type(name) is str}
    ours = from_amqp(props, b"body", redelivered=redelivered, exchange=exchange, key="a.b")
    general = general_from_amqp(plain, b"body", redelivered=redelivered, exchange=exchange, key="a.b")
    assert ours == general
    assert [type(v) for v in ours.properties.values()] == [type(v) for v in general.properties.values()]


@pytest.mark.parametrize("md", DESCRIPTORS)
@pytest.mark.parametrize("props", PROPERTY_SETS)
def test_a_descriptor_and_its_properties_survive_the_mapping(
    md: MessageDescriptor, props: dict | None
) -> None:
    back = from_amqp(to_amqp(md, props), b"")
    assert back.md == md
    assert back.properties == {k: v for k, v in (props or {}).items() if not k.startswith("x-")}


OVERRIDES: list[dict[str, Any]] = [
    {},
    {"msg_id": b"N" * 24, "put_time": 1764076801.25},
    {"correl_id": ZERO_ID, "persistence": 0, "format": "MQSTR   "},
    {"correl_id": b"short", "persistence": 1, "format": "", "msg_id": b"m"},
    {"persistence": 7, "put_time": 0.0},
]
MORE_PROPERTIES: list[dict[str, Any] | None] = [
    {"edge": 2**31 - 1, "over": 2**31, "under": -(2**31), "below": -(2**31) - 1, "empty": "", "no": False},
    {"when": datetime(2026, 1, 2, tzinfo=UTC), "price": Decimal("1.50"), "none": None, "whole": 1.0},
]


@pytest.mark.parametrize("md", DESCRIPTORS)
@pytest.mark.parametrize("props", PROPERTY_SETS + MORE_PROPERTIES)
@pytest.mark.parametrize("changed", OVERRIDES)
def test_properties_encoded_in_one_pass_are_pikas_encoding_of_to_amqp(
    md: MessageDescriptor, props: dict | None, changed: dict[str, Any]
) -> None:
    """encode_properties(md, props, **changed) is what pika encodes to_amqp of md so changed to."""
    want = b"".join(to_amqp(replace(md, **changed), props).encode())
    assert encode_properties(md, props, **changed) == want
    assert b"".join(EncodedProperties(want).encode()) == want


@pytest.mark.parametrize(
    ("md", "props"),
    [
        (MessageDescriptor(reply_to_q="R" * 256), None),  # over a short string's 255 bytes
        (MessageDescriptor(msg_id=b"M" * 25), None),  # over an id's 24 bytes
        (MessageDescriptor(put_time=-5.0), None),  # a timestamp AMQP cannot carry
        (MessageDescriptor(priority=True), None),  # type: ignore[arg-type]
        (MessageDescriptor(), {"k" * 256: 1}),
        (MessageDescriptor(), {"nested": {"f": 1.5}}),  # a float pika cannot put in a table
        (MessageDescriptor(), {"text": "\udcff"}),  # not encodable as UTF-8
    ],
)
def test_what_one_pass_does_not_pack_is_left_to_pika(md: MessageDescriptor, props: dict | None) -> None:
    """None: the transport then encodes to_amqp's properties with pika, which refuses them (or
    packs the value as it always did) when the put is sent."""
    assert encode_properties(md, props) is None
