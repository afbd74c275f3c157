"""The configuration manager's FastAPI application: middleware, error handling, routers, the designer."""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from fastapi import FastAPI, Request
from fastapi.middleware.cors import CORSMiddleware
from fastapi.responses import FileResponse, JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

import flowbroker.api.routes as routes_package
from flowbroker.api import errors
from flowbroker.api.deps import AuthCache
from flowbroker.api.long_polls import LongPolls
from flowbroker.repository import db
from flowbroker.services.login_throttle import LoginThrottle
from flowbroker.services.stats_history import Sampler, StatsHistory
from flowbroker.services.validation import SpecLookup
from flowbroker.settings import Settings


class BodyLimit:
    """Refuse request bodies above the configured size, declared or streamed, with 413."""

    def __init__(self, app: ASGIApp, limit: int) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        for name, value in scope.get("headers", []):
            if name == b"content-length":
                try:
                    declared = int(value)
                except ValueError:
                    declared = -1
                if declared > self.limit or declared < 0:
                    message = (
                        f"request body larger than {self.limit} bytes"
                        if declared > self.limit
                        else "invalid Content-Length header"
                    )
                    status = 413 if declared > self.limit else 400
                    response = errors.error_response(
                        status,
                        "body_too_large" if status == 413 else "bad_request",
                        message,
                        {"limit": self.limit},
                    )
                    await response(scope, receive, send)
                    return
        seen = 0

        async def counted() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.limit:
                    raise errors.BodyTooLarge(self.limit)
            return message

        await self.app(scope, counted, send)


def create_app(settings: Settings, *, node_lookup: SpecLookup | None = None, migrate: bool = True) -> FastAPI:
    """Build the API over the repository named by ``settings``, migrating it to the head first.

    ``node_lookup`` replaces the node registry when validating flows (the default is the registry).
    """
    engine = db.engine_from_settings(settings)
    if migrate:
        db.upgrade_if_needed(engine)
    history = StatsHistory()

    @asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        # The monitoring history fills while the API runs, whether or not a page is open.
        sampler = Sampler(history, settings.data, session_factory=_app.state.session_factory)
        sampler.start()
        try:
            yield
        finally:
            sampler.stop()

    app = FastAPI(
        title="flowbroker configuration manager",
        version="0.1.0",
        openapi_url="/api/openapi.json",
        docs_url="/api/docs",
        redoc_url=None,
        lifespan=lifespan,
    )
    app.state.stats_history = history
    app.state.settings = settings
    app.state.engine = engine
    app.state.session_factory = db.session_factory(engine)
    app.state.node_lookup = node_lookup
    app.state.auth_cache = AuthCache()
    app.state.long_polls = LongPolls(settings.long_poll_max)
    app.state.login_throttle = LoginThrottle(
        settings.login_max_failures,
        settings.login_max_failures_per_address,
        settings.login_failure_window_seconds,
        settings.login_lockout_seconds,
    )
    errors.install(app)
    if settings.cors_origins:
        app.add_middleware(
            CORSMiddleware,
            allow_origins=settings.cors_origins,
            allow_methods=["GET", "POST", "PUT", "PATCH", "DELETE"],
            allow_headers=["Authorization", "Content-Type"],
        )
    app.add_middleware(BodyLimit, limit=settings.max_body_bytes)
    for info in sorted(pkgutil.iter_modules(routes_package.__path__), key=lambda i: i.name):
        module = importlib.import_module(f"{routes_package.__name__}.{info.name}")
        router = getattr(module, "router", None)
        if router is not None:
            app.include_router(router)
    _document_error_body(app)
    dist = settings.resolved_frontend_dist()
    if dist is not None:
        _serve_designer(app, dist)
    else:
        _api_only(app)
    return app


def _document_error_body(app: FastAPI) -> None:
    """State in the schema the error body clients really get: 422 answers {code, message, detail}.

    Routes that read a body also answer 400 (malformed JSON, invalid Content-Length) and 413.

    FastAPI describes its own validation errors; errors.py answers every refusal with one body
    instead, so the generated client's error types must name that one.
    """
    from flowbroker.api.schemas import ErrorBody

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is not None:
            return app.openapi_schema
        schema = FastAPI.openapi(app)
        ref = {"$ref": "#/components/schemas/ErrorBody"}
        for operations in schema.get("paths", {}).values():
            for operation in operations.values():
                if "requestBody" in operation:
                    # BodyLimit and the JSON decoder answer these on every route that reads a body
                    for status in (400, 413):
                        operation["responses"].setdefault(
                            str(status),
                            {
                                "description": errors.DESCRIPTIONS[status],
                                "content": {"application/json": {"schema": ref}},
                            },
                        )
                response = operation.get("responses", {}).get("422")
                if response is not None:
                    response["description"] = (
                        "The request is invalid: the detail names each field by its JSON pointer"
                    )
                    response["content"] = {"application/json": {"schema": ref}}
        components = schema.setdefault("components", {}).setdefault("schemas", {})
        components.pop("HTTPValidationError", None)
        components.pop("ValidationError", None)
        components["ErrorBody"] = ErrorBody.model_json_schema(ref_template="#/components/schemas/{model}")
        app.openapi_schema = schema
        return schema

    app.openapi = openapi  # type: ignore[method-assign]


def _serve_designer(app: FastAPI, dist: Path) -> None:
    root = dist.resolve()
    index = root / "index.html"

    @app.get("/{path:path}", include_in_schema=False)
    async def designer(path: str, request: Request) -> Any:
        if path == "api" or path.startswith("api/"):
            # an API path that exists for other methods is 405, as it is without the designer
            methods = errors.allowed_methods(request)
            if methods:
                return errors.method_not_allowed(request, methods)
            return errors.error_response(404, "not_found", f"no route GET {request.url.path}")
        candidate = (root / path).resolve()
        if path and candidate.is_file() and candidate.is_relative_to(root):
            return FileResponse(candidate)
        # Every other path is a route of the single-page designer.
        return FileResponse(index, headers={"Cache-Control": "no-cache"})


def _api_only(app: FastAPI) -> None:
    @app.get("/", include_in_schema=False)
    async def root() -> JSONResponse:
        return JSONResponse(
            {"service": "flowbroker configuration manager", "api": "/api/docs", "designer": "not built"}
        )
