"""Database statements against real SQLite and the local PostgreSQL: bound parameters, dynamic names, errors."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import pytest
import sqlalchemy as sa
from flowbroker.formats.assembly import Template, build_root, to_message

from esql.compiler import compile_program
from esql.database import DatabaseError
from esql.runtime import EsqlRuntimeError, ExecutionContext
from esql.tree import Element


def _message(body: bytes, descriptor: object = None) -> Element:
    """The input message as an input node builds it, the body read by the XMLNSC parser."""
    return build_root(descriptor, body, Template(domain="XMLNSC"))


def _body(root: Element) -> bytes:
    """The output body as an output node writes it."""
    return to_message(root)[1]


PROGRAM = """
DECLARE tableName EXTERNAL CHARACTER 'orders';
CREATE COMPUTE MODULE Db_Compute
  CREATE FUNCTION Main() RETURNS BOOLEAN
  BEGIN
    INSERT INTO Database.{tableName} (id, customer, qty) VALUES (1, InputRoot.XMLNSC.Order.Customer, 10);
    INSERT INTO Database.{tableName} (id, customer, qty) VALUES (2, 'O''Brien''); DROP TABLE x; --', 4);
    INSERT INTO Database.{tableName} (id, customer, qty) VALUES (3, 'Small', 1);
    UPDATE Database.{tableName} AS O SET qty = O.qty + 1 WHERE O.id = 1;
    SET OutputRoot.XMLNSC.Out.Row[] = SELECT O.id, O.customer FROM Database.{tableName} AS O WHERE O.qty > 3 AND O.id = 2;
    SET OutputRoot.XMLNSC.Out.Big = THE(SELECT ITEM COUNT(*) FROM Database.{tableName} AS O WHERE O.qty > 3);
    SET OutputRoot.XMLNSC.Out.Qty = THE(SELECT ITEM O.qty FROM Database.{tableName} AS O WHERE O.id = 1);
    DELETE FROM Database.{tableName} AS O WHERE O.id = 3;
    PASSTHRU('UPDATE ' || tableName || ' SET qty = ? WHERE id = ?', 99, 2);
    SET OutputRoot.XMLNSC.Out.P[] = PASSTHRU('SELECT customer, qty FROM ' || tableName || ' WHERE qty > ? ORDER BY id', 50);
    SET OutputRoot.XMLNSC.Out.Left = THE(SELECT ITEM COUNT(*) FROM Database.{tableName} AS O);
    RETURN TRUE;
  END;
END MODULE;
"""

DUPLICATE = """
DECLARE tableName EXTERNAL CHARACTER 'orders';
CREATE COMPUTE MODULE Dup_Compute
  CREATE FUNCTION Main() RETURNS BOOLEAN
  BEGIN
    BEGIN
      DECLARE EXIT HANDLER FOR SQLSTATE LIKE '%' BEGIN
        SET OutputRoot.XMLNSC.Out.State = SQLSTATE;
        SET OutputRoot.XMLNSC.Out.Code = SQLCODE;
      END;
      INSERT INTO Database.{tableName} (id, customer, qty) VALUES (7, 'a', 1);
      INSERT INTO Database.{tableName} (id, customer, qty) VALUES (7, 'b', 1);
    END;
    RETURN TRUE;
  END;
END MODULE;
"""


class EngineDataSource:
    """The data source a flow's unit of work would give: one connection, one transaction."""

    def __init__(self, conn: sa.Connection) -> None:
        self.conn = conn
        self.dialect_name = conn.dialect.name

    def connection(self) -> sa.Connection:
        return self.conn


@pytest.fixture(params=["sqlite", "postgresql"])
def engine(request: Any, tmp_path: Any) -> Iterator[sa.Engine]:
    if request.param == "sqlite":
        eng = sa.create_engine(f"sqlite:///{tmp_path / 'esql.db'}")
    else:
        eng = sa.create_engine(request.getfixturevalue("postgres_url"))
    yield eng
    eng.dispose()


@pytest.fixture
def table(engine: sa.Engine) -> Iterator[str]:
    name = f"esql_orders_{uuid.uuid4().hex[:10]}"
    with engine.begin() as conn:
        conn.execute(
            sa.text(f"CREATE TABLE {name} (id INTEGER PRIMARY KEY, customer VARCHAR(80), qty INTEGER)")
        )
    yield name
    with engine.begin() as conn:
        conn.execute(sa.text(f"DROP TABLE IF EXISTS {name}"))


def run(engine: sa.Engine, source: str, table: str) -> ExecutionContext:
    program = compile_program(source, "db.esql")
    with engine.begin() as conn:
        ctx = ExecutionContext(
            input_root=_message(b"<Order><Customer>ACME</Customer></Order>"),
            data_source=EngineDataSource(conn),
            externals={"tableName": table},
        )
        assert program.main_module().run(ctx) is True
    return ctx


@pytest.mark.timeout(120)
def test_insert_update_select_delete_passthru(engine: sa.Engine, table: str) -> None:
    ctx = run(engine, PROGRAM, table)
    out = _body(ctx.output_root).decode()
    assert out == (
        "<Out><Row><id>2</id><customer>O'Brien'); DROP TABLE x; --</customer></Row>"
        "<Big>2</Big>"
        "<Qty>11</Qty>"
        "<P><customer>O'Brien'); DROP TABLE x; --</customer><qty>99</qty></P>"
        "<Left>2</Left></Out>"
    )
    with engine.connect() as conn:
        rows = conn.execute(sa.text(f"SELECT id, customer, qty FROM {table} ORDER BY id")).fetchall()
    assert [tuple(r) for r in rows] == [(1, "ACME", 11), (2, "O'Brien'); DROP TABLE x; --", 99)]


@pytest.mark.timeout(120)
def test_database_error_reaches_handler(engine: sa.Engine, table: str) -> None:
    ctx = run(engine, DUPLICATE, table)
    state = ctx.output_root.child("XMLNSC").child("Out").child("State").value
    # the driver's SQLSTATE; SQLite reports none, so its integrity error class maps to 23000
    assert state == ("23505" if engine.dialect.name == "postgresql" else "23000")
    assert ctx.output_root.child("XMLNSC").child("Out").child("Code").value == -1


@pytest.mark.timeout(120)
def test_unhandled_database_error_is_precise(engine: sa.Engine, table: str) -> None:
    program = compile_program(
        "INSERT INTO Database.{tableName} (id, nosuchcolumn) VALUES (1, 2);\n"
        "DECLARE tableName EXTERNAL CHARACTER 'x';\n".replace("DECLARE", "-- ").replace("{tableName}", table),
        "bad.esql",
    )
    with engine.begin() as conn:
        ctx = ExecutionContext(data_source=EngineDataSource(conn))
        with pytest.raises(DatabaseError) as info:
            program.main_module().run(ctx)
    assert info.value.line == 1
    assert "nosuchcolumn" in info.value.message


def test_no_data_source_is_a_clear_error() -> None:
    program = compile_program("DELETE FROM Database.t WHERE t.a = 1;\n", "nods.esql")
    with pytest.raises(EsqlRuntimeError) as info:
        program.main_module().run(ExecutionContext())
    assert (
        str(info.value) == "line 1, column 1: this node has no data source configured for database statements"
    )


def test_invalid_dynamic_table_name_rejected() -> None:
    program = compile_program(
        "DECLARE t CHARACTER 'x; DROP TABLE y';\nDELETE FROM Database.{t};\n", "inj.esql"
    )
    engine = sa.create_engine("sqlite://")
    with engine.begin() as conn:
        with pytest.raises(EsqlRuntimeError) as info:
            program.main_module().run(ExecutionContext(data_source=EngineDataSource(conn)))
    assert info.value.message == "invalid database table name 'x; DROP TABLE y'"


@pytest.mark.timeout(120)
def test_language_database_routines_on_postgresql(postgres_url: str) -> None:
    engine = sa.create_engine(postgres_url)
    suffix = uuid.uuid4().hex[:8]
    table, proc, func = f"esql_audit_{suffix}", f"esql_audit_add_{suffix}", f"esql_twice_{suffix}"
    with engine.begin() as conn:
        conn.execute(sa.text(f"CREATE TABLE {table} (msg VARCHAR(40))"))
        conn.execute(
            sa.text(
                f"CREATE PROCEDURE {proc}(m VARCHAR) LANGUAGE SQL AS $$ INSERT INTO {table} VALUES (m) $$"
            )
        )
        conn.execute(
            sa.text(f"CREATE FUNCTION {func}(n INTEGER) RETURNS INTEGER LANGUAGE SQL AS $$ SELECT n * 2 $$")
        )
    source = f"""
CREATE PROCEDURE Audit(IN m CHARACTER) LANGUAGE DATABASE EXTERNAL NAME "public.{proc}";
CREATE FUNCTION Twice(IN n INTEGER) RETURNS INTEGER LANGUAGE DATABASE EXTERNAL NAME "{func}";
CALL Audit('from esql');
SET OutputRoot.XMLNSC.Out.T = Twice(21);
"""
    try:
        program = compile_program(source, "dbproc.esql")
        with engine.begin() as conn:
            ctx = ExecutionContext(data_source=EngineDataSource(conn))
            program.main_module().run(ctx)
        assert ctx.output_root.child("XMLNSC").child("Out").child("T").value == 42
        with engine.connect() as conn:
            assert conn.execute(sa.text(f"SELECT msg FROM {table}")).scalar() == "from esql"
    finally:
        with engine.begin() as conn:
            conn.execute(sa.text(f"DROP PROCEDURE IF EXISTS {proc}"))
            conn.execute(sa.text(f"DROP FUNCTION IF EXISTS {func}"))
            conn.execute(sa.text(f"DROP TABLE IF EXISTS {table}"))
        engine.dispose()


TOOLKIT_STYLE = """BROKER SCHEMA com.acme.orders

DECLARE AuditTable EXTERNAL CHARACTER 'audit';
DECLARE MaxLines EXTERNAL INTEGER 100;

CREATE COMPUTE MODULE OrderAudit_Compute
	CREATE FUNCTION Main() RETURNS BOOLEAN
	BEGIN
		CALL CopyMessageHeaders();
		-- CALL CopyEntireMessage();
		DECLARE inRef REFERENCE TO InputRoot.XMLNSC.Order;
		DECLARE line REFERENCE TO inRef.Item[1];
		DECLARE outRef REFERENCE TO OutputRoot;
		CREATE LASTCHILD OF OutputRoot AS outRef DOMAIN('XMLNSC') NAME 'XMLNSC';
		CREATE LASTCHILD OF outRef AS outRef NAME 'Audit';
		DECLARE n INTEGER 0;
		WHILE LASTMOVE(line) AND n < MaxLines DO
			SET n = n + 1;
			PASSTHRU('INSERT INTO ' || AuditTable || ' (order_id, line_no, sku) VALUES (?, ?, ?)'
				VALUES (inRef.(XMLNSC.Attribute)id, n, line.Sku));
			CREATE LASTCHILD OF outRef NAME 'Line' VALUE line.Sku;
			MOVE line NEXTSIBLING REPEAT TYPE NAME;
		END WHILE;
		SET outRef.Count = THE(SELECT ITEM COUNT(*) FROM Database.{AuditTable} AS A WHERE A.order_id = inRef.(XMLNSC.Attribute)id);
		RETURN TRUE;
	END;

	CREATE PROCEDURE CopyMessageHeaders() BEGIN
		DECLARE I INTEGER 1;
		DECLARE J INTEGER;
		SET J = CARDINALITY(InputRoot.*[]);
		WHILE I < J DO
			SET OutputRoot.*[I] = InputRoot.*[I];
			SET I = I + 1;
		END WHILE;
	END;

	CREATE PROCEDURE CopyEntireMessage() BEGIN
		SET OutputRoot = InputRoot;
	END;
END MODULE;
"""


@pytest.mark.timeout(120)
def test_toolkit_style_module_checks_and_runs(engine: sa.Engine) -> None:
    from esql.compiler import check_sources

    table = f"esql_audit_{uuid.uuid4().hex[:10]}"
    source = TOOLKIT_STYLE.replace("\n", "\r\n")  # toolkit files are often CRLF
    diagnostics, _generator = check_sources({"OrderAudit.esql": source})
    assert diagnostics == []
    with engine.begin() as conn:
        conn.execute(
            sa.text(f"CREATE TABLE {table} (order_id VARCHAR(20), line_no INTEGER, sku VARCHAR(20))")
        )
    try:
        program = compile_program(source, "OrderAudit.esql")
        body = b'<Order id="A-1"><Item><Sku>S1</Sku></Item><Item><Sku>S2</Sku></Item><Item><Sku>S3</Sku></Item></Order>'
        root = _message(body, SimpleNamespace(format="MQSTR   "))
        with engine.begin() as conn:
            ctx = ExecutionContext(
                input_root=root,
                data_source=EngineDataSource(conn),
                externals={"AuditTable": table, "MaxLines": "2"},
            )
            assert program.main_module().run(ctx) is True
        out = ctx.output_root
        assert [c.name for c in out.children()] == ["Properties", "MQMD", "XMLNSC"]
        assert out.child("MQMD").child("Format").value == "MQSTR   "
        assert _body(out) == b"<Audit><Line>S1</Line><Line>S2</Line><Count>2</Count></Audit>"
        with engine.connect() as conn:
            rows = conn.execute(
                sa.text(f"SELECT order_id, line_no, sku FROM {table} ORDER BY line_no")
            ).fetchall()
        assert [tuple(r) for r in rows] == [("A-1", 1, "S1"), ("A-1", 2, "S2")]
    finally:
        with engine.begin() as conn:
            conn.execute(sa.text(f"DROP TABLE IF EXISTS {table}"))


TRANSLATED = """
DECLARE orders EXTERNAL CHARACTER 'orders';
DECLARE customers EXTERNAL CHARACTER 'customers';
CREATE COMPUTE MODULE Translate_Compute
  CREATE FUNCTION Main() RETURNS BOOLEAN
  BEGIN
    INSERT INTO Database.{orders} VALUES (1, 'ACME', 10, NULL);
    INSERT INTO Database.{orders} VALUES (2, 'Beta', 1, 'rush');
    INSERT INTO Database.{orders} VALUES (3, 'acme', 150, NULL);
    INSERT INTO Database.{customers} (name, city) VALUES ('ACME', 'Paris');
    INSERT INTO Database.{customers} (name, city) VALUES ('Beta', 'Oslo');
    SET OutputRoot.XMLNSC.Out.Between[] = SELECT O.id FROM Database.{orders} AS O WHERE O.qty BETWEEN 2 AND 100;
    SET OutputRoot.XMLNSC.Out.NotBetween[] = SELECT O.id FROM Database.{orders} AS O WHERE O.qty NOT BETWEEN 2 AND 100;
    SET OutputRoot.XMLNSC.Out.Upper[] = SELECT O.id FROM Database.{orders} AS O WHERE UPPER(O.customer) = 'ACME';
    SET OutputRoot.XMLNSC.Out.Length[] = SELECT O.id FROM Database.{orders} AS O WHERE LENGTH(O.customer)=4 AND O.id > 1;
    SET OutputRoot.XMLNSC.Out.Fn[] = SELECT LOWER(O.customer) AS c, O.qty * 2 AS dbl, COALESCE(O.note, 'none') AS n
      FROM Database.{orders} AS O WHERE O.id = 1;
    SET OutputRoot.XMLNSC.Out.Max = THE(SELECT MAX(O.qty) FROM Database.{orders} AS O);
    SET OutputRoot.XMLNSC.Out.Join[] = SELECT O.id, C.city FROM Database.{orders} AS O, Database.{customers} AS C
      WHERE O.customer = C.name AND O.qty < 100;
    PASSTHRU('UPDATE ' || orders || ' SET note = ''why?'' WHERE id = ?', 1);
    SET OutputRoot.XMLNSC.Out.Note = THE(SELECT ITEM O.note FROM Database.{orders} AS O WHERE O.id = 1);
    RETURN TRUE;
  END;
END MODULE;
"""


@pytest.mark.timeout(120)
def test_scalar_functions_predicates_joins_and_insert_without_columns(engine: sa.Engine) -> None:
    suffix = uuid.uuid4().hex[:10]
    orders, customers = f"esql_o_{suffix}", f"esql_c_{suffix}"
    with engine.begin() as conn:
        conn.execute(
            sa.text(
                f"CREATE TABLE {orders} (id INTEGER PRIMARY KEY, customer VARCHAR(80), qty INTEGER, note VARCHAR(80))"
            )
        )
        conn.execute(sa.text(f"CREATE TABLE {customers} (name VARCHAR(80), city VARCHAR(80))"))
    try:
        program = compile_program(TRANSLATED, "translate.esql")
        with engine.begin() as conn:
            ctx = ExecutionContext(
                data_source=EngineDataSource(conn), externals={"orders": orders, "customers": customers}
            )
            assert program.main_module().run(ctx) is True
        assert _body(ctx.output_root).decode() == (
            "<Out><Between><id>1</id></Between><NotBetween><id>2</id></NotBetween><NotBetween><id>3</id></NotBetween>"
            "<Upper><id>1</id></Upper><Upper><id>3</id></Upper><Length><id>2</id></Length><Length><id>3</id></Length>"
            "<Fn><c>acme</c><dbl>20</dbl><n>none</n></Fn><Max>150</Max>"
            "<Join><id>1</id><city>Paris</city></Join><Join><id>2</id><city>Oslo</city></Join>"
            "<Note>why?</Note></Out>"
        )
    finally:
        with engine.begin() as conn:
            conn.execute(sa.text(f"DROP TABLE IF EXISTS {orders}"))
            conn.execute(sa.text(f"DROP TABLE IF EXISTS {customers}"))


def test_untranslatable_column_expression_is_a_positioned_error() -> None:
    from esql.compiler import check_sources

    source = (
        "SET OutputRoot.XMLNSC.A[] = SELECT O.id FROM Database.orders AS O WHERE TRANSLATE(O.customer, 'A', 'B') = 'BC';\n"
        "SET OutputRoot.XMLNSC.B[] = SELECT O.id FROM Database.orders AS O WHERE O.qty IS NAN;\n"
    )
    diagnostics, _ = check_sources({"untranslated.esql": source})
    assert [str(d) for d in diagnostics] == [
        "untranslated.esql:1:73: error: this function cannot be translated to SQL",
        "untranslated.esql:2:73: error: this IS test cannot be translated to SQL",
    ]


def test_passthru_question_mark_inside_literals_is_not_a_marker() -> None:
    from esql.database import _split_markers

    sql = "SELECT '?', \"a?\" FROM t -- why?\n WHERE x = ? /* ? */ AND y = 'it''s ?' AND z = ?"
    assert len(_split_markers(sql)) - 1 == 2


def test_sqlite_errors_map_to_sqlstates(tmp_path: Any) -> None:
    engine = sa.create_engine(f"sqlite:///{tmp_path / 'states.db'}")
    with engine.begin() as conn:
        conn.execute(sa.text("CREATE TABLE t (id INTEGER PRIMARY KEY)"))
    source = """
CREATE COMPUTE MODULE States_Compute
  CREATE FUNCTION Main() RETURNS BOOLEAN
  BEGIN
    BEGIN
      DECLARE CONTINUE HANDLER FOR SQLSTATE LIKE '%'
        CREATE LASTCHILD OF OutputRoot.XMLNSC.Out NAME 'State' VALUE SQLSTATE;
      INSERT INTO Database.t (id) VALUES (1);
      INSERT INTO Database.t (id) VALUES (1);
      INSERT INTO Database.nosuch (id) VALUES (1);
      INSERT INTO Database.t (nosuch) VALUES (1);
      PASSTHRU('SELEC nonsense');
    END;
    RETURN TRUE;
  END;
END MODULE;
"""
    program = compile_program(source, "states.esql")
    with engine.begin() as conn:
        ctx = ExecutionContext(data_source=EngineDataSource(conn))
        assert program.main_module().run(ctx) is True
    states = [e.value for e in ctx.output_root.child("XMLNSC").child("Out").children()]
    assert states == ["23000", "42S02", "42S22", "42000"]
    engine.dispose()


def test_commit_and_rollback_statements(tmp_path: Any) -> None:
    engine = sa.create_engine(f"sqlite:///{tmp_path / 'commit.db'}")
    with engine.begin() as conn:
        conn.execute(sa.text("CREATE TABLE t (id INTEGER)"))
    source = """
INSERT INTO Database.t (id) VALUES (1);
COMMIT Database.DSN1;
INSERT INTO Database.t (id) VALUES (2);
ROLLBACK Database.DSN1;
INSERT INTO Database.t (id) VALUES (3);
COMMIT;
"""
    program = compile_program(source, "commit.esql")
    conn = engine.connect()
    try:
        program.main_module().run(ExecutionContext(data_source=EngineDataSource(conn)))
        with engine.connect() as other:
            assert [r[0] for r in other.execute(sa.text("SELECT id FROM t ORDER BY id"))] == [1, 3]
    finally:
        conn.close()
        engine.dispose()


PROCEDURES = """
CREATE PROCEDURE Adjust(IN a INTEGER, INOUT b INTEGER, OUT c CHARACTER)
  LANGUAGE DATABASE EXTERNAL NAME "{proc}";
CREATE PROCEDURE Squares(IN upto INTEGER) LANGUAGE DATABASE DYNAMIC RESULT SETS 1 EXTERNAL NAME "{squares}";
CREATE COMPUTE MODULE Procs_Compute
  CREATE FUNCTION Main() RETURNS BOOLEAN
  BEGIN
    DECLARE b INTEGER 5;
    DECLARE c CHARACTER;
    CALL Adjust(2, b, c) IN Database.{{schemaName}};
    SET OutputRoot.XMLNSC.Out.B = b;
    SET OutputRoot.XMLNSC.Out.C = c;
    CALL Adjust(10, b, c) EXTERNAL SCHEMA schemaName;
    SET OutputRoot.XMLNSC.Out.B2 = b;
    CALL Squares(3, OutputRoot.XMLNSC.Out.Sq[]) IN Database.{{schemaName}};
    RETURN TRUE;
  END;
END MODULE;
"""


def test_database_procedures_out_parameters_schema_and_result_sets_check() -> None:
    from esql.compiler import check_sources

    source = PROCEDURES.format(proc="p", squares="s")
    diagnostics, _ = check_sources({"procs.esql": "DECLARE schemaName CHARACTER 'x';\n" + source})
    assert [str(d) for d in diagnostics] == []  # a normal schema-level variable is allowed (ESQL variables)
    diagnostics, _ = check_sources({"procs.esql": "DECLARE schemaName EXTERNAL CHARACTER 'x';\n" + source})
    assert diagnostics == []
    wrong = 'CREATE PROCEDURE S(IN n INTEGER) LANGUAGE DATABASE DYNAMIC RESULT SETS 1 EXTERNAL NAME "s";\nCALL S(1);\n'
    diagnostics, _ = check_sources({"arity.esql": wrong})
    assert [str(d) for d in diagnostics] == [
        "arity.esql:2:1: error: routine 'S' takes 2 argument(s) (with 1 result set(s)) but 1 were given"
    ]


def test_database_procedure_on_sqlite_fails_at_the_call_with_the_reason(tmp_path: Any) -> None:
    program = compile_program(
        "DECLARE schemaName EXTERNAL CHARACTER 'main';\n" + PROCEDURES.format(proc="p", squares="s"),
        "procs.esql",
    )
    engine = sa.create_engine(f"sqlite:///{tmp_path / 'procs.db'}")
    with engine.begin() as conn:
        with pytest.raises(EsqlRuntimeError) as info:
            program.main_module().run(ExecutionContext(data_source=EngineDataSource(conn)))
    engine.dispose()
    assert str(info.value) == (
        "line 11, column 5: CALL main.p: the sqlite data source has no OUT parameters; "
        "LANGUAGE DATABASE procedures need PostgreSQL"
    )


@pytest.mark.timeout(120)
def test_database_procedures_on_postgresql(postgres_url: str) -> None:
    engine = sa.create_engine(postgres_url)
    schema = f"esql_s_{uuid.uuid4().hex[:8]}"
    with engine.begin() as conn:
        conn.execute(sa.text(f"CREATE SCHEMA {schema}"))
        conn.execute(
            sa.text(
                f"CREATE PROCEDURE {schema}.adjust(a INTEGER, INOUT b INTEGER, OUT c VARCHAR) "
                "LANGUAGE plpgsql AS $$ BEGIN b := b + a; c := 'added ' || a; END $$"
            )
        )
        conn.execute(
            sa.text(
                f"CREATE FUNCTION {schema}.squares(upto INTEGER) RETURNS TABLE(n INTEGER, sq INTEGER) "
                "LANGUAGE SQL AS $$ SELECT g, g * g FROM generate_series(1, upto) AS g $$"
            )
        )
    try:
        program = compile_program(
            "DECLARE schemaName EXTERNAL CHARACTER 'public';\n"
            + PROCEDURES.format(proc="adjust", squares="squares"),
            "procs.esql",
        )
        with engine.begin() as conn:
            ctx = ExecutionContext(data_source=EngineDataSource(conn), externals={"schemaName": schema})
            assert program.main_module().run(ctx) is True
        assert _body(ctx.output_root).decode() == (
            "<Out><B>7</B><C>added 2</C><B2>17</B2>"
            "<Sq><n>1</n><sq>1</sq></Sq><Sq><n>2</n><sq>4</sq></Sq><Sq><n>3</n><sq>9</sq></Sq></Out>"
        )
    finally:
        with engine.begin() as conn:
            conn.execute(sa.text(f"DROP SCHEMA IF EXISTS {schema} CASCADE"))
        engine.dispose()


ALL_COLUMNS = """
DECLARE tableName EXTERNAL CHARACTER 'orders';
CREATE COMPUTE MODULE AllColumns_Compute
  CREATE FUNCTION Main() RETURNS BOOLEAN
  BEGIN
    INSERT INTO Database.{tableName} (id, customer, qty) VALUES (1, 'ACME', 5);
    INSERT INTO Database.{tableName} (id, customer, qty) VALUES (2, 'Small', 1);
    SET OutputRoot.XMLNSC.Out.Star[] = SELECT * FROM Database.{tableName} AS O WHERE O.qty > 3;
    SET OutputRoot.XMLNSC.Out.Qualified[] = SELECT O.* FROM Database.{tableName} AS O WHERE O.qty > 3;
    RETURN TRUE;
  END;
END MODULE;
"""


@pytest.mark.timeout(120)
def test_select_correlation_star_is_every_column(engine: sa.Engine, table: str) -> None:
    """SELECT function, as public flows (IBM's own samples among them) use it: A.* over the one
    table A selects all its columns, as * does."""
    ctx = run(engine, ALL_COLUMNS, table)
    out = ctx.output_root.child("XMLNSC").child("Out")
    star = [(c.name, c.value) for c in out.child("Star").children()]
    qualified = [(c.name, c.value) for c in out.child("Qualified").children()]
    assert qualified == star
    assert [name.lower() for name, _v in star] == ["id", "customer", "qty"]


STRING_FUNCTIONS = """
DECLARE tableName EXTERNAL CHARACTER 'orders';
CREATE COMPUTE MODULE Strings_Compute
  CREATE FUNCTION Main() RETURNS BOOLEAN
  BEGIN
    DECLARE floor INTEGER 10;
    SET OutputRoot.XMLNSC.Out.Cast[] = SELECT O.id FROM Database.{tableName} AS O
      WHERE CAST(RIGHT(O.customer, 2) AS INTEGER) > floor;
    SET OutputRoot.XMLNSC.Out.Left[] = SELECT O.id FROM Database.{tableName} AS O
      WHERE LEFT(O.customer, 2) = LEFT(InputRoot.XMLNSC.Order.Customer, 2);
    SET OutputRoot.XMLNSC.Out.Long[] = SELECT O.id FROM Database.{tableName} AS O WHERE RIGHT(O.customer, 10) = 'CD31';
    SET OutputRoot.XMLNSC.Out.None[] = SELECT O.id FROM Database.{tableName} AS O WHERE RIGHT(O.customer, 0) = '';
    SET OutputRoot.XMLNSC.Out.Bytes[] = SELECT O.id FROM Database.{tableName} AS O
      WHERE RIGHT(CAST(O.code AS BLOB), 2) = X'bcb1';
    SET OutputRoot.XMLNSC.Out.Mixed[] = SELECT O.id FROM Database.{tableName} AS O
      WHERE UCASE(TRIM(O.customer)) = 'AB07' AND COALESCE(O.qty, 0) < LENGTH(O.customer)
        AND SUBSTRING(O.customer FROM 3 FOR 1) = '0' AND CURRENT_TIMESTAMP > TIMESTAMP '2000-01-01 00:00:00';
    SET OutputRoot.XMLNSC.Out.Trim[] = SELECT O.id FROM Database.{tableName} AS O
      WHERE TRIM(LEADING 'A' FROM O.customer) = 'B07' OR TRIM(TRAILING '1' FROM O.customer) = 'CD3'
        OR TRIM(BOTH '0' FROM O.customer) = 'AB12' AND TRIM(O.customer FROM O.customer) = '';
    SET OutputRoot.XMLNSC.Out.Position[] = SELECT O.id FROM Database.{tableName} AS O
      WHERE POSITION('B' IN O.customer) = 2 AND POSITION('7' IN O.customer) = 0;
    RETURN TRUE;
  END;
END MODULE;
"""


@pytest.mark.timeout(120)
def test_string_functions_and_casts_over_columns_translate(engine: sa.Engine) -> None:
    """SELECT function against a database (IBM's ot4i CDC sample: WHERE CAST(RIGHT(CAST(col AS BLOB),
    8) AS INT) > key): the ESQL functions over columns go to the database as SQL, so RIGHT, LEFT,
    CAST … AS BLOB, TRIM(… FROM …) and POSITION run there, RIGHT on characters and bytes alike; what mentions no column (the program's
    variables, message fields, CURRENT_TIMESTAMP) is evaluated by ESQL and bound."""
    name = f"esql_s_{uuid.uuid4().hex[:10]}"
    blob = "BYTEA" if engine.dialect.name == "postgresql" else "BLOB"
    with engine.begin() as conn:
        conn.execute(
            sa.text(
                f"CREATE TABLE {name} (id INTEGER PRIMARY KEY, customer VARCHAR(80), qty INTEGER, code {blob})"
            )
        )
        conn.execute(
            sa.text(f"INSERT INTO {name} (id, customer, qty, code) VALUES (:i, :c, :q, :b)"),
            [
                {"i": 1, "c": "AB07", "q": None, "b": bytes.fromhex("00002344bcb1")},
                {"i": 2, "c": "AB12", "q": 9, "b": bytes.fromhex("0000bcb2")},
                {"i": 3, "c": "CD31", "q": 1, "b": bytes.fromhex("bcb1")},
            ],
        )
    try:
        program = compile_program(STRING_FUNCTIONS, "strings.esql")
        with engine.begin() as conn:
            ctx = ExecutionContext(
                input_root=_message(b"<Order><Customer>ABC</Customer></Order>"),
                data_source=EngineDataSource(conn),
                externals={"tableName": name},
            )
            assert program.main_module().run(ctx) is True
        out = ctx.output_root.child("XMLNSC").child("Out")
        ids = {
            group: sorted(int(c.child("id").value) for c in out.children() if c.name == group)
            for group in ("Cast", "Left", "Long", "None", "Bytes", "Mixed", "Trim", "Position")
        }
        assert ids == {
            "Cast": [2, 3],
            "Left": [1, 2],
            "Long": [3],
            "None": [1, 2, 3],
            "Bytes": [1, 3],
            "Mixed": [1],
            "Trim": [1, 2, 3],
            "Position": [2],
        }
    finally:
        with engine.begin() as conn:
            conn.execute(sa.text(f"DROP TABLE IF EXISTS {name}"))


EVENT_ROWS = """
DECLARE tableName EXTERNAL CHARACTER 'orders';
CREATE COMPUTE MODULE Events_Compute
  CREATE FUNCTION Main() RETURNS BOOLEAN
  BEGIN
    INSERT INTO Database.{tableName} (id, customer, qty) VALUES (1, 'ACME', 5);
    INSERT INTO Database.{tableName} (id, customer, qty) VALUES (2, 'Small', 1);
    SET OutputRoot.XMLNSC.Out.Event[] = SELECT E.* AS Usr, E.id AS Key FROM Database.{tableName} AS E
      WHERE E.qty > 3;
    BEGIN
      DECLARE EXIT HANDLER FOR SQLSTATE '42S02' SET OutputRoot.XMLNSC.Out.Missing = SQLSTATE;
      SET OutputRoot.XMLNSC.Out.Nothing[] = SELECT M.* AS Usr, M.id AS Key FROM Database.esql_no_such_table AS M;
    END;
    RETURN TRUE;
  END;
END MODULE;
"""


@pytest.mark.timeout(120)
def test_correlation_star_as_one_named_item(engine: sa.Engine, table: str) -> None:
    """SELECT function: IBM's DatabaseInput template (and ot4i's CDC sample) select their events as
    SELECT E.* AS Usr, E.key AS Key: every column of E becomes a field of Usr, beside the other items."""
    ctx = run(engine, EVENT_ROWS, table)
    out = ctx.output_root.child("XMLNSC").child("Out")
    events = [c for c in out.children() if c.name == "Event"]
    assert len(events) == 1
    usr = [(c.name.lower(), c.value) for c in events[0].child("Usr").children()]
    assert usr == [("id", 1), ("customer", "ACME"), ("qty", 5)]
    assert events[0].child("Key").value == 1
    assert out.child("Missing").value == "42S02"


INSERT_SHAPES = """
DECLARE tableName EXTERNAL CHARACTER 'orders';
CREATE COMPUTE MODULE Shapes_Compute
  CREATE FUNCTION Main() RETURNS BOOLEAN
  BEGIN
    DECLARE i INTEGER 1;
    WHILE i <= 3 DO
      INSERT INTO Database.{tableName} (id, customer, qty) VALUES (i, 'c' || CAST(i AS CHARACTER), i * 10);
      SET i = i + 1;
    END WHILE;
    INSERT INTO Database.{tableName} (id, customer, qty) VALUES (4, NULL, '40');
    INSERT INTO Database.{tableName} (qty, id) VALUES (5, 5);
    INSERT INTO Database.{tableName} (id, customer, qty) VALUES (6, InputRoot.XMLNSC.Order.Customer, 2);
    RETURN TRUE;
  END;
END MODULE;
"""


def test_repeated_inserts_reuse_one_statement_per_shape_and_bind_every_value(
    engine: sa.Engine, table: str
) -> None:
    from esql import database

    run(engine, INSERT_SHAPES, table)
    with engine.connect() as conn:
        rows = conn.execute(sa.text(f"SELECT id, customer, qty FROM {table} ORDER BY id")).fetchall()
    assert [tuple(r) for r in rows] == [
        (1, "c1", 10),
        (2, "c2", 20),
        (3, "c3", 30),
        (4, None, 40),
        (5, None, 5),
        (6, "ACME", 2),
    ]
    # one statement per (schema, table, columns), whatever the values
    shapes = [key for key in database._INSERTS if key[1] == table]
    assert sorted(shapes) == [(None, table, ("id", "customer", "qty")), (None, table, ("qty", "id"))]


def test_insert_statements_of_other_tables_stay_apart(engine: sa.Engine, table: str) -> None:
    other = f"{table}_b"
    with engine.begin() as conn:
        conn.execute(
            sa.text(f"CREATE TABLE {other} (id INTEGER PRIMARY KEY, customer VARCHAR(80), qty INTEGER)")
        )
    try:
        run(engine, INSERT_SHAPES, table)
        run(engine, INSERT_SHAPES, other)
        with engine.connect() as conn:
            for name in (table, other):
                count = conn.execute(sa.text(f"SELECT COUNT(*) FROM {name}")).scalar_one()
                assert count == 6
    finally:
        with engine.begin() as conn:
            conn.execute(sa.text(f"DROP TABLE IF EXISTS {other}"))
