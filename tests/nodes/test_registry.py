"""The registry: every node type module pairs its spec with a runtime class, and specs serialise."""

from __future__ import annotations

import json

from flowbroker_nodes import registry
from flowbroker_nodes.base import Node

EXPECTED = {
    "MQInput",
    "MQOutput",
    "MQReply",
    "Compute",
    "Filter",
    "Database",
    "Publication",
    "Trace",
    "TryCatch",
    "Throw",
    "Label",
    "RouteToLabel",
    "FlowOrder",
    "Passthrough",
    "ResetContentDescriptor",
    "Input",
    "Output",
    "Subflow",
}


def test_every_node_type_is_registered_with_its_runtime_class() -> None:
    assert EXPECTED <= set(registry.modules())
    for name, module in registry.modules().items():
        assert issubclass(module.Node, Node), name
        assert module.Node.SPEC is module.SPEC, name


def test_specs_are_json_with_the_terminals_the_designer_draws() -> None:
    specs = {s["type"]: s for s in json.loads(json.dumps([s.to_json() for s in registry.specs()]))}
    assert [t["name"] for t in specs["Compute"]["outputs"]] == [
        "out",
        "out1",
        "out2",
        "out3",
        "out4",
        "failure",
    ]
    assert [t["name"] for t in specs["Filter"]["outputs"]] == ["true", "false", "unknown", "failure"]
    assert [t["name"] for t in specs["MQInput"]["outputs"]] == ["out", "failure", "catch"]
    mode = next(p for p in specs["MQInput"]["properties"] if p["name"] == "transactionMode")
    assert mode["default"] == "yes" and mode["enum"] == ["yes", "no", "automatic"]
    esql = next(p for p in specs["Compute"]["properties"] if p["name"] == "esql")
    assert esql["required"] and esql["editor"] == "esql"


def test_input_nodes_are_the_ones_with_the_input_role() -> None:
    from flowbroker.runtime.compiler import FlowCompileError, compile_flow
    from flowbroker.runtime.harness import flow

    for spec in registry.specs():
        node_class = registry.modules()[spec.type].Node
        assert (spec.role == "input") == _supplies_arrivals(node_class), spec.type
    # a flow fed by an input node other than MQInput is a flow that can run
    only_mqtt = flow({"s": ("MQTTSubscribe", {"topicName": "a/b"}), "t": ("Trace", {})}, ["s.out -> t"])
    assert [n.id for n in compile_flow(only_mqtt).input_nodes()] == ["s"]
    try:
        compile_flow(flow({"t": ("Trace", {})}, []))
    except FlowCompileError as exc:
        assert "at least one input node" in str(exc.problems[0])
    else:
        raise AssertionError("a flow without an input node compiled")


def test_the_node_types_that_start_flows_declare_the_input_role() -> None:
    # the runtime gives flow threads to the nodes whose spec says role="input"; each thread runs
    # the loop itself on what the node supplies: its queue, or a source of its own
    for name, module in registry.modules().items():
        assert module.SPEC.is_input == _supplies_arrivals(module.Node), name
        assert not hasattr(module.Node, "run"), f"{name}: an input node runs no loop of its own"
    assert {s.type for s in registry.specs() if s.is_input} >= {"MQInput", "MQTTSubscribe", "HTTPInput"}


def test_specs_say_which_queues_message_sets_and_labels_a_node_names() -> None:
    mq_input, mq_output = registry.spec("MQInput"), registry.spec("MQOutput")
    reset, label = registry.spec("ResetContentDescriptor"), registry.spec("Label")
    assert mq_input is not None and mq_output is not None and reset is not None and label is not None
    assert mq_input.queues_read({"queueName": " IN.Q "}) == ("IN.Q",)
    assert mq_input.queues_written({"queueName": "IN.Q"}) == ()
    assert mq_input.message_sets({"messageDomain": "mrm", "messageSet": "ORDERS"}) == ("ORDERS",)
    assert mq_input.message_sets({"messageSet": "ORDERS"}) == ()  # the default domain is BLOB
    assert mq_output.queues_written({"queueName": "OUT.Q"}) == ("OUT.Q",)  # default mode: queueName
    assert mq_output.queues_written({"queueName": "OUT.Q", "destinationMode": "destinationList"}) == ()
    mq_get = registry.spec("MQGet")
    assert mq_get is not None and mq_get.queues_read({"queueName": "REPLY.Q"}) == ("REPLY.Q",)
    assert reset.message_sets({"messageSet": "S", "resetMessageSet": True}) == ("S",)
    assert reset.message_sets({"messageSet": "S"}) == ()
    assert label.label_name({"labelName": "L1"}) == "L1"
    assert mq_input.label_name({"labelName": "L1"}) is None
    assert [s.type for s in registry.specs() if s.subflow_part == "node"] == ["Subflow"]


def test_specs_say_where_tests_start_flows_where_esql_runs_and_what_bounds_a_subflow() -> None:
    by_type = {s.type: s for s in registry.specs()}
    starts = {t: s.test_input for t, s in by_type.items() if s.test_input}
    assert starts == {"MQInput": "queue", "FileInput": "file", "HTTPInput": "http"}
    assert {t for t, s in by_type.items() if s.esql_property} == {"Compute", "Filter", "Database"}
    for spec in by_type.values():
        if spec.esql_property:
            declared = spec.property(spec.esql_property)
            assert declared is not None and declared.type == "esql", spec.type
    modules = {t: s.esql_module for t, s in by_type.items() if s.esql_module}
    assert modules == {"Compute": "COMPUTE", "Filter": "FILTER", "Database": "DATABASE"}
    # the node runs the kind of module its spec declares (the designer's skeleton says the same)
    assert all(registry.modules()[t].Node.KIND == kind for t, kind in modules.items())
    assert [t for t, s in by_type.items() if s.is_placeholder] == ["Unsupported"]
    boundaries = {t: (s.subflow_part, s.subflow_terminal_property) for t, s in by_type.items()}
    assert boundaries["Input"] == ("input", "terminalName")
    assert boundaries["Output"] == ("output", "terminalName")
    assert boundaries["Subflow"] == ("node", "")
    assert boundaries["Compute"] == ("", "")


def _supplies_arrivals(node_class: type) -> bool:
    """Whether a node type tells a flow thread its input queue or opens a source for it."""
    from flowbroker_nodes.base import Node

    return node_class.queue_input is not Node.queue_input or node_class.open_input is not Node.open_input
