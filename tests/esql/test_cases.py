"""Language tests as data: every cases/<name>.esql runs on <name>.in.(xml|json) and must give <name>.out.*.

``.out.xml`` / ``.out.json`` hold the expected output body; ``.out.txt`` the expected
``OutputRoot.dump()``; ``.error.txt`` the expected run-time error (``line N: message`` prefix-free).
A case whose Main returns FALSE expects an empty ``.out.xml``.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from flowbroker.formats.assembly import Template, build_root, to_message

import esql.domains
from esql.compiler import compile_program
from esql.runtime import EsqlRuntimeError, ExecutionContext
from esql.tree import Element

CASES = Path(__file__).parent / "cases"
NAMES = sorted(p.stem for p in CASES.glob("*.esql"))


#: The broker attributes the cases run under, as a deployed flow's runtime passes them.
CASE_BROKER = {
    "BrokerName": "CaseBroker",
    "ExecutionGroupLabel": "CaseGroup",
    "ExecutionGroupName": "CaseGroup",
    "MessageFlowLabel": "CaseFlow",
    "QueueManagerName": "CASE.QM",
    "Family": "PYTHON",
}


def _input(name: str) -> tuple[bytes, str]:
    for suffix, domain in ((".in.xml", "XMLNSC"), (".in.json", "JSON"), (".in.blob", "BLOB")):
        path = CASES / f"{name}{suffix}"
        if path.exists():
            return path.read_bytes(), domain
    raise AssertionError(f"case {name} has no input file")


def _message(data: bytes, domain: str) -> Element:
    """The input message as an input node builds it: the body parsed by the real domain parser."""
    return build_root(None, data, Template(domain=domain))


def _body(root: Element) -> bytes:
    """The output body as an output node writes it."""
    return to_message(root)[1]


def _normal_xml(data: bytes) -> bytes:
    """The expected document as the XMLNSC parser reads it and its serializer writes it back."""
    if not data.strip():
        return b""
    body = _message(data, "XMLNSC").child("XMLNSC")
    assert body is not None
    written = Element(
        "XMLNSC", type=body.type
    )  # a parsed copy: the serializer writes the tree, not the bytes
    for kid in body.children():
        written.append_new(kid.copy())
    return esql.domains.get("XMLNSC").serialize(written, ccsid=1208, encoding=546, options={})


@pytest.mark.parametrize("name", NAMES)
def test_case(name: str) -> None:
    source = (CASES / f"{name}.esql").read_text(encoding="utf-8")
    data, domain = _input(name)
    program = compile_program(source, f"{name}.esql")
    ctx = ExecutionContext(
        input_root=_message(data, domain),
        externals={"caseName": name},
        node_name="CaseNode",
        broker=CASE_BROKER,
    )
    error_file = CASES / f"{name}.error.txt"
    if error_file.exists():
        with pytest.raises(EsqlRuntimeError) as info:
            program.main_module().run(ctx)
        assert (
            f"line {info.value.line}: {info.value.message}" == error_file.read_text(encoding="utf-8").strip()
        )
        return
    result = program.main_module().run(ctx)
    out = ctx.output_root
    if (CASES / f"{name}.out.txt").exists():
        assert out.dump().strip() == (CASES / f"{name}.out.txt").read_text(encoding="utf-8").strip()
        return
    actual = _body(out) if result is True else b""
    json_file = CASES / f"{name}.out.json"
    if json_file.exists():
        import json

        assert json.loads(actual or b"null") == json.loads(json_file.read_bytes())
        return
    expected = (CASES / f"{name}.out.xml").read_bytes()
    assert actual.decode() == _normal_xml(expected).decode()


def test_there_are_enough_cases() -> None:
    assert len(NAMES) >= 200
