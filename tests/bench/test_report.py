"""`flowbroker bench report` from results files: Markdown, PNG plots, machine and versions; bad files named."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from flowbroker.cli import main
from flowbroker_bench import report, results


def _results(tmp_path: Path) -> list[Path]:
    sizes = {
        "scenario": "flow-io",
        "date": "2026-11-22T07:00:00+00:00",
        "options": {"window": 20},
        "machine": results.machine(),
        "rows": [
            {"flow": "MQInput->MQOutput", "message_size": s, "seed": f"004/7.1/np-{s}", "msgs_per_sec": r}
            for s, r in ((1024, 30000.0), (4096, 25000.0), (16384, 12000.0), (65536, 3000.0))
        ]
        + [{"flow": "pub", "subscribers": n, "msgs_per_sec": 9000.0 / n} for n in (1, 10, 100)]
        + [{"flow": "vcc", "execution_groups": n, "msgs_per_sec": 700.0 * n} for n in (1, 2, 4)],
    }
    ramp = {
        "scenario": "peers-nodered",
        "date": "2026-11-22T07:10:00+00:00",
        "rows": [
            {
                "engine": "node-red",
                "scenario": "A",
                "step": "ramp",
                "offered_rate": r,
                "msgs_per_sec": d,
                "sustainable": ok,
            }
            for r, d, ok in ((8000, 8000, "yes"), (12000, 12000, "yes"), (18000, 15000, "no: backlog grows"))
        ]
        + [
            {
                "engine": "node-red",
                "scenario": "A",
                "step": "MST",
                "offered_rate": 12000,
                "msgs_per_sec": 12000,
            }
        ],
    }
    paths = []
    for name, doc in (("a.json", sizes), ("b.json", ramp)):
        path = tmp_path / name
        path.write_text(json.dumps(doc))
        paths.append(path)
    return paths


@pytest.mark.timeout(120)
def test_report_writes_markdown_and_plots(tmp_path: Path) -> None:
    files = _results(tmp_path)
    out = report.build(files, tmp_path / "docs" / "benchmarks.md", tmp_path / "docs" / "img")
    text = out.read_text()
    for name in ("rate-vs-message-size", "rate-vs-subscribers", "rate-vs-execution-groups", "mst-ramps"):
        png = tmp_path / "docs" / "img" / f"{name}.png"
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert f"(img/{name}.png)" in text
    assert "## Machine and versions" in text and "python:" in text
    assert "comparisons hold only between rows measured in the same run" in text
    assert "| flow | message_size | seed | msgs_per_sec | seed_figure | seed_unit | ratio |" in text
    assert "| MQInput->MQOutput | 1,024 | 004/7.1/np-1024 | 30,000 | 1,511 |" in text


def test_a_bad_results_file_is_named_with_line_and_column(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"scenario": "x",\n "rows": [1,,]}')
    with pytest.raises(ValueError, match=r"bad\.json:2:13: not a results file"):
        results.load(bad)
    other = tmp_path / "other.json"
    other.write_text('{"rows": []}')
    with pytest.raises(ValueError, match="no 'scenario'"):
        results.load(other)


def test_cli_report_and_save_round_trip(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    saved = tmp_path / "r" / "seed.json"
    assert main(["bench", "seed-table", "004/7.1", "--format", "csv", "--save", str(saved)]) == 0
    assert capsys.readouterr().out.startswith("seed,persistence,message_size,msgs_per_sec")
    assert results.load(saved)["scenario"] == "seed-table"
    status = main(["bench", "report", str(tmp_path / "missing.json"), "--output", str(tmp_path / "x.md")])
    assert status == 1
    assert "results file" in capsys.readouterr().err
    assert main(["bench", "seed-table", "004/7.1/np-1024"]) == 1  # a row key is not a table
    # where the report goes is always said: a stray call never replaces the committed one
    with pytest.raises(SystemExit) as usage:
        main(["bench", "report", str(saved)])
    assert usage.value.code == 2 and "--output" in capsys.readouterr().err
    assert main(["bench", "report", str(saved), "--output", str(tmp_path / "out" / "r.md")]) == 0
    assert (tmp_path / "out" / "r.md").is_file() and (tmp_path / "out" / "img").is_dir()


def _seed004_rows() -> list[dict[str, object]]:
    """Rows as `bench seed004` writes them: Appendix B columns, sweeps keyed by subscribers and groups."""
    rows: list[dict[str, object]] = []
    for size, rate in ((1024, 12000.0), (4096, 11000.0), (65536, 6000.0)):
        rows.append(
            {
                "case": "passthrough",
                "flow": "MQInput/MQOutput",
                "persistence": "np",
                "message_size": size,
                "Msgs/Sec": rate,
                "seed": f"004/7.1/np-{size}",
                "figure": "Msgs/Sec",
            }
        )
    for n in (1, 10, 100):
        rows.append(
            {
                "case": f"subscribers-{n}",
                "flow": f"Publication, {n} subscribers",
                "persistence": "np",
                "message_size": 1024,
                "subscribers": n,
                "Msgs/Sec": 6000.0 / n,
                "seed": f"004/7.11-sub{n}/np-1024",
                "figure": "Msgs/Sec",
            }
        )
    for n in (1, 2, 4):
        rows.append(
            {
                "case": f"groups-{n}",
                "flow": f"Very complex compute, {n} execution groups",
                "persistence": "np",
                "message_size": 4096,
                "execution_groups": n,
                "Msgs/Sec": 400.0 * n,
                "seed": f"004/7.8-eg{n}/np-4096",
                "figure": "Msgs/Sec",
            }
        )
    rows.append(
        {
            "case": "convert-cwf-cwf",
            "flow": "Convert CWF to CWF",
            "persistence": "np",
            "message_size": 4096,
            "Msgs/Sec": None,
            "seed": "004/7.6-cwf-cwf/np-4096",
            "figure": "Msgs/Sec",
            "note": "not measured: no reply on FB.OUT within 10s",
        }
    )
    return rows


def test_report_plots_seed004_sweeps_one_line_per_size(tmp_path: Path) -> None:
    doc = {"scenario": "seed004", "date": "2026-11-25T07:00:00+00:00", "rows": _seed004_rows()}
    path = tmp_path / "seed004.json"
    path.write_text(json.dumps(doc))
    out = report.build([path], tmp_path / "bench.md", tmp_path / "img")
    text = out.read_text()
    for name in ("rate-vs-message-size", "rate-vs-subscribers", "rate-vs-execution-groups"):
        assert (tmp_path / "img" / f"{name}.png").read_bytes()[:4] == b"\x89PNG"
    assert "| passthrough | MQInput/MQOutput | np | 1,024 | 12,000 | 004/7.1/np-1024 |" in text
    assert "not measured: no reply on FB.OUT within 10s" in text
    sweep = [r for r in doc["rows"] if "subscribers" in r]
    labels = {report._series_label(doc, r, "subscribers") for r in sweep}
    assert labels == {"seed004 / np / 1,024 B"}
    assert report._series_label(doc, sweep[0]) == "seed004 / np / Publication, 1 subscribers"
