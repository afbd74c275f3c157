"""The node types as the designer and the API describe them: the registry's specs, with their roles."""

from __future__ import annotations

from typing import Any

SUBFLOW_ROLES = ("node", "input", "output")


def describe_all() -> list[dict[str, Any]]:
    """Every registered spec, plus the part it plays in subflows (read from the spec's ``extra``)."""
    from flowbroker_nodes import registry

    described = []
    for spec in registry.specs():
        data = spec.to_json()
        role = spec.extra.get("subflow")
        data["subflow_role"] = role if role in SUBFLOW_ROLES else None
        data["terminal_property"] = (
            spec.extra.get("terminalProperty") if role in ("input", "output") else None
        )
        described.append(data)
    return described
