"""The source documents' measured figures, kept as data with their source, and looked up by seed key.

Each ``data/seedNNN.json`` holds the tables of one seed document: the table's section and
caption, its parameters and units, and its rows, each row with a ``key`` unique in its table. A
figure is addressed by a *seed key* ``"<seed>/<table id>/<row key>"`` (for example
``"004/7.1/np-1024"``), optionally followed by ``"#<column>"`` to pick a column other than the
table's headline metric. Benchmark rows carry such a key in their ``seed`` column so that
``--compare-seed`` can print the seed's figure and the ratio beside them.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

SEED_IDS = ("000", "001", "002", "003", "004")


class SeedKeyError(ValueError):
    """A seed key that names no table, row or column of the seed data."""


@dataclass(frozen=True)
class SeedFigure:
    """One figure of a seed table with everything needed to quote it."""

    key: str
    value: float
    column: str
    unit: str
    lower_is_better: bool
    seed_file: str
    section: str
    caption: str
    parameters: dict[str, Any]
    row: dict[str, Any]

    @property
    def source(self) -> str:
        return f"seed {self.key.split('/', 1)[0]} ({self.seed_file}), {self.section}: {self.caption}"


@cache
def document(seed: str) -> dict[str, Any]:
    """The whole data file of one seed ("000" … "004")."""
    if seed not in SEED_IDS:
        raise SeedKeyError(f"unknown seed {seed!r}; known: {', '.join(SEED_IDS)}")
    text = resources.files("flowbroker_bench").joinpath("data", f"seed{seed}.json").read_text("utf-8")
    data: dict[str, Any] = json.loads(text)
    return data


def tables(seed: str) -> list[dict[str, Any]]:
    return list(document(seed)["tables"])


def table(seed: str, table_id: str) -> dict[str, Any]:
    for candidate in document(seed)["tables"]:
        if candidate["id"] == table_id:
            return dict(candidate)
    known = ", ".join(t["id"] for t in document(seed)["tables"])
    raise SeedKeyError(f"seed {seed} has no table {table_id!r}; known: {known}")


def figure(key: str) -> SeedFigure:
    """The figure a seed key names; raises :class:`SeedKeyError` with the part that did not match."""
    path, _, column = key.partition("#")
    parts = path.split("/", 2)
    if len(parts) != 3 or not all(parts):
        raise SeedKeyError(f"seed key {key!r} is not '<seed>/<table>/<row>[#column]'")
    seed, table_id, row_key = parts
    tab = table(seed, table_id)
    for row in tab["rows"]:
        if row["key"] == row_key:
            break
    else:
        raise SeedKeyError(f"seed {seed} table {table_id} has no row {row_key!r}")
    column = column or tab["metric"]
    if column not in row:
        raise SeedKeyError(f"seed {seed} table {table_id} row {row_key} has no column {column!r}")
    value = row[column]
    if not isinstance(value, int | float):
        raise SeedKeyError(f"seed {seed} table {table_id} row {row_key} column {column} holds no figure")
    units = {**document(seed).get("units", {}), **tab.get("units", {})}
    return SeedFigure(
        key=f"{path}#{column}",
        value=float(value),
        column=column,
        unit=str(units.get(column, "")),
        lower_is_better=bool(tab.get("lower_is_better", False)),
        seed_file=document(seed)["file"],
        section=tab["section"],
        caption=tab["caption"],
        parameters=dict(tab.get("parameters", {})),
        row=dict(row),
    )


def all_keys() -> list[str]:
    """Every row key whose headline metric holds a figure (a seed's "not tested" cells hold none)."""
    return [
        f"{s}/{t['id']}/{r['key']}"
        for s in SEED_IDS
        for t in tables(s)
        for r in t["rows"]
        if isinstance(r.get(t["metric"]), int | float)
    ]


def _table_rows(args: argparse.Namespace) -> list[dict[str, Any]]:
    """The seed's own figures in its table's shape (``flowbroker bench seed-table 004/7.1``)."""
    seed, _, table_id = str(args.table).partition("/")
    if not table_id:
        return [
            {"table": f"{seed}/{t['id']}", "rows": len(t["rows"]), "caption": t["caption"]}
            for t in tables(seed)
        ]
    tab = table(seed, table_id)
    return [
        {"seed": f"{seed}/{table_id}/{r['key']}", **{k: v for k, v in r.items() if k != "key"}}
        for r in tab["rows"]
    ]


def _table_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("table", help="SEED (lists its tables) or SEED/TABLE, e.g. 004 or 004/7.11-sub10")


def _scenarios() -> dict[str, Any]:
    from flowbroker_bench.core import Scenario

    return {
        "seed-table": Scenario(
            "seed-table",
            "print a seed document's measured figures, kept as data with their source",
            _table_rows,
            _table_arguments,
        )
    }


SCENARIOS = _scenarios()
