"""Route: sends the message to the output terminals whose filter expressions it matches.

As ACE's Route node, with ESQL expressions where ACE has XPath: each row of the filter table
pairs an expression over the message assembly (Root, LocalEnvironment, Environment,
ExceptionList) with the output terminal it routes to. Distribution mode ``all`` sends the
message to the terminal of every row that is TRUE, ``first`` to that of the first such row;
when no row is TRUE the message goes to ``default``. Every expression the mode needs is
evaluated before anything is propagated, so a failing expression routes nothing but the
failure. The node starts with one dynamic terminal, ``match``; the table names the others.
"""

from __future__ import annotations

import re
from typing import Any

from esql.functions import invocation

from flowbroker_nodes.base import Assembly, DeployProblem, NodeError
from flowbroker_nodes.esqlnode import EsqlNode
from flowbroker_nodes.spec import NodeSpec, Property, Terminal

SPEC = NodeSpec(
    type="Route",
    label="Route",
    category="routing",
    icon="route",
    description="Evaluates each filter expression of its table against the message and propagates the "
    "unchanged message to the terminal of every matching row (distribution mode all) or of the first "
    "(first); to default when none matches.",
    inputs=(Terminal("in", "in", "In"),),
    outputs=(
        Terminal("match", "out", "Match"),
        Terminal("default", "out", "Default"),
        Terminal("failure", "failure", "Failure"),
    ),
    properties=(
        Property(
            "filterTable",
            "json",
            "Filter table",
            default=[],
            description='Rows {"filterPattern": ESQL expression, "routingOutputTerminal": terminal name}, '
            "in evaluation order; an expression is TRUE, FALSE or UNKNOWN (only TRUE matches), e.g. "
            "Root.XMLNSC.order.total > 100 or LocalEnvironment.Variables.kind = 'A'.",
        ),
        Property(
            "distributionMode",
            "enum",
            "Distribution mode",
            default="all",
            enum=("all", "first"),
            description="all: to the terminal of every matching row; first: only to that of the first one.",
        ),
    ),
    extra={"outputTerminalsFrom": {"property": "filterTable", "key": "routingOutputTerminal"}},
)

#: Lines of the filter module before the expression, which starts in column 1.
_PREFIX = "CREATE FILTER MODULE RouteFilter\nCREATE FUNCTION Main() RETURNS BOOLEAN\nBEGIN\nRETURN\n"
_SUFFIX = "\n;\nEND;\nEND MODULE;\n"
_LINE_OFFSET = _PREFIX.count("\n")
_TERMINAL_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_.-]{0,63}$")
_RESERVED = {"default", "failure", "in"}


class _Row:
    __slots__ = ("expression", "index", "routine", "terminal")

    def __init__(self, index: int, expression: str, terminal: str, routine: Any) -> None:
        self.index = index
        self.expression = expression
        self.terminal = terminal
        self.routine = routine


class Node(EsqlNode):
    """Evaluates the filter table's expressions and routes the unchanged message."""

    SPEC = SPEC
    KIND = "FILTER"

    def prepare(self) -> None:
        from esql.compiler import EsqlCompileError, compile_program

        table = self.properties.get("filterTable")
        if table in (None, ""):
            table = []
        if not isinstance(table, list):
            raise DeployProblem("the filter table must be a list of rows", property="filterTable")
        problems: list[DeployProblem] = []
        rows: list[_Row] = []
        for index, row in enumerate(table, 1):
            where = f"filter table row {index}"
            if not isinstance(row, dict):
                problems.append(DeployProblem(f"{where}: must be an object", property="filterTable"))
                continue
            expression = row.get("filterPattern")
            terminal = row.get("routingOutputTerminal")
            if not isinstance(expression, str) or not expression.strip():
                problems.append(DeployProblem(f"{where}: required: filterPattern", property="filterTable"))
                continue
            if not isinstance(terminal, str) or not _TERMINAL_RE.match(terminal) or terminal in _RESERVED:
                problems.append(
                    DeployProblem(
                        f"{where}: routingOutputTerminal must name an output terminal (letters, digits, "
                        f"_ . -; not default, failure or in), got {terminal!r}",
                        property="filterTable",
                    )
                )
                continue
            try:
                program = compile_program(
                    _PREFIX + expression + _SUFFIX, filename=f"{self.id}.route{index}.esql"
                )
                routine = program.main_module(kind="FILTER")
            except EsqlCompileError as exc:
                for d in getattr(exc, "diagnostics", []) or []:
                    if getattr(d, "severity", "error") != "error":
                        continue
                    lines = expression.count("\n") + 1
                    line = min(max(int(d.line or 0) - _LINE_OFFSET, 1), lines)
                    problems.append(
                        DeployProblem(
                            f"{where} ({expression.strip()!r}): {d.message}",
                            property="filterTable",
                            line=line,
                            column=int(d.column or 0) if line == int(d.line or 0) - _LINE_OFFSET else 0,
                        )
                    )
                if not getattr(exc, "diagnostics", None):
                    problems.append(DeployProblem(f"{where}: {exc}", property="filterTable"))
                continue
            rows.append(_Row(index, expression, terminal, routine))
        if problems:
            first = problems[0]
            first.more = problems[1:]
            raise first
        self.rows = rows
        self.first_only = self.properties.get("distributionMode") == "first"

    def evaluate(self, assembly: Assembly, terminal: str) -> None:
        targets: list[str] = []
        with invocation(stop=self.flow.stop):
            for row in self.rows:
                try:
                    matched = row.routine.run(self.context(assembly)) is True
                except Exception as exc:
                    raise NodeError(
                        f"Route filter table row {row.index} ({row.expression.strip()!r}) failed: {exc}",
                        number=2488,
                        inserts=(row.index, row.expression.strip()),
                    ) from exc
                if matched:
                    if row.terminal not in targets:
                        targets.append(row.terminal)
                    if self.first_only:
                        break
        for name in targets or ["default"]:
            self.propagate(name, assembly)
