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
