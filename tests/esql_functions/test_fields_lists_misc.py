"""Field, list and miscellaneous functions, and the environment the designer reads."""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest
from esql import domains
from esql.functions import ENVIRONMENT, describe, lookup
from esql.tree import Element, LazyContent
from esql.values import EsqlValueError


def call(name: str, *args: Any) -> Any:
    return ENVIRONMENT[name].impl(*args)


class LinesParser:
    """A small line-oriented domain (``name=value`` per line) used to exercise ASBITSTREAM for real."""

    domains = ("TESTLINES",)

    def fill(self, element: Element, content: LazyContent) -> None:
        text = content.data.decode("utf-8")
        for lineno, line in enumerate(text.splitlines(), 1):
            name, sep, value = line.partition("=")
            if not sep:
                raise domains.DomainError(f"line {lineno}: expected name=value", domain="TESTLINES")
            element.add(name, value)

    def attach(
        self, element: Element, data: bytes, *, ccsid: int, encoding: int, options: dict[str, Any]
    ) -> None:
        element.set_lazy(LazyContent(self, data, ccsid=ccsid, encoding=encoding, options=options))

    def serialize(self, element: Element, *, ccsid: int, encoding: int, options: dict[str, Any]) -> bytes:
        if element.lazy is not None and not options.get("folder"):
            return element.lazy.data
        from esql.functions.encodings import codec_for_ccsid

        lines = []
        for child in element.children():
            if child.has_children():
                raise domains.DomainError(f"field {child.name} is a folder", domain="TESTLINES")
            lines.append(f"{child.name}={'' if child.value is None else child.value}")
        return "".join(line + "\n" for line in lines).encode(codec_for_ccsid(ccsid))


@pytest.fixture(scope="module")
def lines_domain() -> None:
    if "TESTLINES" not in domains.known():
        domains.register(LinesParser())


def sample_tree() -> Element:
    root = Element("Root")
    body = root.add("TESTLINES")
    body.add("a", "1")
    item = body.add("item", "x", namespace="urn:test", type=0x01000000)
    body.add("item", "y")
    item.add("inner", "z")
    return root


class Ref:
    """A reference variable as the runtime keeps it: the element and the last MOVE's outcome."""

    def __init__(self, element: Element, lastmove: bool = True) -> None:
        self.element = element
        self.lastmove = lastmove


def test_field_functions_on_elements() -> None:
    root = sample_tree()
    body = root.child("TESTLINES")
    assert body is not None
    item = body.child("item")
    assert call("FIELDNAME", item) == "item"
    assert call("FIELDNAMESPACE", item) == "urn:test"
    assert call("FIELDNAMESPACE", body) == ""
    assert call("FIELDTYPE", item) == 0x01000000
    assert call("FIELDVALUE", item) == "x"
    for name in ("FIELDNAME", "FIELDNAMESPACE", "FIELDTYPE", "FIELDVALUE"):
        assert call(name, None) is None
    # a reference variable and a [] list are accepted too
    assert call("FIELDNAME", Ref(body)) == "TESTLINES"
    assert call("FIELDNAME", list(body.children_named("item"))) == "item"
    with pytest.raises(EsqlValueError, match="FIELDNAME: expected a field reference, not INTEGER 3"):
        call("FIELDNAME", 3)


def test_lastmove_and_samefield() -> None:
    root = sample_tree()
    body = root.child("TESTLINES")
    assert body is not None
    assert call("LASTMOVE", Ref(body, lastmove=False)) is False
    assert call("LASTMOVE", Ref(body, lastmove=True)) is True
    assert call("LASTMOVE", body) is True
    assert call("SAMEFIELD", Ref(body), body) is True
    assert call("SAMEFIELD", body, body.copy()) is False
    assert call("SAMEFIELD", None, body) is False
    with pytest.raises(EsqlValueError, match="LASTMOVE: expected a REFERENCE variable"):
        call("LASTMOVE", "x")


def test_list_functions() -> None:
    root = sample_tree()
    body = root.child("TESTLINES")
    assert body is not None
    items = list(body.children_named("item"))
    assert call("CARDINALITY", items) == 2
    assert call("CARDINALITY", []) == 0
    assert call("CARDINALITY", None) == 0
    assert call("EXISTS", items) is True
    assert call("EXISTS", []) is False
    assert call("SINGULAR", items) is False
    assert call("SINGULAR", items[:1]) is True
    assert call("THE", items) is items[0]
    assert call("THE", []) is None
    assert call("CARDINALITY", [1, 2, 3]) == 3
    with pytest.raises(EsqlValueError, match="CARDINALITY: expected a list"):
        call("CARDINALITY", 5)


def test_asbitstream_uses_the_domain_parser(lines_domain: None) -> None:
    root = sample_tree()
    body = root.child("TESTLINES")
    assert body is not None
    body.child("item").clear_children()  # type: ignore[union-attr]
    assert call("ASBITSTREAM", body) == b"a=1\nitem=x\nitem=y\n"
    assert call("ASBITSTREAM", body, None, 1200) == "a=1\nitem=x\nitem=y\n".encode("utf-16-be")
    assert call("ASBITSTREAM", Ref(body)) == b"a=1\nitem=x\nitem=y\n"
    assert call("BITSTREAM", body) == b"a=1\nitem=x\nitem=y\n"
    assert call("ASBITSTREAM", None) is None


def test_asbitstream_of_unparsed_body_gives_original_bytes(lines_domain: None) -> None:
    root = Element("Root")
    body = root.add("TESTLINES")
    domains.get("TESTLINES").attach(body, b"k=v\n", ccsid=1208, encoding=546, options={})
    assert call("ASBITSTREAM", body) == b"k=v\n"
    assert body.lazy is not None  # nothing was parsed to write it


def test_asbitstream_errors(lines_domain: None) -> None:
    root = sample_tree()
    body = root.child("TESTLINES")
    assert body is not None
    with pytest.raises(EsqlValueError, match=r"ASBITSTREAM of Root.TESTLINES: field item is a folder"):
        call("ASBITSTREAM", body)
    detached = Element("Row")
    detached.add("x", 1)
    with pytest.raises(EsqlValueError, match="ASBITSTREAM: Row is not under a message domain"):
        call("ASBITSTREAM", detached)
    other = Element("Root")
    nowhere = other.add("NOSUCHDOMAIN")
    with pytest.raises(EsqlValueError, match="unknown message domain 'NOSUCHDOMAIN'"):
        call("ASBITSTREAM", nowhere)


def test_misc_functions() -> None:
    assert call("COALESCE", None, None, 3, 4) == 3
    assert call("COALESCE", None) is None
    assert call("NULLIF", 1, 1) is None
    assert call("NULLIF", 1, 2) == 1
    assert call("NULLIF", "a ", "a") is None
    assert call("NULLIF", None, 1) is None
    text = call("UUIDASCHAR")
    assert uuid.UUID(text).version == 4
    blob = call("UUIDASBLOB")
    assert len(blob) == 16
    assert call("UUIDASCHAR", blob) == str(uuid.UUID(bytes=blob))
    assert call("UUIDASBLOB", text) == uuid.UUID(text).bytes
    assert call("UUIDASCHAR") != call("UUIDASCHAR")
    assert call("SLEEP", 1) is True
    with pytest.raises(EsqlValueError, match="UUIDASCHAR: a UUID BLOB has 16 bytes, not 3"):
        call("UUIDASCHAR", b"abc")
    with pytest.raises(EsqlValueError, match="UUIDASBLOB: 'nope' is not a UUID"):
        call("UUIDASBLOB", "nope")
    with pytest.raises(EsqlValueError, match="SLEEP: milliseconds must be 0 to"):
        call("SLEEP", -5)


#: Every function of the checklist that the functions area owns (the compiler handles SQLCODE and
#: friends, EVAL, PASSTHRU and the SELECT aggregates).
CHECKLIST = """
CURRENT_DATE CURRENT_TIME CURRENT_TIMESTAMP CURRENT_GMTDATE CURRENT_GMTTIME CURRENT_GMTTIMESTAMP
LOCAL_TIMEZONE EXTRACT
ABS ABSVAL ACOS ASIN ATAN ATAN2 BITAND BITNOT BITOR BITXOR CEIL CEILING COS COSH COT DEGREES EXP
FLOOR LN LOG LOG10 MOD POWER RADIANS RAND ROUND SIGN SIN SINH SQRT TAN TANH TRUNCATE
CONTAINS ENDSWITH STARTSWITH LEFT RIGHT LENGTH LOWER LCASE UPPER UCASE LTRIM RTRIM TRIM OVERLAY
POSITION REPLACE REPLICATE SPACE TRANSLATE SUBSTRING SUBSTRING_BEFORE SUBSTRING_AFTER
BASE64ENCODE BASE64DECODE
ASBITSTREAM BITSTREAM FIELDNAME FIELDNAMESPACE FIELDTYPE FIELDVALUE LASTMOVE SAMEFIELD
CARDINALITY EXISTS SINGULAR THE
COALESCE NULLIF SLEEP UUIDASBLOB UUIDASCHAR INSTANCESTOPPING
""".split()


@pytest.mark.parametrize("name", CHECKLIST)
def test_checklist_function_is_registered(name: str) -> None:
    f = ENVIRONMENT[name]
    assert f.name == name
    assert f.category in ("string", "numeric", "datetime", "field", "list", "misc")
    assert f.doc, f"{name} has no documentation"
    assert f.signature.startswith(name.split("_")[0]) or name in ("SUBSTRING_BEFORE", "SUBSTRING_AFTER")
    assert f.max_args is None or f.max_args >= f.min_args


def test_describe_is_json_and_complete() -> None:
    data = describe()
    text = json.dumps(data)
    assert json.loads(text) == data
    names = [d["name"] for d in data]
    assert names == sorted(names)
    assert set(CHECKLIST) <= set(names)
    entry = next(d for d in data if d["name"] == "ROUND")
    assert entry == {
        "name": "ROUND",
        "category": "numeric",
        "signature": "ROUND(source, places [MODE mode]) → same type",
        "minArgs": 2,
        "maxArgs": 3,
        "doc": "The source rounded to ``places`` decimal places (negative: left of the point); default ROUND_HALF_EVEN.",
    }


def test_lookup_is_case_insensitive() -> None:
    assert lookup("substring") is ENVIRONMENT["SUBSTRING"]
    assert lookup("nosuch") is None


def test_arity_bounds_match_the_implementations() -> None:
    import inspect

    for f in ENVIRONMENT.values():
        params = inspect.signature(f.impl).parameters.values()
        if any(p.kind is p.VAR_POSITIONAL for p in params):
            assert f.max_args is None, f.name
            continue
        required = sum(1 for p in params if p.default is p.empty)
        assert required == f.min_args, f.name
        assert len(list(params)) == f.max_args, f.name


def test_instancestopping_and_sleep_follow_the_stop_request() -> None:
    import threading

    from esql.functions import invocation

    assert call("INSTANCESTOPPING") is False
    stop = threading.Event()
    with invocation(stop=stop):
        assert call("INSTANCESTOPPING") is False
        assert call("SLEEP", 1) is True
        stop.set()
        assert call("INSTANCESTOPPING") is True
        # a stopping instance is not held up: SLEEP returns at once and says it was cut short
        assert call("SLEEP", 3_600_000) is False
    assert call("INSTANCESTOPPING") is False
