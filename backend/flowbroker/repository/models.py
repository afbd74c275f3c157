"""The config repository's tables: topology, flows with version history, deployments, users, audit."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import (
    JSON,
    Boolean,
    DateTime,
    Dialect,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Text,
    TypeDecorator,
    UniqueConstraint,
)
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship

#: Portable JSON: JSONB on PostgreSQL, JSON text on SQLite.
JsonDoc = JSON().with_variant(JSONB(), "postgresql")

#: Deterministic constraint names so migrations can address them on every backend.
NAMING = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}

DEPLOYMENT_STATUSES = ("pending", "compiling", "running", "waiting", "failed", "stopped")
#: What an operator asked of an execution group: its process runs, or is kept stopped.
GROUP_DESIRED_STATES = ("running", "stopped")
ROLE_RANKS = {"viewer": 1, "developer": 2, "operator": 3, "admin": 4}


class UtcDateTime(TypeDecorator[datetime]):
    """A timestamp that always comes back timezone-aware in UTC (SQLite forgets the zone)."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is not None and value.tzinfo is None:
            value = value.replace(tzinfo=UTC)
        return value.astimezone(UTC) if value is not None else None

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is not None and value.tzinfo is None:
            return value.replace(tzinfo=UTC)
        return value


def utcnow() -> datetime:
    return datetime.now(UTC)


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING)


class Role(Base):
    """A role of the ladder viewer < developer < operator < admin; ``rank`` orders it."""

    __tablename__ = "roles"
    name: Mapped[str] = mapped_column(String(32), primary_key=True)
    rank: Mapped[int] = mapped_column(Integer, nullable=False)
    description: Mapped[str] = mapped_column(String(200), default="", nullable=False)


class User(Base):
    __tablename__ = "users"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    username: Mapped[str] = mapped_column(String(64), unique=True, nullable=False)
    password_hash: Mapped[str] = mapped_column(String(256), nullable=False)
    role: Mapped[str] = mapped_column(ForeignKey("roles.name"), nullable=False)
    active: Mapped[bool] = mapped_column(Boolean, default=True, nullable=False)
    created_at: Mapped[datetime] = mapped_column(UtcDateTime(), default=utcnow, nullable=False)
    tokens: Mapped[list[ApiToken]] = relationship(back_populates="user", cascade="all, delete-orphan")


class ApiToken(Base):
    """A bearer token; only its SHA-256 digest is stored, so a leaked table grants nothing."""

    __tablename__ = "api_tokens"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), nullable=False)
    token_hash: Mapped[str] = mapped_column(String(64), unique=True, nullable=False)
    name: Mapped[str] = mapped_column(String(100), default="login", nullable=False)
    created_at: Mapped[datetime] = mapped_column(UtcDateTime(), default=utcnow, nullable=False)
    expires_at: Mapped[datetime | None] = mapped_column(UtcDateTime(), nullable=True)
    last_used_at: Mapped[datetime | None] = mapped_column(UtcDateTime(), nullable=True)
    user: Mapped[User] = relationship(back_populates="tokens")


class Broker(Base):
    """A broker: a queue manager plus the execution groups that run flows against it."""

    __tablename__ = "brokers"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(64), unique=True, nullable=False)
    description: Mapped[str] = mapped_column(Text, default="", nullable=False)
    qm_url: Mapped[str] = mapped_column(String(500), default="", nullable=False)
    created_at: Mapped[datetime] = mapped_column(UtcDateTime(), default=utcnow, nullable=False)
    updated_at: Mapped[datetime] = mapped_column(
        UtcDateTime(), default=utcnow, onupdate=utcnow, nullable=False
    )
    groups: Mapped[list[ExecutionGroup]] = relationship(
        back_populates="broker", cascade="all, delete-orphan", order_by="ExecutionGroup.name"
    )


class ExecutionGroup(Base):
    """An execution group: one worker process of a broker, isolated from its siblings."""

    __tablename__ = "execution_groups"
    __table_args__ = (
        UniqueConstraint("broker_id", "name", name="uq_execution_groups_broker_name"),
        # the groups of a broker share a host: no two listen on one HTTP port (NULLs never clash)
        UniqueConstraint("broker_id", "http_port", name="uq_execution_groups_broker_http_port"),
    )
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    broker_id: Mapped[int] = mapped_column(ForeignKey("brokers.id", ondelete="CASCADE"), nullable=False)
    name: Mapped[str] = mapped_column(String(64), nullable=False)
    description: Mapped[str] = mapped_column(Text, default="", nullable=False)
    #: "running" or "stopped": what the supervisor of the group's broker makes of its process.
    desired_state: Mapped[str] = mapped_column(
        String(16), default="running", server_default="running", nullable=False
    )
    #: A development group lets the step debugger pause its flows; a production group never pauses.
    development: Mapped[bool] = mapped_column(Boolean, default=False, server_default="0", nullable=False)
    #: Whether flows with code nodes (PythonCompute: trusted code with the worker's rights) may run
    #: here; only an administrator turns it on.
    code_nodes: Mapped[bool] = mapped_column(Boolean, default=False, server_default="0", nullable=False)
    #: The port of the group's HTTP listener (its HTTPInput nodes); None: FLOWBROKER_HTTP_PORT.
    http_port: Mapped[int | None] = mapped_column(Integer, nullable=True)
    created_at: Mapped[datetime] = mapped_column(UtcDateTime(), default=utcnow, nullable=False)
    broker: Mapped[Broker] = relationship(back_populates="groups")
    report: Mapped[GroupReport | None] = relationship(
        back_populates="group", cascade="all, delete-orphan", passive_deletes=True
    )


class GroupReport(Base):
    """What the worker process of an execution group last said of itself, wherever it runs.

    The worker registers here when it starts (host, pid, start time), touches ``alive_at``
    every few seconds and writes its statistics every interval, so a configuration manager on
    another host sees it through the repository they share.
    """

    __tablename__ = "group_reports"
    group_id: Mapped[int] = mapped_column(
        ForeignKey("execution_groups.id", ondelete="CASCADE"), primary_key=True
    )
    host: Mapped[str] = mapped_column(String(255), default="", nullable=False)
    pid: Mapped[int] = mapped_column(Integer, default=0, nullable=False)
    started_at: Mapped[datetime] = mapped_column(UtcDateTime(), default=utcnow, nullable=False)
    alive_at: Mapped[datetime] = mapped_column(UtcDateTime(), default=utcnow, nullable=False)
    statistics: Mapped[dict[str, Any] | None] = mapped_column(JsonDoc, nullable=True)
    group: Mapped[ExecutionGroup] = relationship(back_populates="report")


class Flow(Base):
    """A message flow; its documents live in :class:`FlowVersion`, one row per save."""

    __tablename__ = "flows"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(128), unique=True, nullable=False)
    description: Mapped[str] = mapped_column(Text, default="", nullable=False)
    current_version: Mapped[int] = mapped_column(Integer, default=0, nullable=False)
    created_at: Mapped[datetime] = mapped_column(UtcDateTime(), default=utcnow, nullable=False)
    updated_at: Mapped[datetime] = mapped_column(
        UtcDateTime(), default=utcnow, onupdate=utcnow, nullable=False
    )
    versions: Mapped[list[FlowVersion]] = relationship(
        back_populates="flow", cascade="all, delete-orphan", order_by="FlowVersion.version"
    )


class FlowVersion(Base):
    __tablename__ = "flow_versions"
    __table_args__ = (UniqueConstraint("flow_id", "version", name="uq_flow_versions_flow_version"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    flow_id: Mapped[int] = mapped_column(ForeignKey("flows.id", ondelete="CASCADE"), nullable=False)
    version: Mapped[int] = mapped_column(Integer, nullable=False)
    document: Mapped[dict[str, Any]] = mapped_column(JsonDoc, nullable=False)
    comment: Mapped[str] = mapped_column(Text, default="", nullable=False)
    author: Mapped[str] = mapped_column(String(64), default="", nullable=False)
    created_at: Mapped[datetime] = mapped_column(UtcDateTime(), default=utcnow, nullable=False)
    flow: Mapped[Flow] = relationship(back_populates="versions")


class Deployment(Base):
    """One flow version deployed to one execution group, with its instance count and overrides."""

    __tablename__ = "deployments"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    flow_version_id: Mapped[int] = mapped_column(ForeignKey("flow_versions.id"), nullable=False)
    broker_id: Mapped[int] = mapped_column(ForeignKey("brokers.id", ondelete="CASCADE"), nullable=False)
    group_id: Mapped[int] = mapped_column(
        ForeignKey("execution_groups.id", ondelete="CASCADE"), nullable=False
    )
    additional_instances: Mapped[int] = mapped_column(Integer, default=0, nullable=False)
    #: Per-deployment values of node properties (ACE's BAR overrides): {"nodeId.prop": value}.
    overrides: Mapped[dict[str, Any]] = mapped_column(JsonDoc, default=dict, nullable=False)
    status: Mapped[str] = mapped_column(String(16), default="pending", nullable=False)
    diagnostics: Mapped[list[Any]] = mapped_column(JsonDoc, default=list, nullable=False)
    #: What the flow needs beside itself, resolved when it was deployed so the execution group
    #: needs no repository lookup: {"subflows": [{name, version, latest, document}],
    #: "messageSets": [{name, version, document}]}.
    dependencies: Mapped[dict[str, Any]] = mapped_column(JsonDoc, default=dict, nullable=False)
    #: The step debugger's breakpoints (development groups only): {"connections": ["a.out->b.in"],
    #: "esql": [{"node": id, "line": n}]}.
    breakpoints: Mapped[dict[str, Any]] = mapped_column(JsonDoc, default=dict, nullable=False)
    created_at: Mapped[datetime] = mapped_column(UtcDateTime(), default=utcnow, nullable=False)
    updated_at: Mapped[datetime] = mapped_column(
        UtcDateTime(), default=utcnow, onupdate=utcnow, nullable=False
    )
    flow_version: Mapped[FlowVersion] = relationship()
    broker: Mapped[Broker] = relationship()
    group: Mapped[ExecutionGroup] = relationship()


class MessageSet(Base):
    """A message set (MRM dictionary): message types and their physical formats, versioned."""

    __tablename__ = "message_sets"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(128), unique=True, nullable=False)
    description: Mapped[str] = mapped_column(Text, default="", nullable=False)
    current_version: Mapped[int] = mapped_column(Integer, default=0, nullable=False)
    created_at: Mapped[datetime] = mapped_column(UtcDateTime(), default=utcnow, nullable=False)
    updated_at: Mapped[datetime] = mapped_column(
        UtcDateTime(), default=utcnow, onupdate=utcnow, nullable=False
    )
    versions: Mapped[list[MessageSetVersion]] = relationship(
        back_populates="message_set", cascade="all, delete-orphan", order_by="MessageSetVersion.version"
    )


class MessageSetVersion(Base):
    __tablename__ = "message_set_versions"
    __table_args__ = (
        UniqueConstraint("message_set_id", "version", name="uq_message_set_versions_set_version"),
    )
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    message_set_id: Mapped[int] = mapped_column(
        ForeignKey("message_sets.id", ondelete="CASCADE"), nullable=False
    )
    version: Mapped[int] = mapped_column(Integer, nullable=False)
    document: Mapped[dict[str, Any]] = mapped_column(JsonDoc, nullable=False)
    author: Mapped[str] = mapped_column(String(64), default="", nullable=False)
    created_at: Mapped[datetime] = mapped_column(UtcDateTime(), default=utcnow, nullable=False)
    message_set: Mapped[MessageSet] = relationship(back_populates="versions")


class DataSource(Base):
    """A named database that Database and Compute nodes reach (ACE's ODBC data source name)."""

    __tablename__ = "data_sources"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(128), unique=True, nullable=False)
    url: Mapped[str] = mapped_column(String(1000), nullable=False)
    description: Mapped[str] = mapped_column(Text, default="", nullable=False)
    broker_id: Mapped[int | None] = mapped_column(
        ForeignKey("brokers.id", ondelete="SET NULL"), nullable=True
    )
    created_at: Mapped[datetime] = mapped_column(UtcDateTime(), default=utcnow, nullable=False)
    updated_at: Mapped[datetime] = mapped_column(
        UtcDateTime(), default=utcnow, onupdate=utcnow, nullable=False
    )


class Subscription(Base):
    """A durable subscription: messages published on ``topic`` (matching ``filter``) go to ``queue``."""

    __tablename__ = "subscriptions"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    broker_id: Mapped[int | None] = mapped_column(ForeignKey("brokers.id", ondelete="CASCADE"), nullable=True)
    topic: Mapped[str] = mapped_column(String(1000), nullable=False)
    queue: Mapped[str] = mapped_column(String(48), nullable=False)
    filter: Mapped[str] = mapped_column(Text, default="", nullable=False)
    owner: Mapped[str] = mapped_column(String(64), default="", nullable=False)
    created_at: Mapped[datetime] = mapped_column(UtcDateTime(), default=utcnow, nullable=False)


class TopicAcl(Base):
    """Who may publish or subscribe below a topic (seed 004's topic-based security)."""

    __tablename__ = "topic_acls"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    topic: Mapped[str] = mapped_column(String(1000), nullable=False)
    principal: Mapped[str] = mapped_column(String(64), nullable=False)
    allow_publish: Mapped[bool | None] = mapped_column(Boolean, nullable=True)
    allow_subscribe: Mapped[bool | None] = mapped_column(Boolean, nullable=True)
    created_at: Mapped[datetime] = mapped_column(UtcDateTime(), default=utcnow, nullable=False)


class AuditEntry(Base):
    """One change: who did what to which object, and when."""

    __tablename__ = "audit_entries"
    __table_args__ = (Index("ix_audit_entries_at", "at"), Index("ix_audit_entries_target", "target"))
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    at: Mapped[datetime] = mapped_column(UtcDateTime(), default=utcnow, nullable=False)
    actor: Mapped[str] = mapped_column(String(64), nullable=False)
    action: Mapped[str] = mapped_column(String(64), nullable=False)
    target: Mapped[str] = mapped_column(String(300), nullable=False)
    detail: Mapped[dict[str, Any]] = mapped_column(JsonDoc, default=dict, nullable=False)


class DebugPause(Base):
    """A flow thread of a development group paused by the step debugger, as its worker reports it.

    The worker writes the row when the thread pauses (with the message assembly's tree and, at an
    ESQL breakpoint, the variables in scope), rewrites it after an edit, and deletes it when the
    thread goes on; the configuration manager reads it and sends the commands back as control tasks.
    """

    __tablename__ = "debug_pauses"
    id: Mapped[str] = mapped_column(String(36), primary_key=True)
    deployment_id: Mapped[int] = mapped_column(
        ForeignKey("deployments.id", ondelete="CASCADE"), nullable=False, index=True
    )
    flow: Mapped[str] = mapped_column(String(255), nullable=False)
    thread: Mapped[str] = mapped_column(String(255), default="", nullable=False)
    #: "connection" or "esql"; where: the connection id, or the node id and ESQL line.
    kind: Mapped[str] = mapped_column(String(16), nullable=False)
    connection: Mapped[str] = mapped_column(String(512), default="", nullable=False)
    node: Mapped[str] = mapped_column(String(255), default="", nullable=False)
    line: Mapped[int] = mapped_column(Integer, default=0, nullable=False)
    message: Mapped[dict[str, Any]] = mapped_column(JsonDoc, default=dict, nullable=False)
    variables: Mapped[list[Any]] = mapped_column(JsonDoc, default=list, nullable=False)
    #: Counts the edits applied, so a reader sees the tree has changed.
    revision: Mapped[int] = mapped_column(Integer, default=0, nullable=False)
    paused_at: Mapped[datetime] = mapped_column(UtcDateTime(), default=utcnow, nullable=False)
    resumes_at: Mapped[datetime] = mapped_column(UtcDateTime(), nullable=False)
