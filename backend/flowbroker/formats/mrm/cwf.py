"""Custom Wire Format: fixed-layout records (C structs, COBOL copybooks) read into and written from trees."""

from __future__ import annotations

import decimal
import struct
from typing import Any, Literal, cast

from esql.domains import DomainError
from esql.tree import NAME_VALUE, Element

from flowbroker.formats import ccsid as ccsids
from flowbroker.formats.mrm.model import ComplexType, Field, field_length

_ByteOrder = Literal["big", "little"]
_POSITIVE_OVERPUNCH = "{ABCDEFGHI"
_NEGATIVE_OVERPUNCH = "}JKLMNOPQR"
_OVERPUNCH = {ch: (i, 1) for i, ch in enumerate(_POSITIVE_OVERPUNCH)} | {
    ch: (i, -1) for i, ch in enumerate(_NEGATIVE_OVERPUNCH)
}
_FLOAT = {("big", 4): struct.Struct(">f"), ("big", 8): struct.Struct(">d")}
_FLOAT |= {("little", 4): struct.Struct("<f"), ("little", 8): struct.Struct("<d")}


def _error(message: str, path: str, offset: int) -> DomainError:
    error = DomainError(
        f"CWF: {message} (field {path}, byte offset {offset})", domain="MRM", path=path, offset=offset
    )
    error.reason = message  # type: ignore[attr-defined]
    return error


class Reader:
    """Reads one record of a message type from bytes; positions in errors are absolute byte offsets."""

    def __init__(self, data: bytes, *, ccsid: int, encoding: int, base_path: str = "MRM") -> None:
        self.data = data
        self.codec = ccsids.codec(ccsid)
        self.int_order = ccsids.integer_order(encoding)
        self.float_order = ccsids.float_order(encoding)
        self.base_path = base_path

    def record(self, mtype: ComplexType, parent: Element) -> None:
        end = self.structure(mtype, parent, 0, self.base_path)
        if end != len(self.data):
            raise _error(
                f"record too long: {len(self.data) - end} bytes left over after message type '{mtype.name}' "
                f"ends at {end} of {len(self.data)}",
                self.base_path,
                end,
            )

    def structure(self, ctype: ComplexType, parent: Element, pos: int, path: str) -> int:
        if ctype.flat is not None and pos + (ctype.fixed_size or 0) <= len(self.data) and ctype.fixed_size:
            # Every field simple and single and the record long enough: no bounds checks per field.
            value = self.value
            for f in ctype.fields:
                if f.base != "filler":
                    parent.append_new(Element(f.name, value(f, pos, path), type=NAME_VALUE))
                pos += f.length * f.occurs
            return pos
        for f in ctype.fields:
            count = f.occurs
            if f.depends_on:
                count = _count(parent, f, path, pos)
            for _ in range(count):
                pos = self.field(f, parent, pos, path)
        return pos

    def field(self, f: Field, parent: Element, pos: int, path: str) -> int:
        if f.alternatives:
            return self.choice(f, parent, pos, path)
        fpath = f"{path}.{f.name}" if f.name else path
        if f.complex is not None:
            child = parent.append_new(Element(f.name))
            return self.structure(f.complex, child, pos, fpath)
        end = pos + f.length
        if end > len(self.data):
            raise _error(
                f"record too short: {f.length} bytes needed, {max(len(self.data) - pos, 0)} remain",
                fpath,
                pos,
            )
        if f.base == "filler":
            return end
        parent.append_new(Element(f.name, self.value(f, pos, path), type=NAME_VALUE))
        return end

    def choice(self, f: Field, parent: Element, pos: int, path: str) -> int:
        size = field_length(f)
        chosen: list[Field] = []
        if f.selector is not None:
            key = lookup(parent, f.selector[0])
            name = f.selector[1].get(str(key.value).strip() if key is not None else "")
            chosen = [alt for alt in f.alternatives if alt.name == name]
        candidates = chosen or list(f.alternatives)
        last: DomainError | None = None
        for alt in candidates:
            mark = parent.last_child
            try:
                end = pos
                for _ in range(max(alt.occurs, 1)):
                    end = self.field(alt, parent, end, path)
            except DomainError as exc:
                # This alternative does not fit these bytes: undo what it added, try the next one.
                while parent.last_child is not mark and parent.last_child is not None:
                    parent.last_child.detach()
                last = exc
                continue
            return pos + size if size is not None else end
        assert last is not None
        raise last

    def value(self, f: Field, pos: int, parent_path: str) -> Any:
        """The value of simple field ``f`` at ``pos``; ``parent_path`` names its structure, for errors."""
        try:
            return self._value(f, pos)
        except DomainError as exc:
            # The field's own path is only worth building when something is wrong with it.
            raise _error(
                getattr(exc, "reason", str(exc)), f"{parent_path}.{f.name}", exc.offset or pos
            ) from None

    def _value(self, f: Field, pos: int) -> Any:
        raw = self.data[pos : pos + f.length]
        path = ""
        rep = f.repr
        if rep == "string":
            try:
                text = raw.decode(ccsids.codec(f.ccsid) if f.ccsid else self.codec)
            except UnicodeDecodeError as exc:
                raise _error(
                    f"bytes not valid in the message's code page: {exc.reason}", path, pos + exc.start
                ) from None
            return text.rstrip(f.pad) if f.justify == "left" else text.lstrip(f.pad)
        if rep == "binary":
            number = int.from_bytes(raw, cast(_ByteOrder, f.order or self.int_order), signed=f.signed)
            return _typed(f, number)
        if rep == "packed":
            return _typed(f, unpack_decimal(raw, path, pos))
        if rep == "display":
            return _typed(f, self.display(f, raw, path, pos))
        if rep == "float":
            return _FLOAT[(f.order or self.float_order, f.length)].unpack(raw)[0]
        return bytes(raw)

    def display(self, f: Field, raw: bytes, path: str, pos: int) -> int:
        try:
            text = raw.decode(self.codec)
        except UnicodeDecodeError:
            raise _error("display numeric is not text in the message's code page", path, pos) from None
        sign = 1
        mode = f.sign if f.signed else "none"
        if mode == "leading_separate":
            sign, text = (-1 if text[0] == "-" else 1), text[1:]
            if raw and text and raw.decode(self.codec)[0] not in "+-":
                raise _error(f"display numeric has no leading sign: {raw.decode(self.codec)!r}", path, pos)
        elif mode == "trailing_separate":
            if text[-1] not in "+-":
                raise _error(f"display numeric has no trailing sign: {text!r}", path, pos + len(raw) - 1)
            sign, text = (-1 if text[-1] == "-" else 1), text[:-1]
        elif mode == "trailing" and text and text[-1] in _OVERPUNCH:
            digit, sign = _OVERPUNCH[text[-1]]
            text = text[:-1] + str(digit)
        elif mode == "leading" and text and text[0] in _OVERPUNCH:
            digit, sign = _OVERPUNCH[text[0]]
            text = str(digit) + text[1:]
        digits = text.strip()
        # ASCII digits only: str.isdigit() also admits superscripts and other scripts' digits
        if not (digits.isascii() and digits.isdigit()):
            if not digits and not text.strip(" "):
                return 0
            bad = next((i for i, ch in enumerate(text) if ch not in "0123456789 "), 0)
            raise _error(f"display numeric holds {text!r}, not digits", path, pos + bad)
        return sign * int(digits)


def _typed(f: Field, number: int) -> Any:
    if f.base == "decimal":
        return decimal.Decimal(number).scaleb(-f.scale) if f.scale else decimal.Decimal(number)
    if f.base == "float":
        return float(number) / (10**f.scale)
    if f.base == "boolean":
        return number != 0
    if f.base == "string":
        return str(number)
    return number


def unpack_decimal(raw: bytes, path: str, pos: int) -> int:
    """A packed-decimal (COMP-3) value: two digits a byte, the last nibble the sign."""
    number = 0
    last = len(raw) - 1
    for i, byte in enumerate(raw):
        high, low = byte >> 4, byte & 0x0F
        if high > 9:
            raise _error(f"invalid packed-decimal digit nibble 0x{high:X}", path, pos + i)
        number = number * 10 + high
        if i == last:
            if low in (0x0B, 0x0D):
                return -number
            if low < 0x0A:
                raise _error(f"invalid packed-decimal sign nibble 0x{low:X}", path, pos + i)
            return number
        if low > 9:
            raise _error(f"invalid packed-decimal digit nibble 0x{low:X}", path, pos + i)
        number = number * 10 + low
    return number


def pack_decimal(number: int, length: int, signed: bool) -> bytes | None:
    """``number`` as ``length`` bytes of packed decimal, or None when it does not fit."""
    digits = str(abs(number))
    capacity = length * 2 - 1
    if len(digits) > capacity:
        return None
    sign = 0x0D if number < 0 else (0x0C if signed else 0x0F)
    nibbles = [int(d) for d in digits.rjust(capacity, "0")] + [sign]
    return bytes((nibbles[i] << 4) | nibbles[i + 1] for i in range(0, len(nibbles), 2))


def _count(parent: Element, f: Field, path: str, pos: int) -> int:
    holder = lookup(parent, f.depends_on)
    if holder is None:
        raise _error(
            f"OCCURS DEPENDING ON field '{f.depends_on}' is not in the record before it",
            f"{path}.{f.name}",
            pos,
        )
    try:
        count = int(holder.value)
    except (TypeError, ValueError):
        raise _error(
            f"count field '{f.depends_on}' holds {holder.value!r}", f"{path}.{f.name}", pos
        ) from None
    if count < f.min_occurs or count > f.max_occurs:
        raise _error(
            f"count field '{f.depends_on}' = {count} is outside {f.min_occurs} to {f.max_occurs}",
            f"{path}.{f.name}",
            pos,
        )
    return count


def lookup(parent: Element | None, name: str) -> Element | None:
    """The nearest earlier field called ``name``: in this structure, then in enclosing ones; failing
    that, the last one inside an earlier group of those structures within the record (a count kept
    in a header group, as COBOL's OCCURS DEPENDING ON allows)."""
    node = parent
    while node is not None:
        found = node.child(name, -1)
        if found is not None:
            return found
        node = node.parent
    node = parent
    while node is not None:
        for kid in reversed(list(node.children())):
            found = _inside(kid, name)
            if found is not None:
                return found
        if node.name in _ROOTS:
            break  # the record's own element: fields of other parts of the message do not count
        node = node.parent
    return None


#: Where a record's tree stops: the domain element, or a message root when the record hangs from one.
_ROOTS = frozenset({"MRM", "Root", "InputRoot", "OutputRoot"})


def _inside(group: Element, name: str) -> Element | None:
    last: Element | None = None
    for kid in group.children():
        if kid.name == name and kid.type == NAME_VALUE:
            last = kid
        elif kid.first_child is not None:
            found = _inside(kid, name)
            if found is not None:
                last = found
    return last


class Writer:
    """Writes a tree as one record of a message type; values are cast to each field's type."""

    def __init__(self, *, ccsid: int, encoding: int, base_path: str = "MRM") -> None:
        self.codec = ccsids.codec(ccsid)
        self.int_order = ccsids.integer_order(encoding)
        self.float_order = ccsids.float_order(encoding)
        self.out = bytearray()
        self.base_path = base_path

    def record(self, mtype: ComplexType, element: Element) -> bytes:
        self.structure(mtype, element, self.base_path)
        return bytes(self.out)

    def structure(self, ctype: ComplexType, element: Element, path: str) -> None:
        by_name: dict[str, list[Element]] = {}
        for kid in element.children():
            by_name.setdefault(kid.name, []).append(kid)
        if len(by_name) > len(ctype.names) or not by_name.keys() <= ctype.names:
            extra = next(name for name in by_name if name not in ctype.names)
            raise _error(
                f"'{extra}' is not an element of type '{ctype.name}'", f"{path}.{extra}", len(self.out)
            )
        for f in ctype.fields:
            if f.alternatives:
                self.choice(f, by_name, element, path)
                continue
            if f.occurs == 1 and f.complex is None and not f.depends_on and f.base != "filler":
                # The common case, kept lean: one simple field.
                kids = by_name.get(f.name)
                if kids is not None and len(kids) == 1:
                    self.out += self.value(f, kids[0].value, path)
                    continue
            fpath = f"{path}.{f.name}" if f.name else path
            if f.base == "filler":
                self.out += self.filler(f) * f.occurs
                continue
            kids = by_name.get(f.name, [])
            if f.depends_on:
                holder = lookup(element, f.depends_on)
                if (
                    holder is not None
                    and holder.value is not None
                    and str(holder.value).strip() != str(len(kids))
                ):
                    raise _error(
                        f"OCCURS DEPENDING ON '{f.depends_on}' is {holder.value} but {len(kids)} instances are present",
                        fpath,
                        len(self.out),
                    )
                if len(kids) > f.max_occurs:
                    raise _error(
                        f"{len(kids)} instances exceed the maximum of {f.max_occurs}", fpath, len(self.out)
                    )
            elif len(kids) != f.occurs:
                what = "missing" if not kids else f"present {len(kids)} times, expected {f.occurs}"
                raise _error(f"mandatory field {what}", fpath, len(self.out))
            for kid in kids:
                self.field(f, kid, fpath)

    def choice(self, f: Field, by_name: dict[str, list[Element]], element: Element, path: str) -> None:
        size = field_length(f)
        for alt in f.alternatives:
            if alt.name in by_name:
                start = len(self.out)
                for kid in by_name[alt.name]:
                    self.field(alt, kid, f"{path}.{alt.name}")
                if size is not None:
                    self.out += self.pad_bytes() * (size - (len(self.out) - start))
                return
        names = ", ".join(alt.name for alt in f.alternatives)
        raise _error(f"none of the alternatives {names} is present", path, len(self.out))

    def pad_bytes(self) -> bytes:
        return " ".encode(self.codec)

    def filler(self, f: Field) -> bytes:
        if f.repr == "string":
            pad = f.pad.encode(ccsids.codec(f.ccsid) if f.ccsid else self.codec)
            return (pad * f.length)[: f.length]
        return b"\x00" * f.length

    def field(self, f: Field, element: Element, path: str) -> None:
        if f.complex is not None:
            self.structure(f.complex, element, path)
            return
        self.out += self.value(f, element.value, path.rpartition(".")[0] or path)

    def value(self, f: Field, value: Any, parent_path: str) -> bytes:
        """``value`` in field ``f``'s wire form; ``parent_path`` names the structure, for errors."""
        rep = f.repr
        offset = len(self.out)
        path = f"{parent_path}.{f.name}"
        if value is None:
            raise _error("field has no value", path, offset)
        if rep == "string":
            text = value if isinstance(value, str) else _text(value)
            codec = ccsids.codec(f.ccsid) if f.ccsid else self.codec
            try:
                raw = text.encode(codec)
            except UnicodeEncodeError:
                raise _error(f"{text!r} cannot be written in the message's code page", path, offset) from None
            if len(raw) > f.length:
                raise _error(f"value {text!r} is {len(raw)} bytes; the field holds {f.length}", path, offset)
            pad = f.pad.encode(codec)
            if (f.length - len(raw)) % len(pad):
                raise _error(f"value {text!r} leaves a part of a character unfilled", path, offset)
            padding = pad * ((f.length - len(raw)) // len(pad))
            return raw + padding if f.justify == "left" else padding + raw
        if rep == "float":
            number = _float(value, path, offset)
            try:
                return _FLOAT[(f.order or self.float_order, f.length)].pack(number)
            except (OverflowError, struct.error):
                raise _error(f"{number!r} does not fit a {f.length}-byte float", path, offset) from None
        if rep == "bytes":
            raw = bytes(value) if isinstance(value, bytes | bytearray) else _hex(value, path, offset)
            if len(raw) > f.length:
                raise _error(f"{len(raw)} bytes do not fit the {f.length}-byte field", path, offset)
            return bytes(raw).ljust(f.length, b"\x00")
        number = _scaled(value, f, path, offset)
        if rep == "binary":
            try:
                return number.to_bytes(f.length, cast(_ByteOrder, f.order or self.int_order), signed=f.signed)
            except OverflowError:
                raise _error(
                    f"{value!r} does not fit a {f.length}-byte binary integer", path, offset
                ) from None
        if rep == "packed":
            if number < 0 and not f.signed:
                raise _error(f"{value!r} is negative; the field is unsigned", path, offset)
            packed = pack_decimal(number, f.length, f.signed)
            if packed is None:
                raise _error(f"{value!r} has more digits than {f.length} packed bytes hold", path, offset)
            return packed
        return self.display(f, number, value, path, offset)

    def display(self, f: Field, number: int, value: Any, path: str, offset: int) -> bytes:
        mode = f.sign if f.signed else "none"
        if number < 0 and mode == "none":
            raise _error(f"{value!r} is negative; the field is unsigned", path, offset)
        width = f.length - (1 if mode in ("leading_separate", "trailing_separate") else 0)
        digits = str(abs(number))
        if len(digits) > width:
            raise _error(f"{value!r} has more digits than the {f.length}-byte field holds", path, offset)
        digits = digits.rjust(width, "0")
        sign = "-" if number < 0 else "+"
        if mode == "leading_separate":
            text = sign + digits
        elif mode == "trailing_separate":
            text = digits + sign
        elif mode == "trailing":
            table = _NEGATIVE_OVERPUNCH if number < 0 else _POSITIVE_OVERPUNCH
            text = digits[:-1] + table[int(digits[-1])]
        elif mode == "leading":
            table = _NEGATIVE_OVERPUNCH if number < 0 else _POSITIVE_OVERPUNCH
            text = table[int(digits[0])] + digits[1:]
        else:
            text = digits
        return text.encode(self.codec)


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, bytes | bytearray):
        return bytes(value).hex().upper()
    return str(value)


def _float(value: Any, path: str, offset: int) -> float:
    try:
        return float(value.strip() if isinstance(value, str) else value)
    except (TypeError, ValueError):
        raise _error(f"{value!r} is not a number", path, offset) from None


def _hex(value: Any, path: str, offset: int) -> bytes:
    try:
        return bytes.fromhex(str(value))
    except ValueError:
        raise _error(f"{value!r} is not hexadecimal bytes", path, offset) from None


def _scaled(value: Any, f: Field, path: str, offset: int) -> int:
    """The unscaled integer a numeric field stores for ``value`` (a decimal's digits without the point)."""
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int) and not f.scale:
        return value
    if isinstance(value, str) and not f.scale:
        try:
            return int(value)
        except ValueError:
            pass
    try:
        number = decimal.Decimal(value.strip() if isinstance(value, str) else value)
    except (decimal.InvalidOperation, TypeError, ValueError):
        raise _error(f"{value!r} is not a number", path, offset) from None
    if not number.is_finite():
        raise _error(f"{value!r} is not a finite number", path, offset)
    shifted = number.scaleb(f.scale)
    whole = shifted.to_integral_value(rounding=decimal.ROUND_HALF_UP)
    if f.base == "integer" and shifted != whole:
        raise _error(f"{value!r} is not an integer", path, offset)
    return int(whole)
