"""An execution group's own HTTP port: set by operators, validated, unique within its broker, audited."""

from __future__ import annotations

from typing import Any


def _broker(api: Any, unique: str) -> int:
    broker = api.as_("operator", "POST", "/api/brokers", json={"name": unique})
    assert broker.status_code == 201, broker.text
    return int(broker.json()["id"])


def _listed(api: Any, unique: str) -> dict[str, Any]:
    brokers = api.as_("viewer", "GET", "/api/brokers").json()
    broker = next(b for b in brokers if b["name"] == unique)
    return {g["name"]: g["httpPort"] for g in broker["groups"]}


def test_an_operator_sets_and_clears_a_group_port_shown_and_audited(api: Any, unique: str) -> None:
    broker_id = _broker(api, unique)
    groups = f"/api/brokers/{broker_id}/groups"
    web = api.as_("operator", "POST", groups, json={"name": "web", "httpPort": 18101})
    assert web.status_code == 201, web.text
    assert web.json()["httpPort"] == 18101
    batch = api.as_("operator", "POST", groups, json={"name": "batch"})
    assert batch.status_code == 201 and batch.json()["httpPort"] is None
    assert _listed(api, unique) == {"batch": None, "web": 18101}

    path = f"{groups}/{batch.json()['id']}"
    changed = api.as_("operator", "PATCH", path, json={"httpPort": 18102})
    assert changed.status_code == 200, changed.text
    assert changed.json()["httpPort"] == 18102
    # a rename leaves the port alone; null clears it (back to FLOWBROKER_HTTP_PORT)
    assert api.as_("operator", "PATCH", path, json={"description": "files"}).json()["httpPort"] == 18102
    cleared = api.as_("operator", "PATCH", path, json={"httpPort": None})
    assert cleared.status_code == 200 and cleared.json()["httpPort"] is None
    assert _listed(api, unique) == {"batch": None, "web": 18101}

    entries = api.as_(
        "viewer", "GET", "/api/audit", params={"target": f"group:{unique}/batch", "action": "group.update"}
    ).json()
    ports = [e["detail"]["http_port"] for e in entries if "http_port" in e["detail"]]
    assert sorted(ports, key=lambda p: p or 0) == [None, 18102]
    created = api.as_(
        "viewer", "GET", "/api/audit", params={"target": f"group:{unique}/web", "action": "group.create"}
    ).json()
    assert created[0]["actor"] == "operator" and created[0]["detail"]["http_port"] == 18101
    # a viewer cannot change it
    assert api.as_("viewer", "PATCH", path, json={"httpPort": 18103}).status_code == 403


def test_an_invalid_port_is_refused_naming_the_field(api: Any, unique: str) -> None:
    broker_id = _broker(api, unique)
    groups = f"/api/brokers/{broker_id}/groups"
    for bad in (0, 65536, -1, "8080", 80.5):
        refused = api.as_("operator", "POST", groups, json={"name": "eg1", "httpPort": bad})
        assert refused.status_code == 422, (bad, refused.text)
        assert refused.json()["detail"][0]["pointer"] == "/httpPort", refused.text
    group = api.as_("operator", "POST", groups, json={"name": "eg1"}).json()
    refused = api.as_("operator", "PATCH", f"{groups}/{group['id']}", json={"httpPort": 70000})
    assert refused.status_code == 422 and refused.json()["detail"][0]["pointer"] == "/httpPort"
    assert _listed(api, unique) == {"eg1": None}


def test_a_port_another_group_of_the_broker_has_is_a_conflict(api: Any, unique: str) -> None:
    broker_id = _broker(api, unique)
    groups = f"/api/brokers/{broker_id}/groups"
    assert api.as_("operator", "POST", groups, json={"name": "web", "httpPort": 18111}).status_code == 201
    taken = api.as_("operator", "POST", groups, json={"name": "api", "httpPort": 18111})
    assert taken.status_code == 409, taken.text
    body = taken.json()
    assert body["code"] == "duplicate_port"
    assert f"{unique}/web" in body["message"]
    assert body["detail"] == {"pointer": "/httpPort", "group": "web"}

    other = api.as_("operator", "POST", groups, json={"name": "api", "httpPort": 18112}).json()
    moved = api.as_("operator", "PATCH", f"{groups}/{other['id']}", json={"httpPort": 18111})
    assert moved.status_code == 409 and "web" in moved.json()["message"]
    # setting a group's own port again is no conflict
    same = api.as_("operator", "PATCH", f"{groups}/{other['id']}", json={"httpPort": 18112})
    assert same.status_code == 200, same.text
    # another broker's groups run elsewhere: the same port is theirs to use
    elsewhere = _broker(api, unique + "b")
    assert (
        api.as_(
            "operator", "POST", f"/api/brokers/{elsewhere}/groups", json={"name": "web", "httpPort": 18111}
        )
    ).status_code == 201
    assert _listed(api, unique) == {"api": 18112, "web": 18111}
