"""Code generation of field references: path navigation, creation of missing fields, indexes and types."""

from __future__ import annotations

from typing import Any

from esql import ast
from esql.ast import Node, ident
from esql.codegen.base import GeneratorBase
from esql.codegen.model import (
    BARE_FUNCTIONS,
    BROKER_PROPERTIES,
    CONSTANTS,
    CORRELATION,
    SQL_STATE,
    article,
)
from esql.runtime import FIELD_TYPES


class FieldRefs(GeneratorBase):
    """The field references section of the Generator."""

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

    def _path_start(
        self, node: ast.FieldRef, upto: int | None, base: tuple[str, int] | None
    ) -> tuple[str, Any]:
        """The code a reference's walk starts from and the path elements still to walk: the first
        ``upto`` of them, less the ``base[1]`` that ``base[0]`` already names."""
        elems = node.elems
        if upto is not None:
            elems = elems[:upto]
        if base is not None:
            return base[0], elems[base[1] :]
        return self.root_code(node), elems

    def element(
        self, node: ast.FieldRef, upto: int | None = None, base: tuple[str, int] | None = None
    ) -> str:
        """Code evaluating to the Element (or list with ``[]``) a field reference names, no creation.

        ``base`` = (code, n): start from ``code``, which already names the first n path elements.
        """
        code, elems = self._path_start(node, upto, base)
        start = node.start
        if base is None and self.prefix_cache is not None:
            cached = self.cached_walk(node, elems, upto, create=False)
            if cached is not None:
                code, elems = cached[0], elems[cached[1] :]
        if base is None and start.index is not None:
            code = (
                f"_step({code}.parent, {code}.name, {code}.namespace, {self.index_code(start.index)}, None)"
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
        code, elems = self._path_start(node, upto, base)
        start = node.start
        if base is None and self.prefix_cache is not None:
            cached = self.cached_walk(node, elems, upto, create=True)
            if cached is not None:
                code, elems = cached[0], elems[cached[1] :]
        if base is None and start.index is not None:
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

    def member_target(self, node: ast.FieldRef) -> tuple[str, str] | None:
        """(code of the parent Element, quoted name) when a target reference ends in a plain name
        (no index, namespace or type) below at least one step, else None."""
        elems = node.elems
        if not elems or node.start.index is not None:
            return None
        nm, ns, ftype = self.step_parts(elems[-1])
        if elems[-1].index is not None or ns != "''" or ftype != "None" or not nm.startswith("'"):
            return None
        return self.target(node, upto=len(elems) - 1), nm

    @property
    def values(self) -> Any:
        from esql.runtime import values_module

        return values_module()
