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


def _connection(ctx: ExecutionContext) -> sa.Connection:
    if ctx.data_source is None:
        raise EsqlRuntimeError("this node has no data source configured for database statements")
    return ctx.data_source.connection()  # type: ignore[no-any-return]


def _execute(ctx: ExecutionContext, statement: Any, params: Any = None) -> Any:
    conn = _connection(ctx)
    try:
        result = conn.execute(statement, params) if params is not None else conn.execute(statement)
    except sa.exc.DBAPIError as exc:
        orig = exc.orig
        state = (
            getattr(orig, "sqlstate", None) or getattr(getattr(orig, "diag", None), "sqlstate", None) or ""
        )
        message = str(orig).strip().splitlines()[0] if orig is not None else str(exc)
        ctx.sqlcode, ctx.sqlstate, ctx.sqlerrortext = -1, state or "HY000", message
        raise DatabaseError(f"database error: {message}", state) from None
    except sa.exc.SQLAlchemyError as exc:
        ctx.sqlcode, ctx.sqlstate, ctx.sqlerrortext = -1, "HY000", str(exc)
        raise DatabaseError(f"database error: {exc}") from None
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
        stmt = sa.select(*[c.label(n) if n else c for n, c in columns]).select_from(table)
        names = [n for n, _c in columns]
    if where is not None:
        stmt = stmt.where(where)
    rows = _execute(ctx, stmt).fetchall()
    if item:
        return [r[0] for r in rows]
    return [_row(r, names) for r in rows]


def _row(row: Any, names: list[Any] | None) -> Element:
    keys = list(row._mapping.keys())
    fields = [(str(names[i] if names and names[i] else keys[i]), v) for i, v in enumerate(row)]
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
