"""An untouched Root is put again as the bytes it arrived in: the same message as writing it out.

``relay_of`` recognises a Root that is still exactly the message it was built from; the relayed
bytes (``relay_encoding``) must decode to what ``to_message`` + ``encode_message`` would have
put, and any change to the Root must make ``relay_of`` refuse, so the change reaches the output.
"""

from __future__ import annotations

from typing import Any

import pytest
from esql.tree import Element
from flowbroker.formats import assembly as formats_assembly
from flowbroker.formats import mqmd, rfh2
from flowbroker.qm.protocol import (
    Message,
    MessageDescriptor,
    QMError,
    decode_message,
    encode_message,
    relay_encoding,
)
from flowbroker.runtime import assembly as assemblies
from flowbroker.runtime.transports import descriptor

NEW_ID = b"NEWID".ljust(24, b"\x00")


def _header(usr: dict[str, str], inner_format: str = "MQSTR   ") -> bytes:
    header = Element("MQRFH2")
    header.add("Format", inner_format)
    folder = header.add("usr", type=0x01000000)
    for key, value in usr.items():
        folder.add(key, value)
    return rfh2.serialize(header, encoding=546, ccsid=1208)


def _got(body: bytes, properties: dict[str, Any] | None = None, **md: Any) -> Message:
    """A message as a get returns it: decoded from its wire form, which it keeps."""
    fields = {"persistence": 0, "priority": 4, "put_time": 1_700_000_000.5, **md}
    return decode_message(encode_message(MessageDescriptor(**fields), properties, body))


def _root(message: Message, domain: str = "BLOB") -> Element:
    return assemblies.build_root(message, {"domain": domain})


def _written(root: Element, message: Message) -> Message:
    """What a put of the Root written out (the path without relay) carries."""
    fields, body = assemblies.to_message(root)
    md = descriptor(**fields)
    return decode_message(encode_message(md, dict(message.properties), body, NEW_ID))


def _relayed(root: Element, message: Message) -> Message:
    relay = formats_assembly.relay_of(root)
    assert relay is not None and relay.message is message
    return decode_message(relay_encoding(message.raw, message.md, NEW_ID, format=relay.format))


def _same(a: Message, b: Message) -> None:
    assert a.md == b.md
    assert a.properties == b.properties
    assert a.body == b.body


CASES = {
    "blob, no format": (b"\x00\x01 opaque", {}, {"format": ""}, "BLOB"),
    "blob with properties and descriptor fields": (
        b"payload",
        {"colour": "red", "n": 3},
        {
            "correl_id": b"C" * 24,
            "reply_to_q": "REPLY.Q",
            "expiry": 600,
            "encoding": 273,
            "coded_char_set_id": 819,
        },
        "BLOB",
    ),
    "json said as a string": (b'{"a":1}', {}, {"format": "MQSTR   "}, "JSON"),
    "json with no format (written as MQSTR)": (b'{"a":1}', {}, {"format": ""}, "JSON"),
    "xml with a short MQSTR format": (b"<a>1</a>", {}, {"format": "MQSTR"}, "XMLNSC"),
}


@pytest.mark.parametrize("name", list(CASES))
def test_an_untouched_root_relays_the_message_a_write_would_put(name: str) -> None:
    body, properties, md, domain = CASES[name]
    message = _got(body, properties, **md)
    root = _root(message, domain)
    _same(_relayed(root, message), _written(root, message))


@pytest.mark.parametrize("fmt", ["MQHRF2  ", "MQHRF2"])
def test_an_mqrfh2_message_relays_unread_or_read_unchanged(fmt: str) -> None:
    raw = _header({"Route": "yes", "Region": "north"}) + b"f" * 200
    unread = _got(raw, format=fmt)
    root = _root(unread)
    relayed = _relayed(root, unread)
    _same(relayed, _written(root, unread))
    assert relayed.md.format == "MQHRF2  " and relayed.body == raw

    read = _got(raw, format=fmt)
    root = _root(read)
    assert root.child("MQRFH2").child("usr").child("Region").value == "north"  # a filter's read
    _same(_relayed(root, read), _written(root, read))


def test_a_copy_of_an_unread_root_still_relays() -> None:
    message = _got(b"x" * 64, {"k": "v"})
    root = _root(message)
    copy = root.copy()  # SET OutputRoot = InputRoot
    _same(_relayed(copy, message), _written(copy, message))


def _touch_mqmd(root: Element) -> None:
    root.child("MQMD").child("Priority").value = 9


def _read_mqmd(root: Element) -> None:
    assert root.child("MQMD").child("Priority").value == 4


def _set_property(root: Element) -> None:
    root.child("Properties").child("MessageFormat").value = "CWF"


def _read_body(root: Element) -> None:
    assert root.child("BLOB").child("BLOB").value


def _replace_body(root: Element) -> None:
    root.child("BLOB").child("BLOB").value = b"changed"


def _add_header(root: Element) -> None:
    root.child("BLOB").prev_sibling.append(Element("Extra", 1))


def _add_root_child(root: Element) -> None:
    root.add("XMLNSC", type=0x01000000).add("a", "1")


def _remove_properties(root: Element) -> None:
    root.child("Properties").detach()


def _rename_body(root: Element) -> None:
    root.child("BLOB").name = "JSON"


@pytest.mark.parametrize(
    "change",
    [
        _touch_mqmd,
        _read_mqmd,
        _set_property,
        _read_body,
        _replace_body,
        _add_header,
        _add_root_child,
        _remove_properties,
        _rename_body,
    ],
)
def test_a_read_or_changed_root_is_written_out_not_relayed(change: Any) -> None:
    message = _got(b"original body")
    root = _root(message)
    change(root)
    assert formats_assembly.relay_of(root) is None


def test_a_changed_mqrfh2_is_not_relayed() -> None:
    message = _got(_header({"Route": "yes"}) + b"body", format="MQHRF2  ")
    root = _root(message)
    root.child("MQRFH2").child("usr").child("Route").value = "no"
    assert formats_assembly.relay_of(root) is None
    fields, body = assemblies.to_message(root)
    assert b"<Route>no</Route>" in body


def test_a_root_built_without_its_message_is_never_relayed() -> None:
    # a Root an output node built from nothing
    assert formats_assembly.relay_of(Element("Root")) is None


def test_a_message_with_no_wire_form_relays_its_own_parts() -> None:
    # as a RabbitMQ delivery is: no bytes to put again, but its descriptor fields and body are
    # what writing the untouched Root out gives
    made = Message(MessageDescriptor(format="", priority=6, correl_id=b"K" * 24), {}, b"made")
    root = _root(made)
    relay = formats_assembly.relay_of(root)
    assert relay is not None and relay.message is made
    fields, body = assemblies.to_message(root)
    assert mqmd.descriptor_fields(made.md) == fields and body == made.body


def test_relay_encoding_takes_the_put_s_own_fields() -> None:
    message = _got(b"body", {"p": 1}, correl_id=b"K" * 24, backout_count=3, persistence=1)
    message.md.correl_id = b"L" * 24  # changed after the get (an aggregation reply does so)
    out = decode_message(relay_encoding(message.raw, message.md, NEW_ID, persistence=0, format="MQSTR   "))
    assert out.md.msg_id == NEW_ID
    assert out.md.correl_id == b"L" * 24
    assert out.md.backout_count == 0 and out.md.put_time == 0.0
    assert out.md.persistence == 0 and out.md.format == "MQSTR   "
    assert out.properties == {"p": 1} and out.body == b"body"
    zeroed = decode_message(relay_encoding(message.raw, message.md, NEW_ID, correl_id=b"\x00" * 24))
    assert zeroed.md.correl_id == b"\x00" * 24 and zeroed.md.persistence == 1


def test_relay_encoding_refuses_a_bad_descriptor_field() -> None:
    message = _got(b"body")
    with pytest.raises(QMError, match="persistence 7"):
        relay_encoding(message.raw, message.md, NEW_ID, persistence=7)
    message.md.priority = 12
    with pytest.raises(QMError, match="priority 12"):
        relay_encoding(message.raw, message.md, NEW_ID)


def test_an_mqrfh2_usr_folder_s_fields_become_properties_when_relayed() -> None:
    from flowbroker.runtime.engine import FlowThread

    message = _got(_header({"Route": "yes", "n": "2"}) + b"body", {"p": 1}, format="MQHRF2")
    root = _root(message)
    overlaid = FlowThread._usr_overlay(root, dict(message.properties))
    relay = formats_assembly.relay_of(root)
    assert relay is not None
    out = decode_message(
        relay_encoding(message.raw, message.md, NEW_ID, format=relay.format, properties=overlaid)
    )
    written = _written(root, message)
    written.properties = overlaid
    _same(out, written)
    assert out.properties == {"p": 1, "Route": "yes", "n": "2"}
    emptied = decode_message(relay_encoding(message.raw, message.md, NEW_ID, properties={}))
    assert emptied.properties == {} and emptied.body == message.body
