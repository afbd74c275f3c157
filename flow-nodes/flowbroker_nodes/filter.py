"""Filter: evaluates an ESQL FILTER module and routes the message by its answer."""

from __future__ import annotations

from typing import Any

from esql import ast
from esql import runtime as rt
from esql.tree import Element

from flowbroker_nodes.base import Assembly
from flowbroker_nodes.esqlnode import EsqlNode
from flowbroker_nodes.spec import NodeSpec, Property, Terminal

SPEC = NodeSpec(
    type="Filter",
    label="Filter",
    extra={"esqlProperty": "esql", "esqlModule": "FILTER"},
    category="routing",
    icon="filter",
    description="Main() returning TRUE, FALSE or UNKNOWN sends the unchanged message to the true, false or "
    "unknown terminal.",
    inputs=(Terminal("in", "in", "In"),),
    outputs=(
        Terminal("true", "out", "True"),
        Terminal("false", "out", "False"),
        Terminal("unknown", "out", "Unknown"),
        Terminal("failure", "failure", "Failure"),
    ),
    properties=(
        Property(
            "esql",
            "esql",
            "ESQL",
            required=True,
            editor="esql",
            description="A CREATE FILTER MODULE, or an MQSI V2 filter expression.",
        ),
        Property("module", "string", "Module", default=""),
        Property("dataSource", "string", "Data source", default=""),
        Property("externals", "json", "EXTERNAL variables", default={}),
    ),
)

#: The most header contents whose answers one node keeps (a stream of messages nearly always
#: repeats one header; a stream that does not just clears the memo now and then).
_MEMO_LIMIT = 64

#: Expressions whose value depends on their operands' values alone (no function, no variable).
_PURE = (ast.Compare, ast.AndOp, ast.OrOp, ast.NotOp, ast.IsTest, ast.Paren)
_LITERALS = (ast.StringLit, ast.IntLit, ast.BoolLit, ast.NullLit)


def _header_path(ref: ast.FieldRef) -> bool:
    """Whether ``ref`` is ``Root.<header>.name.name…``: plain names, no index, type or namespace."""
    start = ref.start
    if start.index is not None or not isinstance(start.name, ast.Ident) or start.name.name != "Root":
        return False
    for elem in ref.elems:
        if elem.type_qual is not None or elem.index is not None or elem.step.prefix is not None:
            return False
        if not isinstance(elem.step.name, ast.Ident):
            return False
    return bool(ref.elems)


def _reads_only(expr: ast.Node, header: str) -> bool:
    """Whether ``expr`` is made of comparisons, logic and literals over paths below ``Root.<header>``."""
    if isinstance(expr, _LITERALS):
        return True
    if isinstance(expr, ast.FieldRef):
        first = expr.elems[0].step.name if expr.elems else None
        return _header_path(expr) and isinstance(first, ast.Ident) and first.name == header
    if isinstance(expr, _PURE):
        kids = [getattr(expr, name) for name in expr.field_names()]
        return all(kid is None or isinstance(kid, ast.Keyword) or _reads_only(kid, header) for kid in kids)
    return False


def _only_statement(item: ast.Node) -> ast.Node | None:
    """The program's one statement: a bare one, or the only one of the Main() of a FILTER module
    that holds nothing else (no parameters, variables or other routines)."""
    if not isinstance(item, ast.ModuleDef):
        return item
    if str(item.module_type).upper() != "FILTER" or len(item.items) != 1:
        return None
    main = item.items[0]
    if not isinstance(main, ast.RoutineDef) or main.params or not isinstance(main.name, ast.Ident):
        return None
    if main.name.name != "Main" or not isinstance(main.body, ast.EsqlBody):
        return None
    body = main.body.body
    if isinstance(body, ast.BeginStmt):
        if body.atomic is not None or len(body.body.body) != 1:
            return None
        return body.body.body[0]
    return body


def header_only_folder(source: str) -> str | None:
    """``MQRFH2`` when the program is one ``RETURN`` (bare, or all a FILTER module's Main() does)
    of an expression that reads nothing but fields
    below ``Root.MQRFH2`` (comparisons, AND/OR/NOT, IS, literals): its answer is then one for all
    messages whose header has the same content. None for any other program."""
    from esql.parser import parse

    try:
        tree = parse(source, "filter.esql").tree
    except Exception:  # the compiler reports it; this is only a check
        return None
    items = getattr(tree, "items", None)
    if not items or len(items) != 1:
        return None
    statement = _only_statement(items[0])
    if not isinstance(statement, ast.ReturnStmt):
        return None
    value = statement.value
    if value is None or not _reads_only(value, "MQRFH2"):
        return None
    return "MQRFH2"


class Node(EsqlNode):
    """Routes the unchanged message by Main()'s three-valued answer."""

    SPEC = SPEC
    KIND = SPEC.esql_module
    #: the header folder the program alone reads (see :func:`header_only_folder`), else None
    header: str | None = None

    def prepare(self) -> None:
        super().prepare()
        props = self.properties
        self.header = None
        if not props.get("module") and not props.get("dataSource"):
            self.header = header_only_folder(props.get("esql") or "")
        #: terminal by the content key of an unread header (see :meth:`_memo_key`)
        self.memo: dict[Any, str] = {}

    def _memo_key(self, root: Element) -> Any:
        """What the answer depends on when the header the program reads is still unparsed
        content whose parser names what its fill depends on alone; else None."""
        header = rt.child(root, self.header) if self.header is not None else None
        if header is None or header.value is not None:
            return None
        lazy = header.lazy
        if lazy is None:
            return None
        content_key = getattr(lazy.parser, "content_key", None)
        if content_key is None:
            return None
        return (header.type, content_key(lazy))

    def evaluate(self, assembly: Assembly, terminal: str) -> None:
        key = self._memo_key(assembly.root) if self.header is not None else None
        if key is not None:
            known = self.memo.get(key)
            if known is not None:
                # the same header content gave this answer before: the program reads nothing
                # else, so it gives it again, and the header stays unparsed for the output
                self.propagate(known, assembly)
                return
        # One node invocation: CURRENT_… give one moment, SLEEP and INSTANCESTOPPING see a stop.
        # The context is the one the last invocation on this thread gave back, renewed (a filter
        # builds no output tree: the Root it is given is never sent on).
        ctx = self.reused_context(assembly, Element("Root"), None)
        result = self.run_routine(ctx, invocation=True)
        self.context_done(ctx)
        answer = "true" if result is True else "false" if result is False else "unknown"
        if key is not None:
            if len(self.memo) >= _MEMO_LIMIT:
                self.memo.clear()
            self.memo[key] = answer
        self.propagate(answer, assembly)
