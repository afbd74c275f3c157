"""PythonCompute: main(ctx) builds the output, propagates to out1–out4, and fails like ESQL does."""

from __future__ import annotations

import pytest
from flowbroker.runtime import assembly
from flowbroker.runtime.compiler import FlowCompileError
from flowbroker.runtime.harness import FlowHarness, flow
from flowbroker.services import validation
from flowbroker_nodes.base import Unwinding

ENRICH = """\
COUNT = {"loaded": 0}
COUNT["loaded"] += 1


def main(ctx):
    ctx.copy_message()
    order = ctx.output_root.last_child.child("order")
    order.add("loaded", COUNT["loaded"])
    ctx.output_local_environment.add("Seen").add("by", ctx.node_name)
    ctx.environment.add("total", order.child("qty").value)
    return True
"""

SPLIT = """\
def main(ctx):
    for item in ctx.input_root.last_child.child("order").children_named("item"):
        ctx.output_root.add("XMLNSC", type=0x01000000).add("part").add("n", item.value)
        ctx.propagate("out1")
    ctx.output_root.add("XMLNSC", type=0x01000000).add("done")
    ctx.propagate("out2")
    return False
"""


def _doc(code: str) -> dict:
    return flow(
        {
            "in": ("MQInput", {"queueName": "UNUSED", "messageDomain": "XMLNSC"}),
            "p": ("PythonCompute", {"code": code}),
        },
        ["in.out -> p"],
    )


def _body(asm) -> bytes:
    return assembly.to_message(asm.root)[1]


def test_main_builds_the_output_and_true_sends_it_to_out() -> None:
    h = FlowHarness(_doc(ENRICH))
    sent = h.inject("in", b"<order><qty>3</qty></order>", domain="XMLNSC")
    h.inject("in", b"<order><qty>4</qty></order>", domain="XMLNSC")
    first, second = h.seen("p", "out")
    # the module body ran once for the deployment, not once per message
    assert _body(first) == b"<order><qty>3</qty><loaded>1</loaded></order>"
    assert _body(second) == b"<order><qty>4</qty><loaded>1</loaded></order>"
    assert first.local_environment.child("Seen").child("by").value == "p"
    assert first.environment.child("total").value == "3"
    # the input message is untouched, and its LocalEnvironment did not get the output's change
    assert _body(sent) == b"<order><qty>3</qty></order>"
    assert sent.local_environment.child("Seen") is None


def test_propagate_to_numbered_terminals_clears_the_output_each_time() -> None:
    h = FlowHarness(_doc(SPLIT))
    h.inject("in", b"<order><item>a</item><item>b</item></order>", domain="XMLNSC")
    assert [_body(a) for a in h.seen("p", "out1")] == [b"<part><n>a</n></part>", b"<part><n>b</n></part>"]
    assert [_body(a) for a in h.seen("p", "out2")] == [b"<done/>"]
    assert h.seen("p", "out") == []


def test_an_exception_goes_to_failure_with_the_exception_list_filled() -> None:
    code = "def main(ctx):\n    ctx.propagate('out1')\n    x = {}\n    return x['missing']\n"
    h = FlowHarness(_doc(code))
    failures = h.tap("p", "failure")
    h.inject("in", b"<order/>", domain="XMLNSC")
    (failed,) = failures.seen
    entry = failed.exception_list.first_child
    assert entry.name == "RecoverableException"
    assert entry.child("Name").value == "p"
    assert entry.child("Text").value == "PythonCompute node p: main() raised KeyError: 'missing' at line 4"
    assert h.seen("p", "out") == []


@pytest.mark.parametrize(
    "raising", ["raise SystemExit(3)", "raise KeyboardInterrupt", "import sys; sys.exit()"]
)
def test_exit_from_the_code_fails_the_message_and_not_the_thread(raising: str) -> None:
    h = FlowHarness(_doc(f"def main(ctx):\n    {raising}\n"))
    with pytest.raises(Unwinding) as caught:
        h.inject("in", b"<order/>", domain="XMLNSC")
    text = caught.value.exception_list.first_child.child("Text").value
    assert "main() raised" in text and "at line 2" in text
    # the node goes on serving the next message
    with pytest.raises(Unwinding):
        h.inject("in", b"<order/>", domain="XMLNSC")
    assert h.compiled.nodes["p"].stats.errors == 2


def test_unknown_terminal_and_label_are_failures() -> None:
    h = FlowHarness(_doc("def main(ctx):\n    ctx.propagate('out9')\n"))
    failures = h.tap("p", "failure")
    h.inject("in", b"<x/>", domain="XMLNSC")
    assert "no such terminal" in failures.seen[0].exception_list.first_child.child("Text").value


def test_a_syntax_error_is_refused_at_deploy_and_save_with_line_and_column() -> None:
    code = "def main(ctx):\n    return (1 +\n\ndef other(:\n    pass\n"
    with pytest.raises(FlowCompileError) as caught:
        FlowHarness(_doc(code))
    (problem,) = caught.value.problems
    assert (problem.node, problem.property) == ("p", "code")
    assert problem.line == 4 and problem.column > 0
    assert "syntax error" in problem.message
    saved = validation.problems(_doc(code))
    assert [(p["node"], p["property"], p["line"], p["column"]) for p in saved] == [
        ("p", "code", problem.line, problem.column)
    ]


def test_a_module_without_main_is_refused() -> None:
    with pytest.raises(FlowCompileError) as caught:
        FlowHarness(_doc("def evaluate(ctx):\n    return True\n"))
    assert "main(ctx)" in caught.value.problems[0].message


def test_checking_the_code_does_not_run_it(tmp_path) -> None:
    marker = tmp_path / "ran"
    code = f"open({str(marker)!r}, 'w').close()\n\ndef main(ctx):\n    return True\n"
    assert validation.problems(_doc(code)) == []
    assert not marker.exists()


def test_propagate_to_a_label_and_a_module_body_that_fails_on_load() -> None:
    code = "def main(ctx):\n    ctx.copy_message()\n    ctx.propagate_to_label('L')\n"
    doc = flow(
        {
            "in": ("MQInput", {"queueName": "UNUSED", "messageDomain": "XMLNSC"}),
            "p": ("PythonCompute", {"code": code}),
            "L": ("Label", {"labelName": "L"}),
        },
        ["in.out -> p"],
    )
    h = FlowHarness(doc)
    h.inject("in", b"<a>1</a>", domain="XMLNSC")
    assert [_body(a) for a in h.seen("L", "out")] == [b"<a>1</a>"]

    broken = FlowHarness(_doc("import no_such_module_here\n\ndef main(ctx):\n    return True\n"))
    failures = broken.tap("p", "failure")
    broken.inject("in", b"<a/>", domain="XMLNSC")
    text = failures.seen[0].exception_list.first_child.child("Text").value
    assert text.startswith("PythonCompute node p: loading the module raised ModuleNotFoundError")
    assert text.endswith("at line 1")
