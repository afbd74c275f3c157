"""Data sources: the named databases Database and Compute nodes reach, by SQLAlchemy URL."""

from __future__ import annotations

import re
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from flowbroker.repository.models import Broker, DataSource
from flowbroker.services import audit
from flowbroker.services.errors import Conflict, Invalid, NotFound, problem

NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_.\-]{0,127}$")


def check_url(url: str) -> str:
    """Refuse a URL SQLAlchemy cannot parse, with the parser's reason."""
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError

    if "\x00" in url or "%00" in url:
        raise Invalid(
            "invalid database URL: it contains a NUL character", [problem("/url", "contains a NUL character")]
        )
    try:
        make_url(url)
    except (ArgumentError, ValueError) as exc:
        raise Invalid(f"invalid database URL: {exc}", [problem("/url", str(exc))]) from None
    return url


def masked_url(url: str) -> str:
    """The URL with its password hidden, for responses and logs."""
    from sqlalchemy.engine import make_url

    try:
        return make_url(url).render_as_string(hide_password=True)
    except Exception:
        return "***"


def _check(session: Session, name: str | None, broker_id: int | None) -> None:
    if name is not None and not NAME_RE.match(name):
        raise Invalid(
            f"invalid data source name {name!r}",
            [problem("/name", "a letter or _ then letters, digits, . _ - (at most 128)")],
        )
    if broker_id is not None and session.get(Broker, broker_id) is None:
        raise Invalid(f"no broker with id {broker_id}", [problem("/brokerId", "unknown broker")])


def list_all(session: Session) -> list[DataSource]:
    return list(session.scalars(select(DataSource).order_by(DataSource.name)))


def urls_for_broker(session: Session, broker_id: int) -> dict[str, str]:
    """Name → URL of every data source a broker's flows reach: its own and the shared ones."""
    from sqlalchemy import or_

    rows = session.scalars(
        select(DataSource).where(or_(DataSource.broker_id.is_(None), DataSource.broker_id == broker_id))
    )
    return {row.name: row.url for row in rows}


def get(session: Session, source_id: int) -> DataSource:
    source = session.get(DataSource, source_id)
    if source is None:
        raise NotFound(f"no data source with id {source_id}")
    return source


def by_name(session: Session, name: str) -> DataSource:
    source = session.scalars(select(DataSource).where(DataSource.name == name)).first()
    if source is None:
        raise NotFound(f"no data source named {name!r}")
    return source


def create(
    session: Session, actor: str, name: str, url: str, description: str = "", broker_id: int | None = None
) -> DataSource:
    _check(session, name, broker_id)
    check_url(url)
    if session.scalars(select(DataSource.id).where(DataSource.name == name)).first() is not None:
        raise Conflict(
            f"a data source named {name!r} already exists", {"pointer": "/name"}, code="duplicate_name"
        )
    source = DataSource(name=name, url=url, description=description, broker_id=broker_id)
    session.add(source)
    session.flush()
    audit.record(session, actor, "datasource.create", f"datasource:{name}", {"id": source.id})
    session.commit()
    return source


def update(session: Session, actor: str, source_id: int, changes: dict[str, Any]) -> DataSource:
    source = get(session, source_id)
    _check(session, changes.get("name"), changes.get("broker_id"))
    if changes.get("url") is not None:
        check_url(changes["url"])
    new_name = changes.get("name")
    if new_name is not None and new_name != source.name:
        if session.scalars(select(DataSource.id).where(DataSource.name == new_name)).first() is not None:
            raise Conflict(
                f"a data source named {new_name!r} already exists",
                {"pointer": "/name"},
                code="duplicate_name",
            )
    for key in ("name", "url", "description", "broker_id"):
        if key in changes and (changes[key] is not None or key == "broker_id"):
            setattr(source, key, changes[key])
    audit.record(
        session, actor, "datasource.update", f"datasource:{source.name}", {"fields": sorted(changes)}
    )
    session.commit()
    return source


def delete(session: Session, actor: str, source_id: int) -> None:
    source = get(session, source_id)
    session.delete(source)
    audit.record(session, actor, "datasource.delete", f"datasource:{source.name}", {"id": source_id})
    session.commit()
