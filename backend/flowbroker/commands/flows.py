"""`flowbroker flow validate FILE` and `flowbroker deploy FILE --group G`: checking and deploying flow documents."""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

from flowbroker.commands import CommandError


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Add this area's subcommands to the `flowbroker` parser."""
    flow = sub.add_parser("flow", help="work with flow documents")
    flow_sub = flow.add_subparsers(dest="flow_command", metavar="ACTION")
    flow_sub.required = True
    validate = flow_sub.add_parser(
        "validate", help="check a flow document: node types, wiring, properties, ESQL (exit 1 on problems)"
    )
    validate.add_argument("file", help="flow document (JSON), or - for standard input")
    validate.set_defaults(func=cmd_validate)

    deploy = sub.add_parser("deploy", help="deploy a flow document to an execution group through the API")
    deploy.add_argument("file", help="flow document (JSON), or - for standard input")
    deploy.add_argument("--group", required=True, help="execution group name")
    deploy.add_argument("--broker", default="default", help="broker name (default: default)")
    deploy.add_argument(
        "--instances", type=int, default=None, help="additional instances (threads beyond the first)"
    )
    deploy.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="EXTERNAL variable value (repeatable); NODE.PROPERTY=VALUE overrides a node property",
    )
    deploy.add_argument(
        "--api", default=None, help="API URL (default FLOWBROKER_API or http://127.0.0.1:8080)"
    )
    deploy.add_argument("--no-wait", action="store_true", help="return once the deployment is accepted")
    deploy.add_argument("--timeout", type=float, default=60.0, help="seconds to wait for running or failed")
    deploy.set_defaults(func=cmd_deploy)


def load_document(name: str) -> dict[str, Any]:
    """The flow document in ``name`` (or stdin); a JSON error names line, column and byte offset."""
    try:
        text = sys.stdin.read() if name == "-" else Path(name).read_text(encoding="utf-8")
    except OSError as exc:
        raise CommandError(f"{name}: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise CommandError(f"{name}: not UTF-8 text (byte offset {exc.start})") from None
    try:
        document = json.loads(text)
    except json.JSONDecodeError as exc:
        raise CommandError(
            f"{name}:{exc.lineno}:{exc.colno}: invalid JSON (byte offset {exc.pos}): {exc.msg}"
        ) from None
    if not isinstance(document, dict):
        raise CommandError(f"{name}: a flow document is a JSON object")
    return document


def cmd_validate(args: argparse.Namespace) -> int:
    from flowbroker.services import deploy

    document = load_document(args.file)
    problems = deploy.check(document)
    for found in problems:
        print(f"{args.file}: {_place(found)}: error: {found['message']}")
    if problems:
        return 1
    print(f"{args.file}: flow {document.get('name')!r} is valid ({len(document.get('nodes') or [])} nodes)")
    return 0


def _place(found: dict[str, Any]) -> str:
    where = found.get("node") or found.get("pointer") or "flow"
    if found.get("property"):
        where += f".{found['property']}"
    if found.get("line"):
        where += f":{found['line']}:{found['column']}"
    return str(where)


def _overrides(pairs: list[str]) -> dict[str, Any]:
    overrides: dict[str, Any] = {}
    externals: dict[str, Any] = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not name:
            raise CommandError(f"--set {pair!r}: use NAME=VALUE")
        parsed: Any = value
        try:
            parsed = json.loads(value)
        except ValueError:
            pass
        if "." in name:
            overrides[name] = parsed
        else:
            externals[name] = parsed
    if externals:
        overrides["externals"] = externals
    return overrides


def cmd_deploy(args: argparse.Namespace) -> int:
    from flowbroker.commands.platform import api_request

    document = load_document(args.file)
    if args.instances is not None and not 0 <= args.instances <= 256:
        raise CommandError("--instances must be 0..256")
    body: dict[str, Any] = {
        "document": document,
        "broker": args.broker,
        "group": args.group,
        "overrides": _overrides(args.set),
    }
    if args.instances is not None:
        body["additionalInstances"] = args.instances
    try:
        created = api_request("POST", "/api/deployments", api=args.api, json=body)
    except CommandError as exc:
        if not isinstance(exc.detail, list) or not exc.detail:
            raise
        # a flow refused when saved: every problem on its node, property and ESQL line, as a compiler would
        for found in exc.detail:
            if isinstance(found, dict):
                print(f"{args.file}: {_place(found)}: error: {found.get('message', '')}", file=sys.stderr)
        return 1
    deployment = created
    if not args.no_wait:
        deadline = time.monotonic() + args.timeout
        while deployment["status"] in ("pending", "compiling") and time.monotonic() < deadline:
            time.sleep(0.2)
            deployment = api_request("GET", f"/api/deployments/{created['id']}", api=args.api)
    status = deployment["status"]
    print(
        f"deployment {deployment['id']}: {deployment['flow']} v{deployment['version']} -> {args.broker}/{args.group}: {status}"
    )
    for found in deployment.get("diagnostics") or []:
        print(f"{args.file}: {_place(found)}: error: {found['message']}", file=sys.stderr)
    if status == "failed":
        return 1
    if status in ("pending", "compiling"):
        raise CommandError(f"deployment {deployment['id']} is still {status} after {args.timeout:.0f}s")
    return 0
