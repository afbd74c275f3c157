"""ESQL of a workspace, indexed by broker schema: modules and the schema-level routines they call.

A node names its module as ``esql://routine/<schema>#<Module>.Main``. ACE finds the module in the
.esql files of that broker schema (in the application or any library it references) and the
routines the module calls in the same schema or in the schemas of the file's PATH clause. The
import does the same and gives the node one self-contained source: the schema line, the
schema-level declarations and routines the module needs (transitively), and the module.

Files are split into top-level items by a small lexer rather than the ESQL compiler, so that a
file using a statement the compiler does not know yet is still split and reported on precisely.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_TOKEN = re.compile(
    r"""
    (?P<space>\s+)
  | (?P<comment>--[^\n]*|/\*.*?\*/)
  | (?P<string>'(?:[^']|'')*')
  | (?P<quoted>"(?:[^"]|"")*")
  | (?P<word>[A-Za-z_][A-Za-z0-9_]*)
  | (?P<other>.)
    """,
    re.VERBOSE | re.DOTALL,
)

#: Words that open a block closed by END (``END IF``, ``END WHILE``… or a bare END).
_OPENERS = frozenset({"BEGIN", "IF", "WHILE", "LOOP", "CASE", "FOR", "REPEAT"})
ROUTINE_URI = re.compile(r"^esql://routine/(?P<schema>[^#]*)#(?P<module>[^.]+)(?:\.(?P<routine>\w+))?$")


@dataclass(frozen=True)
class Token:
    kind: str
    text: str
    start: int
    line: int

    @property
    def upper(self) -> str:
        return self.text.upper() if self.kind == "word" else self.text


@dataclass
class Item:
    """One top-level piece of an .esql file."""

    kind: str  # module, routine, declare, schema, path, statement
    name: str
    text: str
    line: int
    calls: frozenset[str] = frozenset()
    words: frozenset[str] = frozenset()
    inner: frozenset[str] = frozenset()  # routines a module defines itself
    #: routines called by schema-qualified name: (broker schema, routine), as ``CALL a.b.Log(…)``
    qualified: frozenset[tuple[str, str]] = frozenset()


@dataclass
class EsqlFile:
    project: str
    path: str
    schema: str
    paths: list[str]
    items: list[Item]


def tokens(text: str) -> list[Token]:
    found: list[Token] = []
    line = 1
    for match in _TOKEN.finditer(text):
        kind = match.lastgroup or "other"
        value = match.group()
        if kind not in ("space", "comment"):
            found.append(Token(kind, value, match.start(), line))
        line += value.count("\n")
    return found


def _statement_end(toks: list[Token], i: int) -> int:
    """Index of the ';' ending the statement that starts at ``i`` (or the last token)."""
    while i < len(toks) and toks[i].text != ";":
        i += 1
    return min(i, len(toks) - 1)


def _block_end(toks: list[Token], i: int) -> int:
    """``toks[i]`` is BEGIN: the index of the token closing its END (and the ';' after it)."""
    depth = 0
    n = len(toks)
    while i < n:
        word = toks[i].upper if toks[i].kind == "word" else ""
        prev = toks[i - 1].upper if i and toks[i - 1].kind == "word" else ""
        nxt = toks[i + 1].upper if i + 1 < n and toks[i + 1].kind == "word" else ""
        if word in _OPENERS and prev != "END":
            if not (word == "FOR" and prev == "HANDLER") and not (
                word == "REPEAT" and nxt in ("TYPE", "NAME")
            ):
                depth += 1
        elif word == "END":
            depth -= 1
            if depth <= 0:
                j = i + 1
                if j < n and toks[j].upper in _OPENERS | {"MODULE"}:
                    j += 1
                if j < n and toks[j].text == ";":
                    return j
                return j - 1
        i += 1
    return n - 1


def _qualified_calls(toks: list[Token]) -> frozenset[tuple[str, str]]:
    """The ``schema.routine(`` calls among ``toks``: each (schema, routine)."""
    found = set()
    for k in range(len(toks) - 1):
        if toks[k].kind != "word" or toks[k + 1].text != "(":
            continue
        parts = [toks[k].text]
        j = k - 1
        while j >= 1 and toks[j].text == "." and toks[j - 1].kind == "word":
            parts.insert(0, toks[j - 1].text)
            j -= 2
        if len(parts) > 1:
            found.add((".".join(parts[:-1]), parts[-1]))
    return frozenset(found)


def _unqualify(text: str, schema: str, name: str) -> str:
    """``text`` with the calls ``schema.name(`` written ``name(``."""
    dotted = r"\s*\.\s*".join(re.escape(part) for part in [*schema.split("."), name])
    return re.sub(rf"(?<![\w.]){dotted}(?=\s*\()", name, text)


def _calls(toks: list[Token]) -> frozenset[str]:
    return frozenset(
        toks[k].text for k in range(len(toks) - 1) if toks[k].kind == "word" and toks[k + 1].text == "("
    )


def split(text: str) -> tuple[str, list[str], list[Item]]:
    """The broker schema, the PATH schemas and the top-level items of an .esql file."""
    toks = tokens(text)
    schema = ""
    paths: list[str] = []
    items: list[Item] = []
    i = 0
    n = len(toks)
    while i < n:
        word = toks[i].upper
        start = i
        kind, name = "statement", ""
        if word == "BROKER" and i + 1 < n and toks[i + 1].upper == "SCHEMA":
            j = i + 2
            parts = []
            while j < n and toks[j].kind == "word" and toks[j].upper not in ("PATH", "CREATE", "DECLARE"):
                parts.append(toks[j].text)
                if j + 1 < n and toks[j + 1].text == ".":
                    j += 2
                else:
                    j += 1
                    break
            schema = ".".join(parts)
            end = j if j < n and toks[j].text == ";" else j - 1
            kind = "schema"
        elif word == "PATH":
            end = _statement_end(toks, i)
            paths.extend("".join(t.text for t in toks[i + 1 : end]).split(","))
            kind = "path"
        elif word == "CREATE" and i + 2 < n and toks[i + 2].upper == "MODULE":
            kind, name = "module", toks[i + 3].text if i + 3 < n else ""
            j = i + 3
            while j + 1 < n and not (toks[j].upper == "END" and toks[j + 1].upper == "MODULE"):
                j += 1
            end = j + 2 if j + 2 < n and toks[j + 2].text == ";" else j + 1
        elif word == "CREATE" and i + 1 < n and toks[i + 1].upper in ("FUNCTION", "PROCEDURE"):
            kind, name = "routine", toks[i + 2].text if i + 2 < n else ""
            j = i + 3
            depth = 0
            while j < n:  # past the parameter list
                if toks[j].text == "(":
                    depth += 1
                elif toks[j].text == ")":
                    depth -= 1
                    if depth == 0:
                        break
                j += 1
            k = j + 1
            while k < n and toks[k].text != ";" and toks[k].upper != "BEGIN":
                k += 1
            end = _block_end(toks, k) if k < n and toks[k].upper == "BEGIN" else min(k, n - 1)
        elif word == "DECLARE":
            kind, name = "declare", toks[i + 1].text if i + 1 < n else ""
            end = _statement_end(toks, i)
        else:
            end = _statement_end(toks, i)
        end = min(max(end, start), n - 1)  # an unterminated module or block ends with the file
        piece = toks[start : end + 1]
        stop = toks[end].start + len(toks[end].text)
        inner: frozenset[str] = frozenset()
        if kind == "module":
            inner = frozenset(
                piece[k + 2].text
                for k in range(len(piece) - 2)
                if piece[k].upper == "CREATE" and piece[k + 1].upper in ("FUNCTION", "PROCEDURE")
            )
        items.append(
            Item(
                kind,
                name,
                text[toks[start].start : stop],
                toks[start].line,
                _calls(piece),
                frozenset(t.text for t in piece if t.kind == "word"),
                inner,
                _qualified_calls(piece),
            )
        )
        i = end + 1
    return schema, [p.strip() for p in paths if p.strip()], items


@dataclass
class Resolution:
    """What the import found for one node's routine URI."""

    uri: str
    schema: str
    module: str
    esql: str | None = None
    source: str = ""
    uses: list[str] = field(default_factory=list)  # schema-level routines and declarations pulled in
    problem: str = ""


class EsqlIndex:
    """Every .esql file of the workspace, by broker schema."""

    def __init__(self) -> None:
        self.files: list[EsqlFile] = []
        self._modules: dict[tuple[str, str], tuple[EsqlFile, Item]] = {}
        self._schema_items: dict[tuple[str, str], tuple[EsqlFile, Item]] = {}

    def add(self, project: str, path: str, text: str) -> None:
        schema, paths, items = split(text)
        found = EsqlFile(project, path, schema, paths, items)
        self.files.append(found)
        for item in items:
            if item.kind == "module":
                self._modules.setdefault((schema, item.name), (found, item))
            elif item.kind in ("routine", "declare") and item.name:
                self._schema_items.setdefault((schema, item.name), (found, item))

    def resolve(self, uri: str) -> Resolution:
        match = ROUTINE_URI.match(uri.strip())
        if match is None:
            return Resolution(uri, "", "", problem=f"not an ESQL routine reference: {uri!r}")
        schema, module = match.group("schema"), match.group("module")
        result = Resolution(uri, schema, module)
        found = self._modules.get((schema, module))
        if found is None:
            where = f"broker schema {schema!r}" if schema else "the default broker schema"
            result.problem = f"module {module} not found in {where}"
            return result
        esql_file, item = found
        result.source = f"{esql_file.project}/{esql_file.path}:{item.line}"
        pulled: list[tuple[EsqlFile, Item]] = []
        seen: set[tuple[str, str]] = set()
        # each item's unqualified calls are looked up in its own file's schema, then that file's PATH
        pending = [(item, esql_file)]
        unqualified: set[tuple[str, str]] = set()
        while pending:
            current, current_file = pending.pop()
            schemas = [current_file.schema, *current_file.paths]
            for qualifier, name in sorted(current.qualified):
                hit = self._schema_items.get((qualifier, name))
                if hit is None or hit[1].kind != "routine":
                    continue
                unqualified.add((qualifier, name))
                if (qualifier, name) not in seen:
                    seen.add((qualifier, name))
                    pulled.append(hit)
                    pending.append((hit[1], hit[0]))
            wanted = (current.calls | current.words) - item.inner
            for name in sorted(wanted):
                for candidate in schemas:
                    hit = self._schema_items.get((candidate, name))
                    if hit is None or (candidate, name) in seen:
                        continue
                    if hit[1].kind == "routine" and name not in current.calls:
                        continue  # a routine is needed when called, a declaration when named
                    seen.add((candidate, name))
                    pulled.append(hit)
                    pending.append((hit[1], hit[0]))
                    break
        pulled.sort(key=lambda hit: (hit[1].kind != "declare", hit[0].path, hit[1].line))
        parts = [f"-- imported from {result.source}"]
        if schema:
            parts.append(f"BROKER SCHEMA {schema}")
        # one source holds them all: a routine called by its schema-qualified name is called by its
        # own name, unless two routines of that name come from different schemas
        names = [used.name for _, used in pulled if used.kind == "routine"] + sorted(item.inner)
        plain = [(q, n) for q, n in sorted(unqualified) if names.count(n) == 1]

        def rewrite(text: str) -> str:
            for qualifier, name in plain:
                text = _unqualify(text, qualifier, name)
            return text

        for source_file, used in pulled:
            label = f"{source_file.schema or '(default schema)'}.{used.name}"
            result.uses.append(label)
            parts.append(
                f"-- from {source_file.project}/{source_file.path}:{used.line}\n{rewrite(used.text)}"
            )
        parts.append(rewrite(item.text))
        result.esql = "\n\n".join(parts) + "\n"
        return result
