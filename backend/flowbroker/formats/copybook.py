"""COBOL copybook import: record layouts (levels, PIC, USAGE, OCCURS, REDEFINES) into message set types.

Follows IBM's COBOL importer and the Enterprise COBOL Language Reference: reference format
(sequence area, indicator area, areas A and B, identification area) or free format, comment and
continuation lines, COPY … REPLACING of members found beside the copybook, and the data
description clauses that shape a record. Items written to be included under a record (no level
01) are wrapped in one named after the file, with a warning.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NoReturn


class ImportFault(Exception):
    """A layout that cannot be imported, with where: ``FILE:LINE:COL: message``."""

    def __init__(self, message: str, line: int, column: int, source: str = "copybook") -> None:
        super().__init__(f"{source}:{line}:{column}: {message}")
        self.reason = message
        self.line = line
        self.column = column
        self.source = source


#: Finds the text of a COPY member by name (None when there is no such member).
Library = Callable[[str], "str | None"]


@dataclass
class _Token:
    text: str
    line: int
    column: int


@dataclass
class _Item:
    level: int
    name: str
    line: int
    column: int
    pic: str = ""
    usage: str = "DISPLAY"
    occurs: int = 1
    occurs_min: int = 1
    depending: str = ""
    redefines: str = ""
    sign: str = "trailing"
    justify: str = "left"
    sync: bool = False
    children: list[_Item] = field(default_factory=list)


_TOKEN = re.compile(
    r"==.*?=="  # COPY … REPLACING pseudo-text
    r"|[XNGZBU]?'(?:[^']|'')*'"  # literals, with doubled quotes inside and hex/national prefixes
    r"|[XNGZBU]?\"(?:[^\"]|\"\")*\""
    r"|[^\s]+",
    re.IGNORECASE,
)
_USAGES = {
    "COMP": "COMP",
    "COMPUTATIONAL": "COMP",
    "COMP-0": "COMP",
    "COMPUTATIONAL-0": "COMP",
    "BINARY": "COMP",
    "COMP-4": "COMP",
    "COMPUTATIONAL-4": "COMP",
    "COMP-5": "COMP-5",
    "COMPUTATIONAL-5": "COMP-5",
    "COMP-3": "COMP-3",
    "COMPUTATIONAL-3": "COMP-3",
    "PACKED-DECIMAL": "COMP-3",
    "COMP-1": "COMP-1",
    "COMPUTATIONAL-1": "COMP-1",
    "COMP-2": "COMP-2",
    "COMPUTATIONAL-2": "COMP-2",
    "DISPLAY": "DISPLAY",
    "POINTER": "POINTER",
    "PROCEDURE-POINTER": "PROCEDURE-POINTER",
    "FUNCTION-POINTER": "POINTER",
    "INDEX": "INDEX",
    "NATIONAL": "NATIONAL",
    "DISPLAY-1": "DISPLAY-1",
}
#: Bytes of the usages that take no PIC clause (Enterprise COBOL, 31-bit addressing).
_NO_PIC_SIZES = {"COMP-1": 4, "COMP-2": 8, "POINTER": 4, "PROCEDURE-POINTER": 8, "INDEX": 4}
#: Compiler-directing statements that may stand in a copybook without a period.
_DIRECTIVES = ("EJECT", "SKIP1", "SKIP2", "SKIP3", "TITLE")
_FREE_LEVEL = re.compile(r"^\s{0,5}\d{1,2}\s+(?!\d{1,2}\s)\S")  # not a short sequence number before a level


def _digits(text: str) -> bool:
    """Whether ``text`` is a COBOL integer: ASCII digits only (``str.isdigit`` also admits
    superscripts and other scripts' digits, which ``int`` refuses)."""
    return text.isascii() and text.isdigit()


def _is_free_format(lines: list[str]) -> bool:
    """Free format when a level number starts within columns 1-6, where reference format keeps sequence numbers."""
    return any(_FREE_LEVEL.match(line) for line in lines)


def _lines(text: str) -> list[tuple[int, int, str]]:
    """(line number, column of the first kept character, code) per line: comments, sequence and
    identification areas dropped, continuation lines joined to the line they continue."""
    text = text.split("\x1a", 1)[0]  # a DOS end-of-file byte ends the text
    raw_lines = [raw.expandtabs(4).rstrip() for raw in text.splitlines()]
    free = _is_free_format(raw_lines)
    out: list[tuple[int, int, str]] = []
    for number, line in enumerate(raw_lines, start=1):
        if not line.strip():
            continue
        if free:
            code, start = line, 1
            stripped = code.lstrip()
            if stripped.startswith("*"):
                continue
        else:
            if len(line) < 7:
                continue  # a sequence number alone
            indicator = line[6]
            if indicator in "*/Dd":
                continue  # comment, page eject, debugging line
            code, start = line[7:72], 8
            if indicator == "-" and out:
                out[-1] = (out[-1][0], out[-1][1], _continue(out[-1][2], code))
                continue
            if indicator not in " -":
                raise ImportFault(
                    f"'{indicator}' in the indicator area (column 7): reference format keeps column 7 for "
                    "space, '-', '*', '/' or 'D'; entries start in area A (column 8) or B (column 12)",
                    number,
                    7,
                )
        if "*>" in code:
            code = _before_inline_comment(code)
        if not code.strip():
            continue
        first = code.split(None, 1)[0].upper().rstrip(".")
        if first in _DIRECTIVES:
            continue
        out.append((number, start, code))
    return out


def _beyond_72(text: str, number: int) -> str:
    lines = text.split("\x1a", 1)[0].splitlines()
    line = lines[number - 1].expandtabs(4).rstrip() if 0 < number <= len(lines) else ""
    if len(line) > 72 and not _is_free_format([raw.expandtabs(4) for raw in lines]):
        return f" (columns 73-80 are the identification area: '{line[72:80]}' on line {number} is ignored)"
    return ""


def _continue(previous: str, code: str) -> str:
    """A continuation line added to the line it continues (Reference format: continuation lines)."""
    rest = code.lstrip()
    if rest[:1] in ("'", '"') and _open_literal(previous):
        # the continued literal runs to column 72 of the line before, spaces included
        return previous.ljust(65) + rest[1:]
    return previous.rstrip() + rest


def _open_literal(code: str) -> bool:
    quote = ""
    for ch in code:
        if quote:
            if ch == quote:
                quote = ""
        elif ch in ("'", '"'):
            quote = ch
    return bool(quote)


def _before_inline_comment(code: str) -> str:
    quote = ""
    for index, ch in enumerate(code):
        if quote:
            if ch == quote:
                quote = ""
        elif ch in ("'", '"'):
            quote = ch
        elif code.startswith("*>", index):
            return code[:index]
    return code


def _tokens(text: str, replacing: list[tuple[str, str, str]]) -> list[_Token]:
    tokens = []
    for number, start, code in _lines(text):
        for mode, old, new in replacing:
            code = _replace(code, mode, old, new)
        for match in _TOKEN.finditer(code):
            tokens.append(_Token(match.group(0), number, start + match.start()))
    return tokens


def _statements(
    text: str, library: Library | None, depth: int = 0, replacing: list[tuple[str, str, str]] | None = None
) -> list[list[_Token]]:
    statements: list[list[_Token]] = []
    current: list[_Token] = []
    for tok in _tokens(text, replacing or []):
        word = tok.text
        quoted = word[:1] in ("'", '"') or word[1:2] in ("'", '"') or word.startswith("==")
        ends = word.endswith(("'.", '".', "==.")) if quoted else word.endswith(".")
        if ends:
            word = word[:-1]
        if word:
            current.append(_Token(word, tok.line, tok.column))
        if ends and current:
            if current[0].text.upper() == "COPY":
                statements.extend(_copy(current, library, depth))
            else:
                statements.append(current)
            current = []
    if current:
        if not _digits(current[0].text):
            _not_data(current[0])
        last = current[-1]
        raise ImportFault(
            "the last entry has no terminating period" + _beyond_72(text, last.line), last.line, last.column
        )
    return statements


def _copy(tokens: list[_Token], library: Library | None, depth: int) -> list[list[_Token]]:
    """The entries of a COPY statement's member, after its REPLACING phrase (COPY statement)."""
    first = tokens[0]
    if len(tokens) < 2:
        raise ImportFault("COPY needs a member name", first.line, first.column)
    member = tokens[1].text.strip("'\"")
    i = 2
    if i + 1 < len(tokens) and tokens[i].text.upper() in ("OF", "IN"):
        i += 2  # the library name: members are looked up beside the copybook
    if i < len(tokens) and tokens[i].text.upper() == "SUPPRESS":
        i += 1
    pairs: list[tuple[str, str, str]] = []
    if i < len(tokens):
        if tokens[i].text.upper() != "REPLACING":
            raise ImportFault(f"unexpected word '{tokens[i].text}' in COPY", tokens[i].line, tokens[i].column)
        i += 1
        while i < len(tokens):
            mode = ""
            if tokens[i].text.upper() in ("LEADING", "TRAILING"):
                mode = tokens[i].text.upper()
                i += 1
            if i + 2 >= len(tokens) or tokens[i + 1].text.upper() != "BY":
                where = tokens[min(i, len(tokens) - 1)]
                raise ImportFault("REPLACING needs 'operand BY operand'", where.line, where.column)
            pairs.append((mode, tokens[i].text, tokens[i + 2].text))
            i += 3
    if depth >= 8:
        raise ImportFault(f"COPY {member} nests more than 8 members deep", first.line, first.column)
    text = library(member) if library is not None else None
    if text is None:
        raise ImportFault(
            f"COPY member '{member}' not found beside the copybook", tokens[1].line, tokens[1].column
        )
    try:
        return _statements(text, library, depth + 1, pairs)
    except ImportFault as fault:
        raise ImportFault(
            f"in COPY member '{member}' line {fault.line}: {fault.reason}", first.line, first.column
        ) from None


def _replace(text: str, mode: str, old: str, new: str) -> str:
    """``text`` with ``old`` replaced by ``new``: whole text words, a ``:TAG:`` wherever it stands, or
    with LEADING/TRAILING the start or end of words (COPY statement, REPLACING phrase)."""
    if old.startswith("==") and old.endswith("=="):
        old = old[2:-2].strip()
    if new.startswith("==") and new.endswith("=="):
        new = new[2:-2].strip()
    if not old:
        return text
    if mode == "LEADING":
        pattern = rf"(?<![A-Za-z0-9-]){re.escape(old)}(?=[A-Za-z0-9-])"
    elif mode == "TRAILING":
        pattern = rf"(?<=[A-Za-z0-9-]){re.escape(old)}(?![A-Za-z0-9-])"
    elif old.startswith(":") or not re.fullmatch(r"[A-Za-z0-9-]+", old):
        # a tag such as :TAG: is replaced wherever it stands, part of a word or not
        pattern = re.escape(old)
    else:
        pattern = rf"(?<![A-Za-z0-9-]){re.escape(old)}(?![A-Za-z0-9-])"
    return re.sub(pattern, lambda _m: new, text, flags=re.IGNORECASE)


Notes = list[tuple[int, int, str]]


def _not_data(first: _Token) -> NoReturn:
    if first.text.startswith("*"):
        raise ImportFault(
            f"'{first.text}' in column {first.column}: a comment line has its '*' in column 7, the indicator area",
            first.line,
            first.column,
        )
    raise ImportFault(
        f"expected a level number, found '{first.text}': a copybook holds data description entries "
        "only (other COBOL needs a wrapping program)",
        first.line,
        first.column,
    )


def _parse_item(tokens: list[_Token], notes: Notes) -> _Item | None:
    first = tokens[0]
    if not _digits(first.text):
        _not_data(first)
    level = int(first.text)
    if level == 88:
        return None
    if level == 66:
        name = tokens[1].text if len(tokens) > 1 else ""
        notes.append(
            (first.line, first.column, f"level-66 RENAMES '{name}' adds no storage and is not imported")
        )
        return None
    if level == 77:
        level = 1
    if not 1 <= level <= 49:
        raise ImportFault(f"level {level} is not 01-49, 66, 77 or 88", first.line, first.column)
    rest = tokens[1:]
    name = "FILLER"
    if rest and rest[0].text.upper() not in _CLAUSE_WORDS:
        name = rest[0].text
        rest = rest[1:]
    item = _Item(level, name, first.line, first.column)
    i = 0
    while i < len(rest):
        tok = rest[i]
        word = tok.text.upper()
        nxt = rest[i + 1].text.upper() if i + 1 < len(rest) else ""
        if word in ("PIC", "PICTURE"):
            i += 2 if nxt == "IS" else 1
            if i >= len(rest):
                raise ImportFault("PIC needs a picture string", tok.line, tok.column)
            item.pic = rest[i].text.upper()
            i += 1
        elif word == "USAGE":
            i += 2 if nxt == "IS" else 1
        elif word in _USAGES:
            item.usage = _USAGES[word]
            if word in ("COMP-0", "COMPUTATIONAL-0"):
                # Not an Enterprise COBOL usage (IBM's importer knows BINARY, COMP, COMP-4 and COMP-5);
                # other compilers' copybooks use it for big-endian binary, as COMP.
                notes.append(
                    (
                        tok.line,
                        tok.column,
                        f"USAGE {word} is not an Enterprise COBOL usage: '{item.name}' is read as binary, like COMP",
                    )
                )
            i += 1
        elif word == "OCCURS":
            i = _occurs(item, rest, i + 1, tok)
        elif word == "REDEFINES":
            if i + 1 >= len(rest):
                raise ImportFault("REDEFINES needs a data name", tok.line, tok.column)
            item.redefines = rest[i + 1].text
            i += 2
        elif word in ("SIGN", "LEADING", "TRAILING"):
            if word == "SIGN":
                i += 2 if nxt == "IS" else 1
            where = rest[i].text.upper() if i < len(rest) else ""
            if where not in ("LEADING", "TRAILING"):
                raise ImportFault("SIGN needs LEADING or TRAILING", tok.line, tok.column)
            item.sign = where.lower()
            i += 1
            if i < len(rest) and rest[i].text.upper() == "SEPARATE":
                item.sign += "_separate"
                i += 1
                if i < len(rest) and rest[i].text.upper() == "CHARACTER":
                    i += 1
        elif word in ("JUST", "JUSTIFIED"):
            item.justify = "right"
            i += 2 if nxt == "RIGHT" else 1
        elif word in ("SYNC", "SYNCHRONIZED"):
            item.sync = True
            i += 2 if nxt in ("LEFT", "RIGHT") else 1
        elif word in ("VALUE", "VALUES"):
            # Initial values do not change the layout: skip the literal(s).
            i += 1
            while i < len(rest) and rest[i].text.upper() not in _CLAUSE_WORDS - {"IS", "ARE", "ALL"}:
                i += 1
        elif word == "BLANK":
            i += 1
            if i < len(rest) and rest[i].text.upper() == "WHEN":
                i += 1
            if i >= len(rest) or rest[i].text.upper() not in ("ZERO", "ZEROS", "ZEROES"):
                raise ImportFault("BLANK WHEN needs ZERO", tok.line, tok.column)
            i += 1
        elif word in ("GLOBAL", "EXTERNAL", "IS", "VOLATILE"):
            i += 1
        elif _digits(tok.text) and (1 <= int(tok.text) <= 49 or int(tok.text) in (66, 77, 88)):
            raise ImportFault(
                f"level {tok.text} starts a new entry, but the entry before it has no terminating period",
                tok.line,
                tok.column,
            )
        else:
            raise ImportFault(f"unexpected word '{tok.text}'", tok.line, tok.column)
    return item


_CLAUSE_WORDS = frozenset(
    {"PIC", "PICTURE", "USAGE", "OCCURS", "REDEFINES", "SIGN", "VALUE", "VALUES", "JUST", "JUSTIFIED", "SYNC"}
    | {"SYNCHRONIZED", "BLANK", "IS", "ARE", "ALL", "GLOBAL", "EXTERNAL", "LEADING", "TRAILING", "VOLATILE"}
    | set(_USAGES)
)


def _occurs(item: _Item, rest: list[_Token], i: int, tok: _Token) -> int:
    if i >= len(rest) or not _digits(rest[i].text):
        raise ImportFault("OCCURS needs a count", tok.line, tok.column)
    low = int(rest[i].text)
    i += 1
    high = low
    if i < len(rest) and rest[i].text.upper() == "TO":
        if i + 1 >= len(rest) or not _digits(rest[i + 1].text):
            raise ImportFault("OCCURS … TO needs a maximum", rest[i].line, rest[i].column)
        high = int(rest[i + 1].text)
        i += 2
    if i < len(rest) and rest[i].text.upper() == "TIMES":
        i += 1
    if i < len(rest) and rest[i].text.upper() == "DEPENDING":
        i += 1
        if i < len(rest) and rest[i].text.upper() == "ON":
            i += 1
        if i >= len(rest):
            raise ImportFault("DEPENDING ON needs a data name", tok.line, tok.column)
        item.depending = rest[i].text
        i += 1
        while i + 1 < len(rest) and rest[i].text.upper() in ("OF", "IN"):
            i += 2  # a qualified name: the nearest field of that name is used
    elif high != low:
        raise ImportFault("OCCURS n TO m needs DEPENDING ON", tok.line, tok.column)
    while i < len(rest) and rest[i].text.upper() in ("ASCENDING", "DESCENDING", "INDEXED"):
        i += 1
        while i < len(rest) and rest[i].text.upper() not in _CLAUSE_WORDS | {
            "ASCENDING",
            "DESCENDING",
            "INDEXED",
        }:
            i += 1
    if high < 1 or low > high:
        raise ImportFault(f"OCCURS {low} TO {high} is not a valid range", tok.line, tok.column)
    item.occurs, item.occurs_min = high, low
    return i


_PIC_REPEAT = re.compile(r"([A-Z0-9$*+\-,./])\((\d+)\)")


def _expand(pic: str) -> str:
    return _PIC_REPEAT.sub(lambda m: m.group(1) * int(m.group(2)), pic)


#: The coded character set of COBOL national data (UTF-16 big-endian).
NATIONAL_CCSID = 1200
#: Enterprise COBOL's limits on digit positions (PICTURE clause; USAGE clause, BINARY).
MAX_DIGITS = 31
MAX_BINARY_DIGITS = 18


def _elementary(item: _Item) -> dict[str, Any]:
    name: dict[str, Any] = {} if item.name.upper() == "FILLER" else {"name": item.name}
    if item.usage in _NO_PIC_SIZES:
        if item.pic:
            raise ImportFault(f"USAGE {item.usage} takes no PIC clause", item.line, item.column)
        size = _NO_PIC_SIZES[item.usage]
        if item.usage in ("COMP-1", "COMP-2"):
            out = {**name, "type": "float", "cwf": {"repr": "float", "length": size, "byteOrder": "big"}}
        else:
            # an address or index: its bytes, unchanged
            out = {**name, "type": "binary", "cwf": {"repr": "bytes", "length": size}}
        return _filler(out) if not name else out
    if not item.pic:
        raise ImportFault(f"elementary item '{item.name}' has no PIC clause", item.line, item.column)
    pic = _expand(item.pic)
    if "(" in pic or ")" in pic:
        raise ImportFault(f"PIC {item.pic} has an unbalanced repetition", item.line, item.column)
    if set(pic) == {"G"} or (set(pic) == {"N"} and item.usage == "DISPLAY-1"):
        raise ImportFault(
            f"'{item.name}' PIC {item.pic} is a DBCS item (USAGE DISPLAY-1): its bytes are in a DBCS code page such as "
            "930 or 939, which has no codec here",
            item.line,
            item.column,
        )
    if set(pic) == {"N"}:
        # COBOL importer: PIC N(n) is a fixed-length string of n characters. Enterprise COBOL holds a
        # national item (USAGE NATIONAL, implied by PIC N under the default NSYMBOL(NATIONAL)) in
        # UTF-16, two bytes a character, whatever the message's code page.
        out = {
            **name,
            "type": "string",
            "cwf": {"repr": "string", "length": 2 * len(pic), "ccsid": NATIONAL_CCSID},
        }
        if item.justify == "right":
            out["cwf"]["justify"] = "right"
        return _filler(out) if not name else out
    if item.usage in ("NATIONAL", "DISPLAY-1"):
        raise ImportFault(
            f"'{item.name}' USAGE {item.usage} with PIC {item.pic}: only PIC N items are imported as national text",
            item.line,
            item.column,
        )
    if set(pic) <= set("XA9") and ("X" in pic or "A" in pic):
        out = {**name, "type": "string", "cwf": {"repr": "string", "length": len(pic)}}
        if item.justify == "right":
            out["cwf"]["justify"] = "right"
        return _filler(out) if not name else out
    if not set(pic) <= set("S9VP"):
        # Edited pictures (Z, ., $, CR, B, / …) are display text of the picture's width; V and P take none.
        width = len(pic) - pic.count("V") - pic.count("P")
        numeric = not ("X" in pic or "A" in pic)
        out = {**name, "type": "string", "cwf": {"repr": "string", "length": width}}
        if numeric or item.justify == "right":
            out["cwf"]["justify"] = "right"
        return _filler(out) if not name else out
    signed = pic.startswith("S")
    body = pic[1:] if signed else pic
    if "S" in body or body.count("V") > 1:
        raise ImportFault(f"PIC {item.pic} is not a valid numeric picture", item.line, item.column)
    if "P" in body:
        # PICTURE clause, symbol P: positions the point without being stored
        if re.fullmatch(r"V?P+9+", body):
            digits = body.count("9")
            scale = digits + body.count("P")
        elif re.fullmatch(r"9+P+V?", body):
            raise ImportFault(
                f"PIC {item.pic}: scaling positions P right of the digits (a value in units of "
                f"10^{body.count('P')}) have no form in the message model",
                item.line,
                item.column,
            )
        else:
            raise ImportFault(
                f"PIC {item.pic}: P belongs at the left or the right end of the digits",
                item.line,
                item.column,
            )
    else:
        whole, _, frac = body.partition("V")
        digits, scale = len(whole) + len(frac), len(frac)
    if digits == 0:
        raise ImportFault(f"PIC {item.pic} has no digit positions", item.line, item.column)
    if digits > MAX_DIGITS:
        raise ImportFault(
            f"PIC {item.pic} has {digits} digits: Enterprise COBOL allows 1 to {MAX_DIGITS} digit positions "
            "in a numeric item (ARITH(EXTEND))",
            item.line,
            item.column,
        )
    kind = "decimal" if scale else "integer"
    cwf: dict[str, Any]
    if item.usage in ("COMP", "COMP-5"):
        if digits > MAX_BINARY_DIGITS:
            raise ImportFault(
                f"binary PIC {item.pic} has {digits} digits: BINARY, COMP, COMP-4 and COMP-5 items hold "
                f"at most {MAX_BINARY_DIGITS}",
                item.line,
                item.column,
            )
        size = 2 if digits <= 4 else 4 if digits <= 9 else 8
        cwf = {"repr": "binary", "length": size, "signed": signed, "byteOrder": "big"}
    elif item.usage == "COMP-3":
        cwf = {"repr": "packed", "length": digits // 2 + 1, "signed": signed}
    else:
        sign = item.sign if signed else "none"
        cwf = {
            "repr": "display",
            "length": digits + (1 if sign.endswith("separate") else 0),
            "signed": signed,
        }
        if signed:
            cwf["sign"] = sign
    out = {**name, "type": kind, "cwf": cwf}
    if scale:
        out["scale"] = scale
    return _filler(out) if not name else out


def _alignment(item: _Item) -> int:
    """The boundary SYNCHRONIZED aligns an elementary item on (SYNCHRONIZED clause): halfword for
    binary items of 1-4 digits, fullword for 5-18 digits, COMP-1, POINTER and INDEX items,
    doubleword for COMP-2; other usages are not moved."""
    if item.usage in ("COMP", "COMP-5"):
        return 2 if _expand(item.pic).count("9") <= 4 else 4
    return {"COMP-1": 4, "COMP-2": 8, "POINTER": 4, "PROCEDURE-POINTER": 4, "INDEX": 4}.get(item.usage, 1)


def _filler(element: dict[str, Any]) -> dict[str, Any]:
    cwf = {
        "repr": element["cwf"]["repr"] if element["cwf"]["repr"] == "string" else "bytes",
        "length": _size(element),
    }
    if "ccsid" in element["cwf"]:
        cwf["ccsid"] = element["cwf"]["ccsid"]
    return {"type": "filler", "cwf": cwf}


def _size(element: dict[str, Any]) -> int:
    return int(element["cwf"]["length"])


class _Builder:
    def __init__(self, notes: Notes) -> None:
        self.types: dict[str, dict[str, Any]] = {}
        self.notes = notes

    def type_name(self, wanted: str) -> str:
        name, n = wanted, 1
        while name in self.types:
            n += 1
            name = f"{wanted}_{n}"
        return name

    def group(self, item: _Item, type_name: str, offset: int | None = 0, sync: bool = False) -> str:
        """The type of group ``item``; ``offset`` is where it starts in the record (None when that
        varies, as within a table), ``sync`` whether a level-01 SYNCHRONIZED covers it."""
        name = self.type_name(type_name)
        self.types[name] = {"elements": []}
        elements: list[dict[str, Any]] = []
        seen: dict[str, int] = {}
        starts: dict[str, int | None] = {}
        sync = sync or item.sync
        for child in item.children:
            at = starts.get(child.redefines.upper()) if child.redefines else offset
            align = _alignment(child) if (child.sync or sync) and not child.children else 1
            if align > 1:
                slack = -at % align if at is not None else 0
                if at is None or (slack and child.redefines):
                    self.notes.append(
                        (
                            child.line,
                            child.column,
                            f"SYNCHRONIZED '{child.name}': its offset is not fixed here, so no slack bytes are "
                            "added before it; the layout matches the program's only where it falls on its boundary",
                        )
                    )
                elif slack:
                    # Enterprise COBOL puts slack bytes before a synchronized item to align it
                    elements.append({"type": "filler", "cwf": {"repr": "bytes", "length": slack}})
                    at += slack
                    offset = at
            fixed = at if child.occurs == 1 and not child.depending else None
            element = self.element(child, fixed, sync)
            size = self._element_size(element)
            if child.redefines:
                self._redefine(elements, element, child)
                continue
            starts[child.name.upper()] = at
            offset = at + size if at is not None and size is not None else None
            if "name" in element:
                wanted = element["name"]
                count = seen.get(wanted.upper(), 0) + 1
                seen[wanted.upper()] = count
                if count > 1:
                    # FILLER groups, and any name used twice in a group, are numbered to stay addressable
                    element["name"] = f"{wanted}_{count}"
                    if wanted.upper() != "FILLER":
                        self.notes.append(
                            (
                                child.line,
                                child.column,
                                f"'{wanted}' is used twice in '{item.name}': named '{element['name']}'",
                            )
                        )
            elements.append(element)
        self.types[name]["elements"] = elements
        return name

    def element(self, item: _Item, offset: int | None = None, sync: bool = False) -> dict[str, Any]:
        if item.children:
            if item.pic:
                raise ImportFault(f"group item '{item.name}' has a PIC clause", item.line, item.column)
            tname = self.group(item, item.name if item.name.upper() != "FILLER" else "FILLER", offset, sync)
            element: dict[str, Any] = {"name": item.name, "type": tname}
        else:
            element = _elementary(item)
        if item.depending:
            element["occurs"] = {"dependsOn": item.depending, "min": item.occurs_min, "max": item.occurs}
        elif item.occurs != 1:
            if element.get("type") == "filler":
                element["cwf"]["length"] *= item.occurs
            else:
                element["occurs"] = item.occurs
        return element

    def _element_size(self, element: dict[str, Any]) -> int | None:
        occurs = element.get("occurs", 1)
        if not isinstance(occurs, int):
            return None
        if "choice" in element:
            sizes = [self._element_size(alt) for alt in element["choice"]]
            return None if any(size is None for size in sizes) else max(s or 0 for s in sizes) * occurs
        if element["type"] in self.types:
            total = 0
            for inner in self.types[element["type"]]["elements"]:
                size = self._element_size(inner)
                if size is None:
                    return None
                total += size
            return total * occurs
        return int(element["cwf"]["length"]) * occurs

    def _redefine(self, elements: list[dict[str, Any]], element: dict[str, Any], item: _Item) -> None:
        for index in range(len(elements) - 1, -1, -1):
            target = elements[index]
            names = [str(alt.get("name", "")).upper() for alt in target.get("choice", [target])]
            if item.redefines.upper() in names:
                if "name" not in element:
                    return  # an elementary FILLER over the same bytes adds nothing to read or write
                if "choice" not in target:
                    elements[index] = {"name": f"{target['name']}_alternatives", "choice": [target]}
                elements[index]["choice"].append(element)
                return
        raise ImportFault(
            f"'{item.name}' REDEFINES '{item.redefines}', which is not an earlier item at the same level",
            item.line,
            item.column,
        )


def import_copybook(
    text: str, type_name: str | None = None, source: str = "copybook", library: Library | None = None
) -> dict[str, Any]:
    """Import the records of a copybook: ``{"message": name, "types": {…}, "warnings": […]}``.

    ``library`` finds the members named by COPY statements; ``warnings`` are
    ``{"line", "column", "message"}`` for what was imported other than as written.
    """
    notes: Notes = []
    try:
        items = [
            item for item in (_parse_item(tokens, notes) for tokens in _statements(text, library)) if item
        ]
        if not items:
            raise ImportFault("no data description entries found", 1, 1)
        _note_tags(items, notes)
        if items[0].level != 1:
            first = items[0]
            wrapper_name = type_name or _record_name(source)
            notes.append(
                (
                    first.line,
                    first.column,
                    f"no level-01 record: the level-{first.level:02d} items are wrapped in record "
                    f"'{wrapper_name}', named after the file, as when the copybook is included under a record",
                )
            )
            items.insert(0, _Item(0, wrapper_name, first.line, first.column))
        _check_depending(items)
        records = _nest(items)
        builder = _Builder(notes)
        names = []
        for record in records:
            if not record.children:
                wrapper = _Item(1, record.name, record.line, record.column, children=[record])
                names.append(builder.group(wrapper, record.name))
            else:
                wanted = type_name if type_name and len(records) == 1 else record.name
                names.append(builder.group(record, wanted))
    except ImportFault as fault:
        if fault.source != source:
            raise ImportFault(fault.reason, fault.line, fault.column, source) from None
        raise
    message = type_name or names[0]
    if message not in builder.types:
        raise ImportFault(f"no record named '{message}' (records: {', '.join(names)})", 1, 1, source)
    warnings = [{"line": line, "column": column, "message": message} for line, column, message in notes]
    return {"message": message, "types": builder.types, "warnings": warnings}


def _check_depending(items: list[_Item]) -> None:
    """OCCURS DEPENDING ON names an earlier item of the same record (OCCURS clause); the name is
    spelt as that item spells it, since COBOL names are not case-sensitive and message trees are."""
    seen: dict[str, str] = {}
    for item in items:
        if item.level <= 1:
            seen = {}
        if item.depending:
            found = seen.get(item.depending.upper())
            if found is None:
                raise ImportFault(
                    f"OCCURS … DEPENDING ON '{item.depending}': no earlier item of this record has that name "
                    "(the count must precede the table in the record)",
                    item.line,
                    item.column,
                )
            item.depending = found
        seen[item.name.upper()] = item.name


_TAG = re.compile(r":[A-Za-z0-9-]+:")


def _note_tags(items: list[_Item], notes: Notes) -> None:
    """Names holding a COPY REPLACING tag (``:TAG:``) that nothing replaced are imported as written."""
    seen: set[str] = set()
    for item in items:
        for tag in _TAG.findall(item.name):
            if tag.upper() not in seen:
                seen.add(tag.upper())
                notes.append(
                    (
                        item.line,
                        item.column,
                        f"'{tag}' is a COPY REPLACING tag that nothing replaced: names keep it "
                        f"(include the copybook with COPY … REPLACING =={tag}== BY ==…== to replace it)",
                    )
                )


def _record_name(source: str) -> str:
    stem = Path(source).stem if source and not source.startswith("<") else ""
    name = re.sub(r"[^A-Za-z0-9-]+", "-", stem).strip("-").upper()
    return name or "RECORD"


def source_text(data: bytes) -> str:
    """A layout file's text: UTF-8, else Latin-1 (copybooks moved off the host in a PC code page
    keep their accented comments and literals, and COBOL words are ASCII either way)."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return data.decode("latin-1")


def library_beside(path: str | Path) -> Library:
    """COPY members looked up in the copybook's directory: NAME, then NAME with a copybook extension."""
    folder = Path(path).parent

    def find(member: str) -> str | None:
        for suffix in ("", ".cpy", ".CPY", ".cbl", ".cob", ".copy", ".txt"):
            candidate = folder / f"{member}{suffix}"
            if candidate.is_file():
                return source_text(candidate.read_bytes())
        return None

    return find


def _nest(items: list[_Item]) -> list[_Item]:
    records: list[_Item] = []
    stack: list[_Item] = []
    for item in items:
        if item.level == 1:
            stack.clear()  # a new record, after any wrapped items
        while stack and stack[-1].level >= item.level:
            stack.pop()
        if not stack:
            if item.level > 1 and records:
                raise ImportFault(
                    f"level {item.level:02d} item '{item.name}' is outside any record", item.line, item.column
                )
            records.append(item)
        else:
            parent = stack[-1]
            if parent.pic:
                raise ImportFault(
                    f"'{item.name}' is under '{parent.name}', which has a PIC clause", item.line, item.column
                )
            parent.children.append(item)
        stack.append(item)
    return records
