"""A flow's test cases in the repository: adding one to the flow (a new version), running them.

The cases are the flow document's ``tests`` list, so each version of a flow keeps the cases it
was saved with, and ``flowbroker test`` runs the same cases from an exported document.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from sqlalchemy.orm import Session

from flowbroker.services import flows, validation
from flowbroker.services.errors import Conflict, Invalid, ServiceError, problem

#: One run at a time per configuration manager: each starts a queue manager and a group.
_RUNNING = threading.Lock()


class Busy(ServiceError):
    status_code = 409
    code = "tests_running"


class EngineUnavailable(ServiceError):
    status_code = 503
    code = "test_engine_unavailable"


def add_case(
    session: Session,
    actor: str,
    flow_id: int,
    case: dict[str, Any],
    *,
    lookup: validation.SpecLookup | None = None,
) -> flows.FlowState:
    """Append ``case`` to the flow's tests and save that as its next version."""
    state = flows.load(session, flow_id)
    document = dict(state.document)
    existing = list(document.get("tests") or [])
    if any(isinstance(c, dict) and c.get("name") == case.get("name") for c in existing):
        raise Conflict(
            f"flow {state.name!r} already has a test case named {case.get('name')!r}",
            {"pointer": "/name"},
            code="duplicate_name",
        )
    document["tests"] = [*existing, case]
    document["version"] = state.current_version
    return flows.save_state(
        session, actor, flow_id, document, comment=f"test case {case.get('name')!r} added", lookup=lookup
    )


def run(
    document: dict[str, Any], names: list[str] | None = None, scratch: Path | None = None
) -> dict[str, Any]:
    """Run the document's test cases (those named, or all) on a private engine; the results."""
    import time

    from flowbroker.flowtests import cases
    from flowbroker.flowtests.engine import TestEngine

    try:
        suite = cases.parse(document.get("tests") or [], document, "tests")
    except cases.CaseError as exc:
        raise Invalid(
            exc.message, [problem("/tests" + exc.pointer.removeprefix("/cases"), exc.message)]
        ) from None
    if names:
        unknown = sorted(set(names) - {c.name for c in suite.cases})
        if unknown:
            raise Invalid(
                f"no test case named {unknown[0]!r}", [problem("/cases", f"unknown case {unknown[0]!r}")]
            )
        suite = cases.TestSuite(suite.source, tuple(c for c in suite.cases if c.name in names))
    if not suite.cases:
        raise Invalid("the flow has no test cases", [problem("/tests", "no test cases")])
    if not _RUNNING.acquire(blocking=False):
        raise Busy("flow tests are already running; try again when they are done")
    started = time.monotonic()
    try:
        with TestEngine(scratch=scratch) as engine:
            results = engine.run_suite(document, suite)
    except RuntimeError as exc:
        raise EngineUnavailable(f"the test engine did not start: {exc}") from None
    finally:
        _RUNNING.release()
    return {
        "flow": document.get("name"),
        "version": document.get("version"),
        "passed": all(r.passed for r in results),
        "seconds": round(time.monotonic() - started, 3),
        "results": [r.to_json() for r in results],
    }
