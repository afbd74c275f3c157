"""Property-based run over /api/openapi.json against a real queue manager: whatever the input, no 5xx.

The queue routes reach a queue manager process started for the test, so generated input goes
past validation into the queue manager. Only while that queue manager is deliberately stopped
may a queue route answer 503, and then with the ``queue_manager_unavailable`` error body.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import schemathesis
from flowbroker.qm.harness import QueueManagerProcess
from flowbroker.repository import db
from flowbroker.services import users
from hypothesis import HealthCheck, given, settings

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
