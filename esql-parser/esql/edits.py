"""Recognising a COMPUTE module that only copies the message and sets fields of its JSON body.

Most Compute nodes of JSON flows stamp, flag or enrich a message: ``SET OutputRoot = InputRoot``
(or ACE's generated ``CALL CopyEntireMessage()``), a few ``SET OutputRoot.JSON.Data.… = …`` and
``RETURN TRUE``. Such a module is a list of edits of the parsed document, and a runtime may apply
it as that (:func:`flowbroker.formats.json.document_editor`) instead of building the trees,
provided it gives exactly the bytes the module would. :func:`message_edits` says when a module is
one; anything it does not recognise (another statement, a declaration, a handler, an expression
that is not a literal or an input field, a path with an index, a namespace or a type) makes it
None, and the module runs as compiled.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from esql import ast
from esql.ast import ident, keyword


@dataclass(frozen=True)
class FieldEdit:
    """``SET OutputRoot.JSON.Data.<path> = …``: a constant (``value``; None deletes the field) or,
    with ``source``, the input message's field at ``InputRoot.JSON.Data.<source>``."""

    path: tuple[str, ...]
    value: Any = None
    source: tuple[str, ...] | None = None


@dataclass(frozen=True)
class MessageEdits:
    """What Main does, in order, after copying the input message: edits of the body's document."""

    domain: str
    edits: tuple[FieldEdit, ...]


#: The only body domain recognised, and the element its document hangs under.
_DOMAIN, _DATA = "JSON", "Data"


def message_edits(routine: Any) -> MessageEdits | None:
    """The edits a compiled COMPUTE routine (``Program.main_module``'s) makes, or None when its
    Main does anything else."""
    program = getattr(routine, "program", None)
    generator = getattr(program, "generator", None)
    found = getattr(program, "modules", {}).get(getattr(routine, "name", None))
    if generator is None or found is None or generator.schema_var_nodes or generator.message_vars:
        return None
    _, module = found
    if module.declares or module.handlers or module.node is None:
        return None
    main = module.routines.get("Main")
    if main is None or main.params or main.language != "ESQL":
        return None
    statements = _statements(main.node)
    if not statements or not _is_return_true(statements[-1]):
        return None
    first, middle = statements[0], statements[1:-1]
    if not (_is_copy(first) or _calls_copy(first, module)):
        return None
    edits = []
    for statement in middle:
        edit = _edit(statement)
        if edit is None:
            return None
        edits.append(edit)
    return MessageEdits(_DOMAIN, tuple(edits))


def _statements(routine: Any) -> list[Any] | None:
    """The statements of a routine's body: one BEGIN … END (not ATOMIC, no label) of statements."""
    body = getattr(routine, "body", None)
    if not isinstance(body, ast.EsqlBody):
        return None
    block = body.body
    if isinstance(block, ast.BeginStmt):
        if block.atomic is not None or block.end_label is not None:
            return None
        block = block.body
    if not isinstance(block, ast.Statements):
        return None
    return [s for s in block.body if not isinstance(s, ast.Empty)]


def _is_return_true(statement: Any) -> bool:
    return (
        isinstance(statement, ast.ReturnStmt)
        and isinstance(statement.value, ast.BoolLit)
        and keyword(statement.value.value) == "TRUE"
    )


def _is_copy(statement: Any) -> bool:
    """``SET OutputRoot = InputRoot;``"""
    return (
        isinstance(statement, ast.SetStmt)
        and statement.attr is None
        and _path(statement.target, "OutputRoot") == ()
        and _path(statement.value, "InputRoot") == ()
    )


def _calls_copy(statement: Any, module: Any) -> bool:
    """``CALL P();`` of a procedure of the module whose body is only ``SET OutputRoot = InputRoot;``
    (ACE's generated CopyEntireMessage)."""
    if not isinstance(statement, ast.CallStmt) or statement.call_in or statement.into:
        return False
    if statement.args is not None and getattr(statement.args, "items", None):
        return False
    target = statement.routine
    if target.elems or target.start.index is not None:
        return False
    called = module.routines.get(ident(target.start.name))
    if called is None or called.params or called.returns or called.language != "ESQL":
        return False
    body = _statements(called.node)
    return body is not None and len(body) == 1 and _is_copy(body[0])


def _edit(statement: Any) -> FieldEdit | None:
    if not isinstance(statement, ast.SetStmt) or statement.attr is not None:
        return None
    target = _path(statement.target, "OutputRoot")
    if target is None or len(target) < 3 or target[:2] != (_DOMAIN, _DATA):
        return None
    value = statement.value
    if isinstance(value, ast.FieldRef):
        source = _path(value, "InputRoot")
        if source is None or len(source) < 3 or source[:2] != (_DOMAIN, _DATA):
            return None
        return FieldEdit(target[2:], source=source[2:])
    constant = _literal(value)
    if constant is _NOT_LITERAL:
        return None
    return FieldEdit(target[2:], constant)


def _path(ref: Any, root: str) -> tuple[str, ...] | None:
    """The names of a field reference ``root.a.b…`` made of plain names only, else None."""
    if not isinstance(ref, ast.FieldRef) or ref.start.index is not None:
        return None
    start = ref.start.name
    if not isinstance(start, ast.Ident) or ident(start) != root:
        return None
    names = []
    for elem in ref.elems:
        step = elem.step
        if elem.type_qual is not None or elem.index is not None or step.prefix is not None:
            return None
        if not isinstance(step.name, (ast.Ident, ast.Quoted)):
            return None
        names.append(ident(step.name))
    return tuple(names)


_NOT_LITERAL = object()


def _literal(node: Any) -> Any:
    """The value of a literal as the generated code holds it (None for NULL and UNKNOWN)."""
    if isinstance(node, ast.StringLit):
        return node.value
    if isinstance(node, ast.IntLit):
        return int(str(node.token))
    if isinstance(node, ast.HexIntLit):
        return int(str(node.token), 16)
    if isinstance(node, ast.DecimalLit):
        return Decimal(str(node.token))
    if isinstance(node, ast.FloatLit):
        return float(str(node.token))
    if isinstance(node, ast.BoolLit):
        return {"TRUE": True, "FALSE": False}.get(keyword(node.value))
    if isinstance(node, ast.NullLit):
        return None
    return _NOT_LITERAL
