"""Statistics of execution groups and flows: JSON, server-sent events, Prometheus /metrics, user trace."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import AsyncIterator
from typing import Annotated, Any

from fastapi import APIRouter, Query, Request
from fastapi.responses import PlainTextResponse, StreamingResponse

from flowbroker.api.deps import SettingsDep, Viewer
from flowbroker.api.errors import ApiError
from flowbroker.services import stats

router = APIRouter(tags=["statistics"])

_NAME = re.compile(r"^[A-Za-z0-9_.\-]{1,128}$")


def _name(value: str, field: str) -> str:
    if not _NAME.match(value):
        raise ApiError(422, "invalid_name", f"{field}: use 1-128 letters, digits, . _ -")
    return value


@router.get("/api/stats/groups")
def group_statistics(_: Viewer, settings: SettingsDep) -> Any:
    """The last statistics every execution group published (RSS, CPU, threads, flows, nodes)."""
    return stats.read_all(settings.data)


@router.get("/api/stats/groups/{broker}/{group}")
def one_group(broker: str, group: str, _: Viewer, settings: SettingsDep) -> Any:
    """The last statistics of one execution group."""
    record = stats.read_group(settings.data, _name(broker, "broker"), _name(group, "group"))
    if record is None:
        raise ApiError(404, "not_found", f"execution group {broker}/{group} has published no statistics")
    return record


@router.get("/api/stats/flows")
def flow_statistics(_: Viewer, settings: SettingsDep) -> Any:
    """One row per deployed flow: messages, CPU and elapsed µs, errors, backouts, threads."""
    return stats.flows(settings.data)


@router.get("/api/stats/stream")
async def stream(
    request: Request,
    _: Viewer,
    settings: SettingsDep,
    interval: Annotated[float, Query(ge=0.5, le=60)] = 5.0,
) -> StreamingResponse:
    """Server-sent events: a ``stats`` event with every group's statistics each ``interval`` seconds."""

    async def events() -> AsyncIterator[bytes]:
        while True:
            payload = json.dumps(stats.read_all(settings.data), default=str)
            yield f"event: stats\ndata: {payload}\n\n".encode()
            for _ in range(int(interval * 10)):
                if await request.is_disconnected():
                    return
                await asyncio.sleep(0.1)

    return StreamingResponse(events(), media_type="text/event-stream", headers={"Cache-Control": "no-cache"})


@router.get("/api/stats/trace/{broker}/{group}/{flow}", response_class=PlainTextResponse)
def user_trace(
    broker: str,
    group: str,
    flow: str,
    _: Viewer,
    settings: SettingsDep,
    limit: Annotated[int, Query(ge=1, le=16 * 1024 * 1024)] = 1 << 20,
) -> str:
    """The last ``limit`` bytes of a flow's user trace."""
    return stats.read_trace(
        settings.data, _name(broker, "broker"), _name(group, "group"), _name(flow, "flow"), limit
    )


@router.get("/metrics", response_class=PlainTextResponse, include_in_schema=False)
def metrics(settings: SettingsDep) -> PlainTextResponse:
    """Prometheus metrics of every execution group, flow and node."""
    return PlainTextResponse(stats.prometheus(settings.data), media_type="text/plain; version=0.0.4")
