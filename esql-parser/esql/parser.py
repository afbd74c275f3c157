"""ESQL source text to a positioned lark parse tree, with keyword-in-context lexing and recovery.

ESQL keywords are case-insensitive and almost all of them are also valid field and variable
names (``.Type``, ``.Name``, ``DECLARE count``). The tokenizer therefore emits a keyword token
only when the LALR parser, after the reductions it would make, can actually shift that keyword;
otherwise the word is an identifier. On a syntax error the parser reports it, skips to the next
``;`` and resumes at the enclosing statement list, so one run reports several errors.
"""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path
from typing import Any

from lark import Lark, Token, Tree
from lark.exceptions import UnexpectedToken
from lark.lexer import PatternStr

from esql.diagnostics import Diagnostic

GRAMMAR_PATH = Path(__file__).with_name("grammar") / "esql.lark"

_TOKEN_RE = re.compile(
    r"""
    (?P<ws>[ \t\r\n\f\ufeff]+)
  | (?P<comment>--[^\n]*)
  | (?P<block>/\*.*?\*/)
  | (?P<badblock>/\*)
  | (?P<BLOB_LIT>[xX]'[0-9A-Fa-f\s]*')
  | (?P<BIT_LIT>[bB]'[01]*')
  | (?P<QUOTED>"(?:[^"]|"")*")
  | (?P<STRING>'(?:[^']|'')*')
  | (?P<badstring>['"])
  | (?P<HEXINT>0[xX][0-9A-Fa-f]+)
  | (?P<FLOAT>(?:\d+\.\d*|\.\d+|\d+)[eE][+-]?\d+)
  | (?P<DECIMAL>\d+\.\d*|\.\d+)
  | (?P<INT>\d+)
  | (?P<word>[A-Za-z_][A-Za-z0-9_]*)
    """,
    re.VERBOSE | re.DOTALL,
)


class _Grammar:
    """The LALR tables and the token-type maps derived from the grammar's terminals."""

    def __init__(self) -> None:
        self.lark = Lark(
            GRAMMAR_PATH.read_text(encoding="utf-8"),
            parser="lalr",
            propagate_positions=True,
            maybe_placeholders=True,
            # Building the LALR tables takes about a second; lark keeps them in a temp-dir cache
            # keyed by the grammar's hash, so command start-up pays it once per grammar version.
            cache=True,
        )
        self.keywords: dict[str, str] = {}
        punct: dict[str, str] = {}
        for term in self.lark.terminals:
            if isinstance(term.pattern, PatternStr):
                value = term.pattern.value
                if re.fullmatch(r"[A-Za-z_]+", value):
                    self.keywords[value.upper()] = term.name
                else:
                    punct[value] = term.name
        self.punct = punct
        ordered = sorted(punct, key=len, reverse=True)
        self.punct_re = re.compile("|".join(re.escape(p) for p in ordered))
        self.display = {name: value for value, name in punct.items()}
        self.display.update({name: value for value, name in self.keywords.items()})
        self.display.update(
            {
                "IDENT": "identifier",
                "QUOTED": "quoted identifier",
                "STRING": "string literal",
                "INT": "integer literal",
                "DECIMAL": "decimal literal",
                "FLOAT": "float literal",
                "HEXINT": "integer literal",
                "BLOB_LIT": "BLOB literal",
                "BIT_LIT": "BIT literal",
                "$END": "end of input",
            }
        )


@lru_cache(maxsize=1)
def grammar() -> _Grammar:
    return _Grammar()


class ParseResult:
    """A parse tree (None when the source has syntax errors) and the syntax diagnostics."""

    def __init__(self, tree: Tree[Any] | None, diagnostics: list[Diagnostic]) -> None:
        self.tree = tree
        self.diagnostics = diagnostics


def _can_shift(states: Any, stack: list[Any], token_type: str) -> bool:
    """Whether the parser in this stack state would shift ``token_type`` after its reductions."""
    stack = list(stack)
    while True:
        action = states[stack[-1]].get(token_type)
        if action is None:
            return False
        kind, arg = action
        if kind.name == "Shift":
            return True
        size = len(arg.expansion)
        if size:
            del stack[-size:]
        goto = states[stack[-1]].get(arg.origin.name)
        if goto is None:
            return False
        stack.append(goto[1])


def _line_col(source: str, pos: int) -> tuple[int, int]:
    line = source.count("\n", 0, pos) + 1
    col = pos - (source.rfind("\n", 0, pos) + 1) + 1
    return line, col


def parse(source: str, filename: str = "main.esql", max_errors: int = 20) -> ParseResult:
    """Parse one ESQL file; the tree is None when any syntax error was found."""
    g = grammar()
    diagnostics: list[Diagnostic] = []
    interactive = g.lark.parse_interactive("")
    state = interactive.parser_state
    states = state.parse_conf.states
    kw_types = g.keywords
    pos = 0
    n = len(source)
    line = 1
    line_start = 0
    skipping = False
    ident_type = "IDENT"

    def error(p: int, message: str) -> None:
        ln, col = _line_col(source, p)
        diagnostics.append(Diagnostic(filename, ln, col, message, "error"))

    def recover() -> None:
        # Drop parser states until the innermost statement list that can take a new statement.
        declare = kw_types["DECLARE"]
        while len(state.state_stack) > 1 and not _can_shift(states, state.state_stack, declare):
            state.state_stack.pop()
            if state.value_stack:
                state.value_stack.pop()

    while pos < n:
        m = _TOKEN_RE.match(source, pos)
        if m is not None:
            kind = m.lastgroup or ""
            text = m.group()
        else:
            pm = g.punct_re.match(source, pos)
            if pm is None:
                if not skipping:
                    error(pos, f"unexpected character {source[pos]!r}")
                    if len(diagnostics) >= max_errors:
                        break
                    skipping = True
                pos += 1
                continue
            kind, text = "punct", pm.group()
        start = pos
        newlines = text.count("\n")
        if kind in ("ws", "comment", "block"):
            if newlines:
                line += newlines
                line_start = start + text.rfind("\n") + 1
            pos = m.end() if m is not None else pos + len(text)
            continue
        if kind == "badblock":
            error(start, "unterminated block comment")
            break
        if kind == "badstring":
            error(start, "unterminated string literal" if text == "'" else "unterminated quoted identifier")
            break
        col = start - line_start + 1
        if kind == "word":
            kw = kw_types.get(text.upper())
            ttype = kw if kw is not None and _can_shift(states, state.state_stack, kw) else ident_type
        elif kind == "punct":
            ttype = g.punct[text]
        else:
            ttype = kind
        token = Token(ttype, text, start, line, col, line, col + len(text), start + len(text))
        if newlines:
            line += newlines
            line_start = start + text.rfind("\n") + 1
        pos = start + len(text)
        if skipping:
            if ttype == g.punct.get(";"):
                skipping = False
                recover()
            continue
        try:
            state.feed_token(token)
        except UnexpectedToken as exc:
            error(start, _unexpected(g, token, exc.expected))
            if len(diagnostics) >= max_errors:
                break
            if ttype == g.punct.get(";"):
                recover()
            else:
                skipping = True
    if diagnostics:
        return ParseResult(None, diagnostics)
    try:
        tree = state.feed_token(Token("$END", "", n, line, n - line_start + 1), True)
    except UnexpectedToken as exc:
        ln, col = _line_col(source, n)
        diagnostics.append(Diagnostic(filename, ln, col, _unexpected(g, exc.token, exc.expected), "error"))
        return ParseResult(None, diagnostics)
    return ParseResult(tree, diagnostics)


def _unexpected(g: _Grammar, token: Token, expected: set[str]) -> str:
    what = "end of input" if token.type == "$END" else repr(str(token))
    names = sorted({g.display.get(e, e) for e in expected if not e.startswith("__")})
    if names and len(names) <= 6:
        shown = ", ".join(n if n in ("identifier", "end of input") or " " in n else f"'{n}'" for n in names)
        return f"syntax error: unexpected {what}, expected {shown}"
    return f"syntax error: unexpected {what}"
