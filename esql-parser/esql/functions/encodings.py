"""The one table of coded character set ids (CCSIDs): ESQL's CAST and every message domain use it."""

from __future__ import annotations

_EBCDIC_CODECS = frozenset({"cp037", "cp273", "cp424", "cp500", "cp875", "cp1026", "cp1140"})

#: IBM coded character set ids → Python codec names.
CCSID_CODECS: dict[int, str] = {
    1208: "utf-8",
    1209: "utf-8",
    1200: "utf-16-be",
    1201: "utf-16-be",
    1202: "utf-16-le",
    13488: "utf-16-be",
    17584: "utf-16-be",
    1232: "utf-32-be",
    1233: "utf-32-be",
    1234: "utf-32-le",
    367: "ascii",
    819: "latin-1",
    912: "iso8859-2",
    913: "iso8859-3",
    914: "iso8859-4",
    915: "iso8859-5",
    1089: "iso8859-6",
    813: "iso8859-7",
    916: "iso8859-8",
    920: "iso8859-9",
    923: "iso8859-15",
    437: "cp437",
    850: "cp850",
    852: "cp852",
    855: "cp855",
    857: "cp857",
    858: "cp858",
    860: "cp860",
    861: "cp861",
    862: "cp862",
    863: "cp863",
    864: "cp864",
    865: "cp865",
    866: "cp866",
    869: "cp869",
    37: "cp037",
    273: "cp273",
    424: "cp424",
    500: "cp500",
    875: "cp875",
    1026: "cp1026",
    1140: "cp1140",
    1250: "cp1250",
    1251: "cp1251",
    1252: "cp1252",
    5348: "cp1252",
    1253: "cp1253",
    1254: "cp1254",
    1255: "cp1255",
    1256: "cp1256",
    1257: "cp1257",
    1258: "cp1258",
    874: "cp874",
    932: "cp932",
    943: "cp932",
    942: "cp932",
    954: "euc_jp",
    5050: "euc_jp",
    33722: "euc_jp",
    970: "euc_kr",
    1363: "cp949",
    949: "cp949",
    950: "big5",
    1370: "big5",
    1381: "gb2312",
    1383: "gb2312",
    1386: "gbk",
    5488: "gb18030",
    1392: "gb18030",
}


#: The EBCDIC code pages among them (their XML declarations are read through the codec first).
EBCDIC_CCSIDS = frozenset(ccsid for ccsid, codec in CCSID_CODECS.items() if codec in _EBCDIC_CODECS)


def codec_for_ccsid(ccsid: int) -> str:
    from esql.values import EsqlValueError

    try:
        return CCSID_CODECS[ccsid]
    except KeyError:
        raise EsqlValueError(
            f"unsupported CCSID {ccsid} (supported include 1208 UTF-8, 1200 UTF-16, 819 ISO-8859-1, "
            "1252 Windows Latin-1, 37/500/1140 EBCDIC)"
        ) from None
