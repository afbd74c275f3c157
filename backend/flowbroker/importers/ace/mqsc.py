"""MQSC scripts (``runmqsc`` input): the queues, topics and subscriptions our queue manager can hold.

DEFINE QLOCAL becomes a local queue; DEFINE SUB a durable subscription delivering to its DEST queue
(its topic string joined to that of its TOPICOBJ, as MQ joins them); DEFINE TOPIC only names a
topic string, which needs no definition here, and serves the subscriptions that name it. A QALIAS
of a queue cannot be defined (there are no alias queues) but is kept so that flow nodes naming it
can be given its target; QREMOTE and QMODEL are reported: messages do not travel to other queue
managers and there are no dynamic queues.

Continuation follows MQSC: a line ending in ``-`` continues with the next line as is, one ending
in ``+`` continues after the next line's leading blanks; ``*`` starts a comment line. Unquoted
names and values are folded to upper case, as runmqsc does.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from flowbroker.pubsub.topics import split_topic
from flowbroker.qm.names import queue_name_problem
from flowbroker.qm.protocol import QMError

_WORD = re.compile(r"\s*([A-Za-z][A-Za-z0-9]*)\s*(\(\s*('(?:[^']|'')*'|[^)]*)\s*\))?")
_KINDS = {
    "QLOCAL": "QLOCAL",
    "QL": "QLOCAL",
    "QALIAS": "QALIAS",
    "QA": "QALIAS",
    "QREMOTE": "QREMOTE",
    "QR": "QREMOTE",
    "QMODEL": "QMODEL",
    "QM": "QMODEL",
    "TOPIC": "TOPIC",
    "SUB": "SUB",
    "SUBSCRIPTION": "SUB",
}
_VERBS = {"DEFINE": "DEFINE", "DEF": "DEFINE", "ALTER": "ALTER", "ALT": "ALTER"}
_TRUE_FALSE = {"ENABLED": False, "DISABLED": True}


def _persistence(value: str) -> int:
    return {"YES": 1, "NO": 0}[value]


#: MQSC attribute → (our queue attribute, converter).
ATTRIBUTES: dict[str, tuple[str, Any]] = {
    "MAXDEPTH": ("max_depth", int),
    "MAXMSGL": ("max_msg_length", int),
    "DEFPSIST": ("default_persistence", _persistence),
    "DEFPRTY": ("default_priority", int),
    "BOTHRESH": ("backout_threshold", int),
    "BOQNAME": ("backout_requeue_q", str),
    "DESCR": ("description", str),
    "PUT": ("put_inhibited", lambda v: _TRUE_FALSE[v]),
    "GET": ("get_inhibited", lambda v: _TRUE_FALSE[v]),
}
#: Attributes that change nothing here; not worth a warning.
_QUIET = {
    "REPLACE",
    "NOREPLACE",
    "LIKE",
    "SHARE",
    "NOSHARE",
    "DEFSOPT",
    "USAGE",
    "CLUSTER",
    "CLUSNL",
    "NOTRIGGER",
    "TRIGGER",
    "TRIGTYPE",
    "INITQ",
    "PROCESS",
    "STGCLASS",
    "HARDENBO",
    "NOHARDENBO",
}


#: Attributes of an alias or remote queue that say where it leads (kept apart from the attributes).
_LEADS = {
    "TARGET": "target",
    "TARGQ": "target",
    "TARGTYPE": "target_type",
    "RNAME": "rname",
    "RQMNAME": "rqmname",
}
_LEADS_QUIET = {"XMITQ"}
#: Subscription attributes that change nothing here at their value, and the values that make a
#: subscription one the queue manager cannot hold.
_SUB_QUIET = {"REPLACE", "NOREPLACE", "LIKE", "DESCR"}
_SUB_REFUSED = {
    "SELECTOR": "SELECTOR is an SQL92 message selector; subscriptions here filter with ESQL expressions "
    "(define the subscription with a filter by hand)",
    "DESTQMGR": "publications are delivered only to queues of this queue manager",
    "DESTCLAS": "a managed destination (DESTCLAS(MANAGED)) is not supported: name the DEST queue",
    "WSCHEMA": "character wildcards (WSCHEMA(CHAR)) are not supported: topic-level wildcards # and + only",
}
_SUB_FINE = {"DESTCLAS": "PROVIDED", "WSCHEMA": "TOPIC", "DESTQMGR": ""}
#: Topic object attributes: a topic here is only its string, so these have nowhere to go.
_TOPIC_QUIET = {"REPLACE", "NOREPLACE", "LIKE", "DESCR", "TYPE"}


@dataclass
class QueueDefinition:
    name: str
    kind: str
    attributes: dict[str, Any] = field(default_factory=dict)
    dropped: list[dict[str, str]] = field(default_factory=list)
    source: str = ""
    problem: str = ""  # why it cannot be defined (an alias, a remote queue, a bad name)
    #: where an alias or remote queue leads: target, target_type, rname, rqmname
    leads: dict[str, str] = field(default_factory=dict)


@dataclass
class TopicDefinition:
    """A topic object: a name for a topic string (subscriptions may name it as TOPICOBJ)."""

    name: str
    topic_string: str = ""
    dropped: list[dict[str, str]] = field(default_factory=list)
    source: str = ""
    problem: str = ""


@dataclass
class SubscriptionDefinition:
    """A durable subscription: publications on ``topic`` (a pattern) are put to ``queue``."""

    name: str
    topic_string: str = ""
    topic_object: str = ""
    queue: str = ""
    correl_id: str = ""
    dropped: list[dict[str, str]] = field(default_factory=list)
    source: str = ""
    problem: str = ""
    topic: str = ""  # the full topic pattern, once TOPICOBJ is resolved


@dataclass
class Script:
    queues: list[QueueDefinition] = field(default_factory=list)
    topics: list[TopicDefinition] = field(default_factory=list)
    subscriptions: list[SubscriptionDefinition] = field(default_factory=list)
    unsupported: list[dict[str, str]] = field(default_factory=list)  # other commands: {source, command}


def commands(text: str) -> list[tuple[int, str]]:
    """The MQSC commands of a script with the line each starts on; continuations joined."""
    found: list[tuple[int, str]] = []
    pending: str | None = None
    mode = "-"
    start = 0
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.rstrip()
        if pending is None:
            if not line.strip() or line.lstrip().startswith("*"):
                continue
            start, piece = number, line.lstrip()
        else:
            piece = line.lstrip() if mode == "+" else line
        if piece.endswith(("+", "-")):
            pending, mode = (pending or "") + piece[:-1], piece[-1]
            continue
        found.append((start, ((pending or "") + piece).strip()))
        pending = None
    if pending:
        found.append((start, pending.strip()))
    return found


def _value(raw: str | None) -> str:
    if raw is None:
        return ""
    raw = raw.strip()
    if raw.startswith("'") and raw.endswith("'") and len(raw) >= 2:
        return raw[1:-1].replace("''", "'")
    return raw.upper()


def parse(text: str, source: str) -> Script:
    script = Script()
    by_name: dict[tuple[str, str], Any] = {}
    for line, command in commands(text):
        where = f"{source}:{line}"
        words = [(m.group(1).upper(), m.group(2), m.group(3)) for m in _WORD.finditer(command) if m.group(1)]
        verb = _VERBS.get(words[0][0]) if words else None
        kind = _KINDS.get(words[1][0]) if verb and len(words) > 1 else None
        if verb is None or kind is None or words[1][2] is None:
            script.unsupported.append({"source": where, "command": command[:120]})
            continue
        name = _value(words[1][2])
        group = kind if kind in ("TOPIC", "SUB") else "QUEUE"
        found = by_name.get((group, name)) if verb == "ALTER" else None
        if found is None:
            if verb == "ALTER":
                script.unsupported.append({"source": where, "command": command[:120]})
                continue
            found = _new(script, kind, name, where)
            by_name[(group, name)] = found
        attributes = [(attribute, _value(raw)) for attribute, _, raw in words[2:]]
        if isinstance(found, TopicDefinition):
            _topic(found, attributes)
        elif isinstance(found, SubscriptionDefinition):
            _subscription(found, attributes)
        else:
            _queue(found, attributes)
    topics = {t.name: t for t in script.topics}
    for sub in script.subscriptions:
        _resolve(sub, topics)
    return script


def _new(script: Script, kind: str, name: str, where: str) -> Any:
    if kind == "TOPIC":
        topic = TopicDefinition(name, source=where)
        script.topics.append(topic)
        return topic
    if kind == "SUB":
        sub = SubscriptionDefinition(name, source=where)
        script.subscriptions.append(sub)
        return sub
    queue = QueueDefinition(name, kind, source=where)
    script.queues.append(queue)
    return queue


def _queue(queue: QueueDefinition, attributes: list[tuple[str, str]]) -> None:
    for attribute, value in attributes:
        if attribute in _QUIET or (queue.kind != "QLOCAL" and attribute in _LEADS_QUIET):
            continue
        if queue.kind in ("QALIAS", "QREMOTE") and attribute in _LEADS:
            queue.leads[_LEADS[attribute]] = value
            continue
        mapped = ATTRIBUTES.get(attribute)
        if mapped is None:
            queue.dropped.append(
                {"attribute": attribute, "value": value, "reason": "no such queue attribute here"}
            )
            continue
        try:
            queue.attributes[mapped[0]] = mapped[1](value)
        except (KeyError, ValueError):
            queue.dropped.append({"attribute": attribute, "value": value, "reason": "value not understood"})
    queue.problem = _queue_problem(queue)


def _queue_problem(queue: QueueDefinition) -> str:
    if queue.kind == "QALIAS":
        target = queue.leads.get("target", "")
        if queue.leads.get("target_type", "QUEUE") != "QUEUE":
            return (
                f"QALIAS of the topic {target or '?'} is not supported: an MQOutput node naming it would publish; "
                "use a Publication node"
            )
        if not target:
            return "QALIAS without TARGET: nothing to resolve it to"
        return (
            f"QALIAS is not supported: the queue manager has no alias queues; flow nodes naming "
            f"{queue.name} are given its target {target}"
        )
    if queue.kind == "QREMOTE":
        rname, rqmname = queue.leads.get("rname", ""), queue.leads.get("rqmname", "")
        leads = f" (RNAME {rname or '-'} at RQMNAME {rqmname or '-'})"
        return f"QREMOTE is not supported: messages do not travel to other queue managers{leads}"
    if queue.kind == "QMODEL":
        return (
            "QMODEL is not supported: there are no dynamic queues; define the queues the flows use as QLOCAL"
        )
    return queue_name_problem(queue.name) or ""


def _topic(topic: TopicDefinition, attributes: list[tuple[str, str]]) -> None:
    for attribute, value in attributes:
        if attribute == "TOPICSTR":
            topic.topic_string = value
        elif attribute not in _TOPIC_QUIET:
            topic.dropped.append(
                {
                    "attribute": attribute,
                    "value": value,
                    "reason": "a topic here is only its string; topic objects hold no attributes",
                }
            )
    topic.problem = "" if topic.topic_string else "TOPIC without TOPICSTR"


def _subscription(sub: SubscriptionDefinition, attributes: list[tuple[str, str]]) -> None:
    for attribute, value in attributes:
        if attribute in _SUB_QUIET or _SUB_FINE.get(attribute) == value:
            continue
        if attribute == "TOPICSTR":
            sub.topic_string = value
        elif attribute == "TOPICOBJ":
            sub.topic_object = value
        elif attribute == "DEST":
            sub.queue = value
        elif attribute == "DESTCORL":
            sub.correl_id = value
        elif attribute in _SUB_REFUSED:
            sub.problem = sub.problem or f"{attribute}({value}): {_SUB_REFUSED[attribute]}"
        else:
            sub.dropped.append(
                {"attribute": attribute, "value": value, "reason": "no such subscription attribute here"}
            )


def _resolve(sub: SubscriptionDefinition, topics: dict[str, TopicDefinition]) -> None:
    """The subscription's full topic (its TOPICOBJ's string, then its own), or why it has none."""
    base = ""
    if sub.topic_object and sub.topic_object != "SYSTEM.BASE.TOPIC":
        topic = topics.get(sub.topic_object)
        if topic is None or not topic.topic_string:
            sub.problem = (
                sub.problem or f"TOPICOBJ({sub.topic_object}) is not defined with a TOPICSTR in the scripts"
            )
            return
        base = topic.topic_string
    sub.topic = "/".join(part for part in (base, sub.topic_string) if part)
    if sub.problem:
        return
    if not sub.queue:
        sub.problem = "a subscription needs DEST, the queue publications are put to"
    elif not sub.topic:
        sub.problem = "a subscription needs TOPICSTR or TOPICOBJ"
    elif bad := queue_name_problem(sub.queue):
        sub.problem = f"DEST: {bad}"
    elif sub.correl_id and not re.fullmatch(r"[0-9A-Fa-f]{1,48}", sub.correl_id):
        sub.problem = f"DESTCORL({sub.correl_id}) is not a correlation id of up to 48 hex digits"
    else:
        try:
            split_topic(sub.topic, pattern=True)
        except QMError as exc:
            sub.problem = f"topic {sub.topic!r}: {exc.reason or exc}"
