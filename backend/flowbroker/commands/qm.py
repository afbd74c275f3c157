"""`flowbroker qm`, `queue …`, `put`, `get`, `pub` and `sub`: the queue manager and its applications."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

from flowbroker.commands import CommandError


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Add this area's subcommands to the `flowbroker` parser."""
    p = sub.add_parser("qm", help="run the queue manager")
    p.add_argument("--data", default=None, help="data directory (default $FLOWBROKER_DATA or ./var)")
    p.add_argument("--port", type=int, default=1414)
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--parent-pid", type=int, default=None, help="exit when this process ends")
    p.add_argument("--no-fsync", action="store_true", help="do not force the log (tests and demos only)")
    p.add_argument(
        "--checkpoint-mb",
        type=float,
        default=64.0,
        help="take a checkpoint when the log grows past this size",
    )
    p.add_argument(
        "--expiry-interval",
        type=float,
        default=5.0,
        help="seconds between sweeps for expired messages (0: off)",
    )
    p.add_argument(
        "--max-connections",
        type=int,
        default=None,
        help="TCP connections served at once; more are refused (default $FLOWBROKER_QM_MAX_CONNECTIONS or 1000)",
    )
    p.add_argument(
        "--handshake-timeout",
        type=float,
        default=None,
        help="seconds a connection has to authenticate (default $FLOWBROKER_QM_HANDSHAKE_TIMEOUT or 10)",
    )
    p.add_argument(
        "--max-hello-frame",
        type=int,
        default=None,
        help="largest frame accepted before authentication, in bytes "
        "(default $FLOWBROKER_QM_MAX_HELLO_FRAME or 4096)",
    )
    p.add_argument(
        "--max-connection-buffer",
        type=int,
        default=None,
        help="bytes of unread replies that disconnect a client; also its largest frame "
        "(default $FLOWBROKER_QM_MAX_CONNECTION_BUFFER or 134217728)",
    )
    p.set_defaults(func=_qm)

    q = sub.add_parser("queue", help="define, delete, list, inspect, purge, browse or alter queues")
    qs = q.add_subparsers(dest="queue_command", metavar="ACTION")
    qs.required = True
    for action in ("define", "alter"):
        a = qs.add_parser(action, help=f"{action} a local queue")
        _conn_args(a)
        a.add_argument("name")
        a.add_argument("--set", action="append", default=[], metavar="ATTR=VALUE", help="queue attribute")
        if action == "define":
            a.add_argument("--replace", action="store_true")
        a.set_defaults(func=_queue_define if action == "define" else _queue_alter)
    d = qs.add_parser("delete", help="delete a local queue")
    _conn_args(d)
    d.add_argument("name")
    d.add_argument("--purge", action="store_true", help="delete even when messages remain")
    d.set_defaults(func=_queue_delete)
    ls = qs.add_parser("list", help="list queues with their depth")
    _conn_args(ls)
    ls.add_argument("pattern", nargs="?", default="*")
    ls.add_argument("--json", action="store_true")
    ls.set_defaults(func=_queue_list)
    dp = qs.add_parser("depth", help="print a queue's current depth")
    _conn_args(dp)
    dp.add_argument("name")
    dp.add_argument("--json", action="store_true", help="print every inquired attribute")
    dp.set_defaults(func=_queue_depth)
    pg = qs.add_parser("purge", help="remove every message of a queue")
    _conn_args(pg)
    pg.add_argument("name")
    pg.set_defaults(func=_queue_purge)
    br = qs.add_parser("browse", help="print messages without removing them")
    _conn_args(br)
    br.add_argument("name")
    br.add_argument("--limit", type=int, default=0)
    br.set_defaults(func=_queue_browse)

    put = sub.add_parser("put", help="put one message on a queue")
    _conn_args(put)
    put.add_argument("queue")
    src = put.add_mutually_exclusive_group()
    src.add_argument("--file", help="body from this file")
    src.add_argument("-", dest="stdin", action="store_true", help="body from standard input")
    put.add_argument("--persistent", action="store_true")
    put.add_argument("--correl-id")
    put.add_argument("--reply-to")
    put.add_argument("--priority", type=int)
    put.add_argument("--rfh2-domain", help="prefix an MQRFH2 header whose <mcd> names this domain")
    put.set_defaults(func=_put)

    get = sub.add_parser("get", help="get one message: body to stdout, descriptor to stderr")
    _conn_args(get)
    get.add_argument("queue")
    get.add_argument("--wait", type=float, default=0)
    get.add_argument("--browse", action="store_true")
    get.add_argument("--correl-id")
    get.set_defaults(func=_get)

    pub = sub.add_parser("pub", help="publish one message on a topic")
    _conn_args(pub)
    pub.add_argument("topic")
    src = pub.add_mutually_exclusive_group()
    src.add_argument("--file")
    src.add_argument("-", dest="stdin", action="store_true")
    pub.add_argument("--persistent", action="store_true")
    pub.add_argument("--retain", action="store_true")
    pub.set_defaults(func=_pub)

    s = sub.add_parser(
        "sub",
        help="subscribe a queue to a topic",
        description="On a queue manager directly, or with --broker through the API as the broker's "
        "durable subscription (on a RabbitMQ broker: a binding on the topic exchange, or a filtered "
        "subscription its execution groups apply).",
    )
    _conn_args(s)
    s.add_argument("topic", nargs="?", help="topic pattern: levels split on '/', '+' one level, '#' the rest")
    s.add_argument("--queue")
    s.add_argument("--name", help="the subscription's name (queue manager only)")
    s.add_argument("--filter", help="an ESQL boolean expression")
    s.add_argument("--correl-id", help="queue manager only")
    s.add_argument("--broker", help="the broker's subscription, through the API (its id is printed)")
    s.add_argument("--list", action="store_true", help="with --broker: list the broker's subscriptions")
    s.add_argument("--delete", type=int, metavar="ID", help="with --broker: delete this subscription")
    s.add_argument("--api", default=None, help="API URL (default FLOWBROKER_API or http://127.0.0.1:8080)")
    s.set_defaults(func=_sub)


def _broker_sub(args: argparse.Namespace) -> int:
    """A broker's durable subscriptions through the API: define, list or delete."""
    from flowbroker.commands.platform import api_request

    brokers = api_request("GET", "/api/brokers", api=args.api)
    found = next((b for b in brokers if b["name"] == args.broker), None)
    if found is None:
        raise CommandError(f"no broker named {args.broker!r}")
    base = f"/api/brokers/{found['id']}/subscriptions"
    if args.list:
        for row in api_request("GET", base, api=args.api):
            shown = f" filter {row['filter']!r}" if row["filter"] else ""
            print(f"{row['id']}\t{row['topic']}\t{row['queue']}\t{row['delivery']}{shown}")
        return 0
    if args.delete is not None:
        api_request("DELETE", f"{base}/{args.delete}", api=args.api)
        return 0
    if not args.topic or not args.queue:
        raise CommandError("give the topic and --queue")
    if args.name or args.correl_id:
        raise CommandError("--name and --correl-id are for a queue manager's subscription, not a broker's")
    body = {"topic": args.topic, "queue": args.queue, "filter": args.filter or ""}
    made = api_request("POST", base, api=args.api, json=body)
    print(f"{made['id']}\t{made['delivery']}")
    return 0


def _conn_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--qm", default=None, help="queue manager URL (default $FLOWBROKER_QM or the local one)")
    p.add_argument("--data", default=None, help="data directory holding qm.json")


def _data_dir(value: str | None) -> Path:
    return Path(value or os.environ.get("FLOWBROKER_DATA") or "./var")


def _limits(args: argparse.Namespace) -> Any:
    """The connection limits: each option, else its FLOWBROKER_QM_* variable, else the default."""
    from pydantic import ValidationError
    from pydantic_settings import SettingsError

    from flowbroker.qm.server import ConnectionLimits
    from flowbroker.settings import QueueManagerSettings

    given = {
        name: getattr(args, name)
        for name in ("max_connections", "handshake_timeout", "max_hello_frame", "max_connection_buffer")
        if getattr(args, name) is not None
    }
    try:
        settings = QueueManagerSettings(**given)
    except SettingsError as exc:
        raise CommandError(f"bad setting: {exc}") from None
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(str(p) for p in first.get("loc", ())) or "settings"
        option = f"--{field.replace('_', '-')}" if field in given else f"FLOWBROKER_QM_{field.upper()}"
        raise CommandError(f"bad setting {option}: {first.get('msg')}") from None
    return ConnectionLimits(
        max_connections=settings.max_connections,
        handshake_timeout=settings.handshake_timeout,
        max_hello_frame=settings.max_hello_frame,
        max_buffer=settings.max_connection_buffer,
    )


def _qm(args: argparse.Namespace) -> int:
    import logging

    from flowbroker.commands.platform import _settings
    from flowbroker.qm.server import run

    password = _settings(args).qm_password or None
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    if not 0 <= args.port <= 65535:
        raise CommandError(f"--port {args.port} is not a TCP port")
    data = _data_dir(args.data)
    try:
        data.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise CommandError(f"cannot create data directory {data}: {exc.strerror}") from None
    try:
        if args.checkpoint_mb <= 0:
            raise CommandError("--checkpoint-mb must be positive")
        if args.expiry_interval < 0:
            raise CommandError("--expiry-interval must not be negative")
        limits = _limits(args)
        run(
            data,
            args.host,
            args.port,
            parent_pid=args.parent_pid,
            fsync=not args.no_fsync,
            checkpoint_bytes=int(args.checkpoint_mb * 1024 * 1024),
            expiry_interval=args.expiry_interval,
            limits=limits,
            password=password,
        )
    except OSError as exc:
        raise CommandError(f"queue manager cannot start: {exc.strerror or exc}") from None
    return 0


class _Session:
    def __init__(self, args: argparse.Namespace) -> None:
        from flowbroker.qm.client import Client, QMError

        self.QMError = QMError
        try:
            data = args.data or (
                None if (args.qm or os.environ.get("FLOWBROKER_QM")) else str(_data_dir(None))
            )
            self.client = Client.connect(args.qm, data_dir=data)
        except QMError as exc:
            raise CommandError(f"{exc.reason_code} {exc.reason}") from None

    def __enter__(self) -> Any:
        return self.client

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        self.client.close()
        if exc is not None and isinstance(exc, self.QMError):
            raise CommandError(f"{exc.reason_code} {exc.reason}") from None


def _parse_attrs(items: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for item in items:
        key, sep, raw = item.partition("=")
        if not sep or not key:
            raise CommandError(f"--set {item!r}: expected ATTR=VALUE")
        value: Any = raw
        if raw.lower() in ("true", "yes", "on"):
            value = True
        elif raw.lower() in ("false", "no", "off"):
            value = False
        elif raw.lstrip("-").isdigit():
            value = int(raw)
        out[key.replace("-", "_")] = value
    return out


def _queue_define(args: argparse.Namespace) -> int:
    with _Session(args) as c:
        c.define_queue(args.name, replace=args.replace, **_parse_attrs(args.set))
    return 0


def _queue_alter(args: argparse.Namespace) -> int:
    with _Session(args) as c:
        c.alter_queue(args.name, **_parse_attrs(args.set))
    return 0


def _queue_delete(args: argparse.Namespace) -> int:
    with _Session(args) as c:
        c.delete_queue(args.name, purge=args.purge)
    return 0


def _queue_list(args: argparse.Namespace) -> int:
    with _Session(args) as c:
        queues = c.list_queues(args.pattern)
    if args.json:
        print(json.dumps(queues, indent=2))
    else:
        for q in queues:
            print(f"{q['name']:<48} {q['current_depth']:>10}")
    return 0


def _queue_depth(args: argparse.Namespace) -> int:
    with _Session(args) as c:
        info = c.inquire_queue(args.name)
    print(json.dumps(info, indent=2) if args.json else info["current_depth"])
    return 0


def _queue_purge(args: argparse.Namespace) -> int:
    with _Session(args) as c:
        print(c.purge(args.name))
    return 0


def _queue_browse(args: argparse.Namespace) -> int:
    with _Session(args) as c:
        for i, msg in enumerate(c.browse(args.name)):
            if args.limit and i >= args.limit:
                break
            print(json.dumps(_md_json(msg)))
    return 0


def _read_body(args: argparse.Namespace) -> bytes:
    if args.file:
        try:
            return Path(args.file).read_bytes()
        except OSError as exc:
            raise CommandError(f"cannot read {args.file}: {exc.strerror}") from None
    if args.stdin or not sys.stdin.isatty():
        return sys.stdin.buffer.read()
    raise CommandError("no message body: give --file F or - for standard input")


def _put(args: argparse.Namespace) -> int:
    from flowbroker.qm.protocol import FORMAT_RFH2, MessageDescriptor

    body = _read_body(args)
    md = MessageDescriptor(persistence=1 if args.persistent else 2)
    if args.correl_id:
        md.correl_id = args.correl_id.encode()
    if args.reply_to:
        md.reply_to_q = args.reply_to
    if args.priority is not None:
        if not 0 <= args.priority <= 9:
            raise CommandError(f"--priority {args.priority} outside 0..9")
        md.priority = args.priority
    if args.rfh2_domain:
        body = _rfh2(args.rfh2_domain) + body
        md.format = FORMAT_RFH2
    with _Session(args) as c:
        msg_id = c.put(args.queue, body, md)
    print(msg_id.hex())
    return 0


def _rfh2(domain: str) -> bytes:
    """An MQRFH2 version 2 header (IBM's layout) with one <mcd> folder naming the message domain.

    Integers are little-endian, matching the descriptor's default encoding 546 that the put
    carries; the folder is padded to a multiple of 4 bytes as the format requires.
    """
    import struct

    folder = f"<mcd><Msd>{domain}</Msd></mcd>".encode()
    folder += b" " * (-len(folder) % 4)
    length = 36 + 4 + len(folder)
    return (
        b"RFH "
        + struct.pack("<iiii", 2, length, 546, 1208)
        + b"MQSTR   "
        + struct.pack("<ii", 0, 1208)
        + struct.pack("<i", len(folder))
        + folder
    )


def _show_id(value: bytes) -> str | None:
    """An id as a person reads it: None when unset, its text when it is text, else hex."""
    trimmed = value.rstrip(b"\x00")
    if not trimmed:
        return None
    try:
        text = trimmed.decode("utf-8")
    except UnicodeDecodeError:
        return value.hex()
    return text if text.isprintable() else value.hex()


def _md_json(msg: Any) -> dict[str, Any]:
    md = msg.md
    return {
        "msg_id": md.msg_id.hex(),
        "correl_id": _show_id(md.correl_id),
        "persistence": md.persistence,
        "priority": md.priority,
        "expiry": md.expiry,
        "reply_to_q": md.reply_to_q,
        "format": md.format,
        "put_time": md.put_time,
        "backout_count": md.backout_count,
        "properties": msg.properties,
        "length": len(msg.body),
    }


def _get(args: argparse.Namespace) -> int:
    if args.wait < 0:
        raise CommandError("--wait must not be negative")
    with _Session(args) as c:
        if args.browse:
            msgs, cursor = c.browse_next(args.queue, 0, 1)
            msg = msgs[0] if msgs else None
        else:
            msg = c.get(
                args.queue, wait=args.wait, correl_id=args.correl_id.encode() if args.correl_id else None
            )
    if msg is None:
        raise CommandError(f"2033 no message available on {args.queue}")
    print(json.dumps(_md_json(msg)), file=sys.stderr)
    sys.stdout.buffer.write(msg.body)
    sys.stdout.flush()
    return 0


def _pub(args: argparse.Namespace) -> int:
    from flowbroker.qm.protocol import MessageDescriptor

    body = _read_body(args)
    with _Session(args) as c:
        n = c.publish(
            args.topic, body, MessageDescriptor(persistence=1 if args.persistent else 0), retain=args.retain
        )
    print(n)
    return 0


def _sub(args: argparse.Namespace) -> int:
    if args.broker:
        return _broker_sub(args)
    if args.list or args.delete is not None:
        raise CommandError("--list and --delete name a broker's subscriptions: give --broker")
    if not args.topic or not args.queue:
        raise CommandError("give the topic and --queue")
    with _Session(args) as c:
        info = c.subscribe(
            args.topic,
            args.queue,
            name=args.name,
            filter=args.filter,
            correl_id=args.correl_id.encode() if args.correl_id else None,
        )
    print(info["name"])
    return 0
