"""The Generator: the files of a project collected into modules and routines, and one Python module
generated for them; EVAL text generated against a place in that program.
"""

from __future__ import annotations

from typing import Any

from esql import ast, checks
from esql.ast import Node, ident, keyword, position
from esql.codegen.expressions import Expressions
from esql.codegen.fieldrefs import FieldRefs
from esql.codegen.model import (
    EvalSite,
    Module,
    Routine,
    Unit,
    Var,
    mangle,
)
from esql.codegen.pathcache import PathCache
from esql.codegen.statements import Statements


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


class Generator(Statements, Expressions, FieldRefs, PathCache):
    """Generates one Python module for all the files of an ESQL project."""

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
