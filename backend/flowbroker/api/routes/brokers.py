"""Brokers and their execution groups."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, status

from flowbroker.api.deps import DbSession, Operator, Viewer
from flowbroker.api.schemas import BrokerIn, BrokerOut, BrokerPatch, GroupIn, GroupOut, GroupPatch, Id
from flowbroker.services import brokers

router = APIRouter(prefix="/api/brokers", tags=["brokers"])


@router.get("", response_model=list[BrokerOut])
def list_brokers(_: Viewer, session: DbSession) -> Any:
    """Every broker with its execution groups."""
    return brokers.list_brokers(session)


@router.post("", response_model=BrokerOut, status_code=status.HTTP_201_CREATED)
def create_broker(body: BrokerIn, user: Operator, session: DbSession) -> Any:
    """Define a broker."""
    return brokers.create(session, user.username, body.name, body.description, body.qm_url)


@router.get("/{broker_id}", response_model=BrokerOut)
def get_broker(broker_id: Id, _: Viewer, session: DbSession) -> Any:
    """One broker."""
    return brokers.get(session, broker_id)


@router.patch("/{broker_id}", response_model=BrokerOut)
def update_broker(broker_id: Id, body: BrokerPatch, user: Operator, session: DbSession) -> Any:
    """Rename or describe a broker."""
    return brokers.update(
        session, user.username, broker_id, body.model_dump(exclude_unset=True, exclude_none=True)
    )


@router.delete("/{broker_id}", status_code=status.HTTP_204_NO_CONTENT)
def delete_broker(broker_id: Id, user: Operator, session: DbSession) -> None:
    """Delete a broker and its groups (refused while flows are deployed to it)."""
    brokers.delete(session, user.username, broker_id)


@router.get("/{broker_id}/groups", response_model=list[GroupOut])
def list_groups(broker_id: Id, _: Viewer, session: DbSession) -> Any:
    """The broker's execution groups."""
    return brokers.get(session, broker_id).groups


@router.post("/{broker_id}/groups", response_model=GroupOut, status_code=status.HTTP_201_CREATED)
def create_group(broker_id: Id, body: GroupIn, user: Operator, session: DbSession) -> Any:
    """Define an execution group on a broker."""
    return brokers.create_group(session, user.username, broker_id, body.name, body.description)


@router.get("/{broker_id}/groups/{group_id}", response_model=GroupOut)
def get_group(broker_id: Id, group_id: Id, _: Viewer, session: DbSession) -> Any:
    """One execution group."""
    return brokers.get_group(session, broker_id, group_id)


@router.patch("/{broker_id}/groups/{group_id}", response_model=GroupOut)
def update_group(broker_id: Id, group_id: Id, body: GroupPatch, user: Operator, session: DbSession) -> Any:
    """Rename or describe an execution group."""
    return brokers.update_group(
        session, user.username, broker_id, group_id, body.model_dump(exclude_unset=True, exclude_none=True)
    )


@router.delete("/{broker_id}/groups/{group_id}", status_code=status.HTTP_204_NO_CONTENT)
def delete_group(broker_id: Id, group_id: Id, user: Operator, session: DbSession) -> None:
    """Delete an execution group (refused while flows are deployed to it)."""
    brokers.delete_group(session, user.username, broker_id, group_id)
