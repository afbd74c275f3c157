"""The execution group's state in its worker process: its runtime, its repository, and what tasks do.

Control tasks and bootsteps call the functions here; they keep the deployment rows in the
configuration repository up to date, which is also how a restarted group finds the flows it
must resume.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import threading
import time
from pathlib import Path
from typing import Any

import psutil

from flowbroker.runtime.engine import DeployedFlow, ExecutionGroupRuntime
from flowbroker.runtime.recorder import recordings_dir
from flowbroker.worker import heap

log = logging.getLogger("flowbroker.worker")


class GroupState:
    """Everything one execution-group process holds."""

    def __init__(self, broker: str, group: str, data: Path) -> None:
        self.broker = broker
        self.group = group
        self.data = data
        self.runtime: ExecutionGroupRuntime | None = None
        self.session_factory: Any = None
        self.engine: Any = None
        self.by_deployment: dict[int, str] = {}
        #: Per deployment: what it was last reported waiting for (see :meth:`report_waiting`).
        self.waiting: dict[int, list[dict[str, Any]]] = {}
        self.lock = threading.RLock()
        #: Held by each control task and by a re-read of the repository (:meth:`resync`) for the
        #: whole of it, so a re-read never applies what it read before a stop or start that ran
        #: meanwhile.
        self.control = threading.RLock()
        self.process = psutil.Process()
        self.process.cpu_percent(None)
        self.started = time.time()
        self.ready = threading.Event()
        #: The host name the group reports itself under, on the topology and monitoring pages.
        self.host = socket.gethostname()
        self.group_id: int | None = None
        #: Why the broker's transport URL cannot be used (every deployment fails with it), or "".
        self.transport_problem = ""
        self.broker_id: int | None = None
        #: When the topic ACLs and filtered subscriptions were last read (time.monotonic()).
        self.pubsub_read = 0.0
        self._pubsub_problems: set[str] = set()

    # -- set up ---------------------------------------------------------------------------------

    def open(self) -> None:

        from flowbroker.repository import db
        from flowbroker.runtime import transports
        from flowbroker.runtime.datasources import DataSources
        from flowbroker.services import brokers, datasources, reports
        from flowbroker.settings import Settings

        settings = Settings(data=self.data)
        self.engine = db.engine_from_settings(settings)
        self.session_factory = db.session_factory(self.engine)
        with db.session_scope(self.session_factory) as session:
            target = brokers.group_by_name(session, self.broker, self.group)
            self.group_id = target.id
            reports.register(session, target.id, self.host, os.getpid(), self.started)
            qm_url = brokers.transport_url(session, target.broker_id, os.environ.get("FLOWBROKER_QM", ""))
            sources = datasources.urls_for_broker(session, target.broker_id)
            http_port = target.http_port
            self.broker_id = target.broker_id
            self._refresh_pubsub(session)
        data = str(self.data)
        try:
            # the broker's URL scheme names the transport: the queue manager or RabbitMQ
            connect = transports.connector(qm_url, data_dir=data, principal=self.principal)
        except transports.TransportURLError as exc:
            self.transport_problem = str(exc)
            log.error("broker %s: %s", self.broker, exc)

            def connect() -> transports.Transport:
                raise transports.TransportURLError(self.transport_problem)

        self.runtime = ExecutionGroupRuntime(
            connect,
            data_sources=DataSources(sources),
            trace_dir=self.data / "trace" / self.broker / self.group,
            recording_dir=recordings_dir(self.data, self.broker, self.group),
            resolve_subflow=self._resolve_subflow,
            broker=broker_attributes(self.broker, self.group, qm_url, self.data),
            http=http_listener(settings, http_port),
        )

    @property
    def principal(self) -> str:
        """Who the topic ACLs judge this group's flows as: ``BROKER/GROUP`` (see README "Topic ACLs")."""
        return f"{self.broker}/{self.group}"

    def _refresh_pubsub(self, session: Any) -> None:
        from flowbroker.pubsub import rules

        for problem in rules.refresh(session, self.broker_id):
            if problem not in self._pubsub_problems:
                log.warning("broker %s: %s", self.broker, problem)
        self._pubsub_problems = set(rules.current().problems)
        self.pubsub_read = time.monotonic()

    def refresh_pubsub(self) -> None:
        """Read the topic ACLs and filtered subscriptions again (every ``FLOWBROKER_PUBSUB_REFRESH`` s)."""
        from flowbroker.repository import db

        if self.session_factory is None:
            return
        with db.session_scope(self.session_factory) as session:
            self._refresh_pubsub(session)

    def _resolve_subflow(self, ref: dict[str, Any]) -> dict[str, Any] | None:
        from flowbroker.repository import db
        from flowbroker.services import flows
        from flowbroker.services.errors import ServiceError

        with db.session_scope(self.session_factory) as session:
            try:
                flow = flows.get_by_name(session, str(ref.get("name")))
                version = ref.get("version")
                return dict(flows.version(session, flow, int(version) if version else None).document)
            except ServiceError:
                return None

    def resume(self) -> None:
        """Run again every flow the repository says this group runs."""
        from flowbroker.repository import db
        from flowbroker.services import deploy
        from flowbroker.worker import debug

        with db.session_scope(self.session_factory) as session:
            ids = [(d.id, d.status) for d in deploy.to_resume(session, self.broker, self.group)]
            # a start or stop the replicas connected at the time handled, as this one would have
            asked = deploy.asked_to_run(session, dict(ids))
            ids = [(i, "stopped" if not asked[i] else ("running" if s == "stopped" else s)) for i, s in ids]
        # threads paused in a previous process of this group are gone with it
        debug.forget_pauses(self.session_factory, [deployment_id for deployment_id, _ in ids])
        running = self.group_running()
        try:
            for deployment_id, status in reversed(ids):
                if running:
                    self.deploy(deployment_id, start=status != "stopped", settle=False)
                else:
                    # a stopped group loads its flows but runs none; each keeps its own state
                    self.deploy(
                        deployment_id,
                        start=False,
                        recorded="running" if status == "pending" else status,
                        settle=False,
                    )
        finally:
            heap.settle()
            self.ready.set()

    def resync(self) -> list[str]:
        """Bring this replica in line with the repository after it may have missed control tasks
        (a broadcast reaches only the replicas connected when it is sent): deploy what it lacks,
        start or stop what differs, drop what was undeployed. What it did, one line each."""
        with self.control:
            return self._resync()

    def _resync(self) -> list[str]:
        from flowbroker.repository import db
        from flowbroker.services import deploy, recordings

        assert self.runtime is not None
        running = self.group_running()
        with db.session_scope(self.session_factory) as session:
            resumable = deploy.to_resume(session, self.broker, self.group)
            wanted = {d.id: d.status for d in resumable}
            flows = {d.id: d.flow_version.flow.name for d in resumable}
            asked = deploy.asked_to_run(session, wanted)
            leaving = {
                d.id for d in deploy.group_flows(session, self.group_id or 0) if d.status == "undeploying"
            }
            traces = deploy.asked_to_trace(session, list(wanted))
            recording = recordings.asked_to_record(session, flows, time.time())
        done: list[str] = []
        for deployment_id in list(self.by_deployment):
            if deployment_id in wanted:
                continue
            name = self.by_deployment[deployment_id]
            if deployment_id in leaving:
                self.undeploy(deployment_id)
                done.append(f"undeployed {deployment_id}")
                continue
            # replaced (a newer deployment of the flow takes its name below) or undeployed
            # meanwhile by another replica: gone here too, without a word to the repository
            with self.lock:
                self.by_deployment.pop(deployment_id, None)
                if name not in self.by_deployment.values() and name in self.runtime.flows:
                    self.runtime.undeploy(name)
            done.append(f"dropped {deployment_id}")
        for deployment_id, status in sorted(wanted.items()):
            loaded = self.by_deployment.get(deployment_id)
            should_run = running and asked[deployment_id]
            if loaded is None or loaded not in self.runtime.flows:
                # as the resume on start records them: a stopped group keeps each flow's own state
                recorded = None if should_run else ("running" if status == "pending" else status)
                self.deploy(deployment_id, start=should_run, recorded=recorded)
                done.append(f"deployed {deployment_id}")
                continue
            state = self.runtime.flows[loaded].state
            if running and should_run and state == "stopped":
                self.start_flow(deployment_id, True)  # and reports it
                done.append(f"started {deployment_id}")
            elif running and not should_run and state == "running":
                self.start_flow(deployment_id, False)
                done.append(f"stopped {deployment_id}")
            elif not running and state == "running":  # the group was stopped meanwhile
                with self.lock:
                    self.runtime.stop_flow(loaded)
                done.append(f"stopped {deployment_id}")
        for deployment_id in leaving - set(self.by_deployment):
            # undeployed while no replica listened: the repository hears it from this one
            with db.session_scope(self.session_factory) as session:
                deploy.report(session, deployment_id, "undeployed")
            done.append(f"undeployed {deployment_id}")
        done += self._catch_up_traces(traces)
        done += self._catch_up_recordings(recording)
        # breakpoints live in the repository too
        self.debug(0)
        return done

    def _catch_up_traces(self, traces: dict[int, tuple[str, str]]) -> list[str]:
        """Switch each flow's user trace to the operator's last switch where it differs."""
        assert self.runtime is not None
        done = []
        for deployment_id, (level, mode) in sorted(traces.items()):
            flow = self.runtime.flows.get(self.by_deployment.get(deployment_id, ""))
            if flow is None or (flow.trace.level, flow.trace.mode) == (level, mode):
                continue
            if level == "none" and flow.trace.level == "none":
                continue  # off either way
            self.trace(deployment_id, level, mode)
            done.append(f"trace {level} {mode} {deployment_id}")
        return done

    def _catch_up_recordings(self, requests: dict[int, dict[str, Any]]) -> list[str]:
        """Join each recording still asked for that this replica is not running and never ended."""
        assert self.runtime is not None
        done = []
        for deployment_id, request in sorted(requests.items()):
            name = self.by_deployment.get(deployment_id, "")
            flow = self.runtime.flows.get(name)
            if flow is None:
                continue
            if flow.recording is not None and flow.recording.spec.id == request["id"]:
                continue  # running here, or ended here by its own bounds
            state = recordings_dir(self.data, self.broker, self.group) / name / f"{request['id']}.json"
            try:
                status = json.loads(state.read_text()).get("status")
            except (OSError, ValueError, AttributeError):
                status = None
            if status not in (None, "requested", "recording"):
                continue  # ended before this process started (here, or by a replica sharing the files)
            self.record(deployment_id, request)
            done.append(f"recording {request['id']} of {deployment_id}")
        return done

    def group_running(self) -> bool:
        """Whether the repository wants this group's flows to run (an operator may have stopped it)."""
        from flowbroker.repository import db
        from flowbroker.services import brokers

        with db.session_scope(self.session_factory) as session:
            return brokers.group_by_name(session, self.broker, self.group).desired_state == "running"

    def follow_group(self) -> str:
        """Stop every flow, or start those whose own state is running, as the group's desired state says.

        The flows' recorded states are left alone, so a group started again resumes each flow as
        it was. Read at the time the task runs, the desired state makes a late task harmless.
        """
        from flowbroker.repository import db
        from flowbroker.services import deploy

        assert self.runtime is not None
        running = self.group_running()
        with db.session_scope(self.session_factory) as session:
            own = {}
            for deployment_id in list(self.by_deployment):
                own[deployment_id] = deploy.status(session, deployment_id)
        with self.lock:
            for deployment_id, name in list(self.by_deployment.items()):
                if name not in self.runtime.flows:
                    continue
                if running and own.get(deployment_id) in ("running", "waiting"):
                    self.runtime.start_flow(name)
                elif not running:
                    self.runtime.stop_flow(name)
        return "running" if running else "stopped"

    def close(self) -> None:
        if self.runtime is not None:
            self.runtime.shutdown(timeout=30)
        if self.engine is not None:
            self.engine.dispose()

    # -- control tasks --------------------------------------------------------------------------

    def deploy(
        self,
        deployment_id: int,
        *,
        start: bool = True,
        recorded: str | None = None,
        settle: bool = True,
        define_queues: bool = False,
    ) -> str:
        """Compile and load a deployment's flow, started or not; ``recorded`` keeps its reported status.

        ``settle``: freeze the heap afterwards (see :mod:`flowbroker.worker.heap`); resuming
        several flows settles once after the last. ``define_queues``: define the flow's input
        and output queues the queue manager does not have, before its threads start.
        """
        from flowbroker.repository import db
        from flowbroker.runtime.compiler import FlowCompileError
        from flowbroker.services import datasources, dependencies, deploy

        assert self.runtime is not None
        with db.session_scope(self.session_factory) as session:
            row = deploy.find(session, deployment_id)
            if row is None:
                return "missing"
            document = dict(row.flow_version.document)
            overrides = dict(row.overrides or {})
            instances = row.additional_instances
            # the subflows and message sets shipped with the deployment; a deployment recorded
            # before they were has them looked up now
            needs = dict(row.dependencies or {}) or dependencies.resolve(session, document)
            # read at every deploy and resume: code nodes run only while an administrator allows them
            code_nodes = bool(row.group.code_nodes)
            http_port = row.group.http_port
            deploy.begin_compiling(row)
            # the ACLs as they are now judge the flow from its first message
            self._refresh_pubsub(session)
            # data sources defined since the group started are usable by this deployment
            self.runtime.data_sources.urls.update(datasources.urls_for_broker(session, row.broker_id))
        with self.lock:
            listener = self.runtime.http
            if http_port is not None and listener is not None and listener.address is None:
                # a port set on the group since the worker started counts until the listener opens
                listener.port = http_port
            try:
                if self.transport_problem:
                    raise TransportUnusable(self.transport_problem)
                doc, externals = deploy.apply_overrides(document, overrides)
                flow = self.runtime.deploy(
                    doc,
                    externals=externals,
                    additional_instances=instances,
                    start=start and not define_queues,
                    dependencies=needs,
                    code_nodes=code_nodes,
                )
                problems = []
                if define_queues:
                    problems = self._define_queues(deployment_id, flow.compiled)
                    if start:
                        flow.start()
                status = recorded or ("running" if start else "stopped")
                self.by_deployment[deployment_id] = flow.name
                self.waiting.pop(deployment_id, None)
            except FlowCompileError as exc:
                status, problems = "failed", [p.to_json() for p in exc.problems]
            except TransportUnusable as exc:
                status, problems = "failed", [transport_problem(str(exc))]
            except Exception as exc:  # a deployment must end in a status, whatever went wrong
                log.exception("deployment %s failed", deployment_id)
                status = "failed"
                problems = [
                    {
                        "node": "",
                        "property": "",
                        "line": 0,
                        "column": 0,
                        "pointer": "",
                        "message": f"{type(exc).__name__}: {exc}",
                    }
                ]
        with self.lock, db.session_scope(self.session_factory) as session:
            self.waiting.pop(deployment_id, None)
            deploy.report(session, deployment_id, status, problems)
        log.info("deployment %s: %s", deployment_id, status)
        if status != "failed":
            self.debug(deployment_id)
        if settle and status != "failed":
            heap.settle()
        return status

    def debug(self, deployment_id: int) -> str:
        """Set a deployment's step-debugger breakpoints as the repository has them (0: every deployment's,
        after the group's development flag changed)."""
        from flowbroker.worker import debug

        ids = [deployment_id] if deployment_id else list(self.by_deployment)
        done = ""
        for each in ids:
            try:
                done = debug.apply_breakpoints(self, each)
            except Exception as exc:  # a flow runs on without breakpoints rather than fail its deploy
                log.warning("deployment %s: cannot set breakpoints: %s", each, exc)
                done = str(exc)
        return done

    def debug_command(
        self, deployment_id: int, pause_id: str, action: str, edits: list[dict[str, Any]]
    ) -> str:
        from flowbroker.worker import debug

        return debug.command(self, deployment_id, pause_id, action, edits)

    def _define_queues(self, deployment_id: int, compiled: Any) -> list[dict[str, Any]]:
        """Define the queues the flow's nodes read and write by name that do not exist yet.

        Returns a diagnostic for each queue that could not be defined (the flow still starts,
        and is reported waiting while an input queue is missing).
        """
        from flowbroker.qm.protocol import QMError
        from flowbroker.runtime.transports import TransportError

        refused = (QMError, TransportError)

        assert self.runtime is not None
        wanted: dict[str, str] = {}
        for node in compiled.nodes.values():
            for name in (*node.SPEC.queues_read(node.properties), *node.SPEC.queues_written(node.properties)):
                wanted.setdefault(name, node.id)
        problems: list[dict[str, Any]] = []

        def cannot(node_id: str, text: str) -> None:
            problems.append(
                {
                    "node": node_id,
                    "property": "queueName",
                    "line": 0,
                    "column": 0,
                    "pointer": "",
                    "message": text,
                }
            )

        try:
            connection = self.runtime.connect()
        except Exception as exc:  # the flow still starts; its threads retry the queue manager
            cannot("", f"cannot define the flow's queues: {exc}")
            return problems
        try:
            for queue, node_id in wanted.items():
                try:
                    connection.inquire_queue(queue)
                    continue
                except refused as exc:
                    if exc.reason_code != RC_UNKNOWN_OBJECT_NAME:
                        cannot(node_id, f"cannot define queue {queue}: {exc.reason or exc}")
                        continue
                try:
                    connection.define_queue(queue)
                    log.info("deployment %s: defined queue %s", deployment_id, queue)
                except refused as exc:
                    if exc.reason_code != RC_OBJECT_ALREADY_EXISTS:
                        cannot(node_id, f"cannot define queue {queue}: {exc.reason or exc}")
        except OSError as exc:
            cannot("", f"cannot define the flow's queues: {exc}")
        finally:
            try:
                connection.close()
            except Exception:
                pass
        return problems

    def _flow_name(self, deployment_id: int) -> str | None:
        from flowbroker.repository import db
        from flowbroker.services import deploy

        name = self.by_deployment.get(deployment_id)
        if name is None:
            with db.session_scope(self.session_factory) as session:
                row = deploy.find(session, deployment_id)
                name = row.flow_version.flow.name if row is not None else None
        return name

    def undeploy(self, deployment_id: int) -> str:
        from flowbroker.repository import db
        from flowbroker.services import deploy

        assert self.runtime is not None
        name = self._flow_name(deployment_id)
        with self.lock:
            current = self.runtime.flows.get(name) if name else None
            # only undeploy the running version if it is this deployment's
            if name and current is not None and self.by_deployment.get(deployment_id) == name:
                self.runtime.undeploy(name)
            self.by_deployment.pop(deployment_id, None)
        with db.session_scope(self.session_factory) as session:
            deploy.report(session, deployment_id, "undeployed")
        heap.settle()  # the old flow's trees become collectable
        return "undeployed"

    def start_flow(self, deployment_id: int, start: bool) -> str:
        from flowbroker.repository import db
        from flowbroker.services import deploy

        assert self.runtime is not None
        name = self.by_deployment.get(deployment_id)
        if name is None:
            return self.deploy(deployment_id, start=start)
        with self.lock:
            if start:
                self.runtime.start_flow(name)
            else:
                self.runtime.stop_flow(name)
            self.waiting.pop(deployment_id, None)
            status = "running" if start else "stopped"
            with db.session_scope(self.session_factory) as session:
                deploy.report(session, deployment_id, status)
        return status

    def trace(self, deployment_id: int, level: str, mode: str) -> str:
        assert self.runtime is not None
        name = self.by_deployment.get(deployment_id)
        if name is None:
            return "missing"
        self.runtime.set_trace(name, level, mode)
        return f"trace {level} {mode}"

    def record(self, deployment_id: int, request: dict[str, Any]) -> str:
        from flowbroker.runtime import message_view
        from flowbroker.runtime.recorder import RecordingSpec, refuse

        assert self.runtime is not None
        recording_id = str(request.get("id", ""))
        name = self.by_deployment.get(deployment_id)
        if name is None:
            # the flow is not (or no longer) here: the recording says so rather than waiting forever
            directory = recordings_dir(self.data, self.broker, self.group) / str(request.get("flow", ""))
            refuse(directory, recording_id, "the flow is not running in its execution group")
            return "missing"
        spec = RecordingSpec(
            id=recording_id,
            max_messages=int(request["maxMessages"]),
            seconds=float(request["seconds"]),
            max_bytes=int(request["maxBytes"]),
            limits=message_view.Limits(
                max_fields=int(request["maxFields"]),
                max_body_bytes=int(request["maxBodyBytes"]),
                max_parse_bytes=int(request["maxParseBytes"]),
            ),
        )
        with self.lock:
            self.runtime.start_recording(name, spec)
        return f"recording {recording_id}"

    def record_stop(self, deployment_id: int, recording_id: str) -> str:
        assert self.runtime is not None
        name = self.by_deployment.get(deployment_id)
        if name is None:
            return "missing"
        with self.lock:
            stopped = self.runtime.stop_recording(name, recording_id, "stopped by an operator")
        return "stopped" if stopped else "not recording"

    def report_waiting(self) -> None:
        """Report a running flow whose input queue does not exist as waiting for it, and back to running.

        A flow thread retries an unknown input queue (with back-off) until it is defined; the
        deployment says so rather than claiming the flow runs, and says running again by itself
        once the queue manager knows the queue.
        """
        from flowbroker.repository import db
        from flowbroker.services import deploy

        if self.runtime is None:
            return
        # under the lock the control tasks report under, so a flow stopped or redeployed
        # meanwhile is never reported waiting after its new status
        with self.lock:
            for deployment_id, name in list(self.by_deployment.items()):
                flow = self.runtime.flows.get(name)
                if flow is None or flow.state != "running":
                    continue
                missing = [waiting_problem(*m) for m in flow.missing_queues()]
                missing += [unreachable_problem(*u) for u in flow.unreachable()]
                if missing == self.waiting.get(deployment_id, []):
                    continue
                with db.session_scope(self.session_factory) as session:
                    current = deploy.status(session, deployment_id)
                    if current in ("pending", "compiling"):
                        continue  # its deploy reports first; look again next time
                    if current in deploy.STARTED:
                        status = "waiting" if missing else "running"
                        deploy.report(session, deployment_id, status, missing)
                        log.info("deployment %s: %s", deployment_id, status)
                self.waiting[deployment_id] = missing

    # -- statistics -----------------------------------------------------------------------------

    def statistics(self) -> dict[str, Any]:
        memory = self.process.memory_info()
        flows = self.runtime.statistics() if self.runtime is not None else {}
        address = self.runtime.http.address if self.runtime is not None else None
        return {
            "broker": self.broker,
            "group": self.group,
            "host": self.host,
            "pid": os.getpid(),
            "time": time.time(),
            "uptime_s": round(time.time() - self.started, 1),
            "rss_bytes": memory.rss,
            "cpu_percent": self.process.cpu_percent(None),
            "cpu_seconds": round(sum(self.process.cpu_times()[:2]), 3),
            "threads": self.process.num_threads(),
            # where the group's HTTPInput nodes are served; None until a flow needs the listener
            "http": {"host": address[0], "port": address[1]} if address else None,
            "flows": flows,
        }

    def publish_statistics(self) -> None:
        """Write the statistics where a configuration manager reads them: the repository, for one on
        any host, and the data directory (atomically replaced), for one beside the group."""
        record = json.loads(json.dumps(self.statistics(), default=str))
        path = stats_path(self.data, self.broker, self.group)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(record))
        os.replace(tmp, path)
        self.report_alive(record)

    def report_alive(self, statistics: dict[str, Any] | None = None) -> None:
        """Tell the repository this process still runs the group (with its latest statistics)."""
        from flowbroker.repository import db
        from flowbroker.services import reports

        if self.group_id is None or self.session_factory is None:
            return
        with db.session_scope(self.session_factory) as session:
            reports.touch(session, self.group_id, self.host, os.getpid(), statistics)


def http_listener(settings: Any, port: int | None = None) -> Any:
    """The group's HTTP listener as the FLOWBROKER_HTTP_* settings say (opened on first use), on
    ``port`` (the group's own ``httpPort``) when there is one."""
    from flowbroker.runtime.http_listener import HTTPListener

    return HTTPListener(
        settings.http_host,
        settings.http_port if port is None else port,
        max_body_bytes=settings.http_max_body_bytes,
        max_connections=settings.http_max_connections,
        keep_alive_s=settings.http_keep_alive_seconds,
    )


RC_UNKNOWN_OBJECT_NAME = 2085
RC_OBJECT_ALREADY_EXISTS = 2100


def broker_attributes(broker: str, group: str, qm_url: str, data: Path) -> dict[str, object]:
    """The broker attributes ESQL reads in the group's flows (IBM's BrokerName, ExecutionGroupLabel …).

    QueueManagerName is the address of the queue manager the group's flows use, without
    credentials, or ``local`` for the queue manager of the broker's data directory.
    """
    from urllib.parse import urlsplit

    from flowbroker import __version__

    queue_manager = "local"
    if qm_url:
        parts = urlsplit(qm_url)
        queue_manager = f"{parts.hostname or ''}:{parts.port}" if parts.port else (parts.hostname or qm_url)
    return {
        "BrokerName": broker,
        "BrokerVersion": __version__,
        "ExecutionGroupLabel": group,
        "ExecutionGroupName": group,
        "QueueManagerName": queue_manager,
        "WorkPath": str(data),
        "Family": "PYTHON",
    }


class TransportUnusable(Exception):
    """The broker's transport URL cannot be used: no flow of the group can run."""


def transport_problem(text: str) -> dict[str, Any]:
    """The diagnostic of a deployment whose broker's transport URL is unusable."""
    return {"node": "", "property": "qm_url", "line": 0, "column": 0, "pointer": "", "message": text}


def waiting_problem(node: str, queue: str) -> dict[str, Any]:
    """The diagnostic of a flow waiting for its input queue ``queue`` to be defined."""
    return {
        "node": node,
        "property": "queueName",
        "line": 0,
        "column": 0,
        "pointer": "",
        "message": DeployedFlow.waiting_message(queue),
    }


def unreachable_problem(node: str, reason: str) -> dict[str, Any]:
    """The diagnostic of a flow whose input cannot connect to its transport (it retries with back-off)."""
    return {
        "node": node,
        "property": "",
        "line": 0,
        "column": 0,
        "pointer": "",
        "message": DeployedFlow.unreachable_message(reason),
    }


def stats_path(data: Path, broker: str, group: str) -> Path:
    return data / "stats" / broker / f"{group}.json"


_STATE: GroupState | None = None


def state(wait: float = 0.0) -> GroupState:
    """This process's group; with ``wait``, block until it has resumed its flows (for control tasks)."""
    if _STATE is None:
        raise RuntimeError("this process is not an execution group")
    if wait and not _STATE.ready.wait(wait):
        raise RuntimeError("the execution group is still starting")
    return _STATE


def set_state(value: GroupState | None) -> None:
    global _STATE
    _STATE = value
