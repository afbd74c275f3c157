"""`flowbroker import ace DIR…`: bring an ACE / IIB Toolkit workspace into the repository, or into files."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from flowbroker.commands import CommandError


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Add ``import ace``."""
    parser = sub.add_parser("import", help="import projects of other products")
    kinds = parser.add_subparsers(dest="import_kind", metavar="KIND")
    kinds.required = True
    ace = kinds.add_parser(
        "ace",
        help="import ACE / IIB Toolkit projects: flows, subflows, ESQL, MQSC queues, CWF message sets",
        description="Convert the .msgflow/.subflow, .esql and .mqsc files of one or more Toolkit project "
        "folders (or workspaces of them), and the MRM message sets with a CWF format. Without --out the flows "
        "and message sets are stored in the repository and the local queues defined, through the API; with "
        "--out the flow and message set documents and the report are written "
        "to a directory and nothing else is touched. Exit status 1 only when a file cannot be read.",
    )
    ace.add_argument(
        "dirs", nargs="+", metavar="DIR", help="a project folder or a workspace of project folders"
    )
    ace.add_argument(
        "--out",
        metavar="DIR",
        help="write flows/<name>.json, messagesets/<name>.json, queues.json and report.json here",
    )
    ace.add_argument("--json", action="store_true", help="print the report as JSON")
    ace.add_argument(
        "--report",
        action="store_true",
        help="store nothing: import each DIR as a workspace of its own and print its figures and the totals "
        "(flows imported, nodes mapped, flows that validate, the node types left unmapped)",
    )
    ace.add_argument("--no-queues", action="store_true", help="do not define the MQSC scripts' queues")
    ace.add_argument(
        "--broker",
        metavar="NAME",
        help="the broker the queues are for: one whose transport URL is amqp:// gets them on its RabbitMQ",
    )
    ace.add_argument("--api", default=None, help="API URL (default FLOWBROKER_API or http://127.0.0.1:8080)")
    ace.set_defaults(func=_ace)


def _ace(args: argparse.Namespace) -> int:
    from flowbroker.importers.ace import Workspace, WorkspaceError, import_workspace
    from flowbroker.importers.ace.report import render
    from flowbroker.importers.ace.workspace import zip_dirs

    if args.report:
        from flowbroker.commands.ace_report import report as corpus_report

        try:
            return corpus_report(args.dirs, args.json)
        except WorkspaceError as exc:
            raise CommandError(str(exc)) from None
    try:
        if args.out:
            converted = import_workspace(Workspace.from_dirs(args.dirs))
            report = converted.report.to_json()
            _write(Path(args.out), converted.documents, converted.message_sets, report)
        else:
            from urllib.parse import urlencode

            from flowbroker.commands.platform import api_request

            data = zip_dirs(args.dirs)
            query = {
                **({"queues": "false"} if args.no_queues else {}),
                **({"broker": args.broker} if args.broker else {}),
            }
            report = api_request(
                "POST",
                "/api/imports/ace" + (f"?{urlencode(query)}" if query else ""),
                api=args.api,
                content=data,
                headers={"Content-Type": "application/zip"},
            )
    except WorkspaceError as exc:
        raise CommandError(str(exc)) from None
    print(json.dumps(report, indent=2) if args.json else render(report))
    return 1 if report["errors"] else 0


def _write(
    out: Path, documents: list[dict[str, Any]], message_sets: list[dict[str, Any]], report: dict[str, Any]
) -> None:
    try:
        (out / "flows").mkdir(parents=True, exist_ok=True)
        for document in documents:
            (out / "flows" / f"{document['name']}.json").write_text(json.dumps(document, indent=2) + "\n")
        if message_sets:
            (out / "messagesets").mkdir(exist_ok=True)
        for found in message_sets:
            # the form `flowbroker msgset` and archives take: name, description, document
            body = {
                "name": found["name"],
                "description": f"Imported from ACE {found['source']}.",
                "document": found["document"],
            }
            (out / "messagesets" / f"{found['name']}.json").write_text(json.dumps(body, indent=2) + "\n")
        (out / "queues.json").write_text(json.dumps(report["queues"], indent=2) + "\n")
        (out / "report.json").write_text(json.dumps(report, indent=2) + "\n")
    except OSError as exc:
        raise CommandError(f"{out}: {exc.strerror or exc}") from None
    print(
        f"wrote {len(documents)} flows, {len(message_sets)} message sets, queues.json and report.json to {out}",
        file=sys.stderr,
    )
