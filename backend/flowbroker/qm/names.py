"""The one rule for queue names, shared by the queue manager and every layer above it.

As IBM MQ names its objects: 1 to 48 characters of A-Z a-z 0-9 ``.`` ``/`` ``_`` ``%``. Two dots
in a row are refused: every name accepted must be reachable as one segment of a URL path (a
``/`` travels percent-encoded), and ``..`` is what clients and proxies rewrite into the parent
directory. Without lookarounds the pattern reads the same in Python, the JSON schema and the
designer's JavaScript.
"""

from __future__ import annotations

import re

MAX_QUEUE_NAME = 48
_CHARS = "A-Za-z0-9_/%"
#: Runs of the allowed characters joined by single dots, with an optional dot at either end.
QUEUE_NAME_PATTERN = rf"^\.?[{_CHARS}]+(?:\.[{_CHARS}]+)*\.?$"
QUEUE_NAME_RE = re.compile(QUEUE_NAME_PATTERN)
#: The same, or empty: a queue attribute naming no queue (no backout queue, no reply-to queue).
QUEUE_NAME_OR_BLANK_PATTERN = rf"^$|{QUEUE_NAME_PATTERN}"
QUEUE_NAME_RULE = f"1-{MAX_QUEUE_NAME} characters of A-Z a-z 0-9 . / _ %, no '..'"


def queue_name_problem(name: object) -> str | None:
    """Why ``name`` is not a valid queue name, or None when it is."""
    if not isinstance(name, str) or not name:
        return "queue name is missing"
    if len(name) > MAX_QUEUE_NAME:
        return f"queue name longer than {MAX_QUEUE_NAME} characters: {name[:60]!r}"
    if ".." in name:
        return f"queue name {name!r} contains '..'"
    if QUEUE_NAME_RE.fullmatch(name) is None:
        bad = next((ch for ch in name if not re.fullmatch(f"[{_CHARS}.]", ch)), None)
        if bad is not None:
            return f"queue name {name!r} contains {bad!r}: use {QUEUE_NAME_RULE}"
        return f"queue name {name!r} is not valid: use {QUEUE_NAME_RULE}"
    return None
