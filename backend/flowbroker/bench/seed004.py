"""Seed 004's Appendix B rows through the runtime's own driver (`flowbroker bench flow`), keyed to the seed data.

The flow runtime's scenario measures the example flows in a real execution group; this module
runs the same driver and gives each row its seed key, message size, persistence and execution
groups, so ``--compare-seed`` and the report put Appendix B's figure (kept in data/seed004.json
with its source) beside it rather than a number typed into the driver.
"""

from __future__ import annotations

import argparse
from typing import Any

from flowbroker.bench.core import Row, Scenario

#: The driver's table numbers whose Appendix B section holds several tables: the one it reproduces.
DEFAULT_TABLE = {
    "7.8": "7.8-eg{groups}",
    "7.9": "7.9-yes",
    "7.10": "7.10-coordinated-no",
    "7.11": "7.11-sub1",
    "7.12": "7.12-topic",
    "7.13": "7.13-1field",
    "7.14": "7.14-notrace",
    "7.6": "7.6-xml-xml",
    "7.7": "7.7-neon-v2-50fields",
}


def seed_key(table: str, size: int, persistent: bool, groups: int = 1) -> str:
    """The seed data key of an Appendix B cell from the driver's table number, size and persistence."""
    from flowbroker.bench import seeds

    known = {t["id"] for t in seeds.tables("004")}
    table_id = table if table in known else DEFAULT_TABLE.get(table, table).format(groups=groups)
    return f"004/{table_id}/{'p' if persistent else 'np'}-{size}"


def annotate(rows: list[Row], cases: list[Any]) -> list[Row]:
    """Give each driver row its seed key and the columns the report plots by."""
    by_label = {c.label: c for c in cases}
    out = []
    for row in rows:
        new = dict(row)
        case = by_label.get(str(row.get("flow")))
        if case is not None:
            groups = int(row.get("groups") or 1)
            new["seed"] = seed_key(case.seed_table, case.size, case.persistent, groups)
            new["figure"] = "msgs/s"
            new["message_size"] = case.size
            new["persistence"] = "p" if case.persistent else "np"
            if groups > 1 or case.key == "very-complex":
                new["execution_groups"] = groups
        out.append(new)
    return out


def run(args: argparse.Namespace) -> list[Row]:
    from flowbroker.bench import flow

    return annotate(flow.run_flows(args), flow.CASES)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from flowbroker.bench import flow

    flow._arguments(parser)


SCENARIOS = {
    "seed004": Scenario(
        "seed004",
        "seed 004 Appendix B rows through the runtime's flow driver, keyed to the seed data for --compare-seed",
        run,
        add_arguments,
        tags=("seed004",),
    )
}
