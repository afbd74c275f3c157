"""Control tasks an execution group receives on its queue ``eg.<broker>.<group>``."""

from __future__ import annotations

from typing import Any

from flowbroker.worker.app import celery_app
from flowbroker.worker.group import state

app = celery_app()


@app.task(name="flowbroker.eg.deploy")
def deploy(deployment_id: int, define_queues: bool = False) -> str:
    """Compile and start (or replace) the deployment's flow; first define its missing queues if asked."""
    group = state(wait=120)
    with group.control:
        return group.deploy(int(deployment_id), define_queues=bool(define_queues))


@app.task(name="flowbroker.eg.undeploy")
def undeploy(deployment_id: int) -> str:
    """Stop the deployment's flow and forget it."""
    group = state(wait=120)
    with group.control:
        return group.undeploy(int(deployment_id))


@app.task(name="flowbroker.eg.start")
def start(deployment_id: int) -> str:
    """Start the deployment's flow threads."""
    group = state(wait=120)
    with group.control:
        return group.start_flow(int(deployment_id), True)


@app.task(name="flowbroker.eg.stop")
def stop(deployment_id: int) -> str:
    """Stop the deployment's flow threads after their current message."""
    group = state(wait=120)
    with group.control:
        return group.start_flow(int(deployment_id), False)


@app.task(name="flowbroker.eg.trace")
def trace(deployment_id: int, level: str, mode: str) -> str:
    """Switch the flow's user trace level (none, normal, debug) and mode (safe, fast)."""
    return state(wait=120).trace(int(deployment_id), str(level), str(mode))


@app.task(name="flowbroker.eg.record")
def record(deployment_id: int, recording: dict[str, Any]) -> str:
    """Start the flow exerciser's recording of the flow (bounds as the configuration manager set them)."""
    return state(wait=120).record(int(deployment_id), dict(recording))


@app.task(name="flowbroker.eg.record_stop")
def record_stop(deployment_id: int, recording_id: str) -> str:
    """End a running recording of the flow."""
    return state(wait=120).record_stop(int(deployment_id), str(recording_id))


@app.task(name="flowbroker.eg.follow_group")
def follow_group() -> str:
    """Stop or start the group's flows as its desired state in the repository says (group stop/start)."""
    return state(wait=120).follow_group()


@app.task(name="flowbroker.eg.debug")
def debug(deployment_id: int) -> str:
    """Set the deployment's step-debugger breakpoints from the repository (0: all, the group's flag changed)."""
    return state(wait=120).debug(int(deployment_id))


@app.task(name="flowbroker.eg.debug_command")
def debug_command(deployment_id: int, pause_id: str, action: str, edits: list[dict[str, object]]) -> str:
    """Edit a paused message and/or resume, step or abort its flow thread."""
    return state(wait=120).debug_command(int(deployment_id), str(pause_id), str(action), list(edits or []))
