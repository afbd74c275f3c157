"""Settings refuse default secrets outside development; the built designer is served with SPA fallback."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest
from flowbroker.api.app import create_app
from flowbroker.settings import Settings
from pydantic import ValidationError

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from fastapi.testclient import TestClient


def test_production_refuses_default_secrets(tmp_path: Path) -> None:
    with pytest.raises(ValidationError, match="FLOWBROKER_SECRET_KEY"):
        Settings(environment="production", data=tmp_path)
    with pytest.raises(ValidationError, match="FLOWBROKER_SECRET_KEY"):
        Settings(environment="production", data=tmp_path, secret_key="changeme")
    with pytest.raises(ValidationError, match="FLOWBROKER_ADMIN_PASSWORD"):
        Settings(environment="production", data=tmp_path, secret_key="x" * 32, admin_password="admin")
    ok = Settings(environment="production", data=tmp_path, secret_key="x" * 32)
    assert ok.cors_origins == []


def test_settings_come_from_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FLOWBROKER_DATA", str(tmp_path))
    monkeypatch.setenv("FLOWBROKER_API_PORT", "9090")
    monkeypatch.setenv("FLOWBROKER_CORS_ORIGINS", "http://a.local,http://b.local")
    monkeypatch.setenv("FLOWBROKER_MAX_BODY_BYTES", "2048")
    settings = Settings()
    assert settings.data == tmp_path and settings.api_port == 9090 and settings.max_body_bytes == 2048
    assert settings.cors_origins == ["http://a.local", "http://b.local"]
    assert settings.resolved_database_url == f"sqlite:///{tmp_path.resolve() / 'config.db'}"
    monkeypatch.setenv("FLOWBROKER_API_PORT", "http")
    with pytest.raises(ValidationError):
        Settings()


def test_designer_is_served_with_spa_fallback(tmp_path: Path) -> None:
    dist = tmp_path / "dist"
    (dist / "assets").mkdir(parents=True)
    (dist / "index.html").write_text("<!doctype html><title>flowbroker designer</title>")
    (dist / "assets" / "app.js").write_text("console.log('designer')")
    (tmp_path / "secret.txt").write_text("outside the build")
    app = create_app(Settings(data=tmp_path / "data", frontend_dist=str(dist)))
    with TestClient(app) as client:
        assert "flowbroker designer" in client.get("/").text
        assert "flowbroker designer" in client.get("/flows/12/edit").text
        assert client.get("/assets/app.js").text == "console.log('designer')"
        assert "outside the build" not in client.get("/../secret.txt").text
        assert "outside the build" not in client.get("/%2e%2e/secret.txt").text
        api_missing = client.get("/api/nothing-here")
        assert api_missing.status_code == 404 and api_missing.json()["code"] == "not_found"
    app.state.engine.dispose()


def test_without_a_build_the_root_points_at_the_api_docs(tmp_path: Path) -> None:
    app = create_app(Settings(data=tmp_path / "data", frontend_dist=str(tmp_path / "missing")))
    with TestClient(app) as client:
        assert client.get("/").json()["api"] == "/api/docs"
    app.state.engine.dispose()
