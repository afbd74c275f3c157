"""The prelude of generated code: the only names an ESQL program's Python can reach.

``build_globals`` binds every ``_``-prefixed helper the code generator emits calls to (the tree
and value operations, SQL, PROPAGATE, THROW, the built-in functions a program uses) into the
globals of the generated module, whose ``__builtins__`` is empty.
"""

from __future__ import annotations

import threading
import time
import types
from collections.abc import Callable
from typing import Any

from esql import runtime as rt
from esql.cast import cast, cast_decimal
from esql.codegen import Generator
from esql.domains import DomainError
from esql.runtime import EsqlRuntimeError, ExecutionContext, Reference, UserException
from esql.tree import NAME_VALUE, Element, renamed, reshape


def build_globals(generator: Generator, values: Any) -> dict[str, Any]:
    """The only names generated code can reach (``__builtins__`` is empty)."""
    from esql import database

    to_element_value = getattr(values, "to_element_value", lambda v: v)
    atomic = threading.RLock()

    def note_error(ctx: ExecutionContext, exc: BaseException) -> None:
        """Set SQLCODE, SQLSTATE, SQLNATIVEERROR and SQLERRORTEXT for the handler that caught ``exc``."""
        if isinstance(exc, UserException):
            # IBM: a user exception's four registers are its first four inserts, in order, as is.
            inserts = list(exc.inserts) + [None] * 4
            code, state, native, text = inserts[:4]
            ctx.sqlcode = _as_integer(code)
            ctx.sqlstate = "" if state is None else str(state)
            ctx.sqlnativeerror = _as_integer(native)
            ctx.sqlerrortext = "" if text is None else str(text)
            return
        ctx.sqlstate = sqlstate_of(exc)
        ctx.sqlerrortext = getattr(exc, "message", None) or str(exc)
        ctx.sqlcode = getattr(exc, "sqlcode", -1)
        ctx.sqlnativeerror = getattr(exc, "native", 0)

    def external(ctx: ExecutionContext, name: str, default: Any, type_name: str) -> Any:
        if name not in ctx.externals:
            return default
        value = ctx.externals[name]
        if isinstance(value, str) and type_name not in ("CHARACTER", "CHAR", ""):
            return cast(value, type_name)
        return value

    def propagate(
        ctx: ExecutionContext, terminal: Any, is_label: bool, env: Any, msg: Any, exc: Any, delete: bool
    ) -> None:
        if isinstance(terminal, int) and not isinstance(terminal, bool):
            if terminal not in rt.TERMINAL_NUMBERS:
                raise EsqlRuntimeError(f"PROPAGATE: there is no terminal number {terminal}")
            terminal = rt.TERMINAL_NUMBERS[terminal]
        if not isinstance(terminal, str):
            raise EsqlRuntimeError("PROPAGATE: the terminal or label must be CHARACTER or INTEGER")
        if not is_label and terminal not in rt.TERMINAL_NUMBERS.values():
            raise EsqlRuntimeError(
                f"PROPAGATE: unknown terminal '{terminal}' (out, out1…out4, failure, nowhere)"
            )
        root = msg if msg is not None else ctx.output_root
        lenv = env if env is not None else ctx.output_local_environment
        exlist = exc if exc is not None else ctx.output_exception_list
        ctx.propagated += 1
        if ctx.propagate is not None and terminal != "nowhere":
            # the nodes downstream run on this thread with budgets of their own
            started = time.thread_time()
            try:
                ctx.propagate(terminal, is_label, root, lenv, exlist)
            finally:
                ctx.budget.exclude(time.thread_time() - started)
                # the nodes downstream are not all ESQL: index cursors start again after them
                reshape()
        elif terminal != "nowhere":
            ctx.propagations.append((terminal, is_label, root.copy(), lenv.copy(), exlist.copy()))
        if delete:
            ctx.output_root = Element("Root")
            ctx.output_local_environment = Element("LocalEnvironment")
            ctx.output_exception_list = Element("ExceptionList")

    def throw(severity: Any, catalog: Any, number: Any, inserts: list[Any], user: bool) -> UserException:
        text = "User exception thrown by THROW statement"
        if inserts:
            text += ": " + ", ".join("NULL" if v is None else str(v) for v in inserts)
        return UserException(
            text, severity=severity, catalog=catalog, number=number, values=inserts, user=user
        )

    def log(ctx: ExecutionContext, kind: str, parts: list[tuple[str, Any]]) -> None:
        if ctx.log is not None:
            ctx.log(f"{kind}: " + "; ".join(f"{k}={v!r}" for k, v in parts))

    def ref_to(elem: Element | None, base: Any) -> Reference:
        if elem is not None:
            return Reference(elem)
        if base is None:
            raise EsqlRuntimeError("REFERENCE TO a field of a tree that does not exist")
        ref = Reference(base)
        ref.lastmove = False
        return ref

    def set_name(e: Element, name: Any) -> None:
        e.name = "" if name is None else str(name)
        renamed(e)  # it may start or stop matching an index step among its siblings

    def set_namespace(e: Element, ns: Any) -> None:
        e.namespace = "" if ns is None else str(ns)
        renamed(e)

    def set_type(e: Element, t: Any) -> None:
        if not isinstance(t, int) or isinstance(t, bool):
            raise EsqlRuntimeError("a field TYPE must be an INTEGER field-type constant")
        e.type = t

    def set_value(e: Element, v: Any) -> None:
        e.value = None if v is None else to_element_value(v)

    def set_domain(e: Element, domain: Any) -> None:
        if domain is not None:
            e.name = str(domain)
            e.type = rt.FOLDER
            renamed(e)

    def new_field(domain: Any) -> Element:
        if domain is not None:
            return Element(str(domain), type=rt.FOLDER)
        return Element("", type=NAME_VALUE)

    def create_from(e: Element, src: Element | None) -> None:
        if src is None:
            e.detach()
            return
        e.name, e.namespace = src.name, src.namespace
        renamed(e)
        rt.assign_tree(e, src)

    def create_repeat(e: Element, anchor: Element | None, value: Any) -> None:
        if anchor is None:
            raise EsqlRuntimeError("CREATE … REPEAT needs a sibling or parent to repeat")
        e.name, e.namespace, e.type = anchor.name, anchor.namespace, anchor.type
        renamed(e)
        e.value = (
            anchor.value if value is rt_missing else (None if value is None else to_element_value(value))
        )

    def parser_options(options: Any, set_: Any, type_: Any, format_: Any) -> dict[str, Any]:
        """What PARSE and ASBITSTREAM give a domain parser: OPTIONS and the SET, TYPE and FORMAT clauses."""
        found: dict[str, Any] = {"options": options or 0}
        for key, value in (("set", set_), ("type", type_), ("format", format_)):
            if value is not None:
                found[key] = str(value)
        return found

    def parse_into(
        e: Element,
        domain: Any,
        data: Any,
        ccsid: Any,
        encoding: Any,
        options: Any,
        set_: Any = None,
        type_: Any = None,
        format_: Any = None,
    ) -> None:
        from esql import domains

        name = str(domain) if domain is not None else e.name
        if data is None:
            return
        if isinstance(data, str):
            data = data.encode("utf-8")
        if not isinstance(data, bytes):
            raise EsqlRuntimeError("PARSE needs a BLOB or CHARACTER bit stream")
        try:
            parser = domains.get(name)
            parser.attach(
                e,
                data,
                ccsid=int(ccsid or 1208),
                encoding=int(encoding or 546),
                options=parser_options(options, set_, type_, format_),
            )
            if not e.name:
                e.name = name
                renamed(e)
            # Parse now so a malformed body fails at the CREATE statement, like the broker's immediate parse.
            e.first_child  # noqa: B018
        except domains.DomainError as exc:
            raise EsqlRuntimeError(f"PARSE: {exc}") from exc

    def asbitstream(
        e: Any, encoding: Any, ccsid: Any, set_: Any, type_: Any, format_: Any, options: Any
    ) -> Any:
        from esql import domains

        if e is None:
            return None
        if isinstance(e, Reference):
            e = e.element
        domain = e
        while domain.parent is not None and domain.parent.parent is not None:
            domain = domain.parent
        try:
            parser = domains.get(domain.name if domain.parent is not None else e.name)
            return parser.serialize(
                e,
                ccsid=int(ccsid or 1208),
                encoding=int(encoding or 546),
                options=parser_options(options, set_, type_, format_),
            )
        except domains.DomainError as exc:
            raise EsqlRuntimeError(f"ASBITSTREAM: {exc}") from exc

    type_of = values.type_name

    def as_type(v: Any, type_name: str) -> Any:
        """``v`` as a value of the declared type (IBM's implicit cast on assignment), or a cast error."""
        if v is None:
            return None
        actual = type_of(v)
        if actual == type_name:
            return v
        if isinstance(v, Reference):
            v = v.element
        if isinstance(v, Element):
            v = v.value
            if v is None or type_of(v) == type_name:
                return v
        return cast(v, type_name)

    def truth(v: Any) -> Any:
        if v is None or isinstance(v, bool):
            return v
        if isinstance(v, str):
            low = v.strip().upper()
            if low in ("TRUE", "1"):
                return True
            if low in ("FALSE", "0"):
                return False
        raise EsqlRuntimeError(f"a BOOLEAN condition was expected, found {values.type_name(v)} value")

    def first(v: Any) -> Any:
        if isinstance(v, list):
            return v[0] if v else None
        return v

    def as_list(v: Any) -> list[Any]:
        if v is None:
            return []
        if isinstance(v, list):
            return v
        if isinstance(v, Reference):
            return [v.element]
        return [v]

    def flat_all(elements: list[Element], name: Any, ns: Any, ftype: Any) -> list[Element]:
        out: list[Element] = []
        for e in elements:
            out.extend(rt.step_all(e, name, ns, ftype))
        return out

    def copy_or_value(v: Any) -> Any:
        if isinstance(v, Reference):
            v = v.element
        if isinstance(v, Element):
            return v.copy() if v.has_children() else v.value
        return v

    def aggregate(rows: list[tuple[int, Any]], funcs: list[str]) -> list[Any]:
        out: list[Any] = []
        for i, func in enumerate(funcs):
            vals = [v for (j, v) in rows if j == i]
            if func == "COUNT":
                out.append(sum(1 for v in vals if v is not None))
                continue
            present = [v for v in vals if v is not None]
            if not present:
                out.append(None)
                continue
            acc = present[0]
            for v in present[1:]:
                if func == "SUM":
                    acc = values.add(acc, v)
                elif func == "MAX" and values.gt(v, acc) is True:
                    acc = v
                elif func == "MIN" and values.lt(v, acc) is True:
                    acc = v
            out.append(acc)
        return out

    def zip_names(names: list[Any], vals: list[Any]) -> list[tuple[Any, Any]]:
        return list(zip(names, vals, strict=False))

    def case_subject(subject: Any, body: Callable[[Any], Any]) -> Any:
        return body(subject)

    def cast_many(vals: list[Any], type_name: str, **kw: Any) -> Any:
        upper = type_name.upper()
        if upper == "DATE" and len(vals) == 3:
            return cast(f"{vals[0]:04d}-{vals[1]:02d}-{vals[2]:02d}", "DATE", **kw)
        if upper in ("TIMESTAMP", "GMTTIMESTAMP") and len(vals) == 2:
            return cast(f"{vals[0]} {vals[1]}", upper, **kw)
        raise EsqlRuntimeError(f"CAST of {len(vals)} values to {upper} is not supported")

    def interval_of(v: Any, qualifier: str) -> Any:
        if hasattr(values, "qualify"):
            return values.qualify(v, qualifier)
        raise EsqlRuntimeError("interval qualifiers need the datetime semantics of esql.values")

    def is_number_kind(v: Any, what: str) -> Any:
        if v is None:
            return None
        if not isinstance(v, float):
            return what in ("NUM", "NUMBER")
        if what == "NAN":
            return v != v
        if what in ("INF", "INFINITY"):
            return v in (float("inf"), float("-inf"))
        if what == "+INF":
            return v == float("inf")
        if what == "-INF":
            return v == float("-inf")
        return v == v and v not in (float("inf"), float("-inf"))

    def nullif(a: Any, b: Any) -> Any:
        return None if values.eq(a, b) is True else a

    def deref_soft(v: Any) -> Any:
        if isinstance(v, Reference):
            return v.element
        return v

    def broker_property(ctx: ExecutionContext, name: str) -> Any:
        key = f"broker.{name}"
        if key in ctx.externals:
            return ctx.externals[key]
        if name == "NodeLabel":
            return ctx.node_name
        if name == "ProcessId":
            import os

            return os.getpid()
        if name == "ThreadId":
            return threading.get_ident()
        value = ctx.broker.get(name)
        if value is not None:
            return value
        # outside a deployed flow (``flowbroker esql run``, tests) there is no broker to name
        return {"BrokerName": "flowbroker", "Family": "PYTHON"}.get(name, "")

    def foreign_routine(name: str, language: str) -> Any:
        raise EsqlRuntimeError(
            f"routine {name} is LANGUAGE {language}: {language} routines cannot run in flowbroker"
        )

    def undefined(name: str) -> Any:
        raise EsqlRuntimeError(f"routine {name} is not defined")

    def list_cardinality(v: list[Any]) -> int:
        return len(v)

    def list_exists(v: list[Any]) -> bool:
        return len(v) > 0

    def list_singular(v: list[Any]) -> bool:
        return len(v) == 1

    def for_all(items: list[Any], pred: Callable[[Any], Any]) -> Any:
        result: Any = True
        for item in items:
            r = pred(item)
            if r is False:
                return False
            if r is None:
                result = None
        return result

    def for_any(items: list[Any], pred: Callable[[Any], Any]) -> Any:
        result: Any = False
        for item in items:
            r = pred(item)
            if r is True:
                return True
            if r is None:
                result = None
        return result

    rt_missing = getattr(values, "MISSING", object())
    g: dict[str, Any] = {
        "__builtins__": {},
        "__name__": "esql_program",
        "_child": rt.child,
        "_step": rt.step,
        "_step_all": rt.step_all,
        "_step_list": rt.step_list,
        "_flat_all": flat_all,
        "_count": rt.count,
        "_ensure": rt.ensure,
        "_ensure_child": rt.ensure_child,
        "_set_member": rt.set_member,
        "_assign_member": rt.assign_member,
        "_assign_member_tree": rt.assign_member_tree,
        "_value": rt.value_of,
        "_child_value": rt.child_value,
        "_values": rt.values_of,
        "_deref": rt.deref,
        "_deref_soft": deref_soft,
        "_assign_value": rt.assign_value,
        "_assign_tree": rt.assign_tree,
        "_adopt_tree": rt.adopt_tree,
        "_snapshot": rt.snapshot,
        "_snapshot_own": rt.snapshot_own,
        "_assign_member_own": rt.assign_member_own,
        "_peek_child": rt.peek_child,
        "_peek_step": rt.peek_step,
        "_same": _same,
        "_assign_list": rt.assign_list,
        "_delete": rt.delete,
        "_relative": rt.relative,
        "_place": rt.place,
        "_new_last_child": rt.new_last_child,
        "_move": rt.move,
        "_move_to": rt.move_to,
        "_attach": rt.attach,
        "_new_row": rt.new_row,
        "_MessageVariables": types.SimpleNamespace,
        "_row_of": rt.row_of,
        "_check_stop": rt.check_stop,
        "_Reference": Reference,
        "_ref_to": ref_to,
        "_EsqlRuntimeError": EsqlRuntimeError,
        "_LeaveSignal": rt.LeaveSignal,
        "_IterateSignal": rt.IterateSignal,
        "_CATCHABLE": (EsqlRuntimeError, values.EsqlValueError, DomainError),
        "_StopRequested": rt.StopRequested,
        "_ATOMIC": atomic,
        "_MISSING": rt_missing,
        "_to_element_value": to_element_value,
        "_add": values.add,
        "_sub": values.sub,
        "_mul": values.mul,
        "_div": values.div,
        "_neg": values.neg,
        "_concat": values.concat,
        "_eq": values.eq,
        "_ne": values.ne,
        "_lt": values.lt,
        "_le": values.le,
        "_gt": values.gt,
        "_ge": values.ge,
        "_and": values.and_,
        "_or": values.or_,
        "_not": values.not_,
        "_like": values.like,
        "_between": values.between,
        "_in": values.in_,
        "_cast": cast,
        "_cast_decimal": cast_decimal,
        "_cast_many": cast_many,
        "_truth": truth,
        "_as_type": as_type,
        "_first": first,
        "_as_list": as_list,
        "_copy_or_value": copy_or_value,
        "_aggregate": aggregate,
        "_zip_names": zip_names,
        "_case_subject": case_subject,
        "_interval_of": interval_of,
        "_is_number_kind": is_number_kind,
        "_nullif": nullif,
        "_list_cardinality": list_cardinality,
        "_list_exists": list_exists,
        "_list_singular": list_singular,
        "_for_all": for_all,
        "_for_any": for_any,
        "_sqlstate": sqlstate_of,
        "_note_error": note_error,
        "_external": external,
        "_broker_property": broker_property,
        "_undefined": undefined,
        "_foreign_routine": foreign_routine,
        "_propagate": propagate,
        "_throw": throw,
        "_log": log,
        "_set_name": set_name,
        "_set_namespace": set_namespace,
        "_set_type": set_type,
        "_set_value": set_value,
        "_set_domain": set_domain,
        "_new_field": new_field,
        "_create_from": create_from,
        "_create_repeat": create_repeat,
        "_parse_into": parse_into,
        "_asbitstream": asbitstream,
        "_db_insert": database.insert,
        "_db_update": database.update,
        "_db_delete": database.delete,
        "_db_select": database.select,
        "_passthru": database.passthru,
        "_db_call": database.call_procedure,
        "_db_end": database.end_transaction,
        "_sql": database.SqlBuilder,
    }
    for name in generator.used_functions:
        g[f"_fn_{name}"] = wrap_function(generator.functions_env[name].impl)
    g.update(generator.constants)
    return g


def _same(value: Any) -> Any:
    return value


def wrap_function(impl: Callable[..., Any]) -> Callable[..., Any]:
    return impl


def _as_integer(value: Any) -> Any:
    if value is None:
        return 0
    try:
        return int(value)
    except (TypeError, ValueError):
        return value


def sqlstate_of(exc: BaseException) -> str:
    if isinstance(exc, UserException):
        # IBM: a THROW's SQL state is its second insert, taken as is (no 'U' origin is added).
        inserts = exc.inserts
        return "" if len(inserts) < 2 or inserts[1] is None else str(inserts[1])
    state = getattr(exc, "sqlstate", None)
    if isinstance(state, str) and state and not isinstance(exc, UserException) and state != "U11":
        return state
    if isinstance(exc, EsqlRuntimeError):
        return "S22000" if exc.__cause__ is not None else "SE000"
    return "S22000"
