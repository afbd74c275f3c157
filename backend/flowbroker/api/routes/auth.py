"""Login, logout and the caller's own account: POST /api/auth/login returns a bearer token."""

from __future__ import annotations

import math
from datetime import timedelta
from typing import Any

from fastapi import APIRouter, Request, status

from flowbroker.api.deps import CurrentToken, CurrentUser, DbSession, SettingsDep
from flowbroker.api.errors import ApiError, responses
from flowbroker.api.schemas import LoginIn, MeOut, PasswordIn, TokenOut
from flowbroker.services import audit, users
from flowbroker.services.errors import Unauthorized
from flowbroker.services.login_throttle import LoginThrottle

router = APIRouter(prefix="/api/auth", tags=["auth"], responses=responses(401))


@router.post("/login", responses=responses(429), response_model=TokenOut)
def login(body: LoginIn, request: Request, session: DbSession, settings: SettingsDep) -> Any:
    """Exchange a username and password for a bearer token.

    Too many failures for the user or from the client address (FLOWBROKER_LOGIN_MAX_FAILURES,
    FLOWBROKER_LOGIN_MAX_FAILURES_PER_ADDRESS) lock logins out with 429 and Retry-After.
    """
    throttle: LoginThrottle = request.app.state.login_throttle
    address = request.client.host if request.client else "unknown"
    wait = throttle.retry_after(body.username, address)
    if wait > 0:
        seconds = math.ceil(wait)
        raise ApiError(
            429,
            "login_locked",
            f"too many failed logins: try again in {seconds} s",
            {"retryAfter": seconds},
            headers={"Retry-After": str(seconds)},
        )
    try:
        user, token = users.login(
            session, body.username, body.password, timedelta(seconds=settings.token_ttl_seconds)
        )
    except Unauthorized:
        for lockout in throttle.failed(body.username, address):
            audit.record(
                session,
                body.username,
                "auth.locked_out",
                f"{lockout.kind}:{lockout.key}",
                {"address": address, "failures": lockout.failures, "seconds": lockout.seconds},
            )
            session.commit()
        raise
    throttle.succeeded(body.username)
    row = users.authenticate(session, token)[1]
    return TokenOut(
        access_token=token,
        username=user.username,
        role=user.role,
        expires_at=row.expires_at,
        permissions=users.permissions(user.role),
    )


@router.post("/logout", status_code=status.HTTP_204_NO_CONTENT)
def logout(token: CurrentToken, session: DbSession) -> None:
    """Revoke the token this request carries."""
    users.revoke(session, token.user.username, token)


@router.get("/me", response_model=MeOut)
def me(user: CurrentUser) -> Any:
    """The user the token belongs to, with the permissions of their role."""
    return MeOut(
        id=user.id,
        username=user.username,
        role=user.role,
        active=user.active,
        created_at=user.created_at,
        permissions=users.permissions(user.role),
    )


@router.post("/password", status_code=status.HTTP_204_NO_CONTENT)
def change_password(body: PasswordIn, user: CurrentUser, session: DbSession) -> None:
    """Change one's own password; every token of the account is revoked."""
    if not users.verify_password(user.password_hash, body.current_password):
        raise Unauthorized("the current password is wrong", code="bad_credentials")
    users.update(session, user.username, user.id, {"password": body.new_password})
