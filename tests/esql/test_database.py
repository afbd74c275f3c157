"""Database statements against real SQLite and the local PostgreSQL: bound parameters, dynamic names, errors."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest
import sqlalchemy as sa

from esql import xmlio
from esql.compiler import compile_program
from esql.database import DatabaseError
from esql.runtime import EsqlRuntimeError, ExecutionContext

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
            input_root=xmlio.read_message(b"<Order><Customer>ACME</Customer></Order>", "XMLNSC"),
            data_source=EngineDataSource(conn),
            externals={"tableName": table},
        )
        assert program.main_module().run(ctx) is True
    return ctx


@pytest.mark.timeout(120)
def test_insert_update_select_delete_passthru(engine: sa.Engine, table: str) -> None:
    ctx = run(engine, PROGRAM, table)
    out = xmlio.write_message(ctx.output_root).decode()
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
    if engine.dialect.name == "postgresql":
        assert state == "23505"
    else:
        assert isinstance(state, str) and state
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
        root = xmlio.read_message(body, "XMLNSC")
        root.add("MQMD").add("Format", "MQSTR   ")
        root.append(root.child("XMLNSC").detach())  # the body stays the last child, after the headers
        with engine.begin() as conn:
            ctx = ExecutionContext(
                input_root=root,
                data_source=EngineDataSource(conn),
                externals={"AuditTable": table, "MaxLines": "2"},
            )
            assert program.main_module().run(ctx) is True
        out = ctx.output_root
        assert [c.name for c in out.children()] == ["Properties", "MQMD", "XMLNSC"]
        assert out.child("MQMD").to_data() == {"Format": "MQSTR   "}
        assert xmlio.write_message(out) == b"<Audit><Line>S1</Line><Line>S2</Line><Count>2</Count></Audit>"
        with engine.connect() as conn:
            rows = conn.execute(
                sa.text(f"SELECT order_id, line_no, sku FROM {table} ORDER BY line_no")
            ).fetchall()
        assert [tuple(r) for r in rows] == [("A-1", 1, "S1"), ("A-1", 2, "S2")]
    finally:
        with engine.begin() as conn:
            conn.execute(sa.text(f"DROP TABLE IF EXISTS {table}"))
