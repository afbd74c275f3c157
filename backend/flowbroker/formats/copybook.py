"""COBOL copybook import: record layouts (levels, PIC, USAGE, OCCURS, REDEFINES) into message set types."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any


class ImportFault(Exception):
    """A layout that cannot be imported, with where: ``FILE:LINE:COL: message``."""

    def __init__(self, message: str, line: int, column: int, source: str = "copybook") -> None:
        super().__init__(f"{source}:{line}:{column}: {message}")
        self.reason = message
        self.line = line
        self.column = column
        self.source = source


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
    children: list[_Item] = field(default_factory=list)


_TOKEN = re.compile(r"'[^']*'|\"[^\"]*\"|[^\s]+")
_USAGES = {
    "COMP": "COMP",
    "COMPUTATIONAL": "COMP",
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
}


def _lines(text: str) -> list[tuple[int, int, str]]:
    """(line number, column of the first kept character, code) per line, comments and sequence areas dropped."""
    out = []
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.expandtabs(4).rstrip()
        if not line.strip():
            continue
        head = line[:6]
        if len(line) >= 7 and (head.isdigit() or not head.strip() or head.strip().isdigit()):
            indicator = line[6]
            if indicator in "*/":
                continue
            code, start = line[7:72], 8
        else:
            code, start = line, 1
        stripped = code.lstrip()
        if stripped.startswith("*>") or stripped.startswith("*"):
            continue
        if "*>" in code:
            code = code[: code.index("*>")]
        out.append((number, start, code))
    return out


def _statements(text: str) -> list[list[_Token]]:
    statements: list[list[_Token]] = []
    current: list[_Token] = []
    for number, start, code in _lines(text):
        for match in _TOKEN.finditer(code):
            word = match.group(0)
            column = start + match.start()
            quoted = word.startswith(("'", '"'))
            ends = word.endswith(("'.", '".')) if quoted else word.endswith(".")
            if ends:
                word = word[:-1]
            if word:
                current.append(_Token(word, number, column))
            if ends:
                if current:
                    statements.append(current)
                current = []
    if current:
        last = current[-1]
        raise ImportFault("the last entry has no terminating period", last.line, last.column)
    return statements


def _parse_item(tokens: list[_Token]) -> _Item | None:
    first = tokens[0]
    if not first.text.isdigit():
        raise ImportFault(f"expected a level number, found '{first.text}'", first.line, first.column)
    level = int(first.text)
    if level in (88, 66):
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
            i += 1
        elif word == "OCCURS":
            i = _occurs(item, rest, i + 1, tok)
        elif word == "REDEFINES":
            if i + 1 >= len(rest):
                raise ImportFault("REDEFINES needs a data name", tok.line, tok.column)
            item.redefines = rest[i + 1].text
            i += 2
        elif word == "SIGN":
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
        elif word in ("VALUE", "VALUES"):
            # Initial values do not change the layout: skip the literal(s).
            i += 1
            while i < len(rest) and rest[i].text.upper() not in _CLAUSE_WORDS - {"IS", "ARE", "ALL"}:
                i += 1
        elif word in (
            "SYNC",
            "SYNCHRONIZED",
            "LEFT",
            "RIGHT",
            "GLOBAL",
            "EXTERNAL",
            "IS",
            "BLANK",
            "WHEN",
            "ZERO",
        ):
            i += 1
        else:
            raise ImportFault(f"unexpected word '{tok.text}'", tok.line, tok.column)
    return item


_CLAUSE_WORDS = frozenset(
    {"PIC", "PICTURE", "USAGE", "OCCURS", "REDEFINES", "SIGN", "VALUE", "VALUES", "JUST", "JUSTIFIED", "SYNC"}
    | {"SYNCHRONIZED", "BLANK", "IS", "ARE", "ALL", "GLOBAL", "EXTERNAL"}
    | set(_USAGES)
)


def _occurs(item: _Item, rest: list[_Token], i: int, tok: _Token) -> int:
    if i >= len(rest) or not rest[i].text.isdigit():
        raise ImportFault("OCCURS needs a count", tok.line, tok.column)
    low = int(rest[i].text)
    i += 1
    high = low
    if i < len(rest) and rest[i].text.upper() == "TO":
        if i + 1 >= len(rest) or not rest[i + 1].text.isdigit():
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
    elif high != low:
        raise ImportFault("OCCURS n TO m needs DEPENDING ON", tok.line, tok.column)
    while i < len(rest) and rest[i].text.upper() in ("ASCENDING", "DESCENDING", "INDEXED"):
        i += 1
        while i < len(rest) and rest[i].text.upper() not in _CLAUSE_WORDS:
            i += 1
    if high < 1 or low > high:
        raise ImportFault(f"OCCURS {low} TO {high} is not a valid range", tok.line, tok.column)
    item.occurs, item.occurs_min = high, low
    return i


_PIC_REPEAT = re.compile(r"([A-Z0-9$*+\-,./])\((\d+)\)")


def _expand(pic: str) -> str:
    return _PIC_REPEAT.sub(lambda m: m.group(1) * int(m.group(2)), pic)


def _elementary(item: _Item) -> dict[str, Any]:
    name: dict[str, Any] = {} if item.name.upper() == "FILLER" else {"name": item.name}
    if item.usage in ("COMP-1", "COMP-2"):
        if item.pic:
            raise ImportFault(f"{item.usage} takes no PIC clause", item.line, item.column)
        size = 4 if item.usage == "COMP-1" else 8
        out = {**name, "type": "float", "cwf": {"repr": "float", "length": size, "byteOrder": "big"}}
        return _filler(out) if not name else out
    if not item.pic:
        raise ImportFault(f"elementary item '{item.name}' has no PIC clause", item.line, item.column)
    pic = _expand(item.pic)
    if set(pic) <= set("XA9") and ("X" in pic or "A" in pic):
        out = {**name, "type": "string", "cwf": {"repr": "string", "length": len(pic)}}
        if item.justify == "right":
            out["cwf"]["justify"] = "right"
        return _filler(out) if not name else out
    if not set(pic) <= set("S9VP"):
        # Numeric-edited pictures (Z, ., $, CR …) are display text of the picture's width.
        width = len(pic) + (1 if "CR" in pic or "DB" in pic else 0) - (pic.count("CR") + pic.count("DB"))
        out = {**name, "type": "string", "cwf": {"repr": "string", "length": width, "justify": "right"}}
        return _filler(out) if not name else out
    if "P" in pic:
        raise ImportFault("scaling position P in a PIC is not supported", item.line, item.column)
    signed = pic.startswith("S")
    body = pic.lstrip("S")
    whole, _, frac = body.partition("V")
    digits, scale = len(whole) + len(frac), len(frac)
    if digits == 0 or digits > 31:
        raise ImportFault(f"PIC {item.pic} has {digits} digits (1 to 31 allowed)", item.line, item.column)
    kind = "decimal" if scale else "integer"
    cwf: dict[str, Any]
    if item.usage in ("COMP", "COMP-5"):
        if digits > 18:
            raise ImportFault(f"binary PIC {item.pic} has more than 18 digits", item.line, item.column)
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


def _filler(element: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "filler",
        "cwf": {
            "repr": element["cwf"]["repr"] if element["cwf"]["repr"] == "string" else "bytes",
            "length": _size(element),
        },
    }


def _size(element: dict[str, Any]) -> int:
    return int(element["cwf"]["length"])


class _Builder:
    def __init__(self) -> None:
        self.types: dict[str, dict[str, Any]] = {}

    def type_name(self, wanted: str) -> str:
        name, n = wanted, 1
        while name in self.types:
            n += 1
            name = f"{wanted}_{n}"
        return name

    def group(self, item: _Item, type_name: str) -> str:
        name = self.type_name(type_name)
        self.types[name] = {"elements": []}
        elements: list[dict[str, Any]] = []
        for child in item.children:
            element = self.element(child)
            if child.redefines:
                self._redefine(elements, element, child)
            else:
                elements.append(element)
        self.types[name]["elements"] = elements
        return name

    def element(self, item: _Item) -> dict[str, Any]:
        if item.children:
            if item.pic:
                raise ImportFault(f"group item '{item.name}' has a PIC clause", item.line, item.column)
            tname = self.group(item, item.name if item.name.upper() != "FILLER" else "Filler")
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

    def _redefine(self, elements: list[dict[str, Any]], element: dict[str, Any], item: _Item) -> None:
        for index in range(len(elements) - 1, -1, -1):
            target = elements[index]
            names = [alt.get("name") for alt in target.get("choice", [target])]
            if item.redefines in names:
                if "choice" not in target:
                    elements[index] = {"name": f"{item.redefines}_alternatives", "choice": [target]}
                elements[index]["choice"].append(element)
                return
        raise ImportFault(
            f"'{item.name}' REDEFINES '{item.redefines}', which is not an earlier item at the same level",
            item.line,
            item.column,
        )


def import_copybook(text: str, type_name: str | None = None, source: str = "copybook") -> dict[str, Any]:
    """Import the records of a copybook: ``{"message": name, "types": {…}}`` (message set types)."""
    try:
        items = [item for item in (_parse_item(tokens) for tokens in _statements(text)) if item is not None]
        if not items:
            raise ImportFault("no data description entries found", 1, 1)
        records = _nest(items)
        builder = _Builder()
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
    return {"message": message, "types": builder.types}


def _nest(items: list[_Item]) -> list[_Item]:
    records: list[_Item] = []
    stack: list[_Item] = []
    for item in items:
        while stack and stack[-1].level >= item.level:
            stack.pop()
        if not stack:
            if item.level != 1 and records:
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
