"""Code generation: ESQL syntax trees to straight-line Python source over the runtime helpers.

Every user identifier is mangled (``v_``/``f_`` prefixes plus an escape of odd characters) so it
can never name a Python built-in or a helper; helpers are ``_``-prefixed names that the compiler
puts into the restricted globals of the generated module. Names are resolved here, once: a
variable becomes a Python local, a correlation name a context attribute, a path a chain of
navigation calls. Name and arity problems are reported as diagnostics while generating.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from esql import ast, checks
from esql.ast import Node, ident, keyword, left_chain, position, string_value
from esql.diagnostics import Diagnostic
from esql.runtime import FIELD_TYPES

CORRELATION = {
    "InputRoot": "ctx.input_root",
    "OutputRoot": "ctx.output_root",
    "InputLocalEnvironment": "ctx.input_local_environment",
    "OutputLocalEnvironment": "ctx.output_local_environment",
    "Environment": "ctx.environment",
    "InputExceptionList": "ctx.input_exception_list",
    "OutputExceptionList": "ctx.output_exception_list",
    "InputDestinationList": "ctx.input_local_environment",
    "OutputDestinationList": "ctx.output_local_environment",
    "InputBody": "ctx.input_root.last_child",
    "InputProperties": "_child(ctx.input_root, 'Properties')",
    "Root": "ctx.input_root",
    "Body": "ctx.input_root.last_child",
    "Properties": "_child(ctx.input_root, 'Properties')",
    "LocalEnvironment": "ctx.input_local_environment",
    "DestinationList": "ctx.input_local_environment",
    "ExceptionList": "ctx.input_exception_list",
}
WRITABLE_ROOTS = {
    "OutputRoot",
    "OutputLocalEnvironment",
    "Environment",
    "OutputExceptionList",
    "OutputDestinationList",
    "LocalEnvironment",
    "Root",
    "ExceptionList",
    "DestinationList",
    "InputLocalEnvironment",
}
#: The correlation names of each node kind (IBM): a Compute node sees input and output trees,
#: Filter and Database nodes one message, of which only the environments can change.
COMPUTE_NAMES = frozenset(
    {
        "InputRoot",
        "InputBody",
        "InputProperties",
        "InputLocalEnvironment",
        "InputDestinationList",
        "InputExceptionList",
        "Environment",
        "OutputRoot",
        "OutputLocalEnvironment",
        "OutputDestinationList",
        "OutputExceptionList",
    }
)
SINGLE_MESSAGE_NAMES = frozenset(
    {"Root", "Body", "Properties", "LocalEnvironment", "DestinationList", "ExceptionList", "Environment"}
)
SINGLE_MESSAGE_WRITABLE = frozenset({"LocalEnvironment", "DestinationList", "Environment"})
SQL_STATE = {
    "SQLCODE": "ctx.sqlcode",
    "SQLSTATE": "ctx.sqlstate",
    "SQLERRORTEXT": "ctx.sqlerrortext",
    "SQLNATIVEERROR": "ctx.sqlnativeerror",
}
BROKER_PROPERTIES = {
    "BrokerName",
    "QueueManagerName",
    "NodeLabel",
    "MessageFlowLabel",
    "ApplicationLabel",
    "LibraryLabel",
    "ExecutionGroupLabel",
    "ExecutionGroupName",
    "BrokerVersion",
    "BrokerUserId",
    "BrokerDataSource",
    "Family",
    "ProcessId",
    "WorkPath",
    "CommitCount",
    "CommitInterval",
    "CoordinatedTransaction",
    "DataSource",
    "DataSourceUserId",
    "NodeType",
    "ThreadId",
}
BARE_FUNCTIONS = {
    "CURRENT_DATE",
    "CURRENT_TIME",
    "CURRENT_TIMESTAMP",
    "CURRENT_GMTDATE",
    "CURRENT_GMTTIME",
    "CURRENT_GMTTIMESTAMP",
    "LOCAL_TIMEZONE",
    "UUIDASCHAR",
    "UUIDASBLOB",
}
CONSTANTS: dict[str, Any] = {
    "MQPER_NOT_PERSISTENT": 0,
    "MQPER_PERSISTENT": 1,
    "MQPER_PERSISTENCE_AS_Q_DEF": 2,
    "MQMT_REQUEST": 1,
    "MQMT_REPLY": 2,
    "MQMT_DATAGRAM": 8,
    "MQMT_REPORT": 4,
    "MQEI_UNLIMITED": -1,
    "MQMD_CURRENT_VERSION": 2,
    "MQMD_STRUC_ID": "MD  ",
    "MQRO_NONE": 0,
    "MQRO_PASS_MSG_ID": 128,
    "MQRO_PASS_CORREL_ID": 64,
    "MQFMT_NONE": "        ",
    "MQFMT_STRING": "MQSTR   ",
    "MQFMT_RF_HEADER_2": "MQHRF2  ",
    "MQFMT_ADMIN": "MQADMIN ",
    "MQCCSI_Q_MGR": 0,
    "MQENC_NATIVE": 546,
    "RootBitStream": 0,
    "FolderBitStream": 0x00010000,
    "EmbeddedBitStream": 0x00020000,
    "ValidateNone": 0,
    "ValidateContentAndValue": 0x00300000,
    "ValidateContent": 0x00200000,
    "ValidateValue": 0x00100000,
    "ValidateImmediate": 0x00000400,
    "ValidateDeferred": 0x00000200,
    "ValidateComplete": 0x00000800,
    "ValidateException": 0x00000010,
    "ValidateLocalError": 0x00000020,
}
FIELD_FUNCTIONS = {"FIELDNAME", "FIELDNAMESPACE", "FIELDTYPE", "FIELDVALUE", "SAMEFIELD", "BITSTREAM"}
TREE_BUILTINS = {"CARDINALITY", "EXISTS", "SINGULAR", "LASTMOVE", "THE", "COALESCE", "NULLIF", "ASBITSTREAM"}
AGGREGATES = {"COUNT", "MAX", "MIN", "SUM"}
BINOPS = {"+": "_add", "-": "_sub", "*": "_mul", "/": "_div"}
COMPARE = {"=": "_eq", "<>": "_ne", "<": "_lt", "<=": "_le", ">": "_gt", ">=": "_ge"}


#: Operators chained this long are generated flat (see Generator.fold).
FLAT_CHAIN = 16
#: How deeply expressions and statements may nest: each level costs the generated Python a few
#: parentheses or an indentation level, and Python allows 200 and 100 of those.
MAX_NESTING = 64
MAX_STATEMENT_NESTING = 30


#: ESQL functions that translate to SQL inside database statements: name → (min, max) arguments.
SQL_FUNCTIONS = {
    "UPPER": (1, 1),
    "UCASE": (1, 1),
    "LOWER": (1, 1),
    "LCASE": (1, 1),
    "LENGTH": (1, 1),
    "CHARACTER_LENGTH": (1, 1),
    "CHAR_LENGTH": (1, 1),
    "ABS": (1, 1),
    "ABSVAL": (1, 1),
    "COALESCE": (1, 99),
    "NULLIF": (2, 2),
    "LTRIM": (1, 1),
    "RTRIM": (1, 1),
    "TRIM": (1, 1),
    "REPLACE": (2, 3),
    "ROUND": (1, 2),
    "MOD": (2, 2),
    "LEFT": (2, 2),
    "RIGHT": (2, 2),
}
#: Types CAST(column AS …) can give inside a database statement.
SQL_CASTS = ("INTEGER", "DECIMAL", "FLOAT", "CHARACTER", "DATE", "TIMESTAMP", "TIME", "BLOB")
SQL_NAMES = {
    "call": "this function",
    "case_expr": "this CASE",
    "cast_expr": "this CAST",
    "is_test": "this IS test",
    "select_expr": "a nested SELECT",
    "quantified": "a quantified predicate",
}


class SqlScope:
    """The tables of one database statement: their aliases and the columns the statement uses."""

    def __init__(self, aliases: list[str], qualified: bool = False) -> None:
        self.aliases = aliases
        self.qualified = qualified  # SELECT names columns through its aliases: T['A'].c['col']
        self.columns: dict[str, set[str]] = {alias: set() for alias in aliases}


@dataclass
class EvalSite:
    """A place in the program where EVAL runs: the variables in scope and what names resolve against."""

    scope: dict[str, Var]
    locals: list[str]  # Python names of the local variables passed in (and, for statements, back)
    module: str | None
    filename: str
    depth: int  # scope depth of the innermost variable: EVAL's own DECLAREs go deeper


def generate_eval(parent: Generator, tree: Any, site: EvalSite, statement: bool, name: str) -> Generator:
    """A generator holding ``def name(ctx, _in)`` for EVAL text, resolved as if written at ``site``.

    The function binds the caller's variables from ``_in`` and returns them again (statements)
    or the expression's value; routines, module and schema variables resolve as at the site.
    """
    gen = Generator([], strict=parent.strict)
    gen.units = parent.units
    gen.modules = parent.modules
    gen.schema_routines = parent.schema_routines
    gen.schema_vars = parent.schema_vars
    gen.functions_env = parent.functions_env
    gen.filename = "EVAL"
    gen.fresh_prefix = f"_{name}_"
    gen.module = parent.modules.get(site.module) if site.module is not None else None
    gen.unit = next((u for u in parent.units if u.filename == site.filename), None)
    gen.scopes = [dict(site.scope)] + [{} for _ in range(site.depth)]
    out = gen.out
    out.where = ("EVAL", 1, 1)
    out.line(f"def {name}(ctx, _in):")
    out.indent += 1
    gen.begin_function()
    for py in site.locals:
        out.line(f"{py} = _in[{py!r}]")
    out.line("_tick = ctx.budget.tick")
    if statement:
        items = list(tree.items)
        for item in items:
            if item.kind in ("module", "routine", "broker_schema", "path_decl"):
                gen.error(item, "EVAL text can hold statements only, not modules, routines or schema clauses")
        gen.statements(
            [i for i in items if i.kind not in ("module", "routine", "broker_schema", "path_decl")]
        )
        out.line("return {" + ", ".join(f"{py!r}: {py}" for py in site.locals) + "}")
    else:
        expr = tree.expr
        out.where = ("EVAL", *position(expr))
        gen.pre.append([])
        start = len(out.lines)
        code = gen.scalar(expr)
        pre = gen.pre.pop()
        if pre:
            indent = "    " * out.indent
            out.lines[start:start] = [indent + p for p in pre]
            out.positions[start:start] = [out.where] * len(pre)
        out.line(f"return {code}")
    gen.end_function()
    out.indent -= 1
    return gen


class CodegenError(Exception):
    pass


def article(word: str) -> str:
    return ("an " if word[:1].upper() in "AEIOU" else "a ") + word


def mangle(prefix: str, name: str) -> str:
    """A Python identifier for an ESQL name that cannot collide with any Python or helper name."""
    if re.fullmatch(r"[A-Za-z0-9_]+", name):
        return f"{prefix}{name}"
    return prefix + "".join(c if c.isalnum() and c.isascii() else f"_{ord(c):x}_" for c in name)


@dataclass
class Var:
    """A declared name: what it holds and how generated code reaches it."""

    name: str
    py: str
    kind: str  # scalar | row | ref | namespace | alias | external | shared
    type_name: str = ""
    constant: bool = False
    scope_level: int = 0


@dataclass
class Routine:
    """A CREATE FUNCTION/PROCEDURE: its signature and generated Python name."""

    name: str
    qualified: str
    py: str
    params: list[tuple[str, str, str]]  # (direction, name, type)
    returns: str | None
    language: str
    node: Any  # the CREATE FUNCTION/PROCEDURE, or the first statement of bare code
    module: str | None
    filename: str
    schema: str
    external: str | None = None  # EXTERNAL NAME of a LANGUAGE DATABASE/JAVA/.NET routine
    result_sets: int = 0  # DYNAMIC RESULT SETS n: that many list arguments follow the parameters


#: Languages whose routines flowbroker runs; the others fail where they are called.
RUNNABLE_LANGUAGES = ("ESQL", "DATABASE")


@dataclass
class Module:
    name: str
    kind: str
    schema: str
    filename: str
    node: ast.ModuleDef | None
    routines: dict[str, Routine] = field(default_factory=dict)
    declares: list[ast.Declare] = field(default_factory=list)
    handlers: list[ast.Handler] = field(default_factory=list)
    bare_body: list[Node] = field(default_factory=list)
    #: the name the program knows it by: its own, or schema.name when another schema has that name too
    key: str = ""


@dataclass
class Unit:
    filename: str
    tree: ast.Program
    schema: str = ""
    path: list[str] = field(default_factory=list)


class Emitter:
    """Python source lines with indentation and a map from Python line to ESQL position."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.positions: list[tuple[str, int, int]] = []
        self.indent = 0
        self.where: tuple[str, int, int] = ("", 0, 0)

    def line(self, text: str) -> None:
        self.lines.append("    " * self.indent + text)
        self.positions.append(self.where)


class LoopFrame:
    def __init__(self, label: str | None, lid: int, python_loop: bool) -> None:
        self.label = label
        self.lid = lid
        self.python_loop = python_loop
        self.needs_leave = False
        self.needs_iterate = False


class Generator:
    """Generates one Python module for all the files of an ESQL project."""

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

    # ------------------------------------------------------------------ collection

    def collect(self) -> None:
        for unit in self.units:
            self.filename = unit.filename
            items = unit.tree.items
            for item in items:
                if isinstance(item, ast.BrokerSchema):
                    unit.schema = item.name.text
                elif isinstance(item, ast.PathDecl):
                    unit.path.extend(d.text for d in item.schemas)
            bare_items = [
                i for i in items if i.kind not in ("broker_schema", "path_decl", "module", "routine")
            ]
            is_bare = any(i.kind not in ("declare", "empty") for i in bare_items)
            routines = self.schema_routines.setdefault(unit.schema, {})
            svars = self.schema_vars.setdefault(unit.schema, {})
            has_module = any(i.kind == "module" for i in items)
            if is_bare and has_module:
                for item in bare_items:
                    if item.kind == "return_stmt":
                        self.error(item, "RETURN outside a function or procedure")
                    elif item.kind not in ("declare", "empty"):
                        self.error(
                            item, "a statement outside a module or routine (only DECLARE is allowed here)"
                        )
                is_bare = False
            if is_bare:
                bare = Module("", "COMPUTE", unit.schema, unit.filename, None)
                bare.bare_body = bare_items
                if "" in self.modules:
                    self.error(bare_items[0], "only one file of a project may hold bare (MQSI V2) statements")
                self.modules[""] = bare
            for item in items:
                if isinstance(item, ast.RoutineDef):
                    self.add_routine(unit, item, routines, None)
                elif isinstance(item, ast.ModuleDef):
                    self.add_module(unit, item)
                elif isinstance(item, ast.Declare) and not is_bare:
                    self.schema_var_nodes.append((unit, item))
                    for name_node in item.names:
                        name = ident(name_node)
                        svars[name] = self.var_for_declare(name, item, level=0, global_=True)
                elif item.kind == "handler" and not is_bare:
                    self.error(item, "a handler must be declared inside a module or a BEGIN … END block")

    def add_module(self, unit: Unit, node: ast.ModuleDef) -> None:
        kind = str(node.module_type).upper()
        name = ident(node.name)
        if kind not in ("COMPUTE", "FILTER", "DATABASE", "DATABASEEVENT"):
            self.error(node.module_type, f"unknown module kind '{kind}' (COMPUTE, FILTER, DATABASE expected)")
        # ESQL modules overview: a module is named within its broker schema, so two schemas may
        # each have a module of the same name; the second is known by its qualified name.
        key = name
        if name in self.modules:
            key = f"{unit.schema}.{name}"
            if self.modules[name].schema == unit.schema or key in self.modules:
                self.error(node.name, f"module '{name}' is already defined")
        module = Module(name, kind, unit.schema, unit.filename, node, key=key)
        self.modules[key] = module
        for item in node.items:
            if item.kind == "empty":
                continue
            if isinstance(item, ast.RoutineDef):
                self.add_routine(unit, item, module.routines, module)
            elif isinstance(item, ast.Declare):
                module.declares.append(item)
            elif isinstance(item, ast.Handler):
                module.handlers.append(item)

    def add_routine(
        self, unit: Unit, node: ast.RoutineDef, table: dict[str, Routine], module: Module | None
    ) -> None:
        name = ident(node.name)
        params = []
        for p in node.params:
            direction = keyword(p.direction) or "IN"
            params.append((direction, ident(p.name), p.type.text))
        returns = node.returns.type.text if node.returns is not None else None
        body = node.body
        language = "ESQL"
        external = None
        result_sets = 0
        if isinstance(body, ast.ExternalBody):
            # LANGUAGE .NET arrives as the word NET (the dot is punctuation in the grammar).
            language = str(body.language.token).upper()
            if language == "NET":
                language = ".NET"
            words = [item.value for item in body.items]
            texts = [keyword(w) if isinstance(w, Node) else str(w) for w in words]
            for i, text in enumerate(texts):
                upper = text.upper()
                if upper == "NAME" and i > 0 and texts[i - 1].upper() == "EXTERNAL" and i + 1 < len(texts):
                    external = texts[i + 1][1:-1] if texts[i + 1][:1] in "'\"" else texts[i + 1]
                if upper == "SETS" and i >= 2 and texts[i - 1].upper() == "RESULT" and i + 1 < len(texts):
                    if texts[i + 1].isdigit():
                        result_sets = int(texts[i + 1])
        if name in table:
            self.error(node.name, f"routine '{name}' is already defined")
        qualified = f"{module.key}.{name}" if module else (f"{unit.schema}.{name}" if unit.schema else name)
        table[name] = Routine(
            name,
            qualified,
            mangle("f_", qualified.replace(".", "__")),
            params,
            returns,
            language,
            node,
            module.key if module else None,
            unit.filename,
            unit.schema,
            external,
            result_sets,
        )

    def var_for_declare(self, name: str, node: ast.Declare, level: int, global_: bool) -> Var:
        mod = keyword(node.modifier)
        dtype = node.type
        constant = False
        if isinstance(dtype, ast.ReferenceType):
            kind, tname = "ref", "REFERENCE"
        else:
            if isinstance(dtype, ast.ConstantType):
                constant = True
                dtype = dtype.type
            tname = dtype.text
            kind = {"ROW": "row", "NAMESPACE": "namespace", "NAME": "namespace"}.get(tname, "scalar")
        if mod == "EXTERNAL":
            kind = "external"
        py = mangle("g_" if global_ else "v_", name)
        if not global_ and level > 1:
            py = f"{py}_{level}"
        return Var(name, py, kind, tname, constant or kind == "namespace", level)

    # ------------------------------------------------------------------ program

    def generate(self) -> str:
        self.collect()
        out = self.out
        out.line("def _init(ctx):")
        out.indent += 1
        self.begin_function()
        out.line("pass")
        for unit, node in self.schema_var_nodes:
            self.unit, self.filename = unit, unit.filename
            # a schema-level initial value may use the schema's other variables and constants
            self.scopes = [self.schema_vars.get(unit.schema, {})]
            self.global_declare(node, self.schema_vars[unit.schema])
        for module in self.modules.values():
            if module.node is None:
                continue
            self.filename = module.filename
            self.module = module
            self.unit = next(u for u in self.units if u.filename == module.filename)
            module_vars: dict[str, Var] = {}
            self.scopes = [self.schema_vars.get(module.schema, {}), module_vars]
            for node in module.declares:
                for name_node in node.names:
                    name = ident(name_node)
                    var = self.var_for_declare(name, node, level=0, global_=True)
                    var.py = mangle("g_", f"{module.key.replace('.', '__')}__{name}")
                    if name in module_vars:
                        self.error(name_node, f"'{name}' is already declared in module {module.name}")
                    module_vars[name] = var
                self.global_declare(node, module_vars, declared=True)
            module.declares_vars = module_vars  # type: ignore[attr-defined]
        self.end_function()
        out.indent -= 1
        self.init_message_vars()
        for module in self.modules.values():
            self.module = module
            self.filename = module.filename
            self.unit = next(u for u in self.units if u.filename == module.filename)
            if module.node is None:
                self.gen_bare(module)
            for routine in module.routines.values():
                self.gen_routine(routine)
        for _schema, routines in self.schema_routines.items():
            self.module = None
            for routine in routines.values():
                self.filename = routine.filename
                self.unit = next(u for u in self.units if u.filename == routine.filename)
                self.gen_routine(routine)
        return "\n".join(out.lines) + "\n"

    def init_message_vars(self) -> None:
        """``_init_message(ctx)``: the schema and module level normal variables of one message."""
        out = self.out
        out.line("def _init_message(ctx):")
        out.indent += 1
        self.begin_function()
        out.line("ctx.mv = _MessageVariables()")
        for filename, unit, module, scopes, node, var in self.message_vars:
            self.filename, self.unit, self.module, self.scopes = filename, unit, module, scopes
            init = node.init
            self.out.where = (filename, *position(node))
            if var.kind == "ref":
                assert isinstance(node.type, ast.ReferenceType)
                target = node.type.target
                out.line(f"{var.py} = _ref_to({self.element(target)}, {self.root_code(target)})")
            elif var.kind == "row":
                out.line(f"{var.py} = _new_row()")
                if init is not None:
                    out.line(f"_assign_tree({var.py}, _deref({self.element_or_value(init)}))")
            elif init is None or not checks.check_initial_type(self, var, init):
                out.line(f"{var.py} = None")
            else:
                out.line(f"{var.py} = {self.typed(var.type_name, init)}")
        self.end_function()
        out.indent -= 1
        self.module = None

    def global_declare(self, node: ast.Declare, table: dict[str, Var], declared: bool = False) -> None:
        """Initialise schema/module-level variables in ``_init`` (run once per compiled program)."""
        names = [ident(n) for n in node.names]
        mod = keyword(node.modifier)
        init = node.init
        self.out.where = (self.filename, *position(node))
        for name in names:
            var = table.get(name) or self.var_for_declare(name, node, 0, True)
            if not declared:
                table[name] = var
            if var.kind == "ref" and mod:
                # DECLARE statement: SHARED cannot be given with REFERENCE TO (a shared tree is a ROW)
                self.error(node, f"a REFERENCE variable cannot be {mod}; keep a shared tree in a ROW")
                continue
            if mod == "" and not var.constant:
                # ESQL variables: a normal variable lives for one message passing through the node,
                # and one declared at schema or module level is the node's own: it is made afresh,
                # with its initial value, for each message (in ``_init_message``).
                var.py = f"ctx.mv.{var.py}"
                self.message_vars.append(
                    (self.filename, self.unit, self.module, list(self.scopes), node, var)
                )
                continue
            self.function_globals[-1].add(var.py)
            if var.kind == "row":
                self.out.line(f"{var.py} = _new_row()")
                continue
            if init is None or not checks.check_initial_type(self, var, init):
                self.out.line(f"{var.py} = None")
            else:
                self.out.line(f"{var.py} = {self.typed(var.type_name, init)}")

    # ------------------------------------------------------------------ routines

    def routine_header(self, routine: Routine) -> None:
        params = "".join(", " + mangle("v_", p[1]) for p in routine.params)
        if routine.language == "DATABASE":
            params += ", _schema=None"  # CALL … IN Database.{schema} / EXTERNAL SCHEMA 'schema'
        self.out.where = (self.filename, *position(routine.node))
        self.out.line(f"def {routine.py}(ctx{params}):")

    def gen_routine(self, routine: Routine) -> None:
        self.routine = routine
        self.loops = []
        body = routine.node.body
        self.routine_header(routine)
        self.out.indent += 1
        self.begin_function()
        if routine.language == "DATABASE":
            self.database_routine(routine, body)
            self.end_function()
            self.out.indent -= 1
            return
        if routine.language != "ESQL":
            lang = routine.language
            self.out.line(
                f"raise _EsqlRuntimeError({('routine ' + routine.qualified + ' is LANGUAGE ' + lang + ': ' + lang + ' routines cannot run in flowbroker')!r})"
            )
            self.end_function()
            self.out.indent -= 1
            return
        scope: dict[str, Var] = {}
        for _direction, name, tname in routine.params:
            kind = "ref" if tname == "REFERENCE" else "row" if tname == "ROW" else "scalar"
            scope[name] = Var(name, mangle("v_", name), kind, tname, False, 2)
        self.scopes = self.base_scopes() + [scope]
        # every routine call counts against the budget: recursion without loops is bounded too
        self.out.line("ctx.budget.call()")
        self.out.line("_tick = ctx.budget.tick")
        self.statements([body.body], handlers=self.module.handlers if self.module else [])

        outs = [mangle("v_", p[1]) for p in routine.params if p[0] in ("OUT", "INOUT")]
        if outs:
            self.out.line(f"return (None, {', '.join(outs)})")
        else:
            self.out.line("return None")
        self.end_function()
        self.out.indent -= 1
        self.routine = None

    def database_routine(self, routine: Routine, body: Node) -> None:
        """LANGUAGE DATABASE: call the stored procedure named by EXTERNAL NAME on the node's data source.

        The generated function returns (value, OUT/INOUT values …, result sets); whether the
        data source's dialect can do what the declaration asks is decided at the call.
        """
        if routine.external is None:
            self.error(
                routine.node, f'LANGUAGE DATABASE routine {routine.name} needs EXTERNAL NAME "schema.proc"'
            )
            self.out.line("return None")
            return
        for _direction, name, ptype in routine.params:
            if ptype in ("ROW", "REFERENCE"):
                self.error(routine.node, f"parameter '{name}' of a database routine cannot be {ptype}")
        args = ", ".join(mangle("v_", p[1]) for p in routine.params)
        directions = [p[0] for p in routine.params]
        self.out.line(
            f"return _db_call(ctx, {routine.external!r}, [{args}], {directions!r}, "
            f"{routine.returns is not None}, _schema, {routine.result_sets})"
        )

    def base_scopes(self) -> list[dict[str, Var]]:
        scopes = [self.schema_vars.get(self.unit.schema if self.unit else "", {})]
        if self.module is not None and self.module.node is not None:
            scopes.append(getattr(self.module, "declares_vars", {}))
        return scopes

    def gen_bare(self, module: Module) -> None:
        self.bare = True
        self.routine = Routine(
            "Main",
            "Main",
            "f__bare_main",
            [],
            "BOOLEAN",
            "ESQL",
            module.bare_body[0],
            None,
            module.filename,
            module.schema,
        )
        self.out.where = (self.filename, *position(module.bare_body[0]))
        self.out.line("def f__bare_main(ctx):")
        self.out.indent += 1
        self.begin_function()
        self.out.line("_tick = ctx.budget.tick")
        self.scopes = self.base_scopes() + [{}]
        self.statements(module.bare_body)
        self.out.line("return True")
        self.end_function()
        self.out.indent -= 1
        self.routine = None
        self.bare = False

    # ------------------------------------------------------------------ statements

    def statements(self, stmts: list[Any], handlers: list[ast.Handler] | None = None) -> None:
        """Emit a statement list; a DECLARE HANDLER guards the statements that follow it.

        ``handlers`` are the handlers of an enclosing scope (a module's) whose region has not
        been emitted yet.
        """
        scopes = [list(handlers)] if handlers else []
        self.scoped_statements(stmts, scopes)

    def scoped_statements(self, stmts: list[Any], scopes: list[list[ast.Handler]]) -> None:
        """Emit ``stmts`` guarded by ``scopes``: handler groups, outermost first.

        DECLARE HANDLER statement: handlers declared together are one scope's, searched in the
        order they are declared; the statements before them run unguarded.
        """
        stmts = [s for s in stmts if s is not None and s.kind != "empty"]
        for i, stmt in enumerate(stmts):
            if stmt.kind != "handler":
                continue
            j = i
            while j < len(stmts) and stmts[j].kind == "handler":
                j += 1
            # DECLARE HANDLER statement: "all handler declarations must be together at the top of
            # the scope, before any other statements"; variables declared before them are common.
            for before in stmts[:i]:
                if before.kind not in ("declare", "handler"):
                    self.error(
                        stmt,
                        "a handler should be declared at the top of its scope, before other "
                        "statements: the statements before it are not guarded by it",
                        "warning",
                    )
                    break
            for before in stmts[:i]:
                self.statement(before)
            self.guarded(stmts[j:], [*scopes, list(stmts[i:j])])
            return
        if scopes:
            self.guarded(stmts, scopes)
            return
        if not stmts:
            self.out.line("pass")
            return
        for stmt in stmts:
            self.statement(stmt)

    def guarded(self, stmts: list[Any], scopes: list[list[ast.Handler]]) -> None:
        """Emit ``stmts`` inside the innermost handler group of ``scopes``.

        An EXIT handler's region is one ``try`` around the statements; a CONTINUE handler wraps
        every statement of the region, at any depth, so that after it runs execution continues
        with the statement after the one that failed.
        """
        group, outer = scopes[-1], scopes[:-1]
        kinds = {keyword(h.handler_kind) for h in group}
        has_exit = "EXIT" in kinds
        if has_exit:
            self.out.line("try:")
            self.out.indent += 1
            self.exit_regions.append(group)
        if "CONTINUE" in kinds:
            self.continue_stack.append((group, outer, len(self.exit_regions)))
            self.scoped_statements(stmts, outer)
            self.continue_stack.pop()
        else:
            self.scoped_statements(stmts, outer)
        if has_exit:
            self.exit_regions.pop()
            self.out.indent -= 1
            self.handler_clause(group, outer, "EXIT")

    @staticmethod
    def handler_test(handler: ast.Handler, exc: str) -> str:
        """Code that is True when exception ``exc`` has one of the handler's SQL states."""
        tests = []
        for cond in handler.conditions:
            if isinstance(cond, ast.SqlstateValue):
                tests.append(f"_eq(_sqlstate({exc}), {string_value(cond.state)!r})")
            else:
                esc = string_value(cond.escape) if cond.escape is not None else None
                tests.append(f"_like(_sqlstate({exc}), {string_value(cond.pattern)!r}, {esc!r})")
        return " or ".join(f"({t}) is True" for t in tests) or "True"

    def handler_clause(
        self,
        group: list[ast.Handler],
        outer: list[list[ast.Handler]],
        kind: str,
        inner: list[list[ast.Handler]] | None = None,
    ) -> None:
        """The ``except`` part running the first handler of ``group`` whose SQLSTATE matches.

        DECLARE HANDLER statement: "Within any one scope, handlers are searched in the order they
        are declared; that is, first to last. Scopes are searched from the innermost to
        outermost." So the clause runs the first matching handler if it is of ``kind`` and lets
        the exception go on otherwise (to the group's EXIT region, or to an outer scope);
        ``inner`` are handler groups of scopes inside this one whose EXIT regions enclose the
        failing statement: when one of their handlers matches, it takes the exception first.
        """
        exc = self.fresh("_exc")
        where = self.out.where
        # A stop request ends the node whatever the handlers say (it is no ESQL error).
        self.out.line("except _StopRequested:")
        self.out.line("    raise")
        self.out.line(f"except _CATCHABLE as {exc}:")
        self.out.indent += 1
        inner_exits = [h for g in inner or [] for h in g if keyword(h.handler_kind) == "EXIT"]
        if inner_exits:
            self.out.line(f"if {' or '.join(f'({self.handler_test(h, exc)})' for h in inner_exits)}:")
            self.out.line("    raise")
        # handlers after the last one of ``kind`` would only let the exception go on
        last = max(i for i, h in enumerate(group) if keyword(h.handler_kind) == kind)
        group = group[: last + 1]
        for handler in group:
            self.out.where = (self.filename, *position(handler))
            self.out.line(f"if {self.handler_test(handler, exc)}:")
            self.out.indent += 1
            if keyword(handler.handler_kind) == kind:
                self.out.line(f"_note_error(ctx, {exc})")
                self.handler_exc.append(exc)
                self.in_handler += 1
                saved, self.continue_stack = self.continue_stack, []
                saved_exits, self.exit_regions = self.exit_regions, []
                self.scoped_statements([handler.body], outer)
                self.continue_stack = saved
                self.exit_regions = saved_exits
                self.in_handler -= 1
                self.handler_exc.pop()
            else:
                self.out.line("raise")
            self.out.indent -= 1
            self.out.line("else:")
            self.out.indent += 1
        self.out.line("raise")
        for _handler in group:
            self.out.indent -= 1
        self.out.indent -= 1
        self.out.where = where

    def statement(self, stmt: Node) -> None:
        if self.continue_stack and stmt.kind not in ("handler", "empty"):
            self.out.where = (self.filename, *position(stmt))
            stack = self.continue_stack
            for _entry in stack:
                self.out.line("try:")
                self.out.indent += 1
            self.plain_statement(stmt)
            for group, outer, exits in reversed(stack):
                self.out.indent -= 1
                self.handler_clause(group, outer, "CONTINUE", self.exit_regions[exits:])
            return
        self.plain_statement(stmt)

    def plain_statement(self, stmt: Node) -> None:
        self.out.where = (self.filename, *position(stmt))
        method = getattr(self, f"s_{stmt.kind}", None)
        if method is None:
            self.error(stmt, f"statement {stmt.kind} is not supported")
            return
        if self.statement_depth >= MAX_STATEMENT_NESTING:
            self.error(stmt, f"statements nested too deeply (more than {MAX_STATEMENT_NESTING} levels)")
            self.out.line("pass")
            return
        self.pre.append([])
        start = len(self.out.lines)
        self.statement_depth += 1
        try:
            method(stmt)
        finally:
            self.statement_depth -= 1
        pre = self.pre.pop()
        if pre:
            indent = "    " * self.out.indent
            lines = [indent + p for p in pre]
            self.out.lines[start:start] = lines
            self.out.positions[start:start] = [self.out.where] * len(lines)

    def block(self, node: ast.Statements | None) -> None:
        self.scopes.append({})
        self.statements(node.body if node is not None else [])
        self.scopes.pop()

    # -- variables

    def lookup(self, name: str) -> Var | None:
        for scope in reversed(self.scopes):
            var = scope.get(name)
            if var is not None:
                return var
        return None

    def s_declare(self, node: ast.Declare) -> None:
        names = node.names
        mod = keyword(node.modifier)
        init = node.init
        scope = self.scopes[-1]
        level = len(self.scopes)
        if mod == "EXTERNAL":
            self.error(node, "EXTERNAL variables can only be declared at schema or module level")
        if mod == "SHARED":
            self.error(node, "SHARED variables can only be declared at schema or module level")
        for name_node in names:
            name = ident(name_node)
            var = self.var_for_declare(name, node, level, global_=False)
            if name in scope and not (self.bare and level == len(self.base_scopes()) + 1):
                self.error(name_node, f"'{name}' is already declared in this scope")
            scope[name] = var
            if var.kind == "ref":
                assert isinstance(node.type, ast.ReferenceType)
                target = node.type.target
                elem = self.element(target)
                base = self.root_code(target)
                self.out.line(f"{var.py} = _ref_to({elem}, {base})")
                continue
            if var.kind == "row":
                self.out.line(f"{var.py} = _new_row()")
                if init is not None:
                    self.out.line(f"_assign_tree({var.py}, _deref({self.element_or_value(init)}))")
                continue
            if init is None or not checks.check_initial_type(self, var, init):
                self.out.line(f"{var.py} = None")
            else:
                self.out.line(f"{var.py} = {self.typed(var.type_name, init)}")

    # -- SET

    def s_set_stmt(self, node: ast.SetStmt) -> None:
        target, expr = node.target, node.value
        attr_kw = keyword(node.attr)
        start = target.start
        elems = target.elems
        name = ident(start.name)
        var = self.lookup(name)
        if var is not None and not elems and start.index is None and not attr_kw and var.kind != "ref":
            self.set_variable(var, expr, node)
            return
        # SET r = … with r a REFERENCE assigns to the field r points to, as SET of its path would
        # (SET statement: the target is a field reference); only MOVE points r elsewhere.
        if var is not None and var.kind in ("scalar", "namespace", "external") and elems:
            self.error(start, f"'{name}' is {article(var.type_name)} variable, not a field reference")
            return
        if var is None and name not in CORRELATION:
            self.error(start, f"undeclared identifier '{name}'")
            return
        if var is None and not self.correlation_available(start, name):
            return
        if var is None and not self.writable(name):
            self.error(start, self.read_only_message(name))
            return
        last_all = bool(elems) and isinstance(elems[-1].index, ast.IndexAll)
        if attr_kw:
            value = self.scalar(expr)
            tgt = self.target(target)
            if attr_kw == "VALUE":
                # SET … VALUE = NULL keeps the field, with a NULL value (IBM); plain SET deletes it.
                self.out.line(f"_set_value({tgt}, {value})")
            elif attr_kw == "NAME":
                self.out.line(f"_set_name({tgt}, {value})")
            elif attr_kw == "NAMESPACE":
                self.out.line(f"_set_namespace({tgt}, {value})")
            else:
                self.out.line(f"_set_type({tgt}, {value})")
            return
        if last_all:
            parent = self.target(target, upto=len(elems) - 1)
            nm, ns, ftype = self.step_parts(elems[-1])
            items = self.list_value(expr)
            self.out.line(f"_assign_list({parent}, {nm}, {ns}, {ftype}, {items}, _to_element_value)")
            return
        shared = self.shared_prefix(target, expr)
        if shared:
            self.set_with_shared_prefix(target, expr, shared)
            return
        kind, code = self.expr(expr)
        if kind in ("elem", "list"):
            if kind == "list":
                code = f"_first({code})"
            tmp = self.fresh()
            # The source is read before the target is created; snapshot it when both share a tree.
            self.out.line(f"{tmp} = _snapshot({code}, {self.root_code(target)})")
            self.out.line(f"if {tmp} is None:")
            self.out.line(f"    _delete({self.element(target)})")
            self.out.line("else:")
            self.out.line(f"    _assign_tree({self.target(target)}, {tmp})")
            return
        if kind == "null":
            self.out.line(f"_delete({self.element(target)})")
            return
        if isinstance(expr, (ast.StringLit, ast.IntLit, ast.BoolLit)) and code != "None":
            # A non-NULL literal can never delete the target: store it directly.
            self.out.line(f"{self.target(target)}.value = {code}")
            return
        tmp = self.fresh()
        self.out.line(f"{tmp} = {code}")
        self.out.line(f"if {tmp} is None:")
        self.out.line(f"    _delete({self.element(target)})")
        self.out.line("else:")
        self.out.line(f"    _assign_value({self.target(target)}, {tmp}, _to_element_value)")

    def shared_prefix(self, target: ast.FieldRef, expr: Node) -> int:
        """How many leading path elements a SET's target and its field-reference source share."""
        if not isinstance(expr, ast.FieldRef) or self.is_list(expr):
            return 0
        t_start, s_start = target.start, expr.start
        if ident(t_start.name) != ident(s_start.name) or t_start.index or s_start.index:
            return 0
        var = self.lookup(ident(t_start.name))
        if var is not None and var.kind not in ("row", "ref", "alias"):
            return 0
        if var is None and ident(t_start.name) not in WRITABLE_ROOTS:
            return 0
        shared = 0
        for a, b in zip(target.elems[:-1], expr.elems[:-1], strict=False):
            if a != b or not self.plain_step(a):
                break
            shared += 1
        return shared if shared >= 2 else 0

    def plain_step(self, elem: ast.PathElem) -> bool:
        step, index = elem.step, elem.index
        if isinstance(step.prefix, ast.Dynamic) or isinstance(step.name, ast.Dynamic):
            return False
        if index is None:
            return True
        if isinstance(index, ast.IndexAll):
            return False
        return all(
            isinstance(n, (ast.FieldRef, ast.IntLit, ast.PathStart, ast.Ident)) for n in index.iter_children()
        )

    def set_with_shared_prefix(self, target: ast.FieldRef, expr: Any, shared: int) -> None:
        """SET a.b.c.X = a.b.c.Y: walk the shared a.b.c once (the source is read first, as always)."""
        prefix = self.fresh("_p")
        self.out.line(f"{prefix} = {self.element(target, upto=shared)}")
        source = self.fresh()
        src = self.element(expr, base=(prefix, shared))
        self.out.line(
            f"{source} = _snapshot({src}, {self.root_code(target)}) if {prefix} is not None else None"
        )
        self.out.line(f"if {source} is None:")
        self.out.line(f"    if {prefix} is not None:")
        self.out.line(f"        _delete({self.element(target, base=(prefix, shared))})")
        self.out.line("else:")
        self.out.line(f"    _assign_tree({self.target(target, base=(prefix, shared))}, {source})")

    def list_value(self, expr: Node) -> str:
        kind, code = self.expr(expr)
        if kind == "list":
            return code
        if kind == "null":
            return "[]"
        return f"_as_list({code})"

    def set_variable(self, var: Var, expr: Node, node: Node) -> None:
        if var.constant:
            self.error(node, f"'{var.name}' is a constant and cannot be changed")
        if var.kind == "external":
            self.error(node, f"'{var.name}' is an EXTERNAL variable and cannot be changed")
        if var.kind == "alias":
            self.error(node, f"'{var.name}' is a correlation name and cannot be assigned")
        if var.kind == "ref":
            self.error(node, f"'{var.name}' is a REFERENCE; use MOVE to point it elsewhere")
            return
        if var.kind == "row":
            kind, code = self.expr(expr)
            if kind == "list":
                code = f"_first({code})"
            self.out.line(f"_assign_tree({var.py}, _deref({code}))")
            return
        checks.check_assign_type(self, var, expr)
        self.note_global(var)
        self.out.line(f"{var.py} = {self.typed(var.type_name, expr)}")

    def typed(self, type_name: str, expr: Node) -> str:
        """Code for ``expr`` as a value of a declared type: IBM casts on assignment (or raises)."""
        code = self.scalar(expr)
        target = checks.normal_type(type_name)
        if target not in checks.CASTABLE or self.static_type(expr) == target:
            return code
        return f"_as_type({code}, {target!r})"

    def static_type(self, node: Any) -> str | None:
        """The ESQL type ``node`` certainly has at run time (NULL aside), or None when unknown."""
        while isinstance(node, (ast.Paren, ast.UnaryOp)):
            node = node.expr if isinstance(node, ast.Paren) else node.operand
        if not isinstance(node, Node):
            return None
        d = node.kind
        if d in ("compare", "and_op", "or_op", "not_op", "between", "in_list", "like", "is_test", "bool_lit"):
            return "BOOLEAN"
        if isinstance(node, ast.FieldRef) and not node.elems and node.start.index is None:
            var = self.lookup(ident(node.start.name))
            if var is not None and var.kind == "scalar":
                return checks.normal_type(var.type_name)
            return None
        if d == "binop":
            first, links = left_chain(node, ("binop",))
            found = {self.static_type(first)} | {self.static_type(link.right) for link in links}
            kind = found.pop() if len(found) == 1 else None
            return kind if kind in ("INTEGER", "DECIMAL", "FLOAT") else None
        if isinstance(node, ast.CastExpr) and isinstance(node.type, ast.CastType):
            type_node = node.type
            return None if type_node.precision is not None else checks.normal_type(str(type_node.token))
        if isinstance(node, ast.Call):
            routine = self.resolve_routine(node, node.function) if self.routine is not None else None
            if routine is not None and routine.language == "ESQL" and routine.returns:
                return checks.normal_type(routine.returns)
            return None
        return checks.literal_type(node)

    def note_global(self, var: Var) -> None:
        """Record that the function being generated assigns the schema/module variable ``var``."""
        if var.py.startswith("g_") and self.function_globals:
            self.function_globals[-1].add(var.py)

    def begin_function(self) -> None:
        """Start a generated function body: its ``global`` line goes here once the body is known."""
        self.function_globals.append(set())
        self.function_starts.append(len(self.out.lines))

    def end_function(self) -> None:
        # Python wants ``global`` before any use of the name in the function, so the declaration of
        # every schema/module variable the body assigns is hoisted to the top of the body.
        names = self.function_globals.pop()
        start = self.function_starts.pop()
        if names:
            indent = self.out.lines[start][: len(self.out.lines[start]) - len(self.out.lines[start].lstrip())]
            self.out.lines.insert(start, f"{indent}global {', '.join(sorted(names))}")
            self.out.positions.insert(start, self.out.positions[start])

    # -- control flow

    def s_if_stmt(self, node: ast.IfStmt) -> None:
        self.out.line(f"if {self.condition(node.condition)}:")
        self.indented(node.then)
        for part in node.elseifs:
            self.out.where = (self.filename, *position(part))
            self.out.line(f"elif {self.condition(part.condition)}:")
            self.indented(part.then)
        if node.else_part is not None:
            self.out.line("else:")
            self.indented(node.else_part.body)

    def indented(self, stmts: ast.Statements | None) -> None:
        self.out.indent += 1
        self.block(stmts)
        self.out.indent -= 1

    def condition(self, expr: Node) -> str:
        kind, code = self.expr(expr)
        if kind == "bool":
            return f"({code}) is True"
        if kind in ("elem", "list"):
            code = self.to_scalar(kind, code)
        return f"_truth({code}) is True"

    def s_labelled(self, node: ast.Labelled) -> None:
        # The end label belongs to the loop or block itself (END WHILE label;), checked there.
        self.loop_statement(node.loop, ident(node.label))

    def s_while_stmt(self, node: Node) -> None:
        self.loop_statement(node, None)

    s_loop_stmt = s_while_stmt
    s_repeat_stmt = s_while_stmt
    s_for_stmt = s_while_stmt
    s_begin_stmt = s_while_stmt

    def loop_statement(self, node: Node, label: str | None) -> None:
        self.counter += 1
        frame = LoopFrame(label, self.counter, node.kind != "begin_stmt")
        if label is not None and any(f.label == label for f in self.loops):
            self.error(node, f"label '{label}' is already in use by an enclosing statement")
        self.loops.append(frame)
        start = len(self.out.lines)
        saved_indent = self.out.indent
        # The loop body is generated one level deeper so a try wrapper can be added afterwards.
        self.out.indent += 1
        getattr(self, f"gen_{node.kind}")(node)
        frame = self.loops.pop()
        if frame.needs_leave:
            body = self.out.lines[start:]
            body_pos = self.out.positions[start:]
            del self.out.lines[start:]
            del self.out.positions[start:]
            self.out.indent = saved_indent
            self.out.line("try:")
            self.out.lines.extend("    " + line for line in body)
            self.out.positions.extend(body_pos)
            self.out.line("except _LeaveSignal as _sig:")
            self.out.line(f"    if _sig.label != {frame.lid}:")
            self.out.line("        raise")
        else:
            # Dedent the generated body back to the statement's level.
            self.out.lines[start:] = [line[4:] for line in self.out.lines[start:]]
            self.out.indent = saved_indent
        self.out.indent = saved_indent

    def gen_while_stmt(self, node: ast.WhileStmt) -> None:
        self.check_end_label(node, node.end_label)
        self.out.line("while True:")
        self.out.indent += 1
        self.out.line("_tick()")
        self.out.line(f"if not ({self.condition(node.condition)}):")
        self.out.line("    break")
        self.loop_body(node.body)
        self.out.indent -= 1

    def gen_loop_stmt(self, node: ast.LoopStmt) -> None:
        self.check_end_label(node, node.end_label)
        self.out.line("while True:")
        self.out.indent += 1
        self.out.line("_tick()")
        self.loop_body(node.body)
        self.out.indent -= 1

    def gen_repeat_stmt(self, node: ast.RepeatStmt) -> None:
        self.check_end_label(node, node.end_label)
        self.out.line("while True:")
        self.out.indent += 1
        self.out.line("_tick()")
        self.loop_body(node.body)
        self.out.line(f"if {self.condition(node.condition)}:")
        self.out.line("    break")
        self.out.indent -= 1

    def gen_for_stmt(self, node: ast.ForStmt) -> None:
        alias = ident(node.name)
        self.check_end_label(node, node.end_label)
        source = node.source
        items = self.element_list(source)
        var = Var(alias, mangle("v_", alias) + f"_{self.counter}", "alias", "REFERENCE")
        self.out.line(f"for {var.py} in {items}:")
        self.out.indent += 1
        self.out.line("_tick()")
        self.scopes.append({alias: var})
        self.loop_body(node.body)
        self.scopes.pop()
        self.out.indent -= 1

    def loop_body(self, body: ast.Statements | None) -> None:
        """A loop's statements; wrapped so an ITERATE from an inner loop continues this one."""
        frame = self.loops[-1]
        start = len(self.out.lines)
        self.block(body)
        if frame.needs_iterate:
            lines = self.out.lines[start:]
            positions = self.out.positions[start:]
            del self.out.lines[start:]
            del self.out.positions[start:]
            self.out.line("try:")
            self.out.lines.extend("    " + line for line in lines)
            self.out.positions.extend(positions)
            self.out.line("except _IterateSignal as _sig:")
            self.out.line(f"    if _sig.label != {frame.lid}:")
            self.out.line("        raise")
            frame.needs_iterate = False

    def gen_begin_stmt(self, node: ast.BeginStmt) -> None:
        atomic = node.atomic
        self.check_end_label(node, node.end_label)
        if atomic is not None and keyword(atomic) == "ATOMIC":
            self.out.line("with _ATOMIC:")
            self.out.indent += 1
            self.block(node.body)
            self.out.indent -= 1
        else:
            self.out.line("if True:")
            self.out.indent += 1
            self.block(node.body)
            self.out.indent -= 1

    def check_end_label(self, node: Node, end: Any) -> None:
        frame = self.loops[-1]
        if end is not None and frame.label is None:
            self.error(end, f"end label '{ident(end)}' given for an unlabelled statement")
        elif end is not None and ident(end) != frame.label:
            self.error(end, f"end label '{ident(end)}' does not match '{frame.label}'")

    def find_loop(self, node: ast.LeaveStmt | ast.IterateStmt, verb: str) -> tuple[int, LoopFrame] | None:
        label = ident(node.label)
        for depth in range(len(self.loops) - 1, -1, -1):
            if self.loops[depth].label == label:
                return depth, self.loops[depth]
        self.error(node, f"{verb} '{label}' is not inside a statement labelled '{label}'")
        return None

    def s_leave_stmt(self, node: ast.LeaveStmt) -> None:
        found = self.find_loop(node, "LEAVE")
        if found is None:
            return
        depth, frame = found
        inner_python_loops = [f for f in self.loops[depth + 1 :] if f.python_loop]
        if frame.python_loop and not inner_python_loops:
            self.out.line("break")
        else:
            frame.needs_leave = True
            self.out.line(f"raise _LeaveSignal({frame.lid})")

    def s_iterate_stmt(self, node: ast.IterateStmt) -> None:
        found = self.find_loop(node, "ITERATE")
        if found is None:
            return
        depth, frame = found
        if not frame.python_loop:
            self.error(node, f"ITERATE '{frame.label}' names a BEGIN block, not a loop")
            return
        inner = [f for f in self.loops[depth + 1 :] if f.python_loop]
        if inner:
            frame.needs_iterate = True
            self.out.line(f"raise _IterateSignal({frame.lid})")
            return
        self.out.line("continue")

    def s_case_stmt(self, node: ast.CaseStmt) -> None:
        subject = node.operand
        whens = node.whens
        else_part = node.else_part
        subj = None
        if subject is not None:
            subj = self.fresh()
            self.out.line(f"{subj} = {self.scalar(subject)}")
        for i, when in enumerate(whens):
            self.out.where = (self.filename, *position(when))
            test = (
                f"_eq({subj}, {self.scalar(when.condition)}) is True"
                if subj is not None
                else self.condition(when.condition)
            )
            self.out.line(f"{'if' if i == 0 else 'elif'} {test}:")
            self.indented(when.body)
        if else_part is not None:
            self.out.line("else:")
            self.indented(else_part.body)
        else:
            self.out.line("else:")
            self.out.line("    raise _EsqlRuntimeError('CASE: no WHEN clause matched and there is no ELSE')")

    def s_return_stmt(self, node: ast.ReturnStmt) -> None:
        expr = node.value
        if self.routine is None:
            self.error(node, "RETURN outside a function or procedure")
            return
        outs = [mangle("v_", p[1]) for p in self.routine.params if p[0] in ("OUT", "INOUT")]
        if expr is None:
            value = "None"
        elif self.routine.returns in ("ROW", "REFERENCE"):
            value = f"_deref({self.element_or_value(expr)})"
        elif self.routine.returns is not None:
            value = self.typed(self.routine.returns, expr)
        else:
            value = self.scalar(expr)
        if expr is not None and self.routine.returns is None and not self.bare:
            self.error(node, f"procedure {self.routine.name} has no RETURNS clause but returns a value")
        if outs:
            self.out.line(f"return ({value}, {', '.join(outs)})")
        else:
            self.out.line(f"return {value}")

    # -- CALL

    def resolve_routine(self, node: Node, fieldref: ast.FieldRef) -> Routine | None:
        parts = [ident(fieldref.start.name)]
        for elem in fieldref.elems:
            parts.append(ident(elem.step.first))

        name = parts[-1]
        if len(parts) > 1:
            schema = ".".join(parts[:-1])
            found = self.schema_routines.get(schema, {}).get(name)
            if found is None:
                self.unresolved(node, ".".join(parts))
            return found
        if self.module is not None and name in self.module.routines:
            return self.module.routines[name]
        schema = self.unit.schema if self.unit else ""
        if name in self.schema_routines.get(schema, {}):
            return self.schema_routines[schema][name]
        for path in self.unit.path if self.unit else []:
            if name in self.schema_routines.get(path, {}):
                return self.schema_routines[path][name]
        return None

    def unresolved(self, node: Any, name: str) -> None:
        self.error(node, f"routine '{name}' is not defined", "error" if self.strict else "warning")

    def call_args(self, routine: Routine, args: list[Node], node: Node) -> list[str]:
        wanted = len(routine.params) + routine.result_sets
        if len(args) != wanted:
            sets = f" (with {routine.result_sets} result set(s))" if routine.result_sets else ""
            self.error(
                node, f"routine '{routine.name}' takes {wanted} argument(s){sets} but {len(args)} were given"
            )
        codes = []
        for (direction, _pname, ptype), arg in zip(routine.params, args, strict=False):
            if ptype == "REFERENCE":
                codes.append(self.reference_arg(arg))
            elif ptype == "ROW":
                codes.append(f"_deref({self.element_or_value(arg)})")
            elif direction == "OUT":
                codes.append("None")
            else:
                codes.append(self.scalar(arg))
        return codes

    def reference_arg(self, arg: Node) -> str:
        if isinstance(arg, ast.FieldRef) and not arg.elems:
            var = self.lookup(ident(arg.start.name))
            if var is not None and var.kind == "ref":
                return var.py
        return f"_Reference({self.element(arg) if isinstance(arg, ast.FieldRef) else self.scalar(arg)})"

    def s_call_stmt(self, node: ast.CallStmt) -> None:
        fieldref, call_in, call_into = node.routine, node.call_in, node.into
        args = node.args.items if node.args is not None else []
        routine = self.resolve_routine(node, fieldref)
        if routine is None:
            name = self.dotted(fieldref)
            if "." not in name:
                self.unresolved(node, name)
            self.out.line(f"raise _EsqlRuntimeError({('routine ' + name + ' is not defined')!r})")
            return
        if call_in is not None and routine.language != "DATABASE":
            self.error(call_in, "CALL … IN and EXTERNAL SCHEMA are only valid for LANGUAGE DATABASE routines")
        call = self.routine_call(routine, args, node, call_in)
        outs = [
            (i, p) for i, p in enumerate(routine.params) if p[0] in ("OUT", "INOUT") and p[2] != "REFERENCE"
        ]
        result = self.fresh()
        self.out.line(f"{result} = {call}")
        if routine.language == "DATABASE":
            for n, (i, _p) in enumerate(outs, 1):
                if i < len(args):
                    self.assign_to(args[i], f"{result}[{n}]")
            for n, target in enumerate(args[len(routine.params) :]):
                self.assign_result_set(target, f"{result}[-1][{n}]")
            self.out.line(f"{result} = {result}[0]")
        elif outs and routine.language in RUNNABLE_LANGUAGES:
            for n, (i, _p) in enumerate(outs, 1):
                if i < len(args):
                    self.assign_to(args[i], f"{result}[{n}]")
            self.out.line(f"{result} = {result}[0]")
        if call_into is not None:
            self.assign_to(call_into.target, result)

    def routine_call(self, routine: Routine, args: list[Node], node: Node, qualifier: Any = None) -> str:
        """Code calling a user routine; a routine that cannot run here fails at the call, not its declaration."""
        codes = self.call_args(routine, args, node)
        if routine.language not in RUNNABLE_LANGUAGES:
            return f"_foreign_routine({routine.qualified!r}, {routine.language!r})"
        if routine.language == "DATABASE":
            # Called in place, so a database error or a dialect's refusal points at the CALL.
            if routine.external is None:
                return f"_undefined({routine.qualified!r})"
            schema = self.call_schema(qualifier) if qualifier is not None else "None"
            directions = [p[0] for p in routine.params]
            return (
                f"_db_call(ctx, {routine.external!r}, [{', '.join(codes)}], {directions!r}, "
                f"{routine.returns is not None}, {schema}, {routine.result_sets})"
            )
        return f"{routine.py}(ctx{''.join(', ' + c for c in codes)})"

    def call_schema(self, qualifier: ast.CallIn | ast.CallExternalSchema) -> str:
        """The database schema of CALL … IN Database[.dsn].schema or … EXTERNAL SCHEMA 'schema'."""
        if isinstance(qualifier, ast.CallExternalSchema):
            return self.scalar(qualifier.schema)
        parts = self.db_table(qualifier.target, what="schema")
        return f"{parts}[-1]"

    def assign_result_set(self, target: Node, code: str) -> None:
        """A DYNAMIC RESULT SETS argument: a field reference ending in [] receives the rows."""
        if not (
            isinstance(target, ast.FieldRef)
            and target.elems
            and isinstance(target.elems[-1].index, ast.IndexAll)
        ):
            self.error(target, "a result set argument must be a field reference ending in []")
            return
        elems = target.elems
        parent = self.target(target, upto=len(elems) - 1)
        nm, ns, ftype = self.step_parts(elems[-1])
        self.out.line(f"_assign_list({parent}, {nm}, {ns}, {ftype}, {code}, _to_element_value)")

    def assign_to(self, target: Node, code: str) -> None:
        if isinstance(target, ast.FieldRef) and not target.elems and target.start.index is None:
            var = self.lookup(ident(target.start.name))
            if var is not None and var.kind in ("scalar",):
                self.note_global(var)
                declared = checks.normal_type(var.type_name)
                if declared in checks.CASTABLE:
                    code = f"_as_type({code}, {declared!r})"
                self.out.line(f"{var.py} = {code}")
                return
        if not isinstance(target, ast.FieldRef):
            self.error(target, "an OUT or INOUT argument must be a variable or a field reference")
            return
        self.out.line(f"_assign_value({self.target(target)}, {code}, _to_element_value)")

    def dotted(self, fieldref: ast.FieldRef) -> str:
        parts = [ident(fieldref.start.name)]
        for elem in fieldref.elems:
            part = elem.step.first
            parts.append(ident(part) if ast.is_name(part) else "*")
        return ".".join(parts)

    # -- tree statements

    def s_create_stmt(self, node: ast.CreateStmt) -> None:
        where, target, create_as, domain, tail = (
            node.where,
            node.target,
            node.create_as,
            node.domain,
            node.content,
        )
        dom = self.scalar(domain.domain) if domain is not None else "None"
        if isinstance(where, ast.WhereField):
            new = self.fresh()
            self.out.line(f"{new} = {self.target(target)}")
            if domain is not None:
                self.out.line(f"_set_domain({new}, {dom})")
        else:
            relation = keyword(where.relation)
            anchor = self.fresh()
            # IBM navigates to the target field creating the fields on the way, as SET does.
            self.check_writable(target)
            self.out.line(f"{anchor} = {self.target(target)}")
            new = self.fresh()
            self.out.line(f"{new} = _place({anchor}, {relation!r}, _new_field({dom}))")
        if tail is not None:
            if isinstance(tail, ast.CreateValues):
                for cv in tail.values:
                    attr = keyword(cv.attr)
                    value = self.scalar(cv.value)
                    func = {
                        "VALUE": "_set_value",
                        "NAME": "_set_name",
                        "NAMESPACE": "_set_namespace",
                        "TYPE": "_set_type",
                    }[attr]
                    self.out.line(f"{func}({new}, {value})")
            elif isinstance(tail, ast.CreateFrom):
                self.out.line(f"_create_from({new}, _deref({self.element_or_value(tail.source)}))")
            elif isinstance(tail, (ast.CreateParse, ast.CreateParsePos)):
                if isinstance(tail, ast.CreateParsePos):
                    opts = self.positional_opts(tail.options, "PARSE")
                else:
                    opts = {keyword(o.option): self.scalar(o.value) for o in tail.options}
                self.out.line(
                    f"_parse_into({new}, {dom}, {self.scalar(tail.source)}, "
                    f"{opts.get('CCSID', 'None')}, {opts.get('ENCODING', 'None')}, {opts.get('OPTIONS', 'None')}, "
                    f"{opts.get('SET', 'None')}, {opts.get('TYPE', 'None')}, {opts.get('FORMAT', 'None')})"
                )
            elif isinstance(tail, ast.CreateRepeat):
                value = self.scalar(tail.value) if tail.value is not None else "_MISSING"
                anchor_code = anchor if not isinstance(where, ast.WhereField) else "None"
                self.out.line(f"_create_repeat({new}, {anchor_code}, {value})")
            elif isinstance(tail, ast.CreateIdentity):
                # CREATE statement: IDENTITY gives the new field's type, namespace and name in one
                # path element (the name may be left out: IDENTITY (JSON.Array)), and a VALUE
                nm, ns, ftype = self.step_parts(tail.element)
                if nm != "None":
                    self.out.line(f"_set_name({new}, {nm})")
                if ns not in ("''", "None"):
                    self.out.line(f"_set_namespace({new}, {ns})")
                if ftype != "None":
                    self.out.line(f"_set_type({new}, {ftype})")
                if tail.value is not None:
                    self.out.line(f"_set_value({new}, {self.scalar(tail.value)})")
        if create_as is not None:
            ref = create_as.target
            var = self.lookup(ident(ref.start.name)) if not ref.elems else None
            if var is None or var.kind != "ref":
                self.error(ref, "CREATE … AS needs a declared REFERENCE variable")
            else:
                self.out.line(f"{var.py} = _Reference({new})")

    def s_delete_field(self, node: ast.DeleteField) -> None:
        self.check_writable(node.target)
        self.out.line(f"_delete({self.element(node.target)})")

    def s_delete_rel(self, node: ast.DeleteRel) -> None:
        relation = keyword(node.relation)
        self.out.line(f"_delete(_relative({self.element(node.target)}, {relation!r}))")

    def check_writable(self, fieldref: ast.FieldRef) -> None:
        name = ident(fieldref.start.name)
        if self.lookup(name) is None and name in CORRELATION and not self.writable(name):
            self.error(fieldref, self.read_only_message(name))

    def module_kind(self) -> str | None:
        """COMPUTE, FILTER, DATABASE … of the module being generated (None: bare code, schema routines)."""
        if self.module is None or self.module.node is None:
            return None
        return self.module.kind

    def correlation_available(self, where: Any, name: str) -> bool:
        """Whether this module kind has the correlation name; reports it where it is used if not."""
        kind = self.module_kind()
        if kind == "COMPUTE" and name not in COMPUTE_NAMES:
            self.error(
                where,
                f"'{name}' is not a correlation name of a COMPUTE module "
                "(a Compute node has InputRoot, OutputRoot, InputLocalEnvironment …)",
            )
            return False
        if kind in ("FILTER", "DATABASE") and name not in SINGLE_MESSAGE_NAMES:
            self.error(
                where,
                f"'{name}' is not a correlation name of a {kind} module "
                f"(a {kind.title()} node has Root, Body, Properties, LocalEnvironment …)",
            )
            return False
        return True

    def writable(self, name: str) -> bool:
        if self.module_kind() in ("FILTER", "DATABASE"):
            return name in SINGLE_MESSAGE_WRITABLE
        return name in WRITABLE_ROOTS

    def read_only_message(self, name: str) -> str:
        kind = self.module_kind()
        if kind in ("FILTER", "DATABASE"):
            return f"'{name}' is read-only in a {kind} module; only LocalEnvironment and Environment can be changed"
        return f"'{name}' is read-only; only output trees and Environment can be changed"

    def ref_var(self, fieldref: ast.FieldRef, verb: str) -> Var | None:
        if not fieldref.elems:
            var = self.lookup(ident(fieldref.start.name))
            if var is not None and var.kind == "ref":
                return var
        self.error(fieldref, f"{verb} needs a REFERENCE variable")
        return None

    def s_move_stmt(self, node: ast.MoveStmt) -> None:
        var = self.ref_var(node.target, "MOVE")
        if var is None:
            return
        target = node.destination
        if isinstance(target, ast.MoveTo):
            self.out.line(f"_move_to({var.py}, {self.element(target.target)})")
        elif isinstance(target, ast.MoveParent):
            self.out.line(f"_move({var.py}, 'PARENT')")
        else:
            relation = keyword(target.relation)
            name = ns = ftype = "None"
            repeat_type = repeat_name = False
            for qual in target.qualifiers:
                if isinstance(qual, ast.MoveAnyNamespace):
                    ns = "None"
                elif isinstance(qual, ast.MoveIdentity):
                    name, ns, ftype = self.step_parts(qual.element)
                    if qual.element.index is not None:
                        self.error(qual, "an index is not valid in a MOVE … IDENTITY path element")
                elif isinstance(qual, ast.MoveFilter):
                    attr = keyword(qual.attr)
                    value = self.scalar(qual.value)
                    if attr == "NAME":
                        name = value
                    elif attr == "NAMESPACE":
                        ns = value
                    elif attr == "TYPE":
                        ftype = value
                    else:
                        self.error(qual, "MOVE accepts TYPE, NAMESPACE and NAME only")
                else:
                    assert isinstance(qual, ast.MoveRepeat)
                    attrs = [keyword(c) for c in qual.attrs]
                    repeat_type = "TYPE" in attrs or not attrs
                    repeat_name = "NAME" in attrs or not attrs
            self.out.line(
                f"_move({var.py}, {relation!r}, {name}, {ns}, {ftype}, {repeat_type}, {repeat_name})"
            )

    def s_attach_stmt(self, node: ast.AttachStmt) -> None:
        source, target, relation = node.source, node.target, node.relation
        self.out.line(
            f"_attach(_deref({self.element_or_value(source)}), {self.element(target)}, {keyword(relation)!r})"
        )

    def s_detach_stmt(self, node: ast.DetachStmt) -> None:
        self.out.line(f"_delete(_deref({self.element_or_value(node.target)}))")

    # -- node interaction

    def s_propagate_stmt(self, node: ast.PropagateStmt) -> None:
        to = node.destination
        terminal, is_label = "'out'", False
        if to is not None:
            is_label = keyword(to.prop_kind) == "LABEL"
            terminal = self.scalar(to.target)
        sources = {"ENVIRONMENT": "None", "MESSAGE": "None", "EXCEPTION": "None"}
        delete = True
        for opt in node.options:
            if isinstance(opt, ast.PropSource):
                sources[keyword(opt.option)] = f"_deref({self.element_or_value(opt.value)})"
            elif isinstance(opt, ast.PropFlag) and keyword(opt.flag) == "DELETE":
                delete = keyword(opt.value) == "DEFAULT"
        if self.module is not None and self.module.kind == "FILTER":
            self.error(node, "PROPAGATE is not allowed in a FILTER module")
        self.out.line(
            f"_propagate(ctx, {terminal}, {is_label}, {sources['ENVIRONMENT']}, {sources['MESSAGE']}, "
            f"{sources['EXCEPTION']}, {delete})"
        )

    def s_throw_stmt(self, node: ast.ThrowStmt) -> None:
        user = node.user is not None
        # THROW statement: an omitted SEVERITY is 1, CATALOG BIPmsgs, MESSAGE 2951
        opts: dict[str, str] = {"SEVERITY": "1", "CATALOG": "'BIPmsgs'", "MESSAGE": "2951"}
        values = "[]"
        for opt in node.options:
            if isinstance(opt, ast.ThrowValue):
                opts[keyword(opt.option)] = self.scalar(opt.value)
            else:
                assert isinstance(opt, ast.ThrowValues)
                values = "[" + ", ".join(self.scalar(a) for a in (opt.args.items if opt.args else [])) + "]"
        self.out.line(
            f"raise _throw({opts['SEVERITY']}, {opts['CATALOG']}, {opts['MESSAGE']}, {values}, {user})"
        )

    def s_resignal_stmt(self, node: Node) -> None:
        if not self.handler_exc:
            self.error(node, "RESIGNAL outside a handler")
            return
        self.out.line(f"raise {self.handler_exc[-1]}")

    def s_eval_stmt(self, node: ast.EvalStmt) -> None:
        """EVAL('statements'): compiled at run time by this compiler, run in this scope.

        The variables in scope go in by value and the assignable ones come back, so the text
        reads and sets them as the surrounding code would.
        """
        site = self.eval_site()
        values = "{" + ", ".join(f"{py!r}: {py}" for py in site.locals) + "}"
        result = self.fresh()
        self.out.line(f"{result} = _eval(ctx, {self.scalar(node.text)}, {self.const(site)}, {values}, True)")
        for var in site.scope.values():
            if var.py in site.locals and var.kind in ("scalar", "ref") and not var.constant:
                self.out.line(f"{var.py} = {result}[{var.py!r}]")

    def eval_site(self) -> EvalSite:
        """What EVAL text compiled at run time needs to see of this place in the program."""
        scope: dict[str, Var] = {}
        for table in self.scopes:
            scope.update({name: var for name, var in table.items() if var.kind != "column"})
        local = [var.py for var in scope.values() if var.py.startswith("v_")]
        depth = max((var.scope_level for var in scope.values()), default=0) + 1
        module = self.module.key if self.module is not None else None
        return EvalSite(scope, local, module, self.filename, depth)

    def s_log_stmt(self, node: ast.LogStmt) -> None:
        parts = []
        for opt in node.options:
            if isinstance(opt, ast.LogValue):
                parts.append(f"({keyword(opt.option)!r}, {self.scalar(opt.value)})")
            elif isinstance(opt, ast.LogValues):
                args = opt.args.items if opt.args is not None else []
                parts.append("('VALUES', [" + ", ".join(self.scalar(a) for a in args) + "])")
        self.out.line(f"_log(ctx, {keyword(node.log_kind)!r}, [{', '.join(parts)}])")

    # -- database statements

    def db_table(self, fieldref: ast.FieldRef, what: str = "table") -> str:
        start = ident(fieldref.start.name)
        if start != "Database":
            self.error(fieldref, f"a {what} reference must start with Database")
        parts = []
        for elem in fieldref.elems:
            part = elem.step.first
            if isinstance(part, ast.Dynamic):
                parts.append(self.scalar(part.expr))
            else:
                parts.append(repr(ident(part)))
        if not parts:
            self.error(fieldref, f"a {what} name is missing after Database")
        return "[" + ", ".join(parts) + "]"

    def s_insert_stmt(self, node: ast.InsertStmt) -> None:
        table = self.db_table(node.table)
        cols = [ident(c) for c in node.columns]
        values = [self.scalar(a) for a in node.values.items]
        if cols and len(cols) != len(values):
            self.error(node, f"INSERT names {len(cols)} column(s) but gives {len(values)} value(s)")
        self.out.line(f"_db_insert(ctx, {table}, {cols!r}, [{', '.join(values)}])")

    def db_scope(self, *aliases: str) -> None:
        self.scopes.append({alias: Var(alias, "_COLUMN", "column") for alias in aliases})

    def s_update_stmt(self, node: ast.UpdateStmt) -> None:
        table = self.db_table(node.table)
        alias_node = node.alias
        alias = ident(alias_node) if alias_node is not None else self.last_part(node.table)
        sets = node.assignments
        where = node.condition
        self.db_scope(alias)
        scope = SqlScope([alias])
        assigns = ", ".join(f"({ident(s.name)!r}, {self.sql(s.value, scope)})" for s in sets)
        cond = self.sql(where, scope) if where is not None else "None"
        self.scopes.pop()
        self.out.line(f"_db_update(ctx, {table}, [{assigns}], {cond})")

    def s_delete_from_stmt(self, node: ast.DeleteFromStmt) -> None:
        table = self.db_table(node.table)
        alias = ident(node.alias) if node.alias is not None else self.last_part(node.table)
        self.db_scope(alias)
        cond = self.sql(node.condition, SqlScope([alias])) if node.condition is not None else "None"
        self.scopes.pop()
        self.out.line(f"_db_delete(ctx, {table}, {cond})")

    def last_part(self, fieldref: ast.FieldRef) -> str:
        part = fieldref.elems[-1].step.first if fieldref.elems else None
        return ident(part) if ast.is_name(part) else "T"

    def s_commit_stmt(self, node: ast.CommitStmt) -> None:
        """COMMIT / ROLLBACK [Database.dsn]: end the data source's transaction now, not with the flow."""
        kind, ref = node.action, node.connection
        parts = self.db_table(ref, what="data source") if ref is not None else "[]"
        self.out.line(f"_db_end(ctx, {keyword(kind) == 'COMMIT'}, {parts})")

    def s_passthru_stmt(self, node: Node) -> None:
        self.out.line(f"{self.passthru_call(node)}")

    def passthru_call(self, node: Node) -> str:
        """PASSTHRU in its statement and function forms: SQL text, parameters, optional TO."""
        if isinstance(node, ast.PassthruFn):
            node = node.call
        parts: list[Node]
        if isinstance(node, ast.PassthruStmt) and isinstance(
            node.statement, (ast.ParenList, ast.ParenPassthru)
        ):
            parts = [*node.statement.iter_children(), *(c for c in (node.to, node.values) if c is not None)]
        else:
            parts = list(node.iter_children())
        exprs: list[Node] = []
        to: ast.PassthruTo | None = None
        values: ast.PassthruValues | None = None
        for part in parts:
            if isinstance(part, ast.Args):
                exprs.extend(part.items)
            elif isinstance(part, ast.PassthruTo):
                to = part
            elif isinstance(part, ast.PassthruValues):
                values = part
            else:
                exprs.append(part)
        sql_args = [self.scalar(e) for e in exprs[1:]]
        if values is not None and values.args is not None:
            sql_args += [self.scalar(a) for a in values.args.items]
        target = self.db_table(to.target) if to is not None else "None"

        return f"_passthru(ctx, {self.scalar(exprs[0])}, [{', '.join(sql_args)}], {target})"

    # ------------------------------------------------------------------ expressions

    def scalar(self, node: Node) -> str:
        kind, code = self.expr(node)
        return self.to_scalar(kind, code)

    def to_scalar(self, kind: str, code: str) -> str:
        if kind == "elem":
            return f"_value({code})"
        if kind == "list":
            return f"_values({code})"
        if kind == "ref":
            return f"_value({code}.element)"
        return code

    def element_or_value(self, node: Node) -> str:
        kind, code = self.expr(node)
        return code

    def expr(self, node: Any) -> tuple[str, str]:
        """(kind, python code) where kind is scalar, bool, elem, list, row or null."""
        method = getattr(self, f"e_{node.kind}", None)
        if method is None:
            self.error(node, f"expression {node.kind} is not supported")
            return "scalar", "None"
        # Parentheses cost the generated code nothing, but the generator recursion all the same.
        weight = 0 if node.kind == "paren" else 1
        if self.depth + weight > MAX_NESTING or self.raw_depth >= 4 * MAX_NESTING:
            if not self.too_deep:
                self.error(node, f"expression nested too deeply (more than {MAX_NESTING} levels)")
            self.too_deep = True
            return "scalar", "None"
        self.depth += weight
        self.raw_depth += 1
        try:
            return method(node)  # type: ignore[no-any-return]
        finally:
            self.depth -= weight
            self.raw_depth -= 1
            if self.raw_depth == 0:
                self.too_deep = False

    # literals
    def e_int_lit(self, node: ast.IntLit) -> tuple[str, str]:
        value = int(str(node.token))
        if value >= 2**63:
            self.error(node, f"integer literal {value} is out of the 64-bit INTEGER range")
        return "scalar", repr(value)

    def e_hex_int_lit(self, node: ast.HexIntLit) -> tuple[str, str]:
        return "scalar", repr(int(str(node.token), 16))

    def e_decimal_lit(self, node: ast.DecimalLit) -> tuple[str, str]:
        return "scalar", self.const(Decimal(str(node.token)))

    def e_float_lit(self, node: ast.FloatLit) -> tuple[str, str]:
        return "scalar", repr(float(str(node.token)))

    def e_string_lit(self, node: ast.StringLit) -> tuple[str, str]:
        return "scalar", repr(node.value)

    def e_bool_lit(self, node: ast.BoolLit) -> tuple[str, str]:
        word = keyword(node.value)
        return "bool", {"TRUE": "True", "FALSE": "False"}.get(word, "None")

    def e_null_lit(self, node: Node) -> tuple[str, str]:
        return "null", "None"

    def typed_literal(self, node: Node, kind: str, text: str, qualifier: str | None) -> tuple[str, str]:
        try:
            value = self.values.literal(kind, text, qualifier)
        except Exception as exc:  # the literal's own message is the diagnostic
            self.error(node, f"invalid {kind} literal '{text}': {exc}")
            return "scalar", "None"
        return "scalar", self.const(value)

    def e_blob_lit(self, node: ast.BlobLit) -> tuple[str, str]:
        text = str(node.token)[2:-1]
        if len("".join(text.split())) % 2:
            self.error(node, "a BLOB literal needs an even number of hex digits")
            return "scalar", "None"
        return self.typed_literal(node, "X", text, None)

    def e_bit_lit(self, node: ast.BitLit) -> tuple[str, str]:
        return self.typed_literal(node, "B", str(node.token)[2:-1], None)

    def e_typed_lit(self, node: ast.TypedLit) -> tuple[str, str]:
        return self.typed_literal(node, keyword(node.type), string_value(node.token), None)

    def e_interval_lit(self, node: ast.IntervalLit) -> tuple[str, str]:
        return self.typed_literal(node, "INTERVAL", string_value(node.token), self.qualifier(node.qualifier))

    def qualifier(self, node: ast.IntervalQualifier) -> str:
        units = [keyword(u) for u in (node.start, node.end) if u is not None]
        return " TO ".join(units)

    def e_interval_diff(self, node: ast.IntervalDiff) -> tuple[str, str]:
        return "scalar", f"_interval_of({self.scalar(node.expr)}, {self.qualifier(node.qualifier)!r})"

    # operators
    def fold(self, node: Node, kinds: tuple[str, ...]) -> str:
        """Code for a left-associative chain of operators (``a || b || c …``, ``a AND b AND …``).

        The chain is walked without recursion, and a long one becomes one flat tuple of
        assignments to a temporary, so thousands of operands neither exhaust Python's parser
        (200 nested parentheses) nor the compiler's own stack; evaluation order is unchanged.
        """
        first, links = left_chain(node, kinds)
        code = self.scalar(first)
        steps = [self.link(link) for link in links]
        if len(steps) < FLAT_CHAIN:
            for step in steps:
                code = step(code)
            return code
        t = self.fresh()
        parts = [f"{t} := {code}"] + [f"{t} := {step(t)}" for step in steps]
        return "(" + ", ".join(f"({p})" for p in parts) + ")[-1]"

    def link(self, node: Any) -> Any:
        """How one operator of a chain combines the value so far (code) with its right operand."""
        d = node.kind
        if isinstance(node, ast.BinOp):
            checks.check_arithmetic(self, node)
            func, right = BINOPS[keyword(node.op)], self.scalar(node.right)
            return lambda left: f"{func}({left}, {right})"
        right = self.scalar(node.right)
        if d == "concat":
            return lambda left: f"_concat({left}, {right})"
        t = self.fresh()
        if d == "and_op":
            return lambda left: f"(False if ({t} := {left}) is False else _and({t}, {right}))"
        return lambda left: f"(True if ({t} := {left}) is True else _or({t}, {right}))"

    def e_or_op(self, node: Node) -> tuple[str, str]:
        return "bool", self.fold(node, ("and_op", "or_op"))

    e_and_op = e_or_op

    def e_not_op(self, node: ast.NotOp) -> tuple[str, str]:
        return "bool", f"_not({self.scalar(node.operand)})"

    def e_compare(self, node: ast.Compare) -> tuple[str, str]:
        checks.check_comparison(self, node)
        return (
            "bool",
            f"{COMPARE[keyword(node.op)]}({self.comparand(node.left)}, {self.comparand(node.right)})",
        )

    def comparand(self, node: Node) -> str:
        """ROW and LIST values compare as trees/lists; a field reference compares by its value."""
        kind, code = self.expr(node)
        if isinstance(node, (ast.RowExpr, ast.ListExpr)):
            return code
        if isinstance(node, ast.FieldRef) and not node.elems:
            var = self.lookup(ident(node.start.name))
            if var is not None and var.kind == "row":
                return code
        return self.to_scalar(kind, code)

    def e_between(self, node: ast.Between) -> tuple[str, str]:
        v, neg, mod, lo, hi = node.operand, node.negated, node.mode, node.low, node.high
        code = (
            f"_between({self.scalar(v)}, {self.scalar(lo)}, {self.scalar(hi)}, {keyword(mod) == 'SYMMETRIC'})"
        )
        return "bool", f"_not({code})" if neg is not None else code

    def e_in_list(self, node: ast.InList) -> tuple[str, str]:
        v, neg, args = node.operand, node.negated, node.values
        code = f"_in({self.scalar(v)}, [{', '.join(self.scalar(a) for a in args.items)}])"
        return "bool", f"_not({code})" if neg is not None else code

    def e_like(self, node: ast.Like) -> tuple[str, str]:
        v, neg, pat, esc = node.operand, node.negated, node.pattern, node.escape
        code = (
            f"_like({self.scalar(v)}, {self.scalar(pat)}, {self.scalar(esc) if esc is not None else 'None'})"
        )
        return "bool", f"_not({code})" if neg is not None else code

    def e_is_test(self, node: ast.IsTest) -> tuple[str, str]:
        v, neg, sign, what = node.operand, node.negated, node.sign, node.what
        word = keyword(what)
        if sign is not None:
            if word not in ("INF", "INFINITY"):
                self.error(sign, f"a sign is only valid before INF or INFINITY, not {word}")
            word = keyword(sign) + "INF"
        value = self.scalar(v)
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_.]*", value):
            value = f"_same({value})"  # "is" on a literal is a SyntaxWarning in Python
        code = {
            "NULL": f"({value} is None)",
            "TRUE": f"({value} is True)",
            "FALSE": f"({value} is False)",
            "UNKNOWN": f"({value} is None)",
        }.get(word, f"_is_number_kind({value}, {word!r})")
        return "bool", f"(not {code})" if neg is not None else code

    def e_binop(self, node: Node) -> tuple[str, str]:
        return "scalar", self.fold(node, ("binop", "concat"))

    e_concat = e_binop

    def e_unary_op(self, node: ast.UnaryOp) -> tuple[str, str]:
        op, v = node.op, node.operand
        if keyword(op) == "-":
            if isinstance(v, (ast.IntLit, ast.DecimalLit, ast.FloatLit)):
                kind, code = self.expr(v)
                if isinstance(v, ast.IntLit):
                    return "scalar", repr(-int(str(v.token)))
                return "scalar", f"_neg({code})"
            return "scalar", f"_neg({self.scalar(v)})"
        return self.expr(v)

    def e_paren(self, node: ast.Paren) -> tuple[str, str]:
        return self.expr(node.expr)

    def e_paren_list(self, node: Node) -> tuple[str, str]:
        self.error(node, "a parenthesised list is only valid as the argument of PASSTHRU")
        return "scalar", "None"

    e_paren_passthru = e_paren_list

    def e_passthru_fn(self, node: ast.PassthruFn) -> tuple[str, str]:
        inner = node.call
        if isinstance(inner, ast.Paren):
            return "list", f"_passthru(ctx, {self.scalar(inner.expr)}, [], None)"
        return "list", self.passthru_call(node)

    def e_case_expr(self, node: ast.CaseExpr) -> tuple[str, str]:
        subject = node.operand
        whens = node.whens
        else_node = node.else_value
        code = self.scalar(else_node) if else_node is not None else "None"
        subj_code = self.scalar(subject) if subject is not None else None
        t = self.fresh()
        for when in reversed(whens):
            cond_node, value_node = when.condition, when.value
            if subj_code is not None:
                cond = f"_eq({t}, {self.scalar(cond_node)}) is True"
            else:
                cond = self.condition(cond_node)
            code = f"({self.scalar(value_node)} if {cond} else {code})"
        if subj_code is not None:
            # The subject is evaluated once and bound as the lambda's parameter for every WHEN.
            code = f"_case_subject({subj_code}, lambda {t}: {code})"
        return "scalar", code

    def e_cast_expr(self, node: ast.CastExpr) -> tuple[str, str]:
        args, type_node = node.args, node.type
        if isinstance(type_node, ast.CastInterval):
            qualifier = type_node.qualifier
            tname = "INTERVAL" + (f" {self.qualifier(qualifier)}" if qualifier is not None else "")
            precision = []
        else:
            tname = str(type_node.token).upper()
            checks.check_type_name(self, type_node, tname)
            precision = [str(t) for t in (type_node.precision, type_node.scale) if t is not None]
        if precision:
            if tname not in ("DECIMAL", "DEC"):
                self.error(type_node, f"only DECIMAL takes a precision, not {tname}")
            tname = f"DECIMAL({', '.join(precision)})"
        opts = {}
        for opt in node.options:
            opts[keyword(opt.option).lower()] = self.scalar(opt.value)
        kw = "".join(f", {k}={v}" for k, v in opts.items())
        values = [self.scalar(a) for a in args.items]
        if len(values) == 1:
            return "scalar", f"_cast({values[0]}, {tname!r}{kw})"
        return "scalar", f"_cast_many([{', '.join(values)}], {tname!r}{kw})"

    def e_row_expr(self, node: ast.RowExpr) -> tuple[str, str]:
        fields = []
        for f in node.items:
            value_node, name_node = f.expr, f.alias
            name = self.alias_code(value_node, name_node)
            fields.append(f"({name}, {self.element_or_value(value_node)})")
        return "elem", f"_row_of([{', '.join(fields)}], _to_element_value)"

    def alias_code(self, value_node: Node, name_node: ast.AliasPath | None) -> str:
        """Code for the name a SELECT or ROW item gets: 'Name', None, or a path [(name, ns, type), …].

        ``AS Info.Name`` is a path below the row (IBM builds the Info level), each step optionally
        typed: ``AS (XMLNSC.Attribute)id``.
        """
        if name_node is not None:
            steps = []
            for elem in name_node.elems:
                if elem.index is not None:
                    self.error(elem, "an index is not valid in the name after AS")
                nm, ns, ftype = self.step_parts(elem)
                if nm == "None":
                    self.error(elem, "a wildcard is not valid in the name after AS")
                steps.append((nm, ns, ftype))
            if len(steps) == 1 and steps[0][1] == "''" and steps[0][2] == "None" and steps[0][0][:1] in "'\"":
                return steps[0][0]
            return "[" + ", ".join(f"({nm}, {ns}, {ftype})" for nm, ns, ftype in steps) + "]"
        if isinstance(value_node, ast.FieldRef) and value_node.elems:
            return repr(self.dotted(value_node).split(".")[-1])
        return "None"

    def e_list_expr(self, node: ast.ListExpr) -> tuple[str, str]:
        args = node.args.items if node.args is not None else []

        return "list", "[" + ", ".join(self.scalar(a) for a in args) + "]"

    # calls
    def e_call_star(self, node: ast.CallStar) -> tuple[str, str]:
        self.error(node, f"{self.dotted(node.function)}(*) is only valid in a SELECT list")
        return "scalar", "None"

    def e_call(self, node: ast.Call) -> tuple[str, str]:
        fieldref, call_args = node.function, node.call_args
        args = call_args.args.items if call_args is not None else []
        mode = call_args.mode if call_args is not None else None
        name = self.dotted(fieldref)
        upper = name.upper()
        if upper in TREE_BUILTINS:
            return self.tree_builtin(node, upper, args)
        if upper in AGGREGATES and "." not in name:
            self.error(node, f"{upper} is only valid in a SELECT list")
            return "scalar", "None"
        routine = self.resolve_routine(node, fieldref)
        if routine is None and upper == "EVAL" and "." not in name:
            if len(args) != 1:
                self.error(node, f"function EVAL takes 1 argument(s) but {len(args)} were given")
                return "scalar", "None"
            site = self.eval_site()
            values = "{" + ", ".join(f"{py!r}: {py}" for py in site.locals) + "}"
            return "scalar", f"_eval(ctx, {self.scalar(args[0])}, {self.const(site)}, {values}, False)"
        if routine is not None:
            call = self.routine_call(routine, args, node)
            if routine.returns is None and not any(p[0] in ("OUT", "INOUT") for p in routine.params):
                self.error(
                    node, f"procedure '{routine.name}' returns no value and cannot be used in an expression"
                )
            if routine.result_sets:
                self.error(node, f"routine '{routine.name}' returns result sets: use it in a CALL statement")
            if routine.language == "DATABASE" or (
                routine.language in RUNNABLE_LANGUAGES
                and any(p[0] in ("OUT", "INOUT") and p[2] != "REFERENCE" for p in routine.params)
            ):
                call += "[0]"
            return ("elem" if routine.returns in ("ROW", "REFERENCE") else "scalar"), call
        fdef = self.functions_env.get(upper)
        if fdef is None or "." in name:
            if "." in name:
                self.unresolved(node, name)
                return "scalar", f"_undefined({name!r})"
            self.unresolved(node, name)
            return "scalar", f"_undefined({name!r})"
        if mode is not None:
            if upper != "ROUND":
                self.error(mode, "MODE is only valid in ROUND")
            args_code = [self.scalar(a) for a in args] + [repr(ident(mode))]
            return "scalar", self.builtin(node, "ROUND", args_code, 3)
        if upper == "ROUND" and len(args) == 2:
            return "scalar", self.builtin(node, "ROUND", [self.scalar(a) for a in args] + ["None"], 3)
        if upper in FIELD_FUNCTIONS:
            codes = [self.field_arg(a) for a in args]
        else:
            codes = [self.scalar(a) for a in args]
        return "scalar", self.builtin(node, upper, codes, len(args))

    def field_arg(self, node: Node) -> str:
        kind, code = self.expr(node)
        if kind == "ref":
            return f"{code}.element"
        return f"_deref_soft({code})" if kind in ("scalar",) else code

    def builtin(self, node: Node, name: str, codes: list[str], nargs: int) -> str:
        fdef = self.functions_env.get(name)
        if fdef is None:
            self.error(node, f"unknown function '{name}'")
            return "None"
        lo, hi = fdef.min_args, fdef.max_args
        if nargs < lo or (hi is not None and hi >= 0 and nargs > hi):
            want = (
                f"{lo}" if lo == hi else f"{lo} to {hi}" if hi is not None and hi >= 0 else f"at least {lo}"
            )
            self.error(node, f"function {name} takes {want} argument(s) but {nargs} were given")
        self.used_functions.add(name)
        return f"_fn_{name}({', '.join(codes)})"

    def tree_builtin(self, node: Node, name: str, args: list[Node]) -> tuple[str, str]:
        if name in ("CARDINALITY", "EXISTS", "SINGULAR", "THE", "LASTMOVE") and len(args) != 1:
            self.error(node, f"function {name} takes 1 argument(s) but {len(args)} were given")
            return "scalar", "None"
        if name == "LASTMOVE":
            arg = args[0]
            if isinstance(arg, ast.FieldRef) and not arg.elems:
                var = self.lookup(ident(arg.start.name))
                if var is not None and var.kind == "ref":
                    return "bool", f"{var.py}.lastmove"
            self.error(node, "LASTMOVE needs a REFERENCE variable")
            return "scalar", "None"
        if name in ("CARDINALITY", "EXISTS", "SINGULAR"):
            arg = args[0]
            if isinstance(arg, ast.FieldRef):
                index = arg.elems[-1].index if arg.elems else arg.start.index
                if not isinstance(index, ast.IndexAll):
                    self.error(arg, f"the argument of {name} must be a list: end the field reference with []")
                    return "scalar", "None"
                if arg.elems and not self.has_list_before_last(arg):
                    parent = self.element(arg, upto=len(arg.elems) - 1)
                    nm, ns, ftype = self.step_parts(arg.elems[-1])
                    count = f"_count({parent}, {nm}, {ns}, {ftype})"
                    if name == "CARDINALITY":
                        return "scalar", count
                    if name == "EXISTS":
                        return "bool", f"({count} > 0)"
                    return "bool", f"({count} == 1)"
            kind, code = self.expr(arg)
            if kind not in ("list",):
                self.error(arg, f"the argument of {name} must be a list")
                return "scalar", "None"
            return ("scalar" if name == "CARDINALITY" else "bool"), f"_list_{name.lower()}({code})"
        if name == "THE":
            kind, code = self.expr(args[0])
            return (
                "elem" if kind in ("list", "elem") and isinstance(args[0], ast.FieldRef) else "scalar"
            ), f"_first({code})"
        if name == "COALESCE":
            if not args:
                self.error(node, "function COALESCE takes at least 1 argument(s) but 0 were given")
                return "scalar", "None"
            code = self.scalar(args[-1])
            for a in reversed(args[:-1]):
                t = self.fresh()
                code = f"({t} if ({t} := {self.scalar(a)}) is not None else {code})"
            return "scalar", code
        if name == "NULLIF":
            if len(args) != 2:
                self.error(node, f"function NULLIF takes 2 argument(s) but {len(args)} were given")
                return "scalar", "None"
            return "scalar", f"_nullif({self.scalar(args[0])}, {self.scalar(args[1])})"
        return "scalar", "None"

    #: The older comma form of ASBITSTREAM and CREATE … PARSE gives its options by position.
    POSITIONAL_OPTIONS = ("ENCODING", "CCSID", "SET", "TYPE", "FORMAT", "OPTIONS")

    def positional_opts(self, node: ast.PositionalOpts, what: str) -> dict[str, str]:
        """``(x, enc, ccsid, set, type, format, options)``, any position empty: the options given."""
        values = node.values
        if len(values) > len(self.POSITIONAL_OPTIONS):
            self.error(node, f"{what} takes at most {len(self.POSITIONAL_OPTIONS) + 1} arguments")
        return {
            name: self.scalar(value)
            for name, value in zip(self.POSITIONAL_OPTIONS, values, strict=False)
            if value is not None
        }

    def e_asbitstream_pos(self, node: ast.AsbitstreamPos) -> tuple[str, str]:
        return self.asbitstream_call(node.source, self.positional_opts(node.options, "ASBITSTREAM"))

    def e_asbitstream(self, node: ast.Asbitstream) -> tuple[str, str]:
        opts = {keyword(o.option): self.scalar(o.value) for o in node.options}
        return self.asbitstream_call(node.source, opts)

    def asbitstream_call(self, field: Any, opts: dict[str, str]) -> tuple[str, str]:
        target = self.field_arg(field)
        return "scalar", (
            f"_asbitstream({target}, {opts.get('ENCODING', 'None')}, {opts.get('CCSID', 'None')}, "
            f"{opts.get('SET', 'None')}, {opts.get('TYPE', 'None')}, {opts.get('FORMAT', 'None')}, "
            f"{opts.get('OPTIONS', 'None')})"
        )

    def e_substring(self, node: ast.Substring) -> tuple[str, str]:
        s, how, a, b = node.source, node.mode, node.start, node.length
        word = keyword(how)
        if word == "FROM":
            return "scalar", self.builtin(
                node,
                "SUBSTRING",
                [self.scalar(s), self.scalar(a), self.scalar(b) if b is not None else "None"],
                3,
            )
        if b is not None:
            # SUBSTRING function: StringLength limits the BEFORE and AFTER forms too
            codes = [self.scalar(s), self.scalar(a), self.scalar(b)]
            return "scalar", self.builtin(node, f"SUBSTRING_{word}", codes, 3)
        return "scalar", self.builtin(node, f"SUBSTRING_{word}", [self.scalar(s), self.scalar(a)], 2)

    def e_position(self, node: ast.PositionFn) -> tuple[str, str]:
        n, s, f, r = node.needle, node.haystack, node.start, node.repeat
        codes = [self.scalar(n), self.scalar(s)] + [
            self.scalar(x) if x is not None else "None" for x in (f, r)
        ]
        return "scalar", self.builtin(node, "POSITION", codes, 4)

    def e_trim_from(self, node: ast.TrimFrom) -> tuple[str, str]:
        spec, chars, s = node.spec, node.chars, node.source
        return "scalar", self.builtin(
            node,
            "TRIM",
            [
                self.scalar(s),
                repr(keyword(spec) or "BOTH"),
                self.scalar(chars) if chars is not None else "None",
            ],
            3,
        )

    def e_trim_plain(self, node: ast.TrimPlain) -> tuple[str, str]:
        return "scalar", self.builtin(node, "TRIM", [self.scalar(node.source), "'BOTH'", "None"], 3)

    def e_extract(self, node: ast.Extract) -> tuple[str, str]:
        part = ident(node.part).upper()
        return "scalar", self.builtin(node, "EXTRACT", [repr(part), self.scalar(node.source)], 2)

    def e_overlay(self, node: ast.Overlay) -> tuple[str, str]:
        s, r, a, b = node.source, node.placing, node.start, node.length
        codes = [self.scalar(s), self.scalar(r), self.scalar(a), self.scalar(b) if b is not None else "None"]
        return "scalar", self.builtin(node, "OVERLAY", codes, 4)

    def e_quantified(self, node: ast.Quantified) -> tuple[str, str]:
        quant, source, alias_node, pred = node.quantifier, node.source, node.alias, node.condition
        alias = ident(alias_node)
        items = self.element_list(source)
        var = Var(alias, mangle("v_", alias) + f"_{self.fresh('q')}", "alias", "REFERENCE")
        self.scopes.append({alias: var})
        cond = self.scalar(pred)
        self.scopes.pop()
        func = "_for_all" if keyword(quant) == "ALL" else "_for_any"
        return "bool", f"{func}({items}, lambda {var.py}: {cond})"

    # SELECT
    def e_select_expr(self, node: ast.SelectExpr) -> tuple[str, str]:
        select_list = node.select_list
        froms = node.sources
        where = node.condition
        if any(ident(f.source.start.name) == "Database" for f in froms):
            return self.db_select(node, select_list, froms, where)
        fn = self.fresh("_select")
        lines: list[str] = [f"def {fn}():", "    _res = []"]
        indent = "    "
        aliases: dict[str, Var] = {}
        for f in froms:
            ref, alias_node = f.source, f.alias
            alias = (
                ident(alias_node)
                if alias_node is not None
                else self.last_part(ref)
                if ref.elems
                else ident(ref.start.name)
            )
            self.scopes.append(dict(aliases))
            items = self.element_list(ref)
            self.scopes.pop()
            var = Var(alias, mangle("v_", alias) + f"_{self.fresh('s')}", "alias", "REFERENCE")
            aliases[alias] = var
            lines.append(f"{indent}for {var.py} in {items}:")
            indent += "    "
        self.scopes.append(aliases)
        if where is not None:
            lines.append(f"{indent}if not ({self.condition(where)}):")
            lines.append(f"{indent}    continue")
        result_kind = "list"
        if isinstance(select_list, ast.SelectItem):
            kind, code = self.expr(select_list.expr)
            value = f"_copy_or_value({code})" if kind in ("elem", "ref") else code
            lines.append(f"{indent}_res.append({value})")
        elif isinstance(select_list, ast.SelectStar):
            first = next(iter(aliases.values()))
            lines.append(f"{indent}_res.append({first.py}.copy())")
        else:
            assert isinstance(select_list, ast.SelectFields)
            fields = select_list.items
            aggs = [self.aggregate(f.expr) for f in fields]
            if any(a is not None for a in aggs):
                if not all(a is not None for a in aggs):
                    self.error(select_list, "a SELECT list cannot mix aggregate functions and plain fields")
                for i, (_func, arg) in enumerate(aggs):  # type: ignore[misc]
                    value = "1" if arg is None else self.scalar(arg)
                    lines.append(f"{indent}_res.append(({i}, {value}))")
                self.scopes.pop()
                lines.append(f"    return _aggregate(_res, {[a[0] for a in aggs]!r})")  # type: ignore[index]
                self.pre[-1].extend(lines)
                names = [self.alias_code(f.expr, f.alias) for f in fields]
                if len(fields) == 1 and fields[0].alias is None:
                    return "scalar", f"{fn}()[0]"
                return "elem", f"_row_of(_zip_names([{', '.join(names)}], {fn}()), _to_element_value)"
            parts = []
            for item in fields:
                value_node, name_node = item.expr, item.alias
                name = self.alias_code(value_node, name_node)
                parts.append(f"({name}, {self.element_or_value(value_node)})")
            lines.append(f"{indent}_res.append(_row_of([{', '.join(parts)}], _to_element_value))")
        self.scopes.pop()
        lines.append("    return _res")
        self.pre[-1].extend(lines)
        return result_kind, f"{fn}()"

    def all_columns_of(self, select_list: Node, aliases: list[str]) -> bool:
        """The select list is just ``A.*`` with A the one table's correlation name."""
        if not isinstance(select_list, ast.SelectFields) or len(select_list.items) != 1 or len(aliases) != 1:
            return False
        value, name = select_list.items[0].expr, select_list.items[0].alias
        return name is None and self.correlation_star(value, aliases) == aliases[0]

    @staticmethod
    def correlation_star(value: Node, aliases: list[str]) -> str | None:
        """The correlation name A when ``value`` is ``A.*`` for one of the statement's tables."""
        if not isinstance(value, ast.FieldRef) or len(value.elems) != 1:
            return None
        start, elem = value.start, value.elems[0]
        alias = ident(start.name)
        if (
            start.index is None
            and alias in aliases
            and elem.type_qual is None
            and elem.index is None
            and elem.step.prefix is None
            and isinstance(elem.step.name, ast.Star)
        ):
            return alias
        return None

    def aggregate(self, node: Node) -> tuple[str, Node | None] | None:
        if isinstance(node, ast.CallStar):
            name = self.dotted(node.function).upper()
            if name == "COUNT":
                return ("COUNT", None)
        if isinstance(node, ast.Call):
            name = self.dotted(node.function).upper()
            if name in AGGREGATES:
                args = node.call_args.args.items if node.call_args is not None else []
                if len(args) != 1:
                    self.error(node, f"{name} takes 1 argument")
                    return (name, None)
                return (name, args[0])
        return None

    def db_select(
        self, node: Node, select_list: Node, froms: list[ast.FromItem], where: Any
    ) -> tuple[str, str]:
        """SELECT … FROM Database.t [AS A][, Database.u AS B …] [WHERE …] as one SQL statement.

        Several tables join as SQL does (FROM a, b WHERE a.id = b.id). The SQL is built at run time
        by lambdas over the table aliases, so every program value in it is a bound parameter.
        """
        tables = []
        for from_item in froms:
            ref, alias_node = from_item.source, from_item.alias
            if ident(ref.start.name) != "Database":
                self.error(ref, "a SELECT cannot join a database table with a message tree")
                return "list", "[]"
            alias = ident(alias_node) if alias_node is not None else self.last_part(ref)
            tables.append((alias, self.db_table(ref)))
        aliases = [a for a, _t in tables]
        self.db_scope(*aliases)
        scope = SqlScope(aliases, qualified=True)
        result_kind, wrap = "list", "{}"
        if isinstance(select_list, ast.SelectStar) or self.all_columns_of(select_list, aliases):
            # SELECT T.* FROM Database.t AS T is SELECT * of its one table
            cols = "None"
            item = False
        elif isinstance(select_list, ast.SelectItem):
            cols = f"[(None, {self.sql(select_list.expr, scope)})]"
            item = True
        else:
            assert isinstance(select_list, ast.SelectFields)
            parts = []
            fields = select_list.items
            for f in fields:
                value_node, name_node = f.expr, f.alias
                star = self.correlation_star(value_node, aliases)
                if star is not None:
                    # A.* AS Usr: every column of A, as the fields of Usr (IBM's DatabaseInput
                    # template selects its event rows so)
                    name = self.alias_code(value_node, name_node) if name_node is not None else "None"
                    scope.columns[star].add("*")
                    parts.append(f"({name}, _sql.star({star!r}))")
                    continue
                name = self.alias_code(value_node, name_node)
                parts.append(f"({name}, {self.sql(value_node, scope)})")
            cols = "[" + ", ".join(parts) + "]"
            item = False
            if len(fields) == 1 and fields[0].alias is None and self.aggregate(fields[0].expr):
                # SELECT MAX(T.x) FROM Database.t gives its one value, as the message-tree form does
                item = True
                result_kind, wrap = "scalar", "_first({})"
        cond = self.sql(where, scope) if where is not None else "None"
        self.scopes.pop()
        specs = ", ".join(
            f"({alias!r}, {parts}, {sorted(scope.columns[alias])!r})" for alias, parts in tables
        )
        call = f"_db_select(ctx, [{specs}], lambda T: {cols}, lambda T: {cond}, {item})"
        return result_kind, wrap.format(call)

    def sql(self, node: Node, scope: SqlScope) -> str:
        """Python code building a SQL expression: table columns become columns, the rest parameters.

        Anything that mentions no column is evaluated by ESQL and bound as one parameter; what
        does mention a column must translate to SQL, or it is reported here.
        """
        d = node.kind
        if isinstance(node, ast.CallStar) and self.dotted(node.function).upper() == "COUNT":
            return "_sql.aggregate('COUNT', None)"
        if isinstance(node, ast.Call) and self.dotted(node.function).upper() in AGGREGATES:
            args = node.call_args.args.items if node.call_args is not None else []
            name = self.dotted(node.function).upper()
            return f"_sql.aggregate({name!r}, {self.sql(args[0], scope) if args else 'None'})"
        if not self.mentions_column(node, scope):
            if d == "null_lit":
                return "_sql.param(None)"
            return f"_sql.param({self.scalar(node)})"
        if isinstance(node, ast.FieldRef):
            start = ident(node.start.name)
            if len(node.elems) == 1 and node.start.index is None:
                column = self.dotted(node).split(".")[-1]
                elem = node.elems[0]
                if elem.type_qual is None and elem.index is None and column != "*":
                    scope.columns[start].add(column)
                    if scope.qualified:
                        return f"T[{start!r}].c[{column!r}]"
                    return f"_sql.col({column!r})"
            self.error(node, f"a column reference '{self.dotted(node)}' must name one column")
            return "None"
        if isinstance(node, ast.Compare):
            return f"_sql.compare({keyword(node.op)!r}, {self.sql(node.left, scope)}, {self.sql(node.right, scope)})"
        if isinstance(node, (ast.AndOp, ast.OrOp)):
            first, links = left_chain(node, ("and_op", "or_op"))
            code = self.sql(first, scope)
            for link in links:
                code = f"_sql.{link.kind[:-3]}_({code}, {self.sql(link.right, scope)})"
            return code
        if isinstance(node, ast.NotOp):
            return f"_sql.not_({self.sql(node.operand, scope)})"
        if isinstance(node, (ast.BinOp, ast.Concat)):
            first, links = left_chain(node, ("binop", "concat"))
            code = self.sql(first, scope)
            for link in links:
                if isinstance(link, ast.Concat):
                    code = f"_sql.concat({code}, {self.sql(link.right, scope)})"
                else:
                    op = keyword(link.op)
                    code = f"_sql.arith({op!r}, {code}, {self.sql(link.right, scope)})"
            return code
        if isinstance(node, ast.UnaryOp):
            inner = self.sql(node.operand, scope)
            return f"_sql.neg({inner})" if keyword(node.op) == "-" else inner
        if isinstance(node, ast.IsTest):
            word = keyword(node.what)
            if word in ("NULL", "UNKNOWN", "TRUE", "FALSE"):
                return f"_sql.is_({self.sql(node.operand, scope)}, {word!r}, {node.negated is not None})"
        if isinstance(node, ast.Like):
            v, neg, pat, esc = node.operand, node.negated, node.pattern, node.escape
            escape = self.scalar(esc) if esc is not None else "None"
            return f"_sql.like({self.sql(v, scope)}, {self.sql(pat, scope)}, {neg is not None}, {escape})"
        if isinstance(node, ast.InList):
            items = ", ".join(self.sql(a, scope) for a in node.values.items)
            return f"_sql.in_({self.sql(node.operand, scope)}, [{items}], {node.negated is not None})"
        if isinstance(node, ast.Between):
            v, neg, mod, low, high = node.operand, node.negated, node.mode, node.low, node.high
            return (
                f"_sql.between({self.sql(v, scope)}, {self.sql(low, scope)}, {self.sql(high, scope)}, "
                f"{neg is not None}, {keyword(mod) == 'SYMMETRIC'})"
            )
        if isinstance(node, ast.Paren):
            return self.sql(node.expr, scope)
        if isinstance(node, ast.CaseExpr):
            return self.sql_case(node, scope)
        if (
            isinstance(node, ast.CastExpr)
            and isinstance(node.type, ast.CastType)
            and len(node.args.items) == 1
        ):
            type_node = node.type
            tname = str(type_node.token).upper()
            precision = [int(str(t)) for t in (type_node.precision, type_node.scale) if t is not None]
            if checks.normal_type(tname) in SQL_CASTS and not node.options:
                return f"_sql.cast({self.sql(node.args.items[0], scope)}, {checks.normal_type(tname)!r}, {precision!r})"
        if isinstance(node, ast.Substring) and keyword(node.mode) == "FROM":
            s_, a, b = node.source, node.start, node.length
            length = f", {self.sql(b, scope)}" if b is not None else ""
            return f"_sql.func('SUBSTRING', [{self.sql(s_, scope)}, {self.sql(a, scope)}{length}])"
        if isinstance(node, ast.TrimPlain):
            return f"_sql.func('TRIM', [{self.sql(node.source, scope)}])"
        if isinstance(node, ast.TrimFrom):
            spec, chars, s_ = node.spec, node.chars, node.source
            singleton = self.sql(chars, scope) if chars is not None else "_sql.param(' ')"
            return f"_sql.trim({keyword(spec) or 'BOTH'!r}, {singleton}, {self.sql(s_, scope)})"
        if isinstance(node, ast.PositionFn) and node.start is None and node.repeat is None:
            return f"_sql.position({self.sql(node.needle, scope)}, {self.sql(node.haystack, scope)})"
        if isinstance(node, ast.Call):
            name = self.dotted(node.function).upper()
            args = node.call_args.args.items if node.call_args is not None else []
            if (
                name in SQL_FUNCTIONS
                and "." not in name
                and self.resolve_routine(node, node.function) is None
            ):
                lo, hi = SQL_FUNCTIONS[name]
                if lo <= len(args) <= hi:
                    return f"_sql.func({name!r}, [{', '.join(self.sql(a, scope) for a in args)}])"
        self.error(node, f"{SQL_NAMES.get(d, 'this expression')} cannot be translated to SQL")
        return "None"

    def sql_case(self, node: ast.CaseExpr, scope: SqlScope) -> str:
        subject = node.operand
        whens = node.whens
        else_node = node.else_value
        subj = self.sql(subject, scope) if subject is not None else "None"
        pairs = ", ".join(f"({self.sql(w.condition, scope)}, {self.sql(w.value, scope)})" for w in whens)
        other = self.sql(else_node, scope) if else_node is not None else "None"
        return f"_sql.case({subj}, [{pairs}], {other})"

    def mentions_column(self, node: Any, scope: SqlScope) -> bool:
        """Whether ``node`` refers to a column of one of the statement's tables (walked without recursion)."""
        stack = [node]
        while stack:
            item = stack.pop()
            if not isinstance(item, Node):
                continue
            if isinstance(item, ast.FieldRef) and ident(item.start.name) in scope.aliases:
                return True
            stack.extend(item.iter_children())

        return False

    # ------------------------------------------------------------------ field references

    def e_fieldref(self, node: ast.FieldRef) -> tuple[str, str]:
        start = node.start
        name = ident(start.name)
        elems = node.elems
        var = self.lookup(name)
        if var is not None and var.kind == "column":
            self.error(node, f"column '{self.dotted(node)}' can only be used inside the database statement")
            return "scalar", "None"
        if var is not None and not elems and start.index is None:
            if var.kind == "scalar" or var.kind == "namespace":
                return "scalar", var.py
            if var.kind == "external":
                return "scalar", f"_external(ctx, {var.name!r}, {var.py}, {var.type_name!r})"
            if var.kind == "ref":
                return "elem", f"{var.py}.element"
            return "elem", var.py
        if var is not None and var.kind in ("scalar", "external", "namespace"):
            self.error(node, f"'{name}' is {article(var.type_name)} variable, not a field reference")
            return "scalar", "None"
        if var is None and name not in CORRELATION:
            if not elems and start.index is None:
                if name in SQL_STATE:
                    return "scalar", SQL_STATE[name]
                if name in BROKER_PROPERTIES:
                    return "scalar", f"_broker_property(ctx, {name!r})"
                if name.upper() in BARE_FUNCTIONS:
                    return "scalar", self.builtin(node, name.upper(), [], 0)
                if name in CONSTANTS:
                    return "scalar", repr(CONSTANTS[name])
            if name == "SQL" and len(elems) == 1:
                prop = self.dotted(node).split(".")[1]
                if prop in BROKER_PROPERTIES:
                    return "scalar", f"_broker_property(ctx, {prop!r})"
            dotted = self.dotted(node)
            if dotted in FIELD_TYPES:
                return "scalar", repr(FIELD_TYPES[dotted])
            if name == "Database":
                self.error(
                    node, "a Database reference is only valid in SELECT, INSERT, UPDATE, DELETE and PASSTHRU"
                )
                return "scalar", "None"
            self.error(node, f"undeclared identifier '{name}'")
            return "scalar", "None"
        code = self.element(node)
        if self.is_list(node):
            return "list", code
        return "elem", code

    @staticmethod
    def is_list(node: ast.FieldRef) -> bool:
        """Whether a step of the reference ends in ``[]`` (it names a list of fields)."""
        return isinstance(node.start.index, ast.IndexAll) or any(
            isinstance(elem.index, ast.IndexAll) for elem in node.elems
        )

    @staticmethod
    def has_list_before_last(node: ast.FieldRef) -> bool:
        steps: list[ast.PathStart | ast.PathElem] = [node.start, *node.elems]
        return any(isinstance(step.index, ast.IndexAll) for step in steps[:-1])

    def root_code(self, node: ast.FieldRef) -> str:
        start = node.start
        name = ident(start.name)
        var = self.lookup(name)
        if var is not None:
            if var.kind == "ref":
                return f"{var.py}.element"
            if var.kind in ("row", "alias"):
                return var.py
            self.error(start, f"'{name}' is {article(var.type_name)} variable, not a field reference")
            return "None"
        if name in CORRELATION:
            self.correlation_available(start, name)
            return CORRELATION[name]
        self.error(start, f"undeclared identifier '{name}'")
        return "None"

    def index_code(self, index: Any) -> str:
        if isinstance(index, ast.IndexN):
            return self.scalar(index.expr)
        if isinstance(index, ast.IndexLast):
            return "-1" if index.expr is None else f"_neg({self.scalar(index.expr)})"
        if isinstance(index, ast.IndexFirst):
            return "1" if index.expr is None else self.scalar(index.expr)
        return "1"

    def step_parts(self, elem: ast.PathElem) -> tuple[str, str, str]:
        """(name code, namespace code, field-type code) of one path element."""
        type_qual, step = elem.type_qual, elem.step
        ftype = "None"
        if type_qual is not None:
            qual = type_qual.text
            if qual in FIELD_TYPES:
                ftype = repr(FIELD_TYPES[qual])
            else:
                var = self.lookup(qual)
                if var is not None and var.kind in ("scalar",):
                    ftype = var.py
                else:
                    self.error(type_qual, f"unknown field type '{qual}'")
        first, name_part = step.prefix, step.name
        if first is None:
            ns = "''"
        else:
            if isinstance(first, ast.Star):
                ns = "None"
            elif isinstance(first, ast.Dynamic):
                ns = self.scalar(first.expr)
            else:
                prefix = ident(first)
                var = self.lookup(prefix)
                if var is None and prefix == "xmlns":
                    ns = "'xmlns'"
                elif var is None:
                    self.error(first, f"undeclared namespace prefix '{prefix}'")
                    ns = "''"
                else:
                    ns = self.scalar(ast.FieldRef(ast.PathStart(first, None), []))
        if isinstance(name_part, ast.Star):
            nm = "None"
            if first is None:
                ns = "None"
        elif isinstance(name_part, ast.Dynamic):
            nm = self.scalar(name_part.expr)
        else:
            nm = repr(ident(name_part))
            var = self.lookup(ident(name_part)) if isinstance(name_part, ast.Ident) else None
            if var is not None and var.kind == "namespace" and var.type_name == "NAME":
                nm = var.py  # a NAME constant stands for its value in a path (IBM)
        return nm, ns, ftype

    def element(
        self, node: ast.FieldRef, upto: int | None = None, base: tuple[str, int] | None = None
    ) -> str:
        """Code evaluating to the Element (or list with ``[]``) a field reference names, no creation.

        ``base`` = (code, n): start from ``code``, which already names the first n path elements.
        """
        start = node.start
        elems = node.elems
        if upto is not None:
            elems = elems[:upto]
        if base is not None:
            code = base[0]
            elems = elems[base[1] :]
        else:
            code = self.root_code(node)
            if start.index is not None:
                code = (
                    f"_step({code}.parent, {code}.name, {code}.namespace, "
                    f"{self.index_code(start.index)}, None)"
                )
        is_list = False
        for elem in elems:
            nm, ns, ftype = self.step_parts(elem)
            index = elem.index
            if is_list:
                if isinstance(index, ast.IndexAll):
                    code = f"_flat_all({code}, {nm}, {ns}, {ftype})"
                else:
                    code = f"_step_list({code}, {nm}, {ns}, {self.index_code(index)}, {ftype})"
                continue
            if isinstance(index, ast.IndexAll):
                code = f"_step_all({code}, {nm}, {ns}, {ftype})"
                is_list = True
            elif index is None and ns == "''" and ftype == "None" and nm.startswith("'"):
                code = f"_child({code}, {nm})"
            else:
                code = f"_step({code}, {nm}, {ns}, {self.index_code(index)}, {ftype})"
        return code

    def element_list(self, node: Node) -> str:
        if not isinstance(node, ast.FieldRef):
            kind, code = self.expr(node)
            return code if kind == "list" else f"_as_list({code})"
        if self.is_list(node):
            return self.element(node)
        return f"_as_list({self.element(node)})"

    def target(self, node: ast.FieldRef, upto: int | None = None, base: tuple[str, int] | None = None) -> str:
        """Code evaluating to the Element a field reference names, creating missing fields."""
        start = node.start
        elems = node.elems
        if upto is not None:
            elems = elems[:upto]
        if base is not None:
            code = base[0]
            elems = elems[base[1] :]
        else:
            code = self.root_code(node)
            if start.index is not None:
                self.error(start, "an index on the first name of a target reference is not supported")
        for elem in elems:
            nm, ns, ftype = self.step_parts(elem)
            index = elem.index
            if isinstance(index, ast.IndexAll):
                self.error(elem, "[] is only valid on the last name of a target reference")
                continue
            if index is None and ns == "''" and ftype == "None" and nm.startswith("'"):
                code = f"_ensure_child({code}, {nm})"
            else:
                if ns == "None":
                    ns = "None"
                code = f"_ensure({code}, {nm}, {ns}, {self.index_code(index)}, {ftype})"
        return code

    @property
    def values(self) -> Any:
        from esql.runtime import values_module

        return values_module()
