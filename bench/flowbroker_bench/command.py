"""`flowbroker bench SCENARIO …`: run a named performance scenario and print its figures.

The CLI finds this module through the ``flowbroker.commands`` entry point of this distribution.
"""

from __future__ import annotations

import argparse
import sys

from flowbroker.commands import CommandError


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Add ``bench``: each scenario is a sub-subcommand with its own options."""
    from flowbroker_bench.core import scenarios

    parser = sub.add_parser("bench", help="run a performance scenario and print its figures")
    names = parser.add_subparsers(dest="scenario", metavar="SCENARIO")
    names.required = True
    for name, scenario in scenarios().items():
        sp = names.add_parser(name, help=scenario.description, description=scenario.description)
        sp.add_argument("--format", choices=("table", "csv", "json"), default="table")
        sp.add_argument(
            "--compare-seed",
            action="store_true",
            help="print the seed's figure and the ratio beside each row that reproduces one",
        )
        sp.add_argument("--goal", type=float, default=None, help="with --compare-seed: the ratio to reach")
        sp.add_argument("--save", metavar="FILE", default=None, help="also write the rows as a results file")
        if scenario.add_arguments is not None:
            scenario.add_arguments(sp)
        sp.set_defaults(func=_run, bench=scenario)


def _run(args: argparse.Namespace) -> int:
    from flowbroker_bench.core import render

    try:
        rows = args.bench.run(args)
    except (OSError, ValueError) as exc:
        raise CommandError(f"bench {args.scenario}: {exc}") from exc
    if getattr(args, "compare_seed", False):
        from flowbroker_bench.compare import compare

        rows = compare(rows, args.goal)
    if getattr(args, "save", None):
        from flowbroker_bench.results import save

        try:
            save(args.save, args.scenario, args, rows)
        except OSError as exc:
            raise CommandError(
                f"bench {args.scenario}: cannot write {args.save}: {exc.strerror or exc}"
            ) from exc
    print(render(rows, args.format))
    sys.stdout.flush()
    return 0
