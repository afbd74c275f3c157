"""Content filters see the assembly a flow would: MQRFH2 with its <mcd> domain and usr folder, Properties, the body."""

from __future__ import annotations

import struct

import pytest
from flowbroker.qm.client import Client, MessageDescriptor

pytestmark = pytest.mark.timeout(60)


def _rfh2(*folders: str, encoding: int = 546) -> bytes:
    """An MQRFH2 v2 header as a flow's output node writes it (IBM's byte layout)."""
    order = "<" if encoding & 0x0F == 2 else ">"
    data = b""
    for folder in folders:
        raw = folder.encode()
        raw += b" " * (-len(raw) % 4)
        data += struct.pack(order + "i", len(raw)) + raw
    fixed = (
        b"RFH "
        + struct.pack(order + "iiii", 2, 36 + len(data), encoding, 1208)
        + b"MQSTR   "
        + struct.pack(order + "ii", 0, 1208)
    )
    return fixed + data


def _flow_style(
    body: bytes, *, region: str, priority: int, encoding: int = 546
) -> tuple[bytes, MessageDescriptor]:
    header = _rfh2(
        "<mcd><Msd>xmlnsc</Msd></mcd>",
        f"<usr><region>{region}</region><level>{priority}</level></usr>",
        encoding=encoding,
    )
    return header + body, MessageDescriptor(format="MQHRF2", encoding=encoding)


@pytest.fixture
def queues(client: Client) -> list[str]:
    names = ["PF.BODY", "PF.USR", "PF.PROPS", "PF.ALL"]
    for n in names:
        client.define_queue(n, replace=True)
        client.purge(n)
    return names


def test_filters_read_the_rfh2_domain_usr_folder_and_properties(client: Client, queues: list[str]) -> None:
    client.subscribe("orders/#", "PF.BODY", name="f-body", filter="Root.XMLNSC.order.total > 100")
    client.subscribe("orders/#", "PF.USR", name="f-usr", filter="Root.MQRFH2.usr.region = 'EU'")
    client.subscribe(
        "orders/#",
        "PF.PROPS",
        name="f-props",
        filter="Root.Properties.MessageDomain = 'XMLNSC' AND Root.Properties.Topic = 'orders/big'"
        " AND Root.MQRFH2.usr.channel = 'web'",
    )
    client.subscribe("orders/#", "PF.ALL", name="f-all")
    big_eu, md = _flow_style(b"<order><total>250</total></order>", region="EU", priority=1)
    small_us, md2 = _flow_style(b"<order><total>20</total></order>", region="US", priority=2, encoding=273)
    assert client.publish("orders/big", big_eu, md, properties={"channel": "web"}) == 4
    assert client.publish("orders/small", small_us, md2, properties={"channel": "web"}) == 1
    assert [m.body for m in client.get_many("PF.BODY", 10)] == [big_eu]
    assert [m.body for m in client.get_many("PF.USR", 10)] == [big_eu]
    assert [m.body for m in client.get_many("PF.PROPS", 10)] == [big_eu]
    assert len(client.get_many("PF.ALL", 10)) == 2
    for name in ("f-body", "f-usr", "f-props", "f-all"):
        client.unsubscribe(name)


def test_a_filter_that_reads_no_body_does_not_parse_it(client: Client, queues: list[str]) -> None:
    client.subscribe("bad/#", "PF.USR", name="f-usr-only", filter="Root.MQRFH2.usr.region = 'EU'")
    client.subscribe("bad/#", "PF.BODY", name="f-body-bad", filter="Root.XMLNSC.order.total > 0")
    broken, md = _flow_style(b"<order><total>1</tot", region="EU", priority=0)
    assert client.publish("bad/xml", broken, md) == 1  # the body filter meets the parse error: UNKNOWN
    assert [m.body for m in client.get_many("PF.USR", 10)] == [broken]
    assert client.get_many("PF.BODY", 10) == []
    client.unsubscribe("f-usr-only")
    client.unsubscribe("f-body-bad")


def test_a_malformed_rfh2_matches_no_filter_and_harms_nothing(client: Client, queues: list[str]) -> None:
    client.subscribe("odd/#", "PF.USR", name="f-odd", filter="Root.MQRFH2.usr.region = 'EU'")
    client.subscribe("odd/#", "PF.ALL", name="f-odd-all")
    bad = b"RFH " + struct.pack("<iiii", 2, 9999, 546, 1208) + b"MQSTR   " + b"\x00" * 8
    assert client.publish("odd/x", bad, MessageDescriptor(format="MQHRF2")) == 1
    assert [m.body for m in client.get_many("PF.ALL", 10)] == [bad]
    client.ping()
    client.unsubscribe("f-odd")
    client.unsubscribe("f-odd-all")
