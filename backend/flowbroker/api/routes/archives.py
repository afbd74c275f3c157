"""Export and import of deployable archives (zip of flows and message sets)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Query, Request
from fastapi.responses import Response

from flowbroker.api.deps import DbSession, FlowEditor, Reader
from flowbroker.api.errors import AUTHENTICATED, responses
from flowbroker.api.schemas import Out
from flowbroker.services import archives

router = APIRouter(prefix="/api/archives", tags=["archives"], responses=responses(*AUTHENTICATED))


class ImportedItem(Out):
    name: str
    version: int
    outcome: Literal["created", "updated", "unchanged", "stored"]


class ImportOut(Out):
    """What the import did with each flow and message set of the archive."""

    flows: list[ImportedItem]
    message_sets: list[ImportedItem]


@router.get(
    "/export",
    response_class=Response,
    responses={**responses(404), 200: {"content": {"application/zip": {}}, "description": "the archive"}},
)
def export_archive(
    _: Reader,
    session: DbSession,
    flow: Annotated[list[str] | None, Query(description="flow names; all flows when omitted")] = None,
    message_set: Annotated[
        list[str] | None, Query(alias="messageSet", description="message set names; all when omitted")
    ] = None,
) -> Response:
    """A zip of the current versions of the named flows and message sets."""
    data = archives.export(session, flow, message_set)
    return Response(
        data,
        media_type="application/zip",
        headers={"Content-Disposition": 'attachment; filename="flows.zip"'},
    )


@router.post(
    "/import",
    response_model=ImportOut,
    openapi_extra={
        "requestBody": {
            "required": True,
            "content": {"application/zip": {"schema": {"type": "string", "format": "binary"}}},
        }
    },
)
async def import_archive(request: Request, user: FlowEditor, session: DbSession) -> Any:
    """Store every flow and message set of an uploaded archive (body: the zip bytes), all or nothing."""
    data = await request.body()
    return archives.import_archive(session, user.username, data, request.app.state.node_lookup)
