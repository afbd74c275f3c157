"""Scenario discovery and the shared output of `flowbroker bench`: table, CSV or JSON."""

from __future__ import annotations

import argparse
import csv
import importlib
import io
import json
import pkgutil
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import flowbroker_bench as bench_package

Row = dict[str, Any]


@dataclass
class Scenario:
    """A named measurement: ``run(options)`` returns rows (one dict per printed line)."""

    name: str
    description: str
    run: Callable[[argparse.Namespace], list[Row]]
    add_arguments: Callable[[argparse.ArgumentParser], None] | None = None
    tags: tuple[str, ...] = field(default_factory=tuple)


def scenarios() -> dict[str, Scenario]:
    """Every scenario of every module in flowbroker_bench, by name."""
    found: dict[str, Scenario] = {}
    for info in pkgutil.iter_modules(bench_package.__path__):
        if info.name in {"core", "command"} or info.name.startswith("_"):
            continue
        module = importlib.import_module(f"flowbroker_bench.{info.name}")
        for name, scenario in getattr(module, "SCENARIOS", {}).items():
            found[name] = scenario
    return dict(sorted(found.items()))


def render(rows: Sequence[Row], fmt: str = "table") -> str:
    """Rows as an aligned text table, CSV or JSON."""
    if fmt == "json":
        return json.dumps(list(rows), indent=2, default=str)
    columns: list[str] = []
    for row in rows:
        for key in row:
            if key not in columns:
                columns.append(key)
    if fmt == "csv":
        out = io.StringIO()
        writer = csv.DictWriter(out, fieldnames=columns)
        writer.writeheader()
        for row in rows:
            writer.writerow(row)
        return out.getvalue()
    cells = [[_cell(row.get(col)) for col in columns] for row in rows]
    widths = [max([len(col)] + [len(r[i]) for r in cells]) for i, col in enumerate(columns)]
    lines = ["  ".join(col.ljust(w) for col, w in zip(columns, widths, strict=True))]
    lines.append("  ".join("-" * w for w in widths))
    for r in cells:
        lines.append("  ".join(c.rjust(w) for c, w in zip(r, widths, strict=True)))
    return "\n".join(lines)


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:,.0f}" if abs(value) >= 100 else f"{value:.3g}"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)
