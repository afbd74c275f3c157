"""Brokers and their execution groups, with the state of each group's process."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, status

from flowbroker.api.deps import DbSession, QueueWriter, Reader, SettingsDep, TopologyManager
from flowbroker.api.errors import AUTHENTICATED, responses
from flowbroker.api.schemas import (
    BrokerIn,
    BrokerOut,
    BrokerPatch,
    GroupIn,
    GroupOut,
    GroupPatch,
    Id,
    SubscriptionIn,
    SubscriptionOut,
)
from flowbroker.services import brokers, debugger, groups, subscriptions
from flowbroker.settings import Settings

router = APIRouter(prefix="/api/brokers", tags=["brokers"], responses=responses(*AUTHENTICATED))


def _broker(broker: Any, settings: Settings) -> dict[str, Any]:
    table = groups.supervisor_table(settings.supervisor_state)
    return groups.describe_broker(broker, settings.data, table, settings.local_broker)


def _group(group: Any, settings: Settings) -> dict[str, Any]:
    table = groups.supervisor_table(settings.supervisor_state)
    return groups.describe_group(group, settings.data, table, settings.local_broker)


@router.get("", response_model=list[BrokerOut])
def list_brokers(_: Reader, session: DbSession, settings: SettingsDep) -> Any:
    """Every broker with its execution groups."""
    table = groups.supervisor_table(settings.supervisor_state)
    return [
        groups.describe_broker(b, settings.data, table, settings.local_broker)
        for b in brokers.list_brokers(session)
    ]


@router.post("", responses=responses(409), response_model=BrokerOut, status_code=status.HTTP_201_CREATED)
def create_broker(body: BrokerIn, user: TopologyManager, session: DbSession, settings: SettingsDep) -> Any:
    """Define a broker."""
    return _broker(brokers.create(session, user.username, body.name, body.description, body.qm_url), settings)


@router.get("/{broker_id}", responses=responses(404), response_model=BrokerOut)
def get_broker(broker_id: Id, _: Reader, session: DbSession, settings: SettingsDep) -> Any:
    """One broker."""
    return _broker(brokers.get(session, broker_id), settings)


@router.patch("/{broker_id}", responses=responses(404, 409), response_model=BrokerOut)
def update_broker(
    broker_id: Id, body: BrokerPatch, user: TopologyManager, session: DbSession, settings: SettingsDep
) -> Any:
    """Rename or describe a broker."""
    changes = body.model_dump(exclude_unset=True, exclude_none=True)
    return _broker(brokers.update(session, user.username, broker_id, changes), settings)


@router.delete("/{broker_id}", responses=responses(404, 409), status_code=status.HTTP_204_NO_CONTENT)
def delete_broker(broker_id: Id, user: TopologyManager, session: DbSession) -> None:
    """Delete a broker and its groups (refused while flows are deployed to it)."""
    brokers.delete(session, user.username, broker_id)


@router.get("/{broker_id}/groups", responses=responses(404), response_model=list[GroupOut])
def list_groups(broker_id: Id, _: Reader, session: DbSession, settings: SettingsDep) -> Any:
    """The broker's execution groups."""
    return _broker(brokers.get(session, broker_id), settings)["groups"]


@router.post(
    "/{broker_id}/groups",
    responses=responses(404, 409),
    response_model=GroupOut,
    status_code=status.HTTP_201_CREATED,
)
def create_group(
    broker_id: Id, body: GroupIn, user: TopologyManager, session: DbSession, settings: SettingsDep
) -> Any:
    """Define an execution group on a broker; on the local broker `flowbroker up` starts its process."""
    group = brokers.create_group(
        session,
        user.username,
        broker_id,
        body.name,
        body.description,
        body.development,
        code_nodes=body.code_nodes,
        http_port=body.http_port,
        actor_role=user.role,
    )
    return _group(group, settings)


@router.get("/{broker_id}/groups/{group_id}", responses=responses(404), response_model=GroupOut)
def get_group(broker_id: Id, group_id: Id, _: Reader, session: DbSession, settings: SettingsDep) -> Any:
    """One execution group."""
    return _group(brokers.get_group(session, broker_id, group_id), settings)


@router.patch("/{broker_id}/groups/{group_id}", responses=responses(404, 409), response_model=GroupOut)
def update_group(
    broker_id: Id,
    group_id: Id,
    body: GroupPatch,
    user: TopologyManager,
    session: DbSession,
    settings: SettingsDep,
) -> Any:
    """Rename or describe an execution group, or mark it as a development group (one whose flows
    the step debugger may pause) or a production group (one that never pauses). Allowing or
    refusing code nodes (``codeNodes``: flows with PythonCompute nodes) needs the admin role
    and is recorded in the audit log. ``httpPort`` sets the port of the group's HTTP listener
    (null: the worker's FLOWBROKER_HTTP_PORT); a port another group of the broker has is refused."""
    changes = body.model_dump(exclude_unset=True, exclude_none=True)
    if "http_port" in body.model_fields_set:
        changes["http_port"] = body.http_port  # null is a change: back to FLOWBROKER_HTTP_PORT
    was = brokers.get_group(session, broker_id, group_id).development
    group = brokers.update_group(session, user.username, broker_id, group_id, changes, actor_role=user.role)
    if group.development != was:
        # the worker sets or clears its flows' breakpoints; a production group's paused threads go on
        debugger.sync_group(group, settings.data)
    return _group(group, settings)


@router.delete(
    "/{broker_id}/groups/{group_id}", responses=responses(404, 409), status_code=status.HTTP_204_NO_CONTENT
)
def delete_group(broker_id: Id, group_id: Id, user: TopologyManager, session: DbSession) -> None:
    """Delete an execution group (refused while flows are deployed to it); its process is stopped."""
    brokers.delete_group(session, user.username, broker_id, group_id)


@router.get("/{broker_id}/subscriptions", responses=responses(404), response_model=list[SubscriptionOut])
def list_subscriptions(broker_id: Id, _: Reader, session: DbSession) -> Any:
    """The broker's durable subscriptions, oldest first."""
    broker, rows = subscriptions.list_for(session, broker_id)
    return [subscriptions.describe(row, broker) for row in rows]


@router.post(
    "/{broker_id}/subscriptions",
    responses=responses(404, 409, 422, 502, 503),
    response_model=SubscriptionOut,
    status_code=status.HTTP_201_CREATED,
)
def create_subscription(
    broker_id: Id, body: SubscriptionIn, user: QueueWriter, session: DbSession, settings: SettingsDep
) -> Any:
    """Subscribe a queue to a topic pattern on the broker's transport. On RabbitMQ (an amqp://
    transport URL) a subscription without a filter is a binding of the queue to the topic exchange
    (``/`` → ``.``, ``+`` → ``*``); one with a filter is recorded and the broker's publishing
    execution groups put the publications that pass. Otherwise it is a durable subscription of the
    local queue manager. 409 when the queue is already subscribed to the topic; 503 when the
    transport is not reachable (nothing is recorded then)."""
    broker, row = subscriptions.create(
        session, user.username, settings.data, broker_id, body.topic, body.queue, body.filter
    )
    return subscriptions.describe(row, broker)


@router.delete(
    "/{broker_id}/subscriptions/{subscription_id}",
    responses=responses(404, 502, 503),
    status_code=status.HTTP_204_NO_CONTENT,
)
def delete_subscription(
    broker_id: Id, subscription_id: Id, user: QueueWriter, session: DbSession, settings: SettingsDep
) -> None:
    """Remove a subscription from the transport (the binding, or the queue manager's subscription),
    then from the repository; 503 when the transport is not reachable (the row stays)."""
    subscriptions.delete(session, user.username, settings.data, broker_id, subscription_id)
