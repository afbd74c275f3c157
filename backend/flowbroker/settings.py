"""The configuration manager's settings: one object read from FLOWBROKER_* environment variables."""

from __future__ import annotations

import secrets
from pathlib import Path
from typing import Annotated, Literal

from pydantic import Field, field_validator, model_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

#: Secrets that must never reach a production configuration.
_DEFAULT_SECRETS = {"", "changeme", "change-me", "secret", "admin", "password"}
#: The mark of .env.example's placeholder values, which must be replaced before production.
_PLACEHOLDER = "replace-me"


class Settings(BaseSettings):
    """Where state lives, which ports are served, and the limits the API enforces."""

    model_config = SettingsConfigDict(env_prefix="FLOWBROKER_", extra="ignore")

    environment: Literal["development", "production"] = "development"
    data: Path = Path("./var")
    #: Empty means the SQLite file ``<data>/config.db``.
    database_url: str = ""
    admin_password: str = ""
    #: Signs nothing by itself; its presence proves the operator configured the deployment.
    secret_key: str = ""
    api_host: str = "127.0.0.1"
    api_port: int = Field(default=8080, ge=0, le=65535)
    qm_port: int = Field(default=1414, ge=0, le=65535)
    #: The queue manager's application password; empty means the one kept in ``<data>/qm.json``.
    qm_password: str = ""
    max_body_bytes: int = Field(default=4 * 1024 * 1024, ge=1024)
    #: Closed by default: no browser origin other than the API's own may call it.
    cors_origins: Annotated[list[str], NoDecode] = Field(default_factory=list)
    token_ttl_seconds: int = Field(default=7 * 24 * 3600, ge=60)
    #: Failed logins of one user, and from one client address, within the window that lock it out.
    login_max_failures: int = Field(default=5, ge=1)
    login_max_failures_per_address: int = Field(default=20, ge=1)
    login_failure_window_seconds: float = Field(default=300.0, gt=0)
    #: How long a lock-out refuses every login (429 with Retry-After), the right password included.
    login_lockout_seconds: float = Field(default=300.0, ge=1)
    #: REST long-polls (POST /api/queues/{q}/get?wait=) waiting at once; past it 429.
    long_poll_max: int = Field(default=32, ge=1, le=10_000)
    #: The longest wait, in seconds, a REST get may ask for.
    long_poll_max_wait: float = Field(default=30.0, ge=0, le=3600)
    #: The built designer; empty means ``frontend/dist`` found relative to the repository.
    frontend_dist: str = ""
    #: Set by `flowbroker up` so /api/health can report the supervised components.
    supervisor_state: str = ""
    #: The broker whose execution groups `flowbroker up` runs on this machine.
    local_broker: str = "default"
    #: CPU time one node invocation's ESQL may use, unless the flow says (0: unlimited).
    esql_cpu_limit_ms: int = Field(default=5000, ge=0)
    #: Largest character string or BLOB one node invocation's ESQL may build, unless the flow says.
    esql_memory_limit_bytes: int = Field(default=64 * 1024 * 1024, ge=0)
    #: Most files, and most bytes once uncompressed, read from a workspace zip POSTed to /api/imports/ace.
    ace_import_max_files: int = Field(default=20_000, ge=1)
    ace_import_max_bytes: int = Field(default=128 * 1024 * 1024, ge=1024)
    #: Most attributes on one element of an XML, XMLNS or XMLNSC message (0: no limit).
    xml_max_attributes: int = Field(default=10_000, ge=0)
    #: Most elements in one XML, XMLNS or XMLNSC message (0: no limit).
    xml_max_elements: int = Field(default=1_000_000, ge=0)
    #: XSLTransform: the longest one transformation may run, the most memory its sandbox process
    #: may map, the largest stylesheet and the largest result it may produce.
    xslt_time_limit_ms: int = Field(default=5000, ge=10, le=600_000)
    xslt_memory_limit_bytes: int = Field(default=512 * 1024 * 1024, ge=64 * 1024 * 1024, le=16 * 1024**3)
    xslt_max_stylesheet_bytes: int = Field(default=1024 * 1024, ge=1024, le=64 * 1024 * 1024)
    xslt_max_output_bytes: int = Field(default=64 * 1024 * 1024, ge=1024, le=1024**3)
    #: Directories below which FileInput and FileOutput nodes may read and write (comma separated);
    #: empty means ``<data>/files``. A node's directory outside all of them is refused.
    file_roots: Annotated[list[str], NoDecode] = Field(default_factory=list)
    #: The execution group's HTTP listener (HTTPInput nodes), opened when the first flow with an
    #: HTTPInput node is deployed; port 0 takes any free port (reported in the group's statistics).
    http_host: str = "127.0.0.1"
    http_port: int = Field(default=7800, ge=0, le=65535)
    #: Largest request body the HTTP listener reads; past it 413.
    http_max_body_bytes: int = Field(default=4 * 1024 * 1024, ge=1024)
    #: HTTP connections served at once by one execution group; past it 503.
    http_max_connections: int = Field(default=1000, ge=1)
    #: Seconds an idle keep-alive HTTP connection stays open.
    http_keep_alive_seconds: float = Field(default=5.0, gt=0)

    #: The flow exerciser: most messages (flow invocations) and seconds one recording may ask for,
    #: the bytes its file may reach, and how long a recording is kept before it expires.
    recording_max_messages: int = Field(default=100, ge=1, le=100_000)
    recording_max_seconds: float = Field(default=600.0, gt=0, le=86_400)
    recording_max_bytes: int = Field(default=32 * 1024 * 1024, ge=64 * 1024, le=4 * 1024**3)
    recording_ttl_seconds: float = Field(default=3600.0, gt=0, le=30 * 86_400)
    #: What one recorded message keeps: fields over its trees, bytes of its serialized body, and the
    #: largest unparsed body parsed to show its tree.
    recording_max_fields: int = Field(default=5000, ge=10, le=1_000_000)
    recording_max_body_bytes: int = Field(default=256 * 1024, ge=1024, le=64 * 1024 * 1024)
    recording_max_parse_bytes: int = Field(default=1024 * 1024, ge=1024, le=256 * 1024 * 1024)

    @field_validator("cors_origins", "file_roots", mode="before")
    @classmethod
    def _split_origins(cls, value: object) -> object:
        if isinstance(value, str) and not value.strip().startswith("["):
            return [part.strip() for part in value.split(",") if part.strip()]
        return value

    @model_validator(mode="after")
    def _refuse_default_secrets(self) -> Settings:
        if self.environment != "development":
            if (
                self.secret_key.strip().lower() in _DEFAULT_SECRETS
                or len(self.secret_key) < 16
                or _PLACEHOLDER in self.secret_key.lower()
            ):
                raise ValueError(
                    "FLOWBROKER_SECRET_KEY must be set to a random value of at least 16 characters "
                    "outside development"
                )
            if self.admin_password and (
                self.admin_password.strip().lower() in _DEFAULT_SECRETS
                or _PLACEHOLDER in self.admin_password.lower()
            ):
                raise ValueError(
                    "FLOWBROKER_ADMIN_PASSWORD must not be a default password outside development"
                )
            if _PLACEHOLDER in self.qm_password.lower():
                raise ValueError(
                    "FLOWBROKER_QM_PASSWORD must not be the example's placeholder outside development"
                )
        return self

    @property
    def resolved_database_url(self) -> str:
        if self.database_url:
            return self.database_url
        return f"sqlite:///{(self.data / 'config.db').resolve()}"

    def resolved_file_roots(self) -> tuple[str, ...]:
        """The file roots as absolute paths with symbolic links resolved."""
        roots = self.file_roots or [str(self.data / "files")]
        return tuple(str(Path(root).expanduser().resolve()) for root in roots)

    def resolved_frontend_dist(self) -> Path | None:
        """The built designer directory, or None when it has not been built."""
        if self.frontend_dist:
            candidate = Path(self.frontend_dist)
            return candidate if (candidate / "index.html").is_file() else None
        here = Path(__file__).resolve()
        for parent in here.parents:
            candidate = parent / "frontend" / "dist"
            if (candidate / "index.html").is_file():
                return candidate
        return None


class QueueManagerSettings(BaseSettings):
    """The queue manager's limits on its connections, read from FLOWBROKER_QM_* variables.

    Separate from :class:`Settings` so a queue manager started on its own needs none of the
    configuration manager's secrets.
    """

    model_config = SettingsConfigDict(env_prefix="FLOWBROKER_QM_", extra="ignore")

    #: TCP connections served at once; one more is refused (2025). The Unix socket, open only to
    #: the queue manager's own OS user, is not capped.
    max_connections: int = Field(default=1000, ge=1)
    #: Seconds a connection has to get its HELLO answered before it is closed.
    handshake_timeout: float = Field(default=10.0, gt=0)
    #: Largest frame accepted before HELLO is answered; 16 times this in all.
    max_hello_frame: int = Field(default=4096, ge=256, le=1024 * 1024)
    #: Bytes of replies a client leaves unread before it is disconnected; also the largest
    #: frame it may send once authenticated, when below the 64 MiB frame limit.
    max_connection_buffer: int = Field(default=128 * 1024 * 1024, ge=64 * 1024)


def new_password() -> str:
    """A one-time password for the first admin, printed once by `flowbroker up`."""
    return secrets.token_urlsafe(12)
