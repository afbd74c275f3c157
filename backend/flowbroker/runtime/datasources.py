"""Data sources for ESQL database work: one SQLAlchemy engine per named source, one connection per flow thread."""

from __future__ import annotations

import sqlite3
import threading
from typing import Any

import sqlalchemy as sa


class DataSourceError(Exception):
    """A data source that is not configured or cannot be reached."""


class DataSources:
    """The broker's named data sources (name → SQLAlchemy URL); a URL may also be used directly."""

    def __init__(self, urls: dict[str, str] | None = None) -> None:
        self.urls = dict(urls or {})
        self._engines: dict[str, sa.Engine] = {}
        self._lock = threading.Lock()

    def url_of(self, name: str) -> str:
        url = self.urls.get(name)
        if url is None and "://" in name:
            url = name
        if url is None:
            known = ", ".join(sorted(self.urls)) or "none configured"
            raise DataSourceError(f"unknown data source {name!r} (known: {known})")
        return url

    def engine(self, name: str) -> sa.Engine:
        engine = self._engines.get(name)
        if engine is not None:
            return engine
        with self._lock:
            engine = self._engines.get(name)
            if engine is None:
                url = self.url_of(name)
                kwargs: dict[str, Any] = {}
                if url.startswith("sqlite"):
                    # several flow threads share the file; each waits for the others' commits
                    kwargs["connect_args"] = {"check_same_thread": False, "timeout": 30}
                else:
                    kwargs["pool_pre_ping"] = True
                engine = sa.create_engine(url, **kwargs)
                if url.startswith("sqlite") and ":memory:" not in url and url.rstrip("/") != "sqlite:":
                    sa.event.listen(engine, "connect", _sqlite_wal)
                if url.startswith("sqlite"):
                    sa.event.listen(engine, "connect", _sqlite_confine)
                self._engines[name] = engine
        return engine

    def dispose(self) -> None:
        with self._lock:
            for engine in self._engines.values():
                engine.dispose()
            self._engines.clear()


def _sqlite_wal(dbapi_connection: Any, _record: Any) -> None:
    # write-ahead logging: readers never block the flow's writer, and a commit is one fsync of the
    # log instead of the rollback journal's several; synchronous stays FULL so a committed
    # message's database work survives a power loss too
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=FULL")
    cursor.close()


#: PRAGMAs that name files or directories, or let SQL rewrite the schema's own text.
SQLITE_REFUSED_PRAGMAS = frozenset(
    {"temp_store_directory", "data_store_directory", "writable_schema", "trusted_schema"}
)


def _sqlite_authorize(
    action: int, arg1: str | None, arg2: str | None, _db: str | None, _trigger: str | None
) -> int:
    """Keep a SQLite data source's SQL inside its own database file: no ATTACH (nor VACUUM INTO,
    which attaches its target), no DETACH, no extension loading, no file-reaching PRAGMA."""
    if action in (sqlite3.SQLITE_ATTACH, sqlite3.SQLITE_DETACH):
        return sqlite3.SQLITE_DENY
    if action == sqlite3.SQLITE_PRAGMA and (arg1 or "").lower() in SQLITE_REFUSED_PRAGMAS:
        return sqlite3.SQLITE_DENY
    if action == sqlite3.SQLITE_FUNCTION and (arg2 or "").lower() == "load_extension":
        return sqlite3.SQLITE_DENY
    return sqlite3.SQLITE_OK


def _sqlite_confine(dbapi_connection: Any, _record: Any) -> None:
    # after _sqlite_wal: the broker's own PRAGMAs run before the authorizer is in place
    if hasattr(dbapi_connection, "enable_load_extension"):
        dbapi_connection.enable_load_extension(False)
    dbapi_connection.set_authorizer(_sqlite_authorize)


class ThreadDataSource:
    """The ``esql.database.DataSource`` of one flow thread: its connection inside the unit of work."""

    def __init__(self, sources: DataSources, name: str) -> None:
        self.sources = sources
        self.name = name
        self._connection: sa.Connection | None = None

    @property
    def dialect_name(self) -> str:
        return self.sources.engine(self.name).dialect.name

    def connection(self) -> sa.Connection:
        conn = self._connection
        if conn is None or conn.closed or conn.invalidated:
            try:
                engine = self.sources.engine(self.name)
                conn = engine.connect()
            except sa.exc.SQLAlchemyError as exc:
                raise DataSourceError(f"data source {self.name!r} cannot be reached: {exc}") from exc
            self._connection = conn
        if not conn.in_transaction():
            conn.begin()
        return conn

    @property
    def active(self) -> bool:
        conn = self._connection
        return conn is not None and not conn.closed and conn.in_transaction()

    def commit(self) -> None:
        if self.active:
            assert self._connection is not None
            self._connection.commit()

    def rollback(self) -> None:
        conn = self._connection
        if conn is None or conn.closed:
            return
        try:
            if conn.in_transaction():
                conn.rollback()
        except sa.exc.SQLAlchemyError:
            conn.invalidate()

    def close(self) -> None:
        if self._connection is not None:
            self.rollback()
            self._connection.close()
            self._connection = None
