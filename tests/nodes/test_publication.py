"""Publication: publishes through the queue manager; noMatch when nobody subscribes."""

from __future__ import annotations

import itertools

import pytest
from flowbroker.runtime.harness import FlowHarness, flow, get_all

pytestmark = pytest.mark.timeout(60)
_topics = itertools.count(1)


def test_subscribers_receive_and_out_is_taken(qm_process, qm, queues) -> None:
    topic = f"test/prices/{next(_topics)}"
    sub_queue = queues("SUB")
    qm.subscribe(topic, sub_queue, name=f"s{sub_queue}")
    doc = flow(
        {"in": ("MQInput", {"queueName": "UNUSED"}), "p": ("Publication", {"topic": topic})}, ["in.out -> p"]
    )
    h = FlowHarness(doc, connect=qm_process.client)
    h.inject("p", b"price=10")
    h.close()
    assert [m.body for m in get_all(qm, sub_queue, 1)] == [b"price=10"]
    assert len(h.seen("p", "out")) == 1 and h.seen("p", "noMatch") == []


def test_no_subscriber_takes_no_match(qm_process) -> None:
    doc = flow(
        {
            "in": ("MQInput", {"queueName": "UNUSED"}),
            "p": ("Publication", {"topic": f"nobody/{next(_topics)}"}),
        },
        ["in.out -> p"],
    )
    h = FlowHarness(doc, connect=qm_process.client)
    h.inject("p", b"x")
    h.close()
    assert len(h.seen("p", "noMatch")) == 1


def test_no_topic_anywhere_is_an_error(qm_process) -> None:
    from flowbroker_nodes.base import Unwinding

    h = FlowHarness(
        flow({"in": ("MQInput", {"queueName": "UNUSED"}), "p": ("Publication", {})}, ["in.out -> p"]),
        connect=qm_process.client,
    )
    with pytest.raises(Unwinding) as info:
        h.inject("p", b"x")
    h.close()
    assert "no topic" in str(info.value)


def _rfh2_message(body: bytes, **folders: dict[str, str]) -> tuple[bytes, object]:
    """``body`` behind an MQRFH2 header holding ``folders`` (e.g. psc={"Topic": …}, usr={…})."""
    from esql.tree import Element
    from flowbroker.formats import rfh2
    from flowbroker.qm.protocol import FORMAT_RFH2, MessageDescriptor

    header = Element("MQRFH2")
    header.add("Format", "MQSTR")
    for name, fields in folders.items():
        folder = header.add(name, type=rfh2.FOLDER)
        for key, value in fields.items():
            folder.add(key, value)
    return rfh2.serialize(header, encoding=546, ccsid=1208) + body, MessageDescriptor(format=FORMAT_RFH2)


def _publisher(src: str, topic: str) -> dict:
    return flow(
        {
            "in": ("MQInput", {"queueName": src, "transactionMode": "no"}),
            "p": ("Publication", {"topic": topic}),
        },
        ["in.out -> p"],
        name=f"Pub{src.replace('.', '')}",
    )


def test_the_psc_topic_of_the_message_wins_over_the_node_property(qm, queues, group) -> None:
    n = next(_topics)
    psc_topic, node_topic = f"orders/psc/{n}", f"orders/node/{n}"
    psc_sub, node_sub, eu_sub = queues("PSC"), queues("NODE"), queues("EU")
    qm.subscribe(psc_topic, psc_sub, name=f"s{psc_sub}")
    qm.subscribe(node_topic, node_sub, name=f"s{node_sub}")
    qm.subscribe(psc_topic, eu_sub, name=f"s{eu_sub}", filter="Root.MQRFH2.usr.region = 'EU'")
    src = queues("IN")
    group.deploy(_publisher(src, node_topic))
    data, md = _rfh2_message(b"<order/>", psc={"Topic": psc_topic}, usr={"region": "EU"})
    qm.put(src, data, md)
    qm.put(src, b"no header")
    (by_psc,) = get_all(qm, psc_sub, 1)
    assert by_psc.body.endswith(b"<order/>") and by_psc.properties["MQTopicString"] == psc_topic
    assert f"<Topic>{psc_topic}</Topic>".encode() in by_psc.body
    # the usr folder travels as the message's properties, which a content filter reads
    (filtered,) = get_all(qm, eu_sub, 1)
    assert filtered.properties["region"] == "EU"
    assert [m.body for m in get_all(qm, node_sub, 1)] == [b"no header"]
    assert qm.get(psc_sub) is None and qm.get(node_sub) is None


def test_a_flow_publishes_to_subscribers_with_content_filters(qm, queues, group) -> None:
    topic = f"stock/{next(_topics)}"
    big, europe = queues("BIG"), queues("EUROPE")
    qm.subscribe(topic, big, name=f"s{big}", filter="Root.XMLNSC.order.qty > 10")
    qm.subscribe(topic, europe, name=f"s{europe}", filter="Root.MQRFH2.usr.region = 'EU'")
    src = queues("IN")
    group.deploy(_publisher(src, topic))
    qm.put(src, b"<order><qty>12</qty></order>", properties={"region": "EU"})
    qm.put(src, b"<order><qty>3</qty></order>", properties={"region": "US"})
    qm.put(src, b"<order><qty>4</qty></order>", properties={"region": "EU"})
    assert [m.body for m in get_all(qm, big, 1)] == [b"<order><qty>12</qty></order>"]
    got = get_all(qm, europe, 2)
    assert [m.body for m in got] == [b"<order><qty>12</qty></order>", b"<order><qty>4</qty></order>"]
    assert all(m.properties["region"] == "EU" for m in got)
    assert qm.get(big) is None and qm.get(europe) is None


def test_a_publication_of_an_untouched_message_carries_its_bytes_and_a_changed_topic_is_honoured(
    qm, queues, group
) -> None:
    n = next(_topics)
    psc_topic, changed_topic = f"relay/psc/{n}", f"relay/changed/{n}"
    psc_sub, changed_sub = queues("PSC"), queues("CHANGED")
    qm.subscribe(psc_topic, psc_sub, name=f"s{psc_sub}")
    qm.subscribe(changed_topic, changed_sub, name=f"s{changed_sub}")
    src, src2 = queues("IN"), queues("IN2")
    group.deploy(_publisher(src, f"relay/node/{n}"))
    # the same header through a Compute that changes the topic before the Publication
    esql = f"""CREATE COMPUTE MODULE ChangeTopic
CREATE FUNCTION Main() RETURNS BOOLEAN
BEGIN
  SET OutputRoot = InputRoot;
  SET OutputRoot.MQRFH2.psc.Topic = '{changed_topic}';
  RETURN TRUE;
END;
END MODULE;"""
    group.deploy(
        flow(
            {
                "in": ("MQInput", {"queueName": src2, "transactionMode": "no"}),
                "c": ("Compute", {"esql": esql, "module": "ChangeTopic"}),
                "p": ("Publication", {"topic": f"relay/node/{n}"}),
            },
            ["in.out -> c", "c.out -> p"],
            name=f"Pub{src2.replace('.', '')}",
        )
    )
    data, md = _rfh2_message(b"<order/>", psc={"Topic": psc_topic}, usr={"region": "EU"})
    for _ in range(3):  # the first of a header layout and the ones after it
        qm.put(src, data, md)
        qm.put(src2, data, md)
    relayed = get_all(qm, psc_sub, 3)
    assert [m.body for m in relayed] == [data] * 3  # the header unread: its bytes as they came
    assert all(m.properties["region"] == "EU" for m in relayed)
    changed = get_all(qm, changed_sub, 3)
    assert len(changed) == 3
    assert all(f"<Topic>{changed_topic}</Topic>".encode() in m.body for m in changed)
    assert qm.get(psc_sub) is None and qm.get(changed_sub) is None
