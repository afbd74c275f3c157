"""The step debugger of a deployment: breakpoints, the flow threads paused at them, and commands.

Only on a development group; a production group answers 409 ``production_group``.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from fastapi import APIRouter, status
from pydantic import Field, StrictInt, StrictStr

from flowbroker.api.deps import DbSession, Deployer, Reader, SettingsDep
from flowbroker.api.errors import AUTHENTICATED, responses
from flowbroker.api.schemas import Body, Id, Out
from flowbroker.services import debugger

router = APIRouter(tags=["debugger"], responses=responses(*AUTHENTICATED))


class EsqlBreakpoint(Body):
    node: Annotated[str, Field(min_length=1, max_length=255)]
    line: StrictInt = Field(ge=1, description="the line of the node's ESQL, from 1")


class EsqlBreakpointOut(Out):
    node: str
    line: int


class BreakpointsIn(Body):
    connections: list[Annotated[str, Field(max_length=512)]] = Field(
        default_factory=list, max_length=200, description="connections as `source.terminal->target.terminal`"
    )
    esql: list[EsqlBreakpoint] = Field(default_factory=list, max_length=200)


class BreakpointsOut(Out):
    connections: list[str]
    esql: list[EsqlBreakpointOut]
    development: bool = Field(description="whether the deployment's group may pause at all")
    armed: bool = Field(
        description="whether the group's worker has set these breakpoints in the running flow"
    )


class Edit(Body):
    tree: Literal["Root", "LocalEnvironment", "Environment", "ExceptionList"]
    ref: list[Annotated[StrictInt, Field(ge=0)]] = Field(
        min_length=1, max_length=1000, description="child positions from the tree down to the field"
    )
    value: StrictStr | None = Field(max_length=1_000_000, description="the new value as text (a BLOB as hex)")
    type: Literal[
        "CHARACTER", "INTEGER", "DECIMAL", "FLOAT", "BOOLEAN", "BLOB", "DATE", "TIME", "TIMESTAMP", "NULL"
    ] = "CHARACTER"


class CommandIn(Body):
    action: Literal["", "resume", "step", "abort"] = Field(
        default="",
        description="resume; step: pause again at the next connection or ESQL line; "
        "abort: back the unit of work out; empty: only edit",
    )
    edits: list[Edit] = Field(default_factory=list, max_length=100)


class Variable(Out):
    name: str
    type: str
    value: str | None
    scope: Literal["local", "module", "schema"] = Field(
        default="local",
        description="declared in the routine (local), or at module or broker-schema level",
    )


class PauseOut(Out):
    id: str
    deployment_id: int
    flow: str
    thread: str
    kind: Literal["connection", "esql"]
    connection: str
    node: str
    line: int
    variables: list[Variable]
    revision: int = Field(description="how many edits were applied")
    paused_at: datetime
    resumes_at: datetime = Field(
        description="when the thread goes on by itself (FLOWBROKER_DEBUG_PAUSE_SECONDS)"
    )
    message: dict[str, Any] = Field(description="the message view (trees and serialized body)")


@router.get(
    "/api/deployments/{deployment_id}/breakpoints", responses=responses(404), response_model=BreakpointsOut
)
def get_breakpoints(deployment_id: Id, _: Reader, session: DbSession) -> Any:
    """The deployment's breakpoints."""
    return debugger.breakpoints(session, deployment_id)


@router.put(
    "/api/deployments/{deployment_id}/breakpoints",
    responses=responses(404, 409, 422),
    response_model=BreakpointsOut,
)
def set_breakpoints(
    deployment_id: Id, body: BreakpointsIn, user: Deployer, session: DbSession, settings: SettingsDep
) -> Any:
    """Replace the deployment's breakpoints (409 on a production group)."""
    return debugger.set_breakpoints(
        session, user.username, deployment_id, body.model_dump(mode="json"), settings.data
    )


@router.get(
    "/api/deployments/{deployment_id}/pauses", responses=responses(404), response_model=list[PauseOut]
)
def list_pauses(deployment_id: Id, _: Reader, session: DbSession) -> Any:
    """The deployment's flow threads paused at a breakpoint, each with its message."""
    return debugger.pauses(session, deployment_id)


@router.post(
    "/api/deployments/{deployment_id}/pauses/{pause_id}",
    responses=responses(404, 409, 422),
    response_model=PauseOut,
    status_code=status.HTTP_202_ACCEPTED,
)
def command(
    deployment_id: Id,
    pause_id: Annotated[str, Field(max_length=36)],
    body: CommandIn,
    user: Deployer,
    session: DbSession,
    settings: SettingsDep,
) -> Any:
    """Edit the paused message and/or resume, step or abort its thread; the group carries it out."""
    return debugger.command(
        session,
        user.username,
        deployment_id,
        pause_id,
        body.action,
        [e.model_dump(mode="json") for e in body.edits],
        settings.data,
    )
