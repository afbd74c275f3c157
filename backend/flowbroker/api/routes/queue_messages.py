"""Queues over REST for the designer's Queues page: depths, put a test message, browse, get, move."""

from __future__ import annotations

import base64
import itertools
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Path, Query, status
from pydantic import Field

from flowbroker.api.deps import Operator, SettingsDep, Viewer
from flowbroker.api.errors import ApiError
from flowbroker.api.schemas import Body, Out

router = APIRouter(prefix="/api/queues", tags=["queues"])

QueueName = Annotated[str, Path(pattern=r"^[A-Za-z0-9._/%]{1,48}$", description="an MQ queue name")]
#: MQ reason codes that are the caller's mistake, not the server's.
_CLIENT_REASONS = {
    2085: 404,
    2100: 409,
    2055: 409,
    2042: 409,
    2033: 404,
    2053: 409,
    2051: 409,
    2016: 409,
    2030: 413,
    2035: 403,
}
_FORMATS = {"MQSTR": "MQSTR", "XML": "MQSTR", "JSON": "MQSTR", "NONE": ""}


class Rfh2In(Body):
    domain: Literal["XMLNSC", "XMLNS", "XML", "JSON", "BLOB", "MRM"]
    set: str = Field(default="", max_length=64)
    type: str = Field(default="", max_length=128)
    format: str = Field(default="", max_length=32)
    usr: dict[
        Annotated[str, Field(pattern=r"^[A-Za-z_][A-Za-z0-9_.-]{0,63}$")],
        Annotated[str, Field(max_length=1024)],
    ] = Field(default_factory=dict, description="name/value fields of the <usr> folder")


class PutIn(Body):
    body: str = Field(max_length=4 * 1024 * 1024, description="the message body as text (UTF-8)")
    format: Literal["MQSTR", "XML", "JSON", "NONE"] = "MQSTR"
    persistent: bool = True
    priority: int = Field(default=-1, ge=-1, le=9)
    correl_id: str | None = Field(default=None, max_length=24)
    reply_to_q: str | None = Field(default=None, pattern=r"^[A-Za-z0-9._/%]{0,48}$")
    rfh2: Rfh2In | None = None


class PutOut(Out):
    queue: str
    msg_id: str


class DefineIn(Body):
    name: str = Field(pattern=r"^[A-Za-z0-9._/%]{1,48}$")
    backout_threshold: int = Field(default=0, ge=0, le=999_999)
    backout_requeue_q: str = Field(default="", pattern=r"^[A-Za-z0-9._/%]{0,48}$")
    description: str = Field(default="", max_length=256)


class MoveIn(Body):
    to: str = Field(pattern=r"^[A-Za-z0-9._/%]{1,48}$")


class QueueOut(Out):
    name: str
    depth: int
    backout_queue: str = ""
    backout_threshold: int = 0
    attributes: dict[str, Any]


class MessageOut(Out):
    body: str
    body_base64: str | None = None
    descriptor: dict[str, Any]
    properties: dict[str, Any]
    rfh2: dict[str, Any] | None = None


@contextmanager
def _client(settings: Any) -> Iterator[Any]:
    try:
        from flowbroker.qm.client import Client
        from flowbroker.qm.protocol import QMError
    except ImportError as exc:
        raise ApiError(501, "not_available", f"the queue manager client is not installed: {exc}") from None

    try:
        client = Client.connect(data_dir=str(settings.data), timeout=5.0)
    except QMError as exc:
        raise ApiError(503, "queue_manager_unavailable", exc.reason or str(exc)) from None
    try:
        yield client
    except QMError as exc:
        code = _CLIENT_REASONS.get(exc.reason_code, 502)
        raise ApiError(
            code, f"mq_{exc.reason_code}", exc.reason or str(exc), {"reason": exc.reason_code}
        ) from None
    finally:
        client.close()


def _hex(value: bytes) -> str:
    return value.hex()


def _message(msg: Any) -> MessageOut:
    md = msg.md
    body: bytes = msg.body
    rfh2: dict[str, Any] | None = None
    if md.format == "MQHRF2":
        from flowbroker.formats import rfh2 as rfh2_format

        try:
            header, body = rfh2_format.parse(body, encoding=md.encoding, ccsid=md.coded_char_set_id)
            rfh2 = {"mcd": rfh2_format.template(header)}
            usr = header.child("usr")
            if usr is not None:
                rfh2["usr"] = {kid.name: kid.value for kid in usr.children()}
        except Exception as exc:  # a malformed header is shown, not fatal: the bytes stay intact
            rfh2 = {"error": f"{type(exc).__name__}: {exc}"}
    try:
        text, raw = body.decode("utf-8"), None
    except UnicodeDecodeError:
        text, raw = body.decode("utf-8", errors="replace"), base64.b64encode(body).decode()
    return MessageOut(
        body=text,
        body_base64=raw,
        descriptor={
            "msgId": _hex(md.msg_id),
            "correlId": _hex(md.correl_id),
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
        properties=dict(msg.properties or {}),
        rfh2=rfh2,
    )


@router.get("", response_model=list[QueueOut])
def list_queues(_: Viewer, settings: SettingsDep) -> Any:
    """Every queue of the local queue manager with its current depth."""
    with _client(settings) as qm:
        rows = qm.list_queues("*")
    return [
        QueueOut(
            name=str(q.get("name")),
            depth=int(q.get("current_depth") or 0),
            backout_queue=str(q.get("backout_requeue_q") or ""),
            backout_threshold=int(q.get("backout_threshold") or 0),
            attributes=q,
        )
        for q in rows
    ]


@router.post("", response_model=QueueOut, status_code=status.HTTP_201_CREATED)
def define_queue(queue: DefineIn, _: Operator, settings: SettingsDep) -> Any:
    """Define a local queue (409 when it exists)."""
    attrs: dict[str, Any] = {"backout_threshold": queue.backout_threshold, "description": queue.description}
    if queue.backout_requeue_q:
        attrs["backout_requeue_q"] = queue.backout_requeue_q
    with _client(settings) as qm:
        q = qm.define_queue(queue.name, **attrs)
    return QueueOut(
        name=queue.name,
        depth=int(q.get("current_depth") or 0),
        backout_queue=str(q.get("backout_requeue_q") or ""),
        backout_threshold=int(q.get("backout_threshold") or 0),
        attributes=q,
    )


@router.post("/{queue}/messages", response_model=PutOut, status_code=status.HTTP_201_CREATED)
def put_message(queue: QueueName, message: PutIn, _: Operator, settings: SettingsDep) -> Any:
    """Put one test message; an ``rfh2`` object prefixes the body with an MQRFH2 naming its domain."""
    from flowbroker.qm.protocol import MessageDescriptor, pad_id

    payload = message.body.encode("utf-8")
    fmt = _FORMATS[message.format]
    if message.rfh2 is not None:
        from esql.tree import Element

        from flowbroker.formats import rfh2 as rfh2_format

        header = Element("MQRFH2")
        header.add("Format", fmt.ljust(8))
        rfh2_format.set_template(
            header, message.rfh2.domain, message.rfh2.set, message.rfh2.type, message.rfh2.format
        )
        if message.rfh2.usr:
            from flowbroker.formats import xmlcore

            usr = header.add("usr", type=xmlcore.FOLDER)
            for name, value in message.rfh2.usr.items():
                usr.add(name, value, type=xmlcore.FIELD)
        payload = rfh2_format.serialize(header, encoding=546, ccsid=1208) + payload
        fmt = "MQHRF2"
    try:
        md = MessageDescriptor(
            persistence=1 if message.persistent else 0,
            priority=message.priority,
            reply_to_q=message.reply_to_q or "",
            format=fmt,
            correl_id=pad_id(message.correl_id) if message.correl_id else pad_id(None),
        )
    except Exception as exc:
        raise ApiError(422, "invalid", f"correlId: {exc}") from None
    with _client(settings) as qm:
        msg_id = qm.put(queue, payload, md)
    return PutOut(queue=queue, msg_id=_hex(msg_id))


@router.get("/{queue}/messages", response_model=list[MessageOut])
def browse_messages(
    queue: QueueName,
    _: Viewer,
    settings: SettingsDep,
    limit: Annotated[int, Query(ge=1, le=500)] = 50,
) -> Any:
    """The first ``limit`` messages, left on the queue."""
    with _client(settings) as qm:
        cursor = qm.browse(queue, batch=limit)
        found = list(itertools.islice(cursor, limit))
        cursor.close()  # closes the queue manager's browse cursor
    return [_message(m) for m in found]


@router.post("/{queue}/get", response_model=MessageOut | None)
def get_message(
    queue: QueueName,
    _: Operator,
    settings: SettingsDep,
    wait: Annotated[float, Query(ge=0, le=30)] = 0,
) -> Any:
    """Take the next message off the queue (null when none arrives within ``wait`` seconds)."""
    with _client(settings) as qm:
        try:
            msg = qm.get(queue, wait=wait)
        except Exception as exc:
            if getattr(exc, "reason_code", None) == 2033:
                return None
            raise
    return None if msg is None else _message(msg)


@router.post("/{queue}/messages/{msg_id}/move", response_model=PutOut)
def move_message(
    queue: QueueName,
    msg_id: Annotated[str, Path(pattern=r"^[0-9a-fA-F]{48}$")],
    target: MoveIn,
    _: Operator,
    settings: SettingsDep,
) -> Any:
    """Move one message (a dead-letter one back to its queue) in a unit of work: it is never lost."""
    with _client(settings) as qm:
        msg = qm.get(queue, msg_id=bytes.fromhex(msg_id), syncpoint=True)
        if msg is None:
            qm.backout()
            raise ApiError(404, "not_found", f"no message {msg_id} on {queue}")
        try:
            new_id = qm.put(target.to, msg.body, msg.md, syncpoint=True, properties=msg.properties or None)
        except BaseException:
            qm.backout()
            raise
        qm.commit()
    return PutOut(queue=target.to, msg_id=_hex(new_id))
