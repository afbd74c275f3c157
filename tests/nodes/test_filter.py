"""Filter: TRUE, FALSE and UNKNOWN route the unchanged message to true, false and unknown."""

from __future__ import annotations

import pytest
from esql.tree import Element
from flowbroker.runtime.harness import FlowHarness, flow

ESQL = """CREATE FILTER MODULE ByColour
  CREATE FUNCTION Main() RETURNS BOOLEAN
  BEGIN
    RETURN Root.XMLNSC.item.colour = 'red';
  END;
END MODULE;"""


def test_three_valued_routing() -> None:
    h = FlowHarness(
        flow(
            {
                "in": ("MQInput", {"queueName": "UNUSED", "messageDomain": "XMLNSC"}),
                "f": ("Filter", {"esql": ESQL}),
            },
            ["in.out -> f"],
        )
    )
    red = h.inject("in", b"<item><colour>red</colour></item>", domain="XMLNSC")
    h.inject("in", b"<item><colour>blue</colour></item>", domain="XMLNSC")
    h.inject("in", b"<item/>", domain="XMLNSC")
    assert [a.root for a in h.seen("f", "true")] == [red.root]
    assert len(h.seen("f", "false")) == 1
    assert len(h.seen("f", "unknown")) == 1


def test_filter_on_an_rfh2_usr_tag() -> None:
    esql = "CREATE FILTER MODULE Tag CREATE FUNCTION Main() RETURNS BOOLEAN BEGIN RETURN Root.MQRFH2.usr.route = 'A'; END; END MODULE;"
    h = FlowHarness(
        flow({"in": ("MQInput", {"queueName": "UNUSED"}), "f": ("Filter", {"esql": esql})}, ["in.out -> f"])
    )
    root = h.root_for(b"x", "BLOB")
    rfh2 = Element("MQRFH2")
    rfh2.add("usr").add("route", "A")
    root.child("MQMD").insert_after(rfh2)
    h.inject("in", root)
    assert len(h.seen("f", "true")) == 1


# -- a filter that reads nothing but the MQRFH2: one answer per header content ----------------

HEADER_ONLY = "RETURN Root.MQRFH2.usr.Route = 'yes';\n"


def _rfh2_message(*folders: str, body: bytes = b"payload") -> bytes:
    """An MQRFH2 (Format MQSTR) holding these folders' texts as they are, then ``body``."""
    from flowbroker.formats import rfh2

    header = Element("MQRFH2")
    header.add("Format", "MQSTR   ")
    parts = [rfh2.serialize(header, encoding=546, ccsid=1208)]
    for text in folders:
        data = text.encode()
        data += b" " * (-len(data) % 4)
        parts.append(len(data).to_bytes(4, "little") + data)
    out = b"".join(parts)
    return out[:8] + len(out).to_bytes(4, "little") + out[12:] + body


_RFH2_MD = {"format": "MQHRF2  "}


def _harness(
    esql: str, *more: tuple[str, tuple[str, dict[str, str]]], wires: tuple[str, ...] = ()
) -> FlowHarness:
    nodes = {"in": ("MQInput", {"queueName": "UNUSED"}), "f": ("Filter", {"esql": esql}), **dict(more)}
    return FlowHarness(flow(nodes, ["in.out -> f", *wires]))


def test_the_program_reading_only_the_header_is_recognised() -> None:
    from flowbroker_nodes.filter import header_only_folder

    assert header_only_folder(HEADER_ONLY) == "MQRFH2"
    module = "CREATE FILTER MODULE Tag CREATE FUNCTION Main() RETURNS BOOLEAN BEGIN {} END; END MODULE;"
    assert header_only_folder(module.format("RETURN Root.MQRFH2.usr.Route = 'yes';")) == "MQRFH2"
    assert (
        header_only_folder(module.format("LOG EVENT VALUES('x'); RETURN Root.MQRFH2.usr.Route = 'y';"))
        is None
    )
    assert (
        header_only_folder(
            module.format("RETURN Root.MQRFH2.usr.Route = 'yes';").replace("FILTER", "COMPUTE")
        )
        is None
    )
    assert header_only_folder("RETURN Root.MQRFH2.usr.A = 1 AND NOT (Root.MQRFH2.usr.B IS NULL);") == "MQRFH2"
    for other in (
        "RETURN Root.MQRFH2.usr.Route = 'yes' AND Root.MQMD.Priority = 4;",  # another folder
        "RETURN Root.MQRFH2.usr.Route = Environment.Route;",  # another tree
        "RETURN Root.MQRFH2.usr.Route = CAST(CURRENT_TIMESTAMP AS CHARACTER);",  # a function
        "RETURN Root.MQRFH2.usr.Route[2] = 'yes';",  # an index
        "RETURN Root.MQRFH2.usr.{'Route'} = 'yes';",  # a computed name
        "DECLARE x CHARACTER 'yes';\nRETURN Root.MQRFH2.usr.Route = x;",  # a variable
        ESQL,  # a module
    ):
        assert header_only_folder(other) is None, other


@pytest.mark.parametrize(
    "esql",
    [
        HEADER_ONLY,
        "CREATE FILTER MODULE Tag CREATE FUNCTION Main() RETURNS BOOLEAN BEGIN "
        "RETURN Root.MQRFH2.usr.Route = 'yes'; END; END MODULE;",
    ],
)
def test_messages_of_one_header_content_go_out_byte_identical_with_the_header_unparsed(esql: str) -> None:
    from flowbroker.formats import assembly as formats_assembly

    h = _harness(esql)
    data = _rfh2_message("<usr><Route>yes</Route><Region>north</Region></usr>")
    first = h.inject("in", data, md=_RFH2_MD)
    second = h.inject("in", data, md=_RFH2_MD)
    assert [a.root for a in h.seen("f", "true")] == [first.root, second.root]
    # the first answer was the program's; the second is that answer again, the header never read
    assert first.root.child("MQRFH2").lazy is None
    assert second.root.child("MQRFH2").lazy is not None
    for root in (first.root, second.root):
        assert formats_assembly.relay_of(root) is not None
        fields, body = formats_assembly.to_message(root)
        assert body == data
        assert fields["format"] == "MQHRF2  "
    # a later node reads the header the program did not parse as the program would have
    assert second.root.child("MQRFH2").child("usr").child("Region").value == "north"


def test_each_header_content_has_its_own_answer() -> None:
    h = _harness(HEADER_ONLY)
    yes = _rfh2_message("<usr><Route>yes</Route></usr>")
    no = _rfh2_message("<usr><Route>no</Route></usr>")
    none = _rfh2_message("<usr><Region>north</Region></usr>")
    for data in (yes, no, none, yes, no, none, no):
        h.inject("in", data, md=_RFH2_MD)
    assert len(h.seen("f", "true")) == 2
    assert len(h.seen("f", "false")) == 3
    assert len(h.seen("f", "unknown")) == 2


def test_a_header_that_does_not_parse_fails_every_time() -> None:
    h = _harness(HEADER_ONLY)
    failures = h.tap("f", "failure")
    bad = _rfh2_message("<usr><Route>yes</usr>")
    for _ in range(2):
        h.inject("in", bad, md=_RFH2_MD)
    assert len(failures.seen) == 2
    assert not h.seen("f", "true") and not h.seen("f", "false") and not h.seen("f", "unknown")


def test_a_program_reading_more_than_the_header_answers_each_message() -> None:
    h = _harness("RETURN Root.MQRFH2.usr.Route = 'yes' AND Root.MQMD.Priority = 4;\n")
    data = _rfh2_message("<usr><Route>yes</Route></usr>")
    h.inject("in", data, md={**_RFH2_MD, "priority": 4})
    h.inject("in", data, md={**_RFH2_MD, "priority": 5})
    h.inject("in", data, md={**_RFH2_MD, "priority": 4})
    assert len(h.seen("f", "true")) == 2
    assert len(h.seen("f", "false")) == 1


def test_a_header_changed_after_the_filter_goes_out_changed() -> None:
    from flowbroker.formats import assembly as formats_assembly

    compute = (
        "CREATE COMPUTE MODULE Change CREATE FUNCTION Main() RETURNS BOOLEAN BEGIN "
        "SET OutputRoot = InputRoot; SET OutputRoot.MQRFH2.usr.Route = 'changed'; RETURN TRUE; "
        "END; END MODULE;"
    )
    h = _harness(HEADER_ONLY, ("c", ("Compute", {"esql": compute})), wires=("f.true -> c",))
    data = _rfh2_message("<usr><Route>yes</Route></usr>")
    for _ in range(2):
        h.inject("in", data, md=_RFH2_MD)
    outs = h.seen("c", "out")
    assert len(outs) == 2
    for out in outs:
        assert formats_assembly.relay_of(out.root) is None
        _, body = formats_assembly.to_message(out.root)
        assert b"<Route>changed</Route>" in body and b"yes" not in body
        assert body.endswith(b"payload")
