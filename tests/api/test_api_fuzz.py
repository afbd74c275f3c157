"""Property-based run over /api/openapi.json against a real queue manager: whatever the input, no 5xx.

The queue routes reach a queue manager process started for the test, so generated input goes
past validation into the queue manager. Only while that queue manager is deliberately stopped
may a queue route answer 503, and then with the ``queue_manager_unavailable`` error body.
"""

from __future__ import annotations

import re
import socket
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import schemathesis
from flowbroker.api.app import create_app
from flowbroker.qm.harness import QueueManagerProcess
from flowbroker.repository import db
from flowbroker.services import users
from flowbroker.settings import Settings
from hypothesis import HealthCheck, given, settings
from hypothesis.errors import Unsatisfiable

EXAMPLES_PER_OPERATION = 40
#: The statistics stream never ends by design; tests/worker reads it from a real execution group.
ENDLESS = {("GET", "/api/stats/stream")}
KNOWN_QUEUE = "FUZZ.KNOWN"


@schemathesis.serializer("application/zip")
def _zip_body(_context: Any, value: Any) -> bytes:
    # Archive uploads are raw bytes; arbitrary bytes are exactly the bad input to try.
    if isinstance(value, bytes):
        return value
    return str(value).encode("utf-8", "surrogatepass")


def _json(response: Any) -> dict[str, Any]:
    try:
        body = response.json()
    except ValueError:
        return {}
    return body if isinstance(body, dict) else {}


def _exercise(
    operation: Any,
    examples: int,
    check: Callable[[str, Any], None],
    token: Callable[[], str],
    known_queue: Callable[[], None] | None = None,
) -> int:
    calls = 0

    @given(case=operation.as_strategy())
    @settings(
        max_examples=examples,
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    def run(case: Any) -> None:
        nonlocal calls
        calls += 1
        if known_queue is not None and case.path_parameters and "queue" in case.path_parameters and calls % 2:
            # half the cases name a queue that exists, so they reach the queue manager's own checks
            known_queue()
            case.path_parameters["queue"] = KNOWN_QUEUE
        response = case.call(headers={"Authorization": f"Bearer {token()}"})
        check(f"{case.method} {case.formatted_path}", response)

    run()
    return calls


@pytest.mark.timeout(240)
def test_no_server_errors(sqlite_api: Any) -> None:
    schema = schemathesis.openapi.from_asgi("/api/openapi.json", sqlite_api.app)
    operations = [
        op
        for op in (result.ok() for result in schema.get_all_operations())
        if (op.method.upper(), op.path) not in ENDLESS
    ]
    assert len(operations) > 40
    failures: list[str] = []
    tokens: list[str] = []

    def token() -> str:
        # One admin token while it works; a fuzzed password change or logout may revoke it.
        with db.session_scope(sqlite_api.app.state.session_factory) as session:
            admin = users.by_name(session, "admin")
            assert admin is not None
            if tokens:
                try:
                    users.authenticate(session, tokens[-1])
                    return tokens[-1]
                except Exception:
                    pass
            tokens.append(users.issue_token(session, admin, "fuzz"))
            return tokens[-1]

    reached: list[str] = []

    def no_server_error(label: str, response: Any) -> None:
        if label.split(" ", 1)[1].startswith("/api/queues") and response.status_code < 300:
            reached.append(label)
        if response.status_code >= 500:
            failures.append(f"{label}: {response.status_code} {response.text[:300]}")
        elif response.status_code >= 400 and "json" in str(response.headers.get("content-type", "")):
            if set(_json(response)) != {"code", "message", "detail"}:
                failures.append(f"{label}: error body {response.text[:200]}")

    data = sqlite_api.app.state.settings.data
    calls = 0
    with QueueManagerProcess(data, fsync=False) as qm, qm.client() as client:

        def known_queue() -> None:
            # (re)defined with default attributes: a fuzzed delete or alter may have changed it
            client.define_queue(KNOWN_QUEUE, replace=True)

        for operation in operations:
            calls += _exercise(operation, EXAMPLES_PER_OPERATION, no_server_error, token, known_queue)
    assert calls >= len(operations) * 5
    assert failures == []
    # the queue manager answered: generated queues were defined and messages put, browsed, got
    for prefix in ("POST /api/queues", "POST /api/queues/", "GET /api/queues/"):
        assert any(label.startswith(prefix) for label in reached), (prefix, reached[:20])

    # The queue manager is gone now: the queue routes say so with 503, and nothing else fails.
    unavailable: list[str] = []

    def only_unavailable(label: str, response: Any) -> None:
        if response.status_code >= 500:
            if response.status_code != 503 or _json(response).get("code") != "queue_manager_unavailable":
                failures.append(f"{label}: {response.status_code} {response.text[:300]}")
            else:
                unavailable.append(label)

    for operation in (op for op in operations if op.path.startswith("/api/queues")):
        _exercise(operation, 5, only_unavailable, token)
    assert failures == []
    assert any(label.startswith("GET /api/queues") for label in unavailable)


# -- conformance: the live API answers only what its OpenAPI document declares ----------------------

CONFORMANCE_EXAMPLES = 4
#: Methods a client may send; the ones a path does not declare must be answered 405.
METHODS = ("get", "put", "post", "delete", "patch")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class LiveApi:
    """The configuration manager served by uvicorn on a free port, with the designer mounted."""

    def __init__(self, app: Any, url: str) -> None:
        self.app = app
        self.url = url
        self._tokens: list[str] = []
        self._viewer: str | None = None

    def token(self) -> str:
        # One admin token while it works; a fuzzed password change or logout may revoke it.
        with db.session_scope(self.app.state.session_factory) as session:
            admin = users.by_name(session, "admin")
            assert admin is not None
            if self._tokens:
                try:
                    users.authenticate(session, self._tokens[-1])
                    return self._tokens[-1]
                except Exception:
                    pass
            self._tokens.append(users.issue_token(session, admin, "conformance"))
            return self._tokens[-1]

    def viewer_token(self) -> str:
        with db.session_scope(self.app.state.session_factory) as session:
            viewer = users.by_name(session, "conformance-viewer")
            if viewer is None:
                viewer = users.create(
                    session, "admin", "conformance-viewer", "conformance-Viewer-7", "viewer"
                )
            return users.issue_token(session, viewer, "conformance")


@pytest.fixture
def live_api(tmp_path: Path) -> Iterator[LiveApi]:
    import uvicorn

    dist = tmp_path / "dist"
    dist.mkdir()
    (dist / "index.html").write_text("<!doctype html><title>designer</title>")
    data = tmp_path / "data"
    app = create_app(
        Settings(data=data, database_url=f"sqlite:///{tmp_path / 'config.db'}", frontend_dist=str(dist))
    )
    with db.session_scope(app.state.session_factory) as session:
        users.ensure_admin(session, "conformance-Admin-7")
    port = _free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "uvicorn did not start"
        time.sleep(0.05)
    try:
        with QueueManagerProcess(data, fsync=False):
            yield LiveApi(app, f"http://127.0.0.1:{port}")
    finally:
        server.should_exit = True
        thread.join(15)
        app.state.engine.dispose()


def _conform(
    operation: Any,
    mode: Any,
    examples: int,
    token: Callable[[], str | None],
    url: str,
    differences: dict[str, str],
) -> int:
    """Call ``operation`` with generated input; each check that fails is recorded once per status."""
    from schemathesis.checks import not_a_server_error
    from schemathesis.core.failures import FailureGroup
    from schemathesis.specs.openapi.checks import response_schema_conformance, status_code_conformance

    checks = [not_a_server_error, status_code_conformance, response_schema_conformance]
    calls = 0

    @given(case=operation.as_strategy(generation_mode=mode))
    @settings(
        max_examples=examples,
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    def run(case: Any) -> None:
        nonlocal calls
        calls += 1
        bearer = token()
        headers = {"Authorization": f"Bearer {bearer}"} if bearer else {}
        response = case.call(base_url=url, headers=headers, timeout=30)
        try:
            case.validate_response(response, checks=checks, headers=headers)
        except FailureGroup as group:
            for failure in group.exceptions:
                key = f"{case.operation.label}: {failure.title} {response.status_code}"
                differences.setdefault(key, str(failure.message)[:300])

    run()
    return calls


@pytest.mark.timeout(180)
def test_live_api_answers_only_the_status_codes_and_bodies_it_documents(live_api: LiveApi) -> None:
    """Positive and negative input on every operation: no 5xx, every status and body as declared."""
    from schemathesis.generation import GenerationMode

    schema = schemathesis.openapi.from_url(f"{live_api.url}/api/openapi.json")
    operations = [
        op
        for op in (result.ok() for result in schema.get_all_operations())
        if (op.method.upper(), op.path) not in ENDLESS
    ]
    assert len(operations) > 40
    differences: dict[str, str] = {}
    calls = 0

    # (who calls, what input, how many examples): an administrator with valid and invalid input
    # finds the 400/404/409/422 answers, a viewer the 403s, a caller without a token the 401s
    passes: list[tuple[Callable[[], str | None], GenerationMode, int]] = [
        (live_api.token, GenerationMode.POSITIVE, CONFORMANCE_EXAMPLES),
        (live_api.token, GenerationMode.NEGATIVE, CONFORMANCE_EXAMPLES),
        (live_api.viewer_token, GenerationMode.POSITIVE, 1),
        (lambda: None, GenerationMode.POSITIVE, 1),
    ]
    for operation in operations:
        for token, mode, examples in passes:
            try:
                calls += _conform(operation, mode, examples, token, live_api.url, differences)
            except Unsatisfiable:
                # an operation without parameters or body has no invalid input to generate
                assert mode == GenerationMode.NEGATIVE, operation.label
    assert calls >= len(operations) * 4
    assert differences == {}, "\n".join(f"{k}\n    {v}" for k, v in sorted(differences.items()))


def _routes(routes: Any) -> Iterator[Any]:
    """Every route of the app, through the routers it includes."""
    for route in routes:
        if hasattr(route, "original_router"):
            yield from _routes(route.original_router.routes)
        else:
            yield route


@pytest.mark.timeout(60)
def test_a_method_a_path_does_not_declare_is_405_with_allow(live_api: LiveApi) -> None:
    paths = httpx.get(f"{live_api.url}/api/openapi.json", timeout=10).json()["paths"]
    headers = {"Authorization": f"Bearer {live_api.token()}"}
    wrong: list[str] = []
    with httpx.Client(base_url=live_api.url, headers=headers, timeout=10) as client:
        # the app's own route paths: a queue name may hold "/", so `{queue:path}` spans segments
        # (DELETE /api/queues/1/purge deletes the queue named "1/purge", it is no wrong method)
        mounted: dict[str, set[str]] = {}
        for route in _routes(live_api.app.routes):
            if getattr(route, "path", "").startswith("/api/") and getattr(route, "methods", None):
                mounted.setdefault(route.path, set()).update(m.lower() for m in route.methods)
        templates = [
            (re.compile("^" + re.sub(r"\{[^}:]+\}", "[^/]+", re.sub(r"\{[^}]+:path\}", ".+", p)) + "$"), ops)
            for p, ops in mounted.items()
        ]
        for path, operations in paths.items():
            declared = {m for m in operations if m in METHODS}
            concrete = re.sub(r"\{[^}]+\}", "1", path)
            # /api/flows/validate is also /api/flows/{flow_id}: what any template declares is routed
            routed = {m for pattern, ops in templates if pattern.match(concrete) for m in ops}
            for method in (m for m in METHODS if m not in routed):
                response = client.request(method.upper(), concrete)
                allow = {m.strip().lower() for m in response.headers.get("allow", "").split(",") if m.strip()}
                if (
                    response.status_code != 405
                    or not declared <= allow
                    or _json(response).get("code") != "method_not_allowed"
                ):
                    wrong.append(f"{method.upper()} {concrete}: {response.status_code} allow={sorted(allow)}")
    assert wrong == [], "\n".join(wrong)
