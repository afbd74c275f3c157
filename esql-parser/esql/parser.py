"""ESQL source text to a typed syntax tree (through a lark parse tree), with keyword-in-context lexing and recovery.

ESQL keywords are case-insensitive and almost all of them are also valid field and variable
names (``.Type``, ``.Name``, ``DECLARE position``). The tokenizer therefore emits a keyword token
only when the LALR parser, after the reductions it would make, can actually shift that keyword;
otherwise the word is an identifier. Where both could follow (``SET date = date || 'x'``), the
token after the word decides. On a syntax error the parser reports it, skips to the next ``;``
and resumes at the enclosing statement list, so one run reports several errors; the END, ELSE,
ELSEIF … THEN, WHEN … THEN and UNTIL parts of the blocks it dropped are skipped, so they do not
close the blocks around them.
"""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path
from typing import Any

from lark import Lark, Token
from lark.exceptions import UnexpectedToken
from lark.lexer import PatternStr

from esql.ast import Node, build
from esql.checks import DECIMAL_PRECISION_IN_DECLARE
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
            start=["start", "eval_expr"],
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
    """A syntax tree (None when the source has syntax errors) and the syntax diagnostics."""

    def __init__(self, tree: Node | None, diagnostics: list[Diagnostic]) -> None:
        self.tree = tree
        self.diagnostics = diagnostics


def _after_shift(states: Any, stack: list[Any], token_type: str) -> list[Any] | None:
    """The state stack after the parser's reductions and its shift of ``token_type`` (None: no shift)."""
    stack = list(stack)
    while True:
        action = states[stack[-1]].get(token_type)
        if action is None:
            return None
        kind, arg = action
        if kind.name == "Shift":
            stack.append(arg)
            return stack
        size = len(arg.expansion)
        if size:
            del stack[-size:]
        goto = states[stack[-1]].get(arg.origin.name)
        if goto is None:
            return None
        stack.append(goto[1])


def _can_shift(states: Any, stack: list[Any], token_type: str) -> bool:
    """Whether the parser in this stack state would shift ``token_type`` after its reductions."""
    return _after_shift(states, stack, token_type) is not None


def _line_col(source: str, pos: int) -> tuple[int, int]:
    line = source.count("\n", 0, pos) + 1
    col = pos - (source.rfind("\n", 0, pos) + 1) + 1
    return line, col


#: Keywords that open a construct closed by ``END …``; recovery tracks the ones it drops.
_OPENERS = frozenset({"IF", "WHILE", "LOOP", "REPEAT", "FOR", "CASE", "BEGIN"})


def parse(
    source: str, filename: str = "main.esql", max_errors: int = 20, start: str = "start"
) -> ParseResult:
    """Parse one ESQL file (or, with ``start="eval_expr"``, one expression); the tree is None when
    any syntax error was found."""
    g = grammar()
    diagnostics: list[Diagnostic] = []
    interactive = g.lark.parse_interactive("", start=start)
    state = interactive.parser_state
    states = state.parse_conf.states
    kw_types = g.keywords
    semicolon = g.punct.get(";")
    declare = kw_types["DECLARE"]
    ident_type = "IDENT"
    n = len(source)
    # Constructs (IF, WHILE …) that recovery dropped from the parser stack: their END, ELSE,
    # ELSEIF … THEN, WHEN … THEN and UNTIL parts are skipped so they do not close outer blocks.
    pending: list[str] = []
    skipped: list[str] = []  # the words skipped since the last error, upper case
    # Length of the value stack right after the last recovery: opener tokens above it were
    # opened since, and their END belongs to them.
    floor = 0

    def error(p: int, message: str) -> None:
        ln, col = _line_col(source, p)
        diagnostics.append(Diagnostic(filename, ln, col, message, "error"))

    def recover() -> None:
        # Drop parser states until the innermost statement list that can take a new statement.
        nonlocal floor
        dropped: list[str] = []
        while len(state.state_stack) > 1 and not _can_shift(states, state.state_stack, declare):
            state.state_stack.pop()
            if state.value_stack:
                value = state.value_stack.pop()
                if isinstance(value, Token) and str(value).upper() in _OPENERS and value.type != ident_type:
                    dropped.append(str(value).upper())
        # the skipped text may already hold the END … of the innermost dropped constructs
        del dropped[: _unmatched_ends(skipped)]
        skipped.clear()
        pending.extend(reversed(dropped))
        floor = len(state.value_stack)

    def open_since_recovery() -> bool:
        return any(
            isinstance(v, Token) and v.type != ident_type and str(v).upper() in _OPENERS
            for v in state.value_stack[floor:]
        )

    def lex(pos: int) -> tuple[str, str, int] | None:
        """The next significant token at or after ``pos``: (kind, text, start); None at the end."""
        while pos < n:
            m = _TOKEN_RE.match(source, pos)
            if m is not None:
                kind = m.lastgroup or ""
                if kind in ("ws", "comment", "block"):
                    pos = m.end()
                    continue
                return kind, m.group(), pos
            pm = g.punct_re.match(source, pos)
            if pm is None:
                return "bad", source[pos], pos
            return "punct", pm.group(), pos
        return None

    def type_of(tok: tuple[str, str, int] | None, stack: list[Any]) -> str | None:
        """The token type ``tok`` would get in parser state ``stack`` (no lookahead)."""
        if tok is None:
            return "$END"
        kind, text, _start = tok
        if kind == "word":
            kw = kw_types.get(text.upper())
            return kw if kw is not None and _can_shift(states, stack, kw) else ident_type
        if kind == "punct":
            return g.punct.get(text)
        if kind in ("bad", "badblock", "badstring"):
            return None
        return kind

    def classify(text: str, end: int) -> tuple[str, bool]:
        """(token type, certainly wrong) of a word: a keyword where the parser can take it.

        A word that could be either the keyword or a name is decided by the token after it, so
        non-reserved keywords work as names (``SET position = position || 'w'``); a keyword the
        parser cannot take that is no valid name either is reported where it stands.
        """
        stack = state.state_stack
        kw = kw_types.get(text.upper())
        if kw is None:
            return ident_type, False
        as_kw = _after_shift(states, stack, kw)
        as_id = _after_shift(states, stack, ident_type)
        if as_kw is None and as_id is None:
            return kw, True
        if as_kw is None or as_id is None:
            chosen, ttype = (as_id, ident_type) if as_kw is None else (as_kw, kw)
            if ttype == ident_type and chosen is not None:
                nxt = lex(end)
                follow = type_of(nxt, chosen)
                if follow is not None and not _can_shift(states, chosen, follow):
                    return kw, True
            return ttype, False
        nxt = lex(end)
        follow = type_of(nxt, as_kw)
        if follow is not None and _can_shift(states, as_kw, follow):
            return kw, False
        follow = type_of(nxt, as_id)
        if follow is not None and _can_shift(states, as_id, follow):
            return ident_type, False
        return kw, False

    recent: list[Token] = []  # the last tokens fed, to word some errors precisely
    pos = 0
    line = 1
    line_start = 0
    skipping = False
    # What a pending-construct skip runs to: ";" (END …;), "THEN" (ELSEIF/WHEN … THEN), "END" (UNTIL …).
    skip_to = ""
    while pos < n:
        m = _TOKEN_RE.match(source, pos)
        if m is not None:
            kind = m.lastgroup or ""
            text = m.group()
        else:
            pm = g.punct_re.match(source, pos)
            if pm is None:
                if not skipping and not skip_to:
                    error(pos, f"unexpected character {source[pos]!r}")
                    if len(diagnostics) >= max_errors:
                        break
                    skipping = True
                pos += 1
                continue
            kind, text = "punct", pm.group()
        begin = pos
        newlines = text.count("\n")
        if kind in ("ws", "comment", "block"):
            if newlines:
                line += newlines
                line_start = begin + text.rfind("\n") + 1
            pos = m.end() if m is not None else pos + len(text)
            continue
        if kind == "badblock":
            error(begin, "unterminated block comment")
            break
        if kind == "badstring":
            error(begin, "unterminated string literal" if text == "'" else "unterminated quoted identifier")
            break
        col = begin - line_start + 1
        wrong = False
        upper = text.upper() if kind == "word" else ""
        if skip_to:
            pos = begin + len(text)
            if upper == skip_to or (skip_to == ";" and text == ";"):
                skip_to = ""
            elif skip_to == "END" and upper == "END":
                skip_to = ""
                pos = begin  # the END itself closes the dropped construct: handle it below
                continue
            if newlines:
                line += newlines
                line_start = begin + text.rfind("\n") + 1
            continue
        if (
            kind == "word"
            and pending
            and not skipping
            and upper in ("END", "ELSE", "ELSEIF", "WHEN", "UNTIL")
            and not open_since_recovery()
            and _can_shift(states, state.state_stack, declare)
        ):
            # A part of a construct that recovery dropped: skip it instead of misreading it.
            pos = begin + len(text)
            if upper == "END":
                pending.pop()
                skip_to = ";"
            elif upper in ("ELSEIF", "WHEN"):
                skip_to = "THEN"
            elif upper == "UNTIL":
                skip_to = "END"
            continue
        if kind == "word":
            if skipping:
                kw = kw_types.get(upper)
                ttype = kw if kw is not None else ident_type
            else:
                ttype, wrong = classify(text, begin + len(text))
        elif kind == "punct":
            ttype = g.punct[text]
        else:
            ttype = kind
        token = Token(ttype, text, begin, line, col, line, col + len(text), begin + len(text))
        if newlines:
            line += newlines
            line_start = begin + text.rfind("\n") + 1
        pos = begin + len(text)
        if skipping:
            if ttype == semicolon:
                skipping = False
                recover()
            elif kind == "word":
                skipped.append(upper)
            continue
        try:
            if wrong:
                expected = {t for t in states[state.state_stack[-1]] if t.isupper()}
                raise UnexpectedToken(token, expected, state=state)
            state.feed_token(token)
            recent.append(token)
            del recent[:-8]
            floor = min(floor, len(state.value_stack))
        except UnexpectedToken as exc:
            skipped.clear()
            if kind == "word":
                skipped.append(upper)
            precision = _declared_precision(recent)
            if precision is not None:
                error(precision.start_pos or 0, DECIMAL_PRECISION_IN_DECLARE)
            else:
                error(begin, _unexpected(g, token, exc.expected))
            if len(diagnostics) >= max_errors:
                break
            if ttype == semicolon:
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
    return ParseResult(build(tree), diagnostics)


def _unmatched_ends(words: list[str]) -> int:
    """How many ``END``s in skipped words close constructs opened before them (END IF counts once)."""
    opens = ends = 0
    after_end = False
    for word in words:
        if after_end and word in _OPENERS:
            after_end = False
            continue
        after_end = word == "END"
        if after_end:
            ends += 1
        elif word in _OPENERS and word != "FOR":  # FOR also appears in SUBSTRING and FOR ALL
            opens += 1
    return max(0, ends - opens)


def _declared_precision(recent: list[Token]) -> Token | None:
    """The '(' of ``DECLARE d DECIMAL(p, s)`` when that is what the fed tokens end with."""
    texts = [str(t).upper() for t in recent]
    for shape in (["DECIMAL", "(", "#", ",", "#", ")"], ["DECIMAL", "(", "#", ")"]):
        tail = texts[-len(shape) :]
        if len(tail) == len(shape) and all(
            (want == "#" and t.isdigit()) or want == t or (want == "DECIMAL" and t == "DEC")
            for want, t in zip(shape, tail, strict=True)
        ):
            before = texts[: -len(shape)]
            if "DECLARE" in before:
                return recent[-len(shape) + 1]
    return None


def _unexpected(g: _Grammar, token: Token, expected: set[str]) -> str:
    what = "end of input" if token.type == "$END" else repr(str(token))
    names = sorted({g.display.get(e, e) for e in expected if not e.startswith("__")})
    if names and len(names) <= 6:
        shown = ", ".join(n if n in ("identifier", "end of input") or " " in n else f"'{n}'" for n in names)
        return f"syntax error: unexpected {what}, expected {shown}"
    return f"syntax error: unexpected {what}"
