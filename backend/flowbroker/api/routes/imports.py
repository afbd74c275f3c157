"""Imports of other products' projects: POST a zipped ACE / IIB Toolkit workspace."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query, Request
from pydantic import Field
from starlette.concurrency import run_in_threadpool

from flowbroker.api.deps import DbSession, FlowEditor, SettingsDep
from flowbroker.api.errors import AUTHENTICATED, responses
from flowbroker.api.schemas import Out
from flowbroker.services import imports, users

router = APIRouter(prefix="/api/imports", tags=["imports"], responses=responses(*AUTHENTICATED))


class AceImportOut(Out):
    """The import report: totals, then per flow what was mapped, dropped and resolved, and per queue."""

    summary: dict[str, Any]
    projects: list[str]
    flows: list[dict[str, Any]] = Field(
        description="per flow: name, source, kind, outcome (created, updated, unchanged, refused), version, "
        "nodesTotal, nodesMapped, unsupportedNodes, droppedProperties, droppedConnections, esqlResolved, "
        "esqlMissing, problems"
    )
    queues: list[dict[str, Any]]
    topics: list[dict[str, Any]] = Field(
        description="MQSC topic objects: name, topicString, source, dropped, problem, outcome"
    )
    subscriptions: list[dict[str, Any]] = Field(
        description="MQSC subscriptions: name, topic, queue, source, dropped, problem, outcome (defined, or "
        "why not)"
    )
    models: list[dict[str, Any]] = Field(
        description="message models: file, kind (MRM message set, MRM message definition, XML schema, DFDL "
        "schema), name, domain, formats, messages, outcome and the reason"
    )
    unsupported_commands: list[dict[str, Any]]
    errors: list[dict[str, Any]] = Field(
        description="files that could not be read: file, line, column, message"
    )
    notes: list[str]


@router.post(
    "/ace",
    response_model=AceImportOut,
    responses=responses(404),
    openapi_extra={
        "requestBody": {
            "required": True,
            "content": {"application/zip": {"schema": {"type": "string", "format": "binary"}}},
        }
    },
)
async def import_ace(
    request: Request,
    user: FlowEditor,
    session: DbSession,
    settings: SettingsDep,
    define_queues: Annotated[
        bool,
        Query(alias="queues", description="define the MQSC scripts' local queues (needs the operator role)"),
    ] = True,
    broker: Annotated[
        str | None,
        Query(
            max_length=128,
            description="the broker the queues are for: when its transport URL is amqp:// the MQSC queues and "
            "subscriptions are defined on that RabbitMQ, else on the queue manager",
        ),
    ] = None,
) -> Any:
    """Import a zipped Toolkit workspace (project folders): flows, subflows, ESQL and MQSC queues."""
    data = await request.body()
    may_define = define_queues and "queues.write" in users.permissions(user.role)
    return await run_in_threadpool(
        imports.import_ace,
        session,
        user.username,
        data,
        queue_manager=settings.data if may_define else None,
        broker=broker or None,
        lookup=request.app.state.node_lookup,
        max_files=settings.ace_import_max_files,
        max_bytes=settings.ace_import_max_bytes,
    )
