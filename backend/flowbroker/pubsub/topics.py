"""The topic space: subscriptions in a tree of topic levels, wildcard matching, retained publications, ACLs.

Subscriptions are stored at the node of their topic pattern (levels split on ``/``; ``+`` matches
one level, ``#`` any number of levels including none). Matching a publication walks only the
branches its levels can reach — the exact child, the ``+`` child and the ``#`` child at each
level — so its cost grows with the subscriptions that match, not with how many exist.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from flowbroker.qm.protocol import RC_NOT_AUTHORIZED, RC_TOPIC_STRING_ERROR, QMError

MAX_TOPIC_LENGTH = 10240


@dataclass
class Subscription:
    """A durable (or connection-scoped) subscription delivering matching publications to a queue."""

    name: str
    topic: str
    queue: str
    correl_id: bytes | None = None
    filter_text: str | None = None
    durable: bool = True
    principal: str = ""
    filter_fn: Any = field(default=None, repr=False, compare=False)

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "topic": self.topic,
            "queue": self.queue,
            "correl_id": self.correl_id.hex() if self.correl_id else None,
            "filter": self.filter_text,
            "durable": self.durable,
            "principal": self.principal,
        }


def split_topic(topic: str, *, pattern: bool) -> list[str]:
    """Levels of a topic string; refuses empty strings and misplaced wildcards."""
    if not isinstance(topic, str) or not topic:
        raise QMError(RC_TOPIC_STRING_ERROR, "topic string is empty")
    if len(topic) > MAX_TOPIC_LENGTH:
        raise QMError(RC_TOPIC_STRING_ERROR, f"topic string longer than {MAX_TOPIC_LENGTH} characters")
    if "\x00" in topic:
        raise QMError(RC_TOPIC_STRING_ERROR, "topic string contains a NUL character")
    levels = topic.split("/")
    for i, level in enumerate(levels):
        if "#" in level or "+" in level:
            if not pattern:
                raise QMError(
                    RC_TOPIC_STRING_ERROR,
                    f"wildcard in level {i + 1} of a publication topic {topic!r}",
                )
            if level not in ("#", "+"):
                raise QMError(RC_TOPIC_STRING_ERROR, f"wildcard must fill its level: level {i + 1} {level!r}")
            if level == "#" and i != len(levels) - 1:
                raise QMError(RC_TOPIC_STRING_ERROR, f"'#' must be the last level (level {i + 1})")
    return levels


class _Node:
    __slots__ = ("children", "subs")

    def __init__(self) -> None:
        self.children: dict[str, _Node] = {}
        self.subs: dict[str, Subscription] = {}


class TopicSpace:
    """Subscriptions by topic pattern, retained publications by topic, and topic ACLs."""

    def __init__(self) -> None:
        self._root = _Node()
        self.subscriptions: dict[str, Subscription] = {}
        self.retained: dict[str, bytes] = {}
        #: topic subtree → principal ("*" for everyone) → {"publish": bool, "subscribe": bool}
        self.acls: dict[str, dict[str, dict[str, bool]]] = {}

    # --- subscriptions ----------------------------------------------------------------------
    def add(self, sub: Subscription) -> None:
        levels = split_topic(sub.topic, pattern=True)
        node = self._root
        for level in levels:
            child = node.children.get(level)
            if child is None:
                child = node.children[level] = _Node()
            node = child
        node.subs[sub.name] = sub
        self.subscriptions[sub.name] = sub

    def remove(self, name: str) -> Subscription | None:
        sub = self.subscriptions.pop(name, None)
        if sub is None:
            return None
        path: list[tuple[_Node, str]] = []
        node = self._root
        for level in sub.topic.split("/"):
            path.append((node, level))
            node = node.children[level]
        node.subs.pop(name, None)
        # Prune empty branches so a churn of subscriptions leaves no dead nodes behind.
        for parent, level in reversed(path):
            child = parent.children[level]
            if child.subs or child.children:
                break
            del parent.children[level]
        return sub

    def match(self, topic: str) -> list[Subscription]:
        """Every subscription whose pattern matches the publication topic ``topic``."""
        levels = split_topic(topic, pattern=False)
        found: list[Subscription] = []
        self._walk(self._root, levels, 0, found)
        return found

    def _walk(self, node: _Node, levels: list[str], i: int, found: list[Subscription]) -> None:
        children = node.children
        if not children:
            return
        multi = children.get("#")
        if multi is not None:
            found.extend(multi.subs.values())
        if i == len(levels):
            return
        exact = children.get(levels[i])
        if exact is not None:
            if i + 1 == len(levels):
                found.extend(exact.subs.values())
            self._walk(exact, levels, i + 1, found)
        single = children.get("+")
        if single is not None:
            if i + 1 == len(levels):
                found.extend(single.subs.values())
            self._walk(single, levels, i + 1, found)

    # --- retained publications --------------------------------------------------------------
    def retain(self, topic: str, raw: bytes | None) -> None:
        if raw is None:
            self.retained.pop(topic, None)
        else:
            self.retained[topic] = raw

    def retained_matching(self, pattern: str) -> Iterator[tuple[str, bytes]]:
        pat = split_topic(pattern, pattern=True)
        for topic, raw in self.retained.items():
            if topic_matches(pat, topic.split("/")):
                yield topic, raw

    # --- ACLs -------------------------------------------------------------------------------
    def set_acl(self, subtree: str, principal: str, publish: bool | None, subscribe: bool | None) -> None:
        split_topic(subtree, pattern=False)
        entry = self.acls.setdefault(subtree, {}).setdefault(principal, {})
        if publish is not None:
            entry["publish"] = publish
        if subscribe is not None:
            entry["subscribe"] = subscribe

    def _rule(self, principal: str, levels: list[str], action: str) -> bool | None:
        """The verdict of the rule set exactly on the subtree ``levels``, if one speaks to ``action``."""
        rules = self.acls.get("/".join(levels))
        if rules:
            for who in (principal, "*"):
                rule = rules.get(who)
                if rule is not None and action in rule:
                    return bool(rule[action])
        return None

    def allows(self, principal: str, topic: str, action: str) -> bool:
        """Whether ``principal`` may ``action`` on the concrete topic ``topic``.

        Rules name a topic subtree; the deepest subtree holding a rule for the principal (or for
        ``*``) decides, a rule for the principal beating ``*`` at the same depth. With no rule on
        the path, the action is allowed.
        """
        if not self.acls:
            return True
        levels = topic.split("/")
        for depth in range(len(levels), 0, -1):
            verdict = self._rule(principal, levels[:depth], action)
            if verdict is not None:
                return verdict
        return True

    def may_match_allowed(self, principal: str, pattern: list[str]) -> bool:
        """Whether some topic the subscription pattern matches may be subscribed to by ``principal``.

        Only the subtrees that hold rules can differ from their parents, so the search follows
        the pattern through the rule subtrees and treats every other level as one that inherits
        its parent's verdict: exact for any rule set, and bounded by the number of rules.
        """
        subtrees = [s.split("/") for s in self.acls]

        def children(prefix: list[str]) -> set[str]:
            n = len(prefix)
            return {s[n] for s in subtrees if len(s) > n and s[:n] == prefix}

        def verdict_at(prefix: list[str], inherited: bool) -> bool:
            own = self._rule(principal, prefix, "subscribe")
            return inherited if own is None else own

        def below(prefix: list[str], allowed: bool) -> bool:
            # '#': the prefix itself or any topic under it. A level without rules inherits.
            if allowed:
                return True
            return any(below(prefix + [c], verdict_at(prefix + [c], allowed)) for c in children(prefix))

        def walk(prefix: list[str], i: int, allowed: bool) -> bool:
            if i == len(pattern):
                return allowed
            level = pattern[i]
            if level == "#":
                return below(prefix, allowed)
            if level == "+":
                # A level named by no rule inherits ``allowed``, and so does everything under it.
                return allowed or any(
                    walk(prefix + [c], i + 1, verdict_at(prefix + [c], allowed)) for c in children(prefix)
                )
            return walk(prefix + [level], i + 1, verdict_at(prefix + [level], allowed))

        return walk([], 0, True)

    def check(self, principal: str, topic: str, action: str, *, admin: bool = False) -> None:
        """Refuse with 2035 unless the ACLs let ``principal`` ``action`` on ``topic``.

        A subscription pattern with wildcards is refused only when every topic it can match is
        denied; where it can reach both, it is accepted and publications on denied topics are
        withheld from it when they are delivered (``allows``). The administrator is exempt.
        """
        if admin or not self.acls:
            return
        if action == "subscribe":
            levels = split_topic(topic, pattern=True)
            if "#" in levels or "+" in levels:
                if not self.may_match_allowed(principal, levels):
                    raise QMError(
                        RC_NOT_AUTHORIZED,
                        f"topic ACL: {principal} may not subscribe to any topic matching {topic!r}",
                    )
                return
        if not self.allows(principal, topic, action):
            raise QMError(RC_NOT_AUTHORIZED, f"topic ACL: {principal} may not {action} on topic {topic!r}")


def topic_matches(pattern: list[str], levels: list[str]) -> bool:
    for i, p in enumerate(pattern):
        if p == "#":
            return True
        if i >= len(levels):
            return False
        if p != "+" and p != levels[i]:
            return False
    return len(pattern) == len(levels)
