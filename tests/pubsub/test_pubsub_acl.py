"""Topic ACLs hold for wildcard subscriptions: checked where decidable at subscribe, always at delivery."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from flowbroker.pubsub.topics import TopicSpace
from flowbroker.qm.client import Client, MessageDescriptor, QMError
from flowbroker.qm.harness import QueueManagerProcess

pytestmark = pytest.mark.timeout(60)


@pytest.fixture
def mallory(qm_process: QueueManagerProcess, client: Client) -> Iterator[Client]:
    """A user denied both publishing and subscribing on ``payroll``, which carol owns."""
    client.define_user("mallory", "mallory-password")
    client.define_user("carol", "carol-password")
    client.set_topic_acl("payroll", "*", publish=False, subscribe=False)
    client.set_topic_acl("payroll", "carol", publish=True, subscribe=True)
    m = Client.connect(qm_process.url, user="mallory", password="mallory-password")
    try:
        yield m
    finally:
        m.close()
        for sub in client.admin("list_subscriptions")["subscriptions"]:
            client.unsubscribe(sub["name"])
        client.set_topic_acl("payroll", "*", publish=True, subscribe=True)


def _fresh(c: Client, name: str) -> str:
    c.define_queue(name, replace=True)
    c.purge(name)
    return name


@pytest.mark.parametrize("pattern", ["#", "+", "+/june", "+/+"])
def test_wildcards_do_not_reach_denied_topics(
    qm_process: QueueManagerProcess, client: Client, mallory: Client, pattern: str
) -> None:
    q = _fresh(client, "PS.MALLORY." + str(len(pattern)) + ("H" if "#" in pattern else "P"))
    with Client.connect(qm_process.url, user="carol", password="carol-password") as carol:
        carol.publish("payroll/june", b"salaries", MessageDescriptor(persistence=1), retain=True)
        carol.publish("payroll", b"totals", retain=True)
        carol.publish("canteen/june", b"menu", retain=True)
        carol.publish("canteen", b"open")
    info = mallory.subscribe(pattern, q, name=f"mallory-{pattern}")
    with Client.connect(qm_process.url, user="carol", password="carol-password") as carol:
        carol.publish("payroll/june", b"bonus")
        carol.publish("payroll", b"more totals")
        carol.publish("canteen/june", b"soup")
    got = client.get_many(q, 50)
    assert not any(m.properties["MQTopicString"].startswith("payroll") for m in got)
    canteen = [b"menu", b"soup"] if pattern != "+" else []
    assert [m.body for m in got] == canteen
    assert info["retained_delivered"] == (1 if canteen else 0)


def test_subscriptions_that_can_only_match_denied_topics_are_refused(client: Client, mallory: Client) -> None:
    q = _fresh(client, "PS.MALLORY.REFUSED")
    for pattern in ("payroll", "payroll/#", "payroll/+", "payroll/+/x", "payroll/june/#"):
        with pytest.raises(QMError) as e:
            mallory.subscribe(pattern, q, name=f"refused-{pattern}")
        assert e.value.reason_code == 2035
        assert e.value.reason.startswith("topic ACL: mallory may not subscribe")
    # A subtree opened below the denied one makes a wildcard decidable the other way: the
    # subscription is accepted and delivery lets through only the opened subtree.
    client.set_topic_acl("payroll/public", "*", subscribe=True)
    mallory.subscribe("payroll/+", q, name="mallory-public")
    assert client.publish("payroll/public", b"notice") == 1
    assert client.publish("payroll/june", b"secret") == 0
    assert [m.body for m in client.get_many(q, 10)] == [b"notice"]


def test_delivery_follows_acl_changes_after_subscribing(client: Client, mallory: Client) -> None:
    q = _fresh(client, "PS.MALLORY.LATER")
    client.set_topic_acl("hr", "*", subscribe=True)
    mallory.subscribe("hr/#", q, name="mallory-hr")
    assert client.publish("hr/reviews", b"before") == 1
    client.set_topic_acl("hr/reviews", "mallory", subscribe=False)
    assert client.publish("hr/reviews", b"after") == 0
    assert client.publish("hr/holidays", b"fine") == 1
    assert [m.body for m in client.get_many(q, 10)] == [b"before", b"fine"]
    client.set_topic_acl("hr/reviews", "mallory", subscribe=True)


def test_wildcard_decisions_follow_the_deepest_rule() -> None:
    space = TopicSpace()
    space.set_acl("payroll", "*", publish=False, subscribe=False)
    space.set_acl("payroll", "carol", publish=None, subscribe=True)
    space.set_acl("payroll/public", "*", publish=None, subscribe=True)
    space.set_acl("payroll/public/board", "mallory", publish=None, subscribe=False)
    cases = {
        "#": True,
        "+": True,
        "payroll": False,
        "payroll/#": True,  # payroll/public
        "payroll/june/#": False,
        "payroll/+/board": False,  # payroll/public/board is mallory's exception, the rest inherit payroll
        "payroll/+/wall": True,
        "payroll/public/board": False,
        "payroll/public/board/#": False,
        "payroll/public/+": True,
    }
    for pattern, allowed in cases.items():
        assert space.may_match_allowed("mallory", pattern.split("/")) is allowed, pattern
    assert space.may_match_allowed("carol", ["payroll", "june", "#"]) is True
    assert space.allows("mallory", "payroll/public/board", "subscribe") is False
    assert space.allows("mallory", "payroll/public/wall", "subscribe") is True
