"""The node registry: every node type's module, imported once, looked up by type name.

The built-in node types come first, in :data:`NODE_MODULES` order, then those of installed
plug-in distributions (the ``flowbroker.nodes`` entry-point group, see :mod:`flowbroker_nodes.plugins`).
"""

from __future__ import annotations

import importlib
from functools import cache
from types import ModuleType

from flowbroker_nodes.spec import NodeSpec

#: One line per node type module (each defines ``SPEC`` and its runtime class ``Node``).
NODE_MODULES: tuple[str, ...] = (
    "mq_input",
    "mq_output",
    "mq_reply",
    "compute",
    "filter",
    "database",
    "publication",
    "trace",
    "try_catch",
    "throw",
    "label",
    "route_to_label",
    "flow_order",
    "passthrough",
    "reset_content_descriptor",
    "input",
    "output",
    "subflow",
    "mqtt_subscribe",
    "mqtt_publish",
    "route",
    "mq_get",
    "file_output",
    "file_input",
    "timeout_notification",
    "timeout_control",
    "http_input",
    "http_reply",
    "http_request",
    "aggregate_control",
    "aggregate_request",
    "aggregate_reply",
    "xsl_transform",
    "python_compute",
    "unsupported",
)


@cache
def builtin_modules() -> dict[str, ModuleType]:
    """Node type name → its module, for the node types this package defines."""
    found: dict[str, ModuleType] = {}
    for dotted in NODE_MODULES:
        module = importlib.import_module(f"flowbroker_nodes.{dotted}")
        spec: NodeSpec = module.SPEC
        found[spec.type] = module
    return found


@cache
def modules() -> dict[str, ModuleType]:
    """Node type name → its module: the built-in node types, then the accepted plug-ins'."""
    from flowbroker_nodes import plugins

    builtin = builtin_modules()
    return {**builtin, **plugins.load(builtin)}


def specs() -> list[NodeSpec]:
    """Every registered node type's spec, in registry order."""
    return [m.SPEC for m in modules().values()]


def spec(type_name: str) -> NodeSpec | None:
    module = modules().get(type_name)
    return module.SPEC if module is not None else None


def subflow_part(node: object) -> str:
    """The part a flow document's node plays in subflows ("node", "input", "output" or "") by its
    type's spec; "" for anything that is not a node of a registered type."""
    found = spec(str(node.get("type"))) if isinstance(node, dict) else None
    return found.subflow_part if found is not None else ""
