"""Auth, roles, the one error body, size limits, CORS and the audit trail."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from fastapi.routing import APIRoute, iter_route_contexts
from flowbroker.repository.models import ROLE_RANKS
from flowbroker.services import users

#: What answers without a token: health, login, the API description, and the designer's files.
PUBLIC = {
    ("GET", "/api/health"),
    ("POST", "/api/auth/login"),
    ("GET", "/api/openapi.json"),
    ("HEAD", "/api/openapi.json"),
    ("GET", "/api/docs"),
    ("HEAD", "/api/docs"),
    ("GET", "/docs/oauth2-redirect"),
    ("HEAD", "/docs/oauth2-redirect"),
    ("GET", "/{path:path}"),
    ("HEAD", "/{path:path}"),
    ("GET", "/"),
    ("HEAD", "/"),
}
USER_PASSWORD = "correct-horse-battery"  # the one tests/api/conftest.py gives every user
PATH_PARAM = re.compile(r"\{([^}:]+)(:[^}]+)?\}")


def _mounted_routes(app: Any) -> list[tuple[str, str]]:
    """Every method and path the application answers, whether or not the OpenAPI schema lists it."""
    found = []
    for context in iter_route_contexts(app.routes):
        assert context.path and context.methods, f"a route the test does not know how to call: {context!r}"
        for method in sorted(context.methods):
            found.append((method, context.path))
    return found


def _concrete(path: str) -> str:
    return PATH_PARAM.sub(lambda m: "QUEUE.NAME" if m.group(1) == "queue" else "1", path)


def test_every_route_but_health_and_login_needs_a_token(api: Any) -> None:
    routes = _mounted_routes(api.app)
    assert len(routes) > 40
    assert ("GET", "/metrics") in routes
    openapi = {(m.upper(), p) for p, ops in api.app.openapi()["paths"].items() for m in ops}
    # the schema names a path parameter without its converter: /api/queues/{queue:path} is /api/queues/{queue}
    assert openapi <= {(m, PATH_PARAM.sub(lambda p: "{" + p.group(1) + "}", path)) for m, path in routes}
    for method, path in routes:
        if (method, path) in PUBLIC:
            continue
        response = api.client.request(method, _concrete(path))
        assert response.status_code == 401, (method, path, response.status_code)
        assert set(response.json()) == {"code", "message", "detail"}


def _permission_of(route: Any) -> str | None:
    """The permission a route checks, read from its dependencies (``require_<permission>``)."""
    names = [d.call.__name__ for d in route.dependant.dependencies if d.call is not None]
    found = [n.removeprefix("require_").replace("_", ".") for n in names if n.startswith("require_")]
    assert len(found) <= 1, (route.path, found)
    return found[0] if found else None


def test_each_route_checks_one_permission_of_the_table(api: Any) -> None:
    """The roles the routes admit come from users.PERMISSIONS, the table /api/auth/me reports."""
    checked = 0
    ranks = list(ROLE_RANKS)
    for route in iter_route_contexts(api.app.routes):
        if not isinstance(route.original_route, APIRoute) or any(
            (m, route.path) in PUBLIC for m in route.methods
        ):
            continue
        permission = _permission_of(route)
        if permission is None:
            # only the caller's own account needs no permission beyond a valid token
            assert route.path.startswith("/api/auth/"), route.path
            continue
        assert permission in users.PERMISSIONS, (route.path, permission)
        needed = users.PERMISSIONS[permission]
        method = sorted(route.methods)[0]
        if needed != "viewer":
            below = ranks[ranks.index(needed) - 1]
            response = api.as_(below, method, _concrete(route.path))
            assert response.status_code == 403, (method, route.path, below, response.status_code)
            assert permission not in api.as_(below, "GET", "/api/auth/me").json()["permissions"]
        assert permission in api.as_(needed, "GET", "/api/auth/me").json()["permissions"]
        checked += 1
    assert checked > 40


def test_me_and_login_report_the_permissions_of_the_role(api: Any) -> None:
    expected = {
        "viewer": ["read"],
        "developer": ["read", "flows.edit"],
        "operator": ["read", "flows.edit", "deploy", "topology.manage", "queues.write"],
        "admin": ["read", "flows.edit", "deploy", "topology.manage", "queues.write", "users.manage"],
    }
    for role, permissions in expected.items():
        me = api.as_(role, "GET", "/api/auth/me").json()
        assert me["role"] == role and me["permissions"] == permissions
        login = api.client.post("/api/auth/login", json={"username": role, "password": USER_PASSWORD}).json()
        assert login["permissions"] == permissions


def test_metrics_need_a_viewer_token(api: Any) -> None:
    assert api.client.get("/metrics").status_code == 401
    response = api.as_("viewer", "GET", "/metrics")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/plain")


def test_health_needs_no_token(api: Any) -> None:
    body = api.client.get("/api/health").json()
    assert body["status"] == "ok" and body["database"] == "up"
    assert body["components"][0]["name"] == "configuration-manager"


def test_wrong_password_and_unknown_user_get_the_same_401(api: Any) -> None:
    wrong = api.client.post("/api/auth/login", json={"username": "admin", "password": "nope-nope"})
    ghost = api.client.post("/api/auth/login", json={"username": "ghost", "password": "nope-nope"})
    assert wrong.status_code == ghost.status_code == 401
    assert (
        wrong.json()
        == ghost.json()
        == {"code": "bad_credentials", "message": "wrong username or password", "detail": None}
    )


def test_garbage_tokens_are_401(api: Any) -> None:
    for header in ("Bearer nonsense", "Basic abc", "Bearer ", "bearer"):
        response = api.client.get("/api/flows", headers={"Authorization": header})
        assert response.status_code == 401, header
        assert response.headers["www-authenticate"] == "Bearer"


@pytest.mark.parametrize(
    ("role", "method", "path", "body", "allowed"),
    [
        ("viewer", "POST", "/api/flows", {"name": "ViewerFlow", "nodes": []}, False),
        ("viewer", "POST", "/api/brokers", {"name": "viewerbroker"}, False),
        ("viewer", "POST", "/api/datasources", {"name": "vds", "url": "sqlite://"}, False),
        ("viewer", "GET", "/api/users", None, False),
        ("developer", "POST", "/api/brokers", {"name": "devbroker"}, False),
        ("developer", "GET", "/api/users", None, False),
        ("operator", "GET", "/api/users", None, False),
        ("viewer", "GET", "/api/flows", None, True),
        ("viewer", "GET", "/api/audit", None, True),
        ("admin", "GET", "/api/users", None, True),
    ],
)
def test_role_checks(api: Any, role: str, method: str, path: str, body: Any, allowed: bool) -> None:
    response = api.as_(role, method, path, json=body)
    if allowed:
        assert response.status_code < 400, response.text
    else:
        assert response.status_code == 403
        assert response.json()["code"] == "forbidden"
        assert role in response.json()["message"]


def test_unknown_route_method_and_id_share_the_error_body(api: Any) -> None:
    missing = api.as_("viewer", "GET", "/api/no-such-thing")
    assert missing.status_code == 404
    assert missing.json() == {
        "code": "not_found",
        "message": "no route GET /api/no-such-thing",
        "detail": None,
    }
    method = api.as_("viewer", "PATCH", "/api/flows")
    assert method.status_code == 405 and method.json()["code"] == "method_not_allowed"
    for path in (
        "/api/flows/987654",
        "/api/brokers/987654",
        "/api/datasources/987654",
        "/api/message-sets/987654",
    ):
        response = api.as_("viewer", "GET", path)
        assert response.status_code == 404 and response.json()["code"] == "not_found", path
    bad_id = api.as_("viewer", "GET", "/api/flows/abc")
    assert bad_id.status_code == 422
    assert bad_id.json()["detail"][0]["pointer"] == "/flow_id"
    assert bad_id.json()["detail"][0]["location"] == "path"


def test_oversized_body_is_413(api: Any) -> None:
    limit = api.app.state.settings.max_body_bytes
    declared = api.as_("developer", "POST", "/api/flows", content=b" " * (limit + 1))
    assert declared.status_code == 413
    assert declared.json()["code"] == "body_too_large"

    def chunks() -> Any:
        for _ in range(limit // 65536 + 2):
            yield b" " * 65536

    streamed = api.as_(
        "developer", "POST", "/api/flows", content=chunks(), headers={"Content-Type": "application/json"}
    )
    assert streamed.status_code == 413
    assert streamed.json()["detail"] == {"limit": limit}


def test_unknown_fields_and_wrong_types_in_resource_bodies(api: Any, unique: str) -> None:
    extra = api.as_("operator", "POST", "/api/brokers", json={"name": unique, "colour": "red"})
    assert extra.status_code == 422
    assert extra.json()["detail"][0]["pointer"] == "/colour"
    wrong = api.as_("operator", "POST", "/api/brokers", json={"name": 12})
    assert wrong.status_code == 422 and wrong.json()["detail"][0]["pointer"] == "/name"
    snake = api.as_(
        "developer", "POST", "/api/datasources", json={"name": unique, "url": "sqlite://", "broker_id": 1}
    )
    assert snake.status_code == 422 and snake.json()["detail"][0]["pointer"] == "/broker_id"


def test_every_change_is_audited_with_who_and_when(api: Any, unique: str) -> None:
    api.as_("operator", "POST", "/api/brokers", json={"name": unique})
    entries = api.as_("viewer", "GET", "/api/audit", params={"target": f"broker:{unique}"}).json()
    assert [(e["actor"], e["action"], e["target"]) for e in entries] == [
        ("operator", "broker.create", f"broker:{unique}")
    ]
    assert entries[0]["at"].endswith("Z") or "+00:00" in entries[0]["at"]
    by_actor = api.as_(
        "viewer", "GET", "/api/audit", params={"actor": "operator", "action": "broker.create"}
    ).json()
    assert unique in [e["target"].split(":", 1)[1] for e in by_actor]
    future = api.as_("viewer", "GET", "/api/audit", params={"since": "2999-01-01T00:00:00Z"}).json()
    assert future == []


def test_logout_revokes_the_token(api: Any) -> None:
    token = api.client.post(
        "/api/auth/login", json={"username": "viewer", "password": "correct-horse-battery"}
    ).json()["accessToken"]
    headers = {"Authorization": f"Bearer {token}"}
    assert api.client.get("/api/auth/me", headers=headers).json()["username"] == "viewer"
    assert api.client.post("/api/auth/logout", headers=headers).status_code == 204
    assert api.client.get("/api/auth/me", headers=headers).status_code == 401


def test_users_admin_and_last_admin_protection(api: Any, unique: str) -> None:
    created = api.as_(
        "admin", "POST", "/api/users", json={"username": unique, "password": "longenough1", "role": "viewer"}
    )
    assert created.status_code == 201
    user_id = created.json()["id"]
    dup = api.as_(
        "admin", "POST", "/api/users", json={"username": unique, "password": "longenough1", "role": "viewer"}
    )
    assert dup.status_code == 409
    short = api.as_(
        "admin", "POST", "/api/users", json={"username": unique + "x", "password": "short", "role": "viewer"}
    )
    assert short.status_code == 422 and short.json()["detail"][0]["pointer"] == "/password"
    bad_role = api.as_(
        "admin",
        "POST",
        "/api/users",
        json={"username": unique + "y", "password": "longenough1", "role": "god"},
    )
    assert bad_role.status_code == 422 and bad_role.json()["detail"][0]["pointer"] == "/role"

    login = api.client.post("/api/auth/login", json={"username": unique, "password": "longenough1"})
    headers = {"Authorization": f"Bearer {login.json()['accessToken']}"}
    promoted = api.as_(
        "admin", "PATCH", f"/api/users/{user_id}", json={"role": "developer", "password": "newpassword2"}
    )
    assert promoted.json()["role"] == "developer"
    assert api.client.get("/api/auth/me", headers=headers).status_code == 401  # password change revoked it

    admins = [u for u in api.as_("admin", "GET", "/api/users").json() if u["role"] == "admin"]
    assert len(admins) == 1
    last = api.as_("admin", "PATCH", f"/api/users/{admins[0]['id']}", json={"role": "viewer"})
    assert last.status_code == 409 and last.json()["code"] == "last_admin"
    assert api.as_("admin", "DELETE", f"/api/users/{user_id}").status_code == 204


def test_cors_is_closed_by_default(api: Any) -> None:
    preflight = api.client.options(
        "/api/flows", headers={"Origin": "http://evil.example", "Access-Control-Request-Method": "GET"}
    )
    assert "access-control-allow-origin" not in preflight.headers


def test_cors_opens_to_configured_origins(tmp_path: Any) -> None:
    import warnings

    from flowbroker.api.app import create_app
    from flowbroker.settings import Settings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from fastapi.testclient import TestClient

    app = create_app(Settings(data=tmp_path, cors_origins="http://designer.local:5173"))
    with TestClient(app) as client:
        allowed = client.options(
            "/api/flows",
            headers={"Origin": "http://designer.local:5173", "Access-Control-Request-Method": "GET"},
        )
        assert allowed.headers["access-control-allow-origin"] == "http://designer.local:5173"
        other = client.options(
            "/api/flows", headers={"Origin": "http://evil.example", "Access-Control-Request-Method": "GET"}
        )
        assert "access-control-allow-origin" not in other.headers
    app.state.engine.dispose()


def test_openapi_and_docs_are_served(api: Any) -> None:
    schema = api.client.get("/api/openapi.json").json()
    assert "/api/flows" in schema["paths"] and "/api/health" in schema["paths"]
    assert api.client.get("/api/docs").status_code == 200


def test_nul_characters_are_refused_on_every_backend(api: Any, unique: str) -> None:
    document = {
        "name": unique,
        "nodes": [{"id": "c1", "type": "Compute", "properties": {"esql": "SET X = 1;\u0000"}}],
    }
    flow = api.as_("developer", "POST", "/api/flows", json=document)
    assert flow.status_code == 422
    assert flow.json()["detail"] == [
        {"pointer": "/nodes/0/properties/esql", "message": "must not contain the NUL character"}
    ]
    source = api.as_(
        "developer", "POST", "/api/datasources", json={"name": unique, "url": "sqlite:///a\u0000b"}
    )
    assert source.status_code == 422 and source.json()["detail"][0]["pointer"] == "/url"
    broker = api.as_("operator", "POST", "/api/brokers", json={"name": unique, "description": "a\u0000b"})
    assert broker.status_code in (201, 422)  # SQLite stores it; PostgreSQL refuses it: never a 500
    if broker.status_code == 422:
        assert broker.json()["code"] == "unstorable_value"
    audit = api.as_("viewer", "GET", "/api/audit", params={"target": "flow:\u0000"})
    assert audit.status_code in (200, 422)
    mset = api.as_(
        "developer", "POST", "/api/message-sets", json={"name": unique, "document": {"a": ["\u0000"]}}
    )
    assert mset.status_code == 422 and mset.json()["detail"][0]["pointer"] == "/document/a/0"


def test_health_says_starting_until_the_first_user_exists(tmp_path: Path) -> None:
    from fastapi.testclient import TestClient
    from flowbroker.api.app import create_app
    from flowbroker.repository import db
    from flowbroker.services import users
    from flowbroker.settings import Settings

    app = create_app(Settings(data=tmp_path, database_url=f"sqlite:///{tmp_path / 'config.db'}"))
    try:
        with TestClient(app) as client:
            starting = client.get("/api/health")
            assert starting.status_code == 503
            assert starting.json()["status"] == "starting"
            with db.session_scope(app.state.session_factory) as session:
                users.ensure_admin(session, "first-admin-pass")
            ready = client.get("/api/health")
            assert ready.status_code == 200 and ready.json()["status"] == "ok"
            login = client.post("/api/auth/login", json={"username": "admin", "password": "first-admin-pass"})
            assert login.status_code == 200
    finally:
        app.state.engine.dispose()
