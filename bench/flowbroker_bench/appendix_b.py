"""Seed 004's Appendix B tables 7.1–7.14 as declarative cases: flow, message, seed table and set-up.

A case names the example flow it deploys (``examples/flows``), the builder of its request
messages, and the seed table it reproduces; that table's rows in ``data/seed004.json`` give the
message sizes and persistence measured. What sets a table apart from its neighbour — a flow
property, a node property override, instances, execution groups, subscribers, a subscription's
content filter, user trace, a message set — is a field of the case that the runner
(:mod:`flowbroker_bench.flow`) applies; no row has code of its own.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from flowbroker_bench import bodies, convert
from flowbroker_bench.bodies import BodyBuilder

#: Checks a reply: ``check(request body, reply body, message size)`` raises ValueError when wrong.
ReplyCheck = Callable[[bytes, bytes, int], None]


@dataclass(frozen=True)
class Case:
    """One Appendix B table reproduced with a deployed flow; its cells come from the seed data."""

    key: str
    label: str
    table: str  # the seed 004 table id whose figures the rows are compared with ("" for none)
    flow_file: str
    in_queue: str
    out_queue: str
    body: BodyBuilder
    #: flow-level properties set on the document before it is deployed
    flow_properties: Mapping[str, Any] = field(default_factory=dict)
    #: node property overrides ("nodeId.property") sent with the deployment, by message size
    overrides: Callable[[int], dict[str, Any]] | None = None
    groups: int = 1
    #: subscriptions on :data:`bodies.TOPIC`: the first to ``out_queue``, the others drained
    subscribers: int = 0
    subscription_filter: str | None = None
    trace: tuple[str, str] | None = None  # user trace (level, mode) switched on for the flow
    message_set: Callable[[], tuple[str, dict[str, Any]]] | None = None
    check: ReplyCheck | None = None
    sizes_from: str = ""  # the table whose rows give the cells when ``table`` is ""
    note: str = ""

    def cells(self) -> list[tuple[bool, int]]:
        """(persistent, message size) of every row of the seed table, in the seed's order."""
        from flowbroker_bench import seeds

        rows = seeds.table("004", self.table or self.sizes_from)["rows"]
        return [(str(r["persistence"]) == "yes", int(r["message_size"])) for r in rows]

    def seed_key(self, persistent: bool, size: int) -> str | None:
        if not self.table:
            return None
        return f"004/{self.table}/{'p' if persistent else 'np'}-{size}"

    @property
    def size(self) -> int:
        """The headline size: the table's first non-persistent row."""
        return next(size for persistent, size in self.cells() if not persistent)

    @property
    def persistent(self) -> bool:
        return False

    @property
    def seed_table(self) -> str:
        return self.table

    @property
    def seed(self) -> float | None:
        """Appendix B's msgs/s for the headline cell (from the seed data)."""
        from flowbroker_bench import seeds

        key = self.seed_key(False, self.size)
        return seeds.figure(key).value if key else None


def _unchanged(request: bytes, reply: bytes, size: int) -> None:
    if reply != request:
        raise ValueError(f"the reply ({len(reply)} bytes) is not the request ({len(request)} bytes)")


def _same_payload(request: bytes, reply: bytes, size: int) -> None:
    tail = request[-64:]
    if not reply.endswith(tail):
        raise ValueError("the publication does not end with the request's payload")


def _holding(*fragments: bytes) -> ReplyCheck:
    def check(request: bytes, reply: bytes, size: int) -> None:
        for fragment in fragments:
            if fragment not in reply:
                raise ValueError(f"the reply lacks {fragment.decode()!r}")

    return check


_PROCESSED = _holding(b"<Processed>yes</Processed>")
_PROCESSING_PATH = _holding(b'<ProcessingPath><Component><Name>Component1</Name><Transport Type="A">')
_FORMATTED = _holding(b"<Field01>T01", b"<Field37>[V037]</Field37>", b"<Field50>")
_ONE_RULE = _holding(b"<Rule>rule 37</Rule><RulesFired>1</RulesFired>")


def _conversion(source: str, target: str) -> Case:
    """§7.6: the conversion flow deployed with this conversion's ESQL, the set shipped with it."""
    src, tgt = convert.TABLE_NAMES[source], convert.TABLE_NAMES[target]

    def body(size: int, ident: int) -> tuple[bytes, dict[str, Any]]:
        return convert.request(source, size), {"format": "MQHRF2", "encoding": 546, "coded_char_set_id": 1208}

    def check(request: bytes, reply: bytes, size: int) -> None:
        convert.check_reply(source, target, reply, size)

    return Case(
        f"convert-{src}-{tgt}",
        f"Convert {source} to {target} (Compute node)",
        f"7.6-{src}-{tgt}",
        "format_conversion.json",
        "CONVERT.IN",
        "CONVERT.OUT",
        body,
        overrides=lambda size: {"compute.esql": convert._esql(source, target, size)},
        message_set=lambda: (convert.SET_NAME, convert.message_set()),
        check=check,
    )


_NEON_NOTE = (
    "closest equivalent, not NEON: a Compute node; transaction mode yes and 3 instances as §2.7 ran NEONRules"
)
_SUBSCRIBER_NOTE = (
    "counted as §2.11: request put + one subscriber's get = 2; the other subscribers' copies are "
    "drained and not counted (Deliveries/Sec)"
)


def _subscribers(n: int) -> Case:
    return Case(
        f"subscribers-{n}",
        f"Publication, {n} subscriber{'s' if n > 1 else ''}",
        f"7.11-sub{n}",
        "publication.json",
        "PUBLISH.IN",
        "PUBLISH.SUB",
        bodies.publication,
        check=_same_payload,
        subscribers=n,
        note=_SUBSCRIBER_NOTE,
    )


def _groups(n: int) -> Case:
    return Case(
        f"groups-{n}",
        f"Very complex compute, {n} execution group{'s' if n > 1 else ''}",
        f"7.8-eg{n}",
        "very_complex_compute.json",
        "VERYCOMPLEX.IN",
        "VERYCOMPLEX.OUT",
        bodies.csim,
        check=_PROCESSING_PATH,
        groups=n,
        note="the same flow in each group, each its own worker process, sharing the queues" if n > 1 else "",
    )


CASES: list[Case] = [
    Case(
        "passthrough",
        "MQInput/MQOutput",
        "7.1",
        "passthrough.json",
        "PASSTHROUGH.IN",
        "PASSTHROUGH.OUT",
        bodies.blob,
        check=_unchanged,
    ),
    Case(
        "simple-compute",
        "Simple compute",
        "7.2.1",
        "simple_compute.json",
        "SIMPLE.IN",
        "SIMPLE.OUT",
        bodies.one_field,
        check=_PROCESSED,
    ),
    Case(
        "complex-compute",
        "Complex compute",
        "7.2.2",
        "complex_compute.json",
        "COMPLEX.IN",
        "COMPLEX.OUT",
        bodies.csim,
        check=_PROCESSING_PATH,
    ),
    Case(
        "five-complex",
        "Five chained complex computes",
        "7.2.3",
        "five_complex_computes.json",
        "CHAINED.IN",
        "CHAINED.OUT",
        bodies.csim,
        check=_PROCESSING_PATH,
    ),
    Case(
        "very-complex",
        "Very complex compute",
        "7.2.4",
        "very_complex_compute.json",
        "VERYCOMPLEX.IN",
        "VERYCOMPLEX.OUT",
        bodies.csim,
        check=_PROCESSING_PATH,
    ),
    Case(
        "database",
        "Database insert/delete (coordinatedTransaction)",
        "7.3",
        "database_insert_delete.json",
        "DATABASE.IN",
        "DATABASE.OUT",
        bodies.xml_record,
        check=_unchanged,
    ),
    Case(
        "filter",
        "Filter on an MQRFH2 tag",
        "7.4",
        "filter_rfh2.json",
        "FILTER.IN",
        "FILTER.OUT",
        bodies.filter_rfh2,
        check=_unchanged,
    ),
    Case(
        "publication",
        "Publication, one subscriber",
        "7.5",
        "publication.json",
        "PUBLISH.IN",
        "PUBLISH.SUB",
        bodies.publication,
        check=_same_payload,
        subscribers=1,
    ),
    *[_conversion(s, t) for s in convert.FORMATS for t in convert.FORMATS],
    Case(
        "neon-formatter-equivalent",
        "50 field formats in ESQL (NEONFormatter equivalent)",
        "7.7-neon-v2-50fields",
        "neon_formatter_equivalent.json",
        "NEONFMT.IN",
        "NEONFMT.OUT",
        bodies.fifty_fields,
        check=_FORMATTED,
        note=_NEON_NOTE,
    ),
    Case(
        "neon-rules-equivalent",
        "100 routing rules in ESQL, 1 fires (NEONRules equivalent)",
        "7.7-neon-v2-100rules",
        "neon_rules_equivalent.json",
        "NEONRULES.IN",
        "NEONRULES.OUT",
        bodies.fifty_fields,
        check=_ONE_RULE,
        note=_NEON_NOTE,
    ),
    *[_groups(n) for n in (1, 2, 4)],
    Case(
        "transaction-automatic",
        "MQInput/MQOutput, transaction mode automatic",
        "7.9-automatic",
        "passthrough.json",
        "PASSTHROUGH.IN",
        "PASSTHROUGH.OUT",
        bodies.blob,
        check=_unchanged,
        overrides=lambda size: {"in.transactionMode": "automatic"},
    ),
    Case(
        "transaction-yes",
        "MQInput/MQOutput, transaction mode yes",
        "7.9-yes",
        "passthrough.json",
        "PASSTHROUGH.IN",
        "PASSTHROUGH.OUT",
        bodies.blob,
        check=_unchanged,
        overrides=lambda size: {"in.transactionMode": "yes"},
    ),
    Case(
        "coordinated-no",
        "Database insert/delete, coordinatedTransaction no",
        "7.10-coordinated-no",
        "database_insert_delete.json",
        "DATABASE.IN",
        "DATABASE.OUT",
        bodies.xml_record,
        check=_unchanged,
        flow_properties={"coordinatedTransaction": False},
    ),
    Case(
        "coordinated-yes",
        "Database insert/delete, coordinatedTransaction yes",
        "7.10-coordinated-yes",
        "database_insert_delete.json",
        "DATABASE.IN",
        "DATABASE.OUT",
        bodies.xml_record,
        check=_unchanged,
        flow_properties={"coordinatedTransaction": True},
    ),
    *[_subscribers(n) for n in (1, 10, 30, 50, 70, 100, 1000)],
    Case(
        "routing-topic",
        "Publication, topic-based subscription",
        "7.12-topic",
        "publication.json",
        "PUBLISH.IN",
        "PUBLISH.SUB",
        bodies.publication,
        check=_same_payload,
        subscribers=1,
    ),
    Case(
        "routing-content",
        "Publication, content-filtered subscription",
        "7.12-content",
        "publication.json",
        "PUBLISH.IN",
        "PUBLISH.SUB",
        bodies.publication,
        check=_same_payload,
        subscribers=1,
        subscription_filter=bodies.CONTENT_FILTER,
        note=f"subscription filter: {bodies.CONTENT_FILTER}",
    ),
    Case(
        "fields-1",
        "Simple compute, 1-field message",
        "7.13-1field",
        "simple_compute.json",
        "SIMPLE.IN",
        "SIMPLE.OUT",
        bodies.one_field,
        check=_PROCESSED,
    ),
    Case(
        "fields-50",
        "Simple compute, 50-field message",
        "7.13-50fields",
        "simple_compute.json",
        "SIMPLE.IN",
        "SIMPLE.OUT",
        bodies.fifty_fields,
        check=_PROCESSED,
    ),
    Case(
        "trace-none",
        "MQInput/MQOutput, user trace off",
        "7.14-notrace",
        "passthrough.json",
        "PASSTHROUGH.IN",
        "PASSTHROUGH.OUT",
        bodies.blob,
        check=_unchanged,
    ),
    Case(
        "trace-normal-safe",
        "MQInput/MQOutput, user trace normal, safe mode",
        "7.14-normal-safe",
        "passthrough.json",
        "PASSTHROUGH.IN",
        "PASSTHROUGH.OUT",
        bodies.blob,
        check=_unchanged,
        trace=("normal", "safe"),
    ),
    Case(
        "trace-normal-fast",
        "MQInput/MQOutput, user trace normal, fast mode",
        "",
        "passthrough.json",
        "PASSTHROUGH.IN",
        "PASSTHROUGH.OUT",
        bodies.blob,
        check=_unchanged,
        trace=("normal", "fast"),
        sizes_from="7.14-notrace",
        note="the seed describes fast mode (§2.14) but tabulates no figures for it",
    ),
]

#: Extra seed tables of §7.7 this harness cannot reproduce, and why (printed with --list).
NOT_REPRODUCED = {
    "7.7-neon-v1-50fields": "NEONFormatter running in MQSI V1, outside the broker: no counterpart here",
}


def select(selectors: list[str]) -> list[Case]:
    """The cases named by key, table id (``7.11-sub10``) or table prefix (``7.11``, ``7.2``), in table order."""
    if not selectors:
        return list(CASES)
    chosen = []
    unknown = []
    for selector in selectors:
        found = [c for c in CASES if _matches(c, selector)]
        if not found:
            unknown.append(selector)
        chosen += [c for c in found if c not in chosen]
    if unknown:
        known = ", ".join(c.key for c in CASES)
        raise ValueError(f"unknown case {', '.join(map(repr, unknown))}; known: {known} (or a table id)")
    return [c for c in CASES if c in chosen]


def _matches(case: Case, selector: str) -> bool:
    table = case.table or case.sizes_from
    return selector in (case.key, case.table) or table.startswith((f"{selector}-", f"{selector}."))
