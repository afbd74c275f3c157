"""The ESQL syntax tree: lark trees whose node names are the grammar's rule aliases, and their accessors.

The parse tree is already the abstract tree (anonymous keyword tokens are filtered out, every
alternative carries an alias), so later phases walk it directly; this module gives them the
few typed accessors they share: positions, identifier text and child selection.
"""

from __future__ import annotations

from typing import Any

from lark import Token, Tree

Node = Tree  # a syntax node: ``node.data`` is its kind, ``node.children`` its parts


def position(node: Any) -> tuple[int, int]:
    """(line, column) of a node or token (1-based); (0, 0) when unknown."""
    if isinstance(node, Token):
        return node.line or 0, node.column or 0
    if isinstance(node, Tree):
        meta = node.meta
        if not meta.empty:
            return meta.line, meta.column
        for child in node.children:
            if child is not None:
                found = position(child)
                if found != (0, 0):
                    return found
    return 0, 0


def ident(node: Any) -> str:
    """The text of a ``name`` node (an identifier, or a quoted identifier without its quotes)."""
    if isinstance(node, Token):
        return str(node)
    if node.data == "quoted":
        text = str(node.children[0])
        return text[1:-1].replace('""', '"')
    return str(node.children[0])


def keyword(node: Any) -> str:
    """The upper-case keyword text of a keyword-group node (``relation``, ``set_attr`` …)."""
    if node is None:
        return ""
    if isinstance(node, Token):
        return str(node).upper()
    return " ".join(str(t).upper() for t in node.children if t is not None)


def kids(node: Tree[Any], kind: str) -> list[Tree[Any]]:
    """The children of ``node`` that are nodes of this kind."""
    return [c for c in node.children if isinstance(c, Tree) and c.data == kind]


def string_value(token: Any) -> str:
    """The text of a STRING token ('it''s' → it's)."""
    text = str(token)
    return text[1:-1].replace("''", "'")


def left_chain(node: Any, kinds: tuple[str, ...]) -> tuple[Any, list[Tree[Any]]]:
    """The first operand and the operator nodes, innermost first, of a left-associative chain.

    ``a || b || c`` parses as concat(concat(a, b), c); this walks its left spine without recursion
    (chains of thousands of operands are too deep to recurse over).
    """
    links: list[Tree[Any]] = []
    while isinstance(node, Tree) and node.data in kinds:
        links.append(node)
        node = node.children[0]
    links.reverse()
    return node, links
