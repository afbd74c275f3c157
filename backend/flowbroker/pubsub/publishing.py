"""The queue manager's publish path: publications staged for every subscription they reach,
retained publications, and subscribing and unsubscribing.

``Publishing`` is part of :class:`flowbroker.qm.server.QueueManager`; it works on the queue
manager's queues, units of work and log, and keeps the topic space (``topics.py``) and the
selectors (``filters.py``) of this package.
"""

from __future__ import annotations

import logging
import struct
import time
from typing import TYPE_CHECKING, Any

from flowbroker.pubsub.filters import Publication, compile_filter
from flowbroker.pubsub.topics import Subscription, TopicSpace, split_topic
from flowbroker.qm import log as qlog
from flowbroker.qm.protocol import (
    PERSISTENCE_OFFSET,
    PUT_TIME_OFFSET,
    RC_BAD_ARGUMENT,
    RC_DUPLICATE_SUBSCRIPTION,
    RC_NOT_AUTHORIZED,
    RC_SUBSCRIPTION_NOT_FOUND,
    RC_UNKNOWN_OBJECT_NAME,
    QMError,
    decode_message,
    encode_message,
    optional_id,
)
from flowbroker.qm.queues import LocalQueue, QMsg, unstage

if TYPE_CHECKING:
    from flowbroker.qm.connection import Connection
    from flowbroker.qm.server import Done, Failed, UnitOfWork

logger = logging.getLogger("flowbroker.qm")

_D = struct.Struct("<d")


class Publishing:
    """The queue manager's pub/sub verbs (run on its loop thread, like every other verb)."""

    if TYPE_CHECKING:  # what the queue manager provides
        topics: TopicSpace
        queues: dict[str, LocalQueue]
        stats: dict[str, int]
        log: qlog.LogWriter | None
        admin_user: str

        def queue(self, name: Any) -> LocalQueue: ...
        def prepare(self, q: LocalQueue, raw: bytes, now: float) -> QMsg: ...
        def enqueue(self, q: LocalQueue, m: QMsg) -> None: ...
        def _require_log(self) -> None: ...
        @staticmethod
        def _durable(q: LocalQueue, m: QMsg) -> bool: ...
        def _deliver(
            self,
            staged: list[tuple[LocalQueue, QMsg]],
            uow: UnitOfWork | None,
            done: list[Done],
            failed: list[Failed],
        ) -> bool: ...

    def publish(
        self,
        conn: Connection,
        topic: Any,
        raw: bytes,
        retain: bool,
        syncpoint: bool,
        done: list[Done],
        failed: list[Failed],
        principal: Any = None,
    ) -> tuple[int, bool]:
        """Publish; returns the number of deliveries and whether the reply must wait for the log.

        ``principal``: the alternate user the administrator publishes for (a flow's principal);
        the topic ACLs then judge that user, as MQ's alternate user authority does.
        """
        if not isinstance(topic, str):
            raise QMError(RC_BAD_ARGUMENT, "topic is missing")
        split_topic(topic, pattern=False)
        user, admin = acting_as(conn, principal)
        self.topics.check(user, topic, "publish", admin=admin)
        now = time.time()
        raw = raw[:PUT_TIME_OFFSET] + _D.pack(now) + raw[PUT_TIME_OFFSET + 8 :]
        persistent = raw[PERSISTENCE_OFFSET] == 1
        if retain and persistent:
            self._require_log()
        staged = self._stage_publication(topic, raw, now, all_or_none=persistent)
        if retain:
            self.topics.retain(topic, raw)
            if persistent:
                tb = topic.encode()
                assert self.log is not None
                self.log.append(qlog.encode_record(qlog.REC_RETAIN, struct.pack("<I", len(tb)) + tb + raw))
        self.stats["publishes"] += 1
        now_done = self._deliver(staged, conn.uow if syncpoint else None, done, failed)
        return len(staged), not now_done

    def _entitled(self, subs: list[Subscription], topic: str) -> list[Subscription]:
        """The subscriptions whose owners may subscribe to ``topic`` (wildcards reach further)."""
        verdicts: dict[str, bool] = {}
        out: list[Subscription] = []
        for s in subs:
            ok = verdicts.get(s.principal)
            if ok is None:
                ok = s.principal == self.admin_user or self.topics.allows(s.principal, topic, "subscribe")
                verdicts[s.principal] = ok
            if ok:
                out.append(s)
        return out

    def _stage_publication(
        self, topic: str, raw: bytes, now: float, *, all_or_none: bool
    ) -> list[tuple[LocalQueue, QMsg]]:
        """A copy of the publication for every subscription it reaches, counted toward depth.

        With ``all_or_none`` a copy that cannot be made refuses the whole publication;
        otherwise that subscriber goes without.
        """
        subs = self.topics.match(topic)
        if subs and self.topics.acls:
            subs = self._entitled(subs, topic)
        if not subs:
            return []
        with_topic = _with_topic(raw, topic)
        publication: Publication | None = None
        staged: list[tuple[LocalQueue, QMsg]] = []
        try:
            for s in subs:
                if s.filter_fn is not None:
                    if publication is None:
                        publication = Publication(raw, topic)
                    try:
                        if not s.filter_fn(publication):
                            continue
                    except Exception as exc:
                        logger.debug("filter of %s raised %s", s.name, exc)
                        continue
                q = self.queues.get(s.queue)
                try:
                    if q is None:
                        raise QMError(RC_UNKNOWN_OBJECT_NAME, f"subscriber queue {s.queue!r} does not exist")
                    body = with_topic
                    if s.correl_id is not None:
                        body = body[:24] + s.correl_id + body[48:]
                    m = self.prepare(q, body, now)
                except QMError as exc:
                    if all_or_none:
                        raise QMError(
                            exc.reason_code, f"publication to {topic!r} not delivered: {exc.reason}"
                        ) from None
                    continue
                q.uncommitted_puts += 1
                staged.append((q, m))
        except BaseException:
            unstage(staged)
            raise
        return staged

    def subscribe(self, conn: Connection, args: dict[str, Any]) -> dict[str, Any]:
        topic = args.get("topic")
        qname = args.get("queue")
        if not isinstance(topic, str):
            raise QMError(RC_BAD_ARGUMENT, "topic is missing")
        split_topic(topic, pattern=True)
        user, admin = acting_as(conn, args.get("principal"))
        self.topics.check(user, topic, "subscribe", admin=admin)
        q = self.queue(qname)
        name = args.get("name") or f"{user}:{topic}:{q.name}"
        if not isinstance(name, str):
            raise QMError(RC_BAD_ARGUMENT, "subscription name must be a string")
        filter_text = args.get("filter") or None
        if filter_text is not None and not isinstance(filter_text, str):
            raise QMError(RC_BAD_ARGUMENT, "filter must be a string")
        durable = bool(args.get("durable", True))
        existing = self.topics.subscriptions.get(name)
        if existing is not None and (existing.topic != topic or existing.queue != q.name):
            raise QMError(
                RC_DUPLICATE_SUBSCRIPTION, f"subscription {name!r} exists with another topic or queue"
            )
        if existing is not None and not conn.admin and existing.principal != conn.user:
            raise QMError(RC_NOT_AUTHORIZED, f"subscription {name!r} belongs to {existing.principal}")
        sub = Subscription(
            name=name,
            topic=topic,
            queue=q.name,
            correl_id=optional_id(args.get("correl_id")),
            filter_text=filter_text,
            durable=durable,
            principal=user,
        )
        if sub.filter_text:
            sub.filter_fn = compile_filter(sub.filter_text)
        if durable or (existing is not None and existing.durable):
            self._require_log()
        if existing is not None:
            self.topics.remove(name)
            conn.temporary_subs.discard(name)
            if existing.durable and not durable:
                assert self.log is not None
                self.log.append(qlog.json_record(qlog.REC_UNSUB, {"name": name}))
        self.topics.add(sub)
        if durable:
            assert self.log is not None
            self.log.append(qlog.json_record(qlog.REC_SUB, sub.as_dict()))
        else:
            conn.temporary_subs.add(name)
        return {"name": name, "retained_delivered": self._deliver_retained(sub, q, admin)}

    def _deliver_retained(self, sub: Subscription, q: LocalQueue, admin: bool) -> int:
        delivered = 0
        now = time.time()
        for rtopic, raw in list(self.topics.retained_matching(sub.topic)):
            if not admin and not self.topics.allows(sub.principal, rtopic, "subscribe"):
                continue
            if sub.filter_fn is not None:
                try:
                    if not sub.filter_fn(Publication(raw, rtopic)):
                        continue
                except Exception:
                    continue
            body = _with_topic(raw, rtopic, retained=True)
            if sub.correl_id is not None:
                body = body[:24] + sub.correl_id + body[48:]
            try:
                m = self.prepare(q, body, now)
            except QMError:
                continue
            if self._durable(q, m):
                assert self.log is not None
                self.log.append(qlog.TxRecord(puts=[(q.name, m.seq, m.raw)]).encode())
            self.enqueue(q, m)
            delivered += 1
        return delivered

    def unsubscribe(self, conn: Connection, name: Any) -> None:
        sub = self.topics.subscriptions.get(name) if isinstance(name, str) else None
        if sub is None:
            raise QMError(RC_SUBSCRIPTION_NOT_FOUND, f"no subscription named {name!r}")
        if not conn.admin and sub.principal != conn.user:
            raise QMError(RC_NOT_AUTHORIZED, f"subscription {name!r} belongs to {sub.principal}")
        if sub.durable:
            self._require_log()
        self.topics.remove(name)
        conn.temporary_subs.discard(name)
        if sub.durable:
            assert self.log is not None
            self.log.append(qlog.json_record(qlog.REC_UNSUB, {"name": name}))


def acting_as(conn: Connection, principal: Any) -> tuple[str, bool]:
    """The user the topic ACLs judge, and whether that user is exempt from them.

    The administrator may name an alternate ``principal`` (MQ's alternate user authority): the
    request is then judged as that user's. Anyone else naming one is refused.
    """
    if principal is None or principal == "":
        return conn.user, conn.admin
    if not isinstance(principal, str) or len(principal) > 64:
        raise QMError(RC_BAD_ARGUMENT, "principal must be a user name of at most 64 characters")
    if not conn.admin:
        raise QMError(
            RC_NOT_AUTHORIZED, f"{conn.user} is not the administrator and may not act for {principal}"
        )
    return principal, False


def _with_topic(raw: bytes, topic: str, retained: bool = False) -> bytes:
    try:
        msg = decode_message(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        raise QMError(RC_BAD_ARGUMENT, f"publication cannot be decoded: {exc}") from None
    if not isinstance(msg.properties, dict):
        raise QMError(RC_BAD_ARGUMENT, "publication properties must be a JSON object")
    msg.properties["MQTopicString"] = topic
    if retained:
        msg.properties["MQIsRetained"] = True
    return encode_message(msg.md, msg.properties, msg.body)
