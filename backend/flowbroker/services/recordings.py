"""The flow exerciser's recordings of deployed flows: start, stop, list, read, expire.

A recording holds copies of real messages, so every start, stop, read of a message and
deletion is audit-logged, and a recording is deleted ``FLOWBROKER_RECORDING_TTL_SECONDS`` after
it was requested (whenever recordings are next listed or read, and when a group stops one).
The execution group writes the files (:mod:`flowbroker.runtime.recorder`) below
``<data>/recordings/<broker>/<group>/<flow>/``; this side creates the request, sends the group
its control task, and reads what the group wrote.
"""

from __future__ import annotations

import json
import time
import uuid
from pathlib import Path
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from flowbroker.repository.models import Deployment
from flowbroker.runtime.recorder import ID_PATTERN, recordings_dir, write_json
from flowbroker.services import audit, deploy
from flowbroker.services.errors import Invalid, NotFound, problem
from flowbroker.settings import Settings

_SUFFIXES = (".json", ".jsonl", ".index.jsonl")
#: How long after its time is up a recording may still say it records before it is taken as lost.
_GRACE_SECONDS = 60.0


def directory(data: Path, deployment: Deployment) -> Path:
    return (
        recordings_dir(data, deployment.broker.name, deployment.group.name)
        / deployment.flow_version.flow.name
    )


def flow_deployments(session: Session, flow_id: int) -> list[Deployment]:
    """The flow's current deployments, one per execution group: where it can be recorded."""
    from flowbroker.repository.models import FlowVersion

    rows = session.scalars(
        select(Deployment)
        .join(FlowVersion, Deployment.flow_version_id == FlowVersion.id)
        .where(FlowVersion.flow_id == flow_id, Deployment.status.in_((*deploy.ACTIVE, "failed")))
        .order_by(Deployment.id.desc())
    ).all()
    seen: set[int] = set()
    current = []
    for row in rows:
        if row.group_id not in seen:
            seen.add(row.group_id)
            current.append(row)
    return current


def start(
    session: Session,
    actor: str,
    deployment_id: int,
    settings: Settings,
    *,
    max_messages: int,
    seconds: float,
) -> dict[str, Any]:
    """Ask the deployment's group to record the next ``max_messages`` messages or ``seconds``."""
    found = []
    if not 1 <= max_messages <= settings.recording_max_messages:
        found.append(problem("/maxMessages", f"must be between 1 and {settings.recording_max_messages}"))
    if not 0 < seconds <= settings.recording_max_seconds:
        found.append(
            problem("/seconds", f"must be more than 0 and at most {settings.recording_max_seconds:g}")
        )
    if found:
        raise Invalid(f"invalid recording: {found[0]['pointer']}: {found[0]['message']}", found)
    deployment = deploy.get(session, deployment_id)
    if deployment.status not in deploy.STARTED:
        raise Invalid(
            f"deployment {deployment_id} is {deployment.status}; only a running flow can be recorded",
            [problem("", "not running")],
        )
    where = directory(settings.data, deployment)
    expire(where, settings.recording_ttl_seconds)
    recording_id = uuid.uuid4().hex
    now = time.time()
    state = {
        "id": recording_id,
        "deployment": deployment.id,
        "flow": deployment.flow_version.flow.name,
        "version": deployment.flow_version.version,
        "status": "requested",
        "reason": "",
        "startedBy": actor,
        "requestedAt": now,
        "expiresAt": now + settings.recording_ttl_seconds,
        "maxMessages": max_messages,
        "seconds": seconds,
    }
    where.mkdir(parents=True, exist_ok=True)
    write_json(where / f"{recording_id}.json", state)
    limits = {
        "maxBytes": settings.recording_max_bytes,
        "maxFields": settings.recording_max_fields,
        "maxBodyBytes": settings.recording_max_body_bytes,
        "maxParseBytes": settings.recording_max_parse_bytes,
    }
    # the audit entry is also the request a replica that missed the control task replays
    audit.record(
        session,
        actor,
        "recording.start",
        f"deployment:{deployment.id}",
        {"recording": recording_id, "maxMessages": max_messages, "seconds": seconds, "limits": limits},
    )
    session.commit()
    request = {
        "id": recording_id,
        "flow": state["flow"],
        "maxMessages": max_messages,
        "seconds": seconds,
        **limits,
    }
    deploy.send_control(
        deployment.broker.name, deployment.group.name, "record", deployment.id, settings.data, request
    )
    return describe(where, recording_id)


def asked_to_record(session: Session, deployments: dict[int, str], now: float) -> dict[int, dict[str, Any]]:
    """The recording each deployment (id → flow name) should be running at ``now``, as its
    control task asked: the newest ``recording.start`` audit entry whose time is not up and that
    no ``recording.stop`` or ``recording.delete`` followed, with ``seconds`` the time it has left.
    What a replica that was away when the recording was requested replays."""
    from flowbroker.repository.models import AuditEntry

    if not deployments:
        return {}
    targets = {f"deployment:{i}": i for i in deployments}
    rows = session.execute(
        select(AuditEntry.target, AuditEntry.action, AuditEntry.at, AuditEntry.detail)
        .where(
            AuditEntry.target.in_(list(targets)),
            AuditEntry.action.in_(("recording.start", "recording.stop", "recording.delete")),
        )
        .order_by(AuditEntry.id)
    ).all()
    found: dict[int, dict[str, Any]] = {}
    for target, action, at, detail in rows:  # oldest first
        deployment_id, detail = targets[target], detail or {}
        recording_id = str(detail.get("recording", ""))
        if action != "recording.start":
            if found.get(deployment_id, {}).get("id") == recording_id:
                del found[deployment_id]
            continue
        limits = detail.get("limits")
        if not ID_PATTERN.match(recording_id) or not isinstance(limits, dict):
            continue
        left = at.timestamp() + float(detail.get("seconds", 0)) - now
        if left <= 0:
            found.pop(deployment_id, None)  # a newer recording ends the older one (it is over too)
            continue
        found[deployment_id] = {
            "id": recording_id,
            "flow": deployments[deployment_id],
            "maxMessages": int(detail.get("maxMessages", 1)),
            "seconds": left,
            **{key: int(limits[key]) for key in ("maxBytes", "maxFields", "maxBodyBytes", "maxParseBytes")},
        }
    return found


def stop(
    session: Session, actor: str, deployment_id: int, recording_id: str, settings: Settings
) -> dict[str, Any]:
    """Ask the group to end a running recording; what it holds stays readable until it expires."""
    deployment = deploy.get(session, deployment_id)
    where = directory(settings.data, deployment)
    state = describe(where, recording_id)
    audit.record(session, actor, "recording.stop", f"deployment:{deployment.id}", {"recording": recording_id})
    session.commit()
    if state["status"] in ("requested", "recording"):
        deploy.send_control(
            deployment.broker.name,
            deployment.group.name,
            "record_stop",
            deployment.id,
            settings.data,
            recording_id,
        )
    return state


def delete(session: Session, actor: str, deployment_id: int, recording_id: str, settings: Settings) -> None:
    """Stop (if it runs) and delete a recording now rather than when it expires."""
    deployment = deploy.get(session, deployment_id)
    where = directory(settings.data, deployment)
    state = describe(where, recording_id)
    if state["status"] in ("requested", "recording"):
        deploy.send_control(
            deployment.broker.name,
            deployment.group.name,
            "record_stop",
            deployment.id,
            settings.data,
            recording_id,
        )
    _remove(where, recording_id)
    audit.record(
        session, actor, "recording.delete", f"deployment:{deployment.id}", {"recording": recording_id}
    )
    session.commit()


def listing(session: Session, deployment_id: int, settings: Settings) -> list[dict[str, Any]]:
    """The deployment's flow's recordings that have not expired, newest first."""
    deployment = deploy.get(session, deployment_id)
    where = directory(settings.data, deployment)
    expire(where, settings.recording_ttl_seconds)
    found = []
    for path in where.glob("*.json") if where.is_dir() else ():
        recording_id = path.name.removesuffix(".json")
        if ID_PATTERN.match(recording_id):
            # recordings of earlier deployments of the flow in this group stay listed until they expire
            found.append(describe(where, recording_id))
    return sorted(found, key=lambda s: -float(s.get("requestedAt") or 0))


def crossings(session: Session, deployment_id: int, recording_id: str, settings: Settings) -> dict[str, Any]:
    """The recording's state and what crossed which connection, without the messages themselves."""
    deployment = deploy.get(session, deployment_id)
    where = directory(settings.data, deployment)
    expire(where, settings.recording_ttl_seconds)
    state = describe(where, recording_id)
    return {**state, "crossingsList": [_summary(entry) for entry in _index(where, recording_id)]}


def crossing(
    session: Session, actor: str, deployment_id: int, recording_id: str, seq: int, settings: Settings
) -> dict[str, Any]:
    """One crossing with the message as it crossed (audit-logged: this is where the data is seen)."""
    deployment = deploy.get(session, deployment_id)
    where = directory(settings.data, deployment)
    expire(where, settings.recording_ttl_seconds)
    describe(where, recording_id)
    entry = next((e for e in _index(where, recording_id) if e.get("seq") == seq), None)
    if entry is None:
        raise NotFound(f"recording {recording_id} has no crossing {seq}")
    with open(where / f"{recording_id}.jsonl", "rb") as handle:
        handle.seek(int(entry["offset"]))
        line = handle.read(int(entry["length"]))
    audit.record(
        session,
        actor,
        "recording.read",
        f"deployment:{deployment.id}",
        {"recording": recording_id, "crossing": seq, "connection": entry.get("connection")},
    )
    session.commit()
    return dict(json.loads(line))


def describe(where: Path, recording_id: str) -> dict[str, Any]:
    """A recording's state as the configuration manager and then the group wrote it, with counts."""
    if not ID_PATTERN.match(recording_id):
        raise NotFound(f"no recording {recording_id!r}")
    try:
        state = json.loads((where / f"{recording_id}.json").read_text())
    except (OSError, ValueError):
        raise NotFound(f"no recording {recording_id} (it may have expired)") from None
    started = float(state.get("requestedAt") or 0)
    if (
        state.get("status") in ("requested", "recording")
        and time.time() > started + float(state.get("seconds") or 0) + _GRACE_SECONDS
    ):
        # the group would have ended it by now: it stopped (or never got the request) meanwhile
        state["status"] = "failed"
        state["reason"] = "the execution group stopped before the recording ended"
    if state.get("status") == "recording":
        # counts of a running recording come from its index, which grows as messages cross
        entries = _index(where, recording_id)
        state["crossings"] = len(entries)
        state["messages"] = len({e.get("message") for e in entries})
    state.setdefault("messages", 0)
    state.setdefault("crossings", 0)
    state.setdefault("bytes", 0)
    return dict(state)


def expire(where: Path, ttl: float) -> int:
    """Delete the recordings requested more than ``ttl`` seconds ago; how many were."""
    if not where.is_dir():
        return 0
    now = time.time()
    gone = 0
    for path in where.glob("*.json"):
        recording_id = path.name.removesuffix(".json")
        if not ID_PATTERN.match(recording_id):
            continue
        try:
            state = json.loads(path.read_text())
            requested = float(state.get("requestedAt") or state.get("recordingStartedAt") or 0)
        except (OSError, ValueError):
            requested = path.stat().st_mtime
        if requested + ttl < now:
            _remove(where, recording_id)
            gone += 1
    return gone


def _remove(where: Path, recording_id: str) -> None:
    for suffix in _SUFFIXES:
        (where / f"{recording_id}{suffix}").unlink(missing_ok=True)


def _index(where: Path, recording_id: str) -> list[dict[str, Any]]:
    try:
        text = (where / f"{recording_id}.index.jsonl").read_text()
    except OSError:
        return []
    entries = []
    for line in text.splitlines():
        try:
            entries.append(json.loads(line))
        except ValueError:
            break  # a line the group is still writing
    return entries


def _summary(entry: dict[str, Any]) -> dict[str, Any]:
    return {
        k: entry[k] for k in ("seq", "message", "connection", "from", "to", "time", "truncated") if k in entry
    }
