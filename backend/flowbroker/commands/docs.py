"""`flowbroker docs nodes`: write the node reference from the node specs, or check it is current."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from flowbroker.commands import CommandError


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Add ``docs nodes``."""
    parser = sub.add_parser("docs", help="generate reference documentation")
    docs_sub = parser.add_subparsers(dest="docs_command", metavar="ACTION")
    docs_sub.required = True
    nodes = docs_sub.add_parser(
        "nodes",
        help="the node reference (Markdown) from the node specs",
        description="Documents the built-in node types (with --plugins also those of installed "
        "plug-ins) on standard output, into --output, or, with --check, exits 1 when --output "
        "differs from what it would write.",
    )
    nodes.add_argument("--output", metavar="FILE", help="write the reference to FILE")
    nodes.add_argument(
        "--check", action="store_true", help="compare FILE with the specs instead of writing it"
    )
    nodes.add_argument("--plugins", action="store_true", help="include node types of installed plug-ins")
    nodes.add_argument(
        "--readme",
        metavar="FILE",
        help="also keep the node table between FILE's node-table markers (written, or checked with --check)",
    )
    nodes.set_defaults(func=_nodes)


def _nodes(args: argparse.Namespace) -> int:
    from flowbroker_nodes import reference, registry

    modules = registry.modules() if args.plugins else registry.builtin_modules()
    specs = [m.SPEC for m in modules.values()]
    text = reference.render(specs)
    if args.readme:
        _readme(Path(args.readme), specs, args.check)
    if args.check:
        if not args.output:
            raise CommandError("--check needs --output FILE, the reference to compare")
        try:
            current = Path(args.output).read_text(encoding="utf-8")
        except OSError as exc:
            raise CommandError(f"cannot read {args.output}: {exc.strerror}") from None
        if current != text:
            raise CommandError(f"{args.output} is stale: run `flowbroker docs nodes --output {args.output}`")
        return 0
    if args.output:
        try:
            Path(args.output).write_text(text, encoding="utf-8")
        except OSError as exc:
            raise CommandError(f"cannot write {args.output}: {exc.strerror}") from None
        return 0
    sys.stdout.write(text)
    return 0


def _readme(path: Path, specs: list[Any], check: bool) -> None:
    from flowbroker_nodes import reference

    try:
        current = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise CommandError(f"cannot read {path}: {exc.strerror}") from None
    try:
        wanted = reference.with_table(current, specs)
    except ValueError as exc:
        raise CommandError(f"{path}: {exc}") from None
    if wanted == current:
        return
    if check:
        raise CommandError(f"the node table in {path} is stale: run `make docs`")
    try:
        path.write_text(wanted, encoding="utf-8")
    except OSError as exc:
        raise CommandError(f"cannot write {path}: {exc.strerror}") from None
