"""The generator's state and diagnostics, which every section of the generator shares.

Each section (statements, expressions, field references, the program) is a class the Generator
combines; the methods one section calls on another are declared here for the type checker.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from esql import ast
from esql.ast import Node, position
from esql.codegen.model import (
    Emitter,
    EvalSite,
    LoopFrame,
    Module,
    Routine,
    SqlScope,
    Unit,
    Var,
)
from esql.diagnostics import Diagnostic


class GeneratorBase:
    """The state of one generation run and the helpers every section uses."""

    def __init__(self, units: list[Unit], strict: bool = True) -> None:
        self.units = units
        self.strict = strict
        self.diagnostics: list[Diagnostic] = []
        self.out = Emitter()
        self.modules: dict[str, Module] = {}
        self.schema_routines: dict[str, dict[str, Routine]] = {}
        self.schema_vars: dict[str, dict[str, Var]] = {}
        self.schema_var_nodes: list[tuple[Unit, ast.Declare]] = []
        self.counter = 0
        self.functions_env: dict[str, Any] = {}
        self.used_functions: set[str] = set()
        self.constants: dict[str, Any] = {}
        self.filename = ""
        self.scopes: list[dict[str, Var]] = []
        self.loops: list[LoopFrame] = []
        self.routine: Routine | None = None
        self.module: Module | None = None
        self.unit: Unit | None = None
        self.in_handler = 0
        self.handler_exc: list[str] = []
        self.continue_stack: list[tuple[list[ast.Handler], list[list[ast.Handler]], int]] = []
        #: EXIT handlers whose region is being generated, outermost first: a CONTINUE handler of an
        #: outer scope leaves an exception to one of them declared in an inner scope
        self.exit_regions: list[list[ast.Handler]] = []
        self.pre: list[list[str]] = []
        self.bare = False
        self.function_globals: list[set[str]] = []
        #: schema and module level normal variables: (file, unit, module, scopes, DECLARE, variable)
        self.message_vars: list[tuple[str, Any, Any, list[dict[str, Var]], ast.Declare, Var]] = []
        self.function_starts: list[int] = []
        self.fresh_prefix = ""  # EVAL code names its temporaries apart from the program's
        self.depth = 0  # expression nesting of the expression being generated (parentheses aside)
        self.raw_depth = 0
        self.too_deep = False
        self.statement_depth = 0
        #: the shared path prefixes of the WHILE loop being generated (see codegen.pathcache)
        self.prefix_cache: Any = None

    # ------------------------------------------------------------------ diagnostics

    def error(self, node: Any, message: str, severity: str = "error") -> None:
        line, col = position(node)
        self.diagnostics.append(Diagnostic(self.filename, line, col, message, severity))

    def fresh(self, stem: str = "_t") -> str:
        self.counter += 1
        return f"{stem}{self.fresh_prefix}{self.counter}"

    def const(self, value: Any) -> str:
        """A module-level constant holding ``value`` (for values with no Python literal form)."""
        if value is None or isinstance(value, (bool, int, str, float)):
            return repr(value)
        key = self.fresh("_k")
        self.constants[key] = value
        return key

    if TYPE_CHECKING:
        # ---------------------------------------------- offered by the other sections

        def base_scopes(self) -> list[dict[str, Var]]: ...
        def begin_function(self) -> None: ...
        def builtin(self, node: Node, name: str, codes: list[str], nargs: int) -> str: ...
        def condition(self, expr: Node) -> str: ...
        def correlation_available(self, where: Any, name: str) -> bool: ...
        def db_scope(self, *aliases: str) -> None: ...
        def db_table(self, fieldref: ast.FieldRef, what: str = "table") -> str: ...
        def dotted(self, fieldref: ast.FieldRef) -> str: ...
        def element(
            self, node: ast.FieldRef, upto: int | None = None, base: tuple[str, int] | None = None
        ) -> str: ...
        def element_list(self, node: Node) -> str: ...
        def element_or_value(self, node: Node) -> str: ...
        def end_function(self) -> None: ...
        def eval_site(self) -> EvalSite: ...
        def expr(self, node: Any) -> tuple[str, str]: ...
        @staticmethod
        def has_list_before_last(node: ast.FieldRef) -> bool: ...
        @staticmethod
        def is_list(node: ast.FieldRef) -> bool: ...
        def last_part(self, fieldref: ast.FieldRef) -> str: ...
        def lookup(self, name: str) -> Var | None: ...
        def passthru_call(self, node: Node) -> str: ...
        def positional_opts(self, node: ast.PositionalOpts, what: str) -> dict[str, str]: ...
        def resolve_routine(self, node: Node, fieldref: ast.FieldRef) -> Routine | None: ...
        def root_code(self, node: ast.FieldRef) -> str: ...
        def routine_call(
            self, routine: Routine, args: list[Node], node: Node, qualifier: Any = None
        ) -> str: ...
        def member_target(self, node: ast.FieldRef) -> tuple[str, str] | None: ...
        def cached_walk(
            self, node: ast.FieldRef, elems: list[ast.PathElem], upto: int | None, create: bool
        ) -> tuple[str, int] | None: ...
        def loop_prefixes(self, node: ast.WhileStmt) -> Any: ...
        def prefix_resets(self, stmt: Node) -> None: ...
        def prefix_root(self, node: ast.FieldRef) -> str | None: ...
        def disjoint_paths(self, a: ast.FieldRef, b: ast.FieldRef) -> bool: ...
        def scalar(self, node: Node) -> str: ...
        def sql(self, node: Node, scope: SqlScope) -> str: ...
        def statements(self, stmts: list[Any], handlers: list[ast.Handler] | None = None) -> None: ...
        def step_parts(self, elem: ast.PathElem) -> tuple[str, str, str]: ...
        def target(
            self, node: ast.FieldRef, upto: int | None = None, base: tuple[str, int] | None = None
        ) -> str: ...
        def to_scalar(self, kind: str, code: str) -> str: ...
        def typed(self, type_name: str, expr: Node) -> str: ...
        def unresolved(self, node: Any, name: str) -> None: ...
        @property
        def values(self) -> Any: ...
        def var_for_declare(self, name: str, node: ast.Declare, level: int, global_: bool) -> Var: ...
