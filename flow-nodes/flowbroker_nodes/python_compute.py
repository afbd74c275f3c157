"""PythonCompute: trusted Python against the message trees, where an administrator allows code nodes.

The node's ``code`` property holds a Python module, stored and versioned with the flow document.
It is compiled when the flow is saved or deployed (a syntax error is refused with its line and
column) and must define ``main(ctx)``; the module body runs once per deployment, in the worker,
before the first message (never in the configuration manager that checks it). ``main`` works on
the same trees ESQL does through ``ctx``:

- ``ctx.input_root``, ``ctx.input_local_environment``, ``ctx.input_exception_list`` (read them),
  ``ctx.environment`` (shared by the whole flow invocation, like ESQL's Environment);
- ``ctx.output_root`` (a new empty ``Root``; ``ctx.copy_message()`` copies the input into it),
  ``ctx.output_local_environment`` (a copy of the input's, changed freely);
- ``ctx.propagate("out1")`` sends the output assembly to out, out1–out4 and clears
  ``output_root`` for the next one, as ESQL's PROPAGATE does; ``ctx.propagate_to_label(name)``;
- ``main`` returning True sends the output assembly to ``out``, as an ESQL Main() that returns TRUE;
- ``ctx.log(text)`` writes to the flow's user trace, ``ctx.stopping()`` says the flow is stopping.

An exception ``main`` raises (even ``SystemExit``) fills the ExceptionList and goes to the failure
terminal or backs the message out, exactly as an ESQL exception does; it never ends the group.
The code is not sandboxed: it runs with the worker's rights, which is why only execution groups
an administrator marked with ``code_nodes`` accept a flow holding this node. ESQL stays sandboxed.
"""

from __future__ import annotations

import ast
import threading
import traceback
import types
from typing import Any

from esql.tree import Element

from flowbroker_nodes.base import Assembly, DeployProblem, NodeError
from flowbroker_nodes.base import Node as BaseNode
from flowbroker_nodes.spec import NodeSpec, Property, Terminal

SPEC = NodeSpec(
    type="PythonCompute",
    label="PythonCompute",
    category="transformation",
    icon="python",
    description="Runs the node's own Python module's main(ctx) on the message trees (trusted code, only in "
    "execution groups an administrator enabled for code nodes); a True result sends the output to out, "
    "ctx.propagate() sends it to out, out1–out4, and an exception goes to failure.",
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
            "code",
            "text",
            "Python module",
            required=True,
            editor="multiline",
            description="The Python source, stored and versioned with the flow; it defines main(ctx).",
        ),
    ),
    extra={"codeNode": True},
)

_OUT_TERMINALS = ("out", "out1", "out2", "out3", "out4")
_ENTRY = "main"


def is_code_node(spec: NodeSpec) -> bool:
    """Whether nodes of this type run code of their own (allowed only in groups enabled for it)."""
    return bool(spec.extra.get("codeNode"))


class Context:
    """What ``main(ctx)`` sees: the input trees, the output it builds, and propagation."""

    def __init__(self, node: Node, assembly: Assembly) -> None:
        self._node = node
        self._assembly = assembly
        self.input_root = assembly.root
        self.input_local_environment = assembly.local_environment
        self.input_exception_list = assembly.exception_list
        self.environment = assembly.environment
        self.output_root = Element("Root")
        self.output_local_environment = assembly.local_environment.copy()
        self.node_name = node.name

    def copy_message(self) -> Element:
        """Make ``output_root`` a copy of ``input_root`` (headers and body) and return it."""
        self.output_root = self.input_root.copy()
        return self.output_root

    def _assembly_out(self) -> Assembly:
        return Assembly(
            self.output_root,
            self.output_local_environment,
            self.environment,
            self.input_exception_list,
        )

    def propagate(self, terminal: str = "out", *, keep: bool = False) -> None:
        """Send the output assembly to ``terminal``; ``output_root`` starts empty again unless ``keep``."""
        if terminal not in _OUT_TERMINALS:
            raise NodeError(
                f"propagate to terminal {terminal!r}: no such terminal (one of {', '.join(_OUT_TERMINALS)})",
                number=2942,
            )
        self._node.propagate(terminal, self._assembly_out())
        self._reset(keep)

    def propagate_to_label(self, label: str, *, keep: bool = False) -> None:
        """Send the output assembly to the Label node named ``label`` in this flow."""
        target = self._node.flow.label(label)
        if target is None:
            raise NodeError(f"propagate to label {label!r}: no Label node of that name", number=2942)
        self._node.stats.messages_out += 1
        target.receive("in", self._assembly_out())
        self._reset(keep)

    def _reset(self, keep: bool) -> None:
        if not keep:
            self.output_root = Element("Root")
            self.output_local_environment = self.input_local_environment.copy()

    def log(self, text: str) -> None:
        """A line in the flow's user trace (and the group's log), prefixed with the node name."""
        self._node.flow.log(f"{self._node.name}: {text}")

    def stopping(self) -> bool:
        """Whether the flow is being stopped: a long loop should end."""
        return self._node.flow.stop.is_set()


def _user_line(exc: BaseException, filename: str) -> int:
    """The line of the node's own code where ``exc`` was raised (0 when it came from elsewhere)."""
    line = 0
    for frame, lineno in traceback.walk_tb(exc.__traceback__):
        if frame.f_code.co_filename == filename:
            line = lineno
    return line


class Node(BaseNode):
    """Runs ``main(ctx)`` once per message; see the module docstring."""

    SPEC = SPEC

    def prepare(self) -> None:
        source = self.properties.get("code")
        if not isinstance(source, str) or not source.strip():
            raise DeployProblem("required: the Python module (it defines main(ctx))", property="code")
        self.filename = f"<PythonCompute {self.id}>"
        try:
            tree = ast.parse(source, filename=self.filename)
            self.code = compile(tree, self.filename, "exec")
        except SyntaxError as exc:
            raise DeployProblem(
                f"Python syntax error: {exc.msg}",
                property="code",
                line=exc.lineno or 0,
                column=exc.offset or 0,
            ) from None
        except ValueError as exc:  # a NUL character in the source
            raise DeployProblem(f"Python source cannot be compiled: {exc}", property="code") from None
        defines = [
            n for n in tree.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef) and n.name == _ENTRY
        ]
        if not defines:
            raise DeployProblem(f"the module defines no top-level function {_ENTRY}(ctx)", property="code")
        if isinstance(defines[-1], ast.AsyncFunctionDef):
            raise DeployProblem(
                f"{_ENTRY}(ctx) must be a plain function, not async",
                property="code",
                line=defines[-1].lineno,
                column=defines[-1].col_offset + 1,
            )
        self._main: Any = None
        self._load_lock = threading.Lock()

    def _entry(self) -> Any:
        """``main`` of the module, whose body runs once, on the first message after the deployment."""
        main = self._main
        if main is not None:
            return main
        with self._load_lock:
            if self._main is None:
                module = types.ModuleType(f"flowbroker_code_{self.id}")
                module.__file__ = self.filename
                try:
                    exec(self.code, module.__dict__)
                except BaseException as exc:
                    raise self._failure(exc, "loading the module") from exc
                main = module.__dict__.get(_ENTRY)
                if not callable(main):
                    raise NodeError(f"{self.name}: the module's {_ENTRY} is not a function", number=2230)
                self._main = main
            return self._main

    def _failure(self, exc: BaseException, doing: str) -> NodeError:
        line = _user_line(exc, self.filename)
        where = f" at line {line}" if line else ""
        text = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
        return NodeError(
            f"PythonCompute node {self.name}: {doing} raised {text}{where}",
            number=2230,
            inserts=(self.name, type(exc).__name__, str(exc), line),
        )

    def evaluate(self, assembly: Assembly, terminal: str) -> None:
        from flowbroker_nodes.base import Unwinding

        main = self._entry()
        ctx = Context(self, assembly)
        try:
            result = main(ctx)
        except Unwinding:
            raise  # a failure further down the flow, on its way back to a TryCatch or the input
        except NodeError:
            raise
        except BaseException as exc:  # SystemExit and KeyboardInterrupt too: the group runs on
            raise self._failure(exc, f"{_ENTRY}()") from exc
        if result is True:
            self.propagate("out", ctx._assembly_out())
