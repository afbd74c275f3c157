"""``--compare-seed``: the seed's figure and the ratio beside every row that carries a seed key.

A row names the seed figure it reproduces in its ``seed`` column (see :mod:`flowbroker_bench.seeds`)
and the column holding its own figure in ``figure`` (default ``msgs_per_sec``). The ratio is
ours ÷ seed's when higher is better and seed's ÷ ours when the seed's figure is a time, so a
ratio above 1 always means "better than the seed".
"""

from __future__ import annotations

from collections.abc import Sequence

from flowbroker_bench.core import Row
from flowbroker_bench.seeds import SeedKeyError, figure

DEFAULT_FIGURE = "msgs_per_sec"


def compare(rows: Sequence[Row], goal: float | None = None) -> list[Row]:
    """Copies of ``rows`` with ``seed_figure``, ``seed_unit``, ``ratio`` (and ``goal_met``) added.

    A row without a seed key passes unchanged; a row with an unknown key gets the reason in
    ``seed_figure`` instead of a number, so one bad key never hides the rest of the table.
    """
    out: list[Row] = []
    for row in rows:
        key = row.get("seed")
        if not key:
            out.append(dict(row))
            continue
        new = dict(row)
        try:
            seed = figure(str(key))
        except SeedKeyError as exc:
            new["seed_figure"] = f"unknown: {exc}"
            out.append(new)
            continue
        ours = row.get(row.get("figure") or DEFAULT_FIGURE)
        new["seed_figure"] = seed.value
        new["seed_unit"] = seed.unit.split(";")[0].split(",")[0]
        ratio = _ratio(ours, seed.value, seed.lower_is_better)
        new["ratio"] = round(ratio, 2) if ratio is not None else None
        if goal is not None and ratio is not None:
            new["goal_met"] = "yes" if ratio >= goal else f"no (< {goal:g}x)"
        out.append(new)
    return out


def _ratio(ours: object, seed: float, lower_is_better: bool) -> float | None:
    if not isinstance(ours, int | float) or isinstance(ours, bool) or ours <= 0 or seed <= 0:
        return None
    return seed / float(ours) if lower_is_better else float(ours) / seed
