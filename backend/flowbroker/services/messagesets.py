"""Message sets (the MRM dictionary of message types and physical formats), stored with versions."""

from __future__ import annotations

import re
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from flowbroker.repository.models import MessageSet, MessageSetVersion
from flowbroker.services import audit
from flowbroker.services.errors import Conflict, Invalid, NotFound, problem
from flowbroker.services.validation import check_text

NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_.\-]{0,127}$")


def check(name: Any, document: Any) -> None:
    if not isinstance(name, str) or not NAME_RE.match(name):
        raise Invalid(
            f"invalid message set name {name!r}",
            [problem("/name", "a letter or _ then letters, digits, . _ - (at most 128)")],
        )
    if not isinstance(document, dict):
        raise Invalid(
            "a message set document must be a JSON object", [problem("/document", "must be an object")]
        )
    found: list[dict[str, str]] = []
    check_text(document, "/document", found)
    if found:
        raise Invalid(f"invalid message set: {found[0]['pointer']}: {found[0]['message']}", found)
    from flowbroker.formats.mrm.model import MessageSetError, compile_set

    try:
        # a set that does not compile could never parse a message: refuse it when it is stored
        compile_set(document, name)
    except MessageSetError as exc:
        pointer = "/document" + exc.pointer.rstrip("/")
        reason = str(exc).removesuffix(f" (at {exc.pointer})")
        raise Invalid(f"invalid message set: {pointer}: {reason}", [problem(pointer, reason)]) from None


def list_all(session: Session) -> list[MessageSet]:
    return list(session.scalars(select(MessageSet).order_by(MessageSet.name)))


def get(session: Session, set_id: int) -> MessageSet:
    found = session.get(MessageSet, set_id)
    if found is None:
        raise NotFound(f"no message set with id {set_id}")
    return found


def by_name(session: Session, name: str) -> MessageSet | None:
    return session.scalars(select(MessageSet).where(MessageSet.name == name)).first()


def version(session: Session, message_set: MessageSet, number: int | None = None) -> MessageSetVersion:
    wanted = message_set.current_version if number is None else number
    row = session.scalars(
        select(MessageSetVersion).where(
            MessageSetVersion.message_set_id == message_set.id, MessageSetVersion.version == wanted
        )
    ).first()
    if row is None:
        raise NotFound(f"message set {message_set.name!r} has no version {wanted}")
    return row


def versions(session: Session, message_set: MessageSet) -> list[MessageSetVersion]:
    return list(
        session.scalars(
            select(MessageSetVersion)
            .where(MessageSetVersion.message_set_id == message_set.id)
            .order_by(MessageSetVersion.version.desc())
        )
    )


def create(
    session: Session, actor: str, name: str, document: dict[str, Any], description: str = ""
) -> MessageSet:
    check(name, document)
    if by_name(session, name) is not None:
        raise Conflict(
            f"a message set named {name!r} already exists", {"pointer": "/name"}, code="duplicate_name"
        )
    message_set = MessageSet(name=name, description=description, current_version=1)
    session.add(message_set)
    session.flush()
    session.add(MessageSetVersion(message_set_id=message_set.id, version=1, document=document, author=actor))
    audit.record(
        session, actor, "messageset.create", f"messageset:{name}", {"id": message_set.id, "version": 1}
    )
    session.commit()
    return message_set


def save(
    session: Session, actor: str, set_id: int, document: dict[str, Any], description: str | None = None
) -> MessageSet:
    """Store ``document`` as the set's next version."""
    message_set = get(session, set_id)
    check(message_set.name, document)
    number = message_set.current_version + 1
    session.add(
        MessageSetVersion(message_set_id=message_set.id, version=number, document=document, author=actor)
    )
    message_set.current_version = number
    if description is not None:
        message_set.description = description
    audit.record(session, actor, "messageset.save", f"messageset:{message_set.name}", {"version": number})
    session.commit()
    return message_set


def upsert(
    session: Session, actor: str, name: str, document: dict[str, Any], description: str = ""
) -> MessageSet:
    """Create the set, or add a version when its current document differs (archive import)."""
    existing = by_name(session, name)
    if existing is None:
        return create(session, actor, name, document, description)
    if version(session, existing).document == document:
        return existing
    return save(session, actor, existing.id, document)


def delete(session: Session, actor: str, set_id: int) -> None:
    message_set = get(session, set_id)
    session.delete(message_set)
    audit.record(session, actor, "messageset.delete", f"messageset:{message_set.name}", {"id": set_id})
    session.commit()
