"""Conversions written in ESQL, as a Compute node runs them: XMLNSC ↔ MRM, PARSE and ASBITSTREAM through the registry."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from esql import compiler, runtime
from esql.domains import DomainError
from esql.tree import Element
from flowbroker.formats import assembly
from flowbroker.formats.errors import parser_exception
from flowbroker.formats.mrm import CATALOG

SET = {
    "types": {
        "T": {
            "elements": [
                {"name": "A", "type": "integer", "cwf": {"repr": "display", "length": 4, "signed": False}},
                {"name": "B", "type": "string", "cwf": {"length": 8}},
            ]
        }
    }
}


@dataclass
class Descriptor:
    msg_id: bytes = b"\x00" * 24
    correl_id: bytes = b"\x00" * 24
    persistence: int = 0
    priority: int = 0
    expiry: int = -1
    reply_to_q: str = ""
    reply_to_q_mgr: str = ""
    format: str = "MQSTR   "
    encoding: int = 546
    coded_char_set_id: int = 1208
    put_time: float = 0.0
    backout_count: int = 0
    group_id: bytes = b"\x00" * 24


def run(source: str, root: Element) -> tuple[Element, Element]:
    out, env = Element("Root"), Element("Environment")
    ctx = runtime.ExecutionContext(
        input_root=root,
        input_local_environment=Element("LocalEnvironment"),
        input_exception_list=Element("ExceptionList"),
        environment=env,
        output_root=out,
        output_local_environment=Element("LocalEnvironment"),
        output_exception_list=Element("ExceptionList"),
    )
    compiler.compile_program(source).main_module(None, "COMPUTE").run(ctx)
    return out, env


TO_MRM = """
SET OutputRoot.Properties = InputRoot.Properties;
SET OutputRoot.Properties.MessageSet = 'ESQLSET';
SET OutputRoot.Properties.MessageType = 'T';
SET OutputRoot.Properties.MessageFormat = 'CWF';
SET OutputRoot.MRM = InputRoot.XMLNSC.Msg;
"""


def test_xmlnsc_to_cwf_and_back_by_esql() -> None:
    CATALOG.install("ESQLSET", SET)
    root = assembly.build_root(Descriptor(), b"<Msg><A>12</A><B>hi</B></Msg>", assembly.Template("XMLNSC"))
    out, _ = run(TO_MRM, root)
    _, body = assembly.to_message(out)
    assert body == b"0012hi      "
    back_in = assembly.build_root(Descriptor(), body, assembly.Template("MRM", "ESQLSET", "T", "CWF"))
    back, _ = run(
        "SET OutputRoot.Properties = InputRoot.Properties;\nSET OutputRoot.Properties.MessageFormat = '';\n"
        "SET OutputRoot.XMLNSC.Msg = InputRoot.MRM;\n",
        back_in,
    )
    assert assembly.to_message(back)[1] == b"<Msg><A>12</A><B>hi</B></Msg>"


def test_parse_and_asbitstream_use_the_registered_parsers() -> None:
    root = assembly.build_root(
        Descriptor(), b"<Msg><A>1</A><B><C>x</C></B></Msg>", assembly.Template("XMLNSC")
    )
    source = (
        "SET Environment.Bits = ASBITSTREAM(InputRoot.XMLNSC.Msg.B);\n"
        "CREATE LASTCHILD OF Environment DOMAIN('XMLNSC') PARSE(CAST('<x><y>5</y></x>' AS BLOB CCSID 1208));\n"
    )
    _, env = run(source, root)
    assert env.child("Bits").value == b"<B><C>x</C></B>"  # type: ignore[union-attr]
    assert env.child("XMLNSC").child("x").child("y").value == "5"  # type: ignore[union-attr]


def test_value_that_does_not_fit_and_unknown_field_fail_on_output() -> None:
    CATALOG.install("ESQLSET", SET)
    root = assembly.build_root(
        Descriptor(), b"<Msg><A>123456</A><B>hi</B></Msg>", assembly.Template("XMLNSC")
    )
    out, _ = run(TO_MRM, root)
    with pytest.raises(DomainError) as info:
        assembly.to_message(out)
    assert info.value.path == "Root.MRM.A" and info.value.offset == 0
    root = assembly.build_root(
        Descriptor(), b"<Msg><A>1</A><B>hi</B><Z>?</Z></Msg>", assembly.Template("XMLNSC")
    )
    out, _ = run(TO_MRM, root)
    with pytest.raises(DomainError, match="'Z' is not an element of type 'T'"):
        assembly.to_message(out)


def test_bad_input_surfaces_as_a_positioned_parser_exception() -> None:
    root = assembly.build_root(Descriptor(), b"<Msg><A>1</A></Mgs>", assembly.Template("XMLNSC"))
    with pytest.raises(Exception) as info:
        run(TO_MRM, root)
    cause: BaseException | None = info.value
    while cause is not None and not isinstance(cause, DomainError):
        cause = cause.__cause__
    assert isinstance(cause, DomainError)
    entry = parser_exception(cause, node_label="Convert")
    inserts = [kid.child("Text").value for kid in entry.children_named("Insert")]  # type: ignore[union-attr]
    assert inserts == ["XMLNSC", "Root.XMLNSC", "19"]  # libxml2 notices at the end of the bad tag
    assert "byte offset 19" in entry.child("Text").value  # type: ignore[union-attr]


@pytest.mark.parametrize("domain", ["XML", "XMLNS"])
def test_generic_xml_elements_read_as_their_text_in_esql(domain: str) -> None:
    """<F01>abc</F01> in the XML and XMLNS domains is a name element whose text is a value child;
    ESQL reads the element as that text, as IBM's brokers do, for functions and comparisons."""
    data = b"<Msg><F01>abc</F01><Mixed>one<!-- note --><b/>two</Mixed><Empty/></Msg>"
    root = assembly.build_root(Descriptor(), data, assembly.Template(domain))
    source = f"""
    SET OutputRoot.XMLNSC.O.Upper = UPPER(InputRoot.{domain}.Msg.F01);
    SET OutputRoot.XMLNSC.O.Equal = InputRoot.{domain}.Msg.F01 = 'abc';
    SET OutputRoot.XMLNSC.O.Mixed = InputRoot.{domain}.Msg.Mixed || '';
    SET OutputRoot.XMLNSC.O.EmptyIsNull = InputRoot.{domain}.Msg.Empty IS NULL;
    """
    out, _ = run(source, root)
    o = out.child("XMLNSC").child("O")  # type: ignore[union-attr]
    assert o is not None
    assert [(kid.name, kid.value) for kid in o.children()] == [
        ("Upper", "ABC"),
        ("Equal", True),
        ("Mixed", "onetwo"),
        ("EmptyIsNull", True),
    ]
