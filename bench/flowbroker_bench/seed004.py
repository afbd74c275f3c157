"""``flowbroker bench seed004``: every Appendix B table of seed 004 (7.1–7.14) as a named, selectable case.

The cases are declared in :mod:`flowbroker_bench.appendix_b` and measured by the flow driver of
:mod:`flowbroker_bench.flow`; each row carries the seed key of its Appendix B cell, so
``--compare-seed`` and the report put the seed's figure (kept in data/seed004.json with its
source) beside it rather than a number typed into the driver.

    flowbroker bench seed004 --list
    flowbroker bench seed004 --case 7.11 --sizes 1024 --persistence np --compare-seed
    flowbroker bench seed004 --case 7.1 --transport qm --transport amqp-quorum

``--transport`` runs the cases with the execution groups' transport set to the embedded queue
manager (the default) or to RabbitMQ with quorum or classic queues (:mod:`flowbroker_bench.seed004_amqp`),
each transport in a set of processes of its own; every row names the transport it used.
"""

from __future__ import annotations

import argparse

from flowbroker_bench.core import Row, Scenario


def seed_key(table: str, size: int, persistent: bool, groups: int = 1) -> str:
    """The seed data key of an Appendix B cell from a table id (``7.8`` takes ``groups``)."""
    table_id = f"7.8-eg{groups}" if table == "7.8" else table
    return f"004/{table_id}/{'p' if persistent else 'np'}-{size}"


def run(args: argparse.Namespace) -> list[Row]:
    from flowbroker_bench import appendix_b, flow

    cases = appendix_b.select(list(args.case))
    if args.list:
        return flow.list_cases(cases)
    return flow.run_cases(cases, args)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from flowbroker_bench import flow

    flow.add_arguments(parser)


SCENARIOS = {
    "seed004": Scenario(
        "seed004",
        "seed 004 Appendix B tables 7.1-7.14, every message size and persistence the seed measured, "
        "in real execution groups; --list names the cases, --compare-seed adds the seed's figures",
        run,
        add_arguments,
        tags=("seed004",),
    )
}
