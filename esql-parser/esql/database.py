"""ESQL database statements (INSERT, UPDATE, DELETE, SELECT … FROM Database, PASSTHRU) over SQLAlchemy Core.

Every value from the program or the message reaches the database as a bound parameter; table
and column names come only from the program's identifiers (or ``{…}`` expressions), quoted by
SQLAlchemy. The runtime supplies the connection of the current unit of work through
:class:`DataSource`.
"""

from __future__ import annotations

import re
from typing import Any, Protocol

import sqlalchemy as sa

from esql.runtime import EsqlRuntimeError, ExecutionContext, row_of
from esql.tree import Element

_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_$#@]*$")


class DataSource(Protocol):
    """What the runtime gives ESQL for database access: the unit of work's connection."""

    dialect_name: str

    def connection(self) -> sa.Connection: ...


class DatabaseError(EsqlRuntimeError):
    """A database statement that failed; carries the driver's SQLSTATE and native code."""

    def __init__(self, message: str, sqlstate: str = "", native: int = 0) -> None:
        super().__init__(message)
        self.sqlstate = sqlstate or "HY000"
        self.sqlcode = -1
        self.native = native


class SqlBuilder:
    """Builds SQLAlchemy expressions from generated code: columns by name, everything else bound."""

    @staticmethod
    def col(name: str) -> Any:
        _check_name(name, "column")
        return sa.column(name)

    @staticmethod
    def param(value: Any) -> Any:
        if isinstance(value, list):
            raise EsqlRuntimeError("a LIST cannot be used as a database parameter")
        return sa.literal(value) if value is not None else sa.null()

    @staticmethod
    def compare(op: str, a: Any, b: Any) -> Any:
        ops = {"=": "__eq__", "<>": "__ne__", "<": "__lt__", "<=": "__le__", ">": "__gt__", ">=": "__ge__"}
        return getattr(a, ops[op])(b)

    @staticmethod
    def and_(a: Any, b: Any) -> Any:
        return sa.and_(a, b)

    @staticmethod
    def or_(a: Any, b: Any) -> Any:
        return sa.or_(a, b)

    @staticmethod
    def not_(a: Any) -> Any:
        return sa.not_(a)

    @staticmethod
    def arith(op: str, a: Any, b: Any) -> Any:
        return {"+": a + b, "-": a - b, "*": a * b, "/": a / b}[op]

    @staticmethod
    def concat(a: Any, b: Any) -> Any:
        return a.concat(b)

    @staticmethod
    def is_null(a: Any, negated: bool) -> Any:
        return a.is_not(None) if negated else a.is_(None)

    @staticmethod
    def like(a: Any, pattern: Any, negated: bool) -> Any:
        return a.not_like(pattern) if negated else a.like(pattern)

    @staticmethod
    def in_(a: Any, items: list[Any], negated: bool) -> Any:
        expr = a.in_(items)
        return sa.not_(expr) if negated else expr

    @staticmethod
    def aggregate(name: str, arg: Any) -> Any:
        fn: Any = getattr(sa.func, name.lower())
        return fn() if arg is None else fn(arg)


def _check_name(name: Any, what: str) -> str:
    if not isinstance(name, str) or not _NAME_RE.match(name):
        raise EsqlRuntimeError(f"invalid database {what} name {name!r}")
    return name


def _table(parts: list[Any], ds: Any) -> tuple[sa.TableClause, str | None]:
    """Database.[datasource.][schema.]table → a table clause; a data-source part names the DSN."""
    names = [_check_name(p, "table") for p in parts]
    if not names:
        raise EsqlRuntimeError("a database table name is missing")
    if len(names) > 3:
        raise EsqlRuntimeError(f"too many qualifiers in Database.{'.'.join(names)}")
    schema = None
    dsn = None
    if len(names) == 3:
        dsn, schema, table = names
    elif len(names) == 2:
        schema, table = names
    else:
        table = names[0]
    if schema is not None and ds is not None and ds.dialect_name == "sqlite":
        schema = None
    return sa.table(table, schema=schema), dsn


def end_transaction(ctx: ExecutionContext, commit: bool, parts: list[Any]) -> None:
    """COMMIT / ROLLBACK [Database.dsn]: end the node's database transaction before the flow does.

    A data source that manages its own unit of work offers ``commit()``/``rollback()``; otherwise
    the connection's transaction is ended (SQLAlchemy begins a new one on the next statement).
    """
    verb = "COMMIT" if commit else "ROLLBACK"
    names = [_check_name(p, "data source") for p in parts]
    if len(names) > 1:
        raise EsqlRuntimeError(f"{verb} names one data source, not Database.{'.'.join(names)}")
    if ctx.data_source is None:
        raise EsqlRuntimeError(f"{verb}: this node has no data source configured for database statements")
    own = getattr(ctx.data_source, "commit" if commit else "rollback", None)
    try:
        if callable(own):
            own()
        else:
            conn = _connection(ctx)
            conn.commit() if commit else conn.rollback()
    except sa.exc.SQLAlchemyError as exc:
        raise _database_error(ctx, exc) from None
    ctx.sqlcode, ctx.sqlstate, ctx.sqlerrortext = 0, "00000", ""


def _connection(ctx: ExecutionContext) -> sa.Connection:
    if ctx.data_source is None:
        raise EsqlRuntimeError("this node has no data source configured for database statements")
    return ctx.data_source.connection()  # type: ignore[no-any-return]


#: SQLSTATEs for drivers that report none (SQLite): by the DB-API error class, refined by the
#: driver's message for the common cases, in ODBC's spelling as IBM's brokers report them.
_CLASS_STATES: tuple[tuple[type[Exception], str], ...] = (
    (sa.exc.IntegrityError, "23000"),
    (sa.exc.DataError, "22000"),
    (sa.exc.ProgrammingError, "42000"),
    (sa.exc.NotSupportedError, "0A000"),
    (sa.exc.InterfaceError, "08000"),
    (sa.exc.InternalError, "HY000"),
    (sa.exc.OperationalError, "HY000"),
)
_MESSAGE_STATES: tuple[tuple[str, str], ...] = (
    ("no such table", "42S02"),
    ("no such column", "42S22"),
    ("has no column named", "42S22"),
    ("syntax error", "42000"),
    ("already exists", "42S01"),
    ("database is locked", "HYT00"),
    ("datatype mismatch", "22018"),
    ("too many sql variables", "07001"),
    ("unable to open database", "08001"),
)


def _driver_state(exc: sa.exc.DBAPIError) -> str:
    """The SQLSTATE the driver gives (psycopg), or one derived from the error class (SQLite)."""
    orig = exc.orig
    state = getattr(orig, "sqlstate", None) or getattr(getattr(orig, "diag", None), "sqlstate", None)
    if isinstance(state, str) and state:
        return state
    text = str(orig).lower()
    for fragment, mapped in _MESSAGE_STATES:
        if fragment in text:
            return mapped
    for cls, mapped in _CLASS_STATES:
        if isinstance(exc, cls):
            return mapped
    return "HY000"


def _database_error(ctx: ExecutionContext, exc: sa.exc.SQLAlchemyError) -> DatabaseError:
    """A DatabaseError for ``exc`` with SQLCODE, SQLSTATE, SQLNATIVEERROR and SQLERRORTEXT set."""
    if isinstance(exc, sa.exc.DBAPIError):
        orig = exc.orig
        state = _driver_state(exc)
        message = str(orig).strip().splitlines()[0] if orig is not None else str(exc)
        native = getattr(orig, "sqlite_errorcode", None) or getattr(orig, "errno", None) or 0
    else:
        state, message, native = "HY000", str(exc), 0
    native = native if isinstance(native, int) else 0
    ctx.sqlcode, ctx.sqlstate, ctx.sqlerrortext, ctx.sqlnativeerror = -1, state, message, native
    return DatabaseError(f"database error: {message}", state, native)


def _execute(ctx: ExecutionContext, statement: Any, params: Any = None) -> Any:
    conn = _connection(ctx)
    try:
        result = conn.execute(statement, params) if params is not None else conn.execute(statement)
    except sa.exc.SQLAlchemyError as exc:
        raise _database_error(ctx, exc) from None
    ctx.sqlcode, ctx.sqlstate, ctx.sqlerrortext = 0, "00000", ""
    if result.returns_rows is False and result.rowcount == 0:
        ctx.sqlcode = 100
    return result


def insert(ctx: ExecutionContext, parts: list[Any], columns: list[str], values: list[Any]) -> None:
    table, _dsn = _table(parts, ctx.data_source)
    if not columns:
        raise EsqlRuntimeError("INSERT needs the column names: INSERT INTO Database.t (a, b) VALUES (…)")
    for c in columns:
        _check_name(c, "column")
    stmt = sa.insert(sa.table(table.name, *[sa.column(c) for c in columns], schema=table.schema))
    _execute(ctx, stmt.values(dict(zip(columns, values, strict=True))))


def update(ctx: ExecutionContext, parts: list[Any], assigns: list[tuple[str, Any]], where: Any) -> None:
    table, _dsn = _table(parts, ctx.data_source)
    columns = [_check_name(c, "column") for c, _v in assigns]
    target = sa.table(table.name, *[sa.column(c) for c in columns], schema=table.schema)
    stmt = sa.update(target).values({c: v for c, (_n, v) in zip(columns, assigns, strict=True)})
    if where is not None:
        stmt = stmt.where(where)
    _execute(ctx, stmt)


def delete(ctx: ExecutionContext, parts: list[Any], where: Any) -> None:
    table, _dsn = _table(parts, ctx.data_source)
    stmt = sa.delete(table)
    if where is not None:
        stmt = stmt.where(where)
    _execute(ctx, stmt)


def select(ctx: ExecutionContext, parts: list[Any], columns: Any, where: Any, item: bool) -> list[Any]:
    table, _dsn = _table(parts, ctx.data_source)
    if columns is None:
        stmt = sa.select(sa.text("*")).select_from(table)
        names = None
    else:
        stmt = sa.select(
            *[c.label(n) if isinstance(n, str) else c.label(f"c{i}") for i, (n, c) in enumerate(columns)]
        ).select_from(table)
        names = [n for n, _c in columns]
    if where is not None:
        stmt = stmt.where(where)
    rows = _execute(ctx, stmt).fetchall()
    if item:
        return [r[0] for r in rows]
    return [_row(r, names) for r in rows]


def _row(row: Any, names: list[Any] | None) -> Element:
    keys = list(row._mapping.keys())
    # SELECT * names fields after the columns; an unnamed select item gets Column<n> as in ROW(…).
    fields = [(str(keys[i]) if names is None else names[i], v) for i, v in enumerate(row)]
    return row_of(fields, lambda v: v)


def passthru(ctx: ExecutionContext, sql: Any, params: list[Any], target: Any) -> list[Element]:
    """PASSTHRU: the statement text is the program's; ``?`` markers take the values as parameters."""
    if not isinstance(sql, str):
        raise EsqlRuntimeError("PASSTHRU needs the SQL statement as CHARACTER")
    names = [f"p{i}" for i in range(len(params))]
    pieces = sql.split("?")
    if len(pieces) - 1 != len(params):
        raise EsqlRuntimeError(
            f"PASSTHRU: the statement has {len(pieces) - 1} parameter marker(s) but {len(params)} value(s) were given"
        )
    text = pieces[0].replace(":", r"\:") + "".join(
        f":{n}" + rest.replace(":", r"\:") for n, rest in zip(names, pieces[1:], strict=True)
    )
    if not params:
        text = sql.replace(":", r"\:")
    result = _execute(ctx, sa.text(text), dict(zip(names, params, strict=True)))
    if result.returns_rows:
        return [_row(r, None) for r in result.fetchall()]
    return []


def call_procedure(ctx: ExecutionContext, external: str, args: list[Any], returns: bool) -> Any:
    """CALL of a LANGUAGE DATABASE routine: the stored procedure (or function) named by EXTERNAL NAME."""
    parts = external.split(".")
    for part in parts:
        _check_name(part, "procedure")
    names = [f"p{i}" for i in range(len(args))]
    placeholders = ", ".join(f":{n}" for n in names)
    verb = "SELECT" if returns else "CALL"
    result = _execute(
        ctx, sa.text(f"{verb} {'.'.join(parts)}({placeholders})"), dict(zip(names, args, strict=True))
    )
    if returns and result.returns_rows:
        row = result.fetchone()
        return None if row is None else row[0]
    return None
