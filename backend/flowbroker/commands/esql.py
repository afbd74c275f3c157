"""`flowbroker esql check|run`: compile ESQL files and report diagnostics, or run a Compute module on a message."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from flowbroker.commands import CommandError


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Add ``esql check`` and ``esql run``."""
    parser = sub.add_parser("esql", help="check and run ESQL programs")
    esql_sub = parser.add_subparsers(dest="esql_command", metavar="ACTION")
    esql_sub.required = True

    check = esql_sub.add_parser(
        "check",
        help="compile ESQL files (one project) and print FILE:LINE:COL diagnostics",
        description="The files form one project: routines, schemas and PATH resolve across them.",
    )
    check.add_argument("files", nargs="+", metavar="FILE")
    check.add_argument(
        "--strict", action="store_true", help="a call to a routine defined in none of the files is an error"
    )
    check.set_defaults(func=_check)

    run = esql_sub.add_parser("run", help="run a Compute module on a message and print the output message")
    run.add_argument("file", metavar="FILE")
    run.add_argument("--input", required=True, metavar="MSG", help="the input message body (a file)")
    run.add_argument("--domain", required=True, choices=("XMLNSC", "XML", "XMLNS", "JSON", "BLOB"))
    run.add_argument("--module", default=None, help="the module to run (default: the only Compute module)")
    run.add_argument(
        "--external", action="append", default=[], metavar="NAME=VALUE", help="override an EXTERNAL variable"
    )
    run.set_defaults(func=_run)


def _read(path: str) -> str:
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise CommandError(f"cannot read {path}: {exc.strerror}") from None
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise CommandError(f"{path}: not UTF-8 text (byte offset {exc.start})") from None


def _check(args: argparse.Namespace) -> int:
    from esql.compiler import check_sources

    sources = {path: _read(path) for path in args.files}
    diagnostics, _generator = check_sources(sources, strict=args.strict)
    for d in diagnostics:
        print(d)
    return 1 if any(d.severity == "error" for d in diagnostics) else 0


def _run(args: argparse.Namespace) -> int:
    from esql import xmlio
    from esql.compiler import EsqlCompileError, compile_program
    from esql.runtime import EsqlRuntimeError, ExecutionContext

    source = _read(args.file)
    try:
        # The real domain parsers, so CREATE … PARSE and ASBITSTREAM work as in a flow.
        from flowbroker.formats import load_all

        load_all()
    except ImportError:
        pass
    try:
        data = Path(args.input).read_bytes()
    except OSError as exc:
        raise CommandError(f"cannot read {args.input}: {exc.strerror}") from None
    try:
        program = compile_program(source, args.file)
    except EsqlCompileError as exc:
        for d in exc.diagnostics:
            print(d, file=sys.stderr)
        return 1
    try:
        root = xmlio.read_message(data, args.domain)
    except xmlio.DocumentError as exc:
        raise CommandError(f"{args.input}: {exc}") from None
    externals: dict[str, object] = {}
    for item in args.external:
        name, sep, value = item.partition("=")
        if not sep or not name:
            raise CommandError(f"--external needs NAME=VALUE, got {item!r}")
        externals[name] = value
    ctx = ExecutionContext(
        input_root=root, externals=externals, log=lambda text: print(text, file=sys.stderr)
    )
    try:
        routine = program.main_module(args.module)
        result = routine.run(ctx)
    except EsqlRuntimeError as exc:
        where = f"{args.file}:{exc.line}:{exc.column}: " if exc.line is not None else f"{args.file}: "
        print(f"{where}runtime error: {exc.message}", file=sys.stderr)
        return 1
    try:
        for terminal, _is_label, out_root, _env, _exc in ctx.propagations:
            print(f"-- propagated to {terminal}", file=sys.stderr)
            _emit(xmlio.write_message(out_root))
        if result is True:
            _emit(xmlio.write_message(ctx.output_root))
        else:
            print(
                f"-- Main returned {'FALSE' if result is False else 'UNKNOWN'}: nothing propagated to out",
                file=sys.stderr,
            )
    except xmlio.DocumentError as exc:
        raise CommandError(f"cannot write the output message: {exc}") from None
    return 0


def _emit(data: bytes) -> None:
    sys.stdout.buffer.write(data)
    if not data.endswith(b"\n"):
        sys.stdout.buffer.write(b"\n")
    sys.stdout.flush()
