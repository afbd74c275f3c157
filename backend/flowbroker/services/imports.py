"""Imports of other products' projects into the repository (today: IBM ACE / IIB Toolkit workspaces).

The conversion is :mod:`flowbroker.importers.ace`; this service stores what it made: each flow
and each message set converted from an MRM set as a new one or a new version of the one of that
name (unchanged when identical), in one unit of work, and each local queue and durable subscription of the MQSC scripts on the queue manager
when the caller may define queues. Storing is all-or-nothing per flow: a flow whose document does not validate is
refused and reported, not stored, and so is every flow that uses it as a subflow (at any depth);
a failure while storing stores nothing of the request. A workspace that holds more files or
expands to more bytes than the settings allow is refused whole (413) before anything is read.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from flowbroker_nodes import registry
from sqlalchemy import select
from sqlalchemy.orm import Session

from flowbroker.importers.ace import Workspace, WorkspaceError, import_workspace
from flowbroker.importers.ace.workspace import MAX_BYTES, MAX_FILES, WorkspaceTooLarge, refuse_dependents
from flowbroker.repository.models import Flow, FlowVersion, MessageSet, MessageSetVersion
from flowbroker.services import audit, flows, messagesets, queues, validation
from flowbroker.services.errors import Invalid, ServiceError, problem


class BadWorkspace(Invalid):
    status_code = 400
    code = "bad_workspace"


class WorkspaceTooBig(Invalid):
    status_code = 413
    code = "workspace_too_large"


def read_zip(data: bytes, *, max_files: int = MAX_FILES, max_bytes: int = MAX_BYTES) -> Workspace:
    try:
        return Workspace.from_zip(data, max_files=max_files, max_bytes=max_bytes)
    except WorkspaceTooLarge as exc:
        raise WorkspaceTooBig(str(exc), [problem("", str(exc))]) from None
    except WorkspaceError as exc:
        raise BadWorkspace(str(exc), [problem("", str(exc))]) from None


def import_ace(
    session: Session,
    actor: str,
    data: bytes,
    *,
    queue_manager: Path | None,
    broker: str | None = None,
    lookup: validation.SpecLookup | None = None,
    max_files: int = MAX_FILES,
    max_bytes: int = MAX_BYTES,
) -> dict[str, Any]:
    """Convert the zipped workspace ``data`` and store its flows (and queues, given ``queue_manager``).

    ``queue_manager`` is the data directory of the queue manager to define queues on; ``None``
    leaves them undefined (the caller may not define queues), which the report says. ``broker``
    names the broker the queues are for: when its transport URL is ``amqp://`` or ``amqps://`` the
    queues and subscriptions are defined on that RabbitMQ instead, and the MQInput nodes reading a
    queue take its BOTHRESH/BOQNAME (RabbitMQ queues have no backout settings of their own).
    """
    rabbitmq = ""
    if broker:
        from flowbroker.runtime.transports import kind_of
        from flowbroker.services import brokers

        url = brokers.by_name(session, broker).qm_url
        rabbitmq = url if kind_of(url) == "amqp" else ""
    converted = import_workspace(read_zip(data, max_files=max_files, max_bytes=max_bytes))
    report = converted.report
    if rabbitmq:
        _backout_onto_inputs(converted.documents, report.queues)
    by_name = {f.name: f for f in report.flows}
    stored: list[dict[str, Any]] = []
    invalid: set[str] = set()
    for document in converted.documents:
        found = validation.problems(document, lookup)
        if found:
            invalid.add(document["name"])
            by_name[document["name"]].problems = [dict(p) for p in found]
    for document in refuse_dependents(converted.documents, report, dict.fromkeys(invalid, "")):
        entry = by_name[document["name"]]
        entry.outcome, entry.version = _store(session, actor, document)
        stored.append({"name": entry.name, "version": entry.version, "outcome": entry.outcome})
    models = {m["file"]: m for m in report.models}
    sets_stored: list[dict[str, Any]] = []
    for message_set in converted.message_sets:
        model = models[message_set["source"]]
        model["outcome"], model["version"] = _store_set(session, actor, message_set)
        sets_stored.append(
            {"name": message_set["name"], "version": model["version"], "outcome": model["outcome"]}
        )
    audit.record(
        session,
        actor,
        "import.ace",
        "ace",
        {"flows": stored, "messageSets": sets_stored, "summary": report.summary()},
    )
    session.commit()
    if rabbitmq and queue_manager is not None:
        define_on_rabbitmq(
            session, actor, rabbitmq, report.queues, report.subscriptions, converted.subscriptions
        )
        return report.to_json()
    for queue in report.queues:
        if queue["problem"]:
            continue
        if queue_manager is None:
            queue["outcome"] = "not defined: defining queues needs the operator role"
            continue
        try:
            queues.define(session, actor, queue_manager, queue["name"], queue["attributes"])
        except queues.QueueManagerRefused as exc:
            queue["outcome"] = (
                "exists (left as it is)" if exc.detail == {"reason": 2100} else f"refused: {exc}"
            )
        except ServiceError as exc:
            queue["outcome"] = f"not defined: {exc}"
        else:
            queue["outcome"] = "defined"
    for sub in report.subscriptions:
        if sub["problem"]:
            continue
        if queue_manager is None:
            sub["outcome"] = "not defined: defining subscriptions needs the operator role"
            continue
        made = next(s for s in converted.subscriptions if s.name == sub["name"])
        try:
            queues.subscribe(session, actor, queue_manager, made.name, made.topic, made.queue, made.correl_id)
        except ServiceError as exc:
            sub["outcome"] = f"not defined: {exc}"
        else:
            sub["outcome"] = "defined"
    return report.to_json()


#: MQSC queue attributes RabbitMQ has no counterpart for, and why (MAXDEPTH is applied).
NOT_ON_RABBITMQ = {
    "max_msg_length": "RabbitMQ has no message size limit per queue (max_message_size is the server's)",
    "default_persistence": "persistence is per message on RabbitMQ; the queues defined here are durable",
    "default_priority": "RabbitMQ queues have no default priority",
    "description": "RabbitMQ queues hold no description",
    "put_inhibited": "RabbitMQ queues cannot be put-inhibited",
    "get_inhibited": "RabbitMQ queues cannot be get-inhibited",
}
_BACKOUT = {"backout_threshold": "backoutThreshold", "backout_requeue_q": "backoutQueue"}
_MQSC_NAMES = {
    "max_msg_length": "MAXMSGL",
    "default_persistence": "DEFPSIST",
    "default_priority": "DEFPRTY",
    "description": "DESCR",
    "put_inhibited": "PUT",
    "get_inhibited": "GET",
    "backout_threshold": "BOTHRESH",
    "backout_requeue_q": "BOQNAME",
}


def _backout_onto_inputs(documents: list[dict[str, Any]], queues: list[dict[str, Any]]) -> None:
    """Give the MQInput nodes reading each queue its backout threshold and queue, unless they set their own.

    RabbitMQ queues have neither; MQInput's own properties do the same work. Each queue's report
    entry says which nodes took them (or that none reads the queue).
    """
    for queue in queues:
        wanted = {
            ours: queue["attributes"][mqsc] for mqsc, ours in _BACKOUT.items() if mqsc in queue["attributes"]
        }
        if queue["problem"] or not wanted:
            continue
        given: list[str] = []
        for document in documents:
            for node in document.get("nodes", []):
                props = node.get("properties") or {}
                spec = registry.spec(str(node.get("type")))
                # an input node reading this queue that has the backout properties (MQInput's)
                if spec is None or not spec.is_input or spec.queues_read(props) != (queue["name"],):
                    continue
                if any(spec.property(name) is None for name in wanted):
                    continue
                taken = {k: v for k, v in wanted.items() if not props.get(k)}
                if taken:
                    props.update(taken)
                    given.append(f"{document['name']}/{node.get('name') or node.get('id')}")
        queue.setdefault("notes", []).append(
            f"{', '.join(_MQSC_NAMES[k] for k in _BACKOUT if k in queue['attributes'])} given to the MQInput "
            f"nodes reading the queue: {', '.join(given)}"
            if given
            else "no imported MQInput node reads the queue to take its backout settings"
        )


def define_on_rabbitmq(
    session: Session,
    actor: str,
    url: str,
    queues_report: list[dict[str, Any]],
    subs_report: list[dict[str, Any]],
    subscriptions: list[Any],
) -> None:
    """Define the imported queues and durable subscriptions on the RabbitMQ at ``url``; outcomes in the reports.

    A queue that exists is left as it is (RabbitMQ cannot alter a queue's arguments); MAXDEPTH
    becomes ``x-max-length`` with publishes refused when full; the other attributes are reported.
    A subscription becomes a binding of its queue to the topic exchange.
    """
    from flowbroker.runtime.transports import TransportError
    from flowbroker.runtime.transports.amqp import AmqpTransport
    from flowbroker.runtime.transports.amqp import topic_exchange as exchange

    wanted = [q for q in queues_report if not q["problem"]] + [s for s in subs_report if not s["problem"]]
    if not wanted:
        return
    try:
        transport = AmqpTransport.open(url)
    except TransportError as exc:
        for entry in wanted:
            entry["outcome"] = f"not defined: {exc}"
        return
    defined: list[str] = []
    try:
        for queue in queues_report:
            if queue["problem"]:
                continue
            attrs = queue["attributes"]
            for key, why in NOT_ON_RABBITMQ.items():
                if key in attrs:
                    queue.setdefault("dropped", []).append(
                        {"attribute": _MQSC_NAMES[key], "value": str(attrs[key]), "reason": why}
                    )
            try:
                if transport.queue_exists(queue["name"]):
                    queue["outcome"] = "exists on RabbitMQ (left as it is)"
                    continue
                made = transport.define_queue(queue["name"], max_depth=attrs.get("max_depth") or 0)
            except TransportError as exc:
                queue["outcome"] = f"refused by RabbitMQ: {exc}"
                continue
            queue["outcome"] = f"defined on RabbitMQ ({made['type']} queue)"
            if made.get("max_depth"):
                queue.setdefault("notes", []).append(
                    f"MAXDEPTH({made['max_depth']}) is x-max-length with publishes refused once the queue is "
                    "full (x-overflow reject-publish)"
                    + (
                        "; a quorum queue checks the bound after a message is in, so it may hold one more"
                        if made["type"] == "quorum"
                        else ""
                    )
                )
            defined.append(queue["name"])
        for sub in subs_report:
            if sub["problem"]:
                continue
            made_sub = next(s for s in subscriptions if s.name == sub["name"])
            if made_sub.correl_id:
                sub.setdefault("dropped", []).append(
                    {
                        "attribute": "DESTCORL",
                        "value": made_sub.correl_id,
                        "reason": "a RabbitMQ binding does not set the correlation id of what it delivers",
                    }
                )
            try:
                transport.subscribe(made_sub.topic, made_sub.queue)
            except TransportError as exc:
                sub["outcome"] = f"refused by RabbitMQ: {exc}"
                continue
            sub["outcome"] = (
                f"defined on RabbitMQ (a binding of {made_sub.queue} to the exchange {exchange()})"
            )
    finally:
        transport.close()
    audit.record(session, actor, "import.ace.rabbitmq", "ace", {"queues": defined})
    session.commit()


def _store_set(session: Session, actor: str, found: dict[str, Any]) -> tuple[str, int]:
    """Add a converted message set, or its next version when the stored document differs (as archives do)."""
    name, document = found["name"], found["document"]
    existing = messagesets.by_name(session, name)
    if existing is None:
        existing = MessageSet(
            name=name, description=f"Imported from ACE {found['source']}.", current_version=0
        )
        session.add(existing)
        session.flush()
        outcome = "created"
    elif messagesets.version(session, existing).document == document:
        return "unchanged", existing.current_version
    else:
        outcome = "updated"
    number = existing.current_version + 1
    session.add(
        MessageSetVersion(message_set_id=existing.id, version=number, document=document, author=actor)
    )
    existing.current_version = number
    session.flush()
    return outcome, number


def _store(session: Session, actor: str, document: dict[str, Any]) -> tuple[str, int]:
    """Add ``document`` as a new flow or the next version of the flow of its name (as archives do)."""
    name = document["name"]
    flow = session.scalars(select(Flow).where(Flow.name == name)).first()
    if flow is None:
        flow = Flow(name=name, description=document.get("description", ""), current_version=0)
        session.add(flow)
        session.flush()
        outcome = "created"
    else:
        current = flows.version(session, flow).document
        if {k: v for k, v in current.items() if k != "version"} == {
            "properties": {},
            "connections": [],
            **document,
        }:
            return "unchanged", flow.current_version
        outcome = "updated"
    number = flow.current_version + 1
    stored = {"properties": {}, "connections": [], **document, "version": number}
    session.add(
        FlowVersion(
            flow_id=flow.id, version=number, document=stored, comment="imported from ACE", author=actor
        )
    )
    flow.current_version = number
    session.flush()
    return outcome, number
