"""Topic ACLs and content filters on both transports: the real queue manager process and the real
RabbitMQ. A flow is judged as its execution group (``BROKER/GROUP``)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from flowbroker.pubsub import rules as pubsub_rules
from flowbroker.pubsub.rules import Rule
from flowbroker.qm.protocol import MessageDescriptor
from flowbroker.runtime import transports
from flowbroker.runtime.engine import ExecutionGroupRuntime
from flowbroker.runtime.harness import flow
from transport_support import unique, wait_for

pytestmark = [pytest.mark.timeout(120)]

PRINCIPAL = "B1/EG1"
JSON_MD = MessageDescriptor(format="MQSTR", persistence=1)


class Side:
    """One transport: a connector judged as the group, a probe judged as nobody, queues, and the
    rule set as the configuration manager hands it out (to the queue manager and to the groups)."""

    def __init__(self, kind: str, url: str, data_dir: str | None, make_queue: Any, qm: Any = None) -> None:
        self.kind = kind
        self.url = url
        self.make_queue = make_queue
        self.qm = qm
        self.connect = transports.connector(url, data_dir=data_dir, principal=PRINCIPAL)
        self.probe = transports.connector(url, data_dir=data_dir)()

    def set_rules(self, rules: list[Rule]) -> None:
        pubsub_rules.current().set_acls(rules)
        if self.qm is not None:
            with self.qm.client() as client:
                client.replace_topic_acls([r.as_dict() for r in rules])

    def bodies(self, queue: str, count: int, timeout: float = 20.0) -> list[bytes]:
        got: list[Any] = []

        def enough() -> bool:
            got.extend(self.probe.get_many(queue, count - len(got), wait=0.2))
            return len(got) >= count

        wait_for(enough, timeout, f"{count} messages on {queue}")
        return [m.body for m in got]


@pytest.fixture(params=["qm", "amqp"])
def side(request: pytest.FixtureRequest) -> Iterator[Side]:
    if request.param == "qm":
        qm = request.getfixturevalue("qm_process")

        def make_queue(base: str) -> str:
            name = unique(base)
            with qm.client() as client:
                client.define_queue(name)
            return name

        chosen = Side("qm", qm.url, str(qm.data_dir), make_queue, qm)
    else:
        rabbit = request.getfixturevalue("rabbit")
        chosen = Side("amqp", rabbit.url, None, lambda base: rabbit.queue(base, "classic"))
    try:
        yield chosen
    finally:
        chosen.set_rules([])
        pubsub_rules.current().forget_local()
        pubsub_rules.current().set_filtered([])
        chosen.probe.close()


@pytest.fixture
def group(side: Side, tmp_path: Path) -> Iterator[ExecutionGroupRuntime]:
    runtime = ExecutionGroupRuntime(side.connect, trace_dir=tmp_path / "trace")
    yield runtime
    runtime.shutdown(timeout=10)


def publisher(src: str, topic: str, failed: str, *, routed: bool) -> dict[str, Any]:
    nodes: dict[str, Any] = {
        "in": ("MQInput", {"queueName": src}),
        "pub": ("Publication", {"topic": topic}),
        "fail": ("MQOutput", {"queueName": failed}),
    }
    wires = ["in.out -> pub", "pub.failure -> fail"]
    if routed:  # the number of deliveries is waited for; else the publication travels with the commit
        nodes["done"] = ("MQOutput", {"queueName": failed})
        wires += ["pub.out -> done", "pub.noMatch -> done"]
    return flow(nodes, wires, name=f"Pub{abs(hash(src)) % 100000}")


@pytest.mark.parametrize("routed", [False, True], ids=["with-the-commit", "counted"])
def test_a_publication_the_acls_deny_goes_to_the_failure_terminal(
    side: Side, group: ExecutionGroupRuntime, routed: bool
) -> None:
    root = unique("acl").replace(".", "")
    src, failed, sub = side.make_queue("IN"), side.make_queue("FAIL"), side.make_queue("SUB")
    side.probe.subscribe(f"{root}/#", sub)
    side.set_rules(
        [Rule(f"{root}/secret", PRINCIPAL, False, None), Rule(f"{root}/secret", "other", True, None)]
    )
    deployed = group.deploy(publisher(src, f"{root}/secret/x", failed, routed=routed))
    side.probe.put(src, b'{"n": 1}', JSON_MD)
    assert side.bodies(failed, 1) == [b'{"n": 1}']
    assert side.probe.get_many(sub, 1, wait=0.5) == []  # refused, not published
    wait_for(lambda: deployed.statistics()["nodes"]["pub"]["errors"] >= 1, 10, "the error to be counted")
    stats = deployed.statistics()
    assert stats["backouts"] == 0  # the failure terminal took it: nothing backed out, nothing lost

    # the rule lifted: the same flow publishes
    side.set_rules([])
    side.probe.put(src, b'{"n": 2}', JSON_MD)
    assert side.bodies(sub, 1) == [b'{"n": 2}']
    if routed:
        assert side.bodies(failed, 1) == [b'{"n": 2}']  # through out: delivered to one subscriber


def test_the_queue_manager_itself_judges_a_flow_as_its_group(qm_process: Any, tmp_path: Path) -> None:
    """Without the group's own copy of the rules, the queue manager refuses the alternate user."""
    side = Side("qm", qm_process.url, str(qm_process.data_dir), None, qm_process)
    root = unique("qmacl").replace(".", "")
    try:
        with qm_process.client() as client:
            client.replace_topic_acls([{"topic": f"{root}/secret", "principal": PRINCIPAL, "publish": False}])
        pubsub_rules.current().set_acls([])
        transport = side.connect()
        try:
            with pytest.raises(Exception) as refused:
                transport.publish(f"{root}/secret/x", b"x")
            assert getattr(refused.value, "reason_code", None) == 2035
            assert PRINCIPAL in str(refused.value)
            assert transport.publish(f"{root}/open", b"x") == 0
        finally:
            transport.close()
    finally:
        side.set_rules([])
        side.probe.close()


def test_a_subscription_the_acls_deny_is_refused(side: Side) -> None:
    root = unique("sub").replace(".", "")
    queue = side.make_queue("SUB")
    side.set_rules([Rule(f"{root}/private", PRINCIPAL, None, False)])
    transport = side.connect()
    try:
        for pattern in (f"{root}/private", f"{root}/private/#", f"{root}/private/+/eu"):
            with pytest.raises(Exception) as refused:
                transport.subscribe(pattern, queue)
            assert getattr(refused.value, "reason_code", None) == 2035, pattern
            assert f"{PRINCIPAL} may not subscribe" in str(refused.value)
        with pytest.raises(Exception) as bad:
            transport.subscribe(f"{root}/a#", queue)
        assert getattr(bad.value, "reason_code", None) == 2425
        transport.subscribe(f"{root}/public/#", queue)  # allowed
        side.probe.publish(f"{root}/public/x", b"seen")
        assert side.bodies(queue, 1) == [b"seen"]
    finally:
        transport.close()


def test_content_filters_select_what_a_subscription_receives(side: Side) -> None:
    root = unique("flt").replace(".", "")
    big, every = side.make_queue("BIG"), side.make_queue("ALL")
    side.probe.subscribe(f"{root}/orders/+", big, name=f"{root}.big", filter="Root.JSON.Data.total > 100")
    side.probe.subscribe(f"{root}/orders/+", every, name=f"{root}.all")
    totals = [5, 150, 99, 1000]
    counts = [
        side.probe.publish(f"{root}/orders/new", json.dumps({"total": t}).encode(), JSON_MD) for t in totals
    ]
    assert counts == [1, 2, 1, 2]  # the filtered copies are counted as deliveries
    pubsub_rules.current().set_filtered([])  # a refresh from a repository holding none keeps them
    assert side.probe.publish(f"{root}/orders/new", json.dumps({"total": 500}).encode(), JSON_MD) == 2
    totals.append(500)
    assert sorted(side.bodies(big, 3)) == sorted(json.dumps({"total": t}).encode() for t in (150, 1000, 500))
    assert len(side.bodies(every, 5)) == 5
    assert side.probe.get_many(big, 1, wait=0.5) == []
    with pytest.raises(Exception) as bad:
        side.probe.subscribe(f"{root}/orders/+", big, name=f"{root}.bad", filter="Root.JSON.Data.total >")
    assert getattr(bad.value, "reason_code", None) == 2459
    assert "content filter: line" in str(bad.value)  # where, as the queue manager says it


def test_filtered_subscriptions_in_the_repository_apply_to_every_publisher(
    rabbit: Any, tmp_path: Path
) -> None:
    """On RabbitMQ the groups read filtered subscriptions from the repository: a publisher that
    never subscribed applies them; a filter that does not compile is reported and left out."""
    from flowbroker.repository import db
    from flowbroker.repository.models import Subscription

    engine = db.make_engine(f"sqlite:///{tmp_path / 'repo.db'}")
    db.upgrade(engine)
    factory = db.session_factory(engine)
    root = unique("repo").replace(".", "")
    eu, broken = rabbit.queue("EU", "classic"), rabbit.queue("BROKEN", "classic")
    with db.session_scope(factory) as session:
        session.add(
            Subscription(topic=f"{root}/#", queue=eu, filter="Root.MQRFH2.usr.region = 'EU'", owner="x")
        )
        session.add(Subscription(topic=f"{root}/#", queue=broken, filter="Root.JSON.(", owner="x"))
        session.add(Subscription(topic=f"{root}/#", queue=broken, filter="", owner="x"))  # bound, not ours
        session.commit()
        problems = pubsub_rules.refresh(session, None)
    try:
        assert len(problems) == 1 and "content filter: line" in problems[0], problems
        transport = transports.connector(rabbit.url)()
        try:
            for region in ("EU", "US", "EU"):
                transport.publish(f"{root}/prices", region.encode(), properties={"region": region})
            got = transport.get_many(eu, 5, wait=2)
            while len(got) < 2:
                more = transport.get_many(eu, 5, wait=2)
                assert more, got
                got += more
            assert [m.body for m in got] == [b"EU", b"EU"]
            assert got[0].properties["MQTopicString"] == f"{root}/prices"
            assert transport.get_many(broken, 5, wait=0.5) == []
        finally:
            transport.close()
    finally:
        pubsub_rules.current().set_filtered([])
        engine.dispose()
