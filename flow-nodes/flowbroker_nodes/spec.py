"""The declarative description of a node type: terminals and properties.

A spec is the single source of truth for the designer's palette and property panel, for the
backend's validation of saved flows and for the generated node reference.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Literal

PropertyType = Literal[
    "string", "integer", "boolean", "enum", "esql", "sql", "queue", "topic", "json", "text"
]
TerminalKind = Literal["in", "out", "failure", "catch"]
#: What a node type is to the runtime: "input" nodes start flow threads (they define ``run``),
#: "output" nodes send messages out of the broker, "" nodes work on messages in between.
NodeRole = Literal["input", "output", ""]


@dataclass(frozen=True)
class Terminal:
    """A connection point of a node; ``name`` is the handle id in the designer."""

    name: str
    kind: TerminalKind = "out"
    label: str = ""


@dataclass(frozen=True)
class Property:
    """One configurable property of a node."""

    name: str
    type: PropertyType = "string"
    label: str = ""
    default: Any = None
    required: bool = False
    enum: tuple[str, ...] = ()
    description: str = ""
    editor: str = ""  # editor hint: "esql", "sql", "queue", "topic", "multiline"
    minimum: int | None = None
    maximum: int | None = None


@dataclass(frozen=True)
class NodeSpec:
    """Everything known about a node type before it runs."""

    type: str
    label: str
    category: str
    icon: str
    description: str
    version: int = 1
    inputs: tuple[Terminal, ...] = ()
    outputs: tuple[Terminal, ...] = ()
    properties: tuple[Property, ...] = ()
    dynamic_terminals: bool = False  # subflows and RouteToLabel-style nodes derive terminals
    role: NodeRole = ""
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def is_input(self) -> bool:
        """Whether the node starts flow invocations itself (defined before ``property`` shadows the builtin)."""
        return self.role == "input"

    @property
    def subflow_part(self) -> str:
        """``extra["subflow"]``: "node" for the node that stands for a subflow, "input"/"output" for a
        subflow's own entry and exit nodes, "" for every other node type."""
        return str(self.extra.get("subflow") or "")

    @property
    def is_placeholder(self) -> bool:
        """``extra["placeholder"]``: a node of another product's type kept by an import, never run."""
        return self.extra.get("placeholder") is True

    @property
    def subflow_terminal_property(self) -> str:
        """``extra["terminalProperty"]``: the property that names the subflow node's terminal a
        subflow's entry or exit node stands for; "" for every other node type."""
        if self.subflow_part not in ("input", "output"):
            return ""
        return str(self.extra.get("terminalProperty") or "")

    @property
    def esql_property(self) -> str:
        """``extra["esqlProperty"]``: the property holding the ESQL the node runs (where an ESQL
        breakpoint can stop); "" for a node that runs no ESQL."""
        return str(self.extra.get("esqlProperty") or "")

    @property
    def esql_module(self) -> str:
        """``extra["esqlModule"]``: the kind of ESQL module the node runs ("COMPUTE", "FILTER" or
        "DATABASE", its ``CREATE … MODULE``), which a new node's skeleton declares; "" for none."""
        return str(self.extra.get("esqlModule") or "")

    @property
    def test_input(self) -> str:
        """``extra["testInput"]``: how a flow test or a test message starts the flow at this node:
        "queue" (put on the queue it reads), "file" (written into the directory it reads) or
        "http" (sent to the path it serves); "" for a node no test starts."""
        return str(self.extra.get("testInput") or "")

    @property
    def test_output(self) -> str:
        """``extra["testOutput"]``: what a flow test expects of this node besides queue messages:
        "http" (the answer it gives the request that started the flow) or "file" (the files it
        writes); "" for none."""
        return str(self.extra.get("testOutput") or "")

    def property(self, name: str) -> Property | None:
        for prop in self.properties:
            if prop.name == name:
                return prop
        return None

    def derived_outputs(self, properties: dict[str, Any]) -> tuple[str, ...]:
        """Output terminals a node names in its own properties (a Route node's filter table rows).

        ``extra["outputTerminalsFrom"]`` = ``{"property": table, "key": column}`` says where.
        """
        return self._derived("outputTerminalsFrom", properties)

    def derived_inputs(self, properties: dict[str, Any]) -> tuple[str, ...]:
        """Input terminals a node names in its own properties, where ``extra["inputTerminalsFrom"]`` says."""
        return self._derived("inputTerminalsFrom", properties)

    def label_name(self, properties: dict[str, Any]) -> str | None:
        """The name RouteToLabel and PROPAGATE TO LABEL enter this node by, for a label target
        (``extra["labelProperty"]`` names the property); None for a node that is no label target."""
        name = self.extra.get("labelProperty")
        return str(properties.get(name) or "") if isinstance(name, str) else None

    def queues_read(self, properties: dict[str, Any]) -> tuple[str, ...]:
        """The queues the node takes its messages from (``extra["readsQueue"]`` says where)."""
        return self._named("readsQueue", properties)

    def queues_written(self, properties: dict[str, Any]) -> tuple[str, ...]:
        """The queues the node puts messages to by name (``extra["writesQueue"]`` says where)."""
        return self._named("writesQueue", properties)

    def message_sets(self, properties: dict[str, Any]) -> tuple[str, ...]:
        """The message sets the node parses or writes with (``extra["namesMessageSet"]`` says where)."""
        return self._named("namesMessageSet", properties)

    def _named(self, extra: str, properties: dict[str, Any]) -> tuple[str, ...]:
        """The value of the property ``extra[extra]["property"]`` while each ``"when"`` property
        holds its value (an unset property counts as its default; text compares without case)."""
        where = self.extra.get(extra)
        if not isinstance(where, dict):
            return ()
        for name, wanted in (where.get("when") or {}).items():
            value = properties.get(name)
            if value is None or value == "":
                declared = self.property(name)
                value = declared.default if declared is not None else None
            if isinstance(value, str) and isinstance(wanted, str):
                if value.casefold() != wanted.casefold():
                    return ()
            elif value != wanted:
                return ()
        value = properties.get(str(where.get("property")))
        named = value.strip() if isinstance(value, str) else ""
        return (named,) if named else ()

    def _derived(self, extra: str, properties: dict[str, Any]) -> tuple[str, ...]:
        where = self.extra.get(extra)
        if not isinstance(where, dict):
            return ()
        rows = properties.get(str(where.get("property")))
        if not isinstance(rows, list):
            return ()
        key = str(where.get("key"))
        names = (row.get(key) for row in rows if isinstance(row, dict))
        return tuple(dict.fromkeys(n for n in names if isinstance(n, str) and n))

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        for prop in data["properties"]:
            prop["enum"] = list(prop["enum"])
        data["inputs"] = [dict(t) for t in data["inputs"]]
        data["outputs"] = [dict(t) for t in data["outputs"]]
        return data
