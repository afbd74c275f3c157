"""The HTTP JSON service example (examples/flows/http_customer_lookup.json) answers from its data source."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import sqlalchemy as sa
from flowbroker.qm.harness import QueueManagerProcess
from flowbroker.runtime.connection import QueueConnection
from flowbroker.runtime.datasources import DataSources
from flowbroker.runtime.engine import ExecutionGroupRuntime

pytestmark = pytest.mark.timeout(60)
EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "flows" / "http_customer_lookup.json"
ROWS = [(7, "Ada Lovelace", "London", "gold"), (8, "Grace Hopper", "Arlington", "silver")]


@pytest.fixture
def service(qm_process: QueueManagerProcess, tmp_path: Path) -> Iterator[str]:
    """The example deployed on a group whose data source CUSTDB is a fresh SQLite file; its base URL."""
    url = f"sqlite:///{tmp_path / 'custdb.sqlite'}"
    engine = sa.create_engine(url)
    with engine.begin() as conn:
        conn.execute(
            sa.text(
                "CREATE TABLE CUSTOMERS (ID INTEGER PRIMARY KEY, NAME VARCHAR(40), CITY VARCHAR(40), TIER VARCHAR(8))"
            )
        )
        for row in ROWS:
            conn.execute(
                sa.text("INSERT INTO CUSTOMERS VALUES (:i, :n, :c, :t)"), dict(zip("inct", row, strict=True))
            )
    engine.dispose()

    def connect() -> QueueConnection:
        return QueueConnection.open(qm_process.url, data_dir=str(qm_process.data_dir))

    sources = DataSources({"CUSTDB": url})
    runtime = ExecutionGroupRuntime(connect, data_sources=sources, trace_dir=tmp_path / "trace")
    try:
        runtime.deploy(json.loads(EXAMPLE.read_text()))
        host, port = runtime.http.address
        yield f"http://{host}:{port}/customers/lookup"
    finally:
        runtime.shutdown(timeout=10)


def test_a_known_customer_is_answered_with_its_row(service: str) -> None:
    response = httpx.post(service, json={"id": 7}, timeout=10)
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("application/json")
    assert response.json() == {"id": 7, "name": "Ada Lovelace", "city": "London", "tier": "gold"}
    other = httpx.post(service, json={"id": "8"}, timeout=10)
    assert other.status_code == 200 and other.json()["name"] == "Grace Hopper"


def test_an_unknown_customer_is_404_and_a_request_without_an_id_is_422(service: str) -> None:
    missing = httpx.post(service, json={"id": 99}, timeout=10)
    assert missing.status_code == 404
    assert missing.json() == {"error": "no customer 99"}
    for body in ({}, {"id": "7; DROP TABLE CUSTOMERS"}, {"id": -1}):
        refused = httpx.post(service, json=body, timeout=10)
        assert refused.status_code == 422, body
        assert "numeric id" in refused.json()["error"]
    # the refused requests changed nothing: the row is still there
    assert httpx.post(service, json={"id": 7}, timeout=10).json()["city"] == "London"


def test_a_body_that_is_not_json_is_400_with_the_parser_error_and_the_service_goes_on(service: str) -> None:
    response = httpx.post(
        service, content=b'{"id": 7,', headers={"Content-Type": "application/json"}, timeout=10
    )
    assert response.status_code == 400
    assert response.text.startswith("400 Bad Request: ") and "JSON" in response.text
    assert "Traceback" not in response.text
    assert httpx.get(service, timeout=10).status_code == 405
    assert httpx.post(service, json={"id": 8}, timeout=10).json()["tier"] == "silver"
