"""Users and their roles; admins only."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, status

from flowbroker.api.deps import DbSession, UserManager
from flowbroker.api.errors import AUTHENTICATED, responses
from flowbroker.api.schemas import Id, UserIn, UserOut, UserPatch
from flowbroker.services import users

router = APIRouter(prefix="/api/users", tags=["users"], responses=responses(*AUTHENTICATED))


@router.get("", response_model=list[UserOut])
def list_users(_: UserManager, session: DbSession) -> Any:
    """Every user."""
    return users.list_users(session)


@router.post("", responses=responses(409), response_model=UserOut, status_code=status.HTTP_201_CREATED)
def create_user(body: UserIn, actor: UserManager, session: DbSession) -> Any:
    """Create a user with a role."""
    return users.create(session, actor.username, body.username, body.password, body.role)


@router.get("/{user_id}", responses=responses(404), response_model=UserOut)
def get_user(user_id: Id, _: UserManager, session: DbSession) -> Any:
    """One user."""
    return users.get(session, user_id)


@router.patch("/{user_id}", responses=responses(404, 409), response_model=UserOut)
def update_user(user_id: Id, body: UserPatch, actor: UserManager, session: DbSession) -> Any:
    """Change a user's role, password or active flag."""
    return users.update(
        session, actor.username, user_id, body.model_dump(exclude_unset=True, exclude_none=True)
    )


@router.delete("/{user_id}", responses=responses(404, 409), status_code=status.HTTP_204_NO_CONTENT)
def delete_user(user_id: Id, actor: UserManager, session: DbSession) -> None:
    """Delete a user (never the last admin)."""
    users.delete(session, actor.username, user_id)
