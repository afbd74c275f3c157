"""Statistics of execution groups and flows: JSON, history, server-sent events, Prometheus /metrics, user trace.

The statistics keep the names the execution groups publish them with (``messages_in``,
``cpu_us``…), the same in the files, in these responses and in the Prometheus metrics.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import AsyncIterator
from typing import Annotated, Any

from fastapi import APIRouter, Query, Request
from fastapi.responses import PlainTextResponse, StreamingResponse
from pydantic import BaseModel, ConfigDict, Field

from flowbroker.api.deps import Reader, SettingsDep
from flowbroker.api.errors import AUTHENTICATED, ApiError, responses
from flowbroker.services import stats
from flowbroker.services.stats_history import WINDOW_SECONDS, StatsHistory

router = APIRouter(tags=["statistics"], responses=responses(*AUTHENTICATED))

_NAME = re.compile(r"^[A-Za-z0-9_.\-]{1,128}$")


class Published(BaseModel):
    """Fields as the groups publish them; a newer group may add more, which pass through."""

    model_config = ConfigDict(extra="allow", json_schema_serialization_defaults_required=True)


class NodeStatistics(Published):
    messages_in: int = 0
    messages_out: int = 0
    errors: int = 0
    cpu_us: int = Field(
        default=0,
        description="CPU time in the node and below it, µs; sampled: the thread's CPU clock is read on "
        "the node's first message and every 16th after, and the sampled time is scaled by the elapsed "
        "time of all its messages",
    )
    elapsed_us: int = Field(default=0, description="elapsed time in the node and below it, µs")


class TraceSetting(Published):
    level: str = Field(description="none, normal or debug")
    mode: str = Field(description="safe or fast")


class FlowCounters(Published):
    """What a group publishes of one flow."""

    flow: str
    version: int | None = None
    state: str = Field(default="", description="running, waiting (for an input queue), stopping or stopped")
    detail: str = Field(
        default="", description='why a flow is waiting: "waiting: queue EVAL.IN does not exist"'
    )
    threads: int = 0
    messages_in: int = Field(default=0, description="messages processed; retries count as backouts")
    cpu_us: int = Field(
        default=0,
        description="CPU time of the flow's input nodes and the nodes they run, µs; sampled as a node's "
        "cpu_us is",
    )
    elapsed_us: int = 0
    errors: int = 0
    backouts: int = Field(default=0, description="units of work backed out (each retry of a message)")
    failures: int = Field(
        default=0,
        description="messages given up: past their backout threshold, or failed outside a unit of work",
    )
    last_errors: list[str] = Field(default_factory=list)
    trace: TraceSetting | None = None


class FlowStatistics(FlowCounters):
    nodes: dict[str, NodeStatistics] = Field(default_factory=dict)


class GroupStatistics(Published):
    broker: str
    group: str
    pid: int | None = None
    host: str | None = Field(default=None, description="the host name of the group's worker process")
    time: float = Field(description="when the group published these, seconds since 1970")
    uptime_s: float | None = None
    rss_bytes: int | None = None
    cpu_percent: float | None = None
    cpu_seconds: float | None = None
    threads: int | None = None
    flows: dict[str, FlowStatistics] = Field(default_factory=dict)
    age_s: float = Field(description="seconds since the group published these")
    reporting: bool = Field(description="false when the group has not published for a while")


class FlowRow(FlowCounters):
    broker: str
    group: str


class HistoryPoint(BaseModel):
    t: float = Field(description="end of the interval, seconds since 1970")
    msgs_per_s: float
    latency_ms: float | None = Field(description="mean elapsed ms per message; null when none arrived")
    messages: int
    errors: int
    backouts: int


class FlowHistory(BaseModel):
    broker: str
    group: str
    flow: str
    points: list[HistoryPoint]


def _name(value: str, field: str) -> str:
    if not _NAME.match(value):
        raise ApiError(422, "invalid_name", f"{field}: use 1-128 letters, digits, . _ -")
    return value


def history_of(request: Request) -> StatsHistory:
    history: StatsHistory = request.app.state.stats_history
    return history


def _read(request: Request, settings: Any) -> list[dict[str, Any]]:
    """The groups' statistics, also taken into the history so every reading counts."""
    records = stats.read_all(settings.data, request.app.state.session_factory)
    history_of(request).observe(records)
    return records


@router.get("/api/stats/groups", response_model=list[GroupStatistics])
def group_statistics(request: Request, _: Reader, settings: SettingsDep) -> Any:
    """The last statistics every execution group published (RSS, CPU, threads, flows, nodes)."""
    return _read(request, settings)


@router.get("/api/stats/groups/{broker}/{group}", responses=responses(404), response_model=GroupStatistics)
def one_group(request: Request, broker: str, group: str, _: Reader, settings: SettingsDep) -> Any:
    """The last statistics of one execution group."""
    record = stats.read_group(
        settings.data, _name(broker, "broker"), _name(group, "group"), request.app.state.session_factory
    )
    if record is None:
        raise ApiError(404, "not_found", f"execution group {broker}/{group} has published no statistics")
    return record


@router.get("/api/stats/flows", response_model=list[FlowRow])
def flow_statistics(request: Request, _: Reader, settings: SettingsDep) -> Any:
    """One row per deployed flow: messages, CPU and elapsed µs, errors, backouts, threads."""
    return stats.flows(settings.data, request.app.state.session_factory)


@router.get("/api/stats/history", response_model=list[FlowHistory])
def flow_history(
    request: Request,
    _: Reader,
    settings: SettingsDep,
    seconds: Annotated[float, Query(gt=0, le=WINDOW_SECONDS)] = WINDOW_SECONDS,
) -> Any:
    """Each flow's messages per second and mean latency over the last ``seconds`` (at most 15 minutes)."""
    _read(request, settings)
    return history_of(request).series(seconds)


@router.get(
    "/api/stats/stream",
    response_class=StreamingResponse,
    responses={200: {"content": {"text/event-stream": {}}, "description": "`stats` events"}},
)
async def stream(
    request: Request,
    _: Reader,
    settings: SettingsDep,
    interval: Annotated[float, Query(ge=0.5, le=60)] = 5.0,
) -> StreamingResponse:
    """Server-sent events: a ``stats`` event with every group's statistics each ``interval`` seconds.

    Each event's data is the JSON of GET /api/stats/groups.
    """

    async def events() -> AsyncIterator[bytes]:
        while True:
            payload = json.dumps(_read(request, settings), default=str)
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
    _: Reader,
    settings: SettingsDep,
    limit: Annotated[int, Query(ge=1, le=16 * 1024 * 1024)] = 1 << 20,
) -> str:
    """The last ``limit`` bytes of a flow's user trace."""
    return stats.read_trace(
        settings.data, _name(broker, "broker"), _name(group, "group"), _name(flow, "flow"), limit
    )


@router.get("/metrics", response_class=PlainTextResponse, include_in_schema=False)
def metrics(request: Request, _: Reader, settings: SettingsDep) -> PlainTextResponse:
    """Prometheus metrics of every execution group, flow and node (scrape with a viewer's bearer token)."""
    return PlainTextResponse(
        stats.prometheus(settings.data, request.app.state.session_factory),
        media_type="text/plain; version=0.0.4",
    )
