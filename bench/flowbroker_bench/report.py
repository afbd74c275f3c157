"""``flowbroker bench report``: results files → a Markdown report with PNG plots, machine, versions and date.

The report is built only from results files (``flowbroker bench SCENARIO --save FILE``), never
from figures typed into it, so every number in it was measured by a scenario run. Plots: rate vs
message size, vs subscribers, vs execution groups, and each MST ramp (offered vs delivered).
"""

from __future__ import annotations

import argparse
import datetime as dt
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from flowbroker_bench.compare import compare
from flowbroker_bench.core import Row, Scenario
from flowbroker_bench.results import load, machine

BUSY_NOTE = (
    "Figures are only as steady as the machine they were taken on: on a virtual machine whose host "
    "is shared they are noisy, and comparisons hold only between rows measured in the same run. "
    "Persistent figures follow the disk's fsync latency and are optimistic on a host-cached disk."
)


def _series_label(doc: dict[str, Any], row: Row, x_key: str = "message_size") -> str:
    """One line per series: over message sizes, a flow and persistence; over a sweep, a size too.

    In a sweep (subscribers, execution groups) the flow's label names the swept count itself,
    so the message size and persistence tell its lines apart instead.
    """
    parts = [str(row.get("engine") or doc["scenario"])]
    keys = (
        ("series", "scenario", "persistence", "flow")
        if x_key == "message_size"
        else ("series", "persistence")
    )
    for key in keys:
        value = row.get(key)
        if value not in (None, "") and str(value) not in parts[0]:
            parts.append(f"{value}")
    if x_key != "message_size" and _number(row.get("message_size")) is not None:
        parts.append(f"{row['message_size']:,} B")
    return " / ".join(parts)


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def _plot_xy(
    docs: Sequence[dict[str, Any]], x_key: str, title: str, xlabel: str, path: Path, log_x: bool = False
) -> bool:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    series: dict[str, list[tuple[float, float]]] = defaultdict(list)
    seeds: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for doc in docs:
        for row in compare(doc["rows"]):
            # rates only: rows whose figure is an elapsed time plot their msgs/s, without the seed's time
            figure = str(row.get("figure") or "msgs_per_sec")
            rate_figure = not figure.endswith("_ms")
            y_key = figure if rate_figure else "msgs_per_sec"
            x, y = _number(row.get(x_key)), _number(row.get(y_key, row.get("msgs/s")))
            if x is None or y is None or row.get("step") == "ramp":
                continue
            if x_key == "message_size" and (
                row.get("subscribers") not in (None, 1) or row.get("execution_groups") not in (None, 1)
            ):
                continue  # one line per size: subscriber and group sweeps have their own plots
            label = _series_label(doc, row, x_key)
            series[label].append((x, y))
            seed_y = _number(row.get("seed_figure"))
            if seed_y is not None and rate_figure:
                seeds[label].append((x, seed_y))
    if x_key == "message_size":
        # a series measured at one size (a persistent row, say) draws no line over sizes
        series = defaultdict(list, {k: v for k, v in series.items() if len({p[0] for p in v}) > 1})
    if not series:
        return False
    tall = len(series) > 16
    fig, ax = plt.subplots(figsize=(12, 9) if tall else (10, 5.5), dpi=100)
    for label, points in sorted(series.items()):
        points.sort()
        (line,) = ax.plot([p[0] for p in points], [p[1] for p in points], marker="o", label=label)
        seed_points = sorted(seeds.get(label, []))
        if seed_points:
            # the seed's figures in the series' colour, dashed; one legend entry says so for all
            ax.plot(
                [p[0] for p in seed_points],
                [p[1] for p in seed_points],
                linestyle="--",
                marker="x",
                color=line.get_color(),
            )
    if any(seeds.get(label) for label in series):
        ax.plot([], [], linestyle="--", marker="x", color="grey", label="dashed ×: the seed's figure")
    ax.set_title(title)
    ax.set_xlabel(xlabel)
    ax.set_ylabel("messages/s")
    ax.set_yscale("log")
    if log_x:
        ax.set_xscale("log")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=6, loc="center left", bbox_to_anchor=(1.01, 0.5))
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return True


def _plot_ramps(docs: Sequence[dict[str, Any]], path: Path) -> bool:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ramps: dict[str, list[tuple[float, float, bool]]] = defaultdict(list)
    for doc in docs:
        for row in doc["rows"]:
            if row.get("step") != "ramp":
                continue
            offered, delivered = _number(row.get("offered_rate")), _number(row.get("msgs_per_sec"))
            if offered is None or delivered is None:
                continue
            ok = str(row.get("sustainable", "")).startswith("yes")
            engine = str(row.get("engine") or doc["scenario"]).split(" (")[0]
            workload = row.get("scenario") or row.get("qos") or ""
            ramps[f"{engine} / {workload}"].append((offered, delivered, ok))
    if not ramps:
        return False
    cols = min(3, len(ramps))
    rows_n = -(-len(ramps) // cols)
    fig, axes = plt.subplots(rows_n, cols, figsize=(4.4 * cols, 3.8 * rows_n), dpi=100, squeeze=False)
    flat = [ax for row in axes for ax in row]
    for ax in flat[len(ramps) :]:
        ax.set_visible(False)
    for ax, (label, points) in zip(flat, sorted(ramps.items()), strict=False):
        points.sort()
        top = max(max(p[0], p[1]) for p in points)
        ax.plot([0, top], [0, top], color="grey", linewidth=0.8, linestyle=":")
        for offered, delivered, ok in points:
            ax.scatter(
                [offered], [delivered], color="tab:green" if ok else "tab:red", marker="o" if ok else "x"
            )
        good = [p[0] for p in points if p[2]]
        if good:
            ax.axvline(max(good), color="tab:green", linewidth=0.8, linestyle="--")
            ax.set_title(f"{label}\nMST {max(good):,.0f} msgs/s", fontsize=9)
        else:
            ax.set_title(f"{label}\nno sustainable step", fontsize=9)
        ax.set_xlabel("offered msgs/s")
        ax.set_ylabel("delivered msgs/s")
        ax.grid(True, alpha=0.3)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return True


def _markdown_table(rows: Sequence[Row]) -> str:
    columns: list[str] = []
    for row in rows:
        for key in row:
            if key not in columns and key not in {"figure"}:
                columns.append(key)
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    for row in rows:
        lines.append("| " + " | ".join(_cell(row.get(c)) for c in columns) + " |")
    return "\n".join(lines)


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        text = f"{value:,.0f}" if abs(value) >= 100 else f"{value:.3g}"
    elif isinstance(value, int) and not isinstance(value, bool):
        text = f"{value:,}"
    else:
        text = str(value)
    return text.replace("|", "\\|").replace("\n", " ")


def goals(docs: Sequence[dict[str, Any]]) -> list[Row]:
    """The issue's goals against what the results hold: met, short (with the ratio), or not measured."""
    out: list[Row] = []
    for doc in docs:
        for row in compare(doc["rows"]):
            key = str(row.get("seed") or "")
            if key.startswith("004/") and isinstance(row.get("ratio"), int | float):
                out.append(
                    {
                        "goal": "seed 004 row >= 20x the seed",
                        "row": f"{row.get('flow', key)}",
                        "measured": row.get(row.get("figure") or "msgs_per_sec"),
                        "reference": row.get("seed_figure"),
                        "ratio": row["ratio"],
                        "met": "yes" if row["ratio"] >= 20 else "no",
                    }
                )
    mst_rows = [(doc, r) for doc in docs for r in doc["rows"] if r.get("step") == "MST"]
    for scenario in ("A", "B"):
        ours = [
            r
            for _, r in mst_rows
            if str(r.get("engine", "")).startswith("flowbroker") and r.get("scenario") == scenario
        ]
        peer = [
            r
            for _, r in mst_rows
            if str(r.get("engine", "")).startswith("node-red") and r.get("scenario") == scenario
        ]
        if not ours or not peer:
            out.append({"goal": f"scenario {scenario} >= 1.5x Node-RED msgs/s", "met": "not measured"})
            continue
        a, b = ours[-1], peer[-1]
        ratio = (a.get("msgs_per_sec") or 0) / b["msgs_per_sec"] if b.get("msgs_per_sec") else None
        cpu_a, cpu_b = a.get("cpu_ms_per_msg"), b.get("cpu_ms_per_msg")
        out.append(
            {
                "goal": f"scenario {scenario} >= 1.5x Node-RED msgs/s",
                "row": "MST, one core each",
                "measured": a.get("msgs_per_sec"),
                "reference": b.get("msgs_per_sec"),
                "ratio": round(ratio, 2) if ratio is not None else None,
                "met": "yes" if ratio is not None and ratio >= 1.5 else "no",
                "cpu_ms_per_msg": f"{cpu_a:.3f} vs {cpu_b:.3f}"
                if isinstance(cpu_a, float) and isinstance(cpu_b, float)
                else "",
            }
        )
    flow_mst = [
        r for _, r in mst_rows if "passthrough flow" in str(r.get("engine", "")) and r.get("qos") == "NPNT"
    ]
    out.append(
        {
            "goal": "MST, non-persistent 1 KB through a passthrough flow, with its ramp",
            "measured": flow_mst[-1].get("msgs_per_sec") if flow_mst else None,
            "met": "reported" if flow_mst else "not measured",
        }
    )
    return out


def build(
    results: Sequence[Path],
    output: Path,
    images: Path,
    title: str = "flowbroker benchmarks",
    notes: Path | None = None,
) -> Path:
    """Write the report; returns its path. Raises ValueError naming a bad results file."""
    docs = [load(p) for p in results]
    if not docs:
        raise ValueError("no results files given: run scenarios with --save FILE first")
    images.mkdir(parents=True, exist_ok=True)
    output.parent.mkdir(parents=True, exist_ok=True)
    rel = (
        Path(*([".."] * 0)) / images.relative_to(output.parent)
        if images.is_relative_to(output.parent)
        else images
    )
    plots = []
    for name, make in (
        (
            "rate-vs-message-size.png",
            lambda p: _plot_xy(
                docs, "message_size", "Rate vs message size", "message size (bytes)", p, log_x=True
            ),
        ),
        (
            "rate-vs-subscribers.png",
            lambda p: _plot_xy(docs, "subscribers", "Rate vs subscribers", "subscribers", p, log_x=True),
        ),
        (
            "rate-vs-execution-groups.png",
            lambda p: _plot_xy(docs, "execution_groups", "Rate vs execution groups", "execution groups", p),
        ),
        ("mst-ramps.png", lambda p: _plot_ramps(docs, p)),
    ):
        if make(images / name):
            plots.append(name)
        else:
            (images / name).unlink(missing_ok=True)
    info = docs[0].get("machine") or machine()
    dates = sorted(str(d.get("date", "")) for d in docs if d.get("date"))
    lines = [
        f"# {title}",
        "",
        f"Generated {dt.datetime.now(dt.UTC).isoformat(timespec='seconds')} by `flowbroker bench report` from "
        f"{len(docs)} results file(s) measured {dates[0] if dates else '?'} – {dates[-1] if dates else '?'}.",
        "",
        f"> {BUSY_NOTE}",
        "",
        "## Machine and versions",
        "",
        f"- CPU: {info.get('cpu', '?')} × {info.get('cores', '?')} cores, {info.get('memory_gb', '?')} GB, "
        f"kernel {info.get('kernel', '?')}, load average at the first run {info.get('load_average', '?')}",
    ]
    for name, version in sorted((info.get("versions") or {}).items()):
        lines.append(f"- {name}: {version}")
    lines += ["", "## Goals", "", _markdown_table(goals(docs)), ""]
    if notes is not None:
        try:
            lines += [notes.read_text().rstrip(), ""]
        except OSError as exc:
            raise ValueError(f"cannot read the notes file {notes}: {exc.strerror or exc}") from exc
    lines += ["## Plots", ""]
    if plots:
        for name in plots:
            lines.append(f"![{name[:-4].replace('-', ' ')}]({(rel / name).as_posix()})")
            lines.append("")
    else:
        lines.append("No results carry message sizes, subscribers, execution groups or ramp steps yet.")
    lines += ["", "## Results", ""]
    for doc in docs:
        rows = compare(doc["rows"])
        options = ", ".join(
            f"{k}={v}"
            for k, v in sorted(doc.get("options", {}).items())
            if k not in {"format", "save", "command", "scenario", "compare_seed"} and v not in (None, False)
        )
        lines += [
            f"### {doc['scenario']}",
            "",
            f"Measured {doc.get('date', '?')}; options: {options or 'defaults'}.",
            "",
        ]
        lines.append(_markdown_table(rows) if rows else "(no rows)")
        lines.append("")
    output.write_text("\n".join(lines) + "\n")
    return output


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "results", nargs="+", help="results files written with --save (or directories of them)"
    )
    # no defaults that point into the repository: reading one results file must not replace the
    # committed report and its plots
    parser.add_argument("--output", required=True, help="the Markdown file written (e.g. docs/benchmarks.md)")
    parser.add_argument(
        "--images", default=None, help="directory for the PNG plots (default: img beside --output)"
    )
    parser.add_argument("--title", default="flowbroker benchmarks")
    parser.add_argument(
        "--notes", default=None, help="a Markdown file of method and analysis placed after the goals"
    )


def run(args: argparse.Namespace) -> list[Row]:
    files: list[Path] = []
    for item in args.results:
        path = Path(item)
        if path.is_dir():
            files += sorted(path.glob("*.json"))
        elif path.exists():
            files.append(path)
        else:
            raise ValueError(f"results file {path} does not exist")
    output = Path(args.output)
    images = Path(args.images) if args.images else output.parent / "img"
    out = build(files, output, images, args.title, Path(args.notes) if args.notes else None)
    return [{"report": str(out), "results_files": len(files)}]


SCENARIOS = {
    "report": Scenario(
        "report", "write the Markdown report with PNG plots from saved results files", run, add_arguments
    )
}
