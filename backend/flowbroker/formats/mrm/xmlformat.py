"""MRM XML: predefined XML whose elements, order, repeats and values are checked against the message set."""

from __future__ import annotations

import decimal
from typing import Any

from esql.domains import DomainError
from esql.tree import NAME_VALUE, Element

from flowbroker.formats import xmlcore
from flowbroker.formats.mrm.model import ComplexType, Field


def _error(message: str, path: str, line: int | None = None) -> DomainError:
    where = f" at line {line}" if line else ""
    error = DomainError(f"MRM XML: {message} (field {path}{where})", domain="MRM", path=path)
    error.line = line  # type: ignore[attr-defined]
    return error


def _convert(f: Field, text: str, parent_path: str, node: Any = None) -> Any:
    """``text`` as field ``f``'s type; errors name the field and the line of ``node``."""
    base = f.base
    try:
        if base == "string":
            return text
        if base == "integer":
            return int(text.strip())
        if base == "decimal":
            number = decimal.Decimal(text.strip())
            if not number.is_finite():
                raise ValueError(text)
            return number
        if base == "float":
            return float(text.strip())
        if base == "boolean":
            lowered = text.strip().lower()
            if lowered not in ("true", "false", "1", "0"):
                raise ValueError(text)
            return lowered in ("true", "1")
        if base == "binary":
            return bytes.fromhex(text.strip())
    except (ValueError, decimal.InvalidOperation):
        line = node.sourceline if node is not None else None
        raise _error(f"{text!r} is not a valid {base}", f"{parent_path}.{f.name}", line) from None
    return text


def read(data: bytes, mtype: ComplexType, parent: Element, *, ccsid: int, base_path: str = "MRM") -> None:
    root, _head = xmlcore.parse(data, ccsid, "MRM", base_path)
    _ns, name = xmlcore.split(root.tag)
    try:
        if name != mtype.name:
            raise _error(
                f"the root element is '{name}', expected message type '{mtype.name}'",
                base_path,
                root.sourceline,
            )
        _structure(mtype, root, parent, base_path)
    except DomainError as exc:
        line = getattr(exc, "line", None)
        if exc.offset is None and line:
            # The byte offset of the start of the offending element's line.
            exc.offset = xmlcore.line_offset(data, line)
            exc.args = (f"{exc.args[0][:-1]}, byte offset {exc.offset})",)
        raise


def _structure(ctype: ComplexType, node: Any, parent: Element, path: str) -> None:
    kids = [kid for kid in node if isinstance(kid.tag, str)]
    flat = ctype.flat
    if flat is not None and len(kids) == len(flat):
        # Every field a single simple element: when the tags match one to one, no search is needed.
        tags = [kid.tag for kid in kids]
        if tags == ctype.flat_names:
            for f, kid in zip(flat, kids, strict=True):
                if len(kid):
                    raise _error("a simple field holds child elements", f"{path}.{f.name}", kid.sourceline)
                text = kid.text or ""
                parent.append_new(
                    Element(f.name, text if f.base == "string" else _convert(f, text, path, kid))
                )
            return
    attrs = node.attrib
    index = 0
    for f in ctype.fields:
        if f.base == "filler":
            continue
        if f.xml_attribute:
            if f.name in attrs:
                parent.append_new(Element(f.name, _convert(f, attrs[f.name], path, node)))
            elif f.min_occurs:
                raise _error("mandatory attribute missing", f"{path}.{f.name}", node.sourceline)
            continue
        alternatives = f.alternatives
        count = 0
        while index < len(kids):
            tag = kids[index].tag
            if tag[0] == "{":
                tag = xmlcore.split(tag)[1]
            if not alternatives:
                if tag != f.name:
                    break
                match = f
            else:
                found = next((alt for alt in alternatives if alt.name == tag), None)
                if found is None:
                    break
                match = found
            kid = kids[index]
            if match.complex is not None:
                _structure(match.complex, kid, parent.append_new(Element(tag)), f"{path}.{tag}")
            else:
                if len(kid):
                    raise _error("a simple field holds child elements", f"{path}.{tag}", kid.sourceline)
                text = kid.text or ""
                value = text if match.base == "string" else _convert(match, text, path, kid)
                parent.append_new(Element(tag, value, type=NAME_VALUE))
            count += 1
            index += 1
            if count == 1 and f.max_occurs == 1 and not f.depends_on and not alternatives:
                break
        wanted_min = f.min_occurs if not f.alternatives else 1
        limit = f.max_occurs * (1 if not f.alternatives else max(f.occurs, 1))
        if count < wanted_min:
            line = kids[index].sourceline if index < len(kids) else node.sourceline
            raise _error(f"expected {wanted_min} occurrence(s), found {count}", f"{path}.{f.name}", line)
        if count > limit:
            raise _error(f"at most {limit} occurrence(s) allowed, found {count}", f"{path}.{f.name}", None)
    if index < len(kids):
        extra = xmlcore.split(kids[index].tag)[1]
        raise _error(
            f"element '{extra}' is not defined in type '{ctype.name}'",
            f"{path}.{extra}",
            kids[index].sourceline,
        )


def write(mtype: ComplexType, element: Element, *, ccsid: int, base_path: str = "MRM") -> bytes:
    out: list[str] = []
    _write(mtype, mtype.name, element, out, base_path)
    return xmlcore.encode("".join(out), ccsid, "MRM")


def _write(ctype: ComplexType, tag: str, element: Element, out: list[str], path: str) -> None:
    by_name: dict[str, list[Element]] = {}
    for kid in element.children():
        found = by_name.get(kid.name)
        if found is None:
            by_name[kid.name] = [kid]
        else:
            found.append(kid)
    if not by_name.keys() <= ctype.names:
        extra = next(name for name in by_name if name not in ctype.names)
        raise _error(f"'{extra}' is not an element of type '{ctype.name}'", f"{path}.{extra}")
    attrs: list[str] = []
    body: list[str] = []
    for f in ctype.fields:
        if f.base == "filler":
            continue
        if f.alternatives:
            for alt in f.alternatives:
                for kid in by_name.get(alt.name, ()):
                    _one(alt, kid, body, attrs, path)
            continue
        kids = by_name.get(f.name)
        count = 0 if kids is None else len(kids)
        if not f.depends_on and count < f.min_occurs:
            raise _error("mandatory field missing", f"{path}.{f.name}")
        if count > f.max_occurs:
            raise _error(f"{count} occurrences exceed the maximum of {f.max_occurs}", f"{path}.{f.name}")
        for kid in kids or ():
            _one(f, kid, body, attrs, path)
    out.append(f"<{tag}{''.join(attrs)}>{''.join(body)}</{tag}>")


def _one(f: Field, kid: Element, body: list[str], attrs: list[str], path: str) -> None:
    name = f.name
    if f.complex is not None:
        _write(f.complex, name, kid, body, f"{path}.{name}")
        return
    value = kid.value
    if value is None:
        body.append(f"<{name}/>")
        return
    base, kind = f.base, type(value)
    if base == "string" and kind is str:
        text = value
    elif (base == "integer" and kind is int) or (base == "decimal" and kind is decimal.Decimal):
        text = str(value)
    elif base == "float" and kind is float:
        text = repr(value)
    else:
        text = xmlcore.text_of(_convert(f, xmlcore.text_of(value), path))
    if f.xml_attribute:
        attrs.append(f' {name}="{xmlcore.escape_attr(text)}"')
    else:
        body.append(f"<{name}>{xmlcore.escape_text(text)}</{name}>")
