"""Code generation of expressions: literals, operators, built-in calls, CASE, CAST, ROW, LIST and SELECT
(over message trees, or as SQL for database tables).
"""

from __future__ import annotations

import re
from decimal import Decimal
from typing import Any

from esql import ast, checks
from esql.ast import Node, ident, keyword, left_chain, string_value
from esql.codegen.base import GeneratorBase
from esql.codegen.model import (
    AGGREGATES,
    BINOPS,
    COMPARE,
    FIELD_FUNCTIONS,
    FLAT_CHAIN,
    MAX_NESTING,
    RUNNABLE_LANGUAGES,
    SQL_CASTS,
    SQL_FUNCTIONS,
    SQL_NAMES,
    TREE_BUILTINS,
    SqlScope,
    Var,
    mangle,
)


class Expressions(GeneratorBase):
    """The expressions section of the Generator."""

    # ------------------------------------------------------------------ expressions

    def scalar(self, node: Node) -> str:
        kind, code = self.expr(node)
        if kind == "elem" and isinstance(node, ast.FieldRef) and node.elems and code.startswith("_child("):
            # a reference ending in a plain name read as a scalar: one call instead of _value(_child(…))
            prefix = self.element(node, upto=len(node.elems) - 1)
            nm = self.step_parts(node.elems[-1])[0]
            if code == f"_child({prefix}, {nm})":
                return f"_child_value({prefix}, {nm})"
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
            if tname == "DECIMAL" and not kw:
                return "scalar", f"_cast_decimal({values[0]})"
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
