"""MQSC scripts (``runmqsc`` input): DEFINE QLOCAL becomes a queue definition of our queue manager.

Continuation follows MQSC: a line ending in ``-`` continues with the next line as is, one ending
in ``+`` continues after the next line's leading blanks; ``*`` starts a comment line. Unquoted
names and values are folded to upper case, as runmqsc does.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from flowbroker.qm.names import queue_name_problem

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


@dataclass
class QueueDefinition:
    name: str
    kind: str
    attributes: dict[str, Any] = field(default_factory=dict)
    dropped: list[dict[str, str]] = field(default_factory=list)
    source: str = ""
    problem: str = ""  # why it cannot be defined (an alias, a remote queue, a bad name)


@dataclass
class Script:
    queues: list[QueueDefinition] = field(default_factory=list)
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
    by_name: dict[str, QueueDefinition] = {}
    for line, command in commands(text):
        where = f"{source}:{line}"
        words = [(m.group(1).upper(), m.group(2), m.group(3)) for m in _WORD.finditer(command) if m.group(1)]
        verb = _VERBS.get(words[0][0]) if words else None
        kind = _KINDS.get(words[1][0]) if verb and len(words) > 1 else None
        if verb is None or kind is None or words[1][2] is None:
            script.unsupported.append({"source": where, "command": command[:120]})
            continue
        name = _value(words[1][2])
        queue = by_name.get(name) if verb == "ALTER" else None
        if queue is None:
            if verb == "ALTER":
                script.unsupported.append({"source": where, "command": command[:120]})
                continue
            queue = QueueDefinition(name, kind, source=where)
            script.queues.append(queue)
            by_name[name] = queue
        if kind != "QLOCAL":
            queue.problem = f"{kind} is not supported: the queue manager has local queues only"
        elif (bad := queue_name_problem(name)) is not None:
            queue.problem = bad
        for attribute, _, raw in words[2:]:
            if attribute in _QUIET:
                continue
            mapped = ATTRIBUTES.get(attribute)
            value = _value(raw)
            if mapped is None:
                queue.dropped.append(
                    {"attribute": attribute, "value": value, "reason": "no such queue attribute here"}
                )
                continue
            try:
                queue.attributes[mapped[0]] = mapped[1](value)
            except (KeyError, ValueError):
                queue.dropped.append(
                    {"attribute": attribute, "value": value, "reason": "value not understood"}
                )
    return script
