"""The publish/subscribe rules an execution group enforces itself: topic ACLs and, on RabbitMQ,
the content filters of subscriptions.

The repository's ``topic_acls`` table is the one source of ACLs: the configuration manager hands
the whole set to the embedded queue manager when it changes (which judges application
connections, and flows through their alternate user), and every execution group reads it into
the process-wide :class:`PubSubRules` when it starts, at each deployment and every
``FLOWBROKER_PUBSUB_REFRESH`` seconds. A flow on RabbitMQ is judged here, by its transport.

RabbitMQ routes by routing key only, so a subscription with a content filter is not bound to the
topic exchange: the publishing transport evaluates the filter (the same compiled ESQL expression
the queue manager runs) and puts a copy on the subscriber's queue itself, in the same unit of work.
Those subscriptions are the repository's ``subscriptions`` rows of the broker that have a filter.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass
from typing import Any

from flowbroker.pubsub.filters import Filter, compile_filter
from flowbroker.pubsub.topics import Subscription, TopicSpace, split_topic
from flowbroker.qm.protocol import QMError


def refresh_interval() -> float:
    """Seconds between two reads of the rules by an execution group (``FLOWBROKER_PUBSUB_REFRESH``)."""
    try:
        return max(0.5, float(os.environ.get("FLOWBROKER_PUBSUB_REFRESH", "5")))
    except ValueError:
        return 5.0


@dataclass(frozen=True)
class Rule:
    topic: str
    principal: str
    publish: bool | None
    subscribe: bool | None

    def as_dict(self) -> dict[str, Any]:
        return {
            "topic": self.topic,
            "principal": self.principal,
            "publish": self.publish,
            "subscribe": self.subscribe,
        }


class PubSubRules:
    """ACLs and filtered subscriptions, replaced whole (readers see one set or the other)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._acls = TopicSpace()
        self._filtered = TopicSpace()
        self._compiled: dict[str, Filter] = {}
        #: Filtered subscriptions this process's own transports made (kept across refreshes).
        self._local: dict[str, Subscription] = {}
        #: Why filtered subscriptions of the last refresh were left out.
        self.problems: list[str] = []

    # -- ACLs ------------------------------------------------------------------------------------

    def set_acls(self, rules: list[Rule]) -> None:
        space = TopicSpace()
        for rule in rules:
            space.set_acl(rule.topic, rule.principal, rule.publish, rule.subscribe)
        with self._lock:
            self._acls = space

    def check(self, principal: str, topic: str, action: str) -> None:
        """Refuse (QMError 2035) what the ACLs deny ``principal``; an empty principal is exempt."""
        if principal:
            self._acls.check(principal, topic, action)

    def allows(self, principal: str, topic: str, action: str) -> bool:
        return not principal or self._acls.allows(principal, topic, action)

    # -- filtered subscriptions --------------------------------------------------------------------

    def set_filtered(self, subscriptions: list[tuple[str, str, str, str, str]]) -> list[str]:
        """Replace the filtered subscriptions (name, topic, queue, filter, principal by row); the
        problems of those refused (bad topic or filter), one line each."""
        space = TopicSpace()
        problems: list[str] = []
        for name, topic, queue, text, principal in _rows(subscriptions):
            try:
                fn = self._compiled.get(text) or compile_filter(text)
                self._compiled[text] = fn
                space.add(
                    Subscription(
                        name=name,
                        topic=topic,
                        queue=queue,
                        filter_text=text,
                        principal=principal,
                        filter_fn=fn,
                    )
                )
            except QMError as exc:
                problems.append(f"subscription {name}: {exc.reason}")
        with self._lock:
            for sub in self._local.values():
                if sub.name not in space.subscriptions:
                    space.add(sub)
            self._filtered = space
            self.problems = problems
        return problems

    def add_filtered(self, name: str, topic: str, queue: str, text: str, principal: str = "") -> None:
        """One filtered subscription made by this process (QMError for a bad topic or filter)."""
        split_topic(topic, pattern=True)
        fn = compile_filter(text)
        sub = Subscription(
            name=name, topic=topic, queue=queue, filter_text=text, principal=principal, filter_fn=fn
        )
        with self._lock:
            self._compiled[text] = fn
            self._local[name] = sub
            self._filtered.remove(name)
            self._filtered.add(sub)

    def forget_local(self) -> None:
        """Drop the filtered subscriptions this process made (tests; a group never needs it)."""
        with self._lock:
            for name in self._local:
                self._filtered.remove(name)
            self._local.clear()

    def filtered(self, topic: str) -> list[Subscription]:
        """The filtered subscriptions whose pattern matches ``topic`` and whose owner may receive it."""
        found = self._filtered.match(topic)
        return [s for s in found if self.allows(s.principal, topic, "subscribe")]


def _rows(rows: list[Any]) -> list[tuple[str, str, str, str, str]]:
    out = []
    for row in rows:
        name, topic, queue, text, *rest = row
        out.append((str(name), str(topic), str(queue), str(text), str(rest[0]) if rest else ""))
    return out


_current = PubSubRules()


def current() -> PubSubRules:
    """This process's rules (one per execution group process)."""
    return _current


def load(session: Any, broker_id: int | None) -> tuple[list[Rule], list[tuple[str, str, str, str, str]]]:
    """The ACLs and the broker's filtered subscriptions, as the repository holds them."""
    from sqlalchemy import or_, select

    from flowbroker.repository.models import Subscription as SubscriptionRow
    from flowbroker.repository.models import TopicAcl

    acls = [
        Rule(row.topic, row.principal, row.allow_publish, row.allow_subscribe)
        for row in session.scalars(select(TopicAcl).order_by(TopicAcl.id))
    ]
    query = select(SubscriptionRow).where(SubscriptionRow.filter != "")
    if broker_id is not None:
        query = query.where(or_(SubscriptionRow.broker_id.is_(None), SubscriptionRow.broker_id == broker_id))
    subs = [
        (f"sub{row.id}", row.topic, row.queue, row.filter, row.owner)
        for row in session.scalars(query.order_by(SubscriptionRow.id))
    ]
    return acls, subs


def refresh(session: Any, broker_id: int | None, rules: PubSubRules | None = None) -> list[str]:
    """Read the rules from the repository into ``rules`` (this process's by default)."""
    acls, subs = load(session, broker_id)
    target = rules or _current
    target.set_acls(acls)
    return target.set_filtered(subs)
