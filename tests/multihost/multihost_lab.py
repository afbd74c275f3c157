"""Hosts made of Linux network namespaces on this machine, and the servers a scale-out broker runs on them.

Each host is a network namespace with one address in a private /24 that exists nowhere else,
joined to the others by veth pairs on a bridge that lives in a namespace of its own. The root
namespace joins the same bridge as the operator's host, so the test process reaches the REST API,
the queue manager and the servers the way an operator's machine would. Every process started on a
host also gets its own UTS namespace, so it reports that host's name.

Everything made here carries one random suffix and is undone by :meth:`Lab.close`, which a test
calls from ``finally`` and its fixture's finalizer: processes (each in its own process group, and
then whatever else still runs in a host's namespace, such as RabbitMQ's epmd), namespaces, the
root namespace's veth end, and the temporary directory.
"""

from __future__ import annotations

import ctypes
import os
import pwd
import random
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

CLONE_NEWNET = 0x40000000
CLONE_NEWUTS = 0x04000000
_LIBC = ctypes.CDLL(None, use_errno=True)


def ip(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["ip", *args], check=check, capture_output=True, text=True, timeout=30)


def _enter(namespace: str, hostname: str, user: str | None) -> Callable[[], None]:
    """What a child runs between fork and exec: join the host's network, take its name, drop to ``user``."""
    path = f"/run/netns/{namespace}".encode()
    name = hostname.encode()
    account = pwd.getpwnam(user) if user else None

    def enter() -> None:
        fd = os.open(path, os.O_RDONLY)
        if _LIBC.setns(fd, CLONE_NEWNET) != 0:
            raise OSError(ctypes.get_errno(), "setns")
        os.close(fd)
        if _LIBC.unshare(CLONE_NEWUTS) != 0 or _LIBC.sethostname(name, len(name)) != 0:
            raise OSError(ctypes.get_errno(), "hostname")
        if account is not None:
            os.setgroups([])
            os.setgid(account.pw_gid)
            os.setuid(account.pw_uid)

    return enter


def wait_port(host: str, port: int, timeout: float, proc: subprocess.Popen[bytes] | None = None) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"exited with status {proc.returncode} before listening on {host}:{port}")
        try:
            with socket.create_connection((host, port), timeout=1):
                return
        except OSError:
            time.sleep(0.1)
    raise TimeoutError(f"nothing listens on {host}:{port} after {timeout}s")


class Host:
    """One namespace with one address; processes started here run inside it under the host's name."""

    def __init__(self, lab: Lab, role: str, address: str) -> None:
        self.lab = lab
        self.role = role
        self.namespace = f"fbmh-{lab.suffix}-{role}"
        self.hostname = f"{role}-{lab.suffix}"
        self.address = address
        self.procs: list[tuple[str, subprocess.Popen[bytes]]] = []
        self.dir = lab.dir / role
        self.dir.mkdir(mode=0o755)

    def spawn(
        self, name: str, argv: list[str], env: dict[str, str] | None = None, user: str | None = None
    ) -> subprocess.Popen[bytes]:
        log = self.lab.dir / "logs" / f"{self.role}-{name}.log"
        with open(log, "ab") as out:
            proc = subprocess.Popen(
                argv,
                env={**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})},
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                preexec_fn=_enter(self.namespace, self.hostname, user),
                cwd=self.dir,
            )
        self.procs.append((name, proc))
        return proc

    def flowbroker(self, name: str, *args: str, env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
        return self.spawn(name, [sys.executable, "-m", "flowbroker.cli", *args], env)

    def log(self, name: str, size: int = 4000) -> str:
        try:
            return (self.lab.dir / "logs" / f"{self.role}-{name}.log").read_text(errors="replace")[-size:]
        except FileNotFoundError:
            return ""

    def pids(self) -> list[int]:
        found = ip("netns", "pids", self.namespace, check=False).stdout.split()
        return [int(p) for p in found if p.isdigit()]

    def kill_all(self) -> None:
        """SIGKILL every process of this host: the host's crash, as its peers see it."""
        for _, proc in self.procs:
            _signal_group(proc, signal.SIGKILL)
        for pid in self.pids():
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        for _, proc in self.procs:
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                pass
        deadline = time.monotonic() + 10
        while self.pids() and time.monotonic() < deadline:
            time.sleep(0.05)


def _signal_group(proc: subprocess.Popen[bytes], sig: int) -> None:
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, sig)
        except (ProcessLookupError, PermissionError):
            pass


class Lab:
    """A bridge in its own namespace, host namespaces on it, and the root namespace as the operator's host."""

    def __init__(self) -> None:
        self.suffix = secrets.token_hex(3)
        self.dir = Path(tempfile.mkdtemp(prefix=f"fbmh-{self.suffix}-"))
        self.dir.chmod(0o755)  # PostgreSQL runs as its own user under it
        (self.dir / "logs").mkdir()
        self.subnet = _free_subnet()
        self.switch = f"fbmh-{self.suffix}-sw"
        self.root_link = f"fbmh{self.suffix}"
        self.operator = f"{self.subnet}.1"
        self.hosts: dict[str, Host] = {}
        self.namespaces: list[str] = []

    def open(self) -> Lab:
        self._namespace(self.switch)
        ip("-n", self.switch, "link", "add", "br0", "type", "bridge")
        ip("-n", self.switch, "link", "set", "br0", "up")
        # the operator's end stays in the root namespace
        ip("link", "add", self.root_link, "type", "veth", "peer", "name", f"o{self.suffix}")
        ip("link", "set", f"o{self.suffix}", "netns", self.switch)
        ip("-n", self.switch, "link", "set", f"o{self.suffix}", "master", "br0", "up")
        ip("addr", "add", f"{self.operator}/24", "dev", self.root_link)
        ip("link", "set", self.root_link, "up")
        return self

    def _namespace(self, name: str) -> None:
        ip("netns", "add", name)
        self.namespaces.append(name)
        ip("-n", name, "link", "set", "lo", "up")

    def host(self, role: str, number: int) -> Host:
        host = Host(self, role, f"{self.subnet}.{number}")
        self._namespace(host.namespace)
        near, far = f"h{self.suffix}{number}", f"s{self.suffix}{number}"
        ip("link", "add", near, "type", "veth", "peer", "name", far)
        ip("link", "set", far, "netns", self.switch)
        ip("-n", self.switch, "link", "set", far, "master", "br0", "up")
        ip("link", "set", near, "netns", host.namespace)
        ip("-n", host.namespace, "link", "set", near, "name", "eth0")
        ip("-n", host.namespace, "addr", "add", f"{host.address}/24", "dev", "eth0")
        ip("-n", host.namespace, "link", "set", "eth0", "up")
        self.hosts[role] = host
        return host

    def close(self) -> list[str]:
        """Undo everything; what could not be undone, as text (empty when all went)."""
        left: list[str] = []
        for host in self.hosts.values():
            for _, proc in host.procs:
                _signal_group(proc, signal.SIGTERM)
        deadline = time.monotonic() + 5
        for host in self.hosts.values():
            for _, proc in host.procs:
                try:
                    proc.wait(max(0.1, deadline - time.monotonic()))
                except subprocess.TimeoutExpired:
                    pass
        for host in self.hosts.values():
            host.kill_all()
            if host.pids():
                left.append(f"{host.namespace}: processes {host.pids()}")
        for name in reversed(self.namespaces):
            if ip("netns", "del", name, check=False).returncode != 0:
                left.append(f"namespace {name}")
        if ip("link", "show", self.root_link, check=False).returncode == 0:
            if ip("link", "del", self.root_link, check=False).returncode != 0:
                left.append(f"link {self.root_link}")
        shutil.rmtree(self.dir, ignore_errors=True)
        return left


def _free_subnet() -> str:
    """A 10.231.x prefix no interface of the root namespace uses."""
    used = ip("-4", "-o", "addr", "show").stdout + ip("-4", "route", "show").stdout
    choices = [n for n in range(2, 255) if f"10.231.{n}." not in used]
    return f"10.231.{random.choice(choices)}"


# -- the servers ------------------------------------------------------------------------------


def postgres_bin() -> Path | None:
    found = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"))
    return found[-1].parent if found else None


RABBITMQ_SERVER = Path("/usr/lib/rabbitmq/bin/rabbitmq-server")


class PostgreSQL:
    """A PostgreSQL cluster of its own, initialised in the host's directory, listening on its address."""

    def __init__(self, host: Host) -> None:
        self.host = host
        self.data = host.dir / "pgdata"
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"postgresql+psycopg://postgres@{self.host.address}:5432/postgres"

    def start(self) -> PostgreSQL:
        bin_dir = postgres_bin()
        assert bin_dir is not None
        sockets = self.host.dir / "pgsock"
        for path in (self.data, sockets):
            path.mkdir()
            shutil.chown(path, "postgres", "postgres")
        self.host.spawn(
            "initdb",
            [str(bin_dir / "initdb"), "-D", str(self.data), "-U", "postgres", "-A", "trust", "--no-sync"],
            user="postgres",
        ).wait(120)
        with open(self.data / "pg_hba.conf", "a") as hba:
            hba.write(f"host all all {self.host.lab.subnet}.0/24 trust\n")
        self.proc = self.host.spawn(
            "postgres",
            [
                str(bin_dir / "postgres"),
                "-D",
                str(self.data),
                "-c",
                f"listen_addresses={self.host.address}",
                "-c",
                "port=5432",
                "-c",
                f"unix_socket_directories={sockets}",
                "-c",
                "fsync=off",
                "-c",
                "max_connections=100",
            ],
            user="postgres",
        )
        return self

    def wait(self, timeout: float) -> None:
        wait_port(self.host.address, 5432, timeout, self.proc)


class RabbitMQ:
    """A RabbitMQ node of its own (node name, Mnesia, logs, cookie and epmd all private to its host)."""

    def __init__(self, host: Host) -> None:
        self.host = host
        self.base = host.dir / "rabbitmq"
        self.proc: subprocess.Popen[bytes] | None = None
        self.starts = 0

    @property
    def url(self) -> str:
        return f"amqp://guest:guest@{self.host.address}:5672//"

    def start(self) -> RabbitMQ:
        if not self.base.exists():
            for sub in ("mnesia", "log", "home"):
                (self.base / sub).mkdir(parents=True)
            (self.base / "rabbitmq.conf").write_text(
                f"loopback_users = none\nlisteners.tcp.1 = {self.host.address}:5672\n"
            )
            (self.base / "enabled_plugins").write_text("[].\n")
        env: dict[str, Any] = {
            "HOME": str(self.base / "home"),
            "RABBITMQ_NODENAME": "rabbit@localhost",
            "RABBITMQ_MNESIA_BASE": str(self.base / "mnesia"),
            "RABBITMQ_LOG_BASE": str(self.base / "log"),
            "RABBITMQ_CONFIG_FILE": str(self.base / "rabbitmq.conf"),
            "RABBITMQ_ENABLED_PLUGINS_FILE": str(self.base / "enabled_plugins"),
            "RABBITMQ_PID_FILE": str(self.base / "pid"),
        }
        self.starts += 1
        self.proc = self.host.spawn(f"rabbitmq-{self.starts}", [str(RABBITMQ_SERVER)], env)
        return self

    def wait(self, timeout: float) -> None:
        wait_port(self.host.address, 5672, timeout, self.proc)

    def stop(self, timeout: float = 30.0) -> None:
        """A clean stop of the node (its clients see their connections closed)."""
        assert self.proc is not None
        _signal_group(self.proc, signal.SIGTERM)
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            _signal_group(self.proc, signal.SIGKILL)
            self.proc.wait(10)
