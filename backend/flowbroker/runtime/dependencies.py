"""What a deployed flow needs beside its own document: the subflows it names and the message sets.

The configuration manager resolves them from the repository when the flow is deployed and ships
their documents with the deployment (``{"subflows": [{name, version, latest, document}],
"messageSets": [{name, version, document}]}``), so an execution group compiles the flow and
registers the sets without a repository lookup, and a restarted group runs exactly what was
deployed.
"""

from __future__ import annotations

from typing import Any

from flowbroker.runtime.compiler import FlowCompileError, Problem, SubflowResolver


def subflow_resolver(
    dependencies: dict[str, Any] | None, fallback: SubflowResolver | None = None
) -> SubflowResolver:
    """Resolves ``{"name", "version"}`` references from the shipped subflows, then ``fallback``.

    A reference without a version takes the version that was the flow's latest at deploy time.
    """
    pinned: dict[tuple[str, int], dict[str, Any]] = {}
    latest: dict[str, dict[str, Any]] = {}
    for entry in (dependencies or {}).get("subflows") or []:
        document = entry.get("document")
        if not isinstance(document, dict):
            continue
        name = str(entry.get("name"))
        pinned[(name, int(entry.get("version") or 0))] = document
        if entry.get("latest"):
            latest[name] = document

    def resolve(ref: dict[str, Any]) -> dict[str, Any] | None:
        name = str(ref.get("name"))
        version = ref.get("version")
        found = latest.get(name) if version in (None, "", 0) else pinned.get((name, _int(version)))
        if found is None and fallback is not None:
            return fallback(ref)
        return found

    return resolve


def install_message_sets(dependencies: dict[str, Any] | None) -> list[str]:
    """Register the shipped message sets with the MRM parser of this process; their names.

    Sets are process wide, as in an ACE execution group: the latest deployment of a set is the
    one every flow of the group parses with.
    """
    from flowbroker.formats.mrm import CATALOG
    from flowbroker.formats.mrm.model import MessageSetError

    installed = []
    for index, entry in enumerate((dependencies or {}).get("messageSets") or []):
        name = str(entry.get("name") or "")
        try:
            CATALOG.install(name, entry.get("document"))
        except MessageSetError as exc:
            raise FlowCompileError(
                [
                    Problem(
                        f"message set {name!r}: {exc}",
                        pointer=f"/messageSets/{index}/document{exc.pointer.rstrip('/')}",
                    )
                ]
            ) from None
        installed.append(name)
    return installed


def _int(value: Any) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return -1
