"""The seed 004 example flows run on the inputs the benchmark sends them, and produce what they should."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa
from flowbroker.qm.harness import QueueManagerProcess
from flowbroker.qm.protocol import Message, MessageDescriptor
from flowbroker.runtime import assembly
from flowbroker.runtime.harness import FlowHarness, get_all
from flowbroker_bench.flow import CASES, EXAMPLES

pytestmark = pytest.mark.timeout(120)


@pytest.fixture(scope="module")
def qm_process(tmp_path_factory: pytest.TempPathFactory) -> Iterator[QueueManagerProcess]:
    with QueueManagerProcess(tmp_path_factory.mktemp("qm"), fsync=False) as qm:
        with qm.client() as client:
            for case in CASES:
                client.define_queue(case.in_queue, replace=True)
                client.define_queue(case.out_queue, replace=True)
            client.subscribe("seed004/prices", "PUBLISH.SUB", name="example-subscriber")
        yield qm


def _run(
    qm_process: QueueManagerProcess, key: str, data_sources: dict[str, str] | None = None
) -> list[Message]:
    case = next(c for c in CASES if c.key == key)
    document = json.loads((EXAMPLES / case.flow_file).read_text())
    harness = FlowHarness(document, connect=qm_process.client, data_sources=data_sources)
    body, md_fields = case.body(case.size, 42)
    root = harness.root_for(body, document["nodes"][0]["properties"].get("messageDomain", "BLOB"), md_fields)
    harness.inject("in", root, transactional=True)
    harness.close()
    with qm_process.client() as client:
        return get_all(client, case.out_queue, 1, wait=5)


def test_passthrough_keeps_the_bytes(qm_process: QueueManagerProcess) -> None:
    (out,) = _run(qm_process, "passthrough")
    assert out.body == b"b" * 1024


def test_simple_compute_changes_one_field(qm_process: QueueManagerProcess) -> None:
    (out,) = _run(qm_process, "simple-compute")
    assert b"<Processed>yes</Processed>" in out.body and b"<Message><Field>42:vvv" in out.body


@pytest.mark.parametrize("key", ["complex-compute", "five-complex", "very-complex"])
def test_appendix_c_computes_build_the_processing_path(qm_process: QueueManagerProcess, key: str) -> None:
    (out,) = _run(qm_process, key)
    text = out.body.decode()
    assert "<ProcessingPath><Component><Name>Component1</Name>" in text
    assert '<Transport Type="A"><Queue>QUEUE.1</Queue></Transport>' in text


def test_filter_passes_the_tagged_message(qm_process: QueueManagerProcess) -> None:
    (out,) = _run(qm_process, "filter")
    assert out.md.format.strip() == "MQHRF2"
    body, _ = next(c for c in CASES if c.key == "filter").body(1024, 42)
    assert out.body.endswith(body[-100:]) and b"<Route>yes</Route>" in out.body


def test_filter_routes_by_the_rfh2_tag(qm_process: QueueManagerProcess) -> None:
    from flowbroker_bench.flow import _rfh2

    document = json.loads((EXAMPLES / "filter_rfh2.json").read_text())
    harness = FlowHarness(document, connect=qm_process.client)
    routes = {"true": harness.seen("filter", "true"), "false": harness.seen("filter", "false")}
    routes["unknown"] = harness.seen("filter", "unknown")
    for route in ("yes", "no", None):
        folders = {"usr": {"Route": route}} if route else {"usr": {"Region": "south"}}
        body = _rfh2(folders, f"route {route}".encode())
        harness.inject("in", harness.root_for(body, "BLOB", {"format": "MQHRF2"}), transactional=True)
    harness.close()
    taken = {name: [assembly.to_message(a.root)[1][-8:] for a in seen] for name, seen in routes.items()}
    assert taken == {"true": [b"oute yes"], "false": [b"route no"], "unknown": [b"ute None"]}
    with qm_process.client() as client:
        (out,) = get_all(client, "FILTER.OUT", 1, wait=5)
        assert out.body.endswith(b"route yes") and client.get("FILTER.OUT") is None


def test_publication_reaches_the_subscriber(qm_process: QueueManagerProcess) -> None:
    (out,) = _run(qm_process, "publication")
    assert out.body.endswith(b"p" * 100)


@pytest.fixture(params=["sqlite", "postgresql"])
def perf_db(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A data source URL holding an empty PERF_ROWS table (PostgreSQL: in a private schema)."""
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path / 'perf.db'}"
        schema = ""
    else:
        import uuid

        base = request.getfixturevalue("postgres_url")
        schema = f"fb_test_{uuid.uuid4().hex[:10]}"
        with sa.create_engine(base).begin() as conn:
            conn.execute(sa.text(f'CREATE SCHEMA "{schema}"'))
        url = f"{base}?options=-csearch_path%3D{schema}"
    engine = sa.create_engine(url)
    # quoted upper-case names, as ESQL's database statements quote them
    table = sa.Table(
        "PERF_ROWS", sa.MetaData(), sa.Column("ID", sa.Integer), sa.Column("PAYLOAD", sa.String(64))
    )
    table.create(engine)
    engine.dispose()
    yield url
    if schema:
        with sa.create_engine(request.getfixturevalue("postgres_url")).begin() as conn:
            conn.execute(sa.text(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE'))


def test_database_inserts_and_deletes_its_row(qm_process: QueueManagerProcess, perf_db: str) -> None:
    engine = sa.create_engine(perf_db)
    with engine.begin() as conn:
        # a row of another message: the flow deletes its own row only, found by its integer id
        conn.execute(sa.text('INSERT INTO "PERF_ROWS" ("ID", "PAYLOAD") VALUES (7, \'other\')'))
    (out,) = _run(qm_process, "database", {"PERFDB": perf_db})
    assert b"<Id>42</Id>" in out.body
    with engine.connect() as conn:
        rows = conn.execute(sa.text('SELECT "ID", "PAYLOAD" FROM "PERF_ROWS"')).all()
    engine.dispose()
    assert [tuple(r) for r in rows] == [(7, "other")]


def test_unparsed_body_is_written_as_its_original_bytes() -> None:
    root = assembly.build_root(Message(MessageDescriptor(), {}, b"<a>untouched</a>"), {"domain": "XML"})
    assert assembly.to_message(root)[1] == b"<a>untouched</a>"
