"""Code generation of a loop's shared path prefixes: each resolved once, not from the root at every use.

A WHILE loop whose body only SETs fields and variables (no calls, no other statements) reads and
writes long paths from a message root: ``OutputRoot.XMLNSC.Doc.List.Item[i].Name`` resolves
``XMLNSC``, ``Doc`` and ``List`` again in every statement of every iteration. Here each leading
part of such a path (a *prefix*: a correlation name and steps that are plain names, with no
index or an INTEGER literal or variable as index) gets a local variable that holds the element
it names, or None:

* before each statement (and before the loop's condition) that uses a prefix, a variable that
  is None is resolved again from the one of the prefix a step shorter, without parsing unparsed
  content and without raising (``_peek_child`` / ``_peek_step``);
* a use reads the variable when it is not None, else walks the step from the shorter prefix as
  the code always did (so a missing field, an unparsed level or a bad index behave exactly as
  before: a read gives NULL or raises, a target creates);
* after each statement that may change what a prefix names, its variable is set to None.

A statement changes what a prefix names only when it can detach, replace the children of, or
rename one of the prefix's elements, or insert a field before one of them: SET of a field whose
path is the prefix, a part of it, or may be the same element (a wildcard, another index, a type
or namespace qualifier at a step with the prefix's name), SET … NAME/NAMESPACE/TYPE, SET of a
field of another correlation name (which may share the tree) or of a REFERENCE, and SET of a
variable the prefix uses as an index. SET of a field that leaves the prefix at a step of a
different name, or lies below the prefix, only appends fields (a plain name finds the first
field of that name, a positive index counts fields of that name: appends move neither) or
changes fields that are not the prefix's.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from esql import ast
from esql.ast import Node, ident, keyword
from esql.codegen.base import GeneratorBase
from esql.codegen.model import CORRELATION

#: The correlation names whose code names one tree root object (not a walk from one).
_ROOT_CODES = frozenset(
    {
        "ctx.input_root",
        "ctx.output_root",
        "ctx.input_local_environment",
        "ctx.output_local_environment",
        "ctx.environment",
        "ctx.input_exception_list",
        "ctx.output_exception_list",
    }
)

#: Expression nodes that read and compute but never change a tree or a variable.
_PURE_KINDS = frozenset(
    {
        "or_op",
        "and_op",
        "not_op",
        "compare",
        "between",
        "in_list",
        "like",
        "is_test",
        "binop",
        "concat",
        "unary_op",
        "paren",
        "call_args",
        "args",
        "fieldref",
        "path_start",
        "path_elem",
        "type_qual",
        "step",
        "star",
        "dynamic",
        "index_all",
        "index_n",
        "index_last",
        "index_first",
        "int_lit",
        "hex_int_lit",
        "decimal_lit",
        "float_lit",
        "string_lit",
        "bool_lit",
        "null_lit",
        "ident",
        "quoted",
    }
)

#: Built-in functions that only read their arguments (a routine of the same name disqualifies).
_PURE_FUNCTIONS = frozenset(
    {"CARDINALITY", "LENGTH", "COALESCE", "UPPER", "LOWER", "UCASE", "LCASE", "ABS", "EXISTS", "FIELDNAME"}
)

#: One step of a prefix: (quoted name, index code or None, variable the index reads or None).
Step = tuple[str, str | None, str | None]
#: A prefix: (root code, steps).
Key = tuple[str, tuple[Step, ...]]


@dataclass
class PrefixCache:
    """The prefixes of one loop and the variables that hold them."""

    names: dict[Key, str] = field(default_factory=dict)


class PathCache(GeneratorBase):
    """The shared-prefix section of the Generator."""

    #: whether loops share their path prefixes (tests compare the code generated without)
    share_prefixes = True

    # -- what a path is made of

    def prefix_root(self, node: ast.FieldRef) -> str | None:
        """The root code of a field reference that starts at a message tree root, else None."""
        name = ident(node.start.name)
        if node.start.index is not None or self.lookup(name) is not None:
            return None
        code = CORRELATION.get(name)
        return code if code in _ROOT_CODES else None

    def prefix_step(self, elem: ast.PathElem) -> Step | None:
        """The step as a prefix step (a plain name; no index, or a literal or variable index)."""
        if elem.type_qual is not None or elem.step.prefix is not None:
            return None
        name = elem.step.name
        if not isinstance(name, ast.Ident):
            return None
        var = self.lookup(ident(name))
        if var is not None and var.kind == "namespace":
            return None  # a NAME constant stands for its value
        quoted = repr(ident(name))
        index = elem.index
        if index is None:
            return (quoted, None, None)
        if not isinstance(index, ast.IndexN):
            return None
        expr = index.expr
        if isinstance(expr, ast.IntLit):
            value = int(str(expr.token))
            return (quoted, str(value), None) if value >= 1 else None
        if isinstance(expr, ast.FieldRef) and not expr.elems and expr.start.index is None:
            var = self.lookup(ident(expr.start.name))
            if var is not None and var.kind == "scalar":
                return (quoted, var.py, var.py)
        return None

    def step_name(self, elem: ast.PathElem) -> str | None:
        """The quoted literal name of a step (any index, qualifier or namespace), else None."""
        name = elem.step.name
        if not isinstance(name, ast.Ident):
            return None
        var = self.lookup(ident(name))
        if var is not None and var.kind == "namespace":
            return None
        return repr(ident(name))

    def prefixes(self, node: ast.FieldRef, upto: int | None = None) -> list[Key]:
        """The prefix keys of a reference, shortest first: every leading run of prefix steps, not
        the whole path (its last step is walked at the use)."""
        root = self.prefix_root(node)
        if root is None:
            return []
        elems = node.elems if upto is None else node.elems[:upto]
        keys: list[Key] = []
        steps: list[Step] = []
        for elem in elems[: len(node.elems) - 1]:
            step = self.prefix_step(elem)
            if step is None:
                break
            steps.append(step)
            keys.append((root, tuple(steps)))
        return keys

    # -- which loops qualify

    def pure_expression(self, node: Node | None) -> bool:
        if node is None:
            return True
        for part in node.iter_nodes():
            if isinstance(part, ast.Keyword):
                continue
            if isinstance(part, ast.Call):
                fn = part.function
                if fn.elems or fn.start.index is not None:
                    return False
                name = ident(fn.start.name)
                if name.upper() not in _PURE_FUNCTIONS or self.is_routine(name):
                    return False
                continue
            if part.kind not in _PURE_KINDS:
                return False
        return True

    def is_routine(self, name: str) -> bool:
        if self.module is not None and name in self.module.routines:
            return True
        return any(name in routines for routines in self.schema_routines.values())

    def loop_prefixes(self, node: ast.WhileStmt) -> PrefixCache | None:
        """The prefixes a WHILE loop may share, or None when it does not qualify."""
        if not self.share_prefixes or self.continue_stack or self.in_handler or self.prefix_cache is not None:
            return None
        if not self.pure_expression(node.condition):
            return None
        body = [s for s in (node.body.body if node.body is not None else []) if s is not None]
        for stmt in body:
            if stmt.kind == "empty":
                continue
            if not isinstance(stmt, ast.SetStmt) or not self.pure_expression(stmt.value):
                return None
            if not self.pure_expression(stmt.target):
                return None
        counts: dict[Key, int] = {}
        for part in node.iter_nodes():
            if isinstance(part, ast.FieldRef):
                for key in self.prefixes(part):
                    counts[key] = counts.get(key, 0) + 1
        if not any(n > 1 for n in counts.values()):
            return None
        cache = PrefixCache()
        for key in counts:
            cache.names[key] = self.fresh("_c")
        return cache

    # -- what a statement may change

    def changes_prefix(self, stmt: ast.SetStmt, key: Key) -> bool:
        """Whether SET ``stmt`` may change the element ``key`` names (see the module docstring)."""
        target = stmt.target
        name = ident(target.start.name)
        var = self.lookup(name)
        if var is not None and not target.elems and target.start.index is None and var.kind != "ref":
            # SET of a variable: prefixes that index by it
            return any(step[2] == var.py for step in key[1])
        attr = keyword(stmt.attr) if stmt.attr is not None else None
        if attr is not None and attr != "VALUE":
            return True
        root = self.prefix_root(target)
        if root is None or root != key[0]:
            return True
        steps = key[1]
        elems = target.elems
        for j, kstep in enumerate(steps):
            if j == len(elems):
                return True  # the target is an element of the prefix: detached or replaced
            if self.prefix_step(elems[j]) == kstep:
                continue
            tname = self.step_name(elems[j])
            if tname is not None and tname != kstep[0]:
                return False  # leaves the prefix at a field of another name
            return True
        return len(elems) == len(steps)

    def disjoint_paths(self, a: ast.FieldRef, b: ast.FieldRef) -> bool:
        """Whether two references from one root certainly name fields in disjoint subtrees: they
        take the same steps up to one where both name fields, of different names."""
        for ea, eb in zip(a.elems, b.elems, strict=False):
            sa = self.prefix_step(ea)
            if sa is not None and sa == self.prefix_step(eb):
                continue
            na, nb = self.step_name(ea), self.step_name(eb)
            return na is not None and nb is not None and na != nb
        return False

    # -- the code

    def cached_walk(
        self, node: ast.FieldRef, elems: list[ast.PathElem], upto: int | None, create: bool
    ) -> tuple[str, int] | None:
        """(code naming the longest cached prefix of ``elems``, its length), with the refresh
        lines it needs added to the statement's ``pre`` lines; None when none is cached."""
        cache = self.prefix_cache
        if cache is None or not self.pre:
            return None
        keys = [k for k in self.prefixes(node, upto) if k in cache.names]
        if not keys:
            return None
        # only an unbroken run from the root is cached
        keys = [k for i, k in enumerate(keys) if len(k[1]) == i + 1]
        if not keys:
            return None
        code = self.root_code(node)
        prev_var = code
        for key in keys:
            var = cache.names[key]
            nm, index, _v = key[1][-1]
            if index is None:
                refresh = f"if {var} is None: {var} = _peek_child({prev_var}, {nm})"
                walk = f"_ensure_child({code}, {nm})" if create else f"_child({code}, {nm})"
            else:
                refresh = f"if {var} is None: {var} = _peek_step({prev_var}, {nm}, {index})"
                walk = (
                    f"_ensure({code}, {nm}, '', {index}, None)"
                    if create
                    else f"_step({code}, {nm}, '', {index}, None)"
                )
            pre = self.pre[-1]
            if refresh not in pre:
                pre.append(refresh)
            code = f"({var} if {var} is not None else {walk})"
            prev_var = var
        return code, len(keys)

    def prefix_resets(self, stmt: Node) -> None:
        """After a statement of a loop with shared prefixes: forget those it may have changed."""
        cache = self.prefix_cache
        if cache is None or not isinstance(stmt, ast.SetStmt):
            return
        for key, var in cache.names.items():
            if self.changes_prefix(stmt, key):
                self.out.line(f"{var} = None")
