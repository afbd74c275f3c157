"""Deployments of flows to execution groups: deploy, undeploy, start and stop a flow or a whole group."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from fastapi import APIRouter, Query, status
from fastapi.responses import PlainTextResponse
from pydantic import Field, StrictBool

from flowbroker.api.deps import DbSession, Deployer, Reader, SettingsDep, TopologyManager
from flowbroker.api.errors import AUTHENTICATED, responses
from flowbroker.api.schemas import Body, GroupOut, Id, Out, RefId, StrictInt
from flowbroker.services import deploy, groups, stats

router = APIRouter(tags=["deployments"], responses=responses(*AUTHENTICATED))


class DeploymentIn(Body):
    """What to deploy (a saved flow version, or a flow document) and where."""

    flow_id: RefId | None = None
    flow_name: Annotated[str, Field(max_length=128)] | None = None
    version: Annotated[StrictInt, Field(ge=1)] | None = None
    document: dict[str, Any] | None = Field(
        default=None, description="a flow document, saved as the flow's next version"
    )
    broker: Annotated[str, Field(min_length=1, max_length=64)] = "default"
    group: Annotated[str, Field(min_length=1, max_length=64)] = "default"
    additional_instances: Annotated[StrictInt, Field(ge=0, le=256)] | None = None
    overrides: dict[str, Any] = Field(
        default_factory=dict,
        description='{"nodeId.property": value} node property overrides; "externals": {VAR: value} EXTERNAL values',
    )
    define_queues: StrictBool = Field(
        default=False,
        description="define the flow's input and output queues the queue manager does not have before it starts",
    )


class Diagnostic(Out):
    node: str = ""
    property: str = ""
    line: int = 0
    column: int = 0
    pointer: str = ""
    message: str


class DeploymentOut(Out):
    id: int
    flow: str
    flow_id: int
    version: int
    broker: str
    group: str
    group_id: int
    additional_instances: int
    overrides: dict[str, Any]
    status: str = Field(
        description="pending, compiling, running, waiting (for an input queue that does not exist), "
        "stopped, failed, undeploying, undeployed or replaced"
    )
    detail: str = Field(
        default="",
        description='why the flow is waiting or failed, e.g. "waiting: queue EVAL.IN does not exist"',
    )
    diagnostics: list[Diagnostic]
    created_at: datetime
    updated_at: datetime


@router.post(
    "/api/deployments",
    responses=responses(404, 409),
    response_model=DeploymentOut,
    status_code=status.HTTP_202_ACCEPTED,
)
def create_deployment(body: DeploymentIn, user: Deployer, session: DbSession, settings: SettingsDep) -> Any:
    """Deploy a flow version to an execution group; follow its status at GET /api/deployments/{id}."""
    row = groups.deploy_to(
        session,
        user.username,
        flow_id=body.flow_id,
        flow_name=body.flow_name,
        version=body.version,
        document=body.document,
        broker=body.broker,
        group=body.group,
        additional_instances=body.additional_instances,
        overrides=body.overrides,
        data=settings.data,
        define_queues=body.define_queues,
    )
    return deploy.describe(row)


@router.get("/api/deployments/{deployment_id}", responses=responses(404), response_model=DeploymentOut)
def get_deployment(deployment_id: Id, _: Reader, session: DbSession) -> Any:
    """One deployment: its status and, when it failed, every diagnostic."""
    return deploy.describe(deploy.get(session, deployment_id))


@router.delete(
    "/api/deployments/{deployment_id}",
    responses=responses(404),
    response_model=DeploymentOut,
    status_code=status.HTTP_202_ACCEPTED,
)
def delete_deployment(deployment_id: Id, user: Deployer, session: DbSession, settings: SettingsDep) -> Any:
    """Undeploy: the group stops the flow after the messages in progress."""
    return deploy.describe(groups.undeploy(session, user.username, deployment_id, settings.data))


@router.post(
    "/api/deployments/{deployment_id}/start",
    responses=responses(404, 409),
    response_model=DeploymentOut,
    status_code=status.HTTP_202_ACCEPTED,
)
def start_flow(deployment_id: Id, user: Deployer, session: DbSession, settings: SettingsDep) -> Any:
    """Start a stopped flow; its status turns running when the group has started its threads."""
    return deploy.describe(groups.control_flow(session, user.username, deployment_id, "start", settings.data))


@router.post(
    "/api/deployments/{deployment_id}/stop",
    responses=responses(404, 409),
    response_model=DeploymentOut,
    status_code=status.HTTP_202_ACCEPTED,
)
def stop_flow(deployment_id: Id, user: Deployer, session: DbSession, settings: SettingsDep) -> Any:
    """Stop a flow after the messages in progress; it stays deployed, and stopped across group restarts."""
    return deploy.describe(groups.control_flow(session, user.username, deployment_id, "stop", settings.data))


class TraceIn(Body):
    """User trace of a flow (seed 004 §2.14)."""

    level: str = Field(description="none, normal or debug")
    mode: str = Field(default="fast", description="safe: every record written through; fast: buffered")


@router.put(
    "/api/deployments/{deployment_id}/trace",
    responses=responses(404),
    response_model=DeploymentOut,
    status_code=status.HTTP_202_ACCEPTED,
)
def set_trace(
    deployment_id: Id, body: TraceIn, user: Deployer, session: DbSession, settings: SettingsDep
) -> Any:
    """Switch the user trace of the deployment's flow on or off."""
    return deploy.describe(
        deploy.set_trace(session, user.username, deployment_id, body.level, body.mode, settings.data)
    )


@router.get(
    "/api/deployments/{deployment_id}/trace", responses=responses(404), response_class=PlainTextResponse
)
def read_trace(
    deployment_id: Id,
    _: Reader,
    session: DbSession,
    settings: SettingsDep,
    limit: Annotated[int, Query(ge=1, le=16 * 1024 * 1024)] = 1 << 20,
) -> str:
    """The last ``limit`` bytes of the flow's user trace."""
    row = deploy.get(session, deployment_id)
    return stats.read_trace(settings.data, row.broker.name, row.group.name, row.flow_version.flow.name, limit)


@router.get("/api/groups/{group_id}/flows", response_model=list[DeploymentOut])
def group_flows(group_id: Id, _: Reader, session: DbSession) -> Any:
    """The flows deployed to an execution group (the current deployment of each)."""
    return [deploy.describe(d) for d in deploy.group_flows(session, group_id)]


def _group(group: Any, settings: Any) -> dict[str, Any]:
    table = groups.supervisor_table(settings.supervisor_state)
    return groups.describe_group(group, settings.data, table, settings.local_broker)


@router.post(
    "/api/groups/{group_id}/start",
    responses=responses(404),
    response_model=GroupOut,
    status_code=status.HTTP_202_ACCEPTED,
)
def start_group(group_id: Id, user: TopologyManager, session: DbSession, settings: SettingsDep) -> Any:
    """Start the group's process; each flow resumes in its own started or stopped state."""
    return _group(groups.set_desired(session, user.username, group_id, "running", settings.data), settings)


@router.post(
    "/api/groups/{group_id}/stop",
    responses=responses(404),
    response_model=GroupOut,
    status_code=status.HTTP_202_ACCEPTED,
)
def stop_group(group_id: Id, user: TopologyManager, session: DbSession, settings: SettingsDep) -> Any:
    """Stop the group's process, and so every flow in it, after the messages in progress."""
    return _group(groups.set_desired(session, user.username, group_id, "stopped", settings.data), settings)
