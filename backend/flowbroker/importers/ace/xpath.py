"""ACE's XPath filter expressions (a Route node's filter table) rewritten as ESQL expressions.

Only what has the same meaning in both is rewritten: paths from a correlation variable
(``$Root/XMLNSC/order/type``, ``$LocalEnvironment/…``, ``$Environment/…``, ``$Body/…``) by
plain child steps, string and number literals, the comparisons ``= != < <= > >=``, ``and``,
``or``, ``not(…)``, ``starts-with`` and ``contains``, and a path on its own, which XPath takes
as TRUE when it selects something (``EXISTS(path[])``). A comparison of a path with a value is
TRUE in XPath when any element it selects matches, in ESQL when the first one does; the Toolkit's
filter expressions name a single field. Anything else (axes, predicates, attributes, namespace
prefixes, other functions) raises :class:`~flowbroker.importers.ace.nodes.Unconvertible`.
"""

from __future__ import annotations

import re

from flowbroker.importers.ace.nodes import Unconvertible

_ROOTS = {
    "Root": "Root",
    "Body": "Body",
    "Properties": "Properties",
    "LocalEnvironment": "LocalEnvironment",
    "Environment": "Environment",
    "ExceptionList": "ExceptionList",
}
_TOKEN = re.compile(
    r"""\s*(?:
        (?P<string>'[^']*'|"[^"]*")
      | (?P<number>\d+(?:\.\d+)?)
      | (?P<path>\$[A-Za-z_][\w.-]*(?:/[^\s/=!<>(),'"]+)*)
      | (?P<op>!=|<=|>=|=|<|>)
      | (?P<punct>[(),])
      | (?P<word>[A-Za-z_][\w-]*)
    )""",
    re.VERBOSE,
)
_COMPARISONS = {"=": "=", "!=": "<>", "<": "<", "<=": "<=", ">": ">", ">=": ">="}
_FUNCTIONS = {"starts-with": "STARTSWITH", "contains": "CONTAINS"}
_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_STEP = re.compile(r"^[A-Za-z_][\w.-]*$")


def to_esql(expression: str) -> str:
    """The ESQL expression meaning what the XPath ``expression`` means; :class:`Unconvertible` says why not."""
    tokens = _tokens(expression)
    parser = _Parser(tokens)
    result = parser.boolean()
    if parser.at < len(tokens):
        raise Unconvertible(f"XPath {expression!r}: unexpected {tokens[parser.at][1]!r}")
    return result


def _tokens(expression: str) -> list[tuple[str, str]]:
    found: list[tuple[str, str]] = []
    at = 0
    text = expression.strip()
    while at < len(text):
        match = _TOKEN.match(text, at)
        if match is None or match.end() == at:
            raise Unconvertible(f"XPath {expression!r}: {text[at : at + 20]!r} has no ESQL counterpart")
        kind = match.lastgroup or ""
        found.append((kind, match.group(kind)))
        at = match.end()
        while at < len(text) and text[at].isspace():
            at += 1
    if not found:
        raise Unconvertible("an empty filter expression")
    return found


def _path(text: str) -> str:
    root, *steps = text[1:].split("/")
    if root not in _ROOTS:
        raise Unconvertible(f"XPath variable ${root} has no ESQL correlation name")
    out = [_ROOTS[root]]
    for step in steps:
        if not _STEP.match(step):
            raise Unconvertible(
                f"XPath step {step!r} (an axis, predicate, attribute or prefix) is not rewritten"
            )
        out.append(step if _IDENTIFIER.match(step) else '"' + step.replace('"', '""') + '"')
    return ".".join(out)


class _Parser:
    def __init__(self, tokens: list[tuple[str, str]]) -> None:
        self.tokens = tokens
        self.at = 0

    def _peek(self) -> tuple[str, str]:
        return self.tokens[self.at] if self.at < len(self.tokens) else ("end", "")

    def _take(self, kind: str, value: str | None = None) -> str:
        token = self._peek()
        if token[0] != kind or (value is not None and token[1] != value):
            raise Unconvertible(f"XPath: expected {value or kind}, found {token[1] or 'the end'!r}")
        self.at += 1
        return token[1]

    def boolean(self) -> str:
        parts = [self._and()]
        while self._peek() == ("word", "or"):
            self.at += 1
            parts.append(self._and())
        return " OR ".join(parts)

    def _and(self) -> str:
        parts = [self._unary()]
        while self._peek() == ("word", "and"):
            self.at += 1
            parts.append(self._unary())
        return " AND ".join(parts)

    def _unary(self) -> str:
        if self._peek() == ("word", "not"):
            self.at += 1
            self._take("punct", "(")
            inner = self.boolean()
            self._take("punct", ")")
            return f"NOT ({inner})"
        if self._peek() == ("punct", "("):
            self.at += 1
            inner = self.boolean()
            self._take("punct", ")")
            return f"({inner})"
        kind, value = self._peek()
        left = self._operand()
        if self._peek()[0] == "op":
            op = _COMPARISONS[self._take("op")]
            return f"{left} {op} {self._operand()}"
        if kind == "path":
            return f"EXISTS({left}[])" if "." in left else f"EXISTS({left}.*[])"
        if kind == "word" and value in _FUNCTIONS:
            return left
        raise Unconvertible(f"XPath: {value!r} is not a condition")

    def _operand(self) -> str:
        kind, value = self._peek()
        if kind == "string":
            self.at += 1
            return "'" + value[1:-1].replace("'", "''") + "'"
        if kind == "number":
            self.at += 1
            return value
        if kind == "path":
            self.at += 1
            return _path(value)
        if kind == "word" and value in _FUNCTIONS:
            self.at += 1
            self._take("punct", "(")
            first = self._operand()
            self._take("punct", ",")
            second = self._operand()
            self._take("punct", ")")
            return f"{_FUNCTIONS[value]}({first}, {second})"
        raise Unconvertible(f"XPath: {value or 'the end'!r} has no ESQL counterpart")
