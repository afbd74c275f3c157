"""`flowbroker up`, `flowbroker api`, `flowbroker login` and `flowbroker user`: starting and reaching the platform.

REST commands of other areas find the API and the saved token with :func:`api_url`,
:func:`api_token` and :func:`api_request`.
"""

from __future__ import annotations

import argparse
import functools
import getpass
import json
import os
import socket
import sys
import time
from pathlib import Path
from typing import Any

from flowbroker.commands import CommandError

DEFAULT_API = "http://127.0.0.1:8080"


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Add this area's subcommands to the `flowbroker` parser."""
    up = sub.add_parser(
        "up", help="start and supervise the embedded system (API, queue manager, execution group)"
    )
    _data_arg(up)
    up.add_argument("--port", type=int, default=None, help="API port (default 8080, FLOWBROKER_API_PORT)")
    up.add_argument("--qm-port", type=int, default=None, help="queue manager port (default 1414)")
    up.add_argument("--host", default=None, help="API listen address (default 127.0.0.1)")
    up.set_defaults(func=cmd_up)

    init = sub.add_parser(
        "init",
        help="migrate the config repository, create the first admin and the default broker, then exit",
    )
    _data_arg(init)
    init.set_defaults(func=cmd_init)

    api = sub.add_parser("api", help="run the configuration manager (REST API) alone")
    _data_arg(api)
    api.add_argument("--port", type=int, default=None, help="API port (default 8080)")
    api.add_argument("--host", default=None, help="listen address (default 127.0.0.1)")
    api.set_defaults(func=cmd_api)

    login = sub.add_parser("login", help="log in to the API and save the token for other commands")
    login.add_argument("--api", default=None, help=f"API URL (default FLOWBROKER_API or {DEFAULT_API})")
    login.add_argument("--username", "-u", default="admin")
    login.add_argument("--password-stdin", action="store_true", help="read the password from standard input")
    login.set_defaults(func=cmd_login)

    user = sub.add_parser("user", help="manage users directly in the config repository of --data")
    user_sub = user.add_subparsers(dest="user_command", metavar="ACTION")
    user_sub.required = True
    add = user_sub.add_parser("add", help="create a user")
    _data_arg(add)
    add.add_argument("username")
    add.add_argument("--role", required=True, choices=["viewer", "developer", "operator", "admin"])
    add.add_argument("--password-stdin", action="store_true")
    add.set_defaults(func=cmd_user_add)
    passwd = user_sub.add_parser("passwd", help="set a user's password (revokes their tokens)")
    _data_arg(passwd)
    passwd.add_argument("username")
    passwd.add_argument("--password-stdin", action="store_true")
    passwd.set_defaults(func=cmd_user_passwd)
    lst = user_sub.add_parser("list", help="list users")
    _data_arg(lst)
    lst.set_defaults(func=cmd_user_list)


def _data_arg(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--data", default=None, help="data directory (default FLOWBROKER_DATA or ./var)")


def _settings(args: argparse.Namespace, **overrides: Any) -> Any:
    from pydantic import ValidationError
    from pydantic_settings import SettingsError

    from flowbroker.settings import Settings

    values: dict[str, Any] = {k: v for k, v in overrides.items() if v is not None}
    if getattr(args, "data", None):
        values["data"] = Path(args.data)
    try:
        settings = Settings(**values)
    except SettingsError as exc:
        raise CommandError(f"bad setting: {exc}") from None
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(str(p) for p in first.get("loc", ())) or "settings"
        raise CommandError(f"bad setting {field}: {first.get('msg')}") from None
    settings.data = settings.data.resolve()
    return settings


# -- flowbroker up ---------------------------------------------------------------------------


def command_available(name: str) -> bool:
    """Whether `flowbroker NAME` is implemented (its module registers a subcommand)."""
    return name in _command_names()


@functools.cache
def _command_names() -> frozenset[str]:
    from flowbroker.cli import build_parser

    parser = build_parser()
    names: set[str] = set()
    for action in parser._subparsers._group_actions if parser._subparsers else []:
        names.update(getattr(action, "choices", None) or {})
    return frozenset(names)


def _free(host: str, port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError:
            return False
    return True


def _component_env(settings: Any) -> dict[str, str]:
    env = {
        "FLOWBROKER_DATA": str(settings.data),
        "FLOWBROKER_API_PORT": str(settings.api_port),
        "FLOWBROKER_QM_PORT": str(settings.qm_port),
        "FLOWBROKER_SUPERVISOR_STATE": str(settings.data / "supervisor.json"),
        "FLOWBROKER_LOCAL_BROKER": settings.local_broker,
        "PYTHONUNBUFFERED": "1",
    }
    if settings.database_url:
        env["FLOWBROKER_DATABASE_URL"] = settings.database_url
    return env


def embedded_components(settings: Any) -> list[Any]:
    """The fixed components of the embedded system: the configuration manager and the queue manager.

    The execution groups join once the repository is ready, one per group of the local broker
    (see :class:`GroupReconciler`).
    """
    from flowbroker.supervisor import Component

    data = str(settings.data)
    logs = settings.data / "logs"
    env = _component_env(settings)
    cli = [sys.executable, "-m", "flowbroker.cli"]
    table = [
        Component(
            "configuration-manager",
            [*cli, "api", "--data", data, "--port", str(settings.api_port), "--host", settings.api_host],
            env,
            logs / "configuration-manager.log",
        )
    ]
    if command_available("qm"):
        table.append(
            Component(
                "queue-manager",
                [*cli, "qm", "--data", data, "--port", str(settings.qm_port)],
                env,
                logs / "queue-manager.log",
            )
        )
    return table


def group_component(settings: Any, group: str, desired: str = "running") -> Any:
    """The component of one execution group of the local broker: `flowbroker worker` for it."""
    from flowbroker.services.groups import component_name
    from flowbroker.supervisor import Component

    broker = settings.local_broker
    env = _component_env(settings)
    return Component(
        component_name(broker, group),
        [sys.executable, "-m", "flowbroker.cli", "worker", "--broker", broker, "--group", group],
        env,
        settings.data / "logs" / f"execution-group-{broker}.{group}.log",
        desired=desired,
    )


class GroupReconciler:
    """Keeps one worker process per execution group of the local broker, as the repository says.

    Called by the supervisor every second: a group created through the API gets its process, a
    deleted one loses it, a stopped one is stopped and a started one started again.
    """

    def __init__(self, settings: Any) -> None:
        from flowbroker.repository import db

        self.settings = settings
        self.engine = db.engine_from_settings(settings)
        self.sessions = db.session_factory(self.engine)

    def __call__(self, supervisor: Any) -> None:
        from flowbroker.repository import db
        from flowbroker.services.groups import COMPONENT_PREFIX, supervised_groups

        with db.session_scope(self.sessions) as session:
            wanted = supervised_groups(session, self.settings.local_broker)
        supervisor.reconcile(
            COMPONENT_PREFIX,
            {
                component.name: component
                for component in (
                    group_component(self.settings, name, desired) for name, desired in wanted.items()
                )
            },
        )

    def removed(self, component: Any) -> None:
        """A deleted group's last statistics and liveness file go with it."""
        from flowbroker.services.groups import COMPONENT_PREFIX, liveness_path
        from flowbroker.worker.group import stats_path

        broker, _, group = component.name[len(COMPONENT_PREFIX) :].partition("/")
        for path in (
            stats_path(self.settings.data, broker, group),
            liveness_path(self.settings.data, broker, group),
        ):
            path.unlink(missing_ok=True)

    def close(self) -> None:
        self.engine.dispose()


def prepare_repository(settings: Any) -> str | None:
    """Migrate the repository, create the first admin and the default broker; the one-time password or None."""
    from flowbroker.repository import db
    from flowbroker.services import brokers, users

    engine = db.engine_from_settings(settings)
    try:
        db.upgrade(engine)
        with db.session_scope(db.session_factory(engine)) as session:
            created, shown = users.ensure_admin(session, settings.admin_password or None)
            brokers.ensure_default(session)
    finally:
        engine.dispose()
    if created and shown is None:
        return ""
    return shown


def group_http_ports(settings: Any) -> list[tuple[str, int | None]]:
    """Each execution group of the local broker with its own HTTP port (None: FLOWBROKER_HTTP_PORT)."""
    from sqlalchemy import select

    from flowbroker.repository import db
    from flowbroker.repository.models import Broker, ExecutionGroup

    engine = db.engine_from_settings(settings)
    try:
        with db.session_scope(db.session_factory(engine)) as session:
            rows = session.execute(
                select(ExecutionGroup.name, ExecutionGroup.http_port)
                .join(Broker, ExecutionGroup.broker_id == Broker.id)
                .where(Broker.name == settings.local_broker)
                .order_by(ExecutionGroup.name)
            )
            return [(name, port) for name, port in rows]
    finally:
        engine.dispose()


def print_http_ports(settings: Any) -> None:
    """Say where each execution group serves its HTTPInput nodes."""
    fallback = "any free port" if settings.http_port == 0 else f"port {settings.http_port}"
    print(
        f"HTTP flows: the execution groups serve HTTPInput nodes on {settings.http_host}, "
        "each group's port opened by its first flow that has one:",
        flush=True,
    )
    for name, port in group_http_ports(settings):
        where = f"port {port} (httpPort)" if port is not None else f"{fallback} (FLOWBROKER_HTTP_PORT)"
        print(f"  {settings.local_broker}/{name}: {where}", flush=True)


def _wait_answering(url: str, timeout: float, supervisor: Any, statuses: tuple[int, ...] = (200,)) -> bool:
    import http.client
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and not supervisor.stopping:
        supervisor.tick()
        connection = http.client.HTTPConnection(parts.hostname or "127.0.0.1", parts.port or 80, timeout=1.0)
        try:
            connection.request("GET", parts.path)
            if connection.getresponse().status in statuses:
                return True
        except OSError:
            pass
        finally:
            connection.close()
        time.sleep(0.05)
    return False


def cmd_up(args: argparse.Namespace) -> int:
    import fcntl

    from flowbroker.supervisor import Supervisor

    settings = _settings(args, api_port=args.port, qm_port=args.qm_port, api_host=args.host)
    settings.data.mkdir(parents=True, exist_ok=True)
    lock = open(settings.data / "up.lock", "w")  # held (locked) for the life of the process
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        raise CommandError(f"another flowbroker up is already running on {settings.data}") from None
    if not _free(settings.api_host, settings.api_port):
        raise CommandError(
            f"port {settings.api_port} on {settings.api_host} is in use; choose another with --port"
        )
    # The components start first and the configuration manager migrates the repository itself:
    # the admin and the default broker are ensured while it boots, not before.
    supervisor = Supervisor(embedded_components(settings), settings.data / "supervisor.json")
    supervisor.install_signal_handlers()
    supervisor.start()
    names = ", ".join(c.name for c in supervisor.components)
    host = "127.0.0.1" if settings.api_host in ("0.0.0.0", "") else settings.api_host
    url = f"http://{host}:{settings.api_port}"
    # The API answers 503 "starting" until the first user exists: create the admin as soon as
    # the API has migrated the repository, so that health "ok" means a login can succeed.
    answering = _wait_answering(url + "/api/health", 30.0, supervisor, (200, 503))
    try:
        password = prepare_repository(settings)
    except Exception as exc:
        supervisor.stop_all()
        raise CommandError(f"cannot open the config repository: {type(exc).__name__}: {exc}") from None
    healthy = answering and _wait_answering(url + "/api/health", 10.0, supervisor)
    if healthy:
        print(f"flowbroker is up at {url}/  (components: {names}; data: {settings.data})", flush=True)
        print_http_ports(settings)
    elif not supervisor.stopping:
        print(
            f"flowbroker: the API did not answer at {url}; see {settings.data / 'logs'}",
            file=sys.stderr,
            flush=True,
        )
    reconciler = GroupReconciler(settings) if command_available("worker") else None
    if reconciler is not None:
        supervisor.reconciler = reconciler
        supervisor.on_removed = reconciler.removed
    if password:
        print(f"first start: user 'admin' created with password {password}", flush=True)
        print(
            "  (shown once; change it with `flowbroker user passwd admin` or POST /api/auth/password)",
            flush=True,
        )
    elif password == "":
        print("first start: user 'admin' created with the password in FLOWBROKER_ADMIN_PASSWORD", flush=True)
    try:
        supervisor.run()
    finally:
        if reconciler is not None:
            reconciler.close()
    print("flowbroker: stopped", flush=True)
    return 0


def cmd_init(args: argparse.Namespace) -> int:
    """What `flowbroker up` does to the repository before its groups start, for deployments that
    run the configuration manager and the execution groups as separate services."""
    settings = _settings(args)
    settings.data.mkdir(parents=True, exist_ok=True)
    try:
        password = prepare_repository(settings)
    except Exception as exc:
        reason = (str(exc).splitlines() or [""])[0]
        raise CommandError(f"cannot open the config repository: {type(exc).__name__}: {reason}") from None
    if password:
        print(f"first start: user 'admin' created with password {password}", flush=True)
    elif password == "":
        print("first start: user 'admin' created with the password in FLOWBROKER_ADMIN_PASSWORD", flush=True)
    else:
        print("config repository ready", flush=True)
    return 0


def cmd_api(args: argparse.Namespace) -> int:
    import uvicorn

    from flowbroker.api.app import create_app

    settings = _settings(args, api_port=args.port, api_host=args.host)
    try:
        app = create_app(settings)
    except Exception as exc:
        raise CommandError(f"cannot open the config repository: {type(exc).__name__}: {exc}") from None
    uvicorn.run(app, host=settings.api_host, port=settings.api_port, log_level="warning", access_log=False)
    return 0


# -- reaching the API from other commands ----------------------------------------------------


def credentials_file() -> Path:
    base = os.environ.get("FLOWBROKER_CONFIG_DIR") or os.path.join(
        os.environ.get("XDG_CONFIG_HOME") or os.path.expanduser("~/.config"), "flowbroker"
    )
    return Path(base) / "credentials.json"


def api_url(explicit: str | None = None) -> str:
    """The API URL from ``--api``, FLOWBROKER_API, or the local default."""
    return (explicit or os.environ.get("FLOWBROKER_API") or DEFAULT_API).rstrip("/")


def api_token(api: str) -> str | None:
    """FLOWBROKER_TOKEN, or the token `flowbroker login` saved for ``api``."""
    if os.environ.get("FLOWBROKER_TOKEN"):
        return os.environ["FLOWBROKER_TOKEN"]
    try:
        saved = json.loads(credentials_file().read_text())
    except (OSError, ValueError):
        return None
    token = saved.get(api, {}).get("token") if isinstance(saved, dict) else None
    return token if isinstance(token, str) else None


def api_request(method: str, path: str, *, api: str | None = None, **kwargs: Any) -> Any:
    """Call the API with the saved token; a refusal becomes a one-line :class:`CommandError`."""
    import httpx

    base = api_url(api)
    headers = dict(kwargs.pop("headers", {}) or {})
    token = api_token(base)
    if token:
        headers["Authorization"] = f"Bearer {token}"
    try:
        response = httpx.request(method, base + path, headers=headers, timeout=30.0, **kwargs)
    except httpx.HTTPError as exc:
        raise CommandError(f"cannot reach the API at {base}: {exc}") from None
    if response.status_code >= 400:
        detail = None
        try:
            error = response.json()
            message = error.get("message") or response.text
            detail = error.get("detail")
        except (ValueError, AttributeError):
            message = response.text[:200]
        if response.status_code == 401:
            message += " (run `flowbroker login`)"
        raise CommandError(f"{method} {path}: {response.status_code}: {message}", detail=detail)
    return (
        response.json()
        if response.content and "json" in response.headers.get("content-type", "")
        else response
    )


def _read_password(from_stdin: bool, prompt: str = "password: ") -> str:
    if from_stdin:
        password = sys.stdin.readline().rstrip("\r\n")
    elif os.environ.get("FLOWBROKER_PASSWORD"):
        password = os.environ["FLOWBROKER_PASSWORD"]
    elif sys.stdin.isatty():
        password = getpass.getpass(prompt)
    else:
        raise CommandError("no password: use --password-stdin or FLOWBROKER_PASSWORD")
    if not password:
        raise CommandError("the password is empty")
    return password


def cmd_login(args: argparse.Namespace) -> int:
    import httpx

    base = api_url(args.api)
    password = _read_password(args.password_stdin)
    try:
        response = httpx.post(
            base + "/api/auth/login", json={"username": args.username, "password": password}, timeout=30.0
        )
    except httpx.HTTPError as exc:
        raise CommandError(f"cannot reach the API at {base}: {exc}") from None
    if response.status_code != 200:
        try:
            message = response.json().get("message", response.text)
        except ValueError:
            message = response.text[:200]
        raise CommandError(f"login refused: {message}")
    token = response.json()["accessToken"]
    path = credentials_file()
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        saved = json.loads(path.read_text())
        if not isinstance(saved, dict):
            saved = {}
    except (OSError, ValueError):
        saved = {}
    saved[base] = {"username": args.username, "token": token}
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as out:
        json.dump(saved, out, indent=2)
    print(f"logged in to {base} as {args.username} ({response.json()['role']})")
    return 0


# -- flowbroker user -------------------------------------------------------------------------


def _with_session(args: argparse.Namespace, work: Any) -> Any:
    from flowbroker.repository import db
    from flowbroker.services.errors import ServiceError

    settings = _settings(args)
    engine = db.engine_from_settings(settings)
    try:
        db.upgrade(engine)
        with db.session_scope(db.session_factory(engine)) as session:
            return work(session)
    except ServiceError as exc:
        raise CommandError(exc.message) from None
    finally:
        engine.dispose()


def cmd_user_add(args: argparse.Namespace) -> int:
    from flowbroker.services import users

    password = _read_password(args.password_stdin)
    _with_session(args, lambda s: users.create(s, "cli", args.username, password, args.role))
    print(f"user {args.username!r} created ({args.role})")
    return 0


def cmd_user_passwd(args: argparse.Namespace) -> int:
    from flowbroker.services import users
    from flowbroker.services.errors import NotFound

    password = _read_password(args.password_stdin, "new password: ")

    def work(session: Any) -> None:
        user = users.by_name(session, args.username)
        if user is None:
            raise NotFound(f"no user named {args.username!r}")
        users.update(session, "cli", user.id, {"password": password})

    _with_session(args, work)
    print(f"password of {args.username!r} changed; their tokens are revoked")
    return 0


def cmd_user_list(args: argparse.Namespace) -> int:
    from flowbroker.services import users

    rows = _with_session(args, lambda s: [(u.username, u.role, u.active) for u in users.list_users(s)])
    for username, role, active in rows:
        print(f"{username}\t{role}\t{'active' if active else 'disabled'}")
    return 0
