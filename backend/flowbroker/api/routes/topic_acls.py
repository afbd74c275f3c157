"""Topic ACLs: who may publish or subscribe below a topic (administrators only)."""

from __future__ import annotations

import logging
from typing import Any

from fastapi import APIRouter, status

from flowbroker.api.deps import DbSession, SettingsDep, UserManager
from flowbroker.api.errors import AUTHENTICATED, responses
from flowbroker.api.schemas import Id, TopicAclIn, TopicAclOut, TopicAclPatch, TopicAclPushOut
from flowbroker.repository.models import TopicAcl
from flowbroker.services import topic_acls

router = APIRouter(prefix="/api/topic-acls", tags=["topic ACLs"], responses=responses(*AUTHENTICATED))
log = logging.getLogger("flowbroker.api")


def _out(row: TopicAcl, queue_manager: str | None = None) -> TopicAclOut:
    return TopicAclOut(
        id=row.id,
        topic=row.topic,
        principal=row.principal,
        publish=row.allow_publish,
        subscribe=row.allow_subscribe,
        created_at=row.created_at,
        queue_manager=queue_manager,
    )


@router.get("", response_model=list[TopicAclOut])
def list_acls(_: UserManager, session: DbSession) -> Any:
    """Every topic ACL rule, by topic and principal."""
    return [_out(row) for row in topic_acls.list_all(session)]


@router.post(
    "", responses=responses(409, 422), response_model=TopicAclOut, status_code=status.HTTP_201_CREATED
)
def create_acl(body: TopicAclIn, user: UserManager, session: DbSession, settings: SettingsDep) -> Any:
    """Add a rule (409 when the topic already has one for the principal)."""
    row = topic_acls.create(session, user.username, body.topic, body.principal, body.publish, body.subscribe)
    return _out(row, topic_acls.push(session, settings.data))


@router.get("/{acl_id}", responses=responses(404), response_model=TopicAclOut)
def get_acl(acl_id: Id, _: UserManager, session: DbSession) -> Any:
    """One rule."""
    return _out(topic_acls.get(session, acl_id))


@router.patch("/{acl_id}", responses=responses(404, 409, 422), response_model=TopicAclOut)
def update_acl(
    acl_id: Id, body: TopicAclPatch, user: UserManager, session: DbSession, settings: SettingsDep
) -> Any:
    """Change a rule; the fields not named keep their values (null: the rule says nothing about it)."""
    row = topic_acls.update(session, user.username, acl_id, body.model_dump(exclude_unset=True))
    return _out(row, topic_acls.push(session, settings.data))


@router.delete("/{acl_id}", responses=responses(404), status_code=status.HTTP_204_NO_CONTENT)
def delete_acl(acl_id: Id, user: UserManager, session: DbSession, settings: SettingsDep) -> None:
    """Delete a rule."""
    topic_acls.delete(session, user.username, acl_id)
    outcome = topic_acls.push(session, settings.data)
    if outcome != "updated":
        log.warning("topic ACLs: queue manager %s", outcome)


@router.post("/push", response_model=TopicAclPushOut)
def push_acls(_: UserManager, session: DbSession, settings: SettingsDep) -> Any:
    """Hand the whole rule set to the local queue manager again (after it was unreachable)."""
    return TopicAclPushOut(queue_manager=topic_acls.push(session, settings.data))
