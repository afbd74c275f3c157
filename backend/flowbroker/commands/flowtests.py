"""`flowbroker test FLOW_OR_DIR…`: run flows' tests on an engine the command starts itself."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

from flowbroker.commands import CommandError


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Add this area's subcommands to the `flowbroker` parser."""
    test = sub.add_parser(
        "test",
        help="run flow tests (NAME.tests.json beside NAME.json, or the document's tests) on a private engine",
    )
    test.add_argument(
        "paths", nargs="+", metavar="FLOW_OR_DIR", help="flow documents, or directories of them"
    )
    test.add_argument("--junit", metavar="FILE", help="also write the results as JUnit XML to FILE")
    test.add_argument(
        "--case", action="append", default=[], metavar="NAME", help="run only this case (repeatable)"
    )
    test.add_argument(
        "--scratch", metavar="DIR", help="keep the engine's data directory here (default: a temporary one)"
    )
    test.set_defaults(func=cmd_test)


def _flow_files(paths: list[str]) -> list[Path]:
    found: list[Path] = []
    for name in paths:
        path = Path(name)
        if path.is_dir():
            found += sorted(p for p in path.glob("*.json") if not p.name.endswith(".tests.json"))
        elif path.is_file():
            # a test file stands for the flow document beside it
            flow = path.with_name(path.name.removesuffix(".tests.json") + ".json")
            found.append(flow if path.name.endswith(".tests.json") else path)
        else:
            raise CommandError(f"{name}: no such file or directory")
    return found


def collect(paths: list[str]) -> list[tuple[Path, dict[str, Any], list[Any]]]:
    """Each flow document with its test suites; a malformed document or test file stops here."""
    from flowbroker.commands.flows import load_document
    from flowbroker.flowtests import cases

    flows = []
    for flow_file in _flow_files(paths):
        document = load_document(str(flow_file))
        suites = []
        try:
            if document.get("tests") is not None:
                suites.append(cases.parse(document["tests"], document, f"{flow_file}#/tests"))
            tests_file = cases.tests_file(flow_file)
            if tests_file.exists():
                suites.append(cases.load_file(tests_file, document))
        except cases.CaseError as exc:
            raise CommandError(str(exc)) from None
        flows.append((flow_file, document, suites))
    return flows


def cmd_test(args: argparse.Namespace) -> int:
    from dataclasses import replace

    from flowbroker.flowtests import junit
    from flowbroker.flowtests.engine import TestEngine

    flows = collect(args.paths)
    wanted = set(args.case)
    if wanted:
        flows = [
            (f, d, [replace(s, cases=tuple(c for c in s.cases if c.name in wanted)) for s in suites])
            for f, d, suites in flows
        ]
        present = {c.name for _, _, suites in flows for s in suites for c in s.cases}
        missing = sorted(wanted - present)
        if missing:
            raise CommandError(f"no case named {', '.join(repr(m) for m in missing)}")
    runnable = [(f, d, s) for f, d, s in flows if any(suite.cases for suite in s)]
    for flow_file, _, _ in flows:
        if not any((f == flow_file) for f, _, _ in runnable) and not wanted:
            print(f"{flow_file}: no tests")
    if not runnable:
        raise CommandError("no test cases found")
    results = []
    started = time.monotonic()
    try:
        with TestEngine(scratch=Path(args.scratch) if args.scratch else None) as engine:
            for flow_file, document, suites in runnable:
                for suite in suites:
                    for result in engine.run_suite(document, suite):
                        results.append(result)
                        _print(flow_file, result)
    except RuntimeError as exc:  # the engine itself did not start
        raise CommandError(f"the test engine did not start: {exc}") from None
    failed = [r for r in results if not r.passed]
    print(
        f"{len(results) - len(failed)} passed, {len(failed)} failed, "
        f"{len(runnable)} flows in {time.monotonic() - started:.1f}s"
    )
    if args.junit:
        try:
            junit.write(Path(args.junit), results)
        except OSError as exc:
            raise CommandError(f"--junit {args.junit}: {exc.strerror or exc}") from None
    return 1 if failed else 0


def _print(flow_file: Path, result: Any) -> None:
    mark = "PASS" if result.passed else ("ERROR" if result.error else "FAIL")
    print(f"{mark} {flow_file}: {result.case} ({result.seconds:.2f}s)")
    for line in result.report_lines():
        print(f"    {line}")
    sys.stdout.flush()
