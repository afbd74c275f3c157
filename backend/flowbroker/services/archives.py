"""Deployable archives (the role of ACE's BAR file): a zip of flow documents and message sets."""

from __future__ import annotations

import io
import json
import zipfile
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from flowbroker.repository.models import Flow, FlowVersion, MessageSet, MessageSetVersion
from flowbroker.services import audit, flows, messagesets, validation
from flowbroker.services.errors import Invalid, NotFound, problem

FORMAT = "flowbroker-archive"
FORMAT_VERSION = 1
MAX_ENTRIES = 2000
MAX_UNCOMPRESSED = 256 * 1024 * 1024


class BadArchive(Invalid):
    status_code = 400
    code = "bad_archive"


def export(
    session: Session, flow_names: list[str] | None = None, set_names: list[str] | None = None
) -> bytes:
    """The current version of the named flows and message sets (all of them when none is named)."""
    if flow_names:
        selected_flows = [flows.get_by_name(session, name) for name in flow_names]
    else:
        selected_flows = list(session.scalars(select(Flow).order_by(Flow.name)))
    if set_names:
        selected_sets = []
        for name in set_names:
            found = messagesets.by_name(session, name)
            if found is None:
                raise NotFound(f"no message set named {name!r}")
            selected_sets.append(found)
    else:
        selected_sets = list(session.scalars(select(MessageSet).order_by(MessageSet.name)))
    manifest: dict[str, Any] = {
        "format": FORMAT,
        "formatVersion": FORMAT_VERSION,
        "createdAt": datetime.now(UTC).isoformat(),
        "flows": [],
        "messageSets": [],
    }
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for flow in selected_flows:
            row = flows.version(session, flow)
            path = f"flows/{flow.name}.json"
            archive.writestr(path, json.dumps(row.document, indent=2, sort_keys=True))
            manifest["flows"].append({"name": flow.name, "version": row.version, "path": path})
        for message_set in selected_sets:
            set_row = messagesets.version(session, message_set)
            path = f"messagesets/{message_set.name}.json"
            body = {
                "name": message_set.name,
                "description": message_set.description,
                "document": set_row.document,
            }
            archive.writestr(path, json.dumps(body, indent=2, sort_keys=True))
            manifest["messageSets"].append(
                {"name": message_set.name, "version": set_row.version, "path": path}
            )
        archive.writestr("manifest.json", json.dumps(manifest, indent=2))
    return buffer.getvalue()


def _json_entry(archive: zipfile.ZipFile, path: str) -> Any:
    try:
        raw = archive.read(path)
    except KeyError:
        raise BadArchive(f"the archive has no {path}", [problem(f"/{path}", "missing")]) from None
    except (zipfile.BadZipFile, OSError, RuntimeError) as exc:
        raise BadArchive(f"cannot read {path}: {exc}", [problem(f"/{path}", str(exc))]) from None
    try:
        return json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise BadArchive(
            f"{path}: not UTF-8 at byte {exc.start}", [problem(f"/{path}", f"not UTF-8 at byte {exc.start}")]
        ) from None
    except json.JSONDecodeError as exc:
        where = f"line {exc.lineno}, column {exc.colno} (byte {exc.pos})"
        raise BadArchive(
            f"{path}: malformed JSON at {where}: {exc.msg}", [problem(f"/{path}", f"{exc.msg} at {where}")]
        ) from None


def _open(data: bytes) -> zipfile.ZipFile:
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
    except zipfile.BadZipFile as exc:
        raise BadArchive(f"not a zip archive: {exc}") from None
    infos = archive.infolist()
    if len(infos) > MAX_ENTRIES:
        raise BadArchive(f"the archive has {len(infos)} entries; at most {MAX_ENTRIES} are accepted")
    total = sum(info.file_size for info in infos)
    if total > MAX_UNCOMPRESSED:
        raise BadArchive(f"the archive expands to {total} bytes; at most {MAX_UNCOMPRESSED} are accepted")
    return archive


def _entries(manifest: Any, key: str) -> list[dict[str, Any]]:
    items = manifest.get(key, [])
    if not isinstance(items, list):
        raise BadArchive(
            f"manifest.json: {key} must be a list", [problem(f"/manifest.json/{key}", "must be a list")]
        )
    for index, item in enumerate(items):
        if not isinstance(item, dict) or not isinstance(item.get("path"), str):
            raise BadArchive(
                f"manifest.json: {key}[{index}] needs a path",
                [problem(f"/manifest.json/{key}/{index}/path", "required: a string")],
            )
    return items


def read(
    data: bytes, lookup: validation.SpecLookup | None = None
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Parse and validate a whole archive before anything is written: (flow documents, message sets)."""
    archive = _open(data)
    with archive:
        manifest = _json_entry(archive, "manifest.json")
        if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
            raise BadArchive(
                f"manifest.json: not a {FORMAT} manifest",
                [problem("/manifest.json/format", f"must be {FORMAT!r}")],
            )
        if manifest.get("formatVersion") != FORMAT_VERSION:
            raise BadArchive(
                f"manifest.json: unsupported formatVersion {manifest.get('formatVersion')!r}",
                [problem("/manifest.json/formatVersion", f"must be {FORMAT_VERSION}")],
            )
        documents = []
        found: list[dict[str, str]] = []
        for item in _entries(manifest, "flows"):
            document = _json_entry(archive, item["path"])
            for entry in validation.problems(document, lookup):
                found.append(problem(f"/{item['path']}{entry['pointer']}", entry["message"]))
            documents.append(document)
        if found:
            raise Invalid(
                f"invalid flow in archive: {found[0]['pointer']}: {found[0]['message']}",
                found,
                code="invalid_flow",
            )
        sets = []
        for item in _entries(manifest, "messageSets"):
            body = _json_entry(archive, item["path"])
            if not isinstance(body, dict) or not isinstance(body.get("document"), dict):
                raise BadArchive(
                    f"{item['path']}: needs an object 'document'",
                    [problem(f"/{item['path']}/document", "required")],
                )
            messagesets.check(body.get("name"), body["document"])
            sets.append(body)
        names = [d["name"] for d in documents]
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise BadArchive(f"the archive holds flow {duplicates[0]!r} twice")
        return documents, sets


def import_archive(
    session: Session, actor: str, data: bytes, lookup: validation.SpecLookup | None = None
) -> dict[str, Any]:
    """Store every flow and message set of the archive in one unit of work.

    A flow whose current document is identical is left alone; a changed one gets a new version.
    """
    documents, sets = read(data, lookup)
    report: dict[str, Any] = {"flows": [], "messageSets": []}
    for document in documents:
        name = document["name"]
        flow = session.scalars(select(Flow).where(Flow.name == name)).first()
        incoming = {k: v for k, v in document.items() if k != "version"}
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
                **incoming,
            }:
                report["flows"].append(
                    {"name": name, "version": flow.current_version, "outcome": "unchanged"}
                )
                continue
            outcome = "updated"
        number = flow.current_version + 1
        stored = {"properties": {}, "connections": [], **incoming, "version": number}
        session.add(
            FlowVersion(flow_id=flow.id, version=number, document=stored, comment="imported", author=actor)
        )
        flow.current_version = number
        report["flows"].append({"name": name, "version": number, "outcome": outcome})
    for body in sets:
        name = body["name"]
        existing = messagesets.by_name(session, name)
        if existing is None:
            existing = MessageSet(name=name, description=body.get("description") or "", current_version=0)
            session.add(existing)
            session.flush()
        elif messagesets.version(session, existing).document == body["document"]:
            report["messageSets"].append(
                {"name": name, "version": existing.current_version, "outcome": "unchanged"}
            )
            continue
        number = existing.current_version + 1
        session.add(
            MessageSetVersion(
                message_set_id=existing.id, version=number, document=body["document"], author=actor
            )
        )
        existing.current_version = number
        report["messageSets"].append({"name": name, "version": number, "outcome": "stored"})
    audit.record(session, actor, "archive.import", "archive", report)
    session.commit()
    return report
