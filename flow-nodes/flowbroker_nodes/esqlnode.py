"""What the ESQL-running node types share: compiling their module at deploy time and running it."""

from __future__ import annotations

from typing import Any

from esql.tree import Element

from flowbroker_nodes.base import Assembly, DeployProblem, Node, NodeError, esql_log


class EsqlNode(Node):
    """A node whose behaviour is an ESQL module's Main(); compiled once per deployment."""

    KIND = "COMPUTE"
    routine: Any = None
    #: (flow thread, externals, log, CPU limit, memory limit, broker attributes, data source name,
    #: ExecutionContext, a context to renew) of the last thread
    _settings: tuple[Any, ...] | None = None

    def prepare(self) -> None:
        from esql.compiler import EsqlCompileError, compile_program

        source = self.properties.get("esql") or ""
        if not isinstance(source, str) or not source.strip():
            raise DeployProblem("required: the ESQL source", property="esql")
        try:
            program = compile_program(source, filename=f"{self.id}.esql")
            self.routine = program.main_module(self.properties.get("module") or None, kind=self.KIND)
        except EsqlCompileError as exc:
            found = [
                DeployProblem(d.message, property="esql", line=d.line, column=d.column)
                for d in getattr(exc, "diagnostics", [])
                if getattr(d, "severity", "error") == "error"
            ] or [DeployProblem(str(exc), property="esql")]
            first = found[0]
            first.more = found[1:]
            raise first from None
        except (LookupError, ValueError) as exc:
            raise DeployProblem(str(exc), property="module") from None

    def _thread_settings(self, flow: Any) -> tuple[Any, ...]:
        cached = self._settings
        if cached is None or cached[0] is not flow:
            from esql.runtime import ExecutionContext

            # what the flow thread gives every invocation of this node alike, asked for once per thread
            cpu_limit_ms, memory_limit_bytes = flow.esql_limits()
            cached = self._settings = (
                flow,
                flow.externals(self),
                esql_log(self),
                cpu_limit_ms,
                memory_limit_bytes,
                flow.broker_attributes(),
                self.properties.get("dataSource") or "",
                ExecutionContext,
                [],  # an ExecutionContext no invocation uses now, to renew (see reused_context)
            )
        return cached

    def context(self, assembly: Assembly, **outputs: Any) -> Any:
        """An ExecutionContext over ``assembly`` with this node's data source and EXTERNAL values."""
        flow = self.flow
        _, externals, log, cpu_limit_ms, memory_limit_bytes, broker, source_name, context_class, _ = (
            self._thread_settings(flow)
        )
        return context_class(
            input_root=assembly.root,
            input_local_environment=assembly.local_environment,
            input_exception_list=assembly.exception_list,
            environment=assembly.environment,
            data_source=flow.data_source(source_name) if source_name else None,
            externals=externals,
            stop=flow.stop,
            interrupt=flow.interrupt,
            log=log,
            node_name=self.name,
            cpu_limit_ms=cpu_limit_ms,
            memory_limit_bytes=memory_limit_bytes,
            broker=broker,
            **outputs,
        )

    def reused_context(self, assembly: Assembly, output_root: Element, propagate: Any) -> Any:
        """:meth:`context` with ``output_root`` and ``propagate``: the context an earlier invocation
        on this flow thread gave back with :meth:`context_done`, renewed, else a new one (a nested
        invocation of the node, on a PROPAGATE that comes back to it, gets a new one)."""
        flow = self.flow
        settings = self._settings
        if settings is None or settings[0] is not flow:
            settings = self._thread_settings(flow)
        try:
            ctx = settings[8].pop()  # atomic: two flow threads never take the same one
        except IndexError:
            return self.context(assembly, output_root=output_root, propagate=propagate)
        source_name = settings[6]
        ctx.renew(
            assembly.root,
            assembly.local_environment,
            assembly.exception_list,
            assembly.environment,
            output_root,
            propagate,
            flow.data_source(source_name) if source_name else None,
        )
        return ctx

    def context_done(self, ctx: Any) -> None:
        """The invocation that had ``ctx`` from :meth:`reused_context` is over: a later one may renew it."""
        settings = self._settings
        if settings is not None and ctx.stop is settings[0].stop and not settings[8]:
            settings[8].append(ctx)

    def run_routine(self, ctx: Any, *, invocation: bool = False) -> Any:
        """Run the node's routine; ``invocation``: as one node invocation of its own (CURRENT_…
        give one moment, SLEEP and INSTANCESTOPPING see ``ctx.stop``), else inside the caller's."""
        routine = self.routine
        if routine is None:
            raise NodeError(f"node {self.name} was not prepared")
        result = routine.run_invocation(ctx, ctx.stop) if invocation else routine.run(ctx)
        cached = self._settings
        source_name = cached[6] if cached is not None else self.properties.get("dataSource") or ""
        if source_name:
            self.flow.database_done(source_name, self.properties.get("transaction") == "commit")
        return result


def new_tree(name: str) -> Element:
    return Element(name)
