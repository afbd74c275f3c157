"""The errors services raise; the API turns each into its status and the common error body."""

from __future__ import annotations

from typing import Any


class ServiceError(Exception):
    """A refusal with an HTTP-like status, a stable code, a sentence and optional detail."""

    status_code = 400
    code = "bad_request"

    def __init__(self, message: str, detail: Any = None, *, code: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.detail = detail
        if code is not None:
            self.code = code


class NotFound(ServiceError):
    status_code = 404
    code = "not_found"


class Conflict(ServiceError):
    status_code = 409
    code = "conflict"


class Invalid(ServiceError):
    """The input is well-formed but wrong; ``detail`` lists problems with JSON pointers."""

    status_code = 422
    code = "invalid"


class Unauthorized(ServiceError):
    status_code = 401
    code = "unauthorized"


class Forbidden(ServiceError):
    status_code = 403
    code = "forbidden"


def problem(pointer: str, message: str) -> dict[str, str]:
    """One entry of an :class:`Invalid` detail list."""
    return {"pointer": pointer, "message": message}
