"""RouteToLabel: jumps to the Label named in LocalEnvironment.Destination.RouterList."""

from __future__ import annotations

from flowbroker_nodes.base import Assembly, NodeError, field, field_value
from flowbroker_nodes.base import Node as BaseNode
from flowbroker_nodes.spec import NodeSpec, Property, Terminal

SPEC = NodeSpec(
    type="RouteToLabel",
    label="RouteToLabel",
    category="routing",
    icon="route",
    description="Sends the message to the Label node named by the first (or last) "
    "LocalEnvironment.Destination.RouterList.DestinationData.labelName, removing that entry.",
    inputs=(Terminal("in", "in", "In"),),
    outputs=(Terminal("failure", "failure", "Failure"),),
    properties=(
        Property("mode", "enum", "Mode", default="routeToFirst", enum=("routeToFirst", "routeToLast")),
    ),
)


class Node(BaseNode):
    """Takes the first (or last) RouterList entry, removes it, and jumps to that Label."""

    SPEC = SPEC

    def evaluate(self, assembly: Assembly, terminal: str) -> None:
        router = field(assembly.local_environment, "Destination", "RouterList")
        entries = list(router.children_named("DestinationData")) if router is not None else []
        if not entries:
            raise NodeError("LocalEnvironment.Destination.RouterList holds no DestinationData", number=4139)
        entry = entries[0] if self.properties.get("mode") != "routeToLast" else entries[-1]
        name = field_value(entry, "labelName")
        entry.detach()
        label = self.flow.label(str(name)) if name is not None else None
        if label is None:
            raise NodeError(f"RouteToLabel: no Label node named {name!r}", number=4140, inserts=(str(name),))
        self.stats.messages_out += 1
        label.receive("in", assembly)
