"""Durable subscriptions of a broker, kept in the repository's ``subscriptions`` rows.

Where a subscription lives depends on the broker's transport (its ``qm_url``):

- **RabbitMQ** (``amqp://``, ``amqps://``): a subscription without a content filter is a binding of
  its queue to the topic exchange, the MQ topic pattern mapped to a routing key (``/`` → ``.``,
  ``+`` → ``*``, ``#`` → ``#``); RabbitMQ routes by routing key only, so a subscription with a
  filter is only recorded, and the publishing execution groups of the broker evaluate the filter
  and put the copies that pass (:mod:`flowbroker.pubsub.rules` reads these rows).
- **The local queue manager** (no URL, or a ``qm://`` one): the subscription is defined on it,
  filter and all, under the name ``flowbroker.sub<id>``.

The row is written only once the transport took the subscription; a delete removes the binding
(or the queue manager's subscription) before the row.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from flowbroker.pubsub.filters import compile_filter
from flowbroker.pubsub.topics import split_topic
from flowbroker.qm.names import queue_name_problem
from flowbroker.qm.protocol import RC_SUBSCRIPTION_NOT_FOUND, RC_UNKNOWN_OBJECT_NAME, QMError
from flowbroker.repository.models import Broker, Subscription
from flowbroker.services import audit, brokers
from flowbroker.services.errors import Conflict, Invalid, NotFound, ServiceError, problem

#: The repository column's width for a topic pattern.
TOPIC_MAX = 1000
#: The longest content filter accepted (an ESQL boolean expression).
FILTER_MAX = 10_000


class RabbitMqUnavailable(ServiceError):
    status_code = 503
    code = "rabbitmq_unavailable"


class RabbitMqRefused(ServiceError):
    status_code = 502
    code = "rabbitmq_refused"


def on_rabbitmq(broker: Broker) -> bool:
    return broker.qm_url.strip().lower().startswith(("amqp://", "amqps://"))


def name_of(row: Subscription) -> str:
    """The subscription's name: the queue manager's, and the one the publishing groups use."""
    return f"sub{row.id}"


def qm_name(row: Subscription) -> str:
    return f"flowbroker.{name_of(row)}"


def describe(row: Subscription, broker: Broker) -> dict[str, Any]:
    if not on_rabbitmq(broker):
        delivery = "queue manager"
    else:
        delivery = "filtered" if row.filter else "binding"
    return {
        "id": row.id,
        "name": name_of(row),
        "broker_id": row.broker_id,
        "topic": row.topic,
        "queue": row.queue,
        "filter": row.filter,
        "owner": row.owner,
        "delivery": delivery,
        "created_at": row.created_at,
    }


# -- validation ------------------------------------------------------------------------------------


def check_topic(topic: str) -> str:
    if len(topic) > TOPIC_MAX:
        raise Invalid(
            f"topic is {len(topic)} characters long, at most {TOPIC_MAX}",
            [problem("/topic", f"longer than {TOPIC_MAX} characters")],
        )
    try:
        split_topic(topic, pattern=True)
    except QMError as exc:
        raise Invalid(f"topic {topic!r}: {exc.reason}", [problem("/topic", exc.reason)]) from None
    return topic


def check_queue(queue: str) -> str:
    why = queue_name_problem(queue)
    if why is not None:
        raise Invalid(why, [problem("/queue", why)])
    return queue


def check_filter(text: str) -> str:
    if not text:
        return ""
    if len(text) > FILTER_MAX:
        raise Invalid(
            f"filter is {len(text)} characters long, at most {FILTER_MAX}",
            [problem("/filter", f"longer than {FILTER_MAX} characters")],
        )
    try:
        compile_filter(text)
    except QMError as exc:
        raise Invalid(exc.reason, [problem("/filter", exc.reason)]) from None
    return text


# -- the transports --------------------------------------------------------------------------------


@contextmanager
def rabbitmq(url: str) -> Iterator[Any]:
    """A RabbitMQ connection of the broker; unreachable is 503, a refusal 502 (or 403)."""
    from flowbroker.runtime.transports import RC_CONNECTION_BROKEN, RC_NOT_AUTHORIZED, TransportError
    from flowbroker.runtime.transports.amqp import AmqpTransport

    try:
        transport = AmqpTransport.open(url)
    except TransportError as exc:
        raise RabbitMqUnavailable(
            f"RabbitMQ is not usable: {exc.reason}", {"reason": exc.reason_code}
        ) from None
    try:
        yield transport
    except TransportError as exc:
        if exc.reason_code == RC_CONNECTION_BROKEN:
            raise RabbitMqUnavailable(exc.reason, {"reason": exc.reason_code}) from None
        refused = RabbitMqRefused(exc.reason, {"reason": exc.reason_code})
        if exc.reason_code == RC_NOT_AUTHORIZED:
            refused.status_code = 403
        raise refused from None
    finally:
        transport.close()


def _no_queue(queue: str, where: str) -> Invalid:
    """422 naming ``/queue``: the subscription's queue is not defined on the broker's transport."""
    return Invalid(
        f"no queue {queue!r} on the broker's {where}",
        [problem("/queue", f"no queue {queue!r} on the broker's {where}: define it first")],
    )


def _queue_must_exist(transport: Any, queue: str) -> None:
    if not transport.queue_exists(queue):
        raise _no_queue(queue, "RabbitMQ")


# -- the service -----------------------------------------------------------------------------------


def list_for(session: Session, broker_id: int) -> tuple[Broker, list[Subscription]]:
    broker = brokers.get(session, broker_id)
    rows = session.scalars(
        select(Subscription).where(Subscription.broker_id == broker_id).order_by(Subscription.id)
    )
    return broker, list(rows)


def get(session: Session, broker_id: int, subscription_id: int) -> tuple[Broker, Subscription]:
    broker = brokers.get(session, broker_id)
    row = session.get(Subscription, subscription_id)
    if row is None or row.broker_id != broker_id:
        raise NotFound(f"broker {broker.name!r} has no subscription with id {subscription_id}")
    return broker, row


def create(
    session: Session, actor: str, data: Path, broker_id: int, topic: str, queue: str, filter: str = ""
) -> tuple[Broker, Subscription]:
    """Subscribe ``queue`` to ``topic`` (MQ wildcards) on the broker's transport; 409 for a pair it has."""
    broker = brokers.get(session, broker_id)
    check_topic(topic)
    check_queue(queue)
    check_filter(filter)
    found = session.scalars(
        select(Subscription.id).where(
            Subscription.broker_id == broker_id, Subscription.topic == topic, Subscription.queue == queue
        )
    ).first()
    if found is not None:
        raise Conflict(
            f"queue {queue!r} is already subscribed to {topic!r} on broker {broker.name!r} (id {found})",
            {"pointer": "/topic", "id": found},
            code="duplicate_subscription",
        )
    row = Subscription(broker_id=broker_id, topic=topic, queue=queue, filter=filter, owner=actor)
    session.add(row)
    session.flush()
    try:
        if on_rabbitmq(broker):
            with rabbitmq(broker.qm_url) as transport:
                _queue_must_exist(transport, queue)
                if not filter:
                    transport.subscribe(topic, queue)
        else:
            from flowbroker.services import queues

            with queues.client(data) as qm:
                try:
                    qm.subscribe(topic, queue, name=qm_name(row), filter=filter or None, durable=True)
                except QMError as exc:
                    # the subscription's only object is its queue: a wrong field, as on RabbitMQ
                    if exc.reason_code != RC_UNKNOWN_OBJECT_NAME:
                        raise
                    raise _no_queue(queue, "queue manager") from None
    except BaseException:
        session.rollback()
        raise
    audit.record(
        session,
        actor,
        "subscription.create",
        f"subscription:{row.id}",
        {"broker": broker.name, "topic": topic, "queue": queue, "filter": filter},
    )
    session.commit()
    return broker, row


def delete(session: Session, actor: str, data: Path, broker_id: int, subscription_id: int) -> None:
    """Remove the subscription from the transport, then its row."""
    broker, row = get(session, broker_id, subscription_id)
    if on_rabbitmq(broker):
        if not row.filter:
            from flowbroker.runtime.transports import RC_UNKNOWN_OBJECT_NAME, TransportError

            with rabbitmq(broker.qm_url) as transport:
                try:
                    transport.unsubscribe(row.topic, row.queue)
                except TransportError as exc:
                    if exc.reason_code != RC_UNKNOWN_OBJECT_NAME:  # the queue is gone, and its bindings
                        raise
    else:
        from flowbroker.services import queues
        from flowbroker.services.queues import QueueManagerRefused

        try:
            with queues.client(data) as qm:
                qm.unsubscribe(qm_name(row))
        except QueueManagerRefused as exc:
            if exc.detail.get("reason") != RC_SUBSCRIPTION_NOT_FOUND:  # gone from the queue manager
                raise
    audit.record(
        session,
        actor,
        "subscription.delete",
        f"subscription:{row.id}",
        {"broker": broker.name, "topic": row.topic, "queue": row.queue},
    )
    session.delete(row)
    session.commit()
