"""Coded character set ids (CCSIDs) and MQ numeric encodings mapped to Python codecs and byte orders."""

from __future__ import annotations

from esql.domains import DomainError

#: CCSID → Python codec. 1208 is UTF-8; 037 and 500 are the EBCDIC code pages most hosts send.
CODECS: dict[int, str] = {
    1208: "utf-8",
    819: "iso-8859-1",
    1200: "utf-16-be",
    1202: "utf-16-le",
    13488: "utf-16-be",
    17584: "utf-16-be",
    37: "cp037",
    500: "cp500",
    1140: "cp1140",
    273: "cp273",
    1047: "cp1047",
    437: "cp437",
    850: "cp850",
    1252: "cp1252",
    367: "ascii",
    912: "iso-8859-2",
    923: "iso-8859-15",
}

EBCDIC = frozenset({37, 500, 1140, 273, 1047})

#: MQENC_NATIVE on the platforms flowbroker runs on (little-endian integers, IEEE floats).
NATIVE_ENCODING = 546


def codec(ccsid: int) -> str:
    """The Python codec for ``ccsid``; an unknown CCSID is a DomainError."""
    try:
        return CODECS[int(ccsid)]
    except (KeyError, ValueError, TypeError):
        raise DomainError(f"unsupported coded character set id {ccsid!r}") from None


def is_ebcdic(ccsid: int) -> bool:
    return int(ccsid) in EBCDIC


def integer_order(encoding: int) -> str:
    """'big' or 'little' for binary integers under an MQ encoding (MQENC_INTEGER_NORMAL = 1)."""
    return "little" if (int(encoding) & 0x0F) == 2 else "big"


def float_order(encoding: int) -> str:
    """'big' or 'little' for IEEE floats (MQENC_FLOAT_IEEE_NORMAL = 0x100, REVERSED = 0x200)."""
    kind = int(encoding) & 0xF00
    if kind == 0x300:
        raise DomainError("S/390 hexadecimal floating point (encoding 0x300) is not supported")
    return "little" if kind == 0x200 else "big"


def decimal_reversed(encoding: int) -> bool:
    """Packed decimal byte order under an MQ encoding (MQENC_DECIMAL_REVERSED = 0x20)."""
    return (int(encoding) & 0xF0) == 0x20
