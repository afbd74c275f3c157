"""Import a COBOL copybook or C header into a message set, adding a version of the set."""

from __future__ import annotations

from typing import Any, Literal

from fastapi import APIRouter
from pydantic import BaseModel, ConfigDict, Field

from flowbroker.api.deps import DbSession, FlowEditor
from flowbroker.api.errors import AUTHENTICATED, responses
from flowbroker.services import messagesets
from flowbroker.services.errors import Invalid, problem

router = APIRouter(prefix="/api/message-sets", tags=["message sets"], responses=responses(*AUTHENTICATED))


class MessageSetImportIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    set: str = Field(min_length=1, max_length=128, description="the message set (created when missing)")
    kind: Literal["copybook", "c-header"]
    source: str = Field(min_length=1, max_length=1_000_000, description="the copybook or header text")
    type: str | None = Field(default=None, max_length=128, description="the message type's name")
    filename: str = Field(default="", max_length=255)


class ImportWarningOut(BaseModel):
    line: int
    column: int
    message: str = Field(description="what was imported other than as written, and how")


class MessageSetImportOut(BaseModel):
    id: int
    set: str
    version: int
    type: str
    types: dict[str, Any]
    warnings: list[ImportWarningOut] = Field(
        default_factory=list, description="where the import differs from the text (line and column in it)"
    )


@router.post("/import", responses=responses(409), response_model=MessageSetImportOut, status_code=201)
def import_layout(body: MessageSetImportIn, user: FlowEditor, session: DbSession) -> Any:
    """Import a record layout as a message type of a set (a new version of the set)."""
    from esql.domains import DomainError

    from flowbroker.formats import importing
    from flowbroker.formats.copybook import ImportFault

    source = body.filename or body.kind
    try:
        fragment = importing.import_layout(body.source, body.kind, body.set, body.type, source)
        existing = messagesets.by_name(session, body.set)
        document = messagesets.version(session, existing).document if existing is not None else None
        merged = importing.merge(document, fragment)
    except ImportFault as fault:
        raise Invalid(
            str(fault),
            [{**problem("/source", fault.reason), "line": fault.line, "column": fault.column}],
        ) from None
    except DomainError as exc:
        raise Invalid(str(exc), [problem("/source", str(exc))]) from None
    if existing is None:
        saved = messagesets.create(session, user.username, body.set, merged)
    else:
        saved = messagesets.save(session, user.username, existing.id, merged)
    return MessageSetImportOut(
        id=saved.id,
        set=saved.name,
        version=saved.current_version,
        type=fragment["type"],
        types=fragment["types"],
        warnings=fragment.get("warnings", []),
    )
