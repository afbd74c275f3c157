"""Durable subscriptions of a broker through the API: on a RabbitMQ broker (the real one at
127.0.0.1:5672) a subscription without a filter is a binding on the topic exchange, a filtered one
a row the publishing groups apply; on the local queue manager a durable subscription of its own."""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from flowbroker.qm.harness import QueueManagerProcess

pytestmark = [pytest.mark.timeout(120)]


@pytest.fixture
def sub_api(sqlite_api_with: Any) -> Any:
    return sqlite_api_with()


class Rabbit:
    """Classic queues of one test on the real RabbitMQ, deleted after it."""

    def __init__(self, url: str) -> None:
        import pika

        self.url = url
        self.connection = pika.BlockingConnection(pika.URLParameters(url))
        self.channel = self.connection.channel()
        self.made: list[str] = []

    def queue(self, base: str) -> str:
        name = f"{base}.{secrets.token_hex(4)}"
        self.channel.queue_declare(name, durable=True, arguments={"x-queue-type": "classic"})
        self.made.append(name)
        return name

    def publish(self, routing_key: str) -> None:
        from flowbroker.runtime.transports.amqp import topic_exchange

        self.channel.exchange_declare(topic_exchange(), "topic", durable=True)
        self.channel.basic_publish(topic_exchange(), routing_key, b"x")

    def depth(self, queue: str) -> int:
        return int(self.channel.queue_declare(queue, passive=True).method.message_count)


@pytest.fixture
def rabbit(rabbitmq_url: str) -> Iterator[Rabbit]:
    queues = Rabbit(rabbitmq_url)
    try:
        yield queues
    finally:
        for name in queues.made:
            queues.channel.queue_delete(name)
        queues.connection.close()


def _broker(api: Any, qm_url: str) -> int:
    made = api.as_(
        "operator", "POST", "/api/brokers", json={"name": "B" + secrets.token_hex(3), "qmUrl": qm_url}
    )
    assert made.status_code == 201, made.text
    return int(made.json()["id"])


def _settled(rabbit: Rabbit, queue: str, want: int) -> int:
    import time

    deadline = time.monotonic() + 10
    while rabbit.depth(queue) < want and time.monotonic() < deadline:
        time.sleep(0.05)
    return rabbit.depth(queue)


def test_a_rabbitmq_subscription_is_a_binding_or_a_recorded_filter(sub_api: Any, rabbit: Rabbit) -> None:
    broker = _broker(sub_api, rabbit.url)
    root = "t" + secrets.token_hex(4)
    bound, filtered = rabbit.queue("BOUND"), rabbit.queue("FILTERED")
    path = f"/api/brokers/{broker}/subscriptions"

    assert sub_api.as_("viewer", "POST", path, json={"topic": f"{root}/#", "queue": bound}).status_code == 403
    made = sub_api.as_("operator", "POST", path, json={"topic": f"{root}/+/eu", "queue": bound})
    assert made.status_code == 201, made.text
    binding = made.json()
    assert binding["delivery"] == "binding" and binding["name"] == f"sub{binding['id']}"
    assert binding["brokerId"] == broker and binding["owner"] == "operator" and binding["filter"] == ""

    # MQ's '/' and '+' as the topic exchange's '.' and '*'
    rabbit.publish(f"{root}.prices.eu")
    rabbit.publish(f"{root}.prices.us")
    rabbit.publish(f"{root}.prices.eu.extra")
    assert _settled(rabbit, bound, 1) == 1

    dup = sub_api.as_("operator", "POST", path, json={"topic": f"{root}/+/eu", "queue": bound})
    assert dup.status_code == 409 and dup.json()["code"] == "duplicate_subscription", dup.text
    assert dup.json()["detail"] == {"pointer": "/topic", "id": binding["id"]}

    text = "Root.MQRFH2.usr.region = 'EU'"
    made = sub_api.as_(
        "operator", "POST", path, json={"topic": f"{root}/#", "queue": filtered, "filter": text}
    )
    assert made.status_code == 201, made.text
    recorded = made.json()
    assert recorded["delivery"] == "filtered" and recorded["filter"] == text
    # not bound: RabbitMQ cannot filter, the publishing groups read the row and put what passes
    rabbit.publish(f"{root}.prices.eu")
    assert _settled(rabbit, bound, 2) == 2 and rabbit.depth(filtered) == 0

    from flowbroker.pubsub import rules
    from flowbroker.repository import db

    with db.session_scope(sub_api.app.state.session_factory) as session:
        _, subs = rules.load(session, broker)
    assert subs == [(f"sub{recorded['id']}", f"{root}/#", filtered, text, "operator")]

    listed = sub_api.as_("viewer", "GET", path).json()
    assert [s["id"] for s in listed] == [binding["id"], recorded["id"]]

    assert sub_api.as_("operator", "DELETE", f"{path}/{binding['id']}").status_code == 204
    rabbit.publish(f"{root}.prices.eu")
    assert _settled(rabbit, bound, 3) == 2  # unbound: the publication reached no queue
    assert sub_api.as_("operator", "DELETE", f"{path}/{recorded['id']}").status_code == 204
    assert sub_api.as_("viewer", "GET", path).json() == []
    with db.session_scope(sub_api.app.state.session_factory) as session:
        assert rules.load(session, broker)[1] == []
    gone = sub_api.as_("operator", "DELETE", f"{path}/{recorded['id']}")
    assert gone.status_code == 404 and "no subscription with id" in gone.json()["message"], gone.text


@pytest.mark.parametrize(
    ("body", "pointer", "words"),
    [
        ({"topic": "a/#/b", "queue": "Q"}, "/topic", "'#' must be the last level (level 2)"),
        ({"topic": "a/b+/c", "queue": "Q"}, "/topic", "wildcard must fill its level: level 2"),
        ({"topic": "a\x00b", "queue": "Q"}, "/topic", "NUL"),
        ({"topic": "", "queue": "Q"}, "/topic", ""),
        ({"topic": "a", "queue": "A..B"}, "/queue", "contains '..'"),
        ({"topic": "a", "queue": "A B"}, "/queue", "contains ' '"),
        ({"topic": "a", "queue": "Q" * 49}, "/queue", ""),
        ({"topic": "a", "queue": "Q", "filter": "Root.JSON.("}, "/filter", "content filter: line"),
        ({"topic": "a", "queue": "Q", "filter": "TRUE; FALSE"}, "/filter", "one expression"),
        ({"topic": "a", "queue": "Q", "extra": 1}, "/extra", ""),
        ({"topic": "a"}, "/queue", ""),
    ],
)
def test_a_bad_subscription_is_refused_with_a_pointer(
    sub_api: Any, rabbitmq_url: str, body: dict[str, Any], pointer: str, words: str
) -> None:
    broker = _broker(sub_api, rabbitmq_url)
    refused = sub_api.as_("operator", "POST", f"/api/brokers/{broker}/subscriptions", json=body)
    assert refused.status_code == 422, refused.text
    problems = refused.json()["detail"]
    assert problems[0]["pointer"] == pointer, problems
    assert words in problems[0]["message"], problems
    assert sub_api.as_("viewer", "GET", f"/api/brokers/{broker}/subscriptions").json() == []


def test_a_queue_rabbitmq_lacks_and_an_unknown_broker_are_refused(sub_api: Any, rabbitmq_url: str) -> None:
    broker = _broker(sub_api, rabbitmq_url)
    missing = "NOPE." + secrets.token_hex(4)
    refused = sub_api.as_(
        "operator", "POST", f"/api/brokers/{broker}/subscriptions", json={"topic": "a/#", "queue": missing}
    )
    assert refused.status_code == 422, refused.text
    assert refused.json()["detail"][0]["pointer"] == "/queue"
    assert "define it first" in refused.json()["detail"][0]["message"]
    assert sub_api.as_("viewer", "GET", f"/api/brokers/{broker}/subscriptions").json() == []

    unknown = sub_api.as_(
        "operator", "POST", "/api/brokers/999999/subscriptions", json={"topic": "a", "queue": "Q"}
    )
    assert unknown.status_code == 404 and unknown.json()["message"] == "no broker with id 999999"
    assert sub_api.as_("viewer", "GET", "/api/brokers/999999/subscriptions").status_code == 404
    assert sub_api.as_("operator", "DELETE", f"/api/brokers/{broker}/subscriptions/999999").status_code == 404


def test_an_unreachable_rabbitmq_is_a_503_and_nothing_is_recorded(sub_api: Any) -> None:
    import socket

    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    broker = _broker(sub_api, f"amqp://guest:guest@127.0.0.1:{port}/")
    refused = sub_api.as_(
        "operator", "POST", f"/api/brokers/{broker}/subscriptions", json={"topic": "a/#", "queue": "Q"}
    )
    assert refused.status_code == 503, refused.text
    body = refused.json()
    assert body["code"] == "rabbitmq_unavailable"
    assert f"cannot reach RabbitMQ at 127.0.0.1:{port}" in body["message"]
    assert "Traceback" not in refused.text
    assert sub_api.as_("viewer", "GET", f"/api/brokers/{broker}/subscriptions").json() == []


def test_on_the_local_queue_manager_it_is_a_durable_subscription(sub_api: Any, tmp_path: Path) -> None:
    broker = _broker(sub_api, "")
    path = f"/api/brokers/{broker}/subscriptions"
    down = sub_api.as_("operator", "POST", path, json={"topic": "a/#", "queue": "Q"})
    assert down.status_code == 503 and down.json()["code"] == "queue_manager_unavailable", down.text
    assert sub_api.as_("viewer", "GET", path).json() == []

    with QueueManagerProcess(tmp_path, fsync=False) as qm, qm.client() as admin:
        # a queue the queue manager lacks is the field's mistake, as on RabbitMQ: 422 naming /queue
        missing = sub_api.as_("operator", "POST", path, json={"topic": "a/#", "queue": "NOPE.Q"})
        assert missing.status_code == 422, missing.text
        assert missing.json()["detail"][0]["pointer"] == "/queue"
        assert "no queue 'NOPE.Q' on the broker's queue manager: define it first" in missing.text
        assert sub_api.as_("viewer", "GET", path).json() == []
        admin.define_queue("EU.PRICES")
        made = sub_api.as_(
            "operator",
            "POST",
            path,
            json={"topic": "prices/#", "queue": "EU.PRICES", "filter": "Root.MQRFH2.usr.region = 'EU'"},
        )
        assert made.status_code == 201, made.text
        sub = made.json()
        assert sub["delivery"] == "queue manager"
        assert admin.publish("prices/x", b"US", properties={"region": "US"}) == 0
        assert admin.publish("prices/x", b"EU", properties={"region": "EU"}) == 1
        assert admin.get("EU.PRICES").body == b"EU"
        assert sub_api.as_("operator", "DELETE", f"{path}/{sub['id']}").status_code == 204
        assert admin.publish("prices/x", b"EU", properties={"region": "EU"}) == 0


def test_the_sub_command_manages_a_brokers_subscriptions_through_the_api(
    rabbit: Rabbit, tmp_path_factory: pytest.TempPathFactory
) -> None:
    import os
    import subprocess
    import sys

    import httpx
    from api_process import running_api

    queue = rabbit.queue("CLI")
    root = "c" + secrets.token_hex(4)
    with running_api(tmp_path_factory.mktemp("sub-cli"), "correct-horse-battery") as (url, token):
        made = httpx.post(
            url + "/api/brokers",
            json={"name": "RABBIT", "qmUrl": rabbit.url},
            headers={"Authorization": f"Bearer {token}"},
        )
        assert made.status_code == 201, made.text
        env = {**os.environ, "FLOWBROKER_TOKEN": token, "FLOWBROKER_API": url}

        def sub(*argv: str) -> subprocess.CompletedProcess[str]:
            return subprocess.run(
                [sys.executable, "-m", "flowbroker.cli", "sub", *argv],
                capture_output=True,
                text=True,
                env=env,
                timeout=60,
            )

        defined = sub("--broker", "RABBIT", f"{root}/+/eu", "--queue", queue)
        assert defined.returncode == 0, defined.stderr
        sub_id, delivery = defined.stdout.split()
        assert delivery == "binding"
        rabbit.publish(f"{root}.x.eu")
        assert _settled(rabbit, queue, 1) == 1
        listed = sub("--broker", "RABBIT", "--list")
        assert listed.stdout.split("\t")[:4] == [sub_id, f"{root}/+/eu", queue, "binding\n"], listed.stdout
        bad = sub("--broker", "RABBIT", "a/#/b", "--queue", queue)
        assert bad.returncode != 0 and "'#' must be the last level (level 2)" in bad.stderr, bad.stderr
        assert "Traceback" not in bad.stderr
        assert sub("--broker", "RABBIT", "--delete", sub_id).returncode == 0
        assert sub("--broker", "RABBIT", "--list").stdout == ""
        unknown = sub("--broker", "NOPE", "--list")
        assert unknown.returncode != 0 and "no broker named 'NOPE'" in unknown.stderr
