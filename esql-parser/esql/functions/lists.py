"""ESQL list functions over field references ending in ``[]`` and LIST values: CARDINALITY, EXISTS, SINGULAR, THE."""

from __future__ import annotations

from typing import Any

from esql.functions.registry import builtin
from esql.tree import Element
from esql.values import EsqlValueError, type_name


def _items(value: Any, fn: str) -> list[Any]:
    if value is None:
        return []
    if isinstance(value, list | tuple):
        return list(value)
    if isinstance(value, Element):
        return [value]
    raise EsqlValueError(f"{fn}: expected a list (a field reference ending in []), not {type_name(value)}")


@builtin("CARDINALITY", "list", "CARDINALITY(list) → INTEGER", 1, 1)
def cardinality(value: Any) -> int:
    """The number of items in a list (``CARDINALITY(InputRoot.*[])``)."""
    return len(_items(value, "CARDINALITY"))


@builtin("EXISTS", "list", "EXISTS(list) → BOOLEAN", 1, 1)
def exists(value: Any) -> bool:
    """TRUE when the list has at least one item."""
    return len(_items(value, "EXISTS")) > 0


@builtin("SINGULAR", "list", "SINGULAR(list) → BOOLEAN", 1, 1)
def singular(value: Any) -> bool:
    """TRUE when the list has exactly one item."""
    return len(_items(value, "SINGULAR")) == 1


@builtin("THE", "list", "THE(list) → item", 1, 1)
def the(value: Any) -> Any:
    """The first item of a list (NULL when it is empty)."""
    items = _items(value, "THE")
    return items[0] if items else None
