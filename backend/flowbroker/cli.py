"""The `flowbroker` command: parses arguments and dispatches to one module per area.

Every handler returns an exit status; a :class:`CommandError` becomes a one-line message and a
non-zero status, never a traceback.

Other distributions add subcommands through the ``flowbroker.commands`` entry-point group: each
entry point names a module with ``register(subparsers)``, as the built-in command modules have.
The performance harness (``flowbroker bench``) arrives that way from the ``flowbroker-bench``
distribution in ``bench/``; without it ``flowbroker bench`` says how to install it.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import sys
from collections.abc import Sequence
from importlib.metadata import EntryPoint, entry_points

from flowbroker.commands import CommandError

#: Modules under flowbroker.commands that add subcommands (each has ``register(subparsers)``).
COMMAND_MODULES = ("platform", "qm", "esql", "msgset", "flows", "flowtests", "imports", "worker", "docs")

#: Entry-point group of subcommands that other distributions contribute.
PLUGIN_GROUP = "flowbroker.commands"

#: Subcommands of optional distributions, with how to install them when they are absent.
OPTIONAL_COMMANDS = {
    "bench": (
        "the performance harness is not installed: run `make setup` in the source tree, "
        "or `pip install -e ./bench` into this environment"
    ),
}

log = logging.getLogger(__name__)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="flowbroker", description="flowbroker message broker and integration engine"
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for name in COMMAND_MODULES:
        module = importlib.import_module(f"flowbroker.commands.{name}")
        module.register(sub)
    taken = set(sub.choices)
    for point in entry_points(group=PLUGIN_GROUP):
        if point.name in taken:
            _refuse(point, f"subcommand {point.name!r} is already taken")
            continue
        try:
            point.load().register(sub)
        except Exception as exc:  # a plug-in that fails must not take the other commands down
            sub.choices.pop(point.name, None)
            _refuse(point, f"cannot be loaded: {type(exc).__name__}: {exc}")
            continue
        taken.add(point.name)
    for name, hint in OPTIONAL_COMMANDS.items():
        if name not in sub.choices:
            _add_missing(sub, name, hint)
    return parser


def _add_missing(sub: argparse._SubParsersAction, name: str, hint: str) -> None:  # type: ignore[type-arg]
    """``flowbroker NAME …`` of an absent distribution: any arguments, one line saying how to install it."""
    parser = sub.add_parser(name, help=f"(not installed) {hint}", add_help=False)
    parser.add_argument("rest", nargs=argparse.REMAINDER)

    def missing(args: argparse.Namespace) -> int:
        raise CommandError(f"{name}: {hint}")

    parser.set_defaults(func=missing)


def _refuse(point: EntryPoint, reason: str) -> None:
    dist = point.dist
    owner = f"distribution {dist.name} {dist.version}" if dist is not None else "an unknown distribution"
    log.error(
        "command plug-in refused (%s, entry point %s = %s, group %s): %s",
        owner,
        point.name,
        point.value,
        PLUGIN_GROUP,
        reason,
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        status = args.func(args)
    except CommandError as exc:
        print(f"flowbroker: error: {exc}", file=sys.stderr)
        return exc.status
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 1
    return int(status or 0)


if __name__ == "__main__":
    sys.exit(main())
