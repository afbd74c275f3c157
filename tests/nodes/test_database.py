"""Database: an ESQL DATABASE module against SQLite and PostgreSQL; commits with the flow or at once."""

from __future__ import annotations

import time
import uuid
from pathlib import Path

import pytest
import sqlalchemy as sa
from flowbroker.runtime.compiler import FlowCompileError
from flowbroker.runtime.harness import FlowHarness, flow
from flowbroker_nodes.base import Unwinding

INSERT = """CREATE DATABASE MODULE Store
  CREATE FUNCTION Main() RETURNS BOOLEAN
  BEGIN
    INSERT INTO Database.{TableName} (id, name) VALUES (CAST(Root.XMLNSC.o.id AS INTEGER), Root.XMLNSC.o.name);
    RETURN TRUE;
  END;
  DECLARE TableName EXTERNAL CHARACTER 'orders';
END MODULE;"""


def _doc(table: str, then_throw: bool = False, coordinated: bool = False) -> dict:
    nodes = {
        "in": ("MQInput", {"queueName": "UNUSED", "messageDomain": "XMLNSC"}),
        "db": ("Database", {"esql": INSERT, "dataSource": "shop", "externals": {"TableName": table}}),
    }
    wires = ["in.out -> db"]
    if then_throw:
        nodes["boom"] = ("Throw", {})
        wires.append("db.out -> boom")
    return flow(nodes, wires, coordinatedTransaction=coordinated)


def _run(url: str, table: str) -> None:
    engine = sa.create_engine(url)
    with engine.begin() as conn:
        conn.execute(sa.text(f"CREATE TABLE {table} (id INTEGER PRIMARY KEY, name VARCHAR(40))"))
    try:
        h = FlowHarness(_doc(table), data_sources={"shop": url})
        h.inject("in", b"<o><id>1</id><name>pen</name></o>", domain="XMLNSC")
        assert len(h.seen("db", "out")) == 1
        # coordinated: the insert is rolled back with the message
        h2 = FlowHarness(_doc(table, then_throw=True, coordinated=True), data_sources={"shop": url})
        with pytest.raises(Unwinding):
            h2.inject("in", b"<o><id>2</id><name>ink</name></o>", domain="XMLNSC", transactional=True)
        # not coordinated: the insert commits when the node finishes, whatever happens next
        h3 = FlowHarness(_doc(table, then_throw=True), data_sources={"shop": url})
        with pytest.raises(Unwinding):
            h3.inject("in", b"<o><id>3</id><name>cap</name></o>", domain="XMLNSC", transactional=True)
        # a duplicate key is a database exception in the ExceptionList
        with pytest.raises(Unwinding) as info:
            h.inject("in", b"<o><id>1</id><name>dup</name></o>", domain="XMLNSC")
        assert info.value.exception_list.first_child.name == "DatabaseException" or "Database" in str(
            info.value
        )
        for harness in (h, h2, h3):
            harness.close()
        with engine.connect() as conn:
            rows = conn.execute(sa.text(f"SELECT id, name FROM {table} ORDER BY id")).all()
        assert [tuple(r) for r in rows] == [(1, "pen"), (3, "cap")]
    finally:
        with engine.begin() as conn:
            conn.execute(sa.text(f"DROP TABLE IF EXISTS {table}"))
        engine.dispose()


def test_sqlite(tmp_path: Path) -> None:
    _run(f"sqlite:///{tmp_path / 'shop.db'}", "orders")


@pytest.mark.postgres
def test_postgresql(postgres_url: str) -> None:
    _run(postgres_url, f"orders_{uuid.uuid4().hex[:8]}")


def test_unknown_data_source_is_a_runtime_error_naming_it() -> None:
    h = FlowHarness(_doc("orders"), data_sources={})
    with pytest.raises(Unwinding) as info:
        h.inject("in", b"<o><id>1</id><name>x</name></o>", domain="XMLNSC")
    assert "unknown data source 'shop'" in str(info.value)


def test_data_source_is_required() -> None:
    doc = flow(
        {"in": ("MQInput", {"queueName": "UNUSED"}), "db": ("Database", {"esql": INSERT})}, ["in.out -> db"]
    )
    with pytest.raises(FlowCompileError) as info:
        FlowHarness(doc)
    assert any(p.node == "db" and p.property == "dataSource" for p in info.value.problems)


def _uncommitted_flow(src: str, dst: str, table: str, *, fail_after: bool = False) -> dict:
    """transactionMode no with coordinatedTransaction: the get is final, the insert commits with the flow."""
    nodes = {
        "in": ("MQInput", {"queueName": src, "messageDomain": "XMLNSC", "transactionMode": "no"}),
        "db": ("Database", {"esql": INSERT, "dataSource": "shop", "externals": {"TableName": table}}),
        "out": ("MQOutput", {"queueName": dst}),
    }
    wires = ["in.out -> db", "db.out -> out"]
    if fail_after:
        nodes["boom"] = ("Throw", {"messageText": "after the insert"})
        wires.append("out.out -> boom")
    return flow(nodes, wires, name=f"NoUow{table}", coordinatedTransaction=True)


def _rows(engine: sa.Engine, table: str) -> list[tuple]:
    with engine.connect() as conn:
        return [tuple(r) for r in conn.execute(sa.text(f"SELECT id, name FROM {table} ORDER BY id"))]


def _coordinated_without_a_unit_of_work(url: str, table: str, qm, queues, group) -> None:
    from flowbroker.runtime.harness import get_all

    engine = sa.create_engine(url)
    with engine.begin() as conn:
        conn.execute(sa.text(f"CREATE TABLE {table} (id INTEGER PRIMARY KEY, name VARCHAR(40))"))
    try:
        group.data_sources.urls["shop"] = url
        src, dst = queues("IN"), queues("OUT")
        group.deploy(_uncommitted_flow(src, dst, table))
        qm.put(src, b"<o><id>1</id><name>pen</name></o>")
        assert len(get_all(qm, dst, 1)) == 1
        # committed at the end of the invocation, while the flow keeps running
        deadline = time.monotonic() + 10
        while _rows(engine, table) == [] and time.monotonic() < deadline:
            time.sleep(0.05)
        assert _rows(engine, table) == [(1, "pen")]
        # a failing invocation rolls its coordinated insert back; the message goes to the DLQ
        qm.purge("SYSTEM.DEAD.LETTER.QUEUE")
        group.deploy(_uncommitted_flow(src, dst, table, fail_after=True))
        qm.put(src, b"<o><id>2</id><name>ink</name></o>")
        assert [m.body for m in get_all(qm, "SYSTEM.DEAD.LETTER.QUEUE", 1)] == [
            b"<o><id>2</id><name>ink</name></o>"
        ]
        group.undeploy(f"NoUow{table}")
        assert _rows(engine, table) == [(1, "pen")]
    finally:
        group.undeploy(f"NoUow{table}")
        group.data_sources.dispose()
        with engine.begin() as conn:
            conn.execute(sa.text(f"DROP TABLE IF EXISTS {table}"))
        engine.dispose()


def test_coordinated_database_work_commits_at_the_end_of_a_non_transactional_flow(
    tmp_path: Path, qm, queues, group
) -> None:
    _coordinated_without_a_unit_of_work(f"sqlite:///{tmp_path / 'shop.db'}", "orders", qm, queues, group)


@pytest.mark.postgres
def test_coordinated_database_work_commits_without_a_unit_of_work_on_postgresql(
    postgres_url: str, qm, queues, group
) -> None:
    _coordinated_without_a_unit_of_work(postgres_url, f"orders_{uuid.uuid4().hex[:8]}", qm, queues, group)
