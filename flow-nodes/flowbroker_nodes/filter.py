"""Filter: evaluates an ESQL FILTER module and routes the message by its answer."""

from __future__ import annotations

from esql.tree import Element

from flowbroker_nodes.base import Assembly
from flowbroker_nodes.esqlnode import EsqlNode
from flowbroker_nodes.spec import NodeSpec, Property, Terminal

SPEC = NodeSpec(
    type="Filter",
    label="Filter",
    extra={"esqlProperty": "esql", "esqlModule": "FILTER"},
    category="routing",
    icon="filter",
    description="Main() returning TRUE, FALSE or UNKNOWN sends the unchanged message to the true, false or "
    "unknown terminal.",
    inputs=(Terminal("in", "in", "In"),),
    outputs=(
        Terminal("true", "out", "True"),
        Terminal("false", "out", "False"),
        Terminal("unknown", "out", "Unknown"),
        Terminal("failure", "failure", "Failure"),
    ),
    properties=(
        Property(
            "esql",
            "esql",
            "ESQL",
            required=True,
            editor="esql",
            description="A CREATE FILTER MODULE, or an MQSI V2 filter expression.",
        ),
        Property("module", "string", "Module", default=""),
        Property("dataSource", "string", "Data source", default=""),
        Property("externals", "json", "EXTERNAL variables", default={}),
    ),
)


class Node(EsqlNode):
    """Routes the unchanged message by Main()'s three-valued answer."""

    SPEC = SPEC
    KIND = SPEC.esql_module

    def evaluate(self, assembly: Assembly, terminal: str) -> None:
        # One node invocation: CURRENT_… give one moment, SLEEP and INSTANCESTOPPING see a stop.
        # The context is the one the last invocation on this thread gave back, renewed (a filter
        # builds no output tree: the Root it is given is never sent on).
        ctx = self.reused_context(assembly, Element("Root"), None)
        result = self.run_routine(ctx, invocation=True)
        self.context_done(ctx)
        self.propagate("true" if result is True else "false" if result is False else "unknown", assembly)
