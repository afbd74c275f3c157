"""Shipped dependencies: subflows resolved by name and version, message sets registered, bad ones refused."""

from __future__ import annotations

import pytest
from flowbroker.formats.mrm import CATALOG
from flowbroker.runtime.compiler import FlowCompileError
from flowbroker.runtime.dependencies import install_message_sets, subflow_resolver

V1 = {"name": "Sub", "nodes": [], "marker": 1}
V2 = {"name": "Sub", "nodes": [], "marker": 2}
SHIPPED = {
    "subflows": [
        {"name": "Sub", "version": 1, "latest": False, "document": V1},
        {"name": "Sub", "version": 2, "latest": True, "document": V2},
    ]
}


def test_a_reference_without_a_version_takes_the_latest_shipped_one() -> None:
    resolve = subflow_resolver(SHIPPED)
    assert resolve({"name": "Sub"}) is V2
    assert resolve({"name": "Sub", "version": 1}) is V1
    assert resolve({"name": "Sub", "version": "2"}) is V2
    assert resolve({"name": "Sub", "version": 7}) is None
    assert resolve({"name": "Other"}) is None


def test_what_was_not_shipped_goes_to_the_fallback() -> None:
    asked = []

    def fallback(ref):  # type: ignore[no-untyped-def]
        asked.append(ref)
        return {"name": "FromRepository", "nodes": []}

    resolve = subflow_resolver(None, fallback)
    assert resolve({"name": "Old"})["name"] == "FromRepository"
    assert asked == [{"name": "Old"}]


def test_shipped_sets_are_registered_and_a_bad_one_names_its_pointer() -> None:
    good = {"types": {"T": {"elements": [{"name": "A", "type": "string", "cwf": {"length": 2}}]}}}
    assert install_message_sets(
        {"messageSets": [{"name": "SHIPPED.GOOD", "version": 1, "document": good}]}
    ) == ["SHIPPED.GOOD"]
    assert CATALOG.get("SHIPPED.GOOD").message_type("T").fields[0].length == 2
    bad = {"types": {"T": {"elements": [{"name": "A", "type": "nope"}]}}}
    with pytest.raises(FlowCompileError) as info:
        install_message_sets(
            {
                "messageSets": [
                    {"name": "SHIPPED.GOOD", "version": 2, "document": good},
                    {"name": "SHIPPED.BAD", "version": 1, "document": bad},
                ]
            }
        )
    (problem,) = info.value.problems
    assert problem.pointer == "/messageSets/1/document/types/T/elements/0/type"
    assert problem.message.startswith("message set 'SHIPPED.BAD': unknown type 'nope'")


@pytest.fixture
def session(tmp_path):  # type: ignore[no-untyped-def]
    from flowbroker.repository import db

    engine = db.make_engine(f"sqlite:///{tmp_path}/config.db")
    db.upgrade(engine)
    with db.session_scope(db.session_factory(engine)) as opened:
        yield opened
    engine.dispose()


def _uses(name: str, other: str) -> dict:
    from flowbroker.runtime.harness import flow

    return flow(
        {"i": ("Input", {}), "s": ("Subflow", {"flow": {"name": other}}), "o": ("Output", {})},
        ["i.out -> s", "s.out -> o"],
        name=name,
    )


def test_subflows_naming_each_other_resolve_once_and_fail_to_compile(session) -> None:  # type: ignore[no-untyped-def]
    from flowbroker.runtime.harness import with_input
    from flowbroker.services import dependencies, deploy, flows

    flows.create(session, "t", _uses("Ping", "Pong"))
    flows.create(session, "t", _uses("Pong", "Ping"))
    main = with_input({"s": ("Subflow", {"flow": {"name": "Ping"}})}, [], first="s")
    needs = dependencies.resolve(session, main)
    assert sorted((s["name"], s["version"], s["latest"]) for s in needs["subflows"]) == [
        ("Ping", 1, True),
        ("Pong", 1, True),
    ]
    problems = deploy.check(main, {}, needs)
    assert problems and "nest deeper than" in problems[-1]["message"]


def test_a_stored_set_that_no_longer_compiles_is_not_shipped_and_its_users_are_told(session) -> None:  # type: ignore[no-untyped-def]
    from flowbroker.repository.models import MessageSet, MessageSetVersion
    from flowbroker.runtime.harness import flow
    from flowbroker.services import dependencies, deploy

    # stored before documents were checked on save
    legacy = MessageSet(name="LEGACY", current_version=1)
    session.add(legacy)
    session.flush()
    session.add(MessageSetVersion(message_set_id=legacy.id, version=1, document={"messageTypes": []}))
    session.commit()
    main = flow(
        {
            "in": ("MQInput", {"queueName": "Q", "messageDomain": "MRM", "messageSet": "LEGACY"}),
            "out": ("MQOutput", {"queueName": "R"}),
        },
        ["in.out -> out"],
    )
    needs = dependencies.resolve(session, main)
    assert needs["messageSets"] == []
    (problem,) = deploy.check(main, {}, needs)
    assert (problem["node"], problem["property"]) == ("in", "messageSet")
    assert problem["message"].startswith("message set 'LEGACY': version 1 is not a valid message set:")


def test_every_node_parsing_in_a_message_set_names_it_for_the_deploy_check() -> None:
    from flowbroker_nodes import registry

    parsers = [
        spec
        for spec in registry.specs()
        if spec.property("messageDomain")
        and spec.property("messageSet")
        and not spec.property("resetMessageSet")
    ]
    assert len(parsers) >= 6
    for spec in parsers:
        assert spec.message_sets({"messageDomain": "MRM", "messageSet": "ORDERS"}) == ("ORDERS",), spec.type
        assert spec.message_sets({"messageDomain": "XMLNSC", "messageSet": "ORDERS"}) == (), spec.type


def test_an_mqtt_input_naming_a_set_the_deployment_lacks_is_refused() -> None:
    from flowbroker.runtime.harness import flow
    from flowbroker.services import deploy

    main = flow(
        {
            "in": (
                "MQTTSubscribe",
                {"topicName": "orders/#", "messageDomain": "MRM", "messageSet": "ABSENT"},
            ),
            "out": ("MQOutput", {"queueName": "R"}),
        },
        ["in.out -> out"],
    )
    problems = deploy.check(main, {}, {"subflows": [], "messageSets": []})
    assert [(p["node"], p["property"], p["message"]) for p in problems] == [
        ("in", "messageSet", "message set 'ABSENT': there is no message set of that name in the repository")
    ]
