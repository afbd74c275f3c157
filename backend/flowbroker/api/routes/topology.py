"""The topology drawn as a graph: brokers, execution groups, deployed flows and their queues."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from flowbroker.api.deps import DbSession, Reader, SettingsDep
from flowbroker.api.errors import AUTHENTICATED, responses
from flowbroker.api.schemas import TopologyGraphOut
from flowbroker.services import topology

router = APIRouter(prefix="/api/topology", tags=["brokers"], responses=responses(*AUTHENTICATED))


@router.get("/graph", response_model=TopologyGraphOut)
def topology_graph(_: Reader, session: DbSession, settings: SettingsDep) -> Any:
    """Every broker, execution group and deployed flow, with the queues each flow reads and writes."""
    return topology.graph(session, settings)
