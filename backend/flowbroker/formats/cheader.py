"""C header import: struct declarations (nested structs, fixed arrays, integer and float types) into message set types.

Members are laid out with the natural alignment of a 64-bit (LP64) compiler unless ``#pragma
pack(n)`` says otherwise; alignment gaps become filler. Integers take the byte order of the
message's encoding, as MRM does for C structures.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from flowbroker.formats.copybook import ImportFault

#: C type → (message set type, CWF representation, size, signed).
_PRIMITIVES: dict[str, tuple[str, str, int, bool]] = {
    "char": ("string", "string", 1, True),
    "signed char": ("integer", "binary", 1, True),
    "unsigned char": ("integer", "binary", 1, False),
    "short": ("integer", "binary", 2, True),
    "unsigned short": ("integer", "binary", 2, False),
    "int": ("integer", "binary", 4, True),
    "unsigned int": ("integer", "binary", 4, False),
    "long": ("integer", "binary", 8, True),
    "unsigned long": ("integer", "binary", 8, False),
    "long long": ("integer", "binary", 8, True),
    "unsigned long long": ("integer", "binary", 8, False),
    "float": ("float", "float", 4, True),
    "double": ("float", "float", 8, True),
    "bool": ("boolean", "binary", 1, False),
    "_Bool": ("boolean", "binary", 1, False),
    "int8_t": ("integer", "binary", 1, True),
    "uint8_t": ("integer", "binary", 1, False),
    "int16_t": ("integer", "binary", 2, True),
    "uint16_t": ("integer", "binary", 2, False),
    "int32_t": ("integer", "binary", 4, True),
    "uint32_t": ("integer", "binary", 4, False),
    "int64_t": ("integer", "binary", 8, True),
    "uint64_t": ("integer", "binary", 8, False),
}
_ALIASES = {
    "short int": "short",
    "signed short": "short",
    "signed short int": "short",
    "unsigned short int": "unsigned short",
    "signed": "int",
    "signed int": "int",
    "unsigned": "unsigned int",
    "long int": "long",
    "signed long": "long",
    "unsigned long int": "unsigned long",
    "long long int": "long long",
    "signed long long": "long long",
    "unsigned long long int": "unsigned long long",
}
_TOKEN = re.compile(r"\s+|(?P<tok>[A-Za-z_][A-Za-z0-9_]*|0[xX][0-9a-fA-F]+|\d+|[{};\[\],*=()#])")


@dataclass
class _Tok:
    text: str
    line: int
    column: int


@dataclass
class _Struct:
    name: str
    size: int
    align: int


class _Parser:
    def __init__(self, text: str, source: str) -> None:
        self.source = source
        self.defines: dict[str, int] = {}
        self.pack: int | None = None
        self.toks = self._tokenize(text)
        self.i = 0
        self.types: dict[str, dict[str, Any]] = {}
        self.structs: dict[str, _Struct] = {}
        self.typedefs: dict[str, str] = {}
        self.order: list[str] = []

    def fault(self, message: str, tok: _Tok | None = None) -> ImportFault:
        tok = tok or (self.toks[self.i] if self.i < len(self.toks) else _Tok("", 0, 0))
        return ImportFault(message, tok.line, tok.column, self.source)

    def _tokenize(self, text: str) -> list[_Tok]:
        text = re.sub(r"/\*.*?\*/", lambda m: re.sub(r"[^\n]", " ", m.group(0)), text, flags=re.S)
        toks: list[_Tok] = []
        for number, line in enumerate(text.splitlines(), start=1):
            line = re.sub(r"//.*", "", line)
            stripped = line.strip()
            if stripped.startswith("#"):
                self._directive(stripped, number, line.index("#") + 1)
                toks.append(_Tok(f"#pack:{self.pack or 0}", number, 1))
                continue
            pos = 0
            while pos < len(line):
                match = _TOKEN.match(line, pos)
                if match is None:
                    raise ImportFault(f"unexpected character {line[pos]!r}", number, pos + 1, self.source)
                if match.group("tok"):
                    toks.append(_Tok(match.group("tok"), number, pos + 1))
                pos = match.end()
        return toks

    def _directive(self, text: str, line: int, column: int) -> None:
        define = re.match(r"#\s*define\s+([A-Za-z_]\w*)\s+(\d+|0[xX][0-9a-fA-F]+)\s*$", text)
        if define:
            self.defines[define.group(1)] = int(define.group(2), 0)
            return
        pack = re.match(r"#\s*pragma\s+pack\s*\(\s*(?:push\s*,\s*)?(\d*)\s*\)", text)
        if pack:
            self.pack = int(pack.group(1)) if pack.group(1) else None
            return
        if re.match(r"#\s*pragma\s+pack\s*\(\s*pop\s*\)", text):
            self.pack = None

    def peek(self) -> str:
        while self.i < len(self.toks) and self.toks[self.i].text.startswith("#pack:"):
            value = int(self.toks[self.i].text[6:])
            self.pack = value or None
            self.i += 1
        return self.toks[self.i].text if self.i < len(self.toks) else ""

    def take(self, expected: str | None = None) -> _Tok:
        self.peek()
        if self.i >= len(self.toks):
            raise self.fault(f"unexpected end of header{f', expected {expected!r}' if expected else ''}")
        tok = self.toks[self.i]
        if expected is not None and tok.text != expected:
            raise self.fault(f"expected '{expected}', found '{tok.text}'", tok)
        self.i += 1
        return tok

    def run(self) -> None:
        self.pack = None
        while self.peek():
            word = self.peek()
            if word == "typedef":
                self.take()
                self._typedef()
            elif word == "struct":
                self._struct_decl(top=True)
                self.take(";")
            elif word in ("extern", "static", "const", "enum", "union"):
                raise self.fault(f"'{word}' declarations are not supported in a message layout")
            else:
                raise self.fault(f"expected a struct or typedef, found '{word}'")

    def _typedef(self) -> None:
        if self.peek() == "struct":
            name = self._struct_decl(top=False)
            alias = self.take()
            self.typedefs[alias.text] = name
            if name.startswith("__anon"):
                self._rename(name, alias.text)
            self.take(";")
            return
        base = self._base_type()
        alias = self.take()
        self.take(";")
        self.typedefs[alias.text] = base

    def _rename(self, old: str, new: str) -> None:
        self.types[new] = self.types.pop(old)
        self.structs[new] = self.structs.pop(old)
        self.structs[new].name = new
        self.order[self.order.index(old)] = new
        self.typedefs[new] = new
        for alias, target in list(self.typedefs.items()):
            if target == old:
                self.typedefs[alias] = new

    def _base_type(self) -> str:
        words = []
        while self.peek() in ("const", "volatile"):
            self.take()
        while self.peek() in ("unsigned", "signed", "short", "long", "int", "char", "float", "double"):
            words.append(self.take().text)
        if words:
            name = _ALIASES.get(" ".join(words), " ".join(words))
            if name not in _PRIMITIVES:
                raise self.fault(f"unsupported C type '{' '.join(words)}'")
            return name
        tok = self.take()
        if tok.text in _PRIMITIVES:
            return tok.text
        if tok.text in self.typedefs:
            return self.typedefs[tok.text]
        raise self.fault(f"unknown type '{tok.text}'", tok)

    def _struct_decl(self, top: bool) -> str:
        start = self.take("struct")
        tag = ""
        if self.peek() not in ("{",):
            tag = self.take().text
            if self.peek() != "{":
                if tag not in self.structs:
                    raise self.fault(f"struct '{tag}' is not defined before use", start)
                return tag
        self.take("{")
        name = tag or f"__anon{len(self.types) + 1}"
        if name in self.types:
            raise self.fault(f"struct '{name}' is defined twice", start)
        elements: list[dict[str, Any]] = []
        offset = 0
        align = 1
        while self.peek() != "}":
            if not self.peek():
                raise self.fault("unterminated struct", start)
            if self.peek() == "struct":
                member_type = self._struct_decl(top=False)
            else:
                member_type = self._base_type()
            while True:
                member = self.take()
                if not re.match(r"[A-Za-z_]\w*$", member.text):
                    raise self.fault(f"expected a member name, found '{member.text}'", member)
                if member_type.startswith("__anon"):
                    wanted = member.text if member.text not in self.types else f"{name}_{member.text}"
                    self._rename(member_type, wanted)
                    member_type = wanted
                dims = []
                while self.peek() == "[":
                    self.take("[")
                    size_tok = self.take()
                    size = self.defines.get(size_tok.text)
                    if size is None:
                        if not re.match(r"\d+$|0[xX][0-9a-fA-F]+$", size_tok.text):
                            raise self.fault(f"array size '{size_tok.text}' is not a constant", size_tok)
                        size = int(size_tok.text, 0)
                    if size <= 0:
                        raise self.fault("an array needs a positive size", size_tok)
                    dims.append(size)
                    self.take("]")
                element, size, member_align = self._member(member.text, member_type, dims, member)
                member_align = min(member_align, self.pack) if self.pack else member_align
                gap = -offset % member_align
                if gap:
                    elements.append({"type": "filler", "cwf": {"repr": "bytes", "length": gap}})
                    offset += gap
                elements.append(element)
                offset += size
                align = max(align, member_align)
                if self.peek() == ",":
                    self.take(",")
                    continue
                break
            self.take(";")
        self.take("}")
        tail = -offset % align
        if tail:
            elements.append({"type": "filler", "cwf": {"repr": "bytes", "length": tail}})
            offset += tail
        if not elements:
            raise self.fault(f"struct '{name}' has no members", start)
        self.types[name] = {"elements": elements}
        self.structs[name] = _Struct(name, offset, align)
        self.order.append(name)
        return name

    def _member(self, name: str, ctype: str, dims: list[int], tok: _Tok) -> tuple[dict[str, Any], int, int]:
        if ctype in self.structs:
            info = self.structs[ctype]
            count = 1
            for d in dims:
                count *= d
            element: dict[str, Any] = {"name": name, "type": ctype}
            if count != 1:
                element["occurs"] = count
            return element, info.size * count, info.align
        kind, rep, size, signed = _PRIMITIVES[ctype]
        if ctype == "char" and dims:
            # char name[N] is a string of N bytes; outer dimensions repeat it.
            length = dims[-1]
            count = 1
            for d in dims[:-1]:
                count *= d
            element = {
                "name": name,
                "type": "string",
                "cwf": {"repr": "string", "length": length, "pad": "NUL"},
            }
            if count != 1:
                element["occurs"] = count
            return element, length * count, 1
        count = 1
        for d in dims:
            count *= d
        cwf: dict[str, Any] = {"repr": rep, "length": size}
        if rep == "binary":
            cwf["signed"] = signed
        element = {"name": name, "type": kind, "cwf": cwf}
        if count != 1:
            element["occurs"] = count
        return element, size * count, size


def import_c_header(text: str, type_name: str | None = None, source: str = "header") -> dict[str, Any]:
    """Import the structs of a C header: ``{"message": name, "types": {…}}`` (the last struct by default)."""
    parser = _Parser(text, source)
    parser.run()
    if not parser.order:
        raise ImportFault("no struct declarations found", 1, 1, source)
    message = type_name or parser.order[-1]
    message = parser.typedefs.get(message, message)
    if message not in parser.types:
        raise ImportFault(f"no struct named '{type_name}' (structs: {', '.join(parser.order)})", 1, 1, source)
    return {"message": message, "types": parser.types}
