"""Topic ACLs: who may publish or subscribe below a topic, kept in the repository's ``topic_acls``.

A rule names a topic subtree (a topic string without wildcards: the rule covers that topic and
every topic below it), a principal (a queue manager user, an execution group ``BROKER/GROUP``
whose flows it judges, or ``*`` for everyone) and whether publishing and subscribing are allowed
(``null``: the rule says nothing about that action). The deepest subtree holding a rule for the
principal (or ``*``) decides; with no rule on the path, the action is allowed.

Every change is handed whole to the local queue manager (which judges its application
connections and the flows that publish through it); execution groups read the table themselves
(:mod:`flowbroker.pubsub.rules`).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from flowbroker.pubsub.topics import MAX_TOPIC_LENGTH
from flowbroker.repository.models import TopicAcl
from flowbroker.services import audit
from flowbroker.services.errors import Conflict, Invalid, NotFound, ServiceError, problem

#: The repository column's width (shorter than the queue manager's own limit).
TOPIC_MAX = min(1000, MAX_TOPIC_LENGTH)
PRINCIPAL_RE = re.compile(r"^(\*|[A-Za-z0-9_.@-]{1,64}|[A-Za-z0-9_.@-]{1,32}/[A-Za-z0-9_.@-]{1,31})$")


def check_topic(topic: str, pointer: str = "/topic") -> str:
    """Refuse a topic string that cannot name a subtree, saying where (1-based level and column)."""
    if not topic:
        raise Invalid("topic is empty", [problem(pointer, "empty: name a topic subtree such as 'prices/eu'")])
    if len(topic) > TOPIC_MAX:
        raise Invalid(
            f"topic is {len(topic)} characters long, at most {TOPIC_MAX}",
            [problem(pointer, f"longer than {TOPIC_MAX} characters")],
        )
    for column, char in enumerate(topic, start=1):
        if ord(char) < 0x20 or ord(char) == 0x7F:
            what = "a NUL character" if char == "\x00" else f"the control character U+{ord(char):04X}"
            raise Invalid(
                f"topic contains {what} at column {column}",
                [problem(pointer, f"{what} at column {column}")],
            )
    column = 1
    for level_no, level in enumerate(topic.split("/"), start=1):
        for offset, char in enumerate(level):
            if char in "#+":
                at = column + offset
                if level == "#" and level_no > 1 and at == len(topic):
                    hint = f"a rule covers its whole subtree: name {topic[:-2]!r} instead of {topic!r}"
                else:
                    hint = "a rule names a topic subtree, without the wildcards '+' and '#'"
                raise Invalid(
                    f"topic {topic!r}: wildcard {char!r} in level {level_no}, column {at}: {hint}",
                    [problem(pointer, f"wildcard {char!r} in level {level_no}, column {at}: {hint}")],
                )
        column += len(level) + 1
    return topic


def check_principal(principal: str, pointer: str = "/principal") -> str:
    if not PRINCIPAL_RE.match(principal):
        raise Invalid(
            f"invalid principal {principal!r}",
            [
                problem(
                    pointer,
                    "'*' (everyone), a user name (letters, digits, _ . @ -, at most 64) or an "
                    "execution group BROKER/GROUP",
                )
            ],
        )
    return principal


def list_all(session: Session) -> list[TopicAcl]:
    return list(session.scalars(select(TopicAcl).order_by(TopicAcl.topic, TopicAcl.principal, TopicAcl.id)))


def get(session: Session, acl_id: int) -> TopicAcl:
    row = session.get(TopicAcl, acl_id)
    if row is None:
        raise NotFound(f"no topic ACL with id {acl_id}")
    return row


def _unique(session: Session, topic: str, principal: str, other_than: int | None = None) -> None:
    query = select(TopicAcl.id).where(TopicAcl.topic == topic, TopicAcl.principal == principal)
    if other_than is not None:
        query = query.where(TopicAcl.id != other_than)
    found = session.scalars(query).first()
    if found is not None:
        raise Conflict(
            f"topic {topic!r} already has a rule for {principal!r} (id {found}): change that one",
            {"pointer": "/topic", "id": found},
            code="duplicate_rule",
        )


def _says_something(publish: bool | None, subscribe: bool | None) -> None:
    if publish is None and subscribe is None:
        raise Invalid(
            "a rule must allow or deny publishing or subscribing",
            [problem("/publish", "publish and subscribe are both null: the rule would say nothing")],
        )


def as_rule(row: TopicAcl) -> dict[str, Any]:
    return {
        "topic": row.topic,
        "principal": row.principal,
        "publish": row.allow_publish,
        "subscribe": row.allow_subscribe,
    }


def create(
    session: Session,
    actor: str,
    topic: str,
    principal: str,
    publish: bool | None,
    subscribe: bool | None,
) -> TopicAcl:
    check_topic(topic)
    check_principal(principal)
    _says_something(publish, subscribe)
    _unique(session, topic, principal)
    row = TopicAcl(topic=topic, principal=principal, allow_publish=publish, allow_subscribe=subscribe)
    session.add(row)
    session.flush()
    audit.record(session, actor, "topic_acl.create", f"topic_acl:{row.id}", as_rule(row))
    session.commit()
    return row


def update(session: Session, actor: str, acl_id: int, changes: dict[str, Any]) -> TopicAcl:
    row = get(session, acl_id)
    for field in ("topic", "principal"):
        if field in changes and not isinstance(changes[field], str):
            raise Invalid(
                f"{field} cannot be null", [problem(f"/{field}", "a string is needed: it cannot be cleared")]
            )
    topic = check_topic(changes["topic"]) if "topic" in changes else row.topic
    principal = check_principal(changes["principal"]) if "principal" in changes else row.principal
    publish = changes["publish"] if "publish" in changes else row.allow_publish
    subscribe = changes["subscribe"] if "subscribe" in changes else row.allow_subscribe
    _says_something(publish, subscribe)
    _unique(session, topic, principal, other_than=row.id)
    row.topic, row.principal, row.allow_publish, row.allow_subscribe = topic, principal, publish, subscribe
    audit.record(session, actor, "topic_acl.update", f"topic_acl:{row.id}", as_rule(row))
    session.commit()
    return row


def delete(session: Session, actor: str, acl_id: int) -> None:
    row = get(session, acl_id)
    audit.record(session, actor, "topic_acl.delete", f"topic_acl:{row.id}", as_rule(row))
    session.delete(row)
    session.commit()


def push(session: Session, data: Path) -> str:
    """Hand the whole rule set to the local queue manager: "updated", or why it could not be."""
    from flowbroker.services import queues

    rules = [as_rule(row) for row in list_all(session)]
    try:
        with queues.client(data) as qm:
            qm.replace_topic_acls(rules)
    except ServiceError as exc:
        return f"not updated: {exc.message}"
    return "updated"
