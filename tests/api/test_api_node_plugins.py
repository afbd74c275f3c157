"""Node types of other distributions, found through the ``flowbroker.nodes`` entry-point group.

Each test puts a real distribution (a ``*.dist-info`` directory with its ``entry_points.txt``) on
``sys.path``, where ``importlib.metadata`` finds it as it finds an installed package.
"""

from __future__ import annotations

import importlib
import logging
import sys
import textwrap
import tomllib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from flowbroker.runtime.harness import FlowHarness, flow, with_input
from flowbroker_nodes import registry

EXAMPLE = Path(__file__).resolve().parents[1] / "plugins" / "flowbroker_example_node"
BUILTIN = list(registry.builtin_modules())

Install = Callable[..., None]


@pytest.fixture
def install(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Install]:
    """``install(name, {entry point: module}, {module: source})``: a distribution on sys.path."""
    site = tmp_path / "site-packages"
    site.mkdir()
    monkeypatch.syspath_prepend(str(site))
    imported: set[str] = set()

    def install(name: str, points: dict[str, str], sources: dict[str, str] | None = None) -> None:
        info = site / f"{name.replace('-', '_')}-1.0.0.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0.0\n")
        lines = "".join(f"{point} = {module}\n" for point, module in points.items())
        (info / "entry_points.txt").write_text(f"[flowbroker.nodes]\n{lines}")
        for module, source in (sources or {}).items():
            (site / f"{module}.py").write_text(textwrap.dedent(source))
        imported.update(points.values())
        importlib.invalidate_caches()
        registry.modules.cache_clear()

    yield install
    registry.modules.cache_clear()
    for module in imported:
        sys.modules.pop(module, None)


@pytest.fixture
def example(install: Install, monkeypatch: pytest.MonkeyPatch) -> None:
    """tests/plugins/flowbroker_example_node installed as its pyproject.toml declares it."""
    project = tomllib.loads((EXAMPLE / "pyproject.toml").read_text())["project"]
    monkeypatch.syspath_prepend(str(EXAMPLE))
    install(project["name"], project["entry-points"]["flowbroker.nodes"])


def _module(type_name: str, **spec: str) -> str:
    fields = "".join(f", {key}={value}" for key, value in spec.items())
    return f"""
        from flowbroker_nodes.base import Node as BaseNode
        from flowbroker_nodes.spec import NodeSpec, Property, Terminal

        SPEC = NodeSpec(type={type_name!r}, label="L", category="c", icon="i", description="d"{fields})

        class Node(BaseNode):
            SPEC = SPEC
        """


def _refusals(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "flowbroker_nodes.plugins"]


def test_a_plugin_node_type_is_served_validated_and_run(example: None, sqlite_api: Any) -> None:
    assert list(registry.modules()) == [*BUILTIN, "ExampleStamp"]

    served = sqlite_api.as_("viewer", "GET", "/api/node-types").json()
    stamp = next(s for s in served if s["type"] == "ExampleStamp")
    assert [p["name"] for p in stamp["properties"]] == ["variable", "value"]
    assert [t["name"] for t in stamp["outputs"]] == ["out", "failure"]

    def document(name: str, **props: str) -> dict[str, Any]:
        return with_input({"s": ("ExampleStamp", props)}, [], first="s") | {"name": name}

    missing = sqlite_api.as_("developer", "POST", "/api/flows", json=document("PluginA"))
    assert missing.status_code == 422, missing.text
    assert "/nodes/1/properties/value" in missing.text
    refused = sqlite_api.as_(
        "developer", "POST", "/api/flows", json=document("PluginB", value="v", variable="1x")
    )
    assert refused.status_code == 422 and "not an identifier" in refused.text, refused.text
    saved = sqlite_api.as_("developer", "POST", "/api/flows", json=document("PluginC", value="v"))
    assert saved.status_code == 201, saved.text

    harness = FlowHarness(document("PluginD", value="hello", variable="Seen"))
    harness.inject("in", b"payload")
    (out,) = harness.seen("s", "out")
    assert out.local_environment.child("Variables").child("Seen").value == "hello"
    harness.close()


def test_a_plugin_taking_a_builtin_type_is_refused(
    install: Install, caplog: pytest.LogCaptureFixture
) -> None:
    install("evil-compute", {"compute": "evil_compute"}, {"evil_compute": _module("Compute")})
    with caplog.at_level(logging.ERROR):
        modules = registry.modules()
    assert list(modules) == BUILTIN
    assert modules["Compute"].__name__ == "flowbroker_nodes.compute"
    (message,) = _refusals(caplog)
    assert "distribution evil-compute 1.0.0, entry point compute = evil_compute" in message
    assert "'Compute' is a built-in node type" in message


def test_two_plugins_claiming_one_type_are_both_refused(
    install: Install, caplog: pytest.LogCaptureFixture
) -> None:
    install("first", {"twin": "twin_a"}, {"twin_a": _module("Twin")})
    install("second", {"twin": "twin_b"}, {"twin_b": _module("Twin")})
    with caplog.at_level(logging.ERROR):
        assert "Twin" not in registry.modules()
    messages = _refusals(caplog)
    assert len(messages) == 2
    assert any("distribution first" in m and "also declared by distribution second" in m for m in messages)
    assert any("distribution second" in m and "also declared by distribution first" in m for m in messages)


def test_malformed_plugins_are_refused_and_the_others_kept(
    example: None, install: Install, caplog: pytest.LogCaptureFixture
) -> None:
    install(
        "broken-nodes",
        {"nospec": "no_spec", "colour": "colour", "crash": "crash", "typo": "typo", "role": "role"},
        {
            "no_spec": "SPEC = 'Compute'\n",
            "colour": _module("Colour", properties="(Property('hue', 'colour'),)"),
            "crash": "raise RuntimeError('no licence key')\n",
            "typo": _module("Bad Name"),
            "role": _module("Starter", role="'input'"),
        },
    )
    with caplog.at_level(logging.ERROR):
        modules = registry.modules()
    assert list(modules) == [*BUILTIN, "ExampleStamp"]
    refused = {m.split("entry point ")[1].split(" ")[0]: m for m in _refusals(caplog)}
    assert set(refused) == {"nospec", "colour", "crash", "typo", "role"}
    assert all("distribution broken-nodes 1.0.0" in m for m in refused.values())
    assert "SPEC is missing or not a flowbroker_nodes.spec.NodeSpec" in refused["nospec"]
    assert "SPEC.properties 'hue': unknown type 'colour'" in refused["colour"]
    assert "cannot be imported: RuntimeError: no licence key" in refused["crash"]
    assert "SPEC.type 'Bad Name'" in refused["typo"]
    assert "defines run()" in refused["role"]
    # a flow naming a refused type is invalid, as for any unknown type
    harness_doc = flow({"c": ("Colour", {})}, [])
    with pytest.raises(Exception, match="Colour"):
        FlowHarness(harness_doc)
