"""`flowbroker esql check|run`: compile ESQL files and report diagnostics, or run a module on a message."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from flowbroker.commands import CommandError


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Add ``esql check`` and ``esql run``."""
    parser = sub.add_parser("esql", help="check and run ESQL programs")
    esql_sub = parser.add_subparsers(dest="esql_command", metavar="ACTION")
    esql_sub.required = True

    check = esql_sub.add_parser(
        "check",
        help="compile ESQL files (one project) and print FILE:LINE:COL diagnostics",
        description="The files form one project: routines, schemas and PATH resolve across them. "
        "A DIR stands for the .esql files under it, one project per project folder (a folder with the "
        "toolkit's .project file; a file in no project folder stands alone).",
    )
    check.add_argument("files", nargs="+", metavar="FILE|DIR")
    check.add_argument(
        "--strict", action="store_true", help="a call to a routine defined in none of the files is an error"
    )
    check.add_argument(
        "--report",
        action="store_true",
        help="check each project on its own and end with the share of files accepted; warnings "
        "(a routine, schema or table defined elsewhere) are not refusals",
    )
    check.set_defaults(func=_check)

    run = esql_sub.add_parser(
        "run",
        help="run a Compute or Filter module on a message and print the output message (or the filter's answer)",
        description="The files form one project, as for check. The input is parsed and the output written by "
        "the broker's own domain parsers; MRM needs --message-set, --type and --format.",
    )
    run.add_argument("files", nargs="+", metavar="FILE")
    run.add_argument("--input", required=True, metavar="MSG", help="the input message body (a file)")
    run.add_argument("--domain", required=True, choices=("XMLNSC", "XML", "XMLNS", "JSON", "BLOB", "MRM"))
    run.add_argument(
        "--message-set",
        action="append",
        default=[],
        metavar="FILE",
        help="a message set document (JSON) to parse the input or write an MRM output with (repeatable)",
    )
    run.add_argument("--type", default="", help="MRM: the message type of the input")
    run.add_argument(
        "--format", default="CWF", choices=("CWF", "XML"), help="MRM: the input's physical format"
    )
    run.add_argument(
        "--module", default=None, help="the module to run (default: the only Compute or Filter module)"
    )
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

    projects = _projects(args.files)
    if args.report:
        return _report(projects, strict=args.strict)
    sources = {path: _read(path) for files in projects.values() for path in files}
    diagnostics, _generator = check_sources(sources, strict=args.strict)
    for d in diagnostics:
        print(d)
    return 1 if any(d.severity == "error" for d in diagnostics) else 0


def _projects(paths: list[str]) -> dict[str, list[str]]:
    """Files given by name form one project; a directory's .esql files group by project folder."""
    projects: dict[str, list[str]] = {}
    for given in paths:
        root = Path(given)
        if not root.is_dir():
            projects.setdefault("", []).append(given)
            continue
        for path in sorted(root.rglob("*")):
            if path.suffix.lower() == ".esql" and path.is_file():
                projects.setdefault(str(_project_folder(root, path)), []).append(str(path))
    return projects


def _project_folder(root: Path, path: Path) -> Path:
    """The nearest folder holding a .project file (the toolkit writes one in each project); a file in
    no project folder is a project of its own."""
    for parent in path.parents:
        if (parent / ".project").is_file():
            return parent
        if parent == root:
            break
    return path


def _report(projects: dict[str, list[str]], strict: bool) -> int:
    """Check project by project; a file that does not parse is left out so the rest are still checked."""
    from esql.compiler import check_sources
    from esql.parser import parse

    total = accepted = 0
    warnings = 0
    for _folder, files in sorted(projects.items()):
        sources: dict[str, str] = {}
        refused: set[str] = set()
        for path in files:
            try:
                sources[path] = _read(path)
            except CommandError as exc:
                print(f"{path}:0:0: error: {exc}")
                refused.add(path)
        for path, text in list(sources.items()):
            result = parse(text, path)
            if result.diagnostics:
                for d in result.diagnostics:
                    print(d)
                refused.add(path)
                del sources[path]
        diagnostics = check_sources(sources, strict=strict)[0] if sources else []
        for d in diagnostics:
            if d.severity == "error":
                refused.add(d.filename)
                print(d)
            else:
                warnings += 1
        total += len(files)
        accepted += len(files) - len(refused)
    share = 100.0 * accepted / total if total else 100.0
    print(
        f"{accepted} of {total} files accepted ({share:.1f} %), {total - accepted} refused, {warnings} warnings"
    )
    return 0 if accepted == total else 1


def _run(args: argparse.Namespace) -> int:
    from esql.compiler import EsqlCompileError, compile_program
    from esql.runtime import EsqlRuntimeError, ExecutionContext

    from flowbroker.formats import load_all

    load_all()
    sources = {path: _read(path) for path in args.files}
    try:
        data = Path(args.input).read_bytes()
    except OSError as exc:
        raise CommandError(f"cannot read {args.input}: {exc.strerror}") from None
    set_names = [_install_message_set(path) for path in args.message_set]
    try:
        program = compile_program(sources, args.files[0])
    except EsqlCompileError as exc:
        for d in exc.diagnostics:
            print(d, file=sys.stderr)
        return 1
    routine = _routine(program, args.module)
    root = _input_root(args, data, set_names)
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
        result = routine.run(ctx)
    except EsqlRuntimeError as exc:
        where = getattr(exc, "filename", None) or args.files[0]
        place = f"{where}:{exc.line}:{exc.column}: " if exc.line is not None else f"{where}: "
        print(f"{place}runtime error: {exc.message}", file=sys.stderr)
        return 1
    if routine.kind == "FILTER":
        print("TRUE" if result is True else "FALSE" if result is False else "UNKNOWN")
        return 0
    for terminal, _is_label, out_root, _env, _exc in ctx.propagations:
        print(f"-- propagated to {terminal}", file=sys.stderr)
        _emit(_output_bytes(out_root))
    if result is True:
        _emit(_output_bytes(ctx.output_root))
    else:
        print(
            f"-- Main returned {'FALSE' if result is False else 'UNKNOWN'}: nothing propagated to out",
            file=sys.stderr,
        )
    return 0


def _routine(program: Any, module: str | None) -> Any:
    """The Main of ``module``, or of the only Compute or Filter module (bare statements run as Compute)."""
    from esql.compiler import ModuleNotFound

    kinds = dict(program.modules)
    if module is None and "" not in kinds:
        runnable = sorted(name for name, (kind, _m) in kinds.items() if kind in ("COMPUTE", "FILTER"))
        if len(runnable) != 1:
            found = ", ".join(runnable) or "none"
            raise CommandError(f"name the module to run with --module (Compute and Filter modules: {found})")
        module = runnable[0]
    kind = kinds.get(module or "", ("COMPUTE", None))[0]
    try:
        return program.main_module(module, kind="FILTER" if kind == "FILTER" else "COMPUTE")
    except ModuleNotFound as exc:
        raise CommandError(str(exc)) from None


def _install_message_set(path: str) -> str:
    """Register the message set document in ``path``; its name (the document's, else the file's stem)."""
    import json

    from flowbroker.formats.mrm import CATALOG
    from flowbroker.formats.mrm.model import MessageSetError

    text = _read(path)
    try:
        document = json.loads(text)
    except json.JSONDecodeError as exc:
        raise CommandError(
            f"{path}:{exc.lineno}:{exc.colno}: invalid JSON (byte offset {exc.pos}): {exc.msg}"
        ) from None
    name = str(document.get("name") or "") if isinstance(document, dict) else ""
    name = name or Path(path).stem
    try:
        CATALOG.install(name, document)
    except MessageSetError as exc:
        raise CommandError(f"{path}: {exc}") from None
    return name


def _input_root(args: argparse.Namespace, data: bytes, set_names: list[str]) -> Any:
    """Root for the input body, parsed now by the domain's parser so a bad byte is reported up front."""
    from esql.domains import DomainError

    from flowbroker.formats.assembly import Template, body_element, build_root
    from flowbroker.qm.protocol import MessageDescriptor

    template = Template(domain=args.domain)
    if args.domain == "MRM":
        if len(set_names) != 1 or not args.type:
            raise CommandError(
                "--domain MRM needs one --message-set FILE and --type T (and --format CWF|XML)"
            )
        template = Template(domain="MRM", set=set_names[0], type=args.type, format=args.format)
    # comments and processing instructions are kept, so the output shows them as they came
    options = {"retainComments": True, "retainPIs": True}
    root = build_root(MessageDescriptor(), data, template, transactional=False, options=options)
    try:
        body = body_element(root)
        if body is not None:
            _ = body.first_child
    except DomainError as exc:
        raise CommandError(f"{args.input}: {exc}") from None
    return root


def _output_bytes(root: Any) -> bytes:
    from esql.domains import DomainError

    from flowbroker.formats.assembly import to_message

    try:
        return to_message(root)[1]
    except DomainError as exc:
        raise CommandError(f"cannot write the output message: {exc}") from None


def _emit(data: bytes) -> None:
    sys.stdout.buffer.write(data)
    if not data.endswith(b"\n"):
        sys.stdout.buffer.write(b"\n")
    sys.stdout.flush()
