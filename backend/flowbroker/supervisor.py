"""The process supervisor of `flowbroker up`: starts components, restarts the dead, stops all cleanly.

Each component runs in its own process group so that stopping it also stops whatever it
spawned; each child also asks the kernel for SIGTERM when the supervisor dies (PR_SET_PDEATHSIG),
so not even a SIGKILL of the supervisor leaves orphans behind.

The component table is not fixed: :meth:`Supervisor.reconcile` brings a family of components
(the execution groups) in line with a wanted table, starting, stopping and removing without
ever blocking the watch loop.
"""

from __future__ import annotations

import ctypes
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

PR_SET_PDEATHSIG = 1


@dataclass
class Component:
    """One supervised child: how to start it, and how it is doing."""

    name: str
    argv: list[str]
    env: dict[str, str] = field(default_factory=dict)
    log_path: Path | None = None
    # Run-time state, reported in the state file and /api/health.
    state: str = "stopped"
    #: "running" while the component should run; "stopped" when it is kept stopped on purpose.
    desired: str = "running"
    pid: int | None = None
    restarts: int = 0
    since: float | None = None
    last_exit: int | None = None
    detail: str = ""
    process: subprocess.Popen[bytes] | None = None
    backoff: float = 0.0
    restart_at: float | None = None
    #: Set while a requested stop is under way: SIGKILL after this moment.
    kill_at: float | None = None
    #: Drop the component from the table once it has stopped.
    removing: bool = False

    def report(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "state": self.state,
            "desired": self.desired,
            "pid": self.pid,
            "restarts": self.restarts,
            "since": self.since,
            "lastExit": self.last_exit,
            "detail": self.detail,
        }


def _die_with_parent() -> None:
    """Runs in the child between fork and exec: SIGTERM when the supervisor goes away."""
    try:
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    except OSError:
        pass


class Supervisor:
    """Keeps every component running until :meth:`request_stop`, then stops them all."""

    def __init__(
        self,
        components: Sequence[Component],
        state_file: Path | None = None,
        *,
        initial_backoff: float = 0.5,
        max_backoff: float = 30.0,
        stable_after: float = 30.0,
        stop_timeout: float = 10.0,
        log: Callable[[str], None] | None = None,
        reconciler: Callable[[Supervisor], None] | None = None,
        reconcile_interval: float = 1.0,
        on_removed: Callable[[Component], None] | None = None,
    ) -> None:
        self.components = list(components)
        self.state_file = state_file
        self.initial_backoff = initial_backoff
        self.max_backoff = max_backoff
        self.stable_after = stable_after
        self.stop_timeout = stop_timeout
        self.stopping = False
        self.log = log or (lambda line: print(line, file=sys.stderr, flush=True))
        self.reconciler = reconciler
        self.reconcile_interval = reconcile_interval
        self.on_removed = on_removed
        self._next_reconcile = 0.0

    # -- lifecycle ---------------------------------------------------------------------------

    def start(self) -> None:
        for component in self.components:
            if component.desired == "running":
                self._spawn(component)
        self.write_state()

    def request_stop(self, *_: Any) -> None:
        self.stopping = True

    def install_signal_handlers(self) -> None:
        signal.signal(signal.SIGTERM, self.request_stop)
        signal.signal(signal.SIGINT, self.request_stop)
        signal.signal(signal.SIGHUP, self.request_stop)

    def run(self, poll_interval: float = 0.2) -> None:
        """Watch the components until a stop is requested, then stop them."""
        try:
            while not self.stopping:
                self.tick()
                self._reconcile_when_due()
                time.sleep(poll_interval)
        finally:
            self.stop_all()

    def _reconcile_when_due(self) -> None:
        if self.reconciler is None or self.stopping or time.monotonic() < self._next_reconcile:
            return
        self._next_reconcile = time.monotonic() + self.reconcile_interval
        try:
            self.reconciler(self)
        except Exception as exc:  # a busy or unreachable repository: keep what runs, try again
            self.log(f"flowbroker up: cannot read the execution groups: {type(exc).__name__}: {exc}")

    # -- a changing table --------------------------------------------------------------------

    def component(self, name: str) -> Component | None:
        for component in self.components:
            if component.name == name:
                return component
        return None

    def reconcile(self, prefix: str, wanted: dict[str, Component]) -> None:
        """Make the components named ``prefix…`` those of ``wanted``, each in its desired state.

        A new name is added (and started when it is desired running), a name no longer wanted is
        stopped and then removed, a changed desire starts or stops the component. A component's
        command is taken from ``wanted`` the next time it starts.
        """
        changed = False
        for name, target in wanted.items():
            current = self.component(name)
            if current is None:
                self.components.append(target)
                current = target
                current.state = "stopped"
                changed = True
            else:
                current.argv, current.env, current.log_path = target.argv, target.env, target.log_path
                current.removing = False
                if current.desired != target.desired:
                    current.desired = target.desired
                    changed = True
            changed |= self._converge(current)
        for current in [c for c in self.components if c.name.startswith(prefix) and c.name not in wanted]:
            if not current.removing:
                current.removing = True
                current.desired = "stopped"
                changed = True
            changed |= self._converge(current)
        if changed:
            self.write_state()

    def _converge(self, component: Component) -> bool:
        """One step towards the component's desired state; whether anything changed."""
        running = component.process is not None
        if component.desired == "running":
            if not running and component.restart_at is None and component.state in ("stopped", "stopping"):
                component.backoff = 0.0
                self._spawn(component)
                return True
            return False
        if running and component.kill_at is None:
            self._begin_stop(component)
            return True
        if not running:
            component.restart_at = None
            if component.removing:
                self.components.remove(component)
                if self.on_removed is not None:
                    self.on_removed(component)
                return True
            if component.state != "stopped":
                component.state = "stopped"
                component.detail = ""
                return True
        return False

    def _begin_stop(self, component: Component) -> None:
        """SIGTERM now, SIGKILL after ``stop_timeout``: :meth:`tick` watches the rest."""
        component.state = "stopping"
        component.restart_at = None
        component.kill_at = time.monotonic() + self.stop_timeout
        self._signal_group(component, signal.SIGTERM)

    def tick(self) -> None:
        """Notice exits and perform due restarts."""
        now = time.monotonic()
        changed = False
        for component in list(self.components):  # a stopped component may leave the table
            process = component.process
            if process is not None:
                code = process.poll()
                if code is None:
                    if component.kill_at is not None and now >= component.kill_at:
                        self.log(f"flowbroker up: {component.name} did not stop in time; killing it")
                        self._signal_group(component, signal.SIGKILL)
                        component.kill_at = now + self.stop_timeout
                    continue
                changed = True
                self._reap_group(component)
                if component.kill_at is not None:
                    # a stop that was asked for: no restart
                    component.kill_at = None
                    component.process = None
                    component.pid = None
                    component.last_exit = code
                    component.state = "stopped"
                    component.detail = ""
                    self._converge(component)
                    continue
                ran_for = time.time() - (component.since or time.time())
                component.process = None
                component.pid = None
                component.last_exit = code
                if ran_for >= self.stable_after:
                    component.backoff = 0.0
                component.backoff = min(
                    self.max_backoff, component.backoff * 2 if component.backoff else self.initial_backoff
                )
                component.restart_at = now + component.backoff
                component.state = "restarting"
                component.detail = f"exited with status {code}; restarting in {component.backoff:.1f}s"
                self.log(f"flowbroker up: {component.name} exited with status {code}; restarting")
            elif component.restart_at is not None and now >= component.restart_at and not self.stopping:
                component.restarts += 1
                self._spawn(component)
                changed = True
        if changed:
            self.write_state()

    def stop_all(self) -> None:
        """SIGTERM every component's process group, wait, then SIGKILL what is left."""
        self.stopping = True
        for component in self.components:
            component.restart_at = None
            if component.process is not None:
                component.state = "stopping"
                self._signal_group(component, signal.SIGTERM)
        self.write_state()
        deadline = time.monotonic() + self.stop_timeout
        for component in self.components:
            process = component.process
            if process is None:
                continue
            try:
                process.wait(timeout=max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                self.log(f"flowbroker up: {component.name} did not stop in time; killing it")
                self._signal_group(component, signal.SIGKILL)
                process.wait()
            self._reap_group(component)
            component.last_exit = process.returncode
            component.process = None
            component.pid = None
            component.state = "stopped"
        self.write_state()

    # -- helpers -----------------------------------------------------------------------------

    def _spawn(self, component: Component) -> None:
        env = {**os.environ, **component.env}
        out: Any = subprocess.DEVNULL
        if component.log_path is not None:
            component.log_path.parent.mkdir(parents=True, exist_ok=True)
            out = open(component.log_path, "ab")  # the child inherits it; ours is closed below
        try:
            component.process = subprocess.Popen(
                component.argv,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT if out is not subprocess.DEVNULL else subprocess.DEVNULL,
                start_new_session=True,
                preexec_fn=_die_with_parent,
            )
        except OSError as exc:
            component.process = None
            component.state = "failed"
            component.detail = f"cannot start: {exc}"
            component.backoff = min(self.max_backoff, component.backoff * 2 or self.initial_backoff)
            component.restart_at = time.monotonic() + component.backoff
            return
        finally:
            if out is not subprocess.DEVNULL:
                out.close()
        component.pid = component.process.pid
        component.since = time.time()
        component.state = "running"
        component.detail = ""
        component.restart_at = None

    def _signal_group(self, component: Component, sig: int) -> None:
        if component.process is None:
            return
        try:
            os.killpg(component.process.pid, sig)
        except (ProcessLookupError, PermissionError):
            pass

    def _reap_group(self, component: Component) -> None:
        """A dead leader may leave children in its group: end them too."""
        if component.process is None:
            return
        try:
            os.killpg(component.process.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass

    def write_state(self) -> None:
        if self.state_file is None:
            return
        data = {"supervisor": os.getpid(), "components": [c.report() for c in self.components]}
        tmp = self.state_file.with_suffix(".tmp")
        tmp.write_text(json.dumps(data))
        os.replace(tmp, self.state_file)
