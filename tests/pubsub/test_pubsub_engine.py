"""Pub/sub against the real queue manager: wildcards, retained publications, ACLs, filters, all-or-none delivery."""

from __future__ import annotations

import pytest
from flowbroker.pubsub.topics import Subscription, TopicSpace
from flowbroker.qm.client import Client, MessageDescriptor, QMError
from flowbroker.qm.harness import QueueManagerProcess

pytestmark = pytest.mark.timeout(60)


def _fresh(c: Client, *names: str) -> None:
    for n in names:
        c.define_queue(n, replace=True)
        c.purge(n)


@pytest.mark.parametrize(
    ("pattern", "topic", "matches"),
    [
        ("a/b", "a/b", True),
        ("a/+", "a/b", True),
        ("a/+", "a/b/c", False),
        ("a/#", "a", True),
        ("a/#", "a/b/c", True),
        ("#", "x/y", True),
        ("+/b/#", "z/b", True),
        ("+/+", "a", False),
        ("a/b", "a/c", False),
    ],
)
def test_wildcard_matching(pattern: str, topic: str, matches: bool) -> None:
    space = TopicSpace()
    space.add(Subscription("s", pattern, "Q"))
    assert bool(space.match(topic)) is matches


def test_matching_visits_only_matching_branches() -> None:
    space = TopicSpace()
    for i in range(10_000):
        space.add(Subscription(f"n{i}", f"other/{i}/+", "Q"))
    space.add(Subscription("hit", "price/+/eur", "Q"))
    assert [s.name for s in space.match("price/fruit/eur")] == ["hit"]
    space.remove("hit")
    assert space.match("price/fruit/eur") == []
    assert "price" not in space._root.children  # emptied branches are pruned


def test_bad_topics_are_refused(client: Client) -> None:
    _fresh(client, "PS.BAD")
    for topic in ("", "a/#/b", "a/b+", "a\x00b"):
        with pytest.raises(QMError) as e:
            client.subscribe(topic, "PS.BAD")
        assert e.value.reason_code == 2425
    with pytest.raises(QMError) as e:
        client.publish("a/+", b"x")
    assert e.value.reason_code == 2425
    with pytest.raises(QMError) as e:
        client.subscribe("ok", "NO.SUCH.QUEUE")
    assert e.value.reason_code == 2085


def test_publish_to_wildcard_subscribers_with_correl_id(client: Client) -> None:
    _fresh(client, "PS.ALL", "PS.ONE")
    client.subscribe("sport/#", "PS.ALL", name="all-sport")
    client.subscribe("sport/+/score", "PS.ONE", name="scores", correl_id=b"SCORES")
    assert client.publish("sport/tennis/score", b"6-4") == 2
    assert client.publish("sport/tennis/players", b"list") == 1
    assert client.publish("news", b"none") == 0
    one = client.get("PS.ONE")
    assert one is not None and one.body == b"6-4" and one.md.correl_id.rstrip(b"\x00") == b"SCORES"
    assert one.properties["MQTopicString"] == "sport/tennis/score"
    assert [m.body for m in client.get_many("PS.ALL", 10)] == [b"6-4", b"list"]
    client.unsubscribe("all-sport")
    client.unsubscribe("scores")
    assert client.publish("sport/tennis/score", b"7-5") == 0
    with pytest.raises(QMError) as e:
        client.unsubscribe("scores")
    assert e.value.reason_code == 2428


def test_retained_publication_reaches_later_subscribers(client: Client) -> None:
    _fresh(client, "PS.RET")
    client.publish("config/colour", b"blue", retain=True)
    client.publish("config/colour", b"green", retain=True)
    client.publish("config/size", b"L", retain=True)
    info = client.subscribe("config/#", "PS.RET", name="late")
    assert info["retained_delivered"] == 2
    bodies = sorted(m.body for m in client.get_many("PS.RET", 10))
    assert bodies == [b"L", b"green"]
    client.unsubscribe("late")


def test_persistent_publication_is_all_or_none(client: Client) -> None:
    _fresh(client, "PS.OK", "PS.FULL")
    client.alter_queue("PS.FULL", max_depth=1)
    client.put("PS.FULL", b"filler")
    client.subscribe("orders/#", "PS.OK", name="ok")
    client.subscribe("orders/#", "PS.FULL", name="full")
    with pytest.raises(QMError) as e:
        client.publish("orders/1", b"o1", MessageDescriptor(persistence=1))
    assert e.value.reason_code == 2053
    assert client.inquire_queue("PS.OK")["current_depth"] == 0  # none delivered
    # Non-persistent publications go to every subscriber that can take them.
    assert client.publish("orders/2", b"o2", MessageDescriptor(persistence=0)) == 1
    client.purge("PS.FULL")
    assert client.publish("orders/3", b"o3", MessageDescriptor(persistence=1)) == 2
    client.unsubscribe("ok")
    client.unsubscribe("full")


def test_publication_in_a_unit_of_work(client: Client) -> None:
    _fresh(client, "PS.TX")
    client.subscribe("tx/#", "PS.TX", name="tx")
    client.publish("tx/a", b"1", MessageDescriptor(persistence=1), syncpoint=True)
    assert client.inquire_queue("PS.TX")["available"] == 0
    client.backout()
    client.publish("tx/a", b"2", MessageDescriptor(persistence=1), syncpoint=True)
    client.commit()
    m = client.get("PS.TX")
    assert m is not None and m.body == b"2" and client.get("PS.TX") is None
    client.unsubscribe("tx")


def test_topic_acls(qm_process: QueueManagerProcess, client: Client) -> None:
    _fresh(client, "PS.ACL")
    client.define_user("alice", "alice-password")
    client.define_user("bob", "bob-password-1")
    client.set_topic_acl("payroll", "*", publish=False, subscribe=False)
    client.set_topic_acl("payroll", "alice", publish=True, subscribe=True)
    client.set_topic_acl("payroll/public", "*", subscribe=True)
    alice = Client.connect(qm_process.url, user="alice", password="alice-password")
    bob = Client.connect(qm_process.url, user="bob", password="bob-password-1")
    try:
        alice.subscribe("payroll/#", "PS.ACL", name="alice-pay")
        assert alice.publish("payroll/june", b"x") == 1
        with pytest.raises(QMError) as e:
            bob.publish("payroll/june", b"forged")
        assert e.value.reason_code == 2035
        with pytest.raises(QMError) as e:
            bob.subscribe("payroll/june", "PS.ACL", name="bob-june")
        assert e.value.reason_code == 2035
        with pytest.raises(QMError) as e:
            bob.subscribe("payroll/june/#", "PS.ACL", name="bob-june-all")
        assert e.value.reason_code == 2035  # every topic it could match is denied
        bob.subscribe("payroll/public/notice", "PS.ACL", name="bob-public")
        assert bob.publish("elsewhere", b"free") == 0  # no rule on the path: allowed
        with pytest.raises(QMError) as e:
            bob.define_queue("BOB.Q")
        assert e.value.reason_code == 2035
        with pytest.raises(QMError) as e:
            bob.unsubscribe("alice-pay")
        assert e.value.reason_code == 2035
    finally:
        alice.close()
        bob.close()
        client.unsubscribe("alice-pay")
        client.unsubscribe("bob-public")
        client.set_topic_acl("payroll", "*", publish=True, subscribe=True)
        client.set_topic_acl("payroll", "alice", publish=True, subscribe=True)


def test_content_filters_select_publications(client: Client) -> None:
    _fresh(client, "PS.FILTER", "PS.NOFILTER")
    client.subscribe(
        "prices/#",
        "PS.FILTER",
        name="dear-eu",
        filter="Root.JSON.Data.price > 10 AND Root.MQRFH2.usr.region = 'EU'",
    )
    client.subscribe("prices/#", "PS.NOFILTER", name="all-prices")
    assert client.publish("prices/a", b'{"price": 12}', properties={"region": "EU"}) == 2
    assert client.publish("prices/b", b'{"price": 5}', properties={"region": "EU"}) == 1
    assert client.publish("prices/c", b'{"price": 50}', properties={"region": "US"}) == 1
    assert client.publish("prices/d", b"not json at all") == 1  # UNKNOWN does not match
    got = client.get_many("PS.FILTER", 10)
    assert [m.properties["MQTopicString"] for m in got] == ["prices/a"]
    client.unsubscribe("dear-eu")
    client.unsubscribe("all-prices")


def test_bad_content_filter_is_refused_with_its_position(client: Client) -> None:
    _fresh(client, "PS.BADFILTER")
    with pytest.raises(QMError) as e:
        client.subscribe("f/#", "PS.BADFILTER", filter="Root.JSON.Data.price >> 3")
    assert e.value.reason_code == 2459 and "line 1, column" in e.value.reason
    with pytest.raises(QMError) as e:
        client.subscribe("f/#", "PS.BADFILTER", filter="TRUE; DELETE FIELD Root")
    assert e.value.reason_code == 2459


def test_non_durable_subscription_ends_with_its_connection(
    qm_process: QueueManagerProcess, client: Client
) -> None:
    _fresh(client, "PS.TEMP")
    with qm_process.client() as other:
        other.subscribe("temp/#", "PS.TEMP", name="temp", durable=False)
        assert client.publish("temp/x", b"1") == 1
    client.ping()
    assert client.publish("temp/x", b"2") == 0


def test_streaming_queue_to_a_topic(client: Client) -> None:
    _fresh(client, "PS.SRC", "PS.COPY")
    client.subscribe("audit/#", "PS.COPY", name="audit")
    client.alter_queue("PS.SRC", stream_queue="topic:audit/src")
    client.put("PS.SRC", b"original")
    copy = client.get("PS.COPY")
    assert copy is not None and copy.body == b"original" and copy.properties["MQTopicString"] == "audit/src"
    client.unsubscribe("audit")
