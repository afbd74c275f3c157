"""Message sets with version history."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, status

from flowbroker.api.deps import DbSession, FlowEditor, Reader
from flowbroker.api.errors import AUTHENTICATED, responses
from flowbroker.api.schemas import (
    Id,
    MessageSetIn,
    MessageSetOut,
    MessageSetPut,
    MessageSetSummary,
    MessageSetVersionOut,
)
from flowbroker.repository.models import MessageSet
from flowbroker.services import messagesets

router = APIRouter(prefix="/api/message-sets", tags=["message sets"], responses=responses(*AUTHENTICATED))


def _out(session: DbSession, message_set: MessageSet, number: Id | None = None) -> MessageSetOut:
    row = messagesets.version(session, message_set, number)
    return MessageSetOut(
        id=message_set.id,
        name=message_set.name,
        description=message_set.description,
        current_version=message_set.current_version,
        created_at=message_set.created_at,
        updated_at=message_set.updated_at,
        document=row.document,
    )


@router.get("", response_model=list[MessageSetSummary])
def list_sets(_: Reader, session: DbSession) -> Any:
    """Every message set."""
    return messagesets.list_all(session)


@router.post("", responses=responses(409), response_model=MessageSetOut, status_code=status.HTTP_201_CREATED)
def create_set(body: MessageSetIn, user: FlowEditor, session: DbSession) -> Any:
    """Create a message set; its document becomes version 1."""
    return _out(
        session, messagesets.create(session, user.username, body.name, body.document, body.description)
    )


@router.get("/{set_id}", responses=responses(404), response_model=MessageSetOut)
def get_set(set_id: Id, _: Reader, session: DbSession) -> Any:
    """A message set with its current document."""
    return _out(session, messagesets.get(session, set_id))


@router.put("/{set_id}", responses=responses(404, 409), response_model=MessageSetOut)
def save_set(set_id: Id, body: MessageSetPut, user: FlowEditor, session: DbSession) -> Any:
    """Save a new version of the set's document."""
    return _out(session, messagesets.save(session, user.username, set_id, body.document, body.description))


@router.delete("/{set_id}", responses=responses(404), status_code=status.HTTP_204_NO_CONTENT)
def delete_set(set_id: Id, user: FlowEditor, session: DbSession) -> None:
    """Delete a message set and its history."""
    messagesets.delete(session, user.username, set_id)


@router.get("/{set_id}/versions", responses=responses(404), response_model=list[MessageSetVersionOut])
def list_versions(set_id: Id, _: Reader, session: DbSession) -> Any:
    """The set's versions, newest first."""
    return messagesets.versions(session, messagesets.get(session, set_id))


@router.get("/{set_id}/versions/{number}", responses=responses(404), response_model=MessageSetOut)
def get_version(set_id: Id, number: Id, _: Reader, session: DbSession) -> Any:
    """One version's document."""
    return _out(session, messagesets.get(session, set_id), number)
