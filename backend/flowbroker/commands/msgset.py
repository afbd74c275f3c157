"""`flowbroker msgset import`: turn a COBOL copybook or C header into a message set's message type (and store it)."""

from __future__ import annotations

import argparse
import json
import sys

from flowbroker.commands import CommandError


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Add ``msgset import``."""
    parser = sub.add_parser("msgset", help="message sets: import record layouts")
    actions = parser.add_subparsers(dest="msgset_action", metavar="ACTION")
    actions.required = True
    imp = actions.add_parser(
        "import",
        help="import a copybook or C header and print the message type as JSON",
        description="Import a COBOL copybook or C struct header and print the message type as JSON.",
    )
    imp.add_argument(
        "file",
        metavar="FILE",
        help="the copybook or header ('-' for standard input), or a directory with --report",
    )
    kind = imp.add_mutually_exclusive_group()
    kind.add_argument("--copybook", action="store_true", help="FILE is a COBOL copybook")
    kind.add_argument("--c-header", action="store_true", help="FILE is a C header of struct declarations")
    imp.add_argument("--set", help="the message set the type belongs to (required unless --report)")
    imp.add_argument(
        "--report",
        action="store_true",
        help="import every copybook under the directory FILE (copybook unless --c-header), round-trip a "
        "generated record of each through CWF, and print the share imported, each refusal and warning",
    )
    imp.add_argument("--type", help="the message type's name (default: the record or last struct)")
    imp.add_argument(
        "--save",
        action="store_true",
        help="also store the type in the message set through the API (a new version of the set; the set "
        "is created when missing), with the token of `flowbroker login` or FLOWBROKER_TOKEN",
    )
    imp.add_argument("--api", default=None, help="API URL (default FLOWBROKER_API or http://127.0.0.1:8080)")
    imp.set_defaults(func=_import)


def _import(args: argparse.Namespace) -> int:
    from esql.domains import DomainError

    from flowbroker.formats.copybook import ImportFault, library_beside, source_text
    from flowbroker.formats.importing import import_layout

    if args.report:
        from flowbroker.commands.msgset_report import report

        return report(args.file, "c-header" if args.c_header else "copybook", args.set or "REPORT")
    if not (args.copybook or args.c_header):
        raise CommandError("give --copybook or --c-header")
    if not args.set:
        raise CommandError("give --set, the message set the type belongs to")
    try:
        if args.file == "-":
            text, source = sys.stdin.read(), "<stdin>"
        else:
            with open(args.file, "rb") as handle:
                text, source = source_text(handle.read()), args.file
    except OSError as exc:
        raise CommandError(f"cannot read {args.file}: {exc}") from None
    try:
        library = library_beside(args.file) if args.file != "-" else None
        result = import_layout(
            text, "copybook" if args.copybook else "c-header", args.set, args.type, source, library
        )
    except ImportFault as fault:
        raise CommandError(str(fault)) from None
    except DomainError as exc:
        raise CommandError(f"{source}: {exc}") from None
    if args.save:
        # the configuration manager imports the same text again, so what it stores is exactly
        # what was checked here, merged into the set's current version
        from flowbroker.commands.platform import api_request

        saved = api_request(
            "POST",
            "/api/message-sets/import",
            api=args.api,
            json={
                "set": args.set,
                "kind": "copybook" if args.copybook else "c-header",
                "source": text,
                "type": args.type,
                "filename": "" if source == "<stdin>" else source[-255:],
            },
        )
        print(
            f"saved message type {saved['type']!r} in message set {saved['set']!r} version {saved['version']}",
            file=sys.stderr,
        )
    for warning in result.pop("warnings", []):
        print(
            f"{source}:{warning['line']}:{warning['column']}: warning: {warning['message']}", file=sys.stderr
        )
    print(json.dumps(result, indent=2))
    return 0
