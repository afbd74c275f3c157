"""Compute: runs an ESQL COMPUTE module to build new messages and propagate them."""

from __future__ import annotations

import os

from esql.edits import MessageEdits, message_edits
from esql.tree import Element

from flowbroker_nodes.base import Assembly, DeployProblem, NodeError
from flowbroker_nodes.esqlnode import EsqlNode
from flowbroker_nodes.spec import NodeSpec, Property, Terminal

SPEC = NodeSpec(
    type="Compute",
    label="Compute",
    extra={"esqlProperty": "esql", "esqlModule": "COMPUTE"},
    category="transformation",
    icon="compute",
    description="Runs the ESQL module's Main() on the input message assembly; the output assembly goes to the "
    "out terminal when Main() returns TRUE, and PROPAGATE statements send messages to out, out1–out4 or a "
    "Label.",
    inputs=(Terminal("in", "in", "In"),),
    outputs=(
        Terminal("out", "out", "Out"),
        Terminal("out1", "out", "Out1"),
        Terminal("out2", "out", "Out2"),
        Terminal("out3", "out", "Out3"),
        Terminal("out4", "out", "Out4"),
        Terminal("failure", "failure", "Failure"),
    ),
    properties=(
        Property(
            "esql",
            "esql",
            "ESQL",
            required=True,
            editor="esql",
            description="The ESQL source: a CREATE COMPUTE MODULE or MQSI V2 bare statements.",
        ),
        Property(
            "module",
            "string",
            "Module",
            default="",
            description="The module to run when the source holds several; empty runs the only one.",
        ),
        Property(
            "computeMode",
            "enum",
            "Compute mode",
            default="Message",
            enum=(
                "Message",
                "LocalEnvironment",
                "LocalEnvironmentAndMessage",
                "Exception",
                "ExceptionAndMessage",
                "ExceptionAndLocalEnvironment",
                "All",
            ),
            description="Which output trees the module builds; the others pass through from the input.",
        ),
        Property(
            "dataSource",
            "string",
            "Data source",
            default="",
            description="Named data source for PASSTHRU and database references (optional).",
        ),
        Property(
            "externals",
            "json",
            "EXTERNAL variables",
            default={},
            description="Values of the module's EXTERNAL variables; a deployment may override them.",
        ),
        Property("throwExceptionOnDatabaseError", "boolean", "Throw on database error", default=True),
    ),
)

_BUILDS_LOCAL = {"LocalEnvironment", "LocalEnvironmentAndMessage", "ExceptionAndLocalEnvironment", "All"}
_BUILDS_EXCEPTION = {"Exception", "ExceptionAndMessage", "ExceptionAndLocalEnvironment", "All"}
_BUILDS_MESSAGE = {"Message", "LocalEnvironmentAndMessage", "ExceptionAndMessage", "All"}
#: The terminals PROPAGATE TO TERMINAL may name, as the spec declares them.
_OUT_TERMINALS = frozenset(t.name for t in SPEC.outputs if t.kind == "out")


def straight_runs_setting() -> bool:
    """``FLOWBROKER_STRAIGHT_RUNS``: ``on`` (the default) lets a flow whose Compute only copies the
    message and edits its JSON body run as that edit (``flowbroker.runtime.straight``); ``off``
    runs every message through the nodes."""
    raw = os.environ.get("FLOWBROKER_STRAIGHT_RUNS", "").strip().lower()
    if raw in ("", "on"):
        return True
    if raw == "off":
        return False
    raise DeployProblem(f"FLOWBROKER_STRAIGHT_RUNS must be on or off, not {raw!r}")


class Node(EsqlNode):
    """Runs Main(); PROPAGATE and a TRUE result send the output assembly on."""

    SPEC = SPEC
    KIND = SPEC.esql_module

    def prepare(self) -> None:
        super().prepare()
        mode = self.properties.get("computeMode") or "Message"
        self.builds_message = mode in _BUILDS_MESSAGE
        self.builds_local = mode in _BUILDS_LOCAL
        self.builds_exception = mode in _BUILDS_EXCEPTION
        #: What Main does when it only copies the message and edits its JSON body (the runtime may
        #: then apply the edits to the parsed body, see esql.edits), else None.
        self.message_edits: MessageEdits | None = None
        if straight_runs_setting() and mode == "Message" and not self.properties.get("dataSource"):
            self.message_edits = message_edits(self.routine)

    def _output(self, assembly: Assembly, root: Element, local: Element, exceptions: Element) -> Assembly:
        return Assembly(
            root if self.builds_message else assembly.root,
            local if self.builds_local else assembly.local_environment,
            assembly.environment,
            exceptions if self.builds_exception else assembly.exception_list,
        )

    def evaluate(self, assembly: Assembly, terminal: str) -> None:
        def propagate(
            target: str, is_label: bool, root: Element, local: Element, exceptions: Element
        ) -> None:
            out = self._output(assembly, root, local, exceptions)
            if is_label:
                label = self.flow.label(target)
                if label is None:
                    raise NodeError(f"PROPAGATE TO LABEL '{target}': no Label node of that name", number=2942)
                self.stats.messages_out += 1
                label.receive("in", out)
            elif target in _OUT_TERMINALS:
                self.propagate(target, out)
            else:
                raise NodeError(f"PROPAGATE TO TERMINAL '{target}': no such terminal", number=2942)

        # OutputLocalEnvironment and OutputExceptionList are made when the module first uses them;
        # the context is the one the last invocation on this thread gave back, renewed
        ctx = self.reused_context(assembly, Element("Root"), propagate)
        # One node invocation: CURRENT_… give one moment, SLEEP and INSTANCESTOPPING see a stop
        # (the flow thread's, as the context was given it).
        result = self.run_routine(ctx, invocation=True)
        if result is True:
            # the output LocalEnvironment and ExceptionList are read (and so made) only when this
            # mode sends them on: in Message mode the input's go with the output Root
            out = Assembly(
                ctx.output_root if self.builds_message else assembly.root,
                ctx.output_local_environment if self.builds_local else assembly.local_environment,
                assembly.environment,
                ctx.output_exception_list if self.builds_exception else assembly.exception_list,
            )
            self.propagate("out", out)
        self.context_done(ctx)
