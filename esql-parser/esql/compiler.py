"""The compiler's front door: source text to a cached, runnable program of ESQL modules and routines.

``compile_program`` parses every file, runs the checks, generates Python source and compiles it
with a globals dict whose ``__builtins__`` is empty, so generated code reaches only the helpers
``esql.prelude`` binds. Run-time failures are mapped back to the ESQL line that raised them.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from esql import ast, functions
from esql import runtime as rt
from esql.codegen import Generator, Unit
from esql.diagnostics import Diagnostic
from esql.domains import DomainError
from esql.functions.datetimes import INVOCATION_INSTANT, Moment
from esql.functions.misc import STOP_SIGNAL
from esql.parser import parse
from esql.prelude import build_globals, sqlstate_of, wrap_function
from esql.runtime import EsqlRuntimeError, ExecutionContext, UserException
from esql.tree import reshape
from esql.values import VALUE_BUDGET


class EsqlCompileError(Exception):
    """A program that does not compile; ``diagnostics`` lists every error found."""

    def __init__(self, diagnostics: list[Diagnostic]) -> None:
        self.diagnostics = diagnostics
        super().__init__("\n".join(str(d) for d in diagnostics))


class ModuleNotFound(EsqlRuntimeError, LookupError):
    """``main_module`` found no (or no single) module of the requested name or kind."""


class CompiledRoutine:
    """An entry point (a module's Main, or the bare statements of an MQSI V2 program)."""

    def __init__(self, program: Program, function: Callable[..., Any], name: str, kind: str) -> None:
        self.program = program
        self.function = function
        self.name = name
        self.kind = kind

    def run(self, ctx: ExecutionContext) -> Any:
        """Run the routine; returns Main's value (True/False/None).

        Run outside a node invocation (``flowbroker esql run``, tests), the run is one: CURRENT_…
        give one moment throughout and SLEEP / INSTANCESTOPPING see ``ctx.stop``. Nodes open the
        invocation themselves (:func:`esql.functions.invocation`) around their evaluation.
        """
        if functions.in_invocation():
            return self._run(ctx)
        stop = ctx.stop if hasattr(ctx.stop, "wait") else None
        with functions.invocation(stop=stop):
            return self._run(ctx)

    def run_invocation(self, ctx: ExecutionContext, stop: Any) -> Any:
        """Run the routine as one node invocation of its own: what ``with
        functions.invocation(stop=stop): routine.run(ctx)`` does, without the context manager's
        objects and calls (a Compute node runs this once a message)."""
        clock = INVOCATION_INSTANT.set(Moment(None))
        stop_token = STOP_SIGNAL.set(stop)
        try:
            return self._run(ctx)
        finally:
            STOP_SIGNAL.reset(stop_token)
            INVOCATION_INSTANT.reset(clock)

    def _run(self, ctx: ExecutionContext) -> Any:
        # what changed the trees since the last run need not have gone through the runtime's
        # helpers: no index cursor made before is trusted
        reshape()
        program = self.program
        if not program._initialised:
            program.ensure_initialised(ctx)
        budget_token = VALUE_BUDGET.set(ctx.budget)
        try:
            init_message = program.init_message
            if init_message is not None:
                init_message(ctx)
            return self.function(ctx)
        except UserException as exc:
            self.program.locate(exc)
            raise
        except EsqlRuntimeError as exc:
            self.program.locate(exc)
            raise
        except (self.program.value_error, DomainError) as exc:
            err = EsqlRuntimeError(str(exc))
            err.sqlstate = sqlstate_of(exc)
            self.program.locate(err, exc)
            raise err from exc
        except RecursionError as exc:
            err = EsqlRuntimeError("routine calls nested too deeply (runaway recursion)")
            self.program.locate(err, exc)
            raise err from exc
        finally:
            VALUE_BUDGET.reset(budget_token)


class Program:
    """A compiled ESQL project: its modules, generated source and shared (SHARED/EXTERNAL) state."""

    def __init__(
        self, generator: Generator, source: str, filenames: list[str], diagnostics: list[Diagnostic]
    ) -> None:
        self.python_source = source
        self.filenames = filenames
        self.diagnostics = diagnostics
        self.positions = generator.out.positions
        self.modules = {name: (m.kind, m) for name, m in generator.modules.items()}
        self._init_lock = threading.Lock()
        self._initialised = False
        values = rt.values_module()
        self.value_error = values.EsqlValueError
        self.namespace = build_globals(generator, values)
        self.code_name = f"<esql:{','.join(filenames)}>"
        code = getattr(generator, "code", None) or compile(source, self.code_name, "exec")
        exec(code, self.namespace)
        #: makes the module-level variables of one message, when the modules declare any
        self.init_message: Callable[[ExecutionContext], None] | None = (
            self.namespace["_init_message"] if generator.message_vars else None
        )
        # EVAL compiles its text with this program's names and runs it in this namespace.
        self.generator = generator
        self.namespace["_eval"] = self.evaluate
        self._evals: OrderedDict[tuple[str, int, bool], tuple[Callable[..., Any], list[Any], str]] = (
            OrderedDict()
        )
        self._eval_lock = threading.Lock()

    def evaluate(
        self, ctx: ExecutionContext, text: Any, site: Any, values: dict[str, Any], statement: bool
    ) -> Any:
        """EVAL: run ESQL text at ``site``, compiled by this compiler (never Python's eval), cached by text.

        Statements return the caller's variables as they left them; an expression, its value.
        An error in the text is an ESQL error that says where in the text it happened.
        """
        if text is None:
            return None if not statement else values
        if not isinstance(text, str):
            raise EsqlRuntimeError(f"EVAL needs CHARACTER text, not {rt.values_module().type_name(text)}")
        key = (text, id(site), statement)
        with self._eval_lock:
            entry = self._evals.get(key)
            if entry is not None:
                self._evals.move_to_end(key)
        if entry is None:
            entry = self._compile_eval(text, site, statement)
            with self._eval_lock:
                self._evals[key] = entry
                while len(self._evals) > _CACHE_SIZE:
                    self._evals.popitem(last=False)
        function, positions, code_name = entry
        try:
            return function(ctx, values)
        except (UserException, rt.StopRequested, rt.LeaveSignal, rt.IterateSignal):
            raise
        except (EsqlRuntimeError, self.value_error, DomainError) as exc:
            where = _frame_position(exc, code_name, positions)
            message = getattr(exc, "message", None) or str(exc)
            err = EsqlRuntimeError(f"EVAL text, {where}: {message}" if where else f"EVAL text: {message}")
            err.sqlstate = sqlstate_of(exc)
            raise err from exc

    def _compile_eval(
        self, text: str, site: Any, statement: bool
    ) -> tuple[Callable[..., Any], list[Any], str]:
        from esql.codegen import generate_eval

        result = parse(text, "EVAL", start="start" if statement else "eval_expr")
        diagnostics = list(result.diagnostics)
        generator = None
        with self._eval_lock:
            self._eval_count = getattr(self, "_eval_count", 0) + 1
            name = f"_evalfn{self._eval_count}"
        if result.tree is not None:
            generator = generate_eval(self.generator, result.tree, site, statement, name)
            diagnostics += [d for d in generator.diagnostics if d.severity == "error"]
        if diagnostics or generator is None:
            first = diagnostics[0]
            raise EsqlRuntimeError(f"EVAL text, line {first.line}, column {first.column}: {first.message}")
        source = "\n".join(generator.out.lines) + "\n"
        code_name = f"<esql-eval:{name}>"
        code = compile(source, code_name, "exec")
        with self._eval_lock:
            for fn in generator.used_functions:
                self.namespace.setdefault(f"_fn_{fn}", wrap_function(generator.functions_env[fn].impl))
            self.namespace.update(generator.constants)
            exec(code, self.namespace)
            function = self.namespace.pop(name)
        return function, generator.out.positions, code_name

    def ensure_initialised(self, ctx: ExecutionContext) -> None:
        if self._initialised:
            return
        with self._init_lock:
            if not self._initialised:
                self.namespace["_init"](ctx)
                self._initialised = True

    def main_module(self, name: str | None = None, kind: str = "COMPUTE") -> CompiledRoutine:
        """The entry point of module ``name`` (or the only module / the bare statements)."""
        if name is None:
            if "" in self.modules:
                return CompiledRoutine(self, self.namespace["f__bare_main"], "", kind)
            candidates = [n for n, (k, _m) in self.modules.items() if k == kind.upper()]
            if len(candidates) != 1:
                raise ModuleNotFound(
                    f"the program has {len(candidates)} {kind.upper()} modules; name the one to run"
                )
            name = candidates[0]
        if name not in self.modules:
            # a node may name its module with the broker schema: schema.Module
            qualified = [
                k for k, (_kind, m) in self.modules.items() if m.schema and f"{m.schema}.{m.name}" == name
            ]
            name = qualified[0] if qualified else name
        if name not in self.modules:
            raise ModuleNotFound(
                f"no module named '{name}' (modules: {', '.join(sorted(self.modules)) or 'none'})"
            )
        _kind, module = self.modules[name]
        main = module.routines.get("Main")
        if main is None:
            raise ModuleNotFound(f"module '{name}' has no Main function")
        return CompiledRoutine(self, self.namespace[main.py], name, kind)

    def locate(self, err: EsqlRuntimeError, cause: BaseException | None = None) -> None:
        """Fill in the ESQL line and column of the generated line that raised ``err``."""
        if err.line is not None:
            return
        tb = (cause or err).__traceback__
        found = None
        while tb is not None:
            if tb.tb_frame.f_code.co_filename == self.code_name:
                found = tb.tb_lineno
            tb = tb.tb_next
        if found is not None and 0 < found <= len(self.positions):
            _file, line, col = self.positions[found - 1]
            err.line, err.column = line, col
            err.filename = _file  # type: ignore[attr-defined]


def _frame_position(exc: BaseException, code_name: str, positions: list[Any]) -> str:
    """'line L, column C' of the innermost frame of ``code_name`` that ``exc`` passed through."""
    tb = exc.__traceback__
    found = None
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == code_name:
            found = tb.tb_lineno
        tb = tb.tb_next
    if found is None or not 0 < found <= len(positions):
        return ""
    _file, line, col = positions[found - 1]
    return f"line {line}, column {col}"


_CACHE: OrderedDict[str, Program] = OrderedDict()
_CACHE_LOCK = threading.Lock()
_CACHE_SIZE = 128


def compile_program(
    source: str | dict[str, str], filename: str = "main.esql", strict: bool = True, use_cache: bool = True
) -> Program:
    """Compile one file (or a {filename: source} project); raises EsqlCompileError with diagnostics."""
    sources = {filename: source} if isinstance(source, str) else dict(source)
    if not use_cache:
        return _compile(sources, strict)
    key = hashlib.sha256(repr((sorted(sources.items()), strict)).encode("utf-8")).hexdigest()
    with _CACHE_LOCK:
        cached = _CACHE.get(key)
        if cached is not None:
            _CACHE.move_to_end(key)
            return cached
    program = _compile(sources, strict)
    with _CACHE_LOCK:
        _CACHE[key] = program
        while len(_CACHE) > _CACHE_SIZE:
            _CACHE.popitem(last=False)
    return program


def check_sources(sources: dict[str, str], strict: bool = True) -> tuple[list[Diagnostic], Generator | None]:
    """All diagnostics of a project (syntax first; checks only when every file parsed)."""
    diagnostics: list[Diagnostic] = []
    units = []
    for name, text in sources.items():
        result = parse(text, name)
        diagnostics.extend(result.diagnostics)
        if result.tree is not None:
            assert isinstance(result.tree, ast.Program)
            units.append(Unit(name, result.tree))
    if diagnostics:
        return diagnostics, None
    generator = Generator(units, strict=strict)
    generator.functions_env = rt.functions_environment()
    generator.generate()
    seen = set()
    for d in generator.diagnostics:
        if (d.filename, d.line, d.column, d.message) not in seen:
            seen.add((d.filename, d.line, d.column, d.message))
            diagnostics.append(d)
    if not any(d.severity == "error" for d in diagnostics):
        code, problem = _python_code(generator, list(sources))
        generator.code = code  # type: ignore[attr-defined]
        if problem is not None:
            diagnostics.append(problem)
    diagnostics.sort(key=lambda d: (d.filename, d.line, d.column))
    return diagnostics, generator


def _compile(sources: dict[str, str], strict: bool) -> Program:
    diagnostics, generator = check_sources(sources, strict)
    errors = [d for d in diagnostics if d.severity == "error"]
    if errors or generator is None:
        raise EsqlCompileError(errors or diagnostics)
    source = "\n".join(generator.out.lines) + "\n"
    return Program(generator, source, list(sources), diagnostics)


def _python_code(generator: Generator, filenames: list[str]) -> tuple[Any, Diagnostic | None]:
    """The generated module compiled, or the diagnostic for where Python's limits were exceeded.

    The checks keep expressions and blocks within Python's limits; what still exceeds them (say,
    many CONTINUE handlers around deeply nested blocks) is reported where it is, not as a crash.
    """
    source = "\n".join(generator.out.lines) + "\n"
    try:
        return compile(source, f"<esql:{','.join(filenames)}>", "exec"), None
    except (SyntaxError, RecursionError, MemoryError) as exc:
        line = getattr(exc, "lineno", None) or 0
        positions = generator.out.positions
        filename, ln, col = positions[line - 1] if 0 < line <= len(positions) else (filenames[0], 0, 0)
        return None, Diagnostic(filename, ln, col, "statement too deeply nested to compile", "error")


def make_context(**kwargs: Any) -> ExecutionContext:
    """An ExecutionContext that also collects propagated messages when no callback is given."""
    return ExecutionContext(**kwargs)
