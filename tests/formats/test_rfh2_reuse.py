"""Headers of one layout after the first: filled from what the first fill checked, and their usr
fields (the properties a relayed message carries) read once per layout, never at the cost of a
change a flow made or of an error a malformed header gives."""

from __future__ import annotations

import itertools

import pytest
from esql.domains import DomainError
from esql.tree import Element
from flowbroker.formats import assembly as formats_assembly
from flowbroker.formats import rfh2
from flowbroker.qm.protocol import Message, MessageDescriptor, decode_message, encode_message
from flowbroker.runtime import assembly as assemblies
from flowbroker.runtime.engine import FlowThread

_unique = itertools.count()


def _header_bytes(*folders: str) -> bytes:
    """An MQRFH2 (Format MQSTR) holding these folders' texts as they are."""
    header = Element("MQRFH2")
    header.add("Format", "MQSTR   ")
    raw = rfh2.serialize(header, encoding=546, ccsid=1208)
    parts = [raw]
    for text in folders:
        data = text.encode()
        data += b" " * (-len(data) % 4)
        parts.append(len(data).to_bytes(4, "little") + data)
    out = b"".join(parts)
    return out[:8] + len(out).to_bytes(4, "little") + out[12:]


def _got(body: bytes) -> Message:
    md = MessageDescriptor(format="MQHRF2  ", persistence=0, priority=4)
    return decode_message(encode_message(md, {"p": 1}, body))


def _usr() -> str:
    # a layout no other test used: its first fill happens here
    return f"<usr><Route>yes</Route><n>{next(_unique)}</n><Route>again</Route></usr>"


def test_later_headers_of_a_layout_fill_as_the_first_did() -> None:
    data = _header_bytes("<abc a='1'><x>1</x></abc>", _usr()) + b"body"
    trees = []
    for _ in range(4):  # the first fill, the second (parsed again), the rest (copies of it)
        header = _root_of(data).child("MQRFH2")
        assert header is not None
        trees.append(_walk(header))
    assert all(tree == trees[0] for tree in trees)
    assert ("Format", "", 0x03000000, "MQSTR   ") in trees[0] and ("a", "", 0x03000100, "1") in trees[0]
    assert [kid for kid in trees[0] if kid[0] == "Route"] == [
        ("Route", "", 0x03000000, "yes"),
        ("Route", "", 0x03000000, "again"),
    ]


def test_a_header_changed_after_the_first_of_its_layout_is_written_with_the_change() -> None:
    data = _header_bytes(_usr()) + b"body"
    first = _root_of(data)
    assert first.child("MQRFH2").child("usr").child("Route").value == "yes"  # type: ignore[union-attr]
    assert formats_assembly.relay_of(first) is not None
    for value in ("no", "no"):  # on a copy of the kept parse too
        message = _got(data)
        root = assemblies.build_root(message, {"domain": "BLOB"})
        root.child("MQRFH2").child("usr").child("Route").value = value  # type: ignore[union-attr]
        assert formats_assembly.relay_of(root) is None
        assert b"<Route>no</Route>" in assemblies.to_message(root)[1]
    fixed = _root_of(data)
    fixed.child("MQRFH2").child("Flags").value = 1  # type: ignore[union-attr]
    assert formats_assembly.relay_of(fixed) is None


@pytest.mark.parametrize(
    ("folder", "error"),
    [
        ("<usr><Route>yes</usr>", "malformed folder at byte offset 40"),
        ("<!DOCTYPE usr><usr/>", "a folder may not declare a DTD"),
        ("text, no element", "malformed folder at byte offset 40: it does not start with an element"),
    ],
)
def test_a_malformed_header_gives_its_error_every_time(folder: str, error: str) -> None:
    data = _header_bytes(folder + f"<!-- {next(_unique)} -->") + b"body"
    for _ in range(3):
        root = _root_of(data)
        header = root.child("MQRFH2")
        assert header is not None
        with pytest.raises(DomainError, match=error):
            rfh2.usr_fields(header)
        with pytest.raises(DomainError, match=error):
            rfh2.pristine_usr_fields(_root_of(data).child("MQRFH2"))  # type: ignore[arg-type]


def test_the_pristine_usr_fields_are_those_a_read_of_the_header_gives() -> None:
    data = _header_bytes("<abc/>", _usr(), "<usr><Other>1</Other></usr>") + b"body"
    message = _got(data)
    unread = assemblies.build_root(message, {"domain": "BLOB"})
    header = unread.child("MQRFH2")
    assert header is not None
    fields = rfh2.pristine_usr_fields(header)
    assert header.lazy is not None  # answered without filling the header
    read = _root_of(data)
    assert fields == rfh2.usr_fields(read.child("MQRFH2"))  # type: ignore[arg-type]
    assert fields is not None and fields[0] == ("Route", "yes") and fields[-1] == ("Route", "again")
    overlaid = FlowThread._usr_overlay(read, {"p": 1})
    assert overlaid == {"p": 1, **dict(fields)} and overlaid["Route"] == "again"
    assert rfh2.pristine_usr_fields(_root_of(data).child("MQRFH2")) == fields  # type: ignore[arg-type]


def test_a_header_not_made_from_bytes_has_no_pristine_usr_fields() -> None:
    header = Element("MQRFH2", type=rfh2.FOLDER)
    header.add("usr", type=rfh2.FOLDER).add("Route", "yes")
    assert rfh2.pristine_usr_fields(header) is None
    assert rfh2.usr_fields(header) == (("Route", "yes"),)
    parsed, _ = rfh2.parse(_header_bytes(_usr()), encoding=546, ccsid=1208)
    assert rfh2.pristine_usr_fields(parsed) is None


def test_a_pristine_field_is_what_a_read_of_the_header_gives_and_leaves_it_unread() -> None:
    topic = f"prices/{next(_unique)}"
    data = _header_bytes(f"<psc><Command>Publish</Command><Topic>{topic}</Topic></psc>", _usr()) + b"body"
    for _ in range(3):  # the first answer worked out, the later ones kept for the layout
        header = _root_of(data).child("MQRFH2")
        assert header is not None
        assert rfh2.pristine_field(header, "psc", "Topic") == topic
        assert rfh2.pristine_field(header, "usr", "Route") == "yes"  # the first of two
        assert rfh2.pristine_field(header, "psc", "Missing") is None
        assert rfh2.pristine_field(header, "nofolder", "Topic") is None
        assert header.lazy is not None  # answered without filling the header
        assert rfh2.pristine_field(header, "psc", "Topic") == header.child("psc").child("Topic").value  # type: ignore[union-attr]
        # read now: a change is the tree's, and the layout no longer answers for it
        header.child("psc").child("Topic").value = "changed"  # type: ignore[union-attr]
        assert rfh2.pristine_field(header, "psc", "Topic") is rfh2.NOT_PRISTINE
    made = Element("MQRFH2", type=rfh2.FOLDER)
    made.add("psc", type=rfh2.FOLDER).add("Topic", "t")
    assert rfh2.pristine_field(made, "psc", "Topic") is rfh2.NOT_PRISTINE


def test_a_pristine_field_of_a_malformed_header_gives_its_error_every_time() -> None:
    data = _header_bytes(f"<psc><Topic>t</psc><!-- {next(_unique)} -->") + b"body"
    for _ in range(3):
        header = _root_of(data).child("MQRFH2")
        with pytest.raises(DomainError, match="malformed folder at byte offset 40"):
            rfh2.pristine_field(header, "psc", "Topic")  # type: ignore[arg-type]


def _walk(element: Element) -> list[tuple[str, str, int, object]]:
    return [(node.name, node.namespace, node.type, node.value) for node in element.walk()]


def _root_of(data: bytes) -> Element:
    return assemblies.build_root(_got(data), {"domain": "BLOB"})


def test_a_header_put_in_place_of_the_message_s_own_is_written_not_relayed() -> None:
    mine = _header_bytes(_usr()) + b"body"
    theirs = _header_bytes("<usr><Route>theirs</Route></usr>") + b"other"
    root = _root_of(mine)
    other = _root_of(theirs).child("MQRFH2")
    assert other is not None
    own = root.child("MQRFH2")
    assert own is not None
    own.insert_after(other.copy())  # unread, as SET OutputRoot.MQRFH2 = other.MQRFH2 copies it
    own.detach()
    assert formats_assembly.relay_of(root) is None
    assert assemblies.to_message(root)[1] == theirs[: len(theirs) - len(b"other")] + b"body"
    assert formats_assembly.relay_of(_root_of(mine)) is not None


def test_a_character_body_behind_a_header_of_blank_format_is_never_relayed() -> None:
    header = Element("MQRFH2")
    header.add("Format", "        ")
    header.add("usr", type=rfh2.FOLDER).add("Route", "yes")
    data = rfh2.serialize(header, encoding=546, ccsid=1208) + b'{"a":1}'
    root = assemblies.build_root(_got(data), {"domain": "JSON"})
    assert formats_assembly.relay_of(root) is None
    written = rfh2.parse(assemblies.to_message(root)[1], encoding=546, ccsid=1208)[0]
    assert rfh2.inner_format(written) == "MQSTR   "
    blob = assemblies.build_root(_got(data), {"domain": "BLOB"})
    assert formats_assembly.relay_of(blob) is not None
