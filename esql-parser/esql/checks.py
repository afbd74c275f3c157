"""Static checks the generator runs as it resolves names: types that are certainly wrong at compile time.

Only literal operands have a type known for sure, so these checks look at literals (and declared
variable types) and report what would fail on every run; everything else is left to run time.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from esql import ast
from esql.ast import Node, keyword, left_chain


def article(word: str) -> str:
    return ("an " if word[:1].upper() in "AEIOU" else "a ") + word


if TYPE_CHECKING:
    from esql.codegen.base import GeneratorBase
    from esql.codegen.model import Var

TYPE_NAMES = {
    "CHARACTER",
    "CHAR",
    "INTEGER",
    "INT",
    "FLOAT",
    "DECIMAL",
    "BOOLEAN",
    "DATE",
    "TIME",
    "GMTTIME",
    "TIMESTAMP",
    "GMTTIMESTAMP",
    "INTERVAL",
    "BLOB",
    "BIT",
    "REFERENCE",
    "ROW",
    "NAMESPACE",
    "NAME",
}
NUMERIC = {"INTEGER", "INT", "FLOAT", "DECIMAL"}
#: Declared types a value is cast to on assignment (IBM's implicit casts for assignment).
CASTABLE = frozenset(
    {
        "CHARACTER",
        "INTEGER",
        "FLOAT",
        "DECIMAL",
        "BOOLEAN",
        "DATE",
        "TIME",
        "GMTTIME",
        "TIMESTAMP",
        "GMTTIMESTAMP",
        "INTERVAL",
        "BLOB",
        "BIT",
    }
)


def normal_type(name: str) -> str:
    """The canonical spelling of a type name (INT is INTEGER, CHAR is CHARACTER …)."""
    upper = name.upper()
    return {"INT": "INTEGER", "CHAR": "CHARACTER", "DEC": "DECIMAL"}.get(upper, upper)


_NUMBER_TEXT = re.compile(r"^\s*[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?\s*$")


def literal_type(node: Any) -> str | None:
    """The ESQL type of a literal expression, or None when it is not known at compile time."""
    signed = False
    while isinstance(node, (ast.Paren, ast.UnaryOp)):
        signed = signed or isinstance(node, ast.UnaryOp)
        node = node.expr if isinstance(node, ast.Paren) else node.operand
    if not isinstance(node, Node):
        return None
    if signed:
        inner = literal_type(node)
        return inner if inner in NUMERIC else None
    d = node.kind
    if d == "concat":
        return "CHARACTER" if _all_char(node) else None
    return {
        "int_lit": "INTEGER",
        "hex_int_lit": "INTEGER",
        "decimal_lit": "DECIMAL",
        "float_lit": "FLOAT",
        "string_lit": "CHARACTER",
        "blob_lit": "BLOB",
        "bit_lit": "BIT",
    }.get(d) or (
        keyword(node.type)
        if isinstance(node, ast.TypedLit)
        else "INTERVAL"
        if d == "interval_lit"
        else "BOOLEAN"
        if isinstance(node, ast.BoolLit) and keyword(node.value) != "UNKNOWN"
        else None
    )


def _all_char(node: Node) -> bool:
    first, links = left_chain(node, ("concat",))
    return literal_type(first) == "CHARACTER" and all(
        literal_type(link.right) == "CHARACTER" for link in links
    )


def _compatible(target: str, value_type: str, node: Any) -> bool:
    target = {"INT": "INTEGER", "CHAR": "CHARACTER"}.get(target, target)
    if target == value_type or target in ("ROW", "REFERENCE", "NAMESPACE", "NAME", ""):
        return True
    if target == "CHARACTER":
        return True  # every scalar has a CHARACTER form
    if target in NUMERIC:
        if value_type in NUMERIC:
            return True
        if value_type == "CHARACTER" and isinstance(node, ast.StringLit):
            return bool(_NUMBER_TEXT.match(node.value))
        return False
    if target == "BOOLEAN":
        if value_type == "CHARACTER" and isinstance(node, ast.StringLit):
            return node.value.strip().upper() in ("TRUE", "FALSE", "1", "0")
        return False
    if target in ("TIMESTAMP", "GMTTIMESTAMP") and value_type in ("TIMESTAMP", "GMTTIMESTAMP"):
        return True
    if target in ("TIME", "GMTTIME") and value_type in ("TIME", "GMTTIME"):
        return True
    if value_type == "CHARACTER" and target in (
        "DATE",
        "TIME",
        "GMTTIME",
        "TIMESTAMP",
        "GMTTIMESTAMP",
        "BLOB",
        "BIT",
    ):
        return True  # castable text; whether it parses is a run-time question
    return False


DECIMAL_PRECISION_IN_DECLARE = (
    "a DECIMAL variable takes no precision or scale (IBM assigns them; give them in CAST)"
)


def check_initial_type(gen: GeneratorBase, var: Var, init: Any) -> bool:
    """Report an initial value that can never suit the variable; False when it must not be generated."""
    if init is None:
        return True
    if var.type_name in ("DECIMAL", "DEC") and isinstance(init, ast.ParenList):
        # DECLARE d DECIMAL(10, 2); reads as a DECIMAL initialised with a list
        gen.error(init, DECIMAL_PRECISION_IN_DECLARE)
        return False
    _check_value(gen, var, init, "initialise")
    return True


def check_assign_type(gen: GeneratorBase, var: Var, expr: Any) -> None:
    _check_value(gen, var, expr, "assign")


def _check_value(gen: GeneratorBase, var: Var, expr: Any, verb: str) -> None:
    value_type = literal_type(expr)
    if value_type is None or var.kind not in ("scalar", "external"):
        return
    if var.type_name not in TYPE_NAMES:
        return
    if not _compatible(var.type_name, value_type, expr):
        gen.error(
            expr, f"cannot {verb} {var.type_name} variable '{var.name}' with {article(value_type)} value"
        )


def check_type_name(gen: GeneratorBase, node: Any, name: str) -> None:
    if name not in TYPE_NAMES and not name.startswith("DEC"):
        gen.error(node, f"unknown data type '{name}'")


def check_arithmetic(gen: GeneratorBase, node: ast.BinOp) -> None:
    a, b = node.left, node.right
    sym = keyword(node.op)
    ta, tb = literal_type(a), literal_type(b)
    for side, t in ((a, ta), (b, tb)):
        if t == "CHARACTER" and sym == "+" and isinstance(side, ast.StringLit):
            gen.error(node, "operator '+' cannot be applied to CHARACTER; use || to concatenate")
            return
        if t == "BOOLEAN":
            gen.error(node, f"operator '{sym}' cannot be applied to BOOLEAN")
            return
        if t == "CHARACTER" and isinstance(side, ast.StringLit) and not _NUMBER_TEXT.match(side.value):
            gen.error(node, f"operator '{sym}' cannot be applied to CHARACTER '{side.value}'")
            return


def check_comparison(gen: GeneratorBase, node: ast.Compare) -> None:
    a, b = node.left, node.right
    ta, tb = literal_type(a), literal_type(b)
    if ta is None or tb is None or ta == tb:
        return
    pair = {ta, tb}
    if pair <= NUMERIC:
        return
    if "BOOLEAN" in pair and pair & NUMERIC:
        gen.error(node, f"cannot compare {ta} with {tb}")
    elif pair & {"DATE", "TIME", "TIMESTAMP", "GMTTIME", "GMTTIMESTAMP"} and pair & NUMERIC:
        gen.error(node, f"cannot compare {ta} with {tb}")
