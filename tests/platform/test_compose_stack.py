"""The compose stack's flowbroker services run as docker-compose.yml wires them.

No container engine runs here, so the queue manager, the configuration manager and two worker
replicas run as local processes with the commands, environment and health checks
`docker-compose config` resolves; only what a container would provide is translated: the service
hostnames become this machine's PostgreSQL and RabbitMQ, the volumes become directories (one
shared by `qm` and `api` as the `flowbroker-data` volume is, one per worker), the fixed ports
free ones. Each service starts once the services it depends on pass their own health checks.
"""

from __future__ import annotations

import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from flowbroker.qm.client import Client
from flowbroker.runtime.harness import flow, get_all
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

ROOT = Path(__file__).resolve().parents[2]
IN_CI = os.environ.get("CI", "").lower() == "true"
BIN = Path(sys.executable).parent
IMAGE_DATA = "/var/lib/flowbroker"
IMAGE_HEALTHCHECK = "/opt/flowbroker/healthcheck.py"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def resolved_config(tmp_path: Path, group: str) -> dict[str, Any]:
    """docker-compose.yml resolved with .env.example's placeholders replaced by real secrets."""
    compose = shutil.which("docker-compose")
    if compose is None:
        reason = "docker-compose is not installed (apt-get install -y docker-compose)"
        if IN_CI:
            pytest.fail(f"{reason} (CI=true requires it)")
        pytest.skip(reason)
    lines = []
    for line in (ROOT / ".env.example").read_text().splitlines():
        key, sep, value = line.partition("=")
        if sep and "replace-me" in value:
            line = f"{key}={secrets.token_hex(16)}"
        elif key == "FLOWBROKER_WORKER_GROUP":
            line = f"{key}={group}"
        lines.append(line)
    env_file = tmp_path / "env"
    env_file.write_text("\n".join(lines) + "\n")
    result = subprocess.run(
        [compose, "--env-file", str(env_file), "-f", str(ROOT / "docker-compose.yml"), "config"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
        env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": os.environ.get("HOME", "/tmp")},
    )
    assert result.returncode == 0, result.stderr
    return yaml.safe_load(result.stdout)  # type: ignore[no-any-return]


class Service:
    """One compose service run here: its command, environment and health check, translated."""

    def __init__(self, name: str, config: dict[str, Any], data: Path, swap: dict[str, str]) -> None:
        self.name = name
        self.log = data.parent / f"{name}-{data.name}.log"
        data.mkdir(parents=True, exist_ok=True)
        self.env = {
            **{k: v for k, v in os.environ.items() if not k.startswith("FLOWBROKER_")},
            "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
        }
        for key, value in config["environment"].items():
            self.env[key] = self._swap(str(value), swap)
        assert self.env["FLOWBROKER_DATA"] == IMAGE_DATA
        self.env["FLOWBROKER_DATA"] = str(data)
        self.argv = [self._swap(word, swap) for word in config["command"]]
        check = config["healthcheck"]["test"]
        assert check[0] == "CMD", check
        self.check = [
            sys.executable if word == "python" else self._swap(word, {**swap, IMAGE_DATA: str(data)})
            for word in check[1:]
        ]
        self.process: subprocess.Popen[bytes] | None = None

    @staticmethod
    def _swap(word: str, swap: dict[str, str]) -> str:
        for old, new in swap.items():
            word = word.replace(old, new)
        return word

    def start(self, hostname: str | None = None) -> None:
        """Start the command; with ``hostname``, under its own host name as in its own container."""
        argv = self.argv
        if hostname is not None:
            argv = ["unshare", "--uts", "sh", "-c", 'hostname "$0" && exec "$@"', hostname, *argv]
        with open(self.log, "ab") as out:
            self.process = subprocess.Popen(
                argv, env=self.env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
            )

    def healthy(self) -> bool:
        result = subprocess.run(self.check, env=self.env, capture_output=True, timeout=60)
        return result.returncode == 0

    def wait_healthy(self, timeout: float = 90.0) -> None:
        deadline = time.monotonic() + timeout
        while not self.healthy():
            assert self.process is not None and self.process.poll() is None, (
                f"{self.name} ended: {self.log.read_text()[-2000:]}"
            )
            assert time.monotonic() < deadline, f"{self.name} not healthy within {timeout:.0f} s"
            time.sleep(1.0)

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        os.killpg(self.process.pid, signal.SIGTERM)
        try:
            self.process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=30)


@pytest.fixture
def fresh_database(postgres_url: str) -> Iterator[str]:
    admin = create_engine(postgres_url, isolation_level="AUTOCOMMIT")
    name = f"fb_stack_{os.getpid()}_{secrets.token_hex(4)}"
    with admin.connect() as connection:
        connection.execute(text(f'CREATE DATABASE "{name}"'))
    try:
        yield make_url(postgres_url).set(database=name).render_as_string(hide_password=False)
    finally:
        with admin.connect() as connection:
            connection.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


def own_hostnames() -> bool:
    """Whether processes here can get host names of their own, as containers have."""
    if shutil.which("unshare") is None:
        return False
    probe = subprocess.run(["unshare", "--uts", "hostname", "replica"], capture_output=True, timeout=30)
    return probe.returncode == 0


def test_the_flowbroker_services_run_as_composed(
    tmp_path: Path, fresh_database: str, rabbitmq_url: str
) -> None:
    group = f"compose{secrets.token_hex(3)}"
    config = resolved_config(tmp_path, group)
    services = config["services"]
    qm_port, api_port = free_port(), free_port()
    database = services["api"]["environment"]["FLOWBROKER_DATABASE_URL"]
    celery = services["api"]["environment"]["FLOWBROKER_CELERY_BROKER"]
    assert re.match(r"postgresql\+psycopg://[^@]+@postgres:5432/", database), database
    assert re.match(r"amqp://[^@]+@rabbitmq:5672/", celery), celery
    swap = {
        database: fresh_database,
        celery: rabbitmq_url,
        "@qm:1414": f"@127.0.0.1:{qm_port}",
        "0.0.0.0": "127.0.0.1",
        "--port 8080": f"--port {api_port}",
        "http://127.0.0.1:8080/": f"http://127.0.0.1:{api_port}/",
        IMAGE_HEALTHCHECK: str(ROOT / "deploy" / "healthcheck.py"),
    }
    shared = tmp_path / "flowbroker-data"
    qm = Service("qm", services["qm"], shared, swap)
    # the queue manager's --port 1414 is a word of its own
    qm.argv[qm.argv.index("1414")] = str(qm_port)
    api = Service("api", services["api"], shared, swap)
    assert str(api_port) in " ".join(api.argv) and str(api_port) in " ".join(api.check)
    workers = [Service("worker", services["worker"], tmp_path / f"worker-{i}", swap) for i in (1, 2)]
    assert workers[0].argv[workers[0].argv.index("--group") + 1] == group
    started = [qm, api, *workers]
    try:
        qm.start()
        qm.wait_healthy()
        api.start()
        api.wait_healthy()

        base = f"http://127.0.0.1:{api_port}"
        password = services["api"]["environment"]["FLOWBROKER_ADMIN_PASSWORD"]
        login = httpx.post(
            base + "/api/auth/login", json={"username": "admin", "password": password}, timeout=30
        )
        assert login.status_code == 200, login.text
        headers = {"Authorization": f"Bearer {login.json()['accessToken']}"}
        brokers = httpx.get(base + "/api/brokers", headers=headers, timeout=30).json()
        default = next(b for b in brokers if b["name"] == "default")
        created = httpx.post(
            base + f"/api/brokers/{default['id']}/groups", json={"name": group}, headers=headers, timeout=30
        )
        assert created.status_code == 201, created.text

        replicas = own_hostnames()
        workers[0].start(f"{group}-1" if replicas else None)
        workers[0].wait_healthy()
        with Client.connect(data_dir=str(shared)) as client:
            source, target = f"{group.upper()}.IN", f"{group.upper()}.OUT"
            client.define_queue(source, replace=True)
            client.define_queue(target, replace=True)
            document = flow(
                {
                    "in": ("MQInput", {"queueName": source, "transactionMode": "yes"}),
                    "out": ("MQOutput", {"queueName": target}),
                },
                ["in.out -> out"],
                name=f"Composed{group}",
            )
            deployed = httpx.post(
                base + "/api/deployments",
                json={"document": document, "broker": "default", "group": group},
                headers=headers,
                timeout=30,
            )
            assert deployed.status_code == 202, deployed.text
            deadline = time.monotonic() + 60
            status = ""
            while status != "running":
                assert time.monotonic() < deadline, f"deployment stayed {status}"
                status = httpx.get(
                    base + f"/api/deployments/{deployed.json()['id']}", headers=headers, timeout=30
                ).json()["status"]
                assert status != "failed"
                time.sleep(0.3)
            client.put(source, b"through the first worker")
            assert [m.body for m in get_all(client, target, 1)] == [b"through the first worker"]

            # scaled: a second replica of the group loads its flows when it starts, and carries
            # on alone when the first one stops. Replicas differ by host name, as containers do
            # (the Celery worker of a group is named broker.group@host).
            if not replicas:
                print("unshare --uts is not permitted here: the second replica was not started")
                return
            workers[1].start(f"{group}-2")
            workers[1].wait_healthy()
            workers[0].stop()
            assert not workers[0].healthy()
            client.put(source, b"through the second worker")
            assert [m.body for m in get_all(client, target, 1)] == [b"through the second worker"]
    finally:
        for service in reversed(started):
            service.stop()
