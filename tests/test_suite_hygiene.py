"""The suite reports what it does not run: no silent skips on the project's own code, skip reasons printed, CI strict."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TESTS = ROOT / "tests"
# Packages this repository builds, plus what its declared dependencies always install: a failed
# import of one of these is a broken build, never a reason to skip.
INSTALLED = ("flowbroker", "flowbroker_nodes", "esql", "pamqp")


def _importorskip_targets(path: Path) -> list[tuple[int, str]]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "importorskip"
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            found.append((node.lineno, node.args[0].value))
    return found


def test_no_importorskip_on_installed_packages() -> None:
    offenders = [
        f"{path.relative_to(ROOT)}:{line} importorskip({name!r})"
        for path in sorted(TESTS.rglob("*.py"))
        for line, name in _importorskip_targets(path)
        if name.split(".")[0] in INSTALLED
    ]
    assert offenders == [], "import these plainly, a broken import must fail:\n" + "\n".join(offenders)


def test_make_pytest_prints_skip_reasons() -> None:
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    recipe = re.search(r"^pytest:.*\n((?:\t.*\n)+)", makefile, re.MULTILINE)
    assert recipe is not None, "Makefile has no pytest target"
    assert re.search(r"\$\(BIN\)/pytest\b.*\s-rs\b", recipe.group(1)), recipe.group(1)


def test_ci_entry_point_sets_ci_itself() -> None:
    script = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    lines = script.splitlines()
    exports = [i for i, line in enumerate(lines) if line.strip() == "export CI=true"]
    runs = [i for i, line in enumerate(lines) if "make test" in line and not line.lstrip().startswith("#")]
    assert exports and runs and exports[0] < runs[0], "`.ci/run` must export CI=true before `make test`"
