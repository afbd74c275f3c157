"""Queues of the local queue manager as the configuration manager offers them: every change audited.

Define, alter, delete and purge a queue; put a test message (with an MQRFH2 whose folders the
caller fills), browse, get, move a message to another queue, or back to the queue it was
dead-lettered from. The queue manager's refusals become service errors with the status that
says whose mistake it was; an unreachable queue manager is 503.
"""

from __future__ import annotations

import base64
import dataclasses
import itertools
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sqlalchemy.orm import Session

from flowbroker.services import audit
from flowbroker.services.errors import Conflict, Invalid, NotFound, ServiceError, problem

#: Message properties the flow runtime sets on a message it dead-letters or backs out.
REASON_PROPERTY = "flowbroker.reason"
FLOW_PROPERTY = "flowbroker.flow"
ORIGIN_PROPERTY = "flowbroker.queue"
DEAD_LETTER_PROPERTIES = (REASON_PROPERTY, FLOW_PROPERTY, ORIGIN_PROPERTY)

DEAD_LETTER_QUEUE = "SYSTEM.DEAD.LETTER.QUEUE"

#: MQ reason codes that are the caller's mistake, not the server's, and the status each gets.
CLIENT_REASONS = {
    2085: 404,  # unknown object name
    2033: 404,  # no message available
    2100: 409,  # already exists
    2055: 409,  # queue not empty
    2042: 409,  # object in use
    2053: 409,  # queue full
    2051: 409,  # put inhibited
    2016: 409,  # get inhibited
    2030: 413,  # message too big for the queue
    2035: 403,  # not authorised
    2046: 422,  # bad argument
    2082: 422,  # unknown alias base queue
    2425: 422,  # topic string error
    2459: 422,  # selector syntax error
}

#: Body formats a test message may declare, and the MQMD format each puts.
FORMATS = {"MQSTR": "MQSTR", "XML": "MQSTR", "JSON": "MQSTR", "NONE": ""}

#: The <jms> folder's fields, by the names the JMS mapping of MQ gives them.
JMS_FIELDS = ("Dst", "Rto", "Tms", "Exp", "Pri", "Dlv", "Cid", "Gid", "Seq")


class QueueManagerUnavailable(ServiceError):
    status_code = 503
    code = "queue_manager_unavailable"


class QueueManagerRefused(ServiceError):
    """The queue manager refused a request; the status says whether the caller or the server erred."""

    def __init__(self, reason_code: int, message: str) -> None:
        super().__init__(message, {"reason": reason_code}, code=f"mq_{reason_code}")
        self.status_code = CLIENT_REASONS.get(reason_code, 502)


@dataclass
class Rfh2:
    """The folders of an MQRFH2 to put in front of a test message's body."""

    domain: str
    set: str = ""
    type: str = ""
    format: str = ""
    usr: dict[str, str] = field(default_factory=dict)
    psc_topics: list[str] = field(default_factory=list)
    psc_command: str = ""
    jms: dict[str, str] = field(default_factory=dict)


@dataclass
class TestMessage:
    """What the Queues page puts: a text body, descriptor fields and an optional MQRFH2."""

    body: str
    format: str = "MQSTR"
    persistent: bool = True
    priority: int = -1
    correl_id: str | None = None
    reply_to_q: str = ""
    rfh2: Rfh2 | None = None


@contextmanager
def client(data: Path) -> Iterator[Any]:
    """A connection to the local queue manager; its refusals raised as service errors."""
    from flowbroker.qm.client import Client
    from flowbroker.qm.protocol import QMError

    try:
        qm = Client.connect(data_dir=str(data), timeout=5.0)
    except QMError as exc:
        raise QueueManagerUnavailable(f"the queue manager is not reachable: {exc.reason or exc}") from None
    except OSError as exc:
        raise QueueManagerUnavailable(f"the queue manager is not reachable: {exc}") from None
    try:
        yield qm
    except QMError as exc:
        raise QueueManagerRefused(exc.reason_code, exc.reason or str(exc)) from None
    finally:
        qm.close()


def _changed(session: Session, actor: str, action: str, queue: str, detail: dict[str, Any]) -> None:
    audit.record(session, actor, action, f"queue:{queue}", detail)
    session.commit()


# -- queues ----------------------------------------------------------------------------------


def describe_queue(attrs: dict[str, Any]) -> dict[str, Any]:
    return {
        "name": str(attrs.get("name")),
        "depth": int(attrs.get("current_depth") or 0),
        "backout_queue": str(attrs.get("backout_requeue_q") or ""),
        "backout_threshold": int(attrs.get("backout_threshold") or 0),
        "attributes": attrs,
    }


def list_queues(data: Path) -> list[dict[str, Any]]:
    """Every queue with its current depth and backout settings."""
    with client(data) as qm:
        return [describe_queue(q) for q in qm.list_queues("*")]


def depths_summary(queues: list[dict[str, Any]]) -> dict[str, Any]:
    """Where messages that failed wait: the dead-letter queue's depth and each backout queue's."""
    by_name = {q["name"]: q for q in queues}
    backout = sorted({q["backout_queue"] for q in queues if q["backout_queue"]})
    return {
        "dead_letter_queue": DEAD_LETTER_QUEUE,
        "dead_letter_depth": int(by_name.get(DEAD_LETTER_QUEUE, {}).get("depth", 0)),
        "backout_queues": [
            {
                "name": name,
                "depth": int(by_name[name]["depth"]) if name in by_name else 0,
                "defined": name in by_name,
                "used_by": sorted(q["name"] for q in queues if q["backout_queue"] == name),
            }
            for name in backout
        ],
    }


def define(session: Session, actor: str, data: Path, name: str, attrs: dict[str, Any]) -> dict[str, Any]:
    """Define a local queue (409 when it exists)."""
    with client(data) as qm:
        created = qm.define_queue(name, **attrs)
    _changed(session, actor, "queue.define", name, {"attributes": attrs})
    return describe_queue({"name": name, **created})


def alter(session: Session, actor: str, data: Path, name: str, attrs: dict[str, Any]) -> dict[str, Any]:
    """Change attributes of a queue; the ones not named keep their values."""
    if not attrs:
        raise Invalid("name at least one attribute to change", [problem("", "no attribute given")])
    with client(data) as qm:
        altered = qm.alter_queue(name, **attrs)
    _changed(session, actor, "queue.alter", name, {"attributes": attrs})
    return describe_queue({"name": name, **altered})


def delete(session: Session, actor: str, data: Path, name: str, *, purge: bool = False) -> None:
    """Delete a queue; one holding messages only with ``purge`` (else 409, as MQ's DELETE QLOCAL)."""
    with client(data) as qm:
        depth = int(qm.inquire_queue(name).get("current_depth") or 0)
        qm.delete_queue(name, purge=purge)
    _changed(session, actor, "queue.delete", name, {"purged": depth if purge else 0})


def purge(session: Session, actor: str, data: Path, name: str) -> int:
    """Remove every message of a queue; the number removed."""
    with client(data) as qm:
        removed = qm.purge(name)
    _changed(session, actor, "queue.purge", name, {"purged": removed})
    return removed


def subscribe(
    session: Session, actor: str, data: Path, name: str, topic: str, queue: str, correl_id: str = ""
) -> dict[str, Any]:
    """Define (or replace) the durable subscription ``name``: publications on ``topic`` are put to ``queue``."""
    with client(data) as qm:
        created = qm.subscribe(topic, queue, name=name, correl_id=correl_id or None, durable=True)
    audit.record(
        session, actor, "subscription.define", f"subscription:{name}", {"topic": topic, "queue": queue}
    )
    session.commit()
    return created


# -- messages --------------------------------------------------------------------------------


def _rfh2_bytes(rfh2: Rfh2, body_format: str) -> bytes:
    from esql.tree import Element

    from flowbroker.formats import rfh2 as rfh2_format
    from flowbroker.formats import xmlcore

    header = Element("MQRFH2")
    header.add("Format", body_format.ljust(8))
    rfh2_format.set_template(header, rfh2.domain, rfh2.set, rfh2.type, rfh2.format)
    if rfh2.psc_topics or rfh2.psc_command:
        psc = header.add("psc", type=xmlcore.FOLDER)
        psc.add("Command", rfh2.psc_command or "Publish", type=xmlcore.FIELD)
        for topic in rfh2.psc_topics:
            psc.add("Topic", topic, type=xmlcore.FIELD)
    if rfh2.jms:
        jms = header.add("jms", type=xmlcore.FOLDER)
        for name in JMS_FIELDS:
            if rfh2.jms.get(name, "") != "":
                jms.add(name, rfh2.jms[name], type=xmlcore.FIELD)
    if rfh2.usr:
        usr = header.add("usr", type=xmlcore.FOLDER)
        for name, value in rfh2.usr.items():
            usr.add(name, value, type=xmlcore.FIELD)
    return bytes(rfh2_format.serialize(header, encoding=546, ccsid=1208))


def put(session: Session, actor: str, data: Path, queue: str, message: TestMessage) -> str:
    """Put one test message; an MQRFH2 when ``message.rfh2`` is given. Returns the message id (hex)."""
    from flowbroker.qm.protocol import MessageDescriptor, QMError, pad_id

    payload = message.body.encode("utf-8")
    fmt = FORMATS[message.format]
    if message.rfh2 is not None:
        payload = _rfh2_bytes(message.rfh2, fmt) + payload
        fmt = "MQHRF2"
    try:
        correl_id = pad_id(message.correl_id) if message.correl_id else pad_id(None)
    except QMError as exc:
        raise Invalid(f"correlId: {exc.reason}", [problem("/correlId", exc.reason)]) from None
    md = MessageDescriptor(
        persistence=1 if message.persistent else 0,
        priority=message.priority,
        reply_to_q=message.reply_to_q or "",
        format=fmt,
        correl_id=correl_id,
    )
    with client(data) as qm:
        msg_id = bytes(qm.put(queue, payload, md)).hex()
    detail: dict[str, Any] = {"msgId": msg_id, "bytes": len(payload), "format": fmt}
    if message.rfh2 is not None:
        detail["domain"] = message.rfh2.domain
    _changed(session, actor, "queue.put", queue, detail)
    return msg_id


def _folders(header: Any) -> dict[str, Any]:
    from flowbroker.formats import rfh2 as rfh2_format

    shown: dict[str, Any] = {"mcd": rfh2_format.template(header)}
    for folder in header.children():
        if folder.name == "mcd" or not folder.has_children():
            continue
        values: dict[str, Any] = {}
        for kid in folder.children():
            if kid.name in values:  # a repeated field (psc topics): a list of its values
                earlier = values[kid.name]
                values[kid.name] = [*(earlier if isinstance(earlier, list) else [earlier]), kid.value]
            else:
                values[kid.name] = kid.value
        shown[folder.name] = values
    return shown


def describe_message(msg: Any) -> dict[str, Any]:
    """A message as the Queues page shows it: text body, descriptor, properties, RFH2 folders, origin."""
    md = msg.md
    body: bytes = msg.body
    rfh2: dict[str, Any] | None = None
    if md.format.strip() == "MQHRF2":  # a format is blank-padded to 8 characters, as in MQ
        from flowbroker.formats import rfh2 as rfh2_format

        try:
            header, body = rfh2_format.parse(body, encoding=md.encoding, ccsid=md.coded_char_set_id)
            rfh2 = _folders(header)
        except Exception as exc:  # a malformed header is shown, not fatal: the bytes stay intact
            rfh2 = {"error": f"{type(exc).__name__}: {exc}"}
    try:
        text, raw = body.decode("utf-8"), None
    except UnicodeDecodeError:
        text, raw = body.decode("utf-8", errors="replace"), base64.b64encode(body).decode()
    properties = dict(msg.properties or {})
    return {
        "body": text,
        "body_base64": raw,
        "descriptor": {
            "msgId": md.msg_id.hex(),
            "correlId": md.correl_id.hex(),
            "persistence": md.persistence,
            "priority": md.priority,
            "expiry": md.expiry,
            "replyToQ": md.reply_to_q,
            "format": md.format,
            "encoding": md.encoding,
            "codedCharSetId": md.coded_char_set_id,
            "putTime": md.put_time,
            "backoutCount": md.backout_count,
        },
        "properties": properties,
        "rfh2": rfh2,
        "origin": str(properties.get(ORIGIN_PROPERTY) or "") or None,
        "reason": str(properties.get(REASON_PROPERTY) or "") or None,
    }


def browse(data: Path, queue: str, limit: int) -> list[dict[str, Any]]:
    """The first ``limit`` messages, left on the queue."""
    with client(data) as qm:
        cursor = qm.browse(queue, batch=limit)
        try:
            found = list(itertools.islice(cursor, limit))
        finally:
            cursor.close()  # closes the queue manager's browse cursor
    return [describe_message(m) for m in found]


def get(session: Session, actor: str, data: Path, queue: str, wait: float) -> dict[str, Any] | None:
    """Take the next message off the queue (None when none arrives within ``wait`` seconds)."""
    from flowbroker.qm.protocol import RC_NO_MSG_AVAILABLE, QMError

    with client(data) as qm:
        try:
            msg = qm.get(queue, wait=wait)
        except QMError as exc:
            if exc.reason_code != RC_NO_MSG_AVAILABLE:
                raise
            msg = None
    if msg is None:
        return None
    _changed(session, actor, "queue.get", queue, {"msgId": msg.md.msg_id.hex()})
    return describe_message(msg)


def move(session: Session, actor: str, data: Path, queue: str, msg_id: str, to: str | None) -> dict[str, Any]:
    """Move one message to ``to`` in a unit of work, so it is never lost nor doubled.

    With ``to`` None the message goes back to the queue it was dead-lettered or backed out from
    (the runtime records it), without the dead-letter properties and with its backout count
    reset, as MQ's dead-letter handler retries a message to its original destination.
    """
    with client(data) as qm:
        msg = qm.get(queue, msg_id=bytes.fromhex(msg_id), syncpoint=True)
        if msg is None:
            qm.backout()
            raise NotFound(f"no message {msg_id} on {queue}")
        md, properties = msg.md, dict(msg.properties or {})
        target = to
        if target is None:
            target = str(properties.get(ORIGIN_PROPERTY) or "")
            if not target:
                qm.backout()
                raise Conflict(
                    f"message {msg_id} on {queue} does not record the queue it came from; name a target",
                    {"pointer": "/to"},
                    code="no_origin",
                )
            for name in DEAD_LETTER_PROPERTIES:
                properties.pop(name, None)
            md = dataclasses.replace(md, backout_count=0)
        try:
            new_id = qm.put(target, msg.body, md, syncpoint=True, properties=properties or None)
        except BaseException:
            qm.backout()
            raise
        qm.commit()
    detail = {"msgId": msg_id, "to": target, "newMsgId": bytes(new_id).hex(), "toOrigin": to is None}
    _changed(session, actor, "queue.move", queue, detail)
    return {"queue": target, "msg_id": bytes(new_id).hex()}
