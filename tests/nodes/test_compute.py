"""Compute: Main() builds the output; PROPAGATE to out1–out4 and labels; compute modes; EXTERNAL values."""

from __future__ import annotations

import pytest
from flowbroker.runtime import assembly
from flowbroker.runtime.compiler import FlowCompileError
from flowbroker.runtime.harness import FlowHarness, flow
from flowbroker_nodes.base import Unwinding

MODULE = """CREATE COMPUTE MODULE Enrich
  CREATE FUNCTION Main() RETURNS BOOLEAN
  BEGIN
    SET OutputRoot = InputRoot;
    SET OutputRoot.XMLNSC.order.tag = Suffix;
    RETURN TRUE;
  END;
  DECLARE Suffix EXTERNAL CHARACTER 'default';
END MODULE;
"""


def _doc(esql: str, **props: object) -> dict:
    return flow(
        {
            "in": ("MQInput", {"queueName": "UNUSED", "messageDomain": "XMLNSC"}),
            "c": ("Compute", {"esql": esql, **props}),
        },
        ["in.out -> c"],
    )


def _body(asm) -> bytes:
    return assembly.to_message(asm.root)[1]


def test_output_message_reaches_out_and_the_input_is_untouched() -> None:
    h = FlowHarness(_doc(MODULE))
    sent = h.inject("in", b"<order><id>7</id></order>", domain="XMLNSC")
    (out,) = h.seen("c", "out")
    assert _body(out) == b"<order><id>7</id><tag>default</tag></order>"
    assert out.root is not sent.root
    assert _body(sent) == b"<order><id>7</id></order>"


def test_external_values_per_deployment_override_the_default() -> None:
    h = FlowHarness(_doc(MODULE), externals={"Suffix": "override"})
    h.inject("in", b"<order/>", domain="XMLNSC")
    assert b"<tag>override</tag>" in _body(h.seen("c", "out")[0])


def test_propagate_to_numbered_terminals_and_labels() -> None:
    esql = """CREATE COMPUTE MODULE Split
      CREATE FUNCTION Main() RETURNS BOOLEAN
      BEGIN
        DECLARE i INTEGER 1;
        WHILE i <= 2 DO
          SET OutputRoot.XMLNSC.part.n = i;
          PROPAGATE TO TERMINAL 'out1';
          SET i = i + 1;
        END WHILE;
        SET OutputRoot.XMLNSC.part.n = 99;
        PROPAGATE TO LABEL 'L';
        RETURN FALSE;
      END;
    END MODULE;"""
    doc = flow(
        {
            "in": ("MQInput", {"queueName": "UNUSED"}),
            "c": ("Compute", {"esql": esql}),
            "L": ("Label", {"labelName": "L"}),
        },
        ["in.out -> c"],
    )
    h = FlowHarness(doc)
    h.inject("in", b"x")
    assert [_body(a) for a in h.seen("c", "out1")] == [b"<part><n>1</n></part>", b"<part><n>2</n></part>"]
    assert [_body(a) for a in h.seen("L", "out")] == [b"<part><n>99</n></part>"]
    assert h.seen("c", "out") == []


@pytest.mark.parametrize(
    ("mode", "local_out", "exceptions_out"),
    [
        ("Message", False, False),
        ("LocalEnvironment", True, False),
        ("Exception", False, True),
        ("All", True, True),
    ],
)
def test_the_output_local_environment_and_exception_list_are_made_only_when_the_mode_sends_them(
    mode: str, local_out: bool, exceptions_out: bool
) -> None:
    esql = """CREATE COMPUTE MODULE Plain
      CREATE FUNCTION Main() RETURNS BOOLEAN
      BEGIN
        SET OutputRoot = InputRoot;
        RETURN TRUE;
      END;
    END MODULE;"""
    h = FlowHarness(_doc(esql, computeMode=mode))
    sent = h.inject("in", b"<a/>", domain="XMLNSC")
    (out,) = h.seen("c", "out")
    # what the mode does not send is the input's own tree, and the module made no empty one
    assert (out.local_environment is sent.local_environment) is not local_out
    assert (out.exception_list is sent.exception_list) is not exceptions_out
    (ctx,) = h.compiled.nodes["c"]._settings[8]  # the context kept for the thread's next message
    assert (ctx._output_local_environment is not None) is local_out
    assert (ctx._output_exception_list is not None) is exceptions_out


def test_local_environment_mode_keeps_the_input_message() -> None:
    esql = """CREATE COMPUTE MODULE Env
      CREATE FUNCTION Main() RETURNS BOOLEAN
      BEGIN
        SET OutputLocalEnvironment.Destination.MQ.DestinationData.queueName = 'Q1';
        RETURN TRUE;
      END;
    END MODULE;"""
    h = FlowHarness(_doc(esql, computeMode="LocalEnvironment"))
    sent = h.inject("in", b"<a/>", domain="XMLNSC")
    (out,) = h.seen("c", "out")
    assert out.root is sent.root
    assert (
        out.local_environment.child("Destination")
        .child("MQ")
        .child("DestinationData")
        .child("queueName")
        .value
        == "Q1"
    )


def test_runtime_error_unwinds_with_an_exception_list_naming_the_node() -> None:
    esql = """CREATE COMPUTE MODULE Div
      CREATE FUNCTION Main() RETURNS BOOLEAN
      BEGIN
        SET OutputRoot.XMLNSC.r = 1 / 0;
        RETURN TRUE;
      END;
    END MODULE;"""
    h = FlowHarness(_doc(esql))
    with pytest.raises(Unwinding) as info:
        h.inject("in", b"<a/>", domain="XMLNSC")
    entry = info.value.exception_list.first_child
    assert entry.child("Name").value == "c"
    assert "zero" in entry.child("Text").value.lower()


def test_failure_terminal_takes_a_runtime_error() -> None:
    esql = "CREATE COMPUTE MODULE T CREATE FUNCTION Main() RETURNS BOOLEAN BEGIN THROW USER EXCEPTION VALUES('nope'); END; END MODULE;"
    doc = flow(
        {
            "in": ("MQInput", {"queueName": "UNUSED"}),
            "c": ("Compute", {"esql": esql}),
            "f": ("Passthrough", {}),
        },
        ["in.out -> c", "c.failure -> f"],
    )
    h = FlowHarness(doc)
    h.inject("in", b"x")
    (failed,) = h.seen("f", "out")
    assert failed.exception_list.first_child is not None


def test_esql_syntax_error_fails_deployment_with_line_and_column() -> None:
    bad = "CREATE COMPUTE MODULE Bad\n  CREATE FUNCTION Main() RETURNS BOOLEAN\n  BEGIN\n    SET OutputRoot = ;\n  END;\nEND MODULE;"
    with pytest.raises(FlowCompileError) as info:
        FlowHarness(_doc(bad))
    problem = info.value.problems[0]
    assert (problem.node, problem.property, problem.line) == ("c", "esql", 4)
    assert problem.column > 0


def test_missing_esql_is_reported() -> None:
    with pytest.raises(FlowCompileError) as info:
        FlowHarness(_doc(""))
    assert info.value.problems[0].node == "c" and info.value.problems[0].property == "esql"


def _entries(entry) -> list:
    """The chain of nested exception entries from ``entry`` inwards."""
    chain = []
    while entry is not None:
        chain.append(entry)
        entry = next((kid for kid in entry.children() if kid.name.endswith("Exception")), None)
    return chain


def _inserts(entry) -> list[tuple[int, str]]:
    return [(i.child("Type").value, i.child("Text").value) for i in entry.children_named("Insert")]


def test_a_malformed_body_read_in_esql_nests_a_positioned_parser_exception() -> None:
    esql = """CREATE COMPUTE MODULE Reader
      CREATE FUNCTION Main() RETURNS BOOLEAN
      BEGIN
        SET OutputRoot.XMLNSC.copy = InputRoot.XMLNSC.order.id;
        RETURN TRUE;
      END;
    END MODULE;
    """
    h = FlowHarness(_doc(esql))
    with pytest.raises(Unwinding) as info:
        h.inject("in", b"<order>\n<id>7</id\n</order>", domain="XMLNSC")
    node, parser = _entries(info.value.exception_list.first_child)
    assert (node.name, node.child("Number").value, node.child("Label").value) == (
        "RecoverableException",
        2488,
        "c",
    )
    assert parser.name == "ParserException" and parser.child("Number").value == 5285
    assert _inserts(parser) == [(5, "XMLNSC"), (5, "Root.XMLNSC"), (2, "18")]
    assert "line 3, column 1 (byte offset 18)" in parser.child("Text").value
    assert str(info.value).endswith("; caused by ParserException in c: " + parser.child("Text").value)


def test_throw_user_exception_records_its_number_and_values_as_inserts() -> None:
    esql = """CREATE COMPUTE MODULE Refuse
      CREATE FUNCTION Main() RETURNS BOOLEAN
      BEGIN
        THROW USER EXCEPTION MESSAGE 2999 VALUES('nope', 42);
      END;
    END MODULE;
    """
    h = FlowHarness(_doc(esql))
    with pytest.raises(Unwinding) as info:
        h.inject("in", b"<order/>", domain="XMLNSC")
    (entry,) = _entries(info.value.exception_list.first_child)
    assert (entry.name, entry.child("Number").value, entry.child("Catalog").value) == (
        "UserException",
        2999,
        "BIPmsgs",
    )
    assert _inserts(entry) == [(5, "nope"), (2, "42")]


def test_a_compute_node_entered_again_by_its_own_propagate_keeps_each_invocations_trees() -> None:
    esql = """CREATE COMPUTE MODULE Nest
      CREATE FUNCTION Main() RETURNS BOOLEAN
      BEGIN
        DECLARE d INTEGER COALESCE(Environment.depth, 0);
        SET Environment.depth = d + 1;
        SET OutputRoot = InputRoot;
        SET OutputRoot.XMLNSC.m.before = d;
        IF d < 2 THEN
          PROPAGATE TO LABEL 'again' DELETE NONE;
        END IF;
        SET OutputRoot.XMLNSC.m.after = d;
        SET OutputLocalEnvironment.depth = d;
        RETURN TRUE;
      END;
    END MODULE;"""
    doc = flow(
        {
            "in": ("MQInput", {"queueName": "UNUSED", "messageDomain": "XMLNSC"}),
            "c": ("Compute", {"esql": esql, "computeMode": "LocalEnvironmentAndMessage"}),
            "L": ("Label", {"labelName": "again"}),
        },
        ["in.out -> c", "L.out -> c"],
    )
    h = FlowHarness(doc)
    for _ in range(2):  # the second message runs on contexts the first gave back
        h.tap("c", "out").seen.clear()
        h.inject("in", b"<m/>", domain="XMLNSC")
        outs = h.seen("c", "out")
        # innermost first: each invocation's output and LocalEnvironment are its own
        assert [_body(a) for a in outs] == [
            f"<m><before>{d}</before><after>{d}</after></m>".encode() for d in (2, 1, 0)
        ]
        assert [a.local_environment.child("depth").value for a in outs] == [2, 1, 0]


def test_a_renewed_context_starts_each_message_afresh() -> None:
    esql = """CREATE COMPUTE MODULE Fresh
      CREATE FUNCTION Main() RETURNS BOOLEAN
      BEGIN
        IF InputRoot.XMLNSC.m.mark = 'yes' THEN
          SET OutputLocalEnvironment.marked = TRUE;
          SET OutputExceptionList.note = 'first';
        END IF;
        SET OutputRoot.XMLNSC.out.count = CARDINALITY(OutputLocalEnvironment.*[]);
        SET OutputRoot.XMLNSC.out.notes = CARDINALITY(OutputExceptionList.*[]);
        RETURN TRUE;
      END;
    END MODULE;"""
    h = FlowHarness(_doc(esql, computeMode="All"))
    h.inject("in", b"<m><mark>yes</mark></m>", domain="XMLNSC")
    h.inject("in", b"<m><mark>no</mark></m>", domain="XMLNSC")
    first, second = h.seen("c", "out")
    assert _body(first) == b"<out><count>1</count><notes>1</notes></out>"
    assert first.local_environment.child("marked").value is True
    assert _body(second) == b"<out><count>0</count><notes>0</notes></out>"
    assert second.local_environment.child("marked") is None
    assert second.exception_list.child("note") is None
