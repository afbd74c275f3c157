"""A Root whose headers are still the input message's and whose body was read or changed is put as
the message's bytes with the body written anew: exactly the bytes a put of the Root written out
(descriptor fields, properties, body, then ``encode_message``) carries, whatever the message and
the output node's options. Anything else in the Root (a header read or changed, another child, an
MQRFH2, another message's Root) is written out as before."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from esql.tree import Element
from flowbroker.qm.protocol import Message, decode_message
from flowbroker.runtime import assembly as assemblies
from flowbroker.runtime.engine import FlowThread
from flowbroker.runtime.harness import FlowHarness, flow
from recording_transport import DESCRIPTOR_FIELDS, Encoded, PartsOnly, got_message


def _thread(transport: Encoded) -> FlowThread:
    harness = FlowHarness(
        flow(
            {"in": ("MQInput", {"queueName": "IN"}), "out": ("MQOutput", {"queueName": "OUT"})},
            ["in.out -> out"],
        )
    )
    thread = FlowThread(harness.deployed, harness.compiled.nodes["in"], 0)
    thread.client = transport  # type: ignore[assignment]
    return thread


def _put(
    transport: Encoded,
    message: Message,
    domain: str,
    change: Callable[[Element], Element],
    options: dict[str, Any],
    transactional: bool = True,
    pipeline: bool = True,
) -> tuple[bytes, tuple[str, str, bytes, bool, bool]]:
    thread = _thread(transport)
    thread.begin(transactional, pipeline)
    root = change(thread.build_assembly(message, {"domain": domain}).root)
    msg_id = thread.put("OUT", root, **options)
    assert len(transport.puts) == 1
    return msg_id, transport.puts[0]


def _set_field(root: Element) -> Element:
    out = root.copy()  # SET OutputRoot = InputRoot; SET OutputRoot.JSON.Data.status = 'processed';
    data = out.child("JSON").child("Data")
    status = data.child("status") or data.add("status")
    status.value = "processed"
    return out


def _read_body(root: Element) -> Element:
    out = root.copy()
    assert out.last_child is not None and out.last_child.first_child is not None
    return out


def _new_body(root: Element) -> Element:
    # the body replaced by another domain's: its Format is written as that domain gives it
    out = root.copy()
    assert out.last_child is not None
    out.last_child.detach()
    out.add("XMLNSC", type=0x01000000).add("order").add("id", "7")
    return out


def _blob_body(root: Element) -> Element:
    out = root.copy()
    out.child("BLOB").child("BLOB").value = b"changed bytes"
    return out


MESSAGES: dict[str, tuple[Callable[[], Message], str, Callable[[Element], Element]]] = {
    "json, MQSTR": (lambda: got_message(b'{"Data":{"a":1}}', format="MQSTR   "), "JSON", _set_field),
    "json, no format, properties": (
        lambda: got_message(b'{"Data":{"a":1}}', {"colour": "red", "n": 3}, format=""),
        "JSON",
        _set_field,
    ),
    "json, descriptor fields": (
        lambda: got_message(
            b'{"Data":{"status":"new"}}',
            {"k": "v"},
            **DESCRIPTOR_FIELDS,
            coded_char_set_id=819,
        ),
        "JSON",
        _set_field,
    ),
    "json, delivery properties left out": (
        lambda: got_message(b'{"Data":{}}', {"MQTopicString": "a/b", "flowbroker.reason": "x", "p": 1}),
        "JSON",
        _set_field,
    ),
    "json, body only read": (lambda: got_message(b'{"Data":{"a":[1,2]}}', {"p": 1}), "JSON", _read_body),
    "json to xml": (lambda: got_message(b'{"Data":{"a":1}}', format="MQSTR   "), "JSON", _new_body),
    "blob with its own format": (
        lambda: got_message(b"opaque", {"p": 2}, format="MYFMT   "),
        "BLOB",
        _blob_body,
    ),
    "xml": (lambda: got_message(b"<order><id>1</id></order>", format="MQSTR   "), "XMLNSC", _read_body),
}

OPTIONS: dict[str, dict[str, Any]] = {
    "as the node's defaults": {"syncpoint": None, "new_msg_id": False},
    "persistent": {"syncpoint": None, "persistence": "persistent", "new_msg_id": False},
    "non-persistent": {"syncpoint": None, "persistence": "nonPersistent", "new_msg_id": False},
    "new correl id": {"syncpoint": True, "new_correl_id": True, "new_msg_id": False},
    "correl id given": {"syncpoint": False, "correl_id": b"R" * 24, "new_msg_id": False},
    "both correl ids": {
        "syncpoint": None,
        "new_correl_id": True,
        "correl_id": b"R" * 24,
        "new_msg_id": False,
    },
}


@pytest.mark.parametrize("option", list(OPTIONS))
@pytest.mark.parametrize("name", list(MESSAGES))
def test_a_root_with_the_message_s_headers_is_put_as_a_written_out_one_would_be(
    name: str, option: str
) -> None:
    make, domain, change = MESSAGES[name]
    encoded, parts = Encoded(), PartsOnly()
    got = _put(encoded, make(), domain, change, OPTIONS[option])
    written = _put(parts, make(), domain, change, OPTIONS[option])
    assert got[1][0] == "encoded" and written[1][0] == "parts"
    assert got[0] == written[0]  # the MsgId the node learns
    assert got[1][1:] == written[1][1:]  # the queue, the bytes, syncpoint and pipelining


@pytest.mark.parametrize(("transactional", "pipeline"), [(True, True), (True, False), (False, False)])
def test_a_new_msg_id_and_the_unit_of_work_are_those_of_a_written_out_put(
    transactional: bool, pipeline: bool
) -> None:
    make, domain, change = MESSAGES["json, descriptor fields"]
    options = {"syncpoint": None}
    encoded, parts = Encoded(), PartsOnly()
    got = _put(encoded, make(), domain, change, options, transactional, pipeline)
    written = _put(parts, make(), domain, change, options, transactional, pipeline)
    assert got[1][0] == "encoded"
    assert got[0] not in (b"M" * 24, written[0]) and got[1][2][:24] == got[0]
    assert got[1][2][24:] == written[1][2][24:]
    assert got[1][3:] == written[1][3:] == (transactional, transactional and pipeline)


def _read_mqmd(root: Element) -> Element:
    out = _set_field(root)
    assert out.child("MQMD").child("Priority").value == 4
    return out


def _read_properties(root: Element) -> Element:
    out = _set_field(root)
    assert out.child("Properties").child("MessageFormat") is not None
    return out


def _extra_child(root: Element) -> Element:
    out = _set_field(root)
    out.child("JSON").prev_sibling.append(Element("Extra", 1))
    return out


def _two_bodies(root: Element) -> Element:
    out = _set_field(root)
    out.add("XMLNSC", type=0x01000000).add("a", "1")
    return out


def _another_message(root: Element) -> Element:
    # the Root of a message other than the one being processed (one a node kept, say)
    return _set_field(
        assemblies.build_root(got_message(b'{"Data":{"b":2}}', format="MQSTR   "), {"domain": "JSON"})
    )


@pytest.mark.parametrize(
    "change", [_read_mqmd, _read_properties, _extra_child, _two_bodies, _another_message]
)
def test_any_other_root_is_written_out(change: Callable[[Element], Element]) -> None:
    encoded = Encoded()
    _, put = _put(
        encoded,
        got_message(b'{"Data":{"a":1}}', {"p": 1}, format="MQSTR   "),
        "JSON",
        change,
        {"syncpoint": None},
    )
    assert put[0] == "parts"


def test_an_mqrfh2_message_is_written_out() -> None:
    from flowbroker.formats import rfh2

    header = Element("MQRFH2")
    header.add("Format", "MQSTR   ")
    header.add("usr", type=0x01000000).add("Route", "yes")
    raw = rfh2.serialize(header, encoding=546, ccsid=1208) + b'{"Data":{"a":1}}'
    encoded = Encoded()
    _, put = _put(encoded, got_message(raw, format="MQHRF2  "), "JSON", _set_field, {"syncpoint": None})
    assert put[0] == "parts"
    assert decode_message(put[2]).properties == {"Route": "yes"}
