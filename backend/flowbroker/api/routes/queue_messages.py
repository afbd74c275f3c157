"""Queues over REST for the designer's Queues page: define, alter, delete, purge, put, browse, get, move."""

from __future__ import annotations

from functools import partial
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Path, Query, Request, status
from pydantic import Field
from starlette.concurrency import run_in_threadpool

from flowbroker.api.deps import DbSession, QueueWriter, Reader, SettingsDep
from flowbroker.api.errors import AUTHENTICATED, ApiError, described, responses
from flowbroker.api.long_polls import LongPolls
from flowbroker.api.schemas import Body, Out, StrictInt
from flowbroker.qm.names import (
    MAX_QUEUE_NAME,
    QUEUE_NAME_OR_BLANK_PATTERN,
    QUEUE_NAME_PATTERN,
    QUEUE_NAME_RULE,
)
from flowbroker.services import queues

router = APIRouter(prefix="/api/queues", tags=["queues"], responses=responses(*AUTHENTICATED, 502, 503))

# Every route names its queue with the path converter, so a name holding "/" (sent as %2F) is
# reachable; the name's own rule is the queue manager's (flowbroker.qm.names).
QueueName = Annotated[
    str,
    Path(
        pattern=described(QUEUE_NAME_PATTERN, f"an MQ queue name: {QUEUE_NAME_RULE}"),
        min_length=1,
        max_length=MAX_QUEUE_NAME,
        description=f"an MQ queue name: {QUEUE_NAME_RULE}; a '/' sent percent-encoded (%2F)",
    ),
]
QueueNameField = Annotated[
    str,
    Field(pattern=QUEUE_NAME_PATTERN, min_length=1, max_length=MAX_QUEUE_NAME, description=QUEUE_NAME_RULE),
]
OptionalQueueName = Annotated[
    str,
    Field(
        pattern=described(QUEUE_NAME_OR_BLANK_PATTERN, f"empty, or an MQ queue name: {QUEUE_NAME_RULE}"),
        max_length=MAX_QUEUE_NAME,
        description=f"empty, or {QUEUE_NAME_RULE}",
    ),
]
MsgId = Annotated[
    str,
    Path(
        pattern=described(r"^[0-9a-fA-F]{48}$", "48 hex digits"), description="the message id, 48 hex digits"
    ),
]
FieldName = Annotated[
    str,
    Field(
        pattern=described(
            r"^[A-Za-z_][A-Za-z0-9_.-]{0,63}$", "a letter or _, then up to 63 of A-Z a-z 0-9 _ . -"
        )
    ),
]
FieldValue = Annotated[str, Field(max_length=1024)]


class JmsIn(Body):
    """The <jms> folder: JMS header fields as MQ maps them."""

    dst: str = Field(default="", max_length=256, description="JMSDestination, e.g. queue:///Q1")
    rto: str = Field(default="", max_length=256, description="JMSReplyTo")
    tms: str = Field(
        default="",
        pattern=described(r"^\d{0,19}$", "empty or up to 19 digits"),
        description="JMSTimestamp, ms since 1970",
    )
    exp: str = Field(
        default="",
        pattern=described(r"^\d{0,19}$", "empty or up to 19 digits"),
        description="JMSExpiration, ms since 1970",
    )
    pri: str = Field(
        default="", pattern=described(r"^[0-9]?$", "empty or one digit 0-9"), description="JMSPriority 0-9"
    )
    dlv: str = Field(
        default="",
        pattern=described(r"^[12]?$", "empty, 1 or 2"),
        description="JMSDeliveryMode: 1 non-persistent, 2 persistent",
    )
    cid: str = Field(default="", max_length=256, description="JMSCorrelationID")
    gid: str = Field(default="", max_length=256, description="JMSXGroupID")
    seq: str = Field(
        default="", pattern=described(r"^\d{0,10}$", "empty or up to 10 digits"), description="JMSXGroupSeq"
    )


class PscIn(Body):
    """The <psc> folder of a publication: the command and its topics."""

    command: Literal["Publish", "RegSub", "DeregSub"] = "Publish"
    topics: list[Annotated[str, Field(min_length=1, max_length=1000)]] = Field(
        default_factory=list, max_length=32
    )


class Rfh2In(Body):
    """The MQRFH2 to put in front of the body: <mcd>, and optionally <usr>, <psc> and <jms>."""

    domain: Literal["XMLNSC", "XMLNS", "XML", "JSON", "BLOB", "MRM"]
    set: str = Field(default="", max_length=64)
    type: str = Field(default="", max_length=128)
    format: str = Field(default="", max_length=32)
    usr: dict[FieldName, FieldValue] = Field(default_factory=dict, description="name/value fields of <usr>")
    psc: PscIn | None = None
    jms: JmsIn | None = None


class PutIn(Body):
    body: str = Field(max_length=4 * 1024 * 1024, description="the message body as text (UTF-8)")
    format: Literal["MQSTR", "XML", "JSON", "NONE"] = "MQSTR"
    persistent: bool = True
    priority: StrictInt = Field(default=-1, ge=-1, le=9)
    correl_id: str | None = Field(default=None, max_length=24)
    reply_to_q: OptionalQueueName | None = None
    rfh2: Rfh2In | None = None


class PutOut(Out):
    queue: str
    msg_id: str


class QueueAttributesIn(Body):
    """Attributes of a local queue, named after MQ's (MAXDEPTH, DEFPSIST, BOTHRESH, BOQNAME, …)."""

    max_depth: StrictInt | None = Field(default=None, ge=1, le=100_000_000)
    max_msg_length: StrictInt | None = Field(default=None, ge=1, le=100 * 1024 * 1024)
    default_persistence: Annotated[StrictInt, Field(ge=0, le=1)] | None = None
    default_priority: StrictInt | None = Field(default=None, ge=0, le=9)
    put_inhibited: bool | None = None
    get_inhibited: bool | None = None
    backout_threshold: StrictInt | None = Field(default=None, ge=0, le=999_999)
    backout_requeue_q: OptionalQueueName | None = None
    description: str | None = Field(default=None, max_length=256)

    def attributes(self) -> dict[str, Any]:
        return self.model_dump(exclude_none=True, by_alias=False, exclude={"name"})


class DefineIn(QueueAttributesIn):
    name: QueueNameField


class MoveIn(Body):
    to: QueueNameField


class QueueOut(Out):
    name: str
    depth: int
    backout_queue: str = ""
    backout_threshold: int = 0
    attributes: dict[str, Any]


class BackoutQueueOut(Out):
    name: str
    depth: int
    defined: bool = Field(description="false when a queue names a backout queue that does not exist")
    used_by: list[str]


class FailedMessagesOut(Out):
    """Where messages that failed wait: the dead-letter queue and every backout queue named."""

    dead_letter_queue: str
    dead_letter_depth: int
    backout_queues: list[BackoutQueueOut]


class PurgeOut(Out):
    queue: str
    purged: int


class MessageOut(Out):
    body: str
    body_base64: str | None = None
    descriptor: dict[str, Any]
    properties: dict[str, Any]
    rfh2: dict[str, Any] | None = None
    origin: str | None = Field(default=None, description="the queue a dead-lettered message came from")
    reason: str | None = Field(default=None, description="why the message was dead-lettered or backed out")


@router.get("", response_model=list[QueueOut])
def list_queues(_: Reader, settings: SettingsDep) -> Any:
    """Every queue of the local queue manager with its current depth."""
    return queues.list_queues(settings.data)


@router.get("/failed", response_model=FailedMessagesOut)
def failed_messages(_: Reader, settings: SettingsDep) -> Any:
    """Depths of the dead-letter queue and of every backout queue a queue names."""
    return queues.depths_summary(queues.list_queues(settings.data))


@router.post("", responses=responses(409), response_model=QueueOut, status_code=status.HTTP_201_CREATED)
def define_queue(body: DefineIn, user: QueueWriter, session: DbSession, settings: SettingsDep) -> Any:
    """Define a local queue (409 when it exists)."""
    return queues.define(session, user.username, settings.data, body.name, body.attributes())


@router.patch("/{queue:path}", responses=responses(404, 409), response_model=QueueOut)
def alter_queue(
    queue: QueueName, body: QueueAttributesIn, user: QueueWriter, session: DbSession, settings: SettingsDep
) -> Any:
    """Change attributes of a queue; those not named keep their values."""
    return queues.alter(session, user.username, settings.data, queue, body.attributes())


@router.delete("/{queue:path}", responses=responses(404, 409), status_code=status.HTTP_204_NO_CONTENT)
def delete_queue(
    queue: QueueName,
    user: QueueWriter,
    session: DbSession,
    settings: SettingsDep,
    purge: Annotated[bool, Query(description="also remove its messages (else 409 when not empty)")] = False,
) -> None:
    """Delete a queue."""
    queues.delete(session, user.username, settings.data, queue, purge=purge)


@router.post("/{queue:path}/purge", responses=responses(404, 409), response_model=PurgeOut)
def purge_queue(queue: QueueName, user: QueueWriter, session: DbSession, settings: SettingsDep) -> Any:
    """Remove every message of a queue."""
    return PurgeOut(queue=queue, purged=queues.purge(session, user.username, settings.data, queue))


@router.post(
    "/{queue:path}/messages",
    responses=responses(404, 409, 413),
    response_model=PutOut,
    status_code=status.HTTP_201_CREATED,
)
def put_message(
    queue: QueueName, message: PutIn, user: QueueWriter, session: DbSession, settings: SettingsDep
) -> Any:
    """Put one test message; an ``rfh2`` object prefixes the body with an MQRFH2 of those folders."""
    return PutOut(
        queue=queue, msg_id=queues.put(session, user.username, settings.data, queue, to_test_message(message))
    )


def to_test_message(message: PutIn) -> queues.TestMessage:
    """The service's test message for a put request (also what the designer sends to an input node)."""
    rfh2 = None
    if message.rfh2 is not None:
        r = message.rfh2
        rfh2 = queues.Rfh2(
            domain=r.domain,
            set=r.set,
            type=r.type,
            format=r.format,
            usr=dict(r.usr),
            psc_topics=list(r.psc.topics) if r.psc else [],
            psc_command=r.psc.command if r.psc else "",
            jms={k.capitalize(): v for k, v in r.jms.model_dump().items() if v} if r.jms else {},
        )
    return queues.TestMessage(
        body=message.body,
        format=message.format,
        persistent=message.persistent,
        priority=message.priority,
        correl_id=message.correl_id,
        reply_to_q=message.reply_to_q or "",
        rfh2=rfh2,
    )


@router.get("/{queue:path}/messages", responses=responses(404), response_model=list[MessageOut])
def browse_messages(
    queue: QueueName,
    _: Reader,
    settings: SettingsDep,
    limit: Annotated[int, Query(ge=1, le=500)] = 50,
) -> Any:
    """The first ``limit`` messages, left on the queue."""
    return queues.browse(settings.data, queue, limit)


@router.post("/{queue:path}/get", responses=responses(404, 409, 429), response_model=MessageOut | None)
async def get_message(
    queue: QueueName,
    user: QueueWriter,
    session: DbSession,
    settings: SettingsDep,
    request: Request,
    wait: Annotated[
        float,
        Query(ge=0, description="seconds to wait for a message, at most FLOWBROKER_LONG_POLL_MAX_WAIT (30)"),
    ] = 0,
) -> Any:
    """Take the next message off the queue (null when none arrives within ``wait`` seconds).

    A get that waits is a long-poll: at most FLOWBROKER_LONG_POLL_MAX wait at once, past that 429
    with Retry-After; the waits never hold the threads the other routes run on.
    """
    if wait > settings.long_poll_max_wait:
        message = f"at most {settings.long_poll_max_wait:g} seconds (FLOWBROKER_LONG_POLL_MAX_WAIT)"
        raise ApiError(
            422,
            "invalid",
            f"invalid query: /wait: {message}",
            [{"pointer": "/wait", "location": "query", "message": message, "type": "less_than_equal"}],
        )
    work = partial(queues.get, session, user.username, settings.data, queue, wait)
    if wait == 0:
        return await run_in_threadpool(work)
    long_polls: LongPolls = request.app.state.long_polls
    return await long_polls.run(work)


@router.post(
    "/{queue:path}/messages/{msg_id}/move", responses=responses(404, 409, 413), response_model=PutOut
)
def move_message(
    queue: QueueName,
    msg_id: MsgId,
    target: MoveIn,
    user: QueueWriter,
    session: DbSession,
    settings: SettingsDep,
) -> Any:
    """Move one message to another queue in a unit of work: it is never lost."""
    return queues.move(session, user.username, settings.data, queue, msg_id, target.to)


@router.post(
    "/{queue:path}/messages/{msg_id}/move-to-origin",
    responses=responses(404, 409, 413),
    response_model=PutOut,
)
def move_to_origin(
    queue: QueueName, msg_id: MsgId, user: QueueWriter, session: DbSession, settings: SettingsDep
) -> Any:
    """Put a dead-lettered message back on the queue it came from (409 when it records none)."""
    return queues.move(session, user.username, settings.data, queue, msg_id, None)
