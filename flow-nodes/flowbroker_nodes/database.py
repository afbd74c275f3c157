"""Database: runs an ESQL DATABASE module against a named data source (SQLite or PostgreSQL)."""

from __future__ import annotations

from esql.functions import invocation

from flowbroker_nodes.base import Assembly, DeployProblem
from flowbroker_nodes.esqlnode import EsqlNode
from flowbroker_nodes.spec import NodeSpec, Property, Terminal

SPEC = NodeSpec(
    type="Database",
    label="Database",
    extra={"esqlProperty": "esql", "esqlModule": "DATABASE"},
    category="database",
    icon="database",
    description="Runs Main() of an ESQL DATABASE module with the named data source; the unchanged message "
    "goes on to out. The database work commits with the message when the flow's coordinatedTransaction is "
    "set, else when the node finishes.",
    inputs=(Terminal("in", "in", "In"),),
    outputs=(Terminal("out", "out", "Out"), Terminal("failure", "failure", "Failure")),
    properties=(
        Property(
            "esql",
            "esql",
            "ESQL",
            required=True,
            editor="esql",
            description="A CREATE DATABASE MODULE, or MQSI V2 bare statements (INSERT INTO Database.t …).",
        ),
        Property("module", "string", "Module", default=""),
        Property(
            "dataSource",
            "string",
            "Data source",
            required=True,
            description="Name of a data source configured for the broker (or a SQLAlchemy URL).",
        ),
        Property(
            "transaction",
            "enum",
            "Transaction",
            default="automatic",
            enum=("automatic", "commit"),
            description="automatic: commit with the flow; commit: commit as soon as the node finishes.",
        ),
        Property("externals", "json", "EXTERNAL variables", default={}),
    ),
)


class Node(EsqlNode):
    """Runs Main() against the data source; the message goes on unchanged."""

    SPEC = SPEC
    KIND = SPEC.esql_module

    def prepare(self) -> None:
        if not self.properties.get("dataSource"):
            raise DeployProblem("required: the name of a data source", property="dataSource")
        super().prepare()

    def evaluate(self, assembly: Assembly, terminal: str) -> None:
        # One node invocation: CURRENT_… give one moment, SLEEP and INSTANCESTOPPING see a stop.
        with invocation(stop=self.flow.stop):
            result = self.run_routine(self.context(assembly))
        if result is not False:
            self.propagate("out", assembly)
