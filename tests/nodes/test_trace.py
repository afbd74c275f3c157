"""Trace: ${…} references rendered against the assembly, written to a file or the user trace."""

from __future__ import annotations

from pathlib import Path

import pytest
from flowbroker.runtime.compiler import FlowCompileError
from flowbroker.runtime.harness import FlowHarness, with_input


def test_pattern_goes_to_the_file(tmp_path: Path) -> None:
    out = tmp_path / "trace.txt"
    doc = with_input(
        {
            "t": (
                "Trace",
                {
                    "destination": "file",
                    "filePath": str(out),
                    "pattern": "body=${Root.BLOB.BLOB} none=[${Root.Nope}] q=${Root.MQMD.ReplyToQ}",
                },
            )
        },
        [],
        first="t",
    )
    h = FlowHarness(doc)
    h.inject("in", b"abc", md={"reply_to_q": "REPLY.Q"})
    assert out.read_text() == "body=b'abc' none=[] q=REPLY.Q\n"
    assert len(h.seen("t", "out")) == 1


def test_tree_reference_dumps_the_subtree(tmp_path: Path) -> None:
    out = tmp_path / "t.txt"
    h = FlowHarness(
        with_input(
            {"t": ("Trace", {"destination": "file", "filePath": str(out), "pattern": "${Root.MQMD}"})},
            [],
            first="t",
        )
    )
    h.inject("in", b"abc")
    text = out.read_text()
    assert text.startswith("MQMD") and "BackoutCount" in text


def test_user_trace_destination(tmp_path: Path) -> None:
    path = tmp_path / "flow.trace"
    h = FlowHarness(
        with_input({"t": ("Trace", {"pattern": "hello ${Root.BLOB.BLOB}"})}, [], first="t"), trace_path=path
    )
    h.inject("in", b"z")
    h.deployed.trace.flush()
    assert "hello b'z'" in path.read_text()


def test_bad_reference_fails_the_deployment_with_its_offset() -> None:
    doc = with_input({"t": ("Trace", {"pattern": "ok ${Bogus.X}"})}, [], first="t")
    with pytest.raises(FlowCompileError) as info:
        FlowHarness(doc)
    problem = info.value.problems[0]
    assert (problem.node, problem.property) == ("t", "pattern")
    assert "at offset 3" in problem.message


def test_file_destination_needs_a_path() -> None:
    with pytest.raises(FlowCompileError) as info:
        FlowHarness(with_input({"t": ("Trace", {"destination": "file"})}, [], first="t"))
    assert info.value.problems[0].property == "filePath"


def test_an_esql_expression_is_evaluated_as_ace_trace_takes_it(tmp_path: Path) -> None:
    out = tmp_path / "t.txt"
    pattern = (
        "n=${COALESCE(Root.Nope, 'none')} up=${UPPER(CAST(Root.BLOB.BLOB AS CHARACTER CCSID 1208))} "
        "bits=${CAST(ASBITSTREAM(Root.BLOB OPTIONS BITOR(FolderBitStream, ValidateNone)) AS CHARACTER CCSID 1208)}"
        " len=${LENGTH(Root.BLOB.BLOB) + 1}"
    )
    h = FlowHarness(
        with_input(
            {"t": ("Trace", {"destination": "file", "filePath": str(out), "pattern": pattern})}, [], first="t"
        )
    )
    h.inject("in", b"abc")
    assert out.read_text() == "n=none up=ABC bits=abc len=4\n"


def test_an_expression_that_does_not_compile_names_its_offset_and_the_reason() -> None:
    doc = with_input({"t": ("Trace", {"pattern": "x ${CAST(Root AS)}"})}, [], first="t")
    with pytest.raises(FlowCompileError) as info:
        FlowHarness(doc)
    problem = info.value.problems[0]
    assert problem.property == "pattern"
    assert problem.message.startswith(
        "${CAST(Root AS)} at offset 2: not a field reference, and as an ESQL expression: "
    )
