"""Seed 004 Appendix C: the complex, multiple complex and very complex Compute ESQL, run verbatim."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from flowbroker.formats.assembly import to_message

from esql.compiler import compile_program
from esql.runtime import ATTRIBUTE, ExecutionContext
from esql.tree import Element, build

HERE = Path(__file__).parent / "appendix_c"


def csim_message(entries: int = 20) -> Element:
    """The CSIM.TestCase shape the report implies: Stack.ProcessingPath.Element with COMPONENT and QUEUE."""
    elements = [
        {"COMPONENT": f"Component{i:02d}", "QUEUE": f"CSIM.QUEUE.{i:02d}"} for i in range(1, entries + 1)
    ]
    return build(
        "Root",
        {
            "Properties": {"MessageDomain": "XML"},
            "MQMD": {"Format": "MQSTR   "},
            "XML": {"CSIM": {"TestCase": {"Id": "T1", "Stack": {"ProcessingPath": {"Element": elements}}}}},
        },
    )


def run(name: str, root: Element) -> Element:
    program = compile_program((HERE / name).read_text(), name)
    ctx = ExecutionContext(input_root=root)
    assert program.main_module().run(ctx) is True
    return ctx.output_root


def expected_components(entries: int) -> list[dict[str, Any]]:
    return [
        {"Name": f"Component{i:02d}", "Transport": {"Type": "A", "Queue": f"CSIM.QUEUE.{i:02d}"}}
        for i in range(1, entries + 1)
    ]


def assert_output(out: Element, entries: int = 20) -> None:
    data = out.to_data()
    test_case = data["XML"]["CSIM"]["TestCase"]
    assert data["MQMD"] == {"Format": "MQSTR   "}
    assert test_case["Id"] == "T1"
    assert len(test_case["Stack"]["ProcessingPath"]["Element"]) == entries
    assert test_case["ProcessingPath"]["Component"] == expected_components(entries)
    components = out.child("XML").child("CSIM").child("TestCase").child("ProcessingPath")
    for component in components.children_named("Component"):
        transport = component.child("Transport")
        assert transport.child("Type").type == ATTRIBUTE
        assert transport.child("Queue").type != ATTRIBUTE


def test_complex_compute_node() -> None:
    out = run("complex.esql", csim_message())
    assert_output(out)
    xml = to_message(out)[1].decode()
    assert '<Transport Type="A"><Queue>CSIM.QUEUE.01</Queue></Transport>' in xml


def test_multiple_complex_compute_nodes_daisy_chained() -> None:
    root = csim_message()
    for _ in range(5):
        root = run("complex.esql", root)
    assert_output(root)


def test_very_complex_compute_node() -> None:
    out = run("very_complex.esql", csim_message())
    assert_output(out)


def test_complex_node_on_fewer_and_no_entries() -> None:
    assert_output(run("complex.esql", csim_message(3)), entries=3)
    out = run("complex.esql", csim_message(0))
    assert out.child("XML").child("CSIM").child("TestCase").child("ProcessingPath") is None


def test_input_tree_is_not_changed() -> None:
    root = csim_message()
    before = root.dump()
    run("complex.esql", root)
    assert root.dump() == before
