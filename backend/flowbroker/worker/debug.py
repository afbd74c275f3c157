"""The step debugger in the execution group's worker: breakpoints from the repository, pauses reported to it.

A paused flow thread is written to the ``debug_pauses`` table (with its message view and the
variables in scope), rewritten after each edit and deleted when the thread goes on, so the
configuration manager on any host sees what the group holds. Breakpoints are set only while the
group is a development group; otherwise every flow runs without any.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from typing import Any

from flowbroker.runtime.debugger import Breakpoints, DebugError, Pause, runnable

log = logging.getLogger("flowbroker.worker")


def _when(seconds: float) -> datetime:
    return datetime.fromtimestamp(seconds, UTC)


class RepositoryPauses:
    """A pause listener writing one deployment's paused threads to the repository."""

    def __init__(self, session_factory: Any, deployment_id: int) -> None:
        self.session_factory = session_factory
        self.deployment_id = deployment_id

    def _write(self, pause: Pause) -> None:
        from flowbroker.repository import db
        from flowbroker.services import debugger

        with db.session_scope(self.session_factory) as session:
            debugger.record_pause(
                session, self.deployment_id, pause, _when(pause.paused_at), _when(pause.resumes_at)
            )

    def paused(self, pause: Pause) -> None:
        try:
            self._write(pause)
        except Exception as exc:  # the thread still pauses, and resumes by its timeout
            log.warning("cannot report the pause of %s: %s", pause.thread, exc)

    def changed(self, pause: Pause) -> None:
        self.paused(pause)

    def resumed(self, pause: Pause) -> None:
        from flowbroker.repository import db
        from flowbroker.services import debugger

        try:
            with db.session_scope(self.session_factory) as session:
                debugger.drop_pause(session, pause.id)
        except Exception as exc:
            log.warning("cannot report the resumption of %s: %s", pause.thread, exc)


def forget_pauses(session_factory: Any, deployment_ids: list[int]) -> None:
    """Delete pauses a previous process of the group left (its threads are gone with it)."""
    from flowbroker.repository import db
    from flowbroker.services import debugger

    if not deployment_ids:
        return
    with db.session_scope(session_factory) as session:
        debugger.forget_pauses(session, deployment_ids)


def apply_breakpoints(state: Any, deployment_id: int) -> str:
    """Set the deployment's breakpoints in its running flow (none unless the group is for development)."""
    from flowbroker.repository import db
    from flowbroker.services import brokers, deploy

    name = state.by_deployment.get(deployment_id)
    if name is None or state.runtime is None or name not in state.runtime.flows:
        return "missing"
    with db.session_scope(state.session_factory) as session:
        wanted = deploy.breakpoints(session, deployment_id)
        development = brokers.is_development(session, state.group_id)
    requested = Breakpoints.from_json(wanted) if development else Breakpoints()
    flow = state.runtime.flows[name]
    if not requested and flow.debugger is None:
        return "no breakpoints"
    # one the compiled flow cannot stop at (a connection into a subflow node, which the compiler
    # expanded) is left out; the others still stop
    breakpoints, dropped = runnable(requested, flow.compiled.nodes)
    for reason in dropped:
        log.warning("deployment %s: breakpoint left out: %s", deployment_id, reason)
    try:
        state.runtime.set_breakpoints(
            name, breakpoints, RepositoryPauses(state.session_factory, deployment_id)
        )
    except DebugError as exc:
        log.warning("deployment %s: breakpoints not set: %s", deployment_id, exc)
        return str(exc)
    if requested:
        _armed(state.session_factory, deployment_id, requested)
    return "breakpoints set" if breakpoints else "breakpoints cleared"


def _armed(session_factory: Any, deployment_id: int, breakpoints: Breakpoints) -> None:
    """Note on the deployment that its flow now stops at these breakpoints (unless others were asked for since)."""
    from flowbroker.repository import db
    from flowbroker.services import deploy

    with db.session_scope(session_factory) as session:
        deploy.mark_armed(session, deployment_id, breakpoints)


def command(state: Any, deployment_id: int, pause_id: str, action: str, edits: list[dict[str, Any]]) -> str:
    name = state.by_deployment.get(deployment_id)
    flow = state.runtime.flows.get(name) if name and state.runtime is not None else None
    if flow is None or flow.debugger is None:
        return "missing"
    try:
        flow.debugger.command(pause_id, action, edits)
    except DebugError as exc:
        log.warning("deployment %s: debugger command refused: %s", deployment_id, exc)
        return str(exc)
    return action or "edited"
