"""The `flowbroker` command: parses arguments and dispatches to one module per area.

Every handler returns an exit status; a :class:`CommandError` becomes a one-line message and a
non-zero status, never a traceback.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from flowbroker.commands import CommandError

#: Modules under flowbroker.commands that add subcommands (each has ``register(subparsers)``).
COMMAND_MODULES = (
    "platform",
    "qm",
    "esql",
    "msgset",
    "flows",
    "flowtests",
    "imports",
    "worker",
    "bench",
    "docs",
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="flowbroker", description="flowbroker message broker and integration engine"
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for name in COMMAND_MODULES:
        module = importlib.import_module(f"flowbroker.commands.{name}")
        module.register(sub)
    return parser


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
