"""Request and response bodies of the configuration manager's own resources (camelCase on the wire)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from fastapi import Path
from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

Role = Literal["viewer", "developer", "operator", "admin"]
#: Database ids are 32-bit on every backend; a larger number cannot name anything.
MAX_ID = 2_147_483_647
Id = Annotated[int, Path(ge=1, le=MAX_ID)]
RefId = Annotated[int, Field(ge=1, le=MAX_ID)]


class Body(BaseModel):
    """Inputs: unknown fields are refused so a misspelt field is an error, not a silent no-op."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=False, extra="forbid")


class Out(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, from_attributes=True)


class ErrorBody(BaseModel):
    code: str
    message: str
    detail: Any = None


class LoginIn(Body):
    username: str = Field(min_length=1, max_length=64)
    password: str = Field(min_length=1, max_length=1024)


class TokenOut(Out):
    access_token: str
    token_type: str = "bearer"
    username: str
    role: str
    expires_at: datetime | None = None


class UserOut(Out):
    id: int
    username: str
    role: str
    active: bool
    created_at: datetime


class UserIn(Body):
    username: str = Field(min_length=1, max_length=64)
    password: str = Field(min_length=1, max_length=1024)
    role: Role


class UserPatch(Body):
    role: Role | None = None
    password: str | None = Field(default=None, min_length=1, max_length=1024)
    active: bool | None = None


class PasswordIn(Body):
    current_password: str = Field(min_length=1, max_length=1024)
    new_password: str = Field(min_length=1, max_length=1024)


class FlowSummary(Out):
    id: int
    name: str
    description: str
    current_version: int
    created_at: datetime
    updated_at: datetime


class FlowOut(FlowSummary):
    document: dict[str, Any]


class FlowVersionOut(Out):
    version: int
    comment: str
    author: str
    created_at: datetime


class FlowVersionDocument(FlowVersionOut):
    document: dict[str, Any]


class ValidationOut(Out):
    valid: bool
    problems: list[dict[str, str]]


class GroupOut(Out):
    id: int
    broker_id: int
    name: str
    description: str
    created_at: datetime


class BrokerOut(Out):
    id: int
    name: str
    description: str
    qm_url: str
    created_at: datetime
    updated_at: datetime
    groups: list[GroupOut]


class BrokerIn(Body):
    name: str = Field(min_length=1, max_length=64)
    description: str = Field(default="", max_length=4000)
    qm_url: str = Field(default="", max_length=500)


class BrokerPatch(Body):
    name: str | None = Field(default=None, min_length=1, max_length=64)
    description: str | None = Field(default=None, max_length=4000)
    qm_url: str | None = Field(default=None, max_length=500)


class GroupIn(Body):
    name: str = Field(min_length=1, max_length=64)
    description: str = Field(default="", max_length=4000)


class GroupPatch(Body):
    name: str | None = Field(default=None, min_length=1, max_length=64)
    description: str | None = Field(default=None, max_length=4000)


class DataSourceOut(Out):
    id: int
    name: str
    url: str
    description: str
    broker_id: int | None
    created_at: datetime
    updated_at: datetime


class DataSourceIn(Body):
    name: str = Field(min_length=1, max_length=128)
    url: str = Field(min_length=1, max_length=1000)
    description: str = Field(default="", max_length=4000)
    broker_id: RefId | None = None


class DataSourcePatch(Body):
    name: str | None = Field(default=None, min_length=1, max_length=128)
    url: str | None = Field(default=None, min_length=1, max_length=1000)
    description: str | None = Field(default=None, max_length=4000)
    broker_id: RefId | None = None


class MessageSetSummary(Out):
    id: int
    name: str
    description: str
    current_version: int
    created_at: datetime
    updated_at: datetime


class MessageSetOut(MessageSetSummary):
    document: dict[str, Any]


class MessageSetIn(Body):
    name: str = Field(min_length=1, max_length=128)
    description: str = Field(default="", max_length=4000)
    document: dict[str, Any]


class MessageSetPut(Body):
    description: str | None = Field(default=None, max_length=4000)
    document: dict[str, Any]


class MessageSetVersionOut(Out):
    version: int
    author: str
    created_at: datetime


class AuditOut(Out):
    id: int
    at: datetime
    actor: str
    action: str
    target: str
    detail: dict[str, Any]


class ComponentOut(Out):
    name: str
    state: str
    pid: int | None = None
    restarts: int = 0
    since: float | None = None
    last_exit: int | None = None
    detail: str = ""


class HealthOut(Out):
    status: Literal["ok", "degraded"]
    version: str
    database: str
    components: list[ComponentOut]
