"""Specimen records: one deterministic record per message type, and its CWF round trip.

A specimen gives every simple field a value that fills it (text across a string's width, digits
across a number's, a sign where the field has one), one instance per fixed repeat, two per
OCCURS DEPENDING ON (within its range, with the count field set to match) and the first
alternative of each choice. The round trip writes the specimen, reads the bytes back with the
CWF reader and writes that tree again: the two byte strings must be equal.
"""

from __future__ import annotations

import decimal
from dataclasses import dataclass

from esql.domains import DomainError
from esql.tree import NAME_VALUE, Element

from flowbroker.formats.mrm import cwf
from flowbroker.formats.mrm.model import ComplexType, Field, MessageSet

_LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
_DIGITS = "1234567890"
#: A mainframe's code page and encoding: EBCDIC text, big-endian integers and floats.
EBCDIC_CCSID = 500
HOST_ENCODING = 273


def specimen(mtype: ComplexType, name: str = "MRM") -> Element:
    """A tree holding one deterministic record of ``mtype``."""
    root = Element(name)
    _structure(mtype, root)
    return root


def _structure(ctype: ComplexType, parent: Element) -> None:
    for f in ctype.fields:
        if f.base == "filler":
            continue
        if f.alternatives:
            alt = f.alternatives[0]
            for _ in range(_count(alt, parent)):
                _field(alt, parent)
            continue
        for _ in range(_count(f, parent)):
            _field(f, parent)


def _count(f: Field, parent: Element) -> int:
    if not f.depends_on:
        return max(f.occurs, 1)
    count = min(f.max_occurs, max(f.min_occurs, 2))
    holder = cwf.lookup(parent, f.depends_on)
    if holder is not None:
        holder.value = count
    return count


def _field(f: Field, parent: Element) -> None:
    if f.complex is not None:
        _structure(f.complex, parent.append_new(Element(f.name)))
        return
    parent.append_new(Element(f.name, value(f), type=NAME_VALUE))


def value(f: Field) -> object:
    """The specimen value of simple field ``f``: it fills the field's bytes."""
    if f.repr == "string":
        width = (
            f.length // 2 if f.ccsid in (1200, 1201, 1202, 13488, 17584) else f.length
        )  # UTF-16: 2 bytes a character
        return (_LETTERS * (width // len(_LETTERS) + 1))[:width]
    if f.repr == "bytes":
        return bytes((index * 37 + 1) % 256 for index in range(f.length))
    if f.repr == "float":
        return -2.25 if f.signed and f.length == 8 else 1.5
    if f.repr == "binary":
        digits = {1: 2, 2: 4, 4: 9, 8: 18}[f.length]
    elif f.repr == "packed":
        # one digit short of what the bytes hold, so an even-digit PIC (which has a spare nibble) fits too
        digits = max(1, 2 * f.length - 2)
    else:
        digits = f.length - (1 if f.signed and f.sign.endswith("separate") else 0)
    number = int((_DIGITS * (digits // 10 + 1))[:digits])
    if f.signed:
        number = -number
    if f.base == "decimal":
        return decimal.Decimal(number).scaleb(-f.scale)
    return number


@dataclass
class RoundTrip:
    """What the round trip of one message type wrote, read and wrote again."""

    type_name: str
    written: bytes
    rewritten: bytes
    error: str = ""

    @property
    def same(self) -> bool:
        return not self.error and self.written == self.rewritten

    def problem(self) -> str:
        """Why the round trip failed ('' when it did not)."""
        if self.error:
            return self.error
        if self.written != self.rewritten:
            at = next(
                (i for i, (a, b) in enumerate(zip(self.written, self.rewritten, strict=False)) if a != b),
                min(len(self.written), len(self.rewritten)),
            )
            return (
                f"the record read back writes different bytes from offset {at} "
                f"({len(self.written)} bytes written, {len(self.rewritten)} rewritten)"
            )
        return ""


def round_trip(
    mset: MessageSet, type_name: str, *, ccsid: int = EBCDIC_CCSID, encoding: int = HOST_ENCODING
) -> RoundTrip:
    """Write a specimen of ``type_name``, read it back and write it again (CWF)."""
    mtype = mset.message_type(type_name)
    try:
        written = cwf.Writer(ccsid=ccsid, encoding=encoding).record(mtype, specimen(mtype))
    except DomainError as exc:
        return RoundTrip(type_name, b"", b"", f"writing the specimen: {exc}")
    tree = Element("MRM")
    try:
        cwf.Reader(written, ccsid=ccsid, encoding=encoding).record(mtype, tree)
        rewritten = cwf.Writer(ccsid=ccsid, encoding=encoding).record(mtype, tree)
    except DomainError as exc:
        return RoundTrip(type_name, written, b"", f"reading the specimen back: {exc}")
    return RoundTrip(type_name, written, rewritten)
