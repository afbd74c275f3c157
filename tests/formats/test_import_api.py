"""POST /api/message-sets/import stores the imported type as a new version of the set."""

from __future__ import annotations

import json
import secrets
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest
from api_process import running_api

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from fastapi.testclient import TestClient

from flowbroker.api.app import create_app
from flowbroker.repository import db
from flowbroker.services import users
from flowbroker.settings import Settings

PASSWORD = "correct-horse-battery"


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[TestClient, dict[str, str]]]:
    data: Path = tmp_path_factory.mktemp("msgset-api")
    app = create_app(Settings(data=data, database_url=f"sqlite:///{data / 'config.db'}"))  # type: ignore[call-arg]
    with db.session_scope(app.state.session_factory) as session:
        users.ensure_admin(session, PASSWORD)
    test_client = TestClient(app)
    token = test_client.post("/api/auth/login", json={"username": "admin", "password": PASSWORD}).json()
    yield test_client, {"Authorization": f"Bearer {token['accessToken']}"}
    test_client.close()
    app.state.engine.dispose()


COPYBOOK = (
    "       01  PAYMENT.\n           05  AMOUNT  PIC S9(7)V99 COMP-3.\n           05  REF  PIC X(10).\n"
)


def test_import_creates_then_versions_the_set(client: tuple[TestClient, dict[str, str]]) -> None:
    http, auth = client
    name = "PAY" + secrets.token_hex(3)
    first = http.post(
        "/api/message-sets/import", headers=auth, json={"set": name, "kind": "copybook", "source": COPYBOOK}
    )
    assert first.status_code == 201, first.text
    body = first.json()
    assert body["type"] == "PAYMENT" and body["version"] == 1
    header = "struct Ack { int32_t code; char text[16]; };"
    second = http.post(
        "/api/message-sets/import", headers=auth, json={"set": name, "kind": "c-header", "source": header}
    )
    assert second.status_code == 201 and second.json()["version"] == 2
    stored = http.get(f"/api/message-sets/{body['id']}", headers=auth).json()["document"]
    assert set(stored["types"]) == {"PAYMENT", "Ack"} and stored["messages"] == ["PAYMENT", "Ack"]


def test_import_reports_warnings_with_line_and_column(client: tuple[TestClient, dict[str, str]]) -> None:
    """Items with no level-01 record are wrapped in one named after the file, and the answer says so."""
    http, auth = client
    done = http.post(
        "/api/message-sets/import",
        headers=auth,
        json={
            "set": "WRAP",
            "kind": "copybook",
            "source": "           05  A  PIC X(2).\n",
            "filename": "PART.cpy",
        },
    )
    assert done.status_code == 201, done.text
    body = done.json()
    assert body["type"] == "PART"
    [warning] = body["warnings"]
    assert (warning["line"], warning["column"]) == (1, 12) and "wrapped in record 'PART'" in warning[
        "message"
    ]
    plain = http.post(
        "/api/message-sets/import",
        headers=auth,
        json={"set": "PLAIN", "kind": "copybook", "source": COPYBOOK},
    )
    assert plain.json()["warnings"] == []


def test_import_errors_are_422_with_line_and_column(client: tuple[TestClient, dict[str, str]]) -> None:
    http, auth = client
    bad = http.post(
        "/api/message-sets/import",
        headers=auth,
        json={
            "set": "BAD",
            "kind": "copybook",
            "source": "       01  R.\n           05  A PIC X(2) NOPE.\n",
            "filename": "r.cpy",
        },
    )
    assert bad.status_code == 422
    detail = bad.json()
    assert "r.cpy:2:" in str(detail) and '"line": 2' not in str(detail)  # JSON body, not a traceback
    problems = detail.get("detail") or detail.get("error", {}).get("detail")
    assert problems[0]["line"] == 2 and problems[0]["pointer"] == "/source"
    unauth = http.post("/api/message-sets/import", json={"set": "X", "kind": "copybook", "source": COPYBOOK})
    assert unauth.status_code == 401
    wrong_kind = http.post(
        "/api/message-sets/import", headers=auth, json={"set": "X", "kind": "pl1", "source": "x"}
    )
    assert wrong_kind.status_code in (400, 422)


@pytest.fixture(scope="module")
def api_process(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    """The configuration manager as a real process (`flowbroker api`): its URL and an admin token."""
    with running_api(tmp_path_factory.mktemp("msgset-cli"), PASSWORD) as api:
        yield api


@pytest.mark.timeout(180)
def test_msgset_import_save_stores_the_type_through_the_api(
    api_process: tuple[str, str], tmp_path: Path
) -> None:
    import os
    import subprocess
    import sys

    import httpx

    url, token = api_process
    path = tmp_path / "payment.cpy"
    path.write_text(COPYBOOK)
    name = "SAVED" + secrets.token_hex(3)
    command = [sys.executable, "-m", "flowbroker.cli", "msgset", "import", str(path), "--copybook"]
    command += ["--set", name, "--save", "--api", url]
    env = {**os.environ, "FLOWBROKER_TOKEN": token, "FLOWBROKER_CONFIG_DIR": str(tmp_path / "config")}
    done = subprocess.run(command, capture_output=True, text=True, timeout=60, env=env)
    assert done.returncode == 0, done.stderr
    assert done.stderr.strip() == f"saved message type 'PAYMENT' in message set '{name}' version 1"
    auth = {"Authorization": f"Bearer {token}"}
    sets = httpx.get(url + "/api/message-sets", headers=auth).json()
    (saved,) = [s for s in sets if s["name"] == name]
    document = httpx.get(url + f"/api/message-sets/{saved['id']}", headers=auth).json()["document"]
    assert document["types"]["PAYMENT"] == json.loads(done.stdout)["types"]["PAYMENT"]
    # without a token the API refuses, in one line
    anonymous = {k: v for k, v in env.items() if k != "FLOWBROKER_TOKEN"}
    refused = subprocess.run(command, capture_output=True, text=True, timeout=60, env=anonymous)
    assert refused.returncode == 1 and "Traceback" not in refused.stderr
    assert refused.stderr.startswith("flowbroker: error: POST /api/message-sets/import: 401:")
    assert refused.stderr.strip().endswith("(run `flowbroker login`)")
