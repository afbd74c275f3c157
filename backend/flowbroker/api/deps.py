"""Request dependencies: the database session, the settings, the authenticated user and role checks."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Annotated, Any

from fastapi import Depends, Request
from sqlalchemy.orm import Session

from flowbroker.api.errors import ApiError
from flowbroker.repository.models import ApiToken, User
from flowbroker.services import users
from flowbroker.settings import Settings


async def get_settings(request: Request) -> Settings:
    settings: Settings = request.app.state.settings
    return settings


async def get_session(request: Request) -> AsyncIterator[Session]:
    # Async so that FastAPI does not hop to a worker thread twice per request for it; opening a
    # session does no I/O, and closing it only returns a pooled connection.
    session: Session = request.app.state.session_factory()
    try:
        yield session
    finally:
        # Services commit their own units of work; whatever is left over was not meant to be kept.
        session.rollback()
        session.close()


SettingsDep = Annotated[Settings, Depends(get_settings)]
DbSession = Annotated[Session, Depends(get_session)]


def _bearer(request: Request) -> str:
    header = request.headers.get("authorization", "")
    scheme, _, token = header.partition(" ")
    if not header:
        raise ApiError(401, "unauthorized", "authentication required: send Authorization: Bearer <token>")
    if scheme.lower() != "bearer" or not token.strip():
        raise ApiError(401, "unauthorized", "the Authorization header must be 'Bearer <token>'")
    return token.strip()


class AuthCache:
    """Recently authenticated tokens, so a burst of requests does not look each one up again.

    An entry lives a few seconds and dies at once when any user or token changes in this
    process (logout, password, role, deletion); another configuration manager process sharing
    the database sees such a change within the time-to-live.
    """

    def __init__(self, ttl: float = 5.0, size: int = 1024) -> None:
        self.ttl = ttl
        self.size = size
        self._entries: dict[str, tuple[float, int, User]] = {}

    def get(self, token: str) -> User | None:
        entry = self._entries.get(token)
        if entry is None:
            return None
        stored_at, generation, user = entry
        if generation != users.credentials_generation or time.monotonic() - stored_at > self.ttl:
            self._entries.pop(token, None)
            return None
        return user

    def put(self, token: str, user: User, expires_at: Any) -> None:
        if expires_at is not None:
            # Never cache past the token's own expiry.
            remaining = (users._aware(expires_at) - datetime.now(UTC)).total_seconds()
            if remaining < self.ttl:
                return
        if len(self._entries) >= self.size:
            self._entries.clear()
        self._entries[token] = (time.monotonic(), users.credentials_generation, user)


# Authentication runs on the event loop: it is one indexed query, or none when cached, and this
# saves two worker-thread hops per request.
async def get_token(request: Request, session: DbSession) -> ApiToken:
    _user, row = users.authenticate(session, _bearer(request))
    request.state.token = row
    return row


async def get_current_user(request: Request, session: DbSession) -> User:
    token = _bearer(request)
    cache: AuthCache | None = getattr(request.app.state, "auth_cache", None)
    if cache is not None:
        cached = cache.get(token)
        if cached is not None:
            return cached
    user, row = users.authenticate(session, token)
    if cache is not None:
        session.expunge(user)
        cache.put(token, user, row.expires_at)
    return user


CurrentUser = Annotated[User, Depends(get_current_user)]
CurrentToken = Annotated[ApiToken, Depends(get_token)]


def require_permission(permission: str) -> Any:
    """A dependency admitting users whose role grants ``permission`` (see ``users.PERMISSIONS``)."""
    if permission not in users.PERMISSIONS:
        raise ValueError(f"unknown permission {permission!r}")

    async def check(user: CurrentUser) -> User:
        users.require_permission(user, permission)
        return user

    check.__name__ = f"require_{permission.replace('.', '_')}"
    return Depends(check)


def permitted(permission: str) -> Any:
    """``Annotated[User, require_permission(permission)]``: a route parameter that also needs the user."""
    return Annotated[User, require_permission(permission)]


# One alias per permission: a route names what it does, and the role it needs follows from the table.
Reader = Annotated[User, require_permission("read")]
FlowEditor = Annotated[User, require_permission("flows.edit")]
Deployer = Annotated[User, require_permission("deploy")]
TopologyManager = Annotated[User, require_permission("topology.manage")]
QueueWriter = Annotated[User, require_permission("queues.write")]
UserManager = Annotated[User, require_permission("users.manage")]
