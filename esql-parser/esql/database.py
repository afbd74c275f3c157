"""ESQL database statements (INSERT, UPDATE, DELETE, SELECT … FROM Database, PASSTHRU) over SQLAlchemy Core.

Every value from the program or the message reaches the database as a bound parameter; table
and column names come only from the program's identifiers (or ``{…}`` expressions), quoted by
SQLAlchemy. The runtime supplies the connection of the current unit of work through
:class:`DataSource`.
"""

from __future__ import annotations

import re
from datetime import date, datetime, time
from decimal import Decimal
from typing import Any, Protocol

import sqlalchemy as sa
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.sql.functions import FunctionElement

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
    def neg(a: Any) -> Any:
        return -a

    @staticmethod
    def is_(a: Any, what: str, negated: bool) -> Any:
        """IS [NOT] NULL / UNKNOWN / TRUE / FALSE."""
        if what in ("NULL", "UNKNOWN"):
            return a.is_not(None) if negated else a.is_(None)
        test = a == sa.true() if what == "TRUE" else a == sa.false()
        # IS NOT TRUE holds for FALSE and for NULL, unlike NOT (a = TRUE)
        return sa.or_(sa.not_(test), a.is_(None)) if negated else sa.and_(test, a.is_not(None))

    @staticmethod
    def like(a: Any, pattern: Any, negated: bool, escape: Any = None) -> Any:
        return a.not_like(pattern, escape=escape) if negated else a.like(pattern, escape=escape)

    @staticmethod
    def between(a: Any, lo: Any, hi: Any, negated: bool, symmetric: bool) -> Any:
        expr = a.between(lo, hi, symmetric=symmetric)
        return sa.not_(expr) if negated else expr

    @staticmethod
    def case(subject: Any, whens: list[tuple[Any, Any]], other: Any) -> Any:
        if subject is None:
            return sa.case(*whens, else_=other)
        return sa.case(*[(subject == value, result) for value, result in whens], else_=other)

    @staticmethod
    def cast(a: Any, type_name: str, precision: list[int]) -> Any:
        types: dict[str, Any] = {
            "INTEGER": sa.BigInteger(),
            "DECIMAL": sa.Numeric(
                precision[0] if precision else None, precision[1] if len(precision) > 1 else None
            ),
            "FLOAT": sa.Float(),
            "CHARACTER": sa.String(),
            "DATE": sa.Date(),
            "TIMESTAMP": sa.DateTime(),
            "TIME": sa.Time(),
            "BLOB": sa.LargeBinary(),
        }
        return sa.cast(a, types[type_name])

    @staticmethod
    def func(name: str, args: list[Any]) -> Any:
        """A scalar ESQL function inside a database statement, in its portable SQL form."""
        if name == "MOD":
            return args[0].op("%")(args[1])
        if name == "SUBSTRING":
            return sa.func.substr(*args)
        if name == "LEFT":
            # LEFT(source, length): substr from 1 is the same on characters and bytes everywhere
            return sa.func.substr(args[0], 1, args[1])
        if name == "RIGHT":
            return _Right(*args)
        sql_name = _SQL_FUNCTIONS.get(name, name.lower())
        fn: Any = getattr(sa.func, sql_name)
        return fn(*args)

    @staticmethod
    def trim(spec: str, singleton: Any, source: Any) -> Any:
        """TRIM(BOTH|LEADING|TRAILING singleton FROM source)."""
        if spec == "LEADING":
            return sa.func.ltrim(source, singleton)
        if spec == "TRAILING":
            return sa.func.rtrim(source, singleton)
        return _Trim(source, singleton)

    @staticmethod
    def position(needle: Any, source: Any) -> Any:
        """POSITION(needle IN source): 1-based, 0 when absent."""
        return _Position(needle, source)

    @staticmethod
    def star(alias: str) -> _Star:
        return _Star(alias)

    @staticmethod
    def in_(a: Any, items: list[Any], negated: bool) -> Any:
        expr = a.in_(items)
        return sa.not_(expr) if negated else expr

    @staticmethod
    def aggregate(name: str, arg: Any) -> Any:
        fn: Any = getattr(sa.func, name.lower())
        return fn() if arg is None else fn(arg)


class _Star:
    """``A.*`` as one item of a select list: every column of table A, under the item's name."""

    def __init__(self, alias: str) -> None:
        self.alias = alias


class _Right(FunctionElement[Any]):
    """RIGHT(source, length) on characters or bytes: PostgreSQL's right() takes no bytea and
    SQLite has none, so both get substr from the length'th last position."""

    name = "right"
    inherit_cache = True


@compiles(_Right)
def _right_sql(element: _Right, compiler: Any, **kw: Any) -> str:
    source, length = list(element.clauses)
    start = sa.func.greatest(sa.func.length(source) - length + 1, 1)
    return str(compiler.process(sa.func.substr(source, start), **kw))


@compiles(_Right, "sqlite")
def _right_sqlite(element: _Right, compiler: Any, **kw: Any) -> str:
    source, length = list(element.clauses)
    start = sa.func.max(sa.func.length(source) - length + 1, 1)
    return str(compiler.process(sa.func.substr(source, start), **kw))


class _Trim(FunctionElement[Any]):
    """Both ends trimmed of a character: PostgreSQL's btrim(s, c), SQLite's trim(s, c)."""

    name = "btrim"
    inherit_cache = True


@compiles(_Trim)
def _trim_sql(element: _Trim, compiler: Any, **kw: Any) -> str:
    return str(compiler.process(sa.func.btrim(*element.clauses), **kw))


@compiles(_Trim, "sqlite")
def _trim_sqlite(element: _Trim, compiler: Any, **kw: Any) -> str:
    return str(compiler.process(sa.func.trim(*element.clauses), **kw))


class _Position(FunctionElement[Any]):
    """POSITION(needle IN source): PostgreSQL's strpos(source, needle), SQLite's instr(source, needle)."""

    name = "strpos"
    inherit_cache = True


@compiles(_Position)
def _position_sql(element: _Position, compiler: Any, **kw: Any) -> str:
    needle, source = list(element.clauses)
    return str(compiler.process(sa.func.strpos(source, needle), **kw))


@compiles(_Position, "sqlite")
def _position_sqlite(element: _Position, compiler: Any, **kw: Any) -> str:
    needle, source = list(element.clauses)
    return str(compiler.process(sa.func.instr(source, needle), **kw))


#: ESQL function names whose SQL spelling differs (the rest are the same in lower case).
_SQL_FUNCTIONS = {
    "UCASE": "upper",
    "LCASE": "lower",
    "ABSVAL": "abs",
    "CHARACTER_LENGTH": "length",
    "CHAR_LENGTH": "length",
}


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
        if getattr(orig, "sqlite_errorname", "") == "SQLITE_AUTH" or message.startswith(
            ("not authorized", "authorization denied")
        ):
            # the data source's authorizer refused the statement (see flowbroker.runtime.datasources)
            state = "42501"
            message = (
                f"{message}: a SQLite data source refuses ATTACH, DETACH, VACUUM INTO, "
                "load_extension and file-reaching PRAGMAs"
            )
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
        # INSERT INTO Database.t VALUES (…): every column of the table, in its order
        conn = _connection(ctx)
        names = [f"p{i}" for i in range(len(values))]
        quoted = conn.dialect.identifier_preparer.format_table(table)
        text = f"INSERT INTO {quoted} VALUES ({', '.join(':' + n for n in names)})"
        _execute(ctx, sa.text(text), dict(zip(names, values, strict=True)))
        return
    for c in columns:
        _check_name(c, "column")
    row = dict(zip(columns, values, strict=True))
    if all(type(v) in _PLAIN_VALUES for v in values):
        _execute(ctx, _insert_statement(table, tuple(row)), row)
        return
    stmt = sa.insert(sa.table(table.name, *[sa.column(c) for c in columns], schema=table.schema))
    _execute(ctx, stmt.values(row))


#: Python types a column value binds as it is, untyped (as ``insert().values({...})`` binds them).
_PLAIN_VALUES = frozenset({type(None), bool, int, float, str, bytes, Decimal, date, datetime, time})

#: INSERT statements by (schema, table, columns): one statement object per shape, its values bound
#: by name at execution, so SQLAlchemy builds it and its cache key once instead of per message.
_INSERTS: dict[tuple[str | None, str, tuple[str, ...]], Any] = {}
_INSERTS_LIMIT = 512


def _insert_statement(table: sa.TableClause, columns: tuple[str, ...]) -> Any:
    key = (table.schema, table.name, columns)
    stmt = _INSERTS.get(key)
    if stmt is None:
        target = sa.table(table.name, *[sa.column(c) for c in columns], schema=table.schema)
        stmt = sa.insert(target).values({c: sa.bindparam(c) for c in columns})
        if len(_INSERTS) >= _INSERTS_LIMIT:
            _INSERTS.clear()
        _INSERTS[key] = stmt
    return stmt


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


def select(
    ctx: ExecutionContext,
    tables: list[tuple[str, list[Any], list[str]]],
    columns: Any,
    where: Any,
    item: bool,
) -> list[Any]:
    """SELECT from one or more tables: (alias, Database path parts, columns used) each.

    ``columns`` and ``where`` build their SQL from the aliased tables (``T['A'].c['qty']``);
    several tables are joined as SQL's FROM a, b joins them, by the WHERE clause.
    """
    aliased: dict[str, Any] = {}
    every: dict[str, list[str]] = {}
    for alias, parts, used in tables:
        table, _dsn = _table(parts, ctx.data_source)
        if "*" in used:
            # A.* as one item among others: the table's columns, in the database's order
            every[alias] = _table_columns(ctx, table)
            used = [c for c in used if c != "*"] + [c for c in every[alias] if c not in used]
        cols: list[Any] = [sa.column(_check_name(c, "column")) for c in used]
        aliased[alias] = sa.table(table.name, *cols, schema=table.schema).alias(alias)
    chosen = columns(aliased)
    if chosen is None:
        stmt = sa.select(sa.text("*")).select_from(*aliased.values())
        names = None
    else:
        expanded: list[tuple[Any, Any]] = []
        for name, column in chosen:
            if not isinstance(column, _Star):
                expanded.append((name, column))
                continue
            base = [] if name is None else [(name, "", None)] if isinstance(name, str) else list(name)
            for col in every[column.alias]:
                expanded.append(([*base, (col, "", None)], aliased[column.alias].c[col]))
        stmt = sa.select(
            *[c.label(n) if isinstance(n, str) else c.label(f"c{i}") for i, (n, c) in enumerate(expanded)]
        ).select_from(*aliased.values())
        names = [n for n, _c in expanded]
    condition = where(aliased)
    if condition is not None:
        stmt = stmt.where(condition)
    rows = _execute(ctx, stmt).fetchall()
    if item:
        return [r[0] for r in rows]
    return [_row(r, names) for r in rows]


def _table_columns(ctx: ExecutionContext, table: sa.TableClause) -> list[str]:
    """The column names of a database table, as the database lists them."""
    try:
        found = sa.inspect(_connection(ctx)).get_columns(table.name, schema=table.schema)
    except sa.exc.NoSuchTableError:
        found = []
    except sa.exc.SQLAlchemyError as exc:
        raise _database_error(ctx, exc) from exc
    if not found:
        message = f"no such table: {table.name}"
        ctx.sqlcode, ctx.sqlstate, ctx.sqlerrortext, ctx.sqlnativeerror = -1, "42S02", message, 0
        raise DatabaseError(f"database error: {message}", "42S02")
    return [str(c["name"]) for c in found]


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
    pieces = _split_markers(sql)
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


def _split_markers(sql: str) -> list[str]:
    """The SQL text around its ``?`` parameter markers; a ? in a literal, quoted name or comment is text."""
    pieces: list[str] = []
    start = i = 0
    n = len(sql)
    while i < n:
        ch = sql[i]
        if ch in "'\"":
            end = i + 1
            while end < n:
                if sql[end] == ch:
                    if end + 1 < n and sql[end + 1] == ch:  # a doubled quote stays inside
                        end += 2
                        continue
                    break
                end += 1
            i = end + 1
        elif sql.startswith("--", i):
            end = sql.find("\n", i)
            i = n if end < 0 else end + 1
        elif sql.startswith("/*", i):
            end = sql.find("*/", i + 2)
            i = n if end < 0 else end + 2
        elif ch == "?":
            pieces.append(sql[start:i])
            i += 1
            start = i
        else:
            i += 1
    pieces.append(sql[start:])
    return pieces


def call_procedure(
    ctx: ExecutionContext,
    external: str,
    args: list[Any],
    directions: list[str],
    returns: bool,
    schema: Any = None,
    result_sets: int = 0,
) -> tuple[Any, ...]:
    """CALL of a LANGUAGE DATABASE routine: (value, OUT/INOUT values …, [result set rows …]).

    ``external`` is the EXTERNAL NAME ("schema.proc" or "proc"); CALL … IN Database.{schema} or
    EXTERNAL SCHEMA give ``schema``, which replaces the name's own. What a dialect cannot do
    (SQLite has no stored procedures) fails here, at the call, with the reason.
    """
    parts = external.split(".")
    if schema is not None:
        parts = [str(schema), parts[-1]]
    name = ".".join(_check_name(part, "procedure") for part in parts)
    dialect = getattr(ctx.data_source, "dialect_name", "") if ctx.data_source is not None else ""
    outs = [i for i, d in enumerate(directions) if d != "IN"]
    names = [f"p{i}" for i in range(len(args))]
    params = dict(zip(names, args, strict=True))
    placeholders = ", ".join(f":{n}" for n in names)
    if dialect == "sqlite" and (not returns or outs or result_sets):
        what = "result sets" if result_sets else "OUT parameters" if outs else "stored procedures"
        raise EsqlRuntimeError(
            f"CALL {name}: the sqlite data source has no {what}; LANGUAGE DATABASE procedures need PostgreSQL"
        )
    if result_sets:
        if result_sets > 1 or outs or returns:
            raise EsqlRuntimeError(
                f"CALL {name}: the {dialect or 'configured'} data source gives one result set, from a "
                "set-returning function with IN parameters only"
            )
        rows = _execute(ctx, sa.text(f"SELECT * FROM {name}({placeholders})"), params).fetchall()
        return (None, [[_row(r, None) for r in rows]])
    if returns:
        if outs:
            raise EsqlRuntimeError(
                f"CALL {name}: a database function returns its OUT parameters as its result; "
                "declare the routine as a PROCEDURE"
            )
        row = _execute(ctx, sa.text(f"SELECT {name}({placeholders})"), params).fetchone()
        return (None if row is None else row[0], [])
    result = _execute(ctx, sa.text(f"CALL {name}({placeholders})"), params)
    if not outs:
        return (None, [])
    # PostgreSQL answers a CALL with one row holding the OUT and INOUT parameters, in order.
    row = result.fetchone() if result.returns_rows else None
    if row is None or len(row) != len(outs):
        raise EsqlRuntimeError(
            f"CALL {name}: the database returned {0 if row is None else len(row)} value(s) "
            f"for {len(outs)} OUT/INOUT parameter(s)"
        )
    return (None, *row, [])
