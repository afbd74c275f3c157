"""What a flow needs beside itself, resolved from the repository when it is deployed.

A deployment carries the documents of the subflows the flow names (``{"name", "version"}``,
recursively; a reference without a version takes the flow's current version) and of every usable
message set of the repository at its current version, so the execution group needs no repository
lookup and a redeploy picks up new versions (see :mod:`flowbroker.runtime.dependencies`).
"""

from __future__ import annotations

from typing import Any

from sqlalchemy.orm import Session

from flowbroker.services import flows as flow_service
from flowbroker.services import messagesets
from flowbroker.services.errors import NotFound

#: How many subflow documents one deployment may pull in (a guard against runaway nesting).
MAX_SUBFLOWS = 256


def resolve(session: Session, document: dict[str, Any]) -> dict[str, Any]:
    """The deployment's dependencies: ``subflows``, ``messageSets`` and ``unusableMessageSets``.

    A named subflow or version that does not exist is left out: compiling the flow reports it,
    with the node that names it. A stored set that does not compile is not shipped; its reason
    is kept under ``unusableMessageSets`` for the deploy check.
    """
    sets, unusable = _message_sets(session)
    return {"subflows": _subflows(session, document), "messageSets": sets, "unusableMessageSets": unusable}


def _subflows(session: Session, document: dict[str, Any]) -> list[dict[str, Any]]:
    from flowbroker_nodes import registry

    found: dict[tuple[str, int], dict[str, Any]] = {}
    latest: dict[str, int] = {}
    pending: list[Any] = [document]
    while pending and len(found) < MAX_SUBFLOWS:
        current = pending.pop()
        nodes = current.get("nodes") if isinstance(current, dict) else None
        for node in nodes if isinstance(nodes, list) else []:
            if registry.subflow_part(node) != "node":
                continue
            ref = (
                (node.get("properties") or {}).get("flow")
                if isinstance(node.get("properties"), dict)
                else None
            )
            if not isinstance(ref, dict):
                continue
            if "nodes" in ref:
                pending.append(ref)  # an inline subflow may name saved ones
                continue
            name, version = ref.get("name"), ref.get("version")
            if not isinstance(name, str) or not name:
                continue
            pinned = version not in (None, "", 0)
            try:
                number = int(version) if pinned else None  # type: ignore[arg-type]
                row = flow_service.version(session, flow_service.get_by_name(session, name), number)
            except (NotFound, TypeError, ValueError):
                continue
            if not pinned:
                latest[name] = row.version
            key = (name, row.version)
            if key not in found:
                found[key] = dict(row.document)
                pending.append(found[key])
    return [
        {"name": name, "version": version, "latest": latest.get(name) == version, "document": document}
        for (name, version), document in found.items()
    ]


def _message_sets(session: Session) -> tuple[list[dict[str, Any]], dict[str, str]]:
    from flowbroker.formats.mrm.model import MessageSetError, compile_set

    shipped: list[dict[str, Any]] = []
    unusable: dict[str, str] = {}
    for message_set in messagesets.list_all(session):
        row = messagesets.version(session, message_set)
        try:
            compile_set(row.document, message_set.name)
        except MessageSetError as exc:
            # stored before sets were checked on save: it cannot be parsed with, so it is not shipped
            unusable[message_set.name] = f"version {row.version} is not a valid message set: {exc}"
            continue
        shipped.append({"name": message_set.name, "version": row.version, "document": row.document})
    return shipped, unusable


def message_set_problems(nodes: dict[str, Any], dependencies: dict[str, Any]) -> list[dict[str, Any]]:
    """A problem for each message set a node names that the deployment does not carry."""
    shipped = {str(entry.get("name")) for entry in dependencies.get("messageSets") or []}
    unusable = dependencies.get("unusableMessageSets") or {}
    problems = []
    for node_id, node in nodes.items():
        for name in node.SPEC.message_sets(node.properties):
            if name not in shipped:
                problems.append(_missing_set(node_id, name, unusable))
    return problems


def _missing_set(node_id: str, name: str, unusable: dict[str, str]) -> dict[str, Any]:
    reason = unusable.get(name) or "there is no message set of that name in the repository"
    return {
        "node": node_id,
        "property": "messageSet",
        "line": 0,
        "column": 0,
        "pointer": "",
        "message": f"message set {name!r}: {reason}",
    }
