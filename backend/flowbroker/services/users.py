"""Users, roles and API tokens: argon2 password hashes, bearer tokens stored as SHA-256 digests."""

from __future__ import annotations

import hashlib
import re
import secrets
from datetime import UTC, datetime, timedelta
from functools import cache
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from flowbroker.repository.models import ROLE_RANKS, ApiToken, User
from flowbroker.services import audit
from flowbroker.services.errors import Conflict, Forbidden, Invalid, NotFound, Unauthorized, problem

#: Bumped whenever a user or token changes in this process, so cached authentications are dropped.
credentials_generation = 0

USERNAME_RE = re.compile(r"^[A-Za-z0-9_.@\-]{1,64}$")
MIN_PASSWORD = 8
#: Tokens are only hashed with SHA-256: they are 256 random bits, so a slow hash adds nothing.
TOKEN_PREFIX = "fbt_"
#: last_used_at is refreshed at most this often, so reads do not turn into writes.
TOUCH_INTERVAL = timedelta(seconds=60)


@cache
def _hasher() -> Any:
    from argon2 import PasswordHasher

    return PasswordHasher()


def hash_password(password: str) -> str:
    return str(_hasher().hash(password))


def verify_password(password_hash: str, password: str) -> bool:
    from argon2.exceptions import InvalidHashError, VerificationError

    try:
        return bool(_hasher().verify(password_hash, password))
    except (VerificationError, InvalidHashError):
        return False


def token_digest(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def role_at_least(role: str, wanted: str) -> bool:
    return ROLE_RANKS.get(role, 0) >= ROLE_RANKS[wanted]


def _check_username(username: str) -> None:
    if not USERNAME_RE.match(username):
        raise Invalid(
            f"invalid username {username!r}",
            [problem("/username", "1-64 letters, digits, _ . @ -")],
        )


def _check_password(password: str) -> None:
    if len(password) < MIN_PASSWORD:
        raise Invalid(
            f"a password needs at least {MIN_PASSWORD} characters",
            [problem("/password", f"at least {MIN_PASSWORD} characters")],
        )


def _check_role(role: str) -> None:
    if role not in ROLE_RANKS:
        raise Invalid(f"unknown role {role!r}", [problem("/role", "one of " + ", ".join(ROLE_RANKS))])


def list_users(session: Session) -> list[User]:
    return list(session.scalars(select(User).order_by(User.username)))


def get(session: Session, user_id: int) -> User:
    user = session.get(User, user_id)
    if user is None:
        raise NotFound(f"no user with id {user_id}")
    return user


def by_name(session: Session, username: str) -> User | None:
    return session.scalars(select(User).where(User.username == username)).first()


def create(session: Session, actor: str, username: str, password: str, role: str) -> User:
    _check_username(username)
    _check_password(password)
    _check_role(role)
    if by_name(session, username) is not None:
        raise Conflict(
            f"a user named {username!r} already exists", {"pointer": "/username"}, code="duplicate_name"
        )
    user = User(username=username, password_hash=hash_password(password), role=role)
    session.add(user)
    session.flush()
    audit.record(session, actor, "user.create", f"user:{username}", {"id": user.id, "role": role})
    session.commit()
    return user


def update(session: Session, actor: str, user_id: int, changes: dict[str, Any]) -> User:
    user = get(session, user_id)
    if changes.get("role") is not None:
        _check_role(changes["role"])
        if user.role == "admin" and changes["role"] != "admin":
            _keep_one_admin(session, user)
        user.role = changes["role"]
    if changes.get("password") is not None:
        _check_password(changes["password"])
        user.password_hash = hash_password(changes["password"])
        # A new password ends every session opened with the old one.
        user.tokens.clear()
    if changes.get("active") is not None:
        if not changes["active"] and user.role == "admin":
            _keep_one_admin(session, user)
        user.active = bool(changes["active"])
        if not user.active:
            user.tokens.clear()
    fields = sorted(k for k, v in changes.items() if v is not None)
    audit.record(session, actor, "user.update", f"user:{user.username}", {"fields": fields})
    session.commit()
    _credentials_changed()
    return user


def _credentials_changed() -> None:
    global credentials_generation
    credentials_generation += 1


def _keep_one_admin(session: Session, leaving: User) -> None:
    others = session.scalars(
        select(User.id).where(User.role == "admin", User.active.is_(True), User.id != leaving.id)
    ).first()
    if others is None:
        raise Conflict("the last active admin cannot be demoted, disabled or deleted", code="last_admin")


def delete(session: Session, actor: str, user_id: int) -> None:
    user = get(session, user_id)
    if user.role == "admin":
        _keep_one_admin(session, user)
    session.delete(user)
    audit.record(session, actor, "user.delete", f"user:{user.username}", {"id": user_id})
    session.commit()
    _credentials_changed()


def issue_token(session: Session, user: User, name: str = "login", ttl: timedelta | None = None) -> str:
    """A new bearer token for ``user``; only its digest is kept, so it is shown once."""
    token = TOKEN_PREFIX + secrets.token_urlsafe(32)
    expires = datetime.now(UTC) + ttl if ttl is not None else None
    session.add(ApiToken(user_id=user.id, token_hash=token_digest(token), name=name, expires_at=expires))
    return token


def login(session: Session, username: str, password: str, ttl: timedelta | None = None) -> tuple[User, str]:
    """Check a username and password and open a session token; one message for every failure."""
    user = by_name(session, username)
    if user is None:
        # Hash anyway so the response time does not tell which usernames exist.
        verify_password(_dummy_hash(), password)
        raise Unauthorized("wrong username or password", code="bad_credentials")
    if not verify_password(user.password_hash, password) or not user.active:
        audit.record(session, username, "auth.login_failed", f"user:{username}", {})
        session.commit()
        raise Unauthorized("wrong username or password", code="bad_credentials")
    token = issue_token(session, user, "login", ttl)
    audit.record(session, username, "auth.login", f"user:{username}", {})
    session.commit()
    return user, token


@cache
def _dummy_hash() -> str:
    return hash_password(secrets.token_hex(8))


def authenticate(session: Session, token: str) -> tuple[User, ApiToken]:
    """The user a bearer token belongs to; 401 when it is unknown, expired or its user disabled."""
    # One round trip for the token and its user: this runs on every request.
    found = session.execute(
        select(ApiToken, User)
        .join(User, ApiToken.user_id == User.id)
        .where(ApiToken.token_hash == token_digest(token))
    ).first()
    now = datetime.now(UTC)
    if found is None:
        raise Unauthorized("invalid or revoked token", code="invalid_token")
    row, user = found
    if row.expires_at is not None and _aware(row.expires_at) <= now:
        raise Unauthorized("the token has expired; log in again", code="token_expired")
    if not user.active:
        raise Unauthorized("the user is disabled", code="invalid_token")
    if row.last_used_at is None or _aware(row.last_used_at) + TOUCH_INTERVAL < now:
        row.last_used_at = now
        session.commit()
    return user, row


def _aware(moment: datetime) -> datetime:
    # SQLite hands back naive datetimes; every stored time is UTC.
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def revoke(session: Session, actor: str, token_row: ApiToken) -> None:
    session.delete(token_row)
    audit.record(session, actor, "auth.logout", f"user:{actor}", {"token": token_row.id})
    session.commit()
    _credentials_changed()


#: What each kind of action needs, the one table the API's checks and the designer's buttons share.
PERMISSIONS: dict[str, str] = {
    "read": "viewer",  # see flows, topology, queues, statistics, the audit log
    "flows.edit": "developer",  # flows, message sets, data sources, archive import
    "deploy": "operator",  # deploy and undeploy, start and stop flows, user trace
    "topology.manage": "operator",  # brokers and execution groups, start and stop groups
    "queues.write": "operator",  # define, alter, delete and purge queues; put, get and move messages
    "users.manage": "admin",
}


def permissions(role: str) -> list[str]:
    """The permissions a role grants, in the order of :data:`PERMISSIONS`."""
    return [name for name, needed in PERMISSIONS.items() if role_at_least(role, needed)]


def require(user: User, role: str) -> None:
    if not role_at_least(user.role, role):
        raise Forbidden(f"this needs the {role} role; {user.username} is {user.role}", code="forbidden")


def require_permission(user: User, permission: str) -> None:
    require(user, PERMISSIONS[permission])


def ensure_admin(session: Session, password: str | None) -> tuple[bool, str | None]:
    """Create the first admin when no user exists.

    Returns (created, password to print): the password is None when it came from the caller.
    """
    if session.scalars(select(User.id)).first() is not None:
        return False, None
    from flowbroker.settings import new_password

    shown = None
    if not password:
        password = shown = new_password()
    user = User(username="admin", password_hash=hash_password(password), role="admin")
    session.add(user)
    session.flush()
    audit.record(
        session, "system", "user.create", "user:admin", {"id": user.id, "role": "admin", "first": True}
    )
    session.commit()
    return True, shown
