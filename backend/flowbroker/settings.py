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
    #: The built designer; empty means ``frontend/dist`` found relative to the repository.
    frontend_dist: str = ""
    #: Set by `flowbroker up` so /api/health can report the supervised components.
    supervisor_state: str = ""
    #: The broker whose execution groups `flowbroker up` runs on this machine.
    local_broker: str = "default"

    @field_validator("cors_origins", mode="before")
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


def new_password() -> str:
    """A one-time password for the first admin, printed once by `flowbroker up`."""
    return secrets.token_urlsafe(12)
