"""The MQMD header as a message-tree folder, built from a queue manager's message descriptor and back."""

from __future__ import annotations

import datetime
from typing import Any

from esql.tree import Element, LazyContent

FORMAT_NONE = "        "
FORMAT_STRING = "MQSTR   "
FORMAT_RFH2 = "MQHRF2  "
ZERO_ID = b"\x00" * 24

#: MQMD field name → descriptor attribute, in MQMD order for the fields a descriptor carries.
_FIELDS = (
    ("Expiry", "expiry", -1),
    ("Encoding", "encoding", 546),
    ("CodedCharSetId", "coded_char_set_id", 1208),
    ("Format", "format", FORMAT_NONE),
    ("Priority", "priority", 0),
    ("Persistence", "persistence", 0),
    ("MsgId", "msg_id", ZERO_ID),
    ("CorrelId", "correl_id", ZERO_ID),
    ("BackoutCount", "backout_count", 0),
    ("ReplyToQ", "reply_to_q", ""),
    ("ReplyToQMgr", "reply_to_q_mgr", ""),
)


class _FromDescriptor:
    """Fills an MQMD folder from its descriptor the first time something reads it."""

    def fill(self, element: Element, content: LazyContent) -> None:
        _fill(element, content.options["descriptor"])


_FILLER = _FromDescriptor()


def build(descriptor: Any) -> Element:
    """The ``MQMD`` folder for a descriptor (any object with the MessageDescriptor attributes).

    The fields are made on first read: most flows never look at the MQMD, and a copy of an
    unread MQMD shares the descriptor instead of copying thirty fields.
    """
    md = Element("MQMD", type=0x01000000)
    md.set_lazy(LazyContent(_FILLER, b"", options={"descriptor": descriptor}))
    return md


def _fill(md: Element, descriptor: Any) -> None:
    md.add("Version", 2)
    md.add("Report", 0)
    md.add("MsgType", 8)
    for name, attr, default in _FIELDS:
        md.add(name, getattr(descriptor, attr, default))
    md.add("UserIdentifier", "")
    md.add("PutApplType", 28)
    md.add("PutApplName", "flowbroker")
    put_time = getattr(descriptor, "put_time", 0.0) or 0.0
    stamp = datetime.datetime.fromtimestamp(float(put_time), tz=datetime.UTC)
    md.add("PutDate", stamp.date())
    md.add("PutTime", stamp.time().replace(tzinfo=None))
    md.add("GroupId", getattr(descriptor, "group_id", ZERO_ID))
    md.add("MsgSeqNumber", 1)
    md.add("Offset", 0)
    md.add("MsgFlags", 0)
    md.add("OriginalLength", -1)


def _id(value: Any, field: str) -> bytes:
    if value is None:
        return ZERO_ID
    if isinstance(value, str):
        value = value.encode("utf-8")
    if not isinstance(value, bytes | bytearray):
        raise ValueError(f"MQMD.{field} must be a BLOB of at most 24 bytes")
    if len(value) > 24:
        raise ValueError(f"MQMD.{field} is {len(value)} bytes; at most 24 are allowed")
    return bytes(value).ljust(24, b"\x00")


def descriptor_fields(descriptor: Any) -> dict[str, Any]:
    """The attributes :func:`fields` gives for an unread ``MQMD`` folder built from ``descriptor``."""
    out = {attr: getattr(descriptor, attr, default) for _name, attr, default in _FIELDS}
    out["group_id"] = getattr(descriptor, "group_id", ZERO_ID)
    return out


def fields(md: Element | None) -> dict[str, Any]:
    """Descriptor attributes from an ``MQMD`` folder (absent fields are left out)."""
    out: dict[str, Any] = {}
    if md is None:
        return out
    lazy = md.lazy
    if lazy is not None and isinstance(lazy.parser, _FromDescriptor):
        return descriptor_fields(lazy.options["descriptor"])
    for name, attr, _default in _FIELDS:
        kid = md.child(name)
        if kid is None or kid.value is None:
            continue
        value = kid.value
        if attr in ("msg_id", "correl_id"):
            value = _id(value, name)
        elif attr in ("reply_to_q", "reply_to_q_mgr", "format"):
            value = str(value)
        else:
            value = int(value)
        out[attr] = value
    group = md.child("GroupId")
    if group is not None and group.value is not None:
        out["group_id"] = _id(group.value, "GroupId")
    return out
