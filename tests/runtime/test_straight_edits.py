"""A Compute module that copies the message and edits its JSON body, applied to the parsed body.

``esql.edits.message_edits`` must recognise exactly the modules it can describe, and
``flowbroker.formats.json.document_editor`` must give, for every body it does not decline, the
bytes the real Compute node gives through the flow runtime; it must decline every body the node
fails on.
"""

from __future__ import annotations

import json
import random
from typing import Any

import pytest
from esql.compiler import compile_program
from esql.edits import FieldEdit, MessageEdits, message_edits
from flowbroker.formats.json import document_editor
from flowbroker.runtime import assembly as assemblies
from flowbroker.runtime.harness import FlowHarness, flow
from flowbroker_nodes.base import ArrivedMessage, Unwinding


def module(*statements: str, extra: str = "", head: str = "") -> str:
    body = "\n".join(f"  {s}" for s in statements)
    return (
        f"{head}CREATE COMPUTE MODULE M\n{extra}CREATE FUNCTION Main() RETURNS BOOLEAN\nBEGIN\n{body}\nEND;\n"
        "CREATE PROCEDURE CopyEntireMessage() BEGIN\n  SET OutputRoot = InputRoot;\nEND;\n"
        "CREATE PROCEDURE CopyMessageHeaders() BEGIN\n  DECLARE I INTEGER 1;\n"
        "  DECLARE J INTEGER CARDINALITY(InputRoot.*[]);\n  WHILE I < J DO\n"
        "    SET OutputRoot.*[I] = InputRoot.*[I];\n    SET I = I + 1;\n  END WHILE;\nEND;\n"
        "END MODULE;\n"
    )


def edits_of(source: str) -> MessageEdits | None:
    return message_edits(compile_program(source).main_module("M", kind="COMPUTE"))


COPY = "SET OutputRoot = InputRoot;"
#: A flow needs an input node to compile; the tests inject at the Compute node.
INPUT: dict[str, Any] = {"q": ("MQInput", {"queueName": "Q"})}
DATA = "OutputRoot.JSON.Data"


def test_scenario_a_is_one_constant_edit() -> None:
    found = edits_of(module(COPY, f"SET {DATA}.status = 'processed';", "RETURN TRUE;"))
    assert found == MessageEdits("JSON", (FieldEdit(("status",), "processed"),))


def test_the_generated_copy_procedure_counts_as_the_copy() -> None:
    found = edits_of(module("CALL CopyEntireMessage();", f'SET {DATA}.a."b c" = 7;', "RETURN TRUE;"))
    assert found == MessageEdits("JSON", (FieldEdit(("a", "b c"), 7),))


def test_literals_input_fields_and_null() -> None:
    found = edits_of(
        module(
            COPY,
            f"SET {DATA}.s = 'it''s';",
            f"SET {DATA}.i = 9223372036854775807;",
            f"SET {DATA}.d = 1.50;",
            f"SET {DATA}.f = 2.5e3;",
            f"SET {DATA}.t = TRUE;",
            f"SET {DATA}.n = NULL;",
            f"SET {DATA}.u = UNKNOWN;",
            f"SET {DATA}.copy = InputRoot.JSON.Data.a.b;",
            "RETURN TRUE;",
        )
    )
    assert found is not None
    from decimal import Decimal

    assert [(e.path, e.value, e.source) for e in found.edits] == [
        (("s",), "it's", None),
        (("i",), 2**63 - 1, None),
        (("d",), Decimal("1.50"), None),
        (("f",), 2500.0, None),
        (("t",), True, None),
        (("n",), None, None),
        (("u",), None, None),
        (("copy",), None, ("a", "b")),
    ]


@pytest.mark.parametrize(
    "statements",
    [
        pytest.param((f"SET {DATA}.status = 'x';", "RETURN TRUE;"), id="no copy"),
        pytest.param((f"SET {DATA}.status = 'x';", COPY, "RETURN TRUE;"), id="copy not first"),
        pytest.param((COPY, f"SET {DATA}.status = 'x';", "RETURN FALSE;"), id="return false"),
        pytest.param((COPY, f"SET {DATA}.status = 'x';", "RETURN;"), id="bare return"),
        pytest.param((COPY, f"SET {DATA}.status = 'x';"), id="no return"),
        pytest.param((COPY, "DECLARE x INTEGER 1;", f"SET {DATA}.n = x;", "RETURN TRUE;"), id="declare"),
        pytest.param((COPY, f"SET {DATA}.s = 'a' || 'b';", "RETURN TRUE;"), id="expression"),
        pytest.param((COPY, f"SET {DATA}.n = -1;", "RETURN TRUE;"), id="negated literal"),
        pytest.param((COPY, f"SET {DATA}.b = X'01';", "RETURN TRUE;"), id="blob literal"),
        pytest.param((COPY, f"SET {DATA}.d = CURRENT_DATE;", "RETURN TRUE;"), id="function"),
        pytest.param((COPY, f"SET {DATA}.items[1].qty = 2;", "RETURN TRUE;"), id="index"),
        pytest.param((COPY, f"SET {DATA}.(JSON.Object)o = 2;", "RETURN TRUE;"), id="type"),
        pytest.param((COPY, "SET OutputRoot.JSON.Data = 2;", "RETURN TRUE;"), id="the document itself"),
        pytest.param((COPY, "SET OutputRoot.XMLNSC.a = 2;", "RETURN TRUE;"), id="another domain"),
        pytest.param((COPY, "SET OutputRoot.Properties.CodedCharSetId = 437;", "RETURN TRUE;"), id="header"),
        pytest.param(
            (COPY, "SET OutputLocalEnvironment.Destination.MQTT.topicName = 't';", "RETURN TRUE;"), id="local"
        ),
        pytest.param((COPY, f"SET {DATA}.x = InputRoot.JSON.Data.a[1];", "RETURN TRUE;"), id="input index"),
        pytest.param(
            (COPY, f"SET {DATA}.x = InputLocalEnvironment.MQTT.Input.Topic;", "RETURN TRUE;"),
            id="input local",
        ),
        pytest.param((COPY, f"SET {DATA}.x.(XMLNSC.Attribute)y = 1;", "RETURN TRUE;"), id="attribute"),
        pytest.param((COPY, f"SET {DATA}.x TYPE = 1;", "RETURN TRUE;"), id="set type"),
        pytest.param((COPY, f"IF TRUE THEN SET {DATA}.x = 1; END IF;", "RETURN TRUE;"), id="if"),
        pytest.param((COPY, "PROPAGATE;", "RETURN TRUE;"), id="propagate"),
        pytest.param(
            ("CALL CopyMessageHeaders();", f"SET {DATA}.x = 1;", "RETURN TRUE;"), id="header copy call"
        ),
    ],
)
def test_anything_else_is_not_an_edit(statements: tuple[str, ...]) -> None:
    assert edits_of(module(*statements)) is None


def test_declarations_and_handlers_outside_main_are_not_edits() -> None:
    plain = (COPY, f"SET {DATA}.x = 1;", "RETURN TRUE;")
    assert edits_of(module(*plain)) is not None
    assert edits_of(module(*plain, extra="DECLARE n SHARED INTEGER 0;\n")) is None
    assert edits_of(module(*plain, extra="DECLARE e EXTERNAL CHARACTER 'x';\n")) is None
    assert edits_of(module(*plain, head="DECLARE g SHARED INTEGER 0;\n")) is None
    handler = "DECLARE CONTINUE HANDLER FOR SQLSTATE LIKE '%' BEGIN END;\n"
    assert edits_of(module(*plain, extra=handler)) is None


def test_only_a_message_mode_compute_without_a_data_source_offers_its_edits() -> None:
    source = module(COPY, f"SET {DATA}.x = 1;", "RETURN TRUE;")

    def node(**props: Any) -> Any:
        h = FlowHarness(flow({"c": ("Compute", {"esql": source, **props}), **INPUT}, []))
        return h.compiled.nodes["c"]

    assert node().message_edits is not None
    assert node(computeMode="LocalEnvironmentAndMessage").message_edits is None
    assert node(dataSource="DSN").message_edits is None


# -- the editor against the Compute node ---------------------------------------------------------

#: SET statements the modules of the comparison are made of.
EDITS = [
    f"SET {DATA}.status = 'processed';",
    f"SET {DATA}.status = 'ünïcödé \"quoted\" \\ back';",
    f"SET {DATA}.n = 42;",
    f"SET {DATA}.n = 9223372036854775807;",
    f"SET {DATA}.d = 12.340;",
    f"SET {DATA}.f = 1.5e-3;",
    f"SET {DATA}.t = TRUE;",
    f"SET {DATA}.t = FALSE;",
    f"SET {DATA}.status = NULL;",
    f"SET {DATA}.a = NULL;",
    f"SET {DATA}.u = UNKNOWN;",
    f"SET {DATA}.a.b = 'deep';",
    f"SET {DATA}.a.c.d = 5;",
    f'SET {DATA}."a b" = 1;',
    f"SET {DATA}.items = 'flat';",
    f"SET {DATA}.copy = InputRoot.JSON.Data.status;",
    f"SET {DATA}.copy = InputRoot.JSON.Data.a.b;",
    f"SET {DATA}.copy = InputRoot.JSON.Data.missing;",
    f"SET {DATA}.status = InputRoot.JSON.Data.n;",
    f"SET {DATA}.a = InputRoot.JSON.Data.big;",
]


def _value(rng: random.Random, depth: int) -> Any:
    kind = rng.randrange(10 if depth < 2 else 7)
    if kind == 0:
        return rng.choice(["new", "", "ünï", 'q"uote\\', "\u2028", "x" * 50])
    if kind == 1:
        return rng.choice([0, -1, 7, 2**63 - 1, -(2**63), 2**63, 2**64 + 1, 10**30])
    if kind == 2:
        return rng.choice([0.5, -1e300, 1.0, 3.14159])
    if kind == 3:
        return rng.choice([True, False])
    if kind in (4, 5, 6):
        return None
    if kind in (7, 8):
        return {k: _value(rng, depth + 1) for k in rng.sample(KEYS, rng.randrange(4))}
    return [_value(rng, depth + 1) for _ in range(rng.randrange(3))]


KEYS = ["status", "n", "a", "b", "c", "d", "items", "a b", "big", "copy", "t"]

MALFORMED = [
    b"",
    b"   \n",
    b"{",
    b'{"status": "new",}',
    b"[1, 2]",
    b'"text"',
    b"42",
    b"null",
    b'{"a": NaN}',
    b'{"a": "\xff"}',
    b'{"status": "one", "status": "two"}',
    b'{"n": 123456789012345678901234567890}',
    b'{"n": 1e400}',
    b'\xef\xbb\xbf{"a": 1}',
    b"[" * 2000 + b"]" * 2000,
]


def _payloads() -> list[bytes]:
    rng = random.Random(1729)
    bodies = [b'{"status":"new","n":1,"a":{"b":"x","c":{"d":1}},"items":[1,2],"big":18446744073709551615}']
    for _ in range(50):
        doc = {k: _value(rng, 0) for k in rng.sample(KEYS, rng.randrange(1, 7))}
        text = json.dumps(doc, ensure_ascii=rng.random() < 0.5, indent=rng.choice([None, 1]))
        bodies.append(text.encode())
    return bodies + MALFORMED


def _modules() -> list[str]:
    rng = random.Random(4242)
    sources = [module(COPY, "RETURN TRUE;"), module("CALL CopyEntireMessage();", EDITS[0], "RETURN TRUE;")]
    sources += [module(COPY, edit, "RETURN TRUE;") for edit in EDITS]
    for _ in range(25):
        sources.append(module(COPY, *rng.sample(EDITS, rng.randrange(2, 5)), "RETURN TRUE;"))
    return sources


def _through_the_node(harness: FlowHarness, body: bytes) -> bytes | None:
    """The body the Compute node writes for an MQTT-like arrival of ``body``, None when it fails."""
    root = assemblies.build_root(ArrivedMessage(body=body), {"domain": "JSON"}, transactional=False)
    seen = harness.seen("c", "out")
    seen.clear()
    try:
        harness.inject("c", root)
        if not seen:
            return None
        return assemblies.to_body(seen[0].root)
    except Unwinding:
        return None
    except Exception:  # writing the output failed
        return None


def test_the_editor_gives_the_compute_nodes_bytes_or_declines() -> None:
    payloads = _payloads()
    compared = edited = 0
    for source in _modules():
        found = edits_of(source)
        assert found is not None, source
        editor = document_editor(found.edits)
        harness = FlowHarness(flow({"c": ("Compute", {"esql": source}), **INPUT}, []))
        try:
            for body in payloads:
                expected = _through_the_node(harness, body)
                got = editor(body)
                compared += 1
                if got is None:
                    continue
                edited += 1
                assert got == expected, (
                    f"module:\n{source}\nbody: {body[:200]!r}\nnode: {expected!r}\neditor: {got!r}"
                )
        finally:
            harness.close()
    # the comparison means something only when most bodies were edited rather than declined
    assert compared > 2000
    assert edited > compared // 2, (edited, compared)


def test_the_editor_declines_what_the_node_fails_on() -> None:
    editor = document_editor((FieldEdit(("status",), "processed"),))
    for body in MALFORMED[:10]:
        assert editor(body) is None, body


def test_with_no_edits_the_body_is_its_own_bytes() -> None:
    editor = document_editor(())
    assert editor(b'{ "a" : 1 }') == b'{ "a" : 1 }'
    assert editor(b"{not json") == b"{not json"  # the copied tree writes it unread, as the node does


def test_the_setting_turns_straight_runs_off_and_a_bad_value_fails_the_deployment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from flowbroker.runtime.compiler import FlowCompileError

    document = flow(
        {"c": ("Compute", {"esql": module(COPY, f"SET {DATA}.x = 1;", "RETURN TRUE;")}), **INPUT}, []
    )
    monkeypatch.setenv("FLOWBROKER_STRAIGHT_RUNS", "OFF ")
    assert FlowHarness(document).compiled.nodes["c"].message_edits is None
    monkeypatch.setenv("FLOWBROKER_STRAIGHT_RUNS", "on")
    assert FlowHarness(document).compiled.nodes["c"].message_edits is not None
    monkeypatch.setenv("FLOWBROKER_STRAIGHT_RUNS", "sometimes")
    with pytest.raises(FlowCompileError, match="FLOWBROKER_STRAIGHT_RUNS must be on or off, not 'sometimes'"):
        FlowHarness(document)
