"""Code generation of statements: blocks and handlers, SET, control flow, CALL, tree and database statements."""

from __future__ import annotations

from typing import Any

from esql import ast, checks
from esql.ast import Node, ident, keyword, left_chain, position, string_value
from esql.codegen.base import GeneratorBase
from esql.codegen.model import (
    COMPUTE_NAMES,
    CORRELATION,
    MAX_STATEMENT_NESTING,
    RUNNABLE_LANGUAGES,
    SINGLE_MESSAGE_NAMES,
    SINGLE_MESSAGE_WRITABLE,
    WRITABLE_ROOTS,
    EvalSite,
    LoopFrame,
    Routine,
    SqlScope,
    Var,
    article,
    mangle,
)


class Statements(GeneratorBase):
    """The statements section of the Generator."""

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
        if self.prefix_cache is not None:
            self.prefix_resets(stmt)

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
        shared = self.shared_prefix(target, expr) if self.prefix_cache is None else 0
        if shared:
            self.set_with_shared_prefix(target, expr, shared)
            return
        kind, code = self.expr(expr)
        if kind in ("elem", "list"):
            if kind == "list":
                code = f"_first({code})"
            tmp = self.fresh()
            member = self.member_target(target)
            if member is not None:
                # The source is read before the target is created; snapshot it when both share a tree.
                snapshot = self.snapshot_code(code, target, expr)
                # a copy _snapshot_own made is moved in, not copied again
                assign = (
                    "_assign_member_own" if snapshot.startswith("_snapshot_own(") else "_assign_member_tree"
                )
                self.out.line(f"{tmp} = {snapshot}")
                self.out.line(f"if {tmp} is None:")
                self.out.line(f"    _delete({self.element(target)})")
                self.out.line("else:")
                self.out.line(f"    {assign}({member[0]}, {member[1]}, {tmp})")
                return
            src = self.fresh("_s")
            self.out.line(f"{src} = {code}")
            self.out.line(f"{tmp} = {self.snapshot_code(src, target, expr)}")
            self.out.line(f"if {tmp} is None:")
            self.out.line(f"    _delete({self.element(target)})")
            self.assign_snapshot(self.target(target), tmp, src)
            return
        if kind == "null":
            self.out.line(f"_delete({self.element(target)})")
            return
        if isinstance(expr, (ast.StringLit, ast.IntLit, ast.BoolLit)) and code != "None":
            # A non-NULL literal can never delete the target: store it directly.
            member = self.member_target(target)
            if member is not None:
                self.out.line(f"_set_member({member[0]}, {member[1]}, {code})")
            else:
                self.out.line(f"{self.target(target)}.value = {code}")
            return
        tmp = self.fresh()
        self.out.line(f"{tmp} = {code}")
        self.out.line(f"if {tmp} is None:")
        self.out.line(f"    _delete({self.element(target)})")
        self.out.line("else:")
        member = self.member_target(target)
        if member is not None:
            self.out.line(f"    _assign_member({member[0]}, {member[1]}, {tmp}, _to_element_value)")
        else:
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
        src = self.fresh("_s")
        self.out.line(
            f"{src} = {self.element(expr, base=(prefix, shared))} if {prefix} is not None else None"
        )
        self.out.line(f"{source} = {self.snapshot_code(src, target, expr)}")
        self.out.line(f"if {source} is None:")
        self.out.line(f"    if {prefix} is not None:")
        self.out.line(f"        _delete({self.element(target, base=(prefix, shared))})")
        self.assign_snapshot(self.target(target, base=(prefix, shared)), source, src)

    def snapshot_code(self, code: str, target: ast.FieldRef, expr: Node) -> str:
        """Code for the source of SET field = field as the target may take it (see ``_snapshot``).

        A source walked from the target's own correlation name is in the target's tree: it is
        copied when it has descendants without comparing the two trees' roots.
        """
        if isinstance(expr, ast.FieldRef):
            root = self.prefix_root(target)
            if root is not None and root == self.prefix_root(expr):
                if self.disjoint_paths(target, expr):
                    # fields of different names below one element: creating and setting the
                    # target cannot reach the source, which is taken as it is
                    return code
                return f"_snapshot_own({code})"
        return f"_snapshot({code}, {self.root_code(target)})"

    def assign_snapshot(self, target: str, snap: str, src: str) -> None:
        """The not-NULL branch of SET field = field: a copy the snapshot made is moved in, not copied again."""
        self.out.line(f"elif {snap} is {src}:")
        self.out.line(f"    _assign_tree({target}, {snap})")
        self.out.line("else:")
        self.out.line(f"    _adopt_tree({target}, {snap})")

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
        cache = self.loop_prefixes(node)
        if cache is not None:
            # the loop's shared path prefixes (codegen.pathcache): unknown on entry
            for var in cache.names.values():
                self.out.line(f"{var} = None")
            self.prefix_cache = cache
        try:
            self.out.line("while True:")
            self.out.indent += 1
            self.out.line("_tick()")
            self.pre.append([])
            condition = self.condition(node.condition)
            for line in self.pre.pop():
                self.out.line(line)
            self.out.line(f"if not ({condition}):")
            self.out.line("    break")
            self.loop_body(node.body)
            self.out.indent -= 1
        finally:
            self.prefix_cache = None

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
            values = tail.values if isinstance(tail, ast.CreateValues) else []
            if relation == "LASTCHILD" and domain is None:
                # the common CREATE LASTCHILD OF x [AS r] [NAME 'n']: one call makes, names and links it
                if (
                    values
                    and keyword(values[0].attr) == "NAME"
                    and isinstance(values[0].value, ast.StringLit)
                ):
                    self.out.line(f"{new} = _new_last_child({anchor}, {self.scalar(values[0].value)})")
                    values = values[1:]
                else:
                    self.out.line(f"{new} = _new_last_child({anchor})")
                if isinstance(tail, ast.CreateValues):
                    self.create_values(new, values)
                    tail = None
            else:
                self.out.line(f"{new} = _place({anchor}, {relation!r}, _new_field({dom}))")
        if tail is not None:
            if isinstance(tail, ast.CreateValues):
                self.create_values(new, tail.values)
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

    def create_values(self, new: str, values: list[Any]) -> None:
        """CREATE's VALUE, NAME, NAMESPACE and TYPE clauses, in order, on the new field ``new``."""
        for cv in values:
            func = {
                "VALUE": "_set_value",
                "NAME": "_set_name",
                "NAMESPACE": "_set_namespace",
                "TYPE": "_set_type",
            }[keyword(cv.attr)]
            self.out.line(f"{func}({new}, {self.scalar(cv.value)})")

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
