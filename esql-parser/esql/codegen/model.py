"""What code generation works with: the name tables of ESQL (correlation names, broker properties,
constants, functions), the declared variables, routines and modules, and the emitter of Python lines."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from esql import ast
from esql.ast import Node

CORRELATION = {
    "InputRoot": "ctx.input_root",
    "OutputRoot": "ctx.output_root",
    "InputLocalEnvironment": "ctx.input_local_environment",
    "OutputLocalEnvironment": "ctx.output_local_environment",
    "Environment": "ctx.environment",
    "InputExceptionList": "ctx.input_exception_list",
    "OutputExceptionList": "ctx.output_exception_list",
    "InputDestinationList": "ctx.input_local_environment",
    "OutputDestinationList": "ctx.output_local_environment",
    "InputBody": "ctx.input_root.last_child",
    "InputProperties": "_child(ctx.input_root, 'Properties')",
    "Root": "ctx.input_root",
    "Body": "ctx.input_root.last_child",
    "Properties": "_child(ctx.input_root, 'Properties')",
    "LocalEnvironment": "ctx.input_local_environment",
    "DestinationList": "ctx.input_local_environment",
    "ExceptionList": "ctx.input_exception_list",
}
WRITABLE_ROOTS = {
    "OutputRoot",
    "OutputLocalEnvironment",
    "Environment",
    "OutputExceptionList",
    "OutputDestinationList",
    "LocalEnvironment",
    "Root",
    "ExceptionList",
    "DestinationList",
    "InputLocalEnvironment",
}
#: The correlation names of each node kind (IBM): a Compute node sees input and output trees,
#: Filter and Database nodes one message, of which only the environments can change.
COMPUTE_NAMES = frozenset(
    {
        "InputRoot",
        "InputBody",
        "InputProperties",
        "InputLocalEnvironment",
        "InputDestinationList",
        "InputExceptionList",
        "Environment",
        "OutputRoot",
        "OutputLocalEnvironment",
        "OutputDestinationList",
        "OutputExceptionList",
    }
)
SINGLE_MESSAGE_NAMES = frozenset(
    {"Root", "Body", "Properties", "LocalEnvironment", "DestinationList", "ExceptionList", "Environment"}
)
SINGLE_MESSAGE_WRITABLE = frozenset({"LocalEnvironment", "DestinationList", "Environment"})
SQL_STATE = {
    "SQLCODE": "ctx.sqlcode",
    "SQLSTATE": "ctx.sqlstate",
    "SQLERRORTEXT": "ctx.sqlerrortext",
    "SQLNATIVEERROR": "ctx.sqlnativeerror",
}
BROKER_PROPERTIES = {
    "BrokerName",
    "QueueManagerName",
    "NodeLabel",
    "MessageFlowLabel",
    "ApplicationLabel",
    "LibraryLabel",
    "ExecutionGroupLabel",
    "ExecutionGroupName",
    "BrokerVersion",
    "BrokerUserId",
    "BrokerDataSource",
    "Family",
    "ProcessId",
    "WorkPath",
    "CommitCount",
    "CommitInterval",
    "CoordinatedTransaction",
    "DataSource",
    "DataSourceUserId",
    "NodeType",
    "ThreadId",
}
BARE_FUNCTIONS = {
    "CURRENT_DATE",
    "CURRENT_TIME",
    "CURRENT_TIMESTAMP",
    "CURRENT_GMTDATE",
    "CURRENT_GMTTIME",
    "CURRENT_GMTTIMESTAMP",
    "LOCAL_TIMEZONE",
    "UUIDASCHAR",
    "UUIDASBLOB",
}
CONSTANTS: dict[str, Any] = {
    "MQPER_NOT_PERSISTENT": 0,
    "MQPER_PERSISTENT": 1,
    "MQPER_PERSISTENCE_AS_Q_DEF": 2,
    "MQMT_REQUEST": 1,
    "MQMT_REPLY": 2,
    "MQMT_DATAGRAM": 8,
    "MQMT_REPORT": 4,
    "MQEI_UNLIMITED": -1,
    "MQMD_CURRENT_VERSION": 2,
    "MQMD_STRUC_ID": "MD  ",
    "MQRO_NONE": 0,
    "MQRO_PASS_MSG_ID": 128,
    "MQRO_PASS_CORREL_ID": 64,
    "MQFMT_NONE": "        ",
    "MQFMT_STRING": "MQSTR   ",
    "MQFMT_RF_HEADER_2": "MQHRF2  ",
    "MQFMT_ADMIN": "MQADMIN ",
    "MQCCSI_Q_MGR": 0,
    "MQENC_NATIVE": 546,
    "RootBitStream": 0,
    "FolderBitStream": 0x00010000,
    "EmbeddedBitStream": 0x00020000,
    "ValidateNone": 0,
    "ValidateContentAndValue": 0x00300000,
    "ValidateContent": 0x00200000,
    "ValidateValue": 0x00100000,
    "ValidateImmediate": 0x00000400,
    "ValidateDeferred": 0x00000200,
    "ValidateComplete": 0x00000800,
    "ValidateException": 0x00000010,
    "ValidateLocalError": 0x00000020,
}
FIELD_FUNCTIONS = {"FIELDNAME", "FIELDNAMESPACE", "FIELDTYPE", "FIELDVALUE", "SAMEFIELD", "BITSTREAM"}
TREE_BUILTINS = {"CARDINALITY", "EXISTS", "SINGULAR", "LASTMOVE", "THE", "COALESCE", "NULLIF", "ASBITSTREAM"}
AGGREGATES = {"COUNT", "MAX", "MIN", "SUM"}
BINOPS = {"+": "_add", "-": "_sub", "*": "_mul", "/": "_div"}
COMPARE = {"=": "_eq", "<>": "_ne", "<": "_lt", "<=": "_le", ">": "_gt", ">=": "_ge"}


#: Operators chained this long are generated flat (see Generator.fold).
FLAT_CHAIN = 16
#: How deeply expressions and statements may nest: each level costs the generated Python a few
#: parentheses or an indentation level, and Python allows 200 and 100 of those.
MAX_NESTING = 64
MAX_STATEMENT_NESTING = 30


#: ESQL functions that translate to SQL inside database statements: name → (min, max) arguments.
SQL_FUNCTIONS = {
    "UPPER": (1, 1),
    "UCASE": (1, 1),
    "LOWER": (1, 1),
    "LCASE": (1, 1),
    "LENGTH": (1, 1),
    "CHARACTER_LENGTH": (1, 1),
    "CHAR_LENGTH": (1, 1),
    "ABS": (1, 1),
    "ABSVAL": (1, 1),
    "COALESCE": (1, 99),
    "NULLIF": (2, 2),
    "LTRIM": (1, 1),
    "RTRIM": (1, 1),
    "TRIM": (1, 1),
    "REPLACE": (2, 3),
    "ROUND": (1, 2),
    "MOD": (2, 2),
    "LEFT": (2, 2),
    "RIGHT": (2, 2),
}
#: Types CAST(column AS …) can give inside a database statement.
SQL_CASTS = ("INTEGER", "DECIMAL", "FLOAT", "CHARACTER", "DATE", "TIMESTAMP", "TIME", "BLOB")
SQL_NAMES = {
    "call": "this function",
    "case_expr": "this CASE",
    "cast_expr": "this CAST",
    "is_test": "this IS test",
    "select_expr": "a nested SELECT",
    "quantified": "a quantified predicate",
}


class SqlScope:
    """The tables of one database statement: their aliases and the columns the statement uses."""

    def __init__(self, aliases: list[str], qualified: bool = False) -> None:
        self.aliases = aliases
        self.qualified = qualified  # SELECT names columns through its aliases: T['A'].c['col']
        self.columns: dict[str, set[str]] = {alias: set() for alias in aliases}


@dataclass
class EvalSite:
    """A place in the program where EVAL runs: the variables in scope and what names resolve against."""

    scope: dict[str, Var]
    locals: list[str]  # Python names of the local variables passed in (and, for statements, back)
    module: str | None
    filename: str
    depth: int  # scope depth of the innermost variable: EVAL's own DECLAREs go deeper


class CodegenError(Exception):
    pass


def article(word: str) -> str:
    return ("an " if word[:1].upper() in "AEIOU" else "a ") + word


def mangle(prefix: str, name: str) -> str:
    """A Python identifier for an ESQL name that cannot collide with any Python or helper name."""
    if re.fullmatch(r"[A-Za-z0-9_]+", name):
        return f"{prefix}{name}"
    return prefix + "".join(c if c.isalnum() and c.isascii() else f"_{ord(c):x}_" for c in name)


@dataclass
class Var:
    """A declared name: what it holds and how generated code reaches it."""

    name: str
    py: str
    kind: str  # scalar | row | ref | namespace | alias | external | shared
    type_name: str = ""
    constant: bool = False
    scope_level: int = 0


@dataclass
class Routine:
    """A CREATE FUNCTION/PROCEDURE: its signature and generated Python name."""

    name: str
    qualified: str
    py: str
    params: list[tuple[str, str, str]]  # (direction, name, type)
    returns: str | None
    language: str
    node: Any  # the CREATE FUNCTION/PROCEDURE, or the first statement of bare code
    module: str | None
    filename: str
    schema: str
    external: str | None = None  # EXTERNAL NAME of a LANGUAGE DATABASE/JAVA/.NET routine
    result_sets: int = 0  # DYNAMIC RESULT SETS n: that many list arguments follow the parameters


#: Languages whose routines flowbroker runs; the others fail where they are called.
RUNNABLE_LANGUAGES = ("ESQL", "DATABASE")


@dataclass
class Module:
    name: str
    kind: str
    schema: str
    filename: str
    node: ast.ModuleDef | None
    routines: dict[str, Routine] = field(default_factory=dict)
    declares: list[ast.Declare] = field(default_factory=list)
    handlers: list[ast.Handler] = field(default_factory=list)
    bare_body: list[Node] = field(default_factory=list)
    #: the name the program knows it by: its own, or schema.name when another schema has that name too
    key: str = ""


@dataclass
class Unit:
    filename: str
    tree: ast.Program
    schema: str = ""
    path: list[str] = field(default_factory=list)


class Emitter:
    """Python source lines with indentation and a map from Python line to ESQL position."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.positions: list[tuple[str, int, int]] = []
        self.indent = 0
        self.where: tuple[str, int, int] = ("", 0, 0)

    def line(self, text: str) -> None:
        self.lines.append("    " * self.indent + text)
        self.positions.append(self.where)


class LoopFrame:
    def __init__(self, label: str | None, lid: int, python_loop: bool) -> None:
        self.label = label
        self.lid = lid
        self.python_loop = python_loop
        self.needs_leave = False
        self.needs_iterate = False
