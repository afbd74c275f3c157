"""ExampleStamp: a node type of another distribution, built as the built-in node modules are."""

from __future__ import annotations

from flowbroker_nodes.base import Assembly, DeployProblem
from flowbroker_nodes.base import Node as BaseNode
from flowbroker_nodes.spec import NodeSpec, Property, Terminal

SPEC = NodeSpec(
    type="ExampleStamp",
    label="Example stamp",
    category="transformation",
    icon="compute",
    description="Sets LocalEnvironment.Variables.<name> to a fixed value and propagates the message to out.",
    inputs=(Terminal("in", "in", "In"),),
    outputs=(Terminal("out", "out", "Out"), Terminal("failure", "failure", "Failure")),
    properties=(
        Property("variable", "string", "Variable", default="Stamp", description="The variable to set."),
        Property("value", "string", "Value", required=True, description="The value it is set to."),
    ),
)


class Node(BaseNode):
    """Copies LocalEnvironment, sets the variable and propagates to out."""

    SPEC = SPEC

    def prepare(self) -> None:
        name = str(self.properties.get("variable") or "Stamp")
        if not name.isidentifier():
            raise DeployProblem(f"variable name {name!r} is not an identifier", property="variable")
        self.variable = name

    def evaluate(self, assembly: Assembly, terminal: str) -> None:
        local = assembly.local_environment.copy()
        variables = local.child("Variables") or local.add("Variables")
        variables.add(self.variable, str(self.properties["value"]))
        self.propagate("out", assembly.replace(local_environment=local))
