"""One error body everywhere, ``{"code", "message", "detail"}``, whatever raised the error."""

from __future__ import annotations

import logging
import re
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from sqlalchemy.exc import DataError, IntegrityError
from starlette.exceptions import HTTPException as StarletteHTTPException

from flowbroker.api.schemas import ErrorBody
from flowbroker.services.errors import ServiceError

log = logging.getLogger("flowbroker.api")

HTTP_CODES = {
    400: "bad_request",
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    406: "not_acceptable",
    409: "conflict",
    413: "body_too_large",
    415: "unsupported_media_type",
    422: "invalid",
    429: "too_many_requests",
}


#: What each refusal means in the OpenAPI document; every one answers with :class:`ErrorBody`.
DESCRIPTIONS = {
    400: "Malformed request: JSON that does not parse, an invalid Content-Length, or a refused value",
    401: "Authentication required: no token, or one that is unknown, expired or revoked",
    403: "The signed-in user's role does not grant this action",
    404: "The named object does not exist",
    409: "The change conflicts with the object's current state",
    413: "The request body, or the message, is larger than allowed",
    422: "The request is invalid: the detail names each field by its JSON pointer",
    429: "Too many requests: retry after the interval in the Retry-After header",
    502: "The queue manager (or RabbitMQ) refused the request for a reason of its own",
    503: "The queue manager (or RabbitMQ) is not reachable",
}


def responses(*codes: int) -> dict[int | str, dict[str, Any]]:
    """The ``responses=`` of a router or route: each refusal it really answers, with the error body."""
    return {code: {"model": ErrorBody, "description": DESCRIPTIONS[code]} for code in codes}


#: Every route that needs a signed-in user with a permission.
AUTHENTICATED = (401, 403)

_HTTP_METHODS = {"get", "put", "post", "delete", "patch", "head", "options", "trace"}


def allowed_methods(request: Request, also: str = "") -> list[str]:
    """The methods the OpenAPI document declares on the request's path, and ``also`` (an Allow header)."""
    patterns = getattr(request.app.state, "path_methods", None)
    if patterns is None:
        patterns = [
            (re.compile("^" + re.sub(r"\\{[^}]+\\}", "[^/]+", re.escape(path)) + "$"), operations)
            for path, operations in request.app.openapi().get("paths", {}).items()
        ]
        request.app.state.path_methods = patterns
    methods = {m.strip().upper() for m in also.split(",") if m.strip()}
    for pattern, operations in patterns:
        if pattern.match(request.url.path):
            methods |= {m.upper() for m in operations if m in _HTTP_METHODS}
    if "GET" in methods:
        methods.add("HEAD")
    return sorted(methods)


def method_not_allowed(request: Request, methods: list[str]) -> JSONResponse:
    return error_response(
        405,
        "method_not_allowed",
        f"method {request.method} is not allowed on {request.url.path}",
        {"allowed": methods},
        {"Allow": ", ".join(methods)},
    )


class ApiError(Exception):
    """Raised by routes and dependencies for a refusal the services do not express."""

    def __init__(
        self,
        status_code: int,
        code: str,
        message: str,
        detail: Any = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.status_code = status_code
        self.code = code
        self.message = message
        self.detail = detail
        self.headers = headers


class BodyTooLarge(StarletteHTTPException):
    def __init__(self, limit: int) -> None:
        super().__init__(413, f"request body larger than {limit} bytes")
        self.limit = limit


def body(code: str, message: str, detail: Any = None) -> dict[str, Any]:
    return {"code": code, "message": message, "detail": detail}


def error_response(
    status: int, code: str, message: str, detail: Any = None, headers: dict[str, str] | None = None
) -> JSONResponse:
    return JSONResponse(body(code, message, detail), status_code=status, headers=headers)


# The human wording of each pattern a REST field must match, so a refusal names the rule
# ("1-48 characters of A-Z …") instead of printing the regular expression.
_PATTERN_RULES: dict[str, str] = {}


def described(pattern: str, rule: str) -> str:
    """Register ``rule`` as the wording of ``pattern`` in validation errors; returns ``pattern``."""
    _PATTERN_RULES[pattern] = rule
    return pattern


def _validation_message(error: Any) -> str:
    if error.get("type") == "string_pattern_mismatch":
        pattern = (error.get("ctx") or {}).get("pattern", "")
        rule = _PATTERN_RULES.get(pattern)
        if rule:
            return f"must be {rule}"
    return str(error.get("msg", "invalid"))


def json_pointer(loc: tuple[Any, ...] | list[Any]) -> str:
    """``("body", "nodes", 2, "type")`` → ``/nodes/2/type``; the location kind is reported apart."""
    parts = list(loc[1:]) if loc and loc[0] in {"body", "query", "path", "header", "cookie"} else list(loc)
    return "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in parts)


def _line_column(text: bytes, offset: int) -> tuple[int, int]:
    before = text[:offset]
    line = before.count(b"\n") + 1
    column = offset - (before.rfind(b"\n") + 1) + 1
    return line, column


async def _validation_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, RequestValidationError)
    errors = exc.errors()
    for error in errors:
        if error.get("type") == "json_invalid":
            raw = await request.body()
            offset = int(error["loc"][-1]) if error.get("loc") and isinstance(error["loc"][-1], int) else 0
            line, column = _line_column(raw, offset)
            reason = (error.get("ctx") or {}).get("error", "malformed JSON")
            return error_response(
                400,
                "malformed_json",
                f"malformed JSON at line {line}, column {column} (byte {offset}): {reason}",
                {"line": line, "column": column, "offset": offset},
            )
    detail = [
        {
            "pointer": json_pointer(tuple(error.get("loc", ()))),
            "location": error["loc"][0] if error.get("loc") else "body",
            "message": _validation_message(error),
            "type": error.get("type", "invalid"),
        }
        for error in errors
    ]
    first = detail[0] if detail else {"pointer": "", "message": "invalid request", "location": "body"}
    where = first["pointer"] or "/"
    return error_response(422, "invalid", f"invalid {first['location']}: {where}: {first['message']}", detail)


async def _service_error(_request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, ServiceError)
    headers = {"WWW-Authenticate": "Bearer"} if exc.status_code == 401 else None
    return error_response(exc.status_code, exc.code, exc.message, exc.detail, headers)


async def _api_error(_request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, ApiError)
    headers = {"WWW-Authenticate": "Bearer"} if exc.status_code == 401 else None
    if exc.headers:
        headers = {**(headers or {}), **exc.headers}
    return error_response(exc.status_code, exc.code, exc.message, exc.detail, headers)


async def _http_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, StarletteHTTPException)
    code = HTTP_CODES.get(exc.status_code, "error")
    if exc.status_code == 405:
        # Starlette names the methods of the first route on the path; the path may have several
        headers = getattr(exc, "headers", None) or {}
        return method_not_allowed(request, allowed_methods(request, headers.get("Allow", "")))
    if exc.status_code == 404 and exc.detail == "Not Found":
        message = f"no route {request.method} {request.url.path}"
    else:
        message = str(exc.detail)
    return error_response(exc.status_code, code, message, None, getattr(exc, "headers", None))


async def _too_large(_request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, BodyTooLarge)
    return error_response(413, "body_too_large", str(exc.detail), {"limit": exc.limit})


async def _unstorable(_request: Request, exc: Exception) -> JSONResponse:
    # A value the database refuses (a NUL character on PostgreSQL, a number out of range): the
    # request was wrong, not the server.
    reason = str(getattr(exc, "orig", exc)).splitlines()[0][:300]
    return error_response(422, "unstorable_value", f"a value cannot be stored: {reason}")


async def _integrity(_request: Request, exc: Exception) -> JSONResponse:
    # Normally caught by the services first; a concurrent writer can still win the race.
    reason = str(getattr(exc, "orig", exc)).splitlines()[0][:300]
    return error_response(409, "conflict", f"the change conflicts with stored data: {reason}")


async def _unexpected(request: Request, exc: Exception) -> JSONResponse:
    log.exception("unexpected error on %s %s", request.method, request.url.path)
    return error_response(500, "internal_error", "internal error; the server log has the details")


def install(app: FastAPI) -> None:
    app.add_exception_handler(RequestValidationError, _validation_error)
    app.add_exception_handler(ServiceError, _service_error)
    app.add_exception_handler(ApiError, _api_error)
    app.add_exception_handler(StarletteHTTPException, _http_error)
    app.add_exception_handler(BodyTooLarge, _too_large)
    app.add_exception_handler(DataError, _unstorable)
    app.add_exception_handler(IntegrityError, _integrity)
    app.add_exception_handler(Exception, _unexpected)
