"""Subcommands of other distributions: the ``flowbroker.commands`` entry-point group of the CLI.

``flowbroker bench`` comes from the ``flowbroker-bench`` distribution (``bench/``); a run
without that distribution gets a one-line hint, and a plug-in that cannot be loaded is refused
with a logged error while every other subcommand keeps working.
"""

from __future__ import annotations

import importlib
import logging
import subprocess
import sys
import sysconfig
from collections.abc import Callable, Iterator
from importlib.metadata import entry_points
from pathlib import Path

import pytest
from flowbroker import cli

ROOT = Path(__file__).resolve().parents[1]

Install = Callable[[str, dict[str, str], dict[str, str]], None]


@pytest.fixture
def install(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Install]:
    """``install(name, {entry point: module}, {module: source})``: a distribution on sys.path."""
    site = tmp_path / "site-packages"
    site.mkdir()
    monkeypatch.syspath_prepend(str(site))
    modules: list[str] = []

    def install(name: str, points: dict[str, str], sources: dict[str, str]) -> None:
        info = site / f"{name.replace('-', '_')}-1.0.0.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0.0\n")
        lines = "".join(f"{point} = {module}\n" for point, module in points.items())
        (info / "entry_points.txt").write_text(f"[{cli.PLUGIN_GROUP}]\n{lines}")
        for module, source in sources.items():
            (site / f"{module}.py").write_text(source)
            modules.append(module)
        importlib.invalidate_caches()

    yield install
    for module in modules:
        sys.modules.pop(module, None)


def test_bench_is_the_plugin_of_the_bench_distribution() -> None:
    points = [p for p in entry_points(group=cli.PLUGIN_GROUP) if p.name == "bench"]
    assert [(p.value, p.dist.name if p.dist else None) for p in points] == [
        ("flowbroker_bench.command", "flowbroker-bench")
    ]
    result = subprocess.run(
        [sys.executable, "-m", "flowbroker.cli", "bench", "--help"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert "seed004" in result.stdout and "peers-nodered" in result.stdout


def test_without_the_bench_distribution_bench_says_how_to_install_it(tmp_path: Path) -> None:
    # The same environment minus flowbroker-bench: every other entry of site-packages, and the
    # source trees of the three product packages, on a path without the site machinery.
    site = Path(sysconfig.get_paths()["purelib"])
    bare = tmp_path / "site"
    bare.mkdir()
    for entry in site.iterdir():
        if "flowbroker_bench" not in entry.name:
            (bare / entry.name).symlink_to(entry)
    path = [str(bare), str(ROOT / "backend"), str(ROOT / "flow-nodes"), str(ROOT / "esql-parser")]
    env = {"PYTHONPATH": ":".join(path), "PATH": "/usr/bin:/bin"}
    run = [sys.executable, "-S", "-m", "flowbroker.cli"]

    result = subprocess.run(
        [*run, "bench", "seed004", "--compare-seed"], capture_output=True, text=True, env=env
    )
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    assert result.stderr.strip() == (
        "flowbroker: error: bench: the performance harness is not installed: run `make setup` in the "
        "source tree, or `pip install -e ./bench` into this environment"
    )
    listed = subprocess.run([*run, "--help"], capture_output=True, text=True, env=env)
    assert listed.returncode == 0 and "(not installed)" in listed.stdout
    other = subprocess.run([*run, "esql", "--help"], capture_output=True, text=True, env=env)
    assert other.returncode == 0, other.stderr


def test_a_broken_or_clashing_plugin_is_refused_and_the_rest_works(
    install: Install, caplog: pytest.LogCaptureFixture
) -> None:
    install(
        "broken-commands",
        {"broken": "broken_command", "qm": "clashing_command", "hello": "hello_command"},
        {
            "broken_command": "raise ImportError('no module named nowhere')\n",
            "clashing_command": "def register(sub):\n    sub.add_parser('qm')\n",
            "hello_command": (
                "def register(sub):\n"
                "    p = sub.add_parser('hello')\n"
                "    p.set_defaults(func=lambda args: print('hello from a plug-in') or 3)\n"
            ),
        },
    )
    with caplog.at_level(logging.ERROR, logger="flowbroker.cli"):
        parser = cli.build_parser()
    refusals = [r.getMessage() for r in caplog.records if r.name == "flowbroker.cli"]
    assert len(refusals) == 2, refusals
    broken = next(m for m in refusals if "entry point broken" in m)
    assert "distribution broken-commands 1.0.0" in broken
    assert "ImportError: no module named nowhere" in broken
    assert any("entry point qm" in m and "subcommand 'qm' is already taken" in m for m in refusals)
    with pytest.raises(SystemExit):
        parser.parse_args(["broken"])
    # The working plug-in's subcommand runs beside the built-in ones.
    assert cli.main(["hello"]) == 3
    assert parser.parse_args(["hello"]).command == "hello"
