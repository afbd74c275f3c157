"""The scale-out files: docker-compose.yml with .env.example, deploy/Dockerfile against the
Makefile's set-up, the systemd units against the `flowbroker` command, and the image's health
checks against real processes.

No container engine runs here, so the files are checked by the tools that read them
(`docker-compose config`, `systemd-analyze verify`) and against the repository they describe.
Under ``CI=true`` a missing docker-compose fails; elsewhere it skips with the reason.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
COMPOSE = ROOT / "docker-compose.yml"
ENV_EXAMPLE = ROOT / ".env.example"
DOCKERFILE = ROOT / "deploy" / "Dockerfile"
HEALTHCHECK = ROOT / "deploy" / "healthcheck.py"
UNITS = ["flowbroker-api.service", "flowbroker-qm.service", "flowbroker-worker@.service"]
IN_CI = os.environ.get("CI", "").lower() == "true"
FLOWBROKER = Path(sys.executable).parent / "flowbroker"
SERVICES = {"postgres", "rabbitmq", "qm", "api", "worker"}
SECRET = re.compile(r"PASSWORD|_PASS$|SECRET")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


# -- .env.example and docker-compose.yml ----------------------------------------------------------


def env_example(text: str | None = None) -> dict[str, tuple[str, bool]]:
    """Each variable of .env.example: (value, whether comment lines document it just above)."""
    found: dict[str, tuple[str, bool]] = {}
    documented = False
    for raw in (text if text is not None else ENV_EXAMPLE.read_text()).splitlines():
        line = raw.strip()
        if line.startswith("#"):
            documented = documented or bool(line.lstrip("#").strip()) and not line.startswith("# --")
            continue
        if not line:
            documented = False
            continue
        key, sep, value = line.partition("=")
        assert sep and re.fullmatch(r"[A-Z_][A-Z0-9_]*", key), f".env.example: bad line {raw!r}"
        found[key] = (value, documented)
        documented = False  # each variable has its own comment
    return found


def test_every_variable_of_env_example_is_documented() -> None:
    variables = env_example()
    assert variables, ".env.example defines nothing"
    undocumented = [key for key, (_, documented) in variables.items() if not documented]
    assert not undocumented, f"no comment above {undocumented} in .env.example"
    for key, (value, _) in variables.items():
        if SECRET.search(key):
            assert "replace-me" in value, f"{key} in .env.example must be a placeholder, not a secret"


def test_env_example_parser_notices_an_undocumented_variable() -> None:
    assert env_example("# a comment\nA=1\n\nB=2\n# c\nC=3\nD=4\n") == {
        "A": ("1", True),
        "B": ("2", False),
        "C": ("3", True),
        "D": ("4", False),
    }


def compose_variables(text: str) -> dict[str, list[str]]:
    """Each ${VAR} of the compose file and the modifiers (``:?``, ``:-``, none) it is used with."""
    used: dict[str, list[str]] = {}
    text = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("#"))
    for match in re.finditer(r"(?<!\$)\$\{([A-Za-z_][A-Za-z0-9_]*)(:?[?-])?", text):
        used.setdefault(match.group(1), []).append(match.group(2) or "")
    return used


def test_compose_uses_only_documented_variables_and_requires_its_secrets() -> None:
    used = compose_variables(COMPOSE.read_text())
    defined = env_example()
    missing = sorted(set(used) - set(defined))
    assert not missing, f"docker-compose.yml uses {missing}, not defined in .env.example"
    secrets = [name for name in used if SECRET.search(name)]
    assert secrets, "the compose file takes no secret from .env"
    for name in secrets:
        assert ":?" in used[name], f"{name} must be required (${{{name}:?…}})"
        assert ":-" not in used[name], f"{name} must have no default"


def docker_compose() -> str:
    found = shutil.which("docker-compose")
    if found is None:
        reason = "docker-compose is not installed (apt-get install -y docker-compose)"
        if IN_CI:
            pytest.fail(f"{reason} (CI=true requires it)")
        pytest.skip(reason)
    return found


def compose_config(env_file: Path) -> subprocess.CompletedProcess[str]:
    # only PATH and HOME: a variable of the caller's shell would win over the env file
    return subprocess.run(
        [docker_compose(), "--env-file", str(env_file), "-f", str(COMPOSE), "config"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
        env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": os.environ.get("HOME", "/tmp")},
    )


@pytest.fixture(scope="module")
def config(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """docker-compose.yml as docker-compose resolves it with .env.example as its .env."""
    env = tmp_path_factory.mktemp("compose") / ".env"
    shutil.copy(ENV_EXAMPLE, env)
    result = compose_config(env)
    assert result.returncode == 0, result.stderr
    parsed = yaml.safe_load(result.stdout)
    assert isinstance(parsed, dict)
    return parsed


def test_compose_defines_the_services(config: dict[str, Any]) -> None:
    services = config["services"]
    assert set(services) == SERVICES
    for name in ("qm", "api", "worker"):
        assert services[name]["build"]["dockerfile"] == "deploy/Dockerfile"
        assert services[name]["environment"]["FLOWBROKER_ENVIRONMENT"] == "production"
        assert services[name]["environment"]["FLOWBROKER_DATABASE_URL"].startswith("postgresql+psycopg://")
        assert services[name]["environment"]["FLOWBROKER_CELERY_BROKER"].startswith("amqp://")
    assert services["qm"]["command"][:2] == ["flowbroker", "qm"]
    assert "flowbroker api" in " ".join(services["api"]["command"])
    assert "flowbroker init" in " ".join(services["api"]["command"])
    assert services["worker"]["command"][:2] == ["flowbroker", "worker"]
    assert services["worker"]["environment"]["FLOWBROKER_QM"].startswith("fbqm://app:")
    assert "rabbitmq:3" in services["rabbitmq"]["image"] and "management" in services["rabbitmq"]["image"]
    assert services["postgres"]["image"].startswith("postgres:")


def test_worker_scales(config: dict[str, Any]) -> None:
    worker = config["services"]["worker"]
    assert "container_name" not in worker
    assert not worker.get("ports"), "a scaled worker cannot publish a fixed host port"
    assert not worker.get("volumes"), "each worker keeps its own data directory"


def test_every_service_has_a_healthcheck_and_waits_for_healthy_ones(config: dict[str, Any]) -> None:
    services = config["services"]
    for name, service in services.items():
        check = service.get("healthcheck") or {}
        assert check.get("test") and not check.get("disable"), f"{name} has no health check"
    assert services["postgres"]["healthcheck"]["test"][1] == "pg_isready"
    assert services["rabbitmq"]["healthcheck"]["test"][1:3] == ["rabbitmq-diagnostics", "-q"]
    assert "/api/health" in " ".join(services["api"]["healthcheck"]["test"])
    worker_check = services["worker"]["healthcheck"]["test"]
    command = services["worker"]["command"]
    assert "worker" in worker_check
    for option in ("--broker", "--group"):
        assert worker_check[worker_check.index(option) + 1] == command[command.index(option) + 1]
    for name in ("api", "worker"):
        depends = services[name]["depends_on"]
        assert {"rabbitmq", "qm"} <= set(depends)
        assert all(d["condition"] == "service_healthy" for d in depends.values()), name
    assert "postgres" in services["api"]["depends_on"] and "api" in services["worker"]["depends_on"]


def test_compose_keeps_state_in_named_volumes(config: dict[str, Any]) -> None:
    volumes = set(config.get("volumes") or {})
    for name, path in (("postgres", "/var/lib/postgresql/data"), ("rabbitmq", "/var/lib/rabbitmq")):
        mounts = {m.split(":")[1]: m.split(":")[0] for m in config["services"][name]["volumes"]}
        assert mounts.get(path) in volumes, f"{name} keeps {path} in no named volume"
    api = {m.split(":")[0] for m in config["services"]["api"]["volumes"]}
    qm = {m.split(":")[0] for m in config["services"]["qm"]["volumes"]}
    assert api & qm & volumes, "the configuration manager reaches the queue manager through a shared volume"


def test_compose_refuses_a_missing_secret(tmp_path: Path) -> None:
    env = tmp_path / ".env"
    env.write_text(
        "".join(
            line
            for line in ENV_EXAMPLE.read_text().splitlines(keepends=True)
            if not line.startswith("FLOWBROKER_SECRET_KEY=")
        )
    )
    result = compose_config(env)
    assert result.returncode != 0
    assert "set FLOWBROKER_SECRET_KEY in .env" in result.stderr


def test_production_refuses_the_examples_placeholders(tmp_path: Path) -> None:
    values = {key: value for key, (value, _) in env_example().items() if key.startswith("FLOWBROKER_")}
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("FLOWBROKER_")},
        **values,
        "FLOWBROKER_ENVIRONMENT": "production",
        "FLOWBROKER_DATA": str(tmp_path / "data"),
    }
    for variable in ("FLOWBROKER_SECRET_KEY", "FLOWBROKER_ADMIN_PASSWORD", "FLOWBROKER_QM_PASSWORD"):
        result = subprocess.run(
            [str(FLOWBROKER), "init"], capture_output=True, text=True, timeout=60, env=env
        )
        assert result.returncode == 1, result.stdout
        assert variable in result.stderr and "Traceback" not in result.stderr
        env[variable] = "a-real-value-" + os.urandom(12).hex()
    result = subprocess.run([str(FLOWBROKER), "init"], capture_output=True, text=True, timeout=60, env=env)
    assert result.returncode == 0, result.stderr


# -- deploy/Dockerfile against the Makefile ---------------------------------------------------------


def dockerfile_stages(text: str) -> list[dict[str, Any]]:
    """The stages of a Dockerfile: FROM image and name, and their (INSTRUCTION, arguments) in order."""
    joined = re.sub(r"\\\n", " ", text)
    stages: list[dict[str, Any]] = []
    for raw in joined.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        instruction, _, rest = line.partition(" ")
        instruction = instruction.upper()
        rest = rest.strip()
        if instruction == "FROM":
            parts = rest.split()
            name = parts[2] if len(parts) == 3 and parts[1].upper() == "AS" else None
            stages.append({"image": parts[0], "name": name, "steps": []})
            continue
        assert stages, f"{instruction} before FROM"
        stages[-1]["steps"].append((instruction, rest))
    return stages


def makefile_setup() -> tuple[str, set[str]]:
    """The Makefile's pip pin and the packages its set-up installs with -c constraints.txt."""
    text = (ROOT / "Makefile").read_text()
    pin = re.search(r"^PIP_VERSION\s*:?=\s*(\S+)", text, re.M)
    assert pin, "no PIP_VERSION in the Makefile"
    installs = [line for line in text.splitlines() if "pip install" in line and "-c constraints.txt" in line]
    assert len(installs) == 1, installs
    return pin.group(1), pip_packages(installs[0])


def pip_packages(command: str) -> set[str]:
    """The local packages a pip install command names, with -e, extras and ./ taken off."""
    words = shlex.split(command[command.index("pip install") :])[2:]
    packages = set()
    skip = False
    for word in words:
        if skip:
            skip = False
        elif word in ("-c", "--constraint", "-r"):
            skip = True
        elif not word.startswith("-") and not word.startswith("&&"):
            packages.add(re.sub(r"\[.*\]$", "", word).removeprefix("./").rstrip("/"))
    return packages


def runs(stage: dict[str, Any]) -> list[str]:
    return [rest for instruction, rest in stage["steps"] if instruction == "RUN"]


def test_dockerfile_builds_the_frontend_with_node_20() -> None:
    stages = dockerfile_stages(DOCKERFILE.read_text())
    node = [s for s in stages if s["image"].startswith("node:")]
    assert len(node) == 1, "one Node stage builds the frontend"
    assert re.match(r"node:20(\D|$)", node[0]["image"]), node[0]["image"]
    commands = runs(node[0])
    assert any(re.search(r"\bnpm ci\b", c) for c in commands)
    assert any(re.search(r"\bnpm run build\b", c) for c in commands)
    workdirs = [rest for instruction, rest in node[0]["steps"] if instruction == "WORKDIR"]
    assert workdirs and workdirs[-1].rstrip("/").endswith("frontend")


def test_dockerfile_installs_what_make_setup_installs() -> None:
    pin, installed = makefile_setup()
    # The image holds the product; the performance harness (bench/) is only installed by make.
    assert installed == {"esql-parser", "flow-nodes", "backend", "bench"}
    packages = installed - {"bench"}
    final = dockerfile_stages(DOCKERFILE.read_text())[-1]
    assert re.match(r"python:3\.11(\D|$)", final["image"]), final["image"]
    args = dict(
        rest.split("=", 1) for instruction, rest in final["steps"] if instruction == "ARG" and "=" in rest
    )
    commands = " && ".join(runs(final))
    pinned = re.findall(r"pip==(\S+)", commands)
    assert pinned, "the image does not pin pip"
    assert {re.sub(r"\$\{?(\w+)\}?", lambda m: args.get(m.group(1), m.group(0)), p) for p in pinned} == {pin}
    installs = [
        part for part in re.split(r"&&|;", commands) if "pip install" in part and "-c constraints.txt" in part
    ]
    assert len(installs) == 1, "one pip install with -c constraints.txt installs the packages"
    assert pip_packages(installs[0]) == packages


def test_dockerfile_runs_unprivileged_and_serves_the_built_designer() -> None:
    stages = dockerfile_stages(DOCKERFILE.read_text())
    final = stages[-1]
    users = [rest for instruction, rest in final["steps"] if instruction == "USER"]
    assert users, "the image runs as root"
    assert users[-1].split(":")[0] not in ("root", "0")
    env: dict[str, str] = {}
    for instruction, rest in final["steps"]:
        if instruction == "ENV":
            env.update(dict(re.findall(r"(\w+)=(\S+)", rest)))
    copies = [shlex.split(rest) for instruction, rest in final["steps"] if instruction == "COPY"]
    from_stage = [c for c in copies if c[0].startswith("--from=")]
    names = {s["name"] for s in stages[:-1]}
    for copy in from_stage:
        assert copy[0].removeprefix("--from=") in names, f"COPY {copy}: no such stage"
    dist = [c[-1] for c in from_stage if c[1].rstrip("/").endswith("dist")]
    assert dist and env.get("FLOWBROKER_FRONTEND_DIST", "").rstrip("/") == dist[0].rstrip("/").replace(
        "./", "/opt/flowbroker/"
    )


def test_dockerfile_copies_only_what_exists_and_is_sent(config: dict[str, Any]) -> None:
    stages = dockerfile_stages(DOCKERFILE.read_text())
    ignored = [
        line.strip()
        for line in (ROOT / ".dockerignore").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ]
    destinations: dict[str, str] = {}
    for stage in stages:
        workdir = "/"
        for instruction, rest in stage["steps"]:
            if instruction == "WORKDIR":
                workdir = rest if rest.startswith("/") else f"{workdir.rstrip('/')}/{rest}"
            if instruction != "COPY":
                continue
            words = shlex.split(rest)
            if words[0].startswith("--from="):
                continue
            *sources, target = words
            for source in sources:
                assert (ROOT / source).exists(), f"COPY {source}: not in the repository"
                clean = source.rstrip("/")
                assert not any(clean == i or clean.startswith(i + "/") for i in ignored), (
                    f"COPY {source}: excluded by .dockerignore"
                )
                where = (
                    target if target.startswith("/") else f"{workdir.rstrip('/')}/{target.removeprefix('./')}"
                )
                destinations[clean] = where
    # the compose file runs the health check script where the image puts it
    script = destinations.get("deploy/healthcheck.py")
    assert script is not None
    for name in ("api", "worker"):
        assert script in config["services"][name]["healthcheck"]["test"]
    # and the queue manager's health check reads the data directory the image declares
    final_env = " ".join(rest for instruction, rest in stages[-1]["steps"] if instruction == "ENV")
    data = config["services"]["qm"]["environment"]["FLOWBROKER_DATA"]
    assert f"FLOWBROKER_DATA={data}" in final_env
    assert data in config["services"]["qm"]["healthcheck"]["test"]


def test_dockerfile_parser_reads_stages_and_continuations() -> None:
    stages = dockerfile_stages("FROM a:1 AS one\nRUN x \\\n && y\nFROM b\nUSER me\n")
    assert stages == [
        {"image": "a:1", "name": "one", "steps": [("RUN", "x   && y")]},
        {"image": "b", "name": None, "steps": [("USER", "me")]},
    ]
    assert pip_packages("pip install -q -c constraints.txt -e ./a './b[dev]' c/") == {"a", "b", "c"}


# -- systemd units ----------------------------------------------------------------------------------


def unit_entries(text: str) -> dict[str, list[tuple[str, str]]]:
    sections: dict[str, list[tuple[str, str]]] = {}
    current = None
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith(("#", ";")):
            continue
        if line.startswith("[") and line.endswith("]"):
            current = line[1:-1]
            sections.setdefault(current, [])
            continue
        assert current is not None and "=" in line, f"bad unit line {raw!r}"
        key, _, value = line.partition("=")
        sections[current].append((key.strip(), value.strip()))
    return sections


def flowbroker_help(subcommand: str) -> str:
    result = subprocess.run(
        [str(FLOWBROKER), subcommand, "--help"], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, f"`flowbroker {subcommand}` is no subcommand: {result.stderr}"
    return result.stdout


@pytest.mark.parametrize("unit", UNITS)
def test_unit_runs_a_real_flowbroker_command_hardened(unit: str) -> None:
    sections = unit_entries((ROOT / "deploy" / unit).read_text())
    service = sections["Service"]
    values: dict[str, list[str]] = {}
    for key, value in service:
        values.setdefault(key, []).append(value)
    assert values.get("EnvironmentFile"), f"{unit}: no EnvironmentFile"
    assert values.get("Restart") == ["on-failure"]
    assert values.get("NoNewPrivileges") == ["yes"]
    assert values.get("ProtectSystem", [""])[-1] in ("strict", "full")
    assert values.get("User", ["root"])[-1] not in ("root", "0")
    assert "WantedBy" in dict(sections["Install"])
    commands = values.get("ExecStart", []) + values.get("ExecStartPre", [])
    assert values.get("ExecStart"), f"{unit}: no ExecStart"
    for command in commands:
        argv = command.split()
        assert Path(argv[0]).name == "flowbroker", command
        usage = flowbroker_help(argv[1])
        for option in (word for word in argv[2:] if word.startswith("--")):
            assert option in usage, f"{unit}: `flowbroker {argv[1]}` has no option {option}"
    if unit.endswith("@.service"):
        argv = values["ExecStart"][0].split()
        assert argv[argv.index("--group") + 1] == "%i", "the instance names the execution group"


@pytest.fixture
def verifiable_units(tmp_path: Path) -> Iterator[list[Path]]:
    """The units as systemd-analyze can verify them here: this checkout's flowbroker, one worker instance."""
    paths = []
    for unit in UNITS:
        text = (
            (ROOT / "deploy" / unit)
            .read_text()
            .replace("/opt/flowbroker/.venv/bin/flowbroker", str(FLOWBROKER))
        )
        name = unit.replace("@.service", "@default.service")
        (tmp_path / unit).write_text(text)
        if name != unit:
            (tmp_path / name).write_text(text)
        paths.append(tmp_path / name)
    yield paths


def test_units_pass_systemd_analyze_verify(verifiable_units: list[Path]) -> None:
    analyze = shutil.which("systemd-analyze")
    if analyze is None:
        print("systemd-analyze is not installed: the units were only parsed (see the test above)")
        pytest.skip("systemd-analyze is not installed")
    result = subprocess.run(
        [analyze, "verify", "--man=no", *map(str, verifiable_units)],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=verifiable_units[0].parent,
    )
    # a misspelt key or a bad value is only a warning to systemd: any output is a finding
    assert result.returncode == 0 and not result.stderr.strip(), result.stderr


# -- the image's health checks against real processes -------------------------------------------------


def healthcheck(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(HEALTHCHECK), *args],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, **(env or {})},
    )


def wait_until(check: Any, what: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"{what} within {timeout:.0f} s"
        time.sleep(0.5)


def _init(data: Path, env: dict[str, str]) -> None:
    done = subprocess.run(
        [str(FLOWBROKER), "init", "--data", str(data)], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr


def test_api_health_check_follows_the_configuration_manager(tmp_path: Path) -> None:
    port = free_port()
    url = f"http://127.0.0.1:{port}/api/health"
    assert healthcheck("api", url, "--timeout", "2").returncode == 1
    env = {k: v for k, v in os.environ.items() if not k.startswith("FLOWBROKER_")}
    # as the compose file's api service: the repository prepared first (health is ready once a
    # user can log in)
    _init(tmp_path / "data", env)
    api = subprocess.Popen(
        [str(FLOWBROKER), "api", "--data", str(tmp_path / "data"), "--port", str(port)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_until(lambda: healthcheck("api", url, "--timeout", "2").returncode == 0, "the API is healthy")
    finally:
        api.terminate()
        api.wait(timeout=30)
    stopped = healthcheck("api", url, "--timeout", "2")
    assert stopped.returncode == 1 and "unhealthy" in stopped.stderr


def test_api_health_check_fails_when_the_repository_is_lost(tmp_path: Path, postgres_url: str) -> None:
    from sqlalchemy import create_engine, text
    from sqlalchemy.engine import make_url

    admin = create_engine(postgres_url, isolation_level="AUTOCOMMIT")
    name = f"fb_health_{os.getpid()}_{os.urandom(4).hex()}"
    with admin.connect() as connection:
        connection.execute(text(f'CREATE DATABASE "{name}"'))
    port = free_port()
    url = f"http://127.0.0.1:{port}/api/health"
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("FLOWBROKER_")},
        "FLOWBROKER_DATABASE_URL": make_url(postgres_url)
        .set(database=name)
        .render_as_string(hide_password=False),
    }
    _init(tmp_path / "data", env)
    api = subprocess.Popen(
        [str(FLOWBROKER), "api", "--data", str(tmp_path / "data"), "--port", str(port)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_until(lambda: healthcheck("api", url, "--timeout", "2").returncode == 0, "the API is healthy")
        with admin.connect() as connection:
            connection.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        degraded = healthcheck("api", url, "--timeout", "5")
        assert degraded.returncode == 1 and "status 'degraded'" in degraded.stderr
    finally:
        api.terminate()
        api.wait(timeout=30)
        with admin.connect() as connection:
            connection.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


def test_worker_health_check_follows_the_execution_group(tmp_path: Path) -> None:
    data = tmp_path / "data"
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("FLOWBROKER_")},
        "FLOWBROKER_DATA": str(data),
    }
    assert subprocess.run([str(FLOWBROKER), "init"], env=env, capture_output=True, timeout=60).returncode == 0
    check = ("worker", "--broker", "default", "--group", "default")
    missing = healthcheck(*check, env=env)
    assert missing.returncode == 1 and "not written yet" in missing.stderr
    worker = subprocess.Popen(
        [str(FLOWBROKER), "worker", "--broker", "default", "--group", "default"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_until(lambda: healthcheck(*check, env=env).returncode == 0, "the worker is healthy")
        assert healthcheck("worker", "--broker", "default", "--group", "other", env=env).returncode == 1
    finally:
        worker.terminate()
        worker.wait(timeout=60)
    ended = healthcheck(*check, env=env)
    assert ended.returncode == 1 and "has ended" in ended.stderr
    alive = data / "run" / "default.default.alive"
    alive.write_text(str(os.getpid()))
    os.utime(alive, (time.time() - 60, time.time() - 60))
    stale = healthcheck(*check, env=env)
    assert stale.returncode == 1 and "last touched" in stale.stderr
