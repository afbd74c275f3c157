"""Coded character set ids (CCSIDs) and MQ numeric encodings mapped to Python codecs and byte orders."""

from __future__ import annotations

from esql.domains import DomainError
from esql.functions.encodings import CCSID_CODECS, EBCDIC_CCSIDS

#: MQENC_NATIVE on the platforms flowbroker runs on (little-endian integers, IEEE floats).
NATIVE_ENCODING = 546


def codec(ccsid: int) -> str:
    """The Python codec for ``ccsid`` (the table CAST … CCSID uses); an unknown CCSID is a DomainError."""
    try:
        return CCSID_CODECS[int(ccsid)]
    except (KeyError, ValueError, TypeError):
        raise DomainError(f"unsupported coded character set id {ccsid!r}") from None


def is_ebcdic(ccsid: int) -> bool:
    return int(ccsid) in EBCDIC_CCSIDS


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
