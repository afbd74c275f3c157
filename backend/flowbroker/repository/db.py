"""Engines, sessions and schema migration of the config repository, from the settings' database URL."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, create_engine, event, inspect
from sqlalchemy.orm import Session, sessionmaker

from flowbroker.settings import Settings

MIGRATIONS_DIR = Path(__file__).resolve().parent / "migrations"


def make_engine(url: str, **kwargs: Any) -> Engine:
    """An engine for ``url``; SQLite gets WAL, foreign keys and a busy timeout for concurrent writers."""
    if url.startswith("sqlite"):
        kwargs.setdefault("connect_args", {"check_same_thread": False, "timeout": 30})
        engine = create_engine(url, **kwargs)

        @event.listens_for(engine, "connect")
        def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
            cursor = dbapi_connection.cursor()
            cursor.execute("PRAGMA foreign_keys=ON")
            cursor.execute("PRAGMA journal_mode=WAL")
            # WAL with NORMAL sync loses no committed transaction on a process crash.
            cursor.execute("PRAGMA synchronous=NORMAL")
            cursor.close()

        return engine
    kwargs.setdefault("pool_pre_ping", True)
    return create_engine(url, **kwargs)


def engine_from_settings(settings: Settings) -> Engine:
    if not settings.database_url:
        settings.data.mkdir(parents=True, exist_ok=True)
    return make_engine(settings.resolved_database_url)


def session_factory(engine: Engine) -> sessionmaker[Session]:
    return sessionmaker(bind=engine, expire_on_commit=False)


@contextmanager
def session_scope(factory: sessionmaker[Session]) -> Iterator[Session]:
    """A unit of work: committed when the block ends, rolled back when it raises."""
    session = factory()
    try:
        yield session
        session.commit()
    except BaseException:
        session.rollback()
        raise
    finally:
        session.close()


def alembic_config(engine: Engine) -> Any:
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    config.set_main_option("sqlalchemy.url", engine.url.render_as_string(hide_password=False))
    config.attributes["engine"] = engine
    return config


def upgrade(engine: Engine, revision: str = "head") -> None:
    """Migrate the repository in place to ``revision``; an empty database gets the whole schema."""
    from alembic import command

    command.upgrade(alembic_config(engine), revision)


def newest_revision_on_disk() -> str:
    """The head revision read from the migration file names (``NNNN_*.py`` with revision ``NNNN``)."""
    names = sorted(p.name.split("_", 1)[0] for p in (MIGRATIONS_DIR / "versions").glob("[0-9]*_*.py"))
    return names[-1]


def upgrade_if_needed(engine: Engine) -> None:
    """Migrate only when the repository is behind: a set-up repository starts without loading Alembic."""
    from sqlalchemy import text
    from sqlalchemy.exc import DBAPIError

    try:
        with engine.connect() as connection:
            current = connection.execute(text("SELECT version_num FROM alembic_version")).scalar()
    except DBAPIError:
        current = None
    if current != newest_revision_on_disk():
        upgrade(engine)


def downgrade(engine: Engine, revision: str) -> None:
    from alembic import command

    command.downgrade(alembic_config(engine), revision)


def current_revision(engine: Engine) -> str | None:
    from alembic.runtime.migration import MigrationContext

    with engine.connect() as connection:
        return MigrationContext.configure(connection).get_current_revision()


def head_revision() -> str:
    from alembic.script import ScriptDirectory

    config = alembic_config(make_engine("sqlite://"))
    head = ScriptDirectory.from_config(config).get_current_head()
    assert head is not None
    return head


def table_names(engine: Engine) -> set[str]:
    return set(inspect(engine).get_table_names())
