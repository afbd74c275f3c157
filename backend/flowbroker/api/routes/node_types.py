"""GET /api/node-types: the node specs the designer draws its palette and property forms from."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from flowbroker.api.deps import Reader
from flowbroker.api.errors import AUTHENTICATED, responses
from flowbroker.api.schemas import NodeSpec
from flowbroker.services import node_types as specs

router = APIRouter(prefix="/api", tags=["node types"], responses=responses(*AUTHENTICATED))


@router.get("/node-types", response_model=list[NodeSpec])
def node_types(_: Reader) -> Any:
    """Every registered node type's spec."""
    return specs.describe_all()
