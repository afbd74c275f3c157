"""Data sources: named databases for Database and Compute nodes (passwords never returned)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, status

from flowbroker.api.deps import DbSession, FlowEditor, Reader
from flowbroker.api.errors import AUTHENTICATED, responses
from flowbroker.api.schemas import DataSourceIn, DataSourceOut, DataSourcePatch, Id
from flowbroker.repository.models import DataSource
from flowbroker.services import datasources

router = APIRouter(prefix="/api/datasources", tags=["data sources"], responses=responses(*AUTHENTICATED))


def _out(source: DataSource) -> DataSourceOut:
    out = DataSourceOut.model_validate(source)
    out.url = datasources.masked_url(source.url)
    return out


@router.get("", response_model=list[DataSourceOut])
def list_sources(_: Reader, session: DbSession) -> Any:
    """Every data source."""
    return [_out(s) for s in datasources.list_all(session)]


@router.post("", responses=responses(409), response_model=DataSourceOut, status_code=status.HTTP_201_CREATED)
def create_source(body: DataSourceIn, user: FlowEditor, session: DbSession) -> Any:
    """Define a data source by SQLAlchemy URL."""
    return _out(
        datasources.create(session, user.username, body.name, body.url, body.description, body.broker_id)
    )


@router.get("/{source_id}", responses=responses(404), response_model=DataSourceOut)
def get_source(source_id: Id, _: Reader, session: DbSession) -> Any:
    """One data source."""
    return _out(datasources.get(session, source_id))


@router.patch("/{source_id}", responses=responses(404, 409), response_model=DataSourceOut)
def update_source(source_id: Id, body: DataSourcePatch, user: FlowEditor, session: DbSession) -> Any:
    """Change a data source."""
    return _out(datasources.update(session, user.username, source_id, body.model_dump(exclude_unset=True)))


@router.delete("/{source_id}", responses=responses(404), status_code=status.HTTP_204_NO_CONTENT)
def delete_source(source_id: Id, user: FlowEditor, session: DbSession) -> None:
    """Delete a data source."""
    datasources.delete(session, user.username, source_id)
