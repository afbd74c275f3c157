"""The flow exerciser over REST: record a deployed flow, read what crossed each connection, send a test message."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Path, Request, status
from pydantic import Field

from flowbroker.api.deps import DbSession, Deployer, FlowEditor, QueueWriter, Reader, SettingsDep
from flowbroker.api.errors import AUTHENTICATED, responses
from flowbroker.api.message_views import MessageViewOut
from flowbroker.api.routes.deployments import DeploymentOut
from flowbroker.api.routes.queue_messages import PutIn, to_test_message
from flowbroker.api.schemas import Body, Id, Out, StrictInt
from flowbroker.services import deploy, recorded_cases, recordings, test_messages

router = APIRouter(tags=["recordings"], responses=responses(*AUTHENTICATED))

RecordingId = Annotated[str, Path(pattern=r"^[0-9a-f]{32}$", description="a recording's id (32 hex digits)")]


class RecordingIn(Body):
    """How much to record: the next ``maxMessages`` messages, for at most ``seconds``."""

    max_messages: StrictInt = Field(default=10, description="at most FLOWBROKER_RECORDING_MAX_MESSAGES")
    seconds: float = Field(default=60.0, description="at most FLOWBROKER_RECORDING_MAX_SECONDS")


class RecordingOut(Out):
    id: str
    deployment: int
    flow: str
    version: int = 0
    status: Literal["requested", "recording", "complete", "failed"]
    reason: str = Field(default="", description="why a recording ended or failed")
    started_by: str = ""
    requested_at: float
    expires_at: float = Field(description="when the recording is deleted (seconds since 1970)")
    max_messages: int
    seconds: float
    messages: int = 0
    crossings: int = 0
    bytes: int = 0


class CrossingEnd(Out):
    node: str
    terminal: str


class CrossingSummaryOut(Out):
    seq: int
    message: int = Field(description="which recorded message (flow invocation), from 1")
    connection: str = Field(description="the designer's edge id: from.terminal->to.terminal")
    from_: CrossingEnd = Field(alias="from")
    to: CrossingEnd
    time: float
    truncated: bool


class RecordingDetailOut(RecordingOut):
    crossings_list: list[CrossingSummaryOut] = Field(alias="crossingsList")


class CrossingOut(CrossingSummaryOut):
    thread: str = ""
    view: MessageViewOut


@router.get("/api/flows/{flow_id}/deployments", response_model=list[DeploymentOut])
def flow_deployments(flow_id: Id, _: Reader, session: DbSession) -> Any:
    """The flow's current deployment in each execution group (what the designer records and tests)."""
    return [deploy.describe(row) for row in recordings.flow_deployments(session, flow_id)]


@router.post(
    "/api/deployments/{deployment_id}/recordings",
    responses=responses(404),
    response_model=RecordingOut,
    status_code=status.HTTP_202_ACCEPTED,
)
def start_recording(
    deployment_id: Id, body: RecordingIn, user: Deployer, session: DbSession, settings: SettingsDep
) -> Any:
    """Record the next messages of a running flow at every connection they cross (audit-logged)."""
    return recordings.start(
        session, user.username, deployment_id, settings, max_messages=body.max_messages, seconds=body.seconds
    )


@router.get(
    "/api/deployments/{deployment_id}/recordings", responses=responses(404), response_model=list[RecordingOut]
)
def list_recordings(deployment_id: Id, _: Reader, session: DbSession, settings: SettingsDep) -> Any:
    """The flow's recordings that have not expired, newest first."""
    return recordings.listing(session, deployment_id, settings)


@router.get(
    "/api/deployments/{deployment_id}/recordings/{recording_id}",
    responses=responses(404),
    response_model=RecordingDetailOut,
)
def get_recording(
    deployment_id: Id, recording_id: RecordingId, _: Reader, session: DbSession, settings: SettingsDep
) -> Any:
    """A recording's state and which connection each recorded message crossed, in order."""
    return recordings.crossings(session, deployment_id, recording_id, settings)


@router.get(
    "/api/deployments/{deployment_id}/recordings/{recording_id}/crossings/{seq}",
    responses=responses(404),
    response_model=CrossingOut,
)
def get_crossing(
    deployment_id: Id,
    recording_id: RecordingId,
    seq: Annotated[int, Path(ge=1)],
    user: Reader,
    session: DbSession,
    settings: SettingsDep,
) -> Any:
    """The message as it crossed one connection: its trees and serialized body (audit-logged)."""
    return recordings.crossing(session, user.username, deployment_id, recording_id, seq, settings)


@router.post(
    "/api/deployments/{deployment_id}/recordings/{recording_id}/stop",
    responses=responses(404),
    response_model=RecordingOut,
    status_code=status.HTTP_202_ACCEPTED,
)
def stop_recording(
    deployment_id: Id, recording_id: RecordingId, user: Deployer, session: DbSession, settings: SettingsDep
) -> Any:
    """End a running recording; what it holds stays readable until it expires."""
    return recordings.stop(session, user.username, deployment_id, recording_id, settings)


@router.delete(
    "/api/deployments/{deployment_id}/recordings/{recording_id}",
    responses=responses(404),
    status_code=status.HTTP_204_NO_CONTENT,
)
def delete_recording(
    deployment_id: Id, recording_id: RecordingId, user: Deployer, session: DbSession, settings: SettingsDep
) -> None:
    """Delete a recording now (stopping it first if it runs)."""
    recordings.delete(session, user.username, deployment_id, recording_id, settings)


class RecordedCaseIn(Body):
    """Which recorded message becomes a test case, its name, and the fields the comparison leaves out."""

    name: Annotated[str, Field(min_length=1, max_length=200)]
    message: Annotated[int, Field(ge=1)] = Field(default=1, description="which recorded message, from 1")
    ignore: list[Annotated[str, Field(min_length=1, max_length=500)]] = Field(
        default_factory=list,
        max_length=200,
        description="tree paths (e.g. Root.XMLNSC.order.id) ignored besides MsgId, PutDate, PutTime, Expiry, BackoutCount",
    )


class RecordedCaseOut(Out):
    flow_id: int
    version: int = Field(description="the flow's new version, which holds the case")
    case: dict[str, Any]


@router.post(
    "/api/deployments/{deployment_id}/recordings/{recording_id}/test-cases",
    responses=responses(404, 409, 422),
    response_model=RecordedCaseOut,
    status_code=status.HTTP_201_CREATED,
)
def create_test_case(
    deployment_id: Id,
    recording_id: RecordingId,
    body: RecordedCaseIn,
    request: Request,
    user: FlowEditor,
    session: DbSession,
    settings: SettingsDep,
) -> Any:
    """Make a test case of one recorded message: its input as it left the input node, and what
    reached each node writing to a queue; saved with the flow as its next version (audit-logged).
    """
    state, case = recorded_cases.create(
        session,
        user.username,
        deployment_id,
        recording_id,
        settings,
        name=body.name,
        message=body.message,
        ignore=body.ignore,
        lookup=request.app.state.node_lookup,
    )
    return RecordedCaseOut(flow_id=state.id, version=state.current_version, case=case)


class HttpIn(Body):
    method: Literal["POST", "PUT", "GET", "DELETE", "PATCH", "ANY"] = "POST"
    content_type: str = Field(default="", max_length=256)
    headers: dict[
        Annotated[str, Field(pattern=r"^[A-Za-z0-9-]{1,64}$")], Annotated[str, Field(max_length=1024)]
    ] = Field(default_factory=dict, max_length=64)


class TestMessageIn(Body):
    """A message for an input node: the queue put's fields (MQMD, MQRFH2) or, for HTTPInput, the request's."""

    node: str = Field(min_length=1, max_length=256, description="the input node's id in the deployed flow")
    message: PutIn
    http: HttpIn | None = None
    record: bool = Field(default=True, description="record the message's path (a one-message recording)")


class TestMessageOut(Out):
    node: str
    kind: Literal["queue", "http"]
    queue: str = ""
    msg_id: str = ""
    http_status: int = 0
    http_reply: str = ""
    recording: RecordingOut | None = None


@router.post(
    "/api/deployments/{deployment_id}/test-messages",
    responses=responses(404, 409, 413, 502, 503),
    response_model=TestMessageOut,
    status_code=status.HTTP_201_CREATED,
)
def send_test_message(
    deployment_id: Id,
    body: TestMessageIn,
    user: QueueWriter,
    session: DbSession,
    settings: SettingsDep,
) -> Any:
    """Check the body parses in the input node's domain, start a recording, then put or post the message.

    Putting on a queue is what this needs (queues.write); it is the operator's, as recording is.
    """
    http = None
    if body.http is not None:
        http = test_messages.HttpRequest(
            method=body.http.method, headers=dict(body.http.headers), content_type=body.http.content_type
        )
    return test_messages.send(
        session,
        user.username,
        deployment_id,
        body.node,
        to_test_message(body.message),
        settings,
        http=http,
        record=body.record,
    )
