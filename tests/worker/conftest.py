"""Worker-test fixtures: a data directory with a repository, a queue manager, the API and worker processes."""

from __future__ import annotations

import time
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from fastapi.testclient import TestClient

from flowbroker.api.app import create_app
from flowbroker.commands.platform import prepare_repository
from flowbroker.qm.harness import QueueManagerProcess
from flowbroker.settings import Settings

PASSWORD = "correct-horse-battery"


class Platform:
    """The configuration manager (in-process), its queue manager and data directory."""

    def __init__(self, data: Path, client: TestClient, qm: QueueManagerProcess, token: str) -> None:
        self.data = data
        self.client = client
        self.qm = qm
        self.headers = {"Authorization": f"Bearer {token}"}

    def request(self, method: str, path: str, **kwargs: Any) -> Any:
        return self.client.request(method, path, headers=self.headers, **kwargs)

    def deploy(self, document: dict[str, Any], **body: Any) -> dict[str, Any]:
        response = self.request("POST", "/api/deployments", json={"document": document, **body})
        assert response.status_code == 202, response.text
        return response.json()  # type: ignore[no-any-return]

    def wait_status(self, deployment_id: int, wanted: set[str], timeout: float = 60.0) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        body: dict[str, Any] = {}
        while time.monotonic() < deadline:
            body = self.request("GET", f"/api/deployments/{deployment_id}").json()
            if body["status"] in wanted:
                return body
            time.sleep(0.1)
        raise AssertionError(f"deployment {deployment_id} stayed {body.get('status')}: {body}")


@pytest.fixture(scope="module")
def platform(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Platform]:
    data = tmp_path_factory.mktemp("eg")
    settings = Settings(data=data, admin_password=PASSWORD)
    prepare_repository(settings)
    app = create_app(settings)
    with QueueManagerProcess(data, fsync=False) as qm, TestClient(app) as client:
        token = client.post("/api/auth/login", json={"username": "admin", "password": PASSWORD}).json()[
            "accessToken"
        ]
        yield Platform(data, client, qm, token)
    app.state.engine.dispose()
