"""The ESQL syntax tree: typed nodes with named fields, built from the lark parse tree.

Each grammar rule (or alternative alias) becomes one node class here; ``kind`` is the rule's
name and ``fields`` names its parts in source order, so later phases read ``stmt.condition``
rather than a child's position. A field written ``*name`` holds a list (the rule's repeated
part); the other fields hold a node, a lark ``Token`` (literal text), or None where the source
leaves an optional part out. Every node carries the line and column (1-based) where it starts,
for diagnostics.

Keyword groups (``relation``, ``set_attr`` …) become ``Keyword`` nodes whose ``text`` is the
upper-case keyword; identifiers become ``Ident`` / ``Quoted`` nodes whose ``name`` is their text.
"""

from __future__ import annotations

import gc
from collections.abc import Callable, Iterator
from typing import Any, ClassVar

from lark import Token, Tree
from lark.visitors import Transformer_NonRecursive


class Node:
    """A syntax node: its kind, its named fields, and where it starts in the source."""

    kind: ClassVar[str] = ""
    #: the field names in source order; one of them may be ``*name``, a list of the repeated part
    fields: ClassVar[tuple[str, ...]] = ()
    #: the fields before and after the list field (or all of them when there is none)
    _head: ClassVar[tuple[str, ...]] = ()
    _star: ClassVar[str | None] = None
    _tail: ClassVar[tuple[str, ...]] = ()
    _names: ClassVar[tuple[str, ...]] = ()  # the field names without the ``*``

    line: int
    column: int

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "fields" in cls.__dict__:
            names = cls.fields
            if {"line", "column", "kind"} & {n.lstrip("*") for n in names}:
                raise TypeError(f"{cls.__name__}: line, column and kind are no field names")
            stars = [i for i, f in enumerate(names) if f.startswith("*")]
            if stars:
                i = stars[0]
                cls._head, cls._star, cls._tail = names[:i], names[i][1:], names[i + 1 :]
            else:
                cls._head, cls._star, cls._tail = names, None, ()
            cls._names = tuple(n.lstrip("*") for n in names)

    def __init__(self, *values: Any, line: int = 0, column: int = 0) -> None:
        names = self._names
        if len(values) != len(names):
            raise TypeError(f"{type(self).__name__} takes {len(names)} fields, got {len(values)}")
        state = self.__dict__
        state.update(zip(names, values, strict=True))
        state["line"], state["column"] = line, column
        if not line:
            for value in self.iter_children():
                found = position(value)
                if found != (0, 0):
                    self.line, self.column = found
                    break

    @classmethod
    def field_names(cls) -> tuple[str, ...]:
        return cls._names

    @classmethod
    def build(cls, children: list[Any], line: int, column: int) -> Node:
        """The node of a lark rule's children (the grammar's order; a list field takes the middle)."""
        if cls._star is None:
            values = children
            if len(values) != len(cls._names):
                raise TypeError(f"{cls.__name__} takes {len(cls._names)} fields, got {len(values)}")
        else:
            head, tail = len(cls._head), len(cls._tail)
            middle = children[head : len(children) - tail]
            values = [*children[:head], [c for c in middle if c is not None]]
            if tail:
                values.extend(children[-tail:])
        if not line:
            return cls(*values)  # __init__ finds the position in the parts
        # the parser builds every node through here: set the fields without a call to __init__
        node = object.__new__(cls)
        state = node.__dict__
        state.update(zip(cls._names, values, strict=True))
        state["line"], state["column"] = line, column
        return node

    def iter_children(self) -> Iterator[Any]:
        """The parts in source order (list fields spread out, missing parts left out)."""
        for name in self.field_names():
            value = getattr(self, name)
            if isinstance(value, list):
                yield from (v for v in value if v is not None)
            elif value is not None:
                yield value

    def iter_nodes(self) -> Iterator[Node]:
        """This node and every node below it, parents first (without recursion)."""
        todo: list[Node] = [self]
        while todo:
            node = todo.pop()
            yield node
            todo.extend(reversed([c for c in node.iter_children() if isinstance(c, Node)]))

    def __eq__(self, other: object) -> bool:
        """Same kind and equal fields (positions aside): two spellings of the same path are equal."""
        if not isinstance(other, Node) or other.kind != self.kind:
            return False
        return all(getattr(self, n) == getattr(other, n) for n in self.field_names())

    def __hash__(self) -> int:
        return hash(self.kind)

    def __repr__(self) -> str:
        parts = ", ".join(f"{n}={getattr(self, n)!r}" for n in self.field_names())
        return f"{type(self).__name__}({parts})"


# ---------------------------------------------------------------------- names and keywords


class Ident(Node):
    kind = "ident"
    fields = ("token",)
    token: Token

    @property
    def name(self) -> str:
        return str(self.token)


class Quoted(Node):
    kind = "quoted"
    fields = ("token",)
    token: Token

    @property
    def name(self) -> str:
        return str(self.token)[1:-1].replace('""', '"')


Name = Ident | Quoted


class Keyword(Node):
    """A keyword group (``relation``, ``set_attr``, ``comp_op`` …): ``kind`` is the group's rule."""

    fields = ("*words",)
    words: list[Token]

    def __init__(self, kind: str, words: list[Token], line: int = 0, column: int = 0) -> None:
        self.kind = kind  # type: ignore[misc]  # one class serves every keyword group
        super().__init__(words, line=line, column=column)

    @property
    def text(self) -> str:
        return " ".join(str(t).upper() for t in self.words)


#: The rules the grammar marks ``!``: their keywords are kept as tokens.
KEYWORD_GROUPS = frozenset(
    {
        "name_kw",
        "routine_kind",
        "param_dir",
        "set_attr",
        "decl_mod",
        "handler_kind",
        "relation",
        "parse_opt_kw",
        "prop_kind",
        "prop_opt_kw",
        "prop_flag_kw",
        "prop_val",
        "user_kw",
        "throw_opt_kw",
        "log_flag_kw",
        "not_kw",
        "between_mod",
        "is_what",
        "substr_kw",
        "trim_spec",
        "quantifier",
        "cast_opt_kw",
        "bool_kw",
        "datetime_kw",
        "interval_unit",
        "external_kw",
        "constant_kw",
        "comp_op",
        "add_op",
        "mul_op",
        "atomic",
        "log_kind",
        "commit_kind",
    }
)


# ---------------------------------------------------------------------- files, modules, routines


class Program(Node):
    kind = "start"
    fields = ("*items",)
    items: list[Node]


class EvalExpr(Node):
    kind = "eval_expr"
    fields = ("expr",)
    expr: Node


class BrokerSchema(Node):
    kind = "broker_schema"
    fields = ("name",)
    name: DottedName


class PathDecl(Node):
    kind = "path_decl"
    fields = ("*schemas",)
    schemas: list[DottedName]


class DottedName(Node):
    kind = "dotted_name"
    fields = ("*parts",)
    parts: list[Name]

    @property
    def text(self) -> str:
        return ".".join(p.name for p in self.parts)


class ModuleDef(Node):
    kind = "module"
    fields = ("module_type", "name", "*items")
    module_type: Token
    name: Name
    items: list[Node]


class RoutineDef(Node):
    kind = "routine"
    fields = ("routine_kind", "name", "*params", "returns", "body")
    routine_kind: Keyword
    name: Name
    params: list[Param]
    returns: Returns | None
    body: EsqlBody | ExternalBody


class Returns(Node):
    kind = "returns"
    fields = ("type",)
    type: TypeName


class Param(Node):
    kind = "param"
    fields = ("direction", "name", "constant", "type")
    direction: Keyword | None
    name: Name
    constant: Keyword | None
    type: TypeName


class EsqlBody(Node):
    kind = "esql_body"
    fields = ("body",)
    body: Node


class ExternalBody(Node):
    kind = "external_body"
    fields = ("language", "*items")
    language: LangName
    items: list[ExtItem]


class LangName(Node):
    kind = "lang_name"
    fields = ("token",)
    token: Token


class ExtItem(Node):
    kind = "ext_item"
    fields = ("value",)
    value: Token | Keyword


# ---------------------------------------------------------------------- statements


class Statements(Node):
    kind = "statements"
    fields = ("*body",)
    body: list[Node]


class Empty(Node):
    kind = "empty"


class Labelled(Node):
    kind = "labelled"
    fields = ("label", "loop")
    label: Name
    loop: Node


class SetStmt(Node):
    kind = "set_stmt"
    fields = ("target", "attr", "value")
    target: FieldRef
    attr: Keyword | None
    value: Node


class Declare(Node):
    kind = "declare"
    fields = ("*names", "modifier", "type", "init")
    names: list[Name]
    modifier: Keyword | None
    type: TypeName | ConstantType | ReferenceType
    init: Node | None


class ConstantType(Node):
    kind = "constant_type"
    fields = ("constant", "type")
    constant: Keyword
    type: TypeName


class ReferenceType(Node):
    kind = "reference_type"
    fields = ("target",)
    target: FieldRef


class TypeName(Node):
    kind = "type_name"
    fields = ("token",)
    token: Token

    @property
    def text(self) -> str:
        """The type name in upper case."""
        return str(self.token).upper()


class Handler(Node):
    kind = "handler"
    fields = ("handler_kind", "*conditions", "body")
    handler_kind: Keyword
    conditions: list[SqlstateValue | SqlstateLike]
    body: Node


class SqlstateValue(Node):
    kind = "sqlstate_value"
    fields = ("state",)
    state: Token


class SqlstateLike(Node):
    kind = "sqlstate_like"
    fields = ("pattern", "escape")
    pattern: Token
    escape: Token | None


class IfStmt(Node):
    kind = "if_stmt"
    fields = ("condition", "then", "*elseifs", "else_part")
    condition: Node
    then: Statements
    elseifs: list[ElseIf]
    else_part: ElsePart | None


class ElseIf(Node):
    kind = "elseif"
    fields = ("condition", "then")
    condition: Node
    then: Statements


class ElsePart(Node):
    kind = "else_part"
    fields = ("body",)
    body: Statements


class WhileStmt(Node):
    kind = "while_stmt"
    fields = ("condition", "body", "end_label")
    condition: Node
    body: Statements
    end_label: Name | None


class LoopStmt(Node):
    kind = "loop_stmt"
    fields = ("body", "end_label")
    body: Statements
    end_label: Name | None


class RepeatStmt(Node):
    kind = "repeat_stmt"
    fields = ("body", "condition", "end_label")
    body: Statements
    condition: Node
    end_label: Name | None


class ForStmt(Node):
    kind = "for_stmt"
    fields = ("name", "source", "body", "end_label")
    name: Name
    source: FieldRef
    body: Statements
    end_label: Name | None


class BeginStmt(Node):
    kind = "begin_stmt"
    fields = ("atomic", "body", "end_label")
    atomic: Keyword | None
    body: Statements
    end_label: Name | None


class LeaveStmt(Node):
    kind = "leave_stmt"
    fields = ("label",)
    label: Name


class IterateStmt(Node):
    kind = "iterate_stmt"
    fields = ("label",)
    label: Name


class CaseStmt(Node):
    kind = "case_stmt"
    fields = ("operand", "*whens", "else_part")
    operand: Node | None
    whens: list[CaseWhen]
    else_part: ElsePart | None


class CaseWhen(Node):
    kind = "case_when"
    fields = ("condition", "body")
    condition: Node
    body: Statements


class ReturnStmt(Node):
    kind = "return_stmt"
    fields = ("value",)
    value: Node | None


class CallStmt(Node):
    kind = "call_stmt"
    fields = ("routine", "args", "call_in", "into")
    routine: FieldRef
    args: Args | None
    call_in: CallIn | CallExternalSchema | None
    into: CallInto | None


class CallIn(Node):
    kind = "call_in"
    fields = ("target",)
    target: FieldRef


class CallExternalSchema(Node):
    kind = "call_external_schema"
    fields = ("schema",)
    schema: Node


class CallInto(Node):
    kind = "call_into"
    fields = ("target",)
    target: FieldRef


class CreateStmt(Node):
    kind = "create_stmt"
    fields = ("where", "target", "create_as", "domain", "content")
    where: WhereField | WhereRel
    target: FieldRef
    create_as: CreateAs | None
    domain: CreateDomain | None
    content: Node | None


class WhereField(Node):
    kind = "where_field"


class WhereRel(Node):
    kind = "where_rel"
    fields = ("relation",)
    relation: Keyword


class CreateAs(Node):
    kind = "create_as"
    fields = ("target",)
    target: FieldRef


class CreateDomain(Node):
    kind = "create_domain"
    fields = ("domain",)
    domain: Node


class CreateValues(Node):
    kind = "create_values"
    fields = ("*values",)
    values: list[CreateValue]


class CreateValue(Node):
    kind = "create_value"
    fields = ("attr", "value")
    attr: Keyword
    value: Node


class CreateFrom(Node):
    kind = "create_from"
    fields = ("source",)
    source: Node


class CreateParse(Node):
    kind = "create_parse"
    fields = ("source", "*options")
    source: Node
    options: list[ParseOpt]


class CreateParsePos(Node):
    kind = "create_parse_pos"
    fields = ("source", "options")
    source: Node
    options: PositionalOpts


class CreateIdentity(Node):
    kind = "create_identity"
    fields = ("element", "value")
    element: PathElem
    value: Node | None


class CreateRepeat(Node):
    kind = "create_repeat"
    fields = ("value",)
    value: Node | None


class ParseOpt(Node):
    kind = "parse_opt"
    fields = ("option", "value")
    option: Keyword
    value: Node


class DeleteField(Node):
    kind = "delete_field"
    fields = ("target",)
    target: FieldRef


class DeleteRel(Node):
    kind = "delete_rel"
    fields = ("relation", "target")
    relation: Keyword
    target: FieldRef


class DeleteFromStmt(Node):
    kind = "delete_from_stmt"
    fields = ("table", "alias", "condition")
    table: FieldRef
    alias: Name | None
    condition: Node | None


class MoveStmt(Node):
    kind = "move_stmt"
    fields = ("target", "destination")
    target: FieldRef
    destination: MoveTo | MoveParent | MoveRel


class MoveTo(Node):
    kind = "move_to"
    fields = ("target",)
    target: FieldRef


class MoveParent(Node):
    kind = "move_parent"


class MoveRel(Node):
    kind = "move_rel"
    fields = ("relation", "*qualifiers")
    relation: Keyword
    qualifiers: list[Node]


class MoveFilter(Node):
    kind = "move_filter"
    fields = ("attr", "value")
    attr: Keyword
    value: Node


class MoveAnyNamespace(Node):
    kind = "move_any_namespace"


class MoveIdentity(Node):
    kind = "move_identity"
    fields = ("element",)
    element: PathElem


class MoveRepeat(Node):
    kind = "move_repeat"
    fields = ("*attrs",)
    attrs: list[Keyword]


class AttachStmt(Node):
    kind = "attach_stmt"
    fields = ("source", "target", "relation")
    source: FieldRef
    target: FieldRef
    relation: Keyword


class DetachStmt(Node):
    kind = "detach_stmt"
    fields = ("target",)
    target: FieldRef


class PropagateStmt(Node):
    kind = "propagate_stmt"
    fields = ("destination", "*options")
    destination: PropTo | None
    options: list[Node]


class PropTo(Node):
    kind = "prop_to"
    fields = ("prop_kind", "target")
    prop_kind: Keyword
    target: Node


class PropSource(Node):
    kind = "prop_source"
    fields = ("option", "value")
    option: Keyword
    value: Node


class PropFlag(Node):
    kind = "prop_flag"
    fields = ("flag", "value")
    flag: Keyword
    value: Keyword


class ThrowStmt(Node):
    kind = "throw_stmt"
    fields = ("user", "*options")
    user: Keyword | None
    options: list[Node]


class ThrowValue(Node):
    kind = "throw_value"
    fields = ("option", "value")
    option: Keyword
    value: Node


class ThrowValues(Node):
    kind = "throw_values"
    fields = ("args",)
    args: Args | None


class ResignalStmt(Node):
    kind = "resignal_stmt"


class EvalStmt(Node):
    kind = "eval_stmt"
    fields = ("text",)
    text: Node


class LogStmt(Node):
    kind = "log_stmt"
    fields = ("log_kind", "*options")
    log_kind: Keyword
    options: list[Node]


class LogFlag(Node):
    kind = "log_flag"
    fields = ("flag",)
    flag: Keyword


class LogValue(Node):
    kind = "log_value"
    fields = ("option", "value")
    option: Keyword
    value: Node


class LogValues(Node):
    kind = "log_values"
    fields = ("args",)
    args: Args | None


class InsertStmt(Node):
    kind = "insert_stmt"
    fields = ("table", "*columns", "values")
    table: FieldRef
    columns: list[Name]
    values: Args


class UpdateStmt(Node):
    kind = "update_stmt"
    fields = ("table", "alias", "*assignments", "condition")
    table: FieldRef
    alias: Name | None
    assignments: list[ColumnSet]
    condition: Node | None


class ColumnSet(Node):
    kind = "column_set"
    fields = ("name", "value")
    name: Name
    value: Node


class PassthruStmt(Node):
    kind = "passthru_stmt"
    fields = ("statement", "to", "values")
    statement: Node
    to: PassthruTo | None
    values: PassthruValues | None


class PassthruValues(Node):
    kind = "passthru_values"
    fields = ("args",)
    args: Args | None


class PassthruTo(Node):
    kind = "passthru_to"
    fields = ("target",)
    target: FieldRef


class CommitStmt(Node):
    kind = "commit_stmt"
    fields = ("action", "connection")
    action: Keyword
    connection: FieldRef | None


# ---------------------------------------------------------------------- expressions


class OrOp(Node):
    kind = "or_op"
    fields = ("left", "right")
    left: Node
    right: Node


class AndOp(Node):
    kind = "and_op"
    fields = ("left", "right")
    left: Node
    right: Node


class NotOp(Node):
    kind = "not_op"
    fields = ("operand",)
    operand: Node


class Compare(Node):
    kind = "compare"
    fields = ("left", "op", "right")
    left: Node
    op: Keyword
    right: Node


class Between(Node):
    kind = "between"
    fields = ("operand", "negated", "mode", "low", "high")
    operand: Node
    negated: Keyword | None
    mode: Keyword | None
    low: Node
    high: Node


class InList(Node):
    kind = "in_list"
    fields = ("operand", "negated", "values")
    operand: Node
    negated: Keyword | None
    values: Args


class Like(Node):
    kind = "like"
    fields = ("operand", "negated", "pattern", "escape")
    operand: Node
    negated: Keyword | None
    pattern: Node
    escape: Node | None


class IsTest(Node):
    kind = "is_test"
    fields = ("operand", "negated", "sign", "what")
    operand: Node
    negated: Keyword | None
    sign: Keyword | None
    what: Keyword


class BinOp(Node):
    kind = "binop"
    fields = ("left", "op", "right")
    left: Node
    op: Keyword
    right: Node


class Concat(Node):
    kind = "concat"
    fields = ("left", "right")
    left: Node
    right: Node


class UnaryOp(Node):
    kind = "unary_op"
    fields = ("op", "operand")
    op: Keyword
    operand: Node


class IntervalDiff(Node):
    kind = "interval_diff"
    fields = ("expr", "qualifier")
    expr: Node
    qualifier: IntervalQualifier


class Paren(Node):
    kind = "paren"
    fields = ("expr",)
    expr: Node


class ParenList(Node):
    kind = "paren_list"
    fields = ("first", "args", "to", "values")
    first: Node
    args: Args
    to: PassthruTo | None
    values: PassthruValues | None


class ParenPassthru(Node):
    kind = "paren_passthru"
    fields = ("expr", "to", "values")
    expr: Node
    to: PassthruTo | None
    values: PassthruValues | None

    @classmethod
    def build(cls, children: list[Any], line: int, column: int) -> Node:
        if len(children) == 2:  # ( expr VALUES (…) ), without TO
            children = [children[0], None, children[1]]
        return cls(*children, line=line, column=column)


class Call(Node):
    kind = "call"
    fields = ("function", "call_args")
    function: FieldRef
    call_args: CallArgs | None


class CallStar(Node):
    kind = "call_star"
    fields = ("function",)
    function: FieldRef


class CallArgs(Node):
    kind = "call_args"
    fields = ("args", "mode")
    args: Args
    mode: Name | None


class Args(Node):
    kind = "args"
    fields = ("*items",)
    items: list[Node]


class Substring(Node):
    kind = "substring"
    fields = ("source", "mode", "start", "length")
    source: Node
    mode: Keyword
    start: Node
    length: Node | None


class PositionFn(Node):
    kind = "position"
    fields = ("needle", "haystack", "start", "repeat")
    needle: Node
    haystack: Node
    start: Node | None
    repeat: Node | None


class TrimFrom(Node):
    kind = "trim_from"
    fields = ("spec", "chars", "source")
    spec: Keyword | None
    chars: Node | None
    source: Node


class TrimPlain(Node):
    kind = "trim_plain"
    fields = ("source",)
    source: Node


class Extract(Node):
    kind = "extract"
    fields = ("part", "source")
    part: Name
    source: Node


class Overlay(Node):
    kind = "overlay"
    fields = ("source", "placing", "start", "length")
    source: Node
    placing: Node
    start: Node
    length: Node | None


class Asbitstream(Node):
    kind = "asbitstream"
    fields = ("source", "*options")
    source: Node
    options: list[BitstreamOpt]


class AsbitstreamPos(Node):
    kind = "asbitstream_pos"
    fields = ("source", "options")
    source: Node
    options: PositionalOpts


class BitstreamOpt(Node):
    kind = "bitstream_opt"
    fields = ("option", "value")
    option: Keyword
    value: Node


class PositionalOpts(Node):
    """The older comma form of options: ENCODING, CCSID, SET, TYPE, FORMAT, OPTIONS by position."""

    kind = "positional_opts"
    fields = ("values",)
    values: list[Node | None]  # None where a position is left empty

    @classmethod
    def build(cls, children: list[Any], line: int, column: int) -> Node:
        return cls(list(children), line=line, column=column)


class Quantified(Node):
    kind = "quantified"
    fields = ("quantifier", "source", "alias", "condition")
    quantifier: Keyword
    source: FieldRef
    alias: Name
    condition: Node


class PassthruFn(Node):
    kind = "passthru_fn"
    fields = ("call",)
    call: Node


class CaseExpr(Node):
    kind = "case_expr"
    fields = ("operand", "*whens", "else_value")
    operand: Node | None
    whens: list[CaseExprWhen]
    else_value: Node | None


class CaseExprWhen(Node):
    kind = "case_expr_when"
    fields = ("condition", "value")
    condition: Node
    value: Node


class CastExpr(Node):
    kind = "cast_expr"
    fields = ("args", "type", "*options")
    args: Args
    type: CastType | CastInterval
    options: list[CastOpt]


class CastType(Node):
    kind = "cast_type"
    fields = ("token", "precision", "scale")
    token: Token
    precision: Token | None
    scale: Token | None


class CastInterval(Node):
    kind = "cast_interval"
    fields = ("qualifier",)
    qualifier: IntervalQualifier | None


class CastOpt(Node):
    kind = "cast_opt"
    fields = ("option", "value")
    option: Keyword
    value: Node


class SelectExpr(Node):
    kind = "select_expr"
    fields = ("select_list", "*sources", "condition")
    select_list: Node
    sources: list[FromItem]
    condition: Node | None


class SelectItem(Node):
    kind = "select_item"
    fields = ("expr",)
    expr: Node


class SelectStar(Node):
    kind = "select_star"


class SelectFields(Node):
    kind = "select_fields"
    fields = ("*items",)
    items: list[SelectField]


class SelectField(Node):
    kind = "select_field"
    fields = ("expr", "alias")
    expr: Node
    alias: AliasPath | None


class AliasPath(Node):
    kind = "alias_path"
    fields = ("*elems",)
    elems: list[PathElem]


class FromItem(Node):
    kind = "from_item"
    fields = ("source", "alias")
    source: FieldRef
    alias: Name | None


class RowExpr(Node):
    kind = "row_expr"
    fields = ("*items",)
    items: list[RowField]


class RowField(Node):
    kind = "row_field"
    fields = ("expr", "alias")
    expr: Node
    alias: AliasPath | None


class ListExpr(Node):
    kind = "list_expr"
    fields = ("args",)
    args: Args | None


class TokenLit(Node):
    """A literal written as one token (its ``token`` is the source text)."""

    fields = ("token",)
    token: Token


class IntLit(TokenLit):
    kind = "int_lit"


class HexIntLit(TokenLit):
    kind = "hex_int_lit"


class DecimalLit(TokenLit):
    kind = "decimal_lit"


class FloatLit(TokenLit):
    kind = "float_lit"


class StringLit(TokenLit):
    kind = "string_lit"

    @property
    def value(self) -> str:
        return string_value(self.token)


class BlobLit(TokenLit):
    kind = "blob_lit"


class BitLit(TokenLit):
    kind = "bit_lit"


class BoolLit(Node):
    kind = "bool_lit"
    fields = ("value",)
    value: Keyword


class NullLit(Node):
    kind = "null_lit"


class TypedLit(Node):
    kind = "typed_lit"
    fields = ("type", "token")
    type: Keyword
    token: Token


class IntervalLit(Node):
    kind = "interval_lit"
    fields = ("token", "qualifier")
    token: Token
    qualifier: IntervalQualifier


class IntervalQualifier(Node):
    kind = "interval_qualifier"
    fields = ("start", "end")
    start: Keyword
    end: Keyword | None


# ---------------------------------------------------------------------- field references


class FieldRef(Node):
    kind = "fieldref"
    fields = ("start", "*elems")
    start: PathStart
    elems: list[PathElem]


class PathStart(Node):
    kind = "path_start"
    fields = ("name", "index")
    name: Name
    index: Node | None


class PathElem(Node):
    """One ``.``-step of a path: an optional type (``(XMLNSC.Attribute)``), the step, an optional index.

    A path element with no name (``InputRoot.[1]``, ``Body.[<]``) matches a field of any name in
    any namespace, as ``*`` does (ESQL field reference overview: PathElement); it is built so.
    """

    kind = "path_elem"
    fields = ("type_qual", "step", "index")
    type_qual: TypeQual | None
    step: Step
    index: Node | None


class TypeQual(Node):
    kind = "type_qual"
    fields = ("*names",)
    names: list[Name]

    @property
    def text(self) -> str:
        return ".".join(n.name for n in self.names)


class Step(Node):
    """``prefix:name`` or ``name``; either part may be ``*`` (Star) or ``{expr}`` (Dynamic)."""

    kind = "step"
    fields = ("prefix", "name")
    prefix: Node | None  # None when no namespace prefix is written
    name: Node

    @classmethod
    def build(cls, children: list[Any], line: int, column: int) -> Node:
        first, second = children
        if second is None:
            return cls(None, first, line=line, column=column)
        return cls(first, second, line=line, column=column)

    @property
    def first(self) -> Node:
        """The part written first: the prefix when there is one, else the name."""
        return self.name if self.prefix is None else self.prefix


class Star(Node):
    kind = "star"


class Dynamic(Node):
    kind = "dynamic"
    fields = ("expr",)
    expr: Node


class IndexAll(Node):
    kind = "index_all"


class IndexN(Node):
    kind = "index_n"
    fields = ("expr",)
    expr: Node


class IndexLast(Node):
    kind = "index_last"
    fields = ("expr",)
    expr: Node | None


class IndexFirst(Node):
    kind = "index_first"
    fields = ("expr",)
    expr: Node | None


def _anon_elem(children: list[Any], line: int, column: int) -> Node:
    type_qual = children[0]
    index = children[1] if len(children) == 2 else None
    star = Star(line=line, column=column)
    return PathElem(type_qual, Step(None, star, line=line, column=column), index, line=line, column=column)


# ---------------------------------------------------------------------- building


def _node_classes() -> dict[str, type[Node]]:
    found: dict[str, type[Node]] = {}
    todo: list[type[Node]] = [Node]
    while todo:
        cls = todo.pop()
        todo.extend(cls.__subclasses__())
        if cls.__dict__.get("kind"):
            found[cls.kind] = cls
    return found


NODE_CLASSES = _node_classes()


def _keyword_builder(kind: str) -> Callable[[list[Any], int, int], Node]:
    def build_keyword(children: list[Any], line: int, column: int) -> Node:
        return Keyword(kind, [c for c in children if c is not None], line, column)

    return build_keyword


#: grammar rule → the function building its node from the rule's children and position
_BUILDERS: dict[str, Callable[[list[Any], int, int], Node]] = {
    **{kind: cls.build for kind, cls in NODE_CLASSES.items()},
    **{kind: _keyword_builder(kind) for kind in KEYWORD_GROUPS},
    "anon_elem": _anon_elem,
}


class _Builder(Transformer_NonRecursive):
    """lark parse tree → typed nodes (without recursion: operator chains can be thousands long)."""

    __visit_tokens__ = False

    def _call_userfunc(self, tree: Tree[Any], new_children: list[Any] | None = None) -> Any:
        # Every rule has its builder: skip lark's look-up of a method named after the rule.
        builder = _BUILDERS.get(tree.data)
        if builder is None:
            raise ValueError(f"no syntax node for grammar rule {tree.data!r}")
        meta = tree.meta
        children = tree.children if new_children is None else new_children
        if meta.empty:
            return builder(children, 0, 0)
        return builder(children, meta.line, meta.column)


def build(tree: Tree[Any]) -> Node:
    """The typed syntax tree of a lark parse tree.

    The build allocates a node per rule and no reference cycles, so the cyclic garbage collector
    would only walk the growing heap again and again (a third of the time for a big file): it is
    paused while the tree is built.
    """
    paused = gc.isenabled()
    gc.disable()
    try:
        result: Node = _Builder(visit_tokens=False).transform(tree)
    finally:
        if paused:
            gc.enable()
    return result


# ---------------------------------------------------------------------- accessors


def position(node: Any) -> tuple[int, int]:
    """(line, column) of a node or token (1-based); (0, 0) when unknown."""
    if isinstance(node, Token):
        return node.line or 0, node.column or 0
    if isinstance(node, Node):
        return node.line, node.column
    return 0, 0


def ident(node: Any) -> str:
    """The text of a name (an identifier, or a quoted identifier without its quotes)."""
    if isinstance(node, Token):
        return str(node)
    name: str = node.name
    return name


def is_name(node: Any) -> bool:
    return isinstance(node, (Ident, Quoted))


def keyword(node: Any) -> str:
    """The upper-case keyword text of a keyword-group node (``relation``, ``set_attr`` …)."""
    if node is None:
        return ""
    if isinstance(node, Token):
        return str(node).upper()
    text: str = node.text
    return text


def string_value(token: Any) -> str:
    """The text of a STRING token ('it''s' → it's)."""
    text = str(token)
    return text[1:-1].replace("''", "'")


def left_chain(node: Any, kinds: tuple[str, ...]) -> tuple[Any, list[Any]]:
    """The first operand and the operator nodes, innermost first, of a left-associative chain.

    ``a || b || c`` parses as concat(concat(a, b), c); this walks its left spine without recursion
    (chains of thousands of operands are too deep to recurse over).
    """
    links: list[Any] = []
    while isinstance(node, Node) and node.kind in kinds:
        links.append(node)
        node = node.left  # type: ignore[attr-defined]  # every chain kind has left
    links.reverse()
    return node, links
