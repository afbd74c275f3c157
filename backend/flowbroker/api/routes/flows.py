"""Flows with version history: each save of a flow document is a new version."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Body, Query, Request, status

from flowbroker.api.deps import DbSession, FlowEditor, Reader
from flowbroker.api.errors import AUTHENTICATED, responses
from flowbroker.api.schemas import (
    MAX_ID,
    FlowDocument,
    FlowNameOut,
    FlowOut,
    FlowSummary,
    FlowVersionDocument,
    FlowVersionOut,
    Id,
    ValidationOut,
)
from flowbroker.repository.models import Flow
from flowbroker.services import flows, validation

router = APIRouter(prefix="/api/flows", tags=["flows"], responses=responses(*AUTHENTICATED))

# The body is read as plain JSON and checked by the validation service, which names every
# problem by its JSON pointer at once; the schema still states the document's shape.
FlowDocumentBody = Annotated[
    Any,
    Body(
        description="a flow document (see the design's Flows section)",
        examples=[{"name": "OrderRouting", "nodes": [], "connections": []}],
    ),
]
DOCUMENT_BODY: dict[str, Any] = {
    "requestBody": {
        "required": True,
        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/FlowDocument"}}},
    }
}
Comment = Annotated[str, Query(max_length=2000, description="why this version was saved")]


def _out(flow: Flow | flows.FlowState, document: dict[str, Any]) -> FlowOut:
    return FlowOut(
        id=flow.id,
        name=flow.name,
        description=flow.description,
        current_version=flow.current_version,
        created_at=flow.created_at,
        updated_at=flow.updated_at,
        document=FlowDocument.model_validate(document),
    )


@router.get("", response_model=list[FlowSummary])
def list_flows(
    _: Reader,
    session: DbSession,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
    offset: Annotated[int, Query(ge=0, le=MAX_ID)] = 0,
) -> Any:
    """Every flow, by name."""
    return flows.list_flows(session, limit=limit, offset=offset)


@router.post(
    "",
    responses=responses(409),
    response_model=FlowOut,
    response_model_exclude_unset=True,
    status_code=status.HTTP_201_CREATED,
    openapi_extra=DOCUMENT_BODY,
)
def create_flow(
    document: FlowDocumentBody, request: Request, user: FlowEditor, session: DbSession, comment: Comment = ""
) -> Any:
    """Create a flow from a document; it becomes version 1."""
    flow, row = flows.create(
        session, user.username, document, comment=comment, lookup=request.app.state.node_lookup
    )
    return _out(flow, row.document)


@router.post("/validate", response_model=ValidationOut, openapi_extra=DOCUMENT_BODY)
def validate_flow(document: FlowDocumentBody, request: Request, _: Reader) -> Any:
    """Check a document against the node specs without saving it."""
    found = validation.problems(document, request.app.state.node_lookup)
    return ValidationOut.model_validate({"valid": not found, "problems": found})


@router.get("/names", response_model=FlowNameOut)
def name_status(
    name: Annotated[str, Query(min_length=1, max_length=128)], _: Reader, session: DbSession
) -> Any:
    """Whether a flow has this name, and a free name to offer instead (``name_2``, ``name_3``…)."""
    return flows.name_status(session, name)


@router.get("/{flow_id}", responses=responses(404), response_model=FlowOut, response_model_exclude_unset=True)
def get_flow(flow_id: Id, _: Reader, session: DbSession) -> Any:
    """A flow with its current document."""
    state = flows.load(session, flow_id)
    return _out(state, state.document)


@router.put(
    "/{flow_id}",
    responses=responses(404, 409),
    response_model=FlowOut,
    response_model_exclude_unset=True,
    openapi_extra=DOCUMENT_BODY,
)
def save_flow(
    flow_id: Id,
    document: FlowDocumentBody,
    request: Request,
    user: FlowEditor,
    session: DbSession,
    comment: Comment = "",
) -> Any:
    """Save a new version; a document whose ``version`` is not the current one gets 409."""
    state = flows.save_state(
        session, user.username, flow_id, document, comment=comment, lookup=request.app.state.node_lookup
    )
    return _out(state, state.document)


@router.delete("/{flow_id}", responses=responses(404, 409), status_code=status.HTTP_204_NO_CONTENT)
def delete_flow(flow_id: Id, user: FlowEditor, session: DbSession) -> None:
    """Delete a flow and its history (refused while deployed)."""
    flows.delete(session, user.username, flow_id)


@router.get("/{flow_id}/versions", responses=responses(404), response_model=list[FlowVersionOut])
def list_versions(flow_id: Id, _: Reader, session: DbSession) -> Any:
    """The flow's versions, newest first."""
    return flows.versions(session, flows.get(session, flow_id))


@router.get(
    "/{flow_id}/versions/{number}",
    responses=responses(404),
    response_model=FlowVersionDocument,
    response_model_exclude_unset=True,
)
def get_version(flow_id: Id, number: Id, _: Reader, session: DbSession) -> Any:
    """One version's document."""
    return flows.version(session, flows.get(session, flow_id), number)
