"""Topic ACLs through the API: administrators only, topic strings checked precisely, and every
change handed whole to the real queue manager, which then judges its application connections."""

from __future__ import annotations

from typing import Any

import pytest
from flowbroker.qm.client import Client
from flowbroker.qm.harness import QueueManagerProcess
from flowbroker.qm.protocol import QMError

pytestmark = [pytest.mark.timeout(120)]


@pytest.fixture
def acl_api(sqlite_api_with: Any) -> Any:
    return sqlite_api_with()


def test_only_administrators_manage_topic_acls(acl_api: Any) -> None:
    rule = {"topic": "prices", "principal": "*", "publish": False}
    for role in ("viewer", "developer", "operator"):
        assert acl_api.as_(role, "GET", "/api/topic-acls").status_code == 403
        assert acl_api.as_(role, "POST", "/api/topic-acls", json=rule).status_code == 403
    assert acl_api.client.get("/api/topic-acls").status_code == 401
    assert acl_api.as_("admin", "GET", "/api/topic-acls").json() == []


@pytest.mark.parametrize(
    ("body", "pointer", "words"),
    [
        ({"topic": "prices/#", "principal": "*", "publish": False}, "/topic", "name 'prices' instead"),
        ({"topic": "prices/+/eu", "principal": "*", "publish": False}, "/topic", "level 2, column 8"),
        ({"topic": "pri#ces", "principal": "*", "publish": False}, "/topic", "level 1, column 4"),
        ({"topic": "#", "principal": "*", "publish": False}, "/topic", "without the wildcards"),
        ({"topic": "a/b\x00c", "principal": "*", "publish": False}, "/topic", "NUL character at column 4"),
        ({"topic": "a\nb", "principal": "*", "publish": False}, "/topic", "U+000A at column 2"),
        ({"topic": "", "principal": "*", "publish": False}, "/topic", ""),
        ({"topic": "x" * 1001, "principal": "*", "publish": False}, "/topic", ""),
        ({"topic": "prices", "principal": "two words", "publish": False}, "/principal", "BROKER/GROUP"),
        ({"topic": "prices", "principal": "a/b/c", "publish": False}, "/principal", "BROKER/GROUP"),
        ({"topic": "prices", "principal": "*"}, "/publish", "would say nothing"),
        ({"topic": "prices", "principal": "*", "publish": "no"}, "/publish", ""),
        ({"topic": "prices", "principal": "*", "publish": 0}, "/publish", ""),
        ({"topic": "prices", "principal": "*", "publish": True, "extra": 1}, "/extra", ""),
        ({"topic": ["prices"], "principal": "*", "publish": True}, "/topic", ""),
    ],
)
def test_a_bad_rule_is_refused_with_a_pointer(
    acl_api: Any, body: dict[str, Any], pointer: str, words: str
) -> None:
    refused = acl_api.as_("admin", "POST", "/api/topic-acls", json=body)
    assert refused.status_code == 422, refused.text
    problems = refused.json()["detail"]
    assert problems[0]["pointer"] == pointer, problems
    assert words in problems[0]["message"], problems
    assert acl_api.as_("admin", "GET", "/api/topic-acls").json() == []


def test_rules_reach_the_queue_manager_which_judges_its_users_by_them(acl_api: Any, unique: str) -> None:
    data = acl_api.app.state.settings.data
    made = acl_api.as_(
        "admin",
        "POST",
        "/api/topic-acls",
        json={"topic": f"{unique}/prices", "principal": "*", "publish": False},
    )
    # no queue manager yet: the rule is kept and the answer says it was not handed over
    assert made.status_code == 201, made.text
    assert made.json()["queueManager"].startswith("not updated: the queue manager is not reachable")
    rule_id = made.json()["id"]
    dup = acl_api.as_(
        "admin",
        "POST",
        "/api/topic-acls",
        json={"topic": f"{unique}/prices", "principal": "*", "subscribe": True},
    )
    assert dup.status_code == 409 and dup.json()["code"] == "duplicate_rule"

    with QueueManagerProcess(data, fsync=False) as qm, qm.client() as admin:
        assert acl_api.as_("admin", "POST", "/api/topic-acls/push").json() == {"queueManager": "updated"}
        admin.define_user("trader", "trader-secret")
        admin.define_queue(f"{unique}.SUB")
        allowed = acl_api.as_(
            "admin",
            "POST",
            "/api/topic-acls",
            json={"topic": f"{unique}/prices/eu", "principal": "trader", "publish": True},
        )
        assert allowed.json()["queueManager"] == "updated"
        trader = Client.connect(qm.url, user="trader", password="trader-secret")
        try:
            with pytest.raises(QMError) as denied:
                trader.publish(f"{unique}/prices/us", b"1")
            assert denied.value.reason_code == 2035 and "trader may not publish" in denied.value.reason
            assert trader.publish(f"{unique}/prices/eu/fr", b"2") == 0  # allowed below its own rule
        finally:
            trader.close()
        # the administrator acting for an execution group is judged as that group
        with pytest.raises(QMError) as as_group:
            admin.publish(f"{unique}/prices/us", b"3", principal="B1/EG1")
        assert as_group.value.reason_code == 2035 and "B1/EG1" in as_group.value.reason
        denied_sub = acl_api.as_(
            "admin",
            "POST",
            "/api/topic-acls",
            json={"topic": f"{unique}/private", "principal": "B1/EG1", "subscribe": False},
        )
        assert denied_sub.json()["queueManager"] == "updated"
        with pytest.raises(QMError) as refused:
            admin.subscribe(f"{unique}/private/#", f"{unique}.SUB", principal="B1/EG1", durable=False)
        assert refused.value.reason_code == 2035
        # a wider pattern is accepted, and what it may not see is withheld from it
        admin.subscribe(
            f"{unique}/#", f"{unique}.SUB", name=f"{unique}.all", principal="B1/EG1", durable=False
        )
        assert admin.publish(f"{unique}/private/x", b"secret") == 0
        assert admin.publish(f"{unique}/open/x", b"open") == 1
        got = admin.get_many(f"{unique}.SUB", 10, wait=1)
        assert [m.body for m in got] == [b"open"]

        # the rule changed: the queue manager has the new set at once
        changed = acl_api.as_("admin", "PATCH", f"/api/topic-acls/{rule_id}", json={"publish": True})
        assert changed.status_code == 200 and changed.json()["publish"] is True
        assert admin.publish(f"{unique}/prices/us", b"4", principal="B1/EG1") == 1  # to {unique}/#
        assert acl_api.as_("admin", "DELETE", f"/api/topic-acls/{rule_id}").status_code == 204
        acls = admin.admin("list_topic_acls")["acls"]
        assert f"{unique}/prices" not in acls and f"{unique}/prices/eu" in acls
    assert acl_api.as_("admin", "GET", f"/api/topic-acls/{rule_id}").status_code == 404
    assert (
        acl_api.as_("admin", "PATCH", f"/api/topic-acls/{rule_id}", json={"publish": True}).status_code == 404
    )


def test_a_rule_is_changed_only_into_a_valid_one(acl_api: Any) -> None:
    made = acl_api.as_(
        "admin", "POST", "/api/topic-acls", json={"topic": "a/b", "principal": "*", "publish": False}
    )
    rule_id = made.json()["id"]
    acl_api.as_("admin", "POST", "/api/topic-acls", json={"topic": "a/c", "principal": "*", "publish": False})
    for body, pointer in (
        ({"principal": None}, "/principal"),
        ({"topic": None}, "/topic"),
        ({"topic": "a/+"}, "/topic"),
        ({"publish": None}, "/publish"),
        ({"topic": "a/c"}, "/topic"),  # 409: a/c has a rule for * already
    ):
        refused = acl_api.as_("admin", "PATCH", f"/api/topic-acls/{rule_id}", json=body)
        assert refused.status_code in (409, 422), (body, refused.text)
        detail = refused.json()["detail"]
        assert (detail[0] if isinstance(detail, list) else detail)["pointer"] == pointer, (body, detail)
    kept = acl_api.as_("admin", "GET", f"/api/topic-acls/{rule_id}").json()
    assert (kept["topic"], kept["principal"], kept["publish"], kept["subscribe"]) == ("a/b", "*", False, None)
    both = acl_api.as_(
        "admin", "PATCH", f"/api/topic-acls/{rule_id}", json={"publish": None, "subscribe": True}
    )
    assert both.status_code == 200 and (both.json()["publish"], both.json()["subscribe"]) == (None, True)
