"""A node type's module is the only place that knows the node type: no other module names one.

The compiler, the services, the worker and the designer ask the registry (the spec's role,
``extra`` facts such as "reads the queue its queueName names") instead of branching on type
names. The ACE importer's mapping table translates ACE's type names into ours and is exempt.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from flowbroker_nodes import registry

ROOT = Path(__file__).resolve().parents[1]
PYTHON = (ROOT / "backend" / "flowbroker", ROOT / "esql-parser" / "esql")
FRONTEND = ROOT / "frontend" / "src"
EXEMPT_DIRS = (ROOT / "backend" / "flowbroker" / "importers",)
#: Literals that spell a node type's name but mean something else where they stand.
NOT_NODE_TYPES = {
    ("backend/flowbroker/formats/errors.py", "Label"): "the ExceptionList entry's Label field",
    ("esql-parser/esql/codegen/statements.py", "Database"): "ESQL's Database correlation name",
    ("esql-parser/esql/codegen/expressions.py", "Database"): "ESQL's Database correlation name",
    ("esql-parser/esql/codegen/fieldrefs.py", "Database"): "ESQL's Database correlation name",
    ("frontend/src/designer/ImportDialog.tsx", "Subflow"): "a word of the dialog's text",
    ("backend/flowbroker/services/recorded_cases.py", "Input"): "LocalEnvironment.HTTP.Input's folder name",
}
TS_STRING = re.compile(r"""(['"`])([A-Za-z]+)\1""")
TS_ANY_STRING = re.compile(r"""(['"`])(?:\\.|(?!\1).)*\1""")
#: An object key outside strings (``{ Compute: 'COMPUTE' }``): a per-type table needs no quotes.
TS_KEY = re.compile(r"(?<![\w.?$])([A-Za-z]+)\s*:(?!:)")


def _docstrings(tree: ast.AST) -> set[int]:
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            found.add(id(node.value))
    return found


def _python_literals(path: Path) -> list[tuple[int, str]]:
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    skip = _docstrings(tree)
    return [
        (node.lineno, node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in skip
    ]


def _frontend_literals(path: Path) -> list[tuple[int, str]]:
    found = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        code = line.split("//", 1)[0]
        found.extend((number, match.group(2)) for match in TS_STRING.finditer(code))
        found.extend((number, match.group(1)) for match in TS_KEY.finditer(TS_ANY_STRING.sub('""', code)))
    return found


def _sources() -> list[tuple[Path, list[tuple[int, str]]]]:
    files: list[tuple[Path, list[tuple[int, str]]]] = []
    for package in PYTHON:
        for path in sorted(package.rglob("*.py")):
            if not any(path.is_relative_to(d) for d in EXEMPT_DIRS):
                files.append((path, _python_literals(path)))
    for path in sorted([*FRONTEND.rglob("*.ts"), *FRONTEND.rglob("*.tsx")]):
        if ".test." not in path.name and not path.name.endswith(".d.ts"):
            files.append((path, _frontend_literals(path)))
    return files


def test_no_module_outside_the_node_package_names_a_node_type() -> None:
    types = set(registry.builtin_modules())
    offenders = [
        f"{path.relative_to(ROOT)}:{line} {value!r}"
        for path, literals in _sources()
        for line, value in literals
        if value in types and (str(path.relative_to(ROOT)), value) not in NOT_NODE_TYPES
    ]
    assert offenders == [], "ask the registry (the spec's role or extra) instead of naming:\n" + "\n".join(
        offenders
    )


def test_the_scan_sees_the_literals_it_looks_for(tmp_path: Path) -> None:
    python = tmp_path / "a.py"
    python.write_text('"""MQInput in a docstring is prose."""\nif kind == "MQInput":\n    pass\n')
    script = tmp_path / "a.tsx"
    script.write_text(
        "const t = n.type === 'Label'; // 'Compute' in a comment\n"
        "const KINDS = { Filter: 'FILTER', x: cond ? a : b };\n"
        'const s = "Trace: prose in a string", o = { n: 1 };\n'
    )
    assert _python_literals(python) == [(2, "MQInput")]
    assert [(line, value) for line, value in _frontend_literals(script) if value[0].isupper()] == [
        (1, "Label"),
        (2, "FILTER"),
        (2, "Filter"),
    ]


def test_the_exemptions_still_stand() -> None:
    """An exemption whose literal is gone is removed, so the list does not outlive its reason."""
    present = {(str(path.relative_to(ROOT)), value) for path, literals in _sources() for _, value in literals}
    assert set(NOT_NODE_TYPES) <= present
